"""The multi-GPU family without a GPU: its arithmetic (bus-bandwidth factors, nccl-tests' sizes,
the α–β fit, the data-parallel estimate, the comparison with the peer), its topology, its place in
the results and the runner, and its slides on the node fixture (two H200s)."""
import copy
import math
import json

import pytest

import build
from bench.multigpu import collectives as multigpu
from bench.core import runner, schema
from bench.core.registry import discover
from bench.core.topology import NO_MULTICAST, child_env, pairs_of
from slides import multigpu as section
from slides.deck import Deck, figures_dir
from slides.records import LISTED
from slides.kit import fmt_bytes
import slides.precision
from tests.conftest import NODE_FIXTURES, _fixture_results
from tests.test_build import assert_spoken_first, deck, headings, prose_words, slides_of  # noqa: F401 (deck: the fixture deck)


@pytest.mark.parametrize("n,all_reduce,gather", [(2, 1.0, 0.5), (4, 1.5, 0.75), (8, 1.75, 0.875)])
def test_bus_factors_are_nccl_tests(n, all_reduce, gather):
    f = multigpu.BUS_FACTOR
    assert f["all_reduce"](n) == all_reduce
    assert f["all_gather"](n) == f["reduce_scatter"](n) == gather
    assert f["broadcast"](n) == f["send_recv"](n) == 1.0
    assert f["all_to_all"](n) == gather          # (n-1)/n of each rank's buffer leaves it
    bw = multigpu.bandwidths("all_reduce", 1 << 30, 2.0, n)
    assert bw["algbw_gbps"] == pytest.approx(2**30 / 2e-3 / 1e9) and bw["busbw_gbps"] == pytest.approx(bw["algbw_gbps"] * all_reduce)


def test_sizes_and_batches():
    assert multigpu.SIZES[0] == 8 and multigpu.SIZES[-1] == 4 << 30 and len(multigpu.SIZES) == 30
    # as nccl-tests: each rank's part of a gather or scatter rounded down to 16 bytes
    assert [multigpu.element_count("all_gather", b, 2) for b in (8, 16, 32, 64)] == [0, 0, 8, 16]
    assert multigpu.element_count("reduce_scatter", 128, 8) == 32 and multigpu.element_count("all_gather", 64, 8) == 0
    assert multigpu.element_count("all_reduce", 8, 8) == 2
    assert multigpu.batch_of(8) == multigpu.MAX_BATCH and multigpu.batch_of(4 << 30) == 1 and multigpu.batch_of(64 << 20) == 16


def _rank_rows(rank_ms):
    return {"rows": [{"collective": "all_reduce", "bytes": 1 << 20, "checked": 10, "wrong": w,
                      "time_ms": {"median": ms, "p10": ms, "p90": ms, "n": 10, "batch": 1}} for ms, w in rank_ms]}


def test_combine_takes_the_slowest_rank_and_every_wrong_element():
    rows = multigpu.combine([_rank_rows([(1.0, 0)]), _rank_rows([(1.5, 3)])], 2)
    assert rows[0]["time_ms"]["median"] == 1.5 and rows[0]["wrong"] == 3 and rows[0]["checked"] == 20
    other = _rank_rows([(1.0, 0)])
    other["rows"][0]["bytes"] = 8
    with pytest.raises(RuntimeError, match="different collectives or sizes"):
        multigpu.combine([_rank_rows([(1.0, 0)]), other], 2)


def test_nccl_tests_json_is_read_out_of_place():
    doc = {"results": [{"size": 0, "out_of_place": {"time": 1.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0}},
                       {"size": 1024, "out_of_place": {"time": 5.5, "alg_bw": 0.19, "bus_bw": 0.19, "nwrong": 0.0},
                        "in_place": {"time": 9.0, "alg_bw": 0.1, "bus_bw": 0.1, "nwrong": 0.0}},
                       {"size": 2048, "out_of_place": None}]}
    rows = multigpu.parse_nccl_tests(doc, "broadcast")
    assert rows == [{"collective": "broadcast", "bytes": 1024, "time_us": 5.5, "algbw_gbps": 0.19, "busbw_gbps": 0.19,
                     "wrong": 0}]


def test_alpha_beta_recovers_a_latency_and_a_bandwidth():
    alpha, beta = 6e-6, 350e9
    sizes = [1 << e for e in range(3, 33)]
    fit = section.alpha_beta(sizes, [alpha + s / beta for s in sizes])
    # α is the smallest message's time, its 8 bytes included: 8 B / β off the true latency
    assert fit["alpha_us"] == pytest.approx(6.0, rel=1e-5) and fit["beta_gbps"] == pytest.approx(350.0, rel=1e-5)
    assert fit["max_error_pct"] < 1e-3 and fit["half_bytes"] == pytest.approx(alpha * beta, rel=1e-5)
    # the model's error is reported where the measurement leaves it (a slower middle)
    times = [alpha + s / beta * (2 if s == 1 << 20 else 1) for s in sizes]
    fit = section.alpha_beta(sizes, times)
    assert fit["max_error_bytes"] == 1 << 20 and fit["max_error_pct"] > 10 and fit["large_error_pct"] < 1e-3
    with pytest.raises(ValueError, match="no size"):
        section.alpha_beta([8, 16], [1e-6, 1e-6])


def test_data_parallel_step_from_the_measured_times():
    """Each bucket's time is the measured all-reduce at its size (log-log between the sizes around
    it); past the largest measured size, the fit; the models are those a GPU trains whole."""
    fit = {"alpha_us": 10.0, "beta_gbps": 100.0}
    measured = [(8, 0.01), (16 << 20, 0.5), (32 << 20, 0.8), (1 << 30, 11.0)]
    bucket, how = section.collective_ms(measured, fit, 25 << 20)
    w = math.log((25 << 20) / (16 << 20)) / math.log(2)
    assert how == "measured" and bucket == pytest.approx(0.5 ** (1 - w) * 0.8 ** w)
    assert section.collective_ms(measured, fit, 4e9) == (pytest.approx(0.01 + 40.0), "fit")
    rows = section.data_parallel(measured, fit, memory_bytes=80e9)          # 80 GB: up to 2.7B at 16 B a parameter
    assert [r["params"] for r in rows] == [350e6, 1.3e9, 2.7e9]
    big = rows[-1]
    assert big["bytes"] == 5.4e9 and big["one_from"] == "fit" and big["buckets"] == -(-5_400_000_000 // (25 << 20))
    last = 5.4e9 - (big["buckets"] - 1) * (25 << 20)
    assert big["bucketed_ms"] == pytest.approx((big["buckets"] - 1) * bucket + section.collective_ms(measured, fit, last)[0])


def test_targets_against_the_peer():
    ours = [{"collective": "all_reduce", "bytes": b, "busbw_gbps": 100.0, "time_ms": {"median": t}}
            for b, t in ((8, 0.010), (64 << 20, 1.0), (1 << 30, 10.0))]
    peer = [{"collective": "all_reduce", "bytes": b, "busbw_gbps": 90.0, "time_us": t, "mode": "launch"}
            for b, t in ((8, 10.5), (64 << 20, 1040.0), (1 << 30, 10600.0))]
    peer += [{**r, "mode": "graph", "time_us": 1.0} for r in peer]
    rows = section.against_peer(ours, peer)
    assert [r["ratio"] for r in rows] == pytest.approx([1.05, 1.04, 1.06])
    t = section.targets(rows)
    assert t["large"]["worst"] == pytest.approx(0.06) and not t["large"]["met"]
    assert t["large"]["worst_at"] == {"name": "all-reduce", "bytes": 1 << 30, "ours_faster": True,
                                         "ours_gbps": 100.0, "peer_gbps": 90.0}
    assert t["small"]["worst"] == pytest.approx(0.05) and t["small"]["met"]


def test_pairs_direct_switched_and_unlinked():
    gpus = [{"index": i, "pci_bus_id": f"0000:0{i}:00.0"} for i in range(3)]
    links = {0: [{"remote": "gpu", "remote_pci_bus_id": "0000:01:00.0"}] * 4 + [{"remote": "switch", "remote_pci_bus_id": "x"}] * 2,
             1: [{"remote": "gpu", "remote_pci_bus_id": "0000:00:00.0"}] * 4,
             2: [{"remote": "switch", "remote_pci_bus_id": "x"}] * 6}
    pairs = {(p["a"], p["b"]): p for p in pairs_of(gpus, links, "9.0")}
    assert pairs[0, 1] == {"a": 0, "b": 1, "nvlinks": 4, "via": "direct", "nvlink_gbps_per_direction": 100.0}
    assert pairs[0, 2]["via"] == "nvswitch" and pairs[0, 2]["nvlinks"] == 2
    assert pairs[1, 2] == {"a": 1, "b": 2, "nvlinks": 0, "via": "none"}


def test_multicast_stays_off_in_every_child(monkeypatch):
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    env = child_env(EXTRA="1")
    assert all(env[k] == v for k, v in NO_MULTICAST.items()) and env["EXTRA"] == "1"


def test_one_gpu_and_no_checkout_are_skipped_with_their_reason(monkeypatch):
    benches = discover()
    one = {"compute_capability": "9.0", "gpu_count": 1}
    assert runner.skip_reason(benches["multigpu.nccl"], one) == "needs 2+ GPUs, this machine has 1"
    two = {**one, "gpu_count": 2}
    assert runner.skip_reason(benches["multigpu.nccl"], two) is None
    monkeypatch.delenv(multigpu.PEER_ENV, raising=False)
    assert "set NCCL_TESTS_DIR" in runner.skip_reason(benches["multigpu.nccl_tests"], two)
    monkeypatch.setenv(multigpu.PEER_ENV, "/nonexistent/nccl-tests")
    assert "is not a folder" in runner.skip_reason(benches["multigpu.nccl_tests"], two)


def test_node_section_is_validated(node_doc):
    schema.validate(node_doc, "node")
    broken = copy.deepcopy(node_doc)
    broken["node"]["gpu_count"] = 1
    with pytest.raises(schema.ResultsError, match="node.gpu_count"):
        schema.validate(broken, "node")
    del broken["node"]["pairs"]
    with pytest.raises(schema.ResultsError, match="node.pairs"):
        schema.validate(broken, "node")
    other = copy.deepcopy(node_doc)       # a node file of another card than its GPUs
    other["node"]["gpus"][1]["name"] = "NVIDIA H100 80GB HBM3"
    with pytest.raises(schema.ResultsError, match=r"node.gpus\[1\].name: expected the file's GPU, 'NVIDIA H200'"):
        schema.validate(other, "node")
    rows = node_doc["benchmarks"]["multigpu.nccl"]["rows"]
    del rows[0]["busbw_gbps"]
    with pytest.raises(schema.ResultsError, match=r"multigpu.nccl.rows\[0\].busbw_gbps"):
        schema.validate(node_doc, "node")


@pytest.fixture
def node_deck(fixture_doc, node_doc, write_results, tmp_path):
    """The H100 fixture's deck, named for the node fixture's GPU, with the node fixture beside it, found by its name."""
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    results = write_results(fixture_doc, "gpu.yaml")
    write_results(node_doc, "gpu-x2.yaml")
    assert build.comparable_files(results) == [] and build.node_files(results) == [results.with_name("gpu-x2.yaml")]
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--talk", build.FULL]) == 0
    return {"md": (tmp_path / "slides.md").read_text(), "dir": tmp_path, "doc": node_doc}


def test_multigpu_slides_come_from_the_node_results(node_deck):
    md, doc = node_deck["md"], node_deck["doc"]
    titles = headings(md)
    i = titles.index("Past One GPU: 2 × NVIDIA H200") - 1        # the node's sections come before the steps past the reference
    assert titles.index("Past the Reference Deck") > i + 6
    assert titles[i + 1:i + 7] == ["Past One GPU: 2 × NVIDIA H200", "NVLink Peer to Peer", "NCCL: Bus Bandwidth by Message Size",
                                   "NCCL Beside nccl-tests", "All-Reduce Time and the α–β Model",
                                   "What It Means for Data-Parallel Training"]
    s = slides_of(md)
    assert "NVLink multicast (NVLS) **off**" in s["Past One GPU: 2 × NVIDIA H200"]
    p2p = doc["benchmarks"]["multigpu.p2p"]["rows"][0]
    assert f"**{p2p['copy_engine']['gbps']:,.0f} GB/s**" in s["NVLink Peer to Peer"]
    ours = {(r["collective"], r["bytes"]): r for r in doc["benchmarks"]["multigpu.nccl"]["rows"]}
    peer = {(r["collective"], r["bytes"]): r for r in doc["benchmarks"]["multigpu.nccl_tests"]["rows"] if r["mode"] == "launch"}
    big = ("all_reduce", 4 << 30)
    assert f"{ours[big]['busbw_gbps']:.1f} / {peer[big]['busbw_gbps']:.1f}" in s["NCCL Beside nccl-tests"]
    fit = section.alpha_beta(*zip(*[(b, r["time_ms"]["median"] * 1e-3) for (c, b), r in ours.items() if c == "all_reduce"]))
    assert f"**α = {fit['alpha_us']:.1f} µs**" in s["All-Reduce Time and the α–β Model"]
    assert {"node_topology.svg", "p2p.svg", "nccl_busbw.svg", "nccl_latency.svg"} <= {p.name for p in figures_dir(node_deck["dir"]).iterdir()}
    # every slide of the section has presenter notes, and what is read aloud comes first
    for title in titles[i + 1:i + 7]:
        assert "<!--" in s[title], title
    assert_spoken_first(md)


def test_multigpu_numbers_follow_the_results(fixture_doc, node_doc, write_results, tmp_path):
    for r in node_doc["benchmarks"]["multigpu.p2p"]["rows"]:
        r["copy_engine"]["gbps"] = 123.0
    node = write_results(node_doc, "node.yaml")
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--node", str(node)]) == 0
    s = slides_of((tmp_path / "slides.md").read_text())
    assert "**123 GB/s**" in s["NVLink Peer to Peer"] and "27% of the 450 GB/s" in s["NVLink Peer to Peer"]


def test_without_a_node_the_section_is_one_line_in_the_backup_not_a_slide(deck):
    s = slides_of(deck["md"])
    assert not [t for t in s if t.startswith("Past One GPU")]
    from slides import overlap
    assert (f"Not measured on this GPU: the multi-GPU sections ({', '.join([*section.IDS, overlap.ID])})"
            in s["Backup Slides"])
    assert "Past One GPU: multigpu.p2p" in deck["out"]                     # and build.py lists it


def test_a_node_file_alone_builds_its_deck(node_doc, write_results, tmp_path):
    """The node's file is a results file of its own: its deck holds the section and marks the rest."""
    assert build.main(["--results", str(write_results(node_doc, "n-x2.yaml")), "--out-dir", str(tmp_path)]) == 0
    assert "NCCL Beside nccl-tests" in headings((tmp_path / "slides.md").read_text())


def test_a_broken_node_file_beside_is_left_out(fixture_doc, write_results, tmp_path, capsys):
    results = write_results(fixture_doc, "gpu.yaml")
    write_results("schema_version: 1\n", "gpu-x2.yaml")
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path)]) == 0
    assert "left out of the multi-GPU section" in capsys.readouterr().err
    assert "Not measured on this GPU: the multi-GPU section" in (tmp_path / "slides.md").read_text()


def _skipped(rec, status):
    return {k: rec[k] for k in ("family", "title", "source_hash", "sources", "kernels", "measured_at", "telemetry")} | {
        "status": status, "reason": "no checkout of the peer" if status == "skipped" else "exited with code 1"}


# Node files python -m bench writes, or could: each builds its section, with what it lacks said so.
NODE_CASES = {
    "nccl-tests skipped": lambda d: d["benchmarks"].update(
        {"multigpu.nccl_tests": _skipped(d["benchmarks"]["multigpu.nccl_tests"], "skipped")}),
    "nccl-tests failed": lambda d: d["benchmarks"].update(
        {"multigpu.nccl_tests": _skipped(d["benchmarks"]["multigpu.nccl_tests"], "failed")}),
    "nccl-tests without graph rows": lambda d: d["benchmarks"]["multigpu.nccl_tests"].update(
        rows=[r for r in d["benchmarks"]["multigpu.nccl_tests"]["rows"] if r["mode"] != "graph"]),
    "a pair joined by PCIe alone": lambda d: [
        p.update(nvlinks=0, via="pcie") or p.pop("nvlink_gbps_per_direction") for p in d["node"]["pairs"]] + [
        r.pop("nvlink_gbps_per_direction") for r in d["benchmarks"]["multigpu.p2p"]["rows"]],
    "no PCIe path": lambda d: [p.pop("pcie_path") for p in d["node"]["pairs"]],
    "multicast not recorded": lambda d: d["node"].update(multicast={}),
    "no copy engine rows": lambda d: [r.pop("copy_engine") for r in d["benchmarks"]["multigpu.p2p"]["rows"]],
    "all-reduce below 64 MiB only": lambda d: d["benchmarks"]["multigpu.nccl"].update(
        rows=[r for r in d["benchmarks"]["multigpu.nccl"]["rows"] if r["bytes"] < 64 << 20]),
}


@pytest.mark.parametrize("case", NODE_CASES)
def test_a_node_file_missing_a_part_still_builds_its_section(case, fixture_doc, node_doc, write_results, tmp_path, capsys):
    NODE_CASES[case](node_doc)
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    node = write_results(node_doc, "node.yaml")
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(node)]) == 0, capsys.readouterr().err
    assert "Past One GPU: 2 × NVIDIA H200" in headings((tmp_path / "slides.md").read_text())


@pytest.mark.parametrize("named", [True, False])
def test_a_node_link_to_no_gpu_is_refused_by_name(named, fixture_doc, node_doc, write_results, tmp_path, capsys):
    node_doc["node"]["pairs"][0]["b"] = 7
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    results = write_results(fixture_doc, "gpu.yaml")
    node = write_results(node_doc, "gpu-x2.yaml")
    code = build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare",
                       *(["--node", str(node)] if named else [])])
    err = capsys.readouterr().err
    assert "node.pairs[0].b: expected the index of one of the node's GPUs (0, 1), got 7" in err and "Traceback" not in err
    assert code == (1 if named else 0)


@pytest.mark.parametrize("named", [True, False])
def test_a_node_file_whose_figure_fails_is_left_out_or_named(named, fixture_doc, node_doc, write_results, tmp_path,
                                                              capsys, monkeypatch):
    """Any part of the build that fails on the node's file (here its topology figure): the deck is
    built without the section when the file was found beside, and is an error naming it when named."""
    monkeypatch.setattr(section, "topology", lambda c: {}["gpus"][0])
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    results = write_results(fixture_doc, "gpu.yaml")
    node = write_results(node_doc, "gpu-x2.yaml")
    code = build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare",
                       *(["--node", str(node)] if named else [])])
    err = capsys.readouterr().err
    assert f"{node}: the deck cannot be built with it (KeyError: 'gpus')" in err and "Traceback" not in err
    if named:
        assert code == 1 and not (tmp_path / "slides.md").exists()
    else:
        assert code == 0 and "left out of the multi-GPU section" in err
        assert "Not measured on this GPU: the multi-GPU section" in (tmp_path / "slides.md").read_text()


def test_another_gpus_node_file_is_refused(fixture_doc, node_doc, write_results, tmp_path, capsys):
    node = write_results(node_doc, "node.yaml")
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(node)]) == 1
    assert f"{node}: the node file of 'NVIDIA H200', not of 'NVIDIA H100 80GB HBM3'" in capsys.readouterr().err


def test_a_node_file_is_not_compared_as_a_gpu(fixture_doc, node_doc, write_results, tmp_path, capsys):
    node = write_results(node_doc, "node.yaml")
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path),
                       "--compare", str(node)]) == 1
    assert f"{node}: a node's results file, not a GPU's: pass it as --node" in capsys.readouterr().err


def test_stale_records_of_the_node_file_are_printed_and_on_the_title_slide(fixture_doc, node_doc, write_results,
                                                                            tmp_path, capsys):
    node_doc["benchmarks"]["multigpu.p2p"]["source_hash"] = "0" * 16         # measured with other code
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    node = write_results(node_doc, "gpu-x2.yaml")
    assert build.main(["--results", str(write_results(fixture_doc, "gpu.yaml")), "--out-dir", str(tmp_path),
                       "--no-compare"]) == 0
    out = capsys.readouterr().out
    assert f"STALE: multigpu.p2p in {node.name}: code changed; rerun" in out
    assert "multigpu.nccl in" not in out
    title = slides_of((tmp_path / "slides.md").read_text())["Backup Slides"]
    assert f"Measured with older code: multigpu.p2p in {node.name}." in title


def test_build_prints_every_stale_record_of_the_files_beside_even_where_the_title_only_counts_them(
        fixture_doc, node_doc, write_results, tmp_path, capsys):
    for rec in node_doc["benchmarks"].values():
        rec["source_hash"] = "0" * 16
    for bid in ("hbm.copy_scaling", "l2.bandwidth_scaling"):
        fixture_doc["benchmarks"][bid]["source_hash"] = "0" * 16
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    node = write_results(node_doc, "gpu-x2.yaml")
    assert build.main(["--results", str(write_results(fixture_doc, "gpu.yaml")), "--out-dir", str(tmp_path),
                       "--no-compare"]) == 0
    out = capsys.readouterr().out
    assert len(node_doc["benchmarks"]) + 2 > LISTED, "past what the title slide names one by one"
    for bid in node_doc["benchmarks"]:
        assert f"STALE: {bid} in {node.name}: code changed; rerun" in out


def test_nccl_choices_are_read_from_its_tuning_log():
    """Both the names newer NCCL logs and the enum numbers of older releases; rank 0's lines name a
    call's count times its type's size, one rank's part for all-gather and reduce-scatter, the row's
    bytes their whole (4 ranks here)."""
    log = ("host:1:1 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n"
           "host:1:1 [0] NCCL INFO AllGather: 16777216 Bytes -> Algo 1 proto 2 time 123.4\n"
           "host:1:1 [0] NCCL INFO ReduceScatter: 1024 Bytes -> Algo RING proto LL channel{Lo..Hi}={0..0}\n"
           "host:1:1 [0] NCCL INFO Broadcast:    32768 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..0}\n"
           "host:1:1 [0] NCCL INFO Init COMPLETE\n")
    assert multigpu.nccl_choices(log, 4) == {
        ("all_reduce", 4096): {"algorithm": "TREE", "protocol": "LL"},
        ("all_gather", 64 << 20): {"algorithm": "RING", "protocol": "SIMPLE"},
        ("reduce_scatter", 4096): {"algorithm": "RING", "protocol": "LL"},
        ("broadcast", 32768): {"algorithm": "RING", "protocol": "SIMPLE"}}


def test_the_nccl_notes_name_its_choice_where_recorded(fixture_doc, node_doc, write_results, tmp_path):
    for r in node_doc["benchmarks"]["multigpu.nccl"]["rows"]:
        if r["collective"] == "all_reduce":
            r.update(algorithm="RING", protocol="LL128" if r["bytes"] < 1 << 20 else "SIMPLE")
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(write_results(node_doc, "node.yaml"))]) == 0
    notes = slides_of((tmp_path / "slides.md").read_text())["NCCL: Bus Bandwidth by Message Size"]
    # one choice at every size shown is said once; the smallest size's own after it
    assert "; NCCL chose RING, SIMPLE at each, and RING, LL128 at its smallest size." in notes
    assert "(NCCL chose" not in notes
    # choices that differ between the sizes shown are said at each
    for r in node_doc["benchmarks"]["multigpu.nccl"]["rows"]:
        if r["collective"] == "all_reduce" and r["bytes"] >= 1 << 30:
            r.update(algorithm="TREE", protocol="SIMPLE")
    out = tmp_path / "differ"
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare",
                       "--node", str(write_results(node_doc, "node.yaml"))]) == 0
    notes = slides_of((out / "slides.md").read_text())["NCCL: Bus Bandwidth by Message Size"]
    assert "(NCCL chose RING, SIMPLE)" in notes and "(NCCL chose TREE, SIMPLE)" in notes


LARGER_NODES = [n for n in NODE_FIXTURES if n > min(NODE_FIXTURES)]      # the simulated ones


@pytest.mark.parametrize("n", LARGER_NODES)
def test_a_node_of_more_gpus_builds_its_section(n, fixture_doc, node_docs, write_results, tmp_path):
    """The family is written for any number of GPUs of a host: a node of 4 or 8 draws every GPU, lists
    every pair, and holds bus bandwidth to the factors of n ranks."""
    doc = node_docs[n]
    fixture_doc["device"].update(name=doc["device"]["name"], slug=doc["device"]["slug"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(write_results(doc, f"node-x{n}.yaml"))]) == 0
    s = slides_of((tmp_path / "slides.md").read_text())
    title = f"Past One GPU: {n} × NVIDIA H200"
    assert title in s and f"Every pair of the {n} GPUs: through NVSwitches, **18 NVLinks** from each GPU" in s[title]
    assert "meet through the NVSwitches, each GPU over its 18 NVLinks into them" in s[title]
    assert s[title].count("\n- ") == 3                               # one line for all the pairs joined alike
    topology = (figures_dir(tmp_path) / "node_topology.svg").read_text()
    assert all(f">GPU {i}<" in topology for i in range(n))
    assert f"all-reduce {2 * (n - 1) / n:.2f} on {n} GPUs" in s["NCCL: Bus Bandwidth by Message Size"]
    for r in doc["benchmarks"]["multigpu.nccl"]["rows"]:
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * multigpu.BUS_FACTOR[r["collective"]](n))
    assert "NCCL Across Node Sizes" not in s                         # one node size: nothing to set beside it


# --- node sizes side by side -------------------------------------------------------------------

def test_the_simulated_nodes_are_what_their_script_makes_and_say_so():
    """tests/make_node_fixtures.py made the committed fixtures from the measured node (rerun it when
    that changes); each validates and says it is simulated; its times differ by size from the two GPUs'."""
    from tests import make_node_fixtures as make
    measured = schema.load(NODE_FIXTURES[make.MEASURED_GPUS])
    for n in LARGER_NODES:
        text = NODE_FIXTURES[n].read_text()
        assert text == make.text_of(n), f"{NODE_FIXTURES[n].name} is stale: python -m tests.make_node_fixtures"
        doc = schema.load(NODE_FIXTURES[n])
        assert text.startswith("# SIMULATED") and "not a measurement" in doc["node"]["simulated"]
        assert doc["node"]["gpu_count"] == len(doc["node"]["gpus"]) == n
        assert len(doc["node"]["pairs"]) == n * (n - 1) // 2 and len(doc["benchmarks"]["multigpu.p2p"]["rows"]) == n * (n - 1)
        for bid in ("multigpu.nccl", "multigpu.nccl_tests"):
            theirs = {(r["collective"], r.get("mode"), r["bytes"]): r["busbw_gbps"] for r in measured["benchmarks"][bid]["rows"]}
            rows = doc["benchmarks"][bid]["rows"]
            assert doc["benchmarks"][bid]["params"]["ranks"] == n and all(
                multigpu.element_count(r["collective"], r["bytes"], n) for r in rows)
            assert all(r["busbw_gbps"] != theirs[r["collective"], r.get("mode"), r["bytes"]] for r in rows)


@pytest.mark.parametrize("n", list(NODE_FIXTURES))
def test_each_node_size_is_fitted_on_its_own(n, node_docs):
    """A node size's figures: the bus factor of its ranks, all-reduce's busbw by size as recorded, its
    own α–β fit, and the data-parallel step from its own measured times."""
    doc = node_docs[n]
    size = section.node_size(doc, Deck(doc).record("multigpu.nccl"))
    reduce = [r for r in doc["benchmarks"]["multigpu.nccl"]["rows"] if r["collective"] == "all_reduce"]
    assert size["n"] == n and size["factor"] == multigpu.BUS_FACTOR["all_reduce"](n) == 2 * (n - 1) / n
    assert size["busbw"] == {r["bytes"]: r["busbw_gbps"] for r in reduce}
    fit = section.alpha_beta([r["bytes"] for r in reduce], [r["time_ms"]["median"] * 1e-3 for r in reduce])
    assert size["fit"]["alpha_us"] == fit["alpha_us"] and size["fit"]["beta_gbps"] == fit["beta_gbps"]
    assert size["fit"]["busbw_gbps"] == pytest.approx(fit["beta_gbps"] * 2 * (n - 1) / n)
    measured = sorted((r["bytes"], r["time_ms"]["median"]) for r in reduce)
    assert size["dp"] == section.data_parallel(measured, size["fit"], doc["device"]["memory_bytes"])
    del doc["benchmarks"]["multigpu.nccl"]
    assert section.node_size(doc, Deck(doc).record("multigpu.nccl"))["busbw"] == {}   # not measured: no line


def test_judgments_of_the_node_sizes_take_each_wording():
    within = section.HOLDS_WITHIN
    assert section.change(100, 100 * (1 + within / 2)) == {"before": 100, "after": pytest.approx(100 + 50 * within),
                                                         "pct": pytest.approx(50 * within), "verdict": "holds within"}
    assert section.change(100, 100 * (1 + 2 * within))["verdict"] == "rises by"
    assert section.change(100, 100 * (1 - 2 * within)) == {"before": 100, "after": pytest.approx(100 - 200 * within),
                                                         "pct": pytest.approx(200 * within), "verdict": "falls by"}
    factor = multigpu.BUS_FACTOR["all_reduce"](8) / multigpu.BUS_FACTOR["all_reduce"](2)
    step = lambda ratio: section.step_against_factor(10.0, 10.0 * ratio, 2, 8)
    assert step(factor)["factor_ratio"] == pytest.approx(1.75) and step(factor)["verdict"] == "in line with"
    assert step(factor * (1 + 2 * within))["why"] == "bus bandwidth falls as GPUs are added"
    assert step(factor * (1 - 2 * within))["verdict"] == "less than"


def _beside(fixture_doc, node_docs, write_results, sizes=None):
    """The H100 fixture named for the node fixtures' GPU, with the node files of ``sizes`` (all) beside it."""
    doc = next(iter(node_docs.values()))
    fixture_doc["device"].update(name=doc["device"]["name"], slug=doc["device"]["slug"])
    for n in sizes or node_docs:
        write_results(node_docs[n], f"gpu-x{n}.yaml")
    return write_results(fixture_doc, "gpu.yaml")


def test_every_node_size_beside_is_set_side_by_side(fixture_doc, node_docs, write_results, tmp_path):
    """Nodes of 2, 4 and 8 GPUs found beside: the section details the most GPUs, and one slide sets
    every size's all-reduce side by side (its busbw by size, α–β fit and data-parallel step) with
    the judgments the data make."""
    results = _beside(fixture_doc, node_docs, write_results)
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    md = (tmp_path / "slides.md").read_text()
    s, most, fewest = slides_of(md), max(node_docs), min(node_docs)
    assert f"Past One GPU: {most} × NVIDIA H200" in s
    table = [line for line in s["NCCL Across Node Sizes"].splitlines() if line.startswith("| **")]
    assert [row.split(" | ")[0] for row in table] == [f"| **{n}**" for n in node_docs]
    sizes = {n: section.node_size(doc, Deck(doc).record("multigpu.nccl")) for n, doc in node_docs.items()}
    common = set.intersection(*(set(z["busbw"]) for z in sizes.values()))
    at = sorted({b for b in section.SCALING_SIZES if b in common} | {max(common)})
    model = sizes[fewest]["dp"][-1]["label"]
    step_ms = {n: sizes[n]["dp"][-1]["bucketed_ms"] for n in sizes}
    for row, (n, z) in zip(table, sizes.items()):
        assert row == (f"| **{n}** | {z['factor']:.2f} |" + "".join(f" {z['busbw'][b]:,.1f} GB/s |" for b in at)
                       + f" {z['fit']['alpha_us']:,.1f} µs | {z['fit']['busbw_gbps']:,.1f} GB/s | {step_ms[n]:,.1f} ms |")
    slide = s["NCCL Across Node Sizes"]
    assert f"| {model} step, {fmt_bytes(section.BUCKET_BYTES)} buckets |" in slide
    changes = [section.change(sizes[fewest]["busbw"][b], sizes[most]["busbw"][b]) for b in at]
    assert f"From {fewest} to {most} GPUs, all-reduce's bus bandwidth {changes[0]['verdict']} {changes[0]['pct']:.0f}%" in slide
    assert all(f"{c['pct']:.0f}% at {fmt_bytes(b)}" in slide for c, b in zip(changes, at))
    alpha = section.change(sizes[fewest]["fit"]["alpha_us"], sizes[most]["fit"]["alpha_us"])
    assert f"; α {alpha['verdict']} {alpha['pct']:.0f}%" in slide
    step = section.step_against_factor(step_ms[fewest], step_ms[most], fewest, most)
    assert (f"A {model} step's gradient all-reduce takes {step['ratio']:.2f}× as long on {most} GPUs as on {fewest}, "
            f"{step['verdict']} the bus factor's {step['factor_ratio']:.2f}×: {step['why']}") in slide
    # the figure: a line for each size, the link they share
    svg = (figures_dir(tmp_path) / "nccl_scaling.svg").read_text()
    assert all(f">{n} GPUs<" in svg for n in node_docs) and svg.count("<polyline") == len(node_docs)
    assert f"NVLink per direction {node_docs[most]['node']['pairs'][0]['nvlink_gbps_per_direction']:,.0f}" in svg
    assert_spoken_first(md)
    assert prose_words(slide) <= 80


def test_a_single_node_size_has_no_scaling_slide(node_deck):
    assert "NCCL Across Node Sizes" not in headings(node_deck["md"])


def test_a_node_size_without_all_reduce_is_named_in_the_notes_not_shown(fixture_doc, node_docs, write_results, tmp_path):
    skipped = min(LARGER_NODES)
    rec = node_docs[skipped]["benchmarks"]["multigpu.nccl"]
    node_docs[skipped]["benchmarks"]["multigpu.nccl"] = {**_skipped(rec, "skipped"), "reason": "left out of the run"}
    results = _beside(fixture_doc, node_docs, write_results)
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    slide = slides_of((tmp_path / "slides.md").read_text())["NCCL Across Node Sizes"]
    assert f"| **{skipped}** |" not in slide
    assert f"Not on this slide: the node of {skipped} GPUs, whose all-reduce was not measured (left out of the run)." in slide


def test_named_node_files_are_the_only_ones(fixture_doc, node_docs, write_results, tmp_path):
    """--node names the node files to use, whatever lies beside: the most GPUs of them detailed."""
    results = _beside(fixture_doc, node_docs, write_results)
    named = [min(node_docs), max(node_docs)]
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", *[str(results.with_name(f"gpu-x{n}.yaml")) for n in named]]) == 0
    s = slides_of((tmp_path / "slides.md").read_text())
    assert f"Past One GPU: {max(named)} × NVIDIA H200" in s
    assert [line.split(" | ")[0] for line in s["NCCL Across Node Sizes"].splitlines() if line.startswith("| **")] == [
        f"| **{n}**" for n in named]


def test_another_gpus_node_file_beside_is_left_out_with_a_warning(fixture_doc, node_docs, write_results, tmp_path,
                                                                   capsys):
    """Of the node files beside, one of another GPU (its slug is another's: named so by mistake) is
    left out of the section in one line; named, it is an error."""
    smaller = min(LARGER_NODES)
    node_docs[smaller]["device"].update(name="NVIDIA H100 80GB HBM3", slug="nvidia-h100-80gb-hbm3")
    for gpu in node_docs[smaller]["node"]["gpus"]:
        gpu["name"] = "NVIDIA H100 80GB HBM3"
    results = _beside(fixture_doc, node_docs, write_results)
    stray = results.with_name(f"gpu-x{smaller}.yaml")
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    err = capsys.readouterr().err
    assert (f"build.py: left out of the multi-GPU section: {stray}: the node file of 'NVIDIA H100 80GB HBM3', "
            f"not of 'NVIDIA H200'\n") in err and err.count("\n") == 1
    table = [line for line in slides_of((tmp_path / "slides.md").read_text())["NCCL Across Node Sizes"].splitlines()
             if line.startswith("| **")]
    assert [row.split(" | ")[0] for row in table] == [f"| **{n}**" for n in node_docs if n != smaller]
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare", "--node", str(stray)]) == 1


def test_a_node_size_whose_part_fails_is_left_out_the_others_kept(fixture_doc, node_docs, write_results, tmp_path,
                                                                   capsys, monkeypatch):
    """A node file beside that fails in its part of the scaling slide alone is left out naming it;
    the section still details the largest, and the other sizes stay side by side."""
    broken = min(LARGER_NODES)
    size_of = section.node_size
    monkeypatch.setattr(section, "node_size", lambda doc, nccl: size_of(doc, nccl) if doc["node"]["gpu_count"] != broken
                        else {}["busbw"])
    results = _beside(fixture_doc, node_docs, write_results)
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    assert (f"left out of the multi-GPU section: {results.with_name(f'gpu-x{broken}.yaml')}: the deck cannot be built "
            "with it") in capsys.readouterr().err
    s = slides_of((tmp_path / "slides.md").read_text())
    assert f"Past One GPU: {max(node_docs)} × NVIDIA H200" in s
    assert f"| **{broken}** |" not in s["NCCL Across Node Sizes"] and f"| **{max(node_docs)}** |" in s["NCCL Across Node Sizes"]


def test_two_node_files_of_one_size_are_refused_by_name(fixture_doc, node_docs, write_results, tmp_path, capsys):
    results = _beside(fixture_doc, node_docs, write_results)
    n = max(node_docs)
    twin = write_results(node_docs[n], "twin.yaml")
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(results.with_name(f"gpu-x{n}.yaml")), str(twin)]) == 1
    assert f"{twin}: a second node file of {n} GPUs, beside {results.with_name(f'gpu-x{n}.yaml')}" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["as recorded", "NVIDIA H100 80GB HBM3", "X" * 60])
def test_the_topology_of_eight_gpus_is_legible_and_inside_its_figure(name, node_docs):
    """Rows of four boxes with the NVSwitch fabric between them, drawn at the width the first slide's
    column shows it: every GPU's box, no text under 10 px, none past the figure's edges or over another,
    whatever the GPU's name (a long one wraps in its box, one that cannot is cut)."""
    import itertools
    import re
    from tests.test_build import OVERPRINT_PX, svg_text_boxes
    n = max(node_docs)
    doc = node_docs[n]
    for gpu in doc["node"]["gpus"] if name != "as recorded" else ():
        gpu["name"] = name
    svg = section.topology(section.section(doc, {bid: Deck(doc).record(bid) for bid in section.IDS}))
    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups())
    assert width == section.TOPOLOGY_WIDTH
    assert [i for i in range(n) if f">GPU {i}<" in svg] == list(range(n)) and svg.count('fill="#f9fafb"') == n
    assert svg.count("NVSwitch fabric") == 1 and svg.count(">18 NVLinks<") == n
    assert min(float(x) for x in re.findall(r"font-size:([\d.]+)px", svg)) >= 10
    boxes = svg_text_boxes(svg)
    assert all(0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height for x0, y0, x1, y1, _ in boxes), boxes
    assert not [(a[4], b[4]) for a, b in itertools.combinations(boxes, 2)
                if min(a[2], b[2]) - max(a[0], b[0]) > OVERPRINT_PX and min(a[3], b[3]) - max(a[1], b[1]) > OVERPRINT_PX]


def test_a_node_file_beside_that_fails_is_an_error_when_nothing_can_warn(fixture_doc, node_doc, write_results,
                                                                         tmp_path, capsys, monkeypatch):
    """With --compare named there is no warning to leave a file out with: a node file found beside
    that cannot be built is one line naming it (it was a TypeError)."""
    from tests.test_compare import other_gpu
    monkeypatch.setattr(section, "topology", lambda c: {}["gpus"][0])
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    other = write_results(other_gpu(fixture_doc), "other.yaml")
    results = write_results(fixture_doc, "gpu.yaml")
    node = write_results(node_doc, "gpu-x2.yaml")
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path / "deck"), "--compare", str(other)]) == 1
    err = capsys.readouterr().err
    assert f"build.py: {node}: the deck cannot be built with it (KeyError: 'gpus')" in err and "Traceback" not in err


def test_the_collectives_are_written_as_nccl_tests_writes_its_json(tmp_path, capsys):
    """python -m bench.multigpu.nccl_json: one file a collective in nccl-tests' -J layout (version 3), each
    size's time, algbw and busbw the record's, and a line saying the times are not nccl-tests'."""
    from bench.multigpu import nccl_json
    from tests.conftest import NODE_FIXTURE
    doc = schema.load(NODE_FIXTURE)
    rec = doc["benchmarks"]["multigpu.nccl"]
    assert nccl_json.main([str(NODE_FIXTURE), "--out-dir", str(tmp_path)]) == 0
    collectives = dict.fromkeys(r["collective"] for r in rec["rows"])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{multigpu.NCCL_TESTS_BINARY[c]}.json" for c in collectives)
    out = json.loads((tmp_path / "all_reduce_perf.json").read_text())
    assert out["version"] == 3 and out["config"]["ngpus"] == rec["params"]["ranks"]
    rows = [r for r in rec["rows"] if r["collective"] == "all_reduce"]
    assert [r["size"] for r in out["results"]] == [r["bytes"] for r in rows]
    for mine, theirs in zip(rows, out["results"]):
        assert set(theirs) == {"size", "count", "type", "redop", "root", "out_of_place", "in_place",
                               "actual_iterations", "experiment_name"}
        assert theirs["out_of_place"] == {"time": 1e3 * mine["time_ms"]["median"], "alg_bw": mine["algbw_gbps"],
                                          "bus_bw": mine["busbw_gbps"], "nwrong": float(mine["wrong"])}
        assert theirs["redop"] == "sum" and theirs["root"].strip() == "-1"
    assert "not nccl-tests" in out["written_by"]
    assert json.loads((tmp_path / "broadcast_perf.json").read_text())["results"][0]["root"].strip() == "0"
    assert nccl_json.nccl_version_code("2.28.9") == 22809
    # a file with no node's collectives: one line, nothing written
    capsys.readouterr()
    assert nccl_json.main([str(tmp_path / "all_reduce_perf.json"), "--out-dir", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not (tmp_path / "x").exists()


@pytest.mark.parametrize("case", ["collective", "reps", "nccl", "sizes", "out_dir"])
def test_the_nccl_tests_json_writer_says_what_is_wrong_in_one_line(case, node_doc, write_results, tmp_path, capsys):
    """A collective named with '../', params without reps, a garbage NCCL version, one size where two
    bound the sweep, an output folder that is a file: one line naming it, nothing written."""
    from bench.multigpu import nccl_json
    params = node_doc["benchmarks"]["multigpu.nccl"]["params"]
    out = tmp_path / "json"
    if case == "collective":
        node_doc["benchmarks"]["multigpu.nccl"]["rows"][0]["collective"] = "../all_reduce"
    elif case == "reps":
        del params["reps"]
    elif case == "nccl":
        params["nccl"] = "two point x"
    elif case == "sizes":
        params["sizes_bytes"] = [8]
    else:
        out.write_text("a file")
    said = {"collective": "multigpu.nccl.rows[0].collective: expected one of all_reduce", "reps": "multigpu.nccl.params.reps",
            "nccl": "multigpu.nccl.params.nccl: expected NCCL's version as major.minor.patch, got 'two point x'",
            "sizes": "multigpu.nccl.params.sizes_bytes: expected a list of 2 entries", "out_dir": f"cannot write into {out}"}[case]
    assert nccl_json.main([str(write_results(node_doc)), "--out-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "Traceback" not in err
    assert not out.is_dir()


def test_a_model_past_the_largest_all_reduce_measured_is_marked_as_the_fits(fixture_doc, node_doc, write_results, tmp_path):
    """The data-parallel table: a model whose gradients pass the largest all-reduce measured takes its
    time from the α–β fit, and its cell says so (a dagger, and a line under the table); the others none."""
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    rows = node_doc["benchmarks"]["multigpu.nccl"]["rows"]
    model = section.all_reduce_model(rows, node_doc["node"]["gpu_count"], node_doc["device"]["memory_bytes"])
    largest = max(r["bytes"] for r in rows if r["collective"] == "all_reduce")
    assert model["dp"] and all((r["one_from"] == "fit") == (r["bytes"] > largest) for r in model["dp"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(write_results(node_doc, "node.yaml"))]) == 0
    s = slides_of((tmp_path / "slides.md").read_text())
    slide = s["What It Means for Data-Parallel Training — Table"]
    for r in model["dp"]:
        assert f"| {r['one_ms']:,.1f} ms{'†' if r['one_from'] == 'fit' else ''} |" in slide
    fitted = any(r["one_from"] == "fit" for r in model["dp"])
    assert ("Past the largest all-reduce measured" in slide) == fitted
    # the main slide shows the bucketed times, each at a measured size: none is said to be extrapolated
    assert all(r["bucketed_from"] == "measured" for r in model["dp"])
    assert "extrapolated" not in s["What It Means for Data-Parallel Training"].split("<!--")[0]


def test_a_bucket_past_the_largest_all_reduce_measured_is_extrapolated():
    """A bucket larger than every all-reduce measured takes the α–β fit's time: the row says where its
    time comes from, so that the slide can say it is extrapolated."""
    fit = {"alpha_us": 10.0, "beta_gbps": 100.0}
    measured = [(8, 0.01), (16 << 20, 0.5)]                       # nothing as large as a 25 MiB bucket
    rows = section.data_parallel(measured, fit, memory_bytes=80e9)
    assert rows and all(r["bucketed_from"] == "fit" for r in rows)
    rows = section.data_parallel([*measured, (1 << 30, 11.0)], fit, memory_bytes=80e9)
    assert all(r["bucketed_from"] == "measured" for r in rows)


def test_the_backward_pass_is_set_beside_the_all_reduce_at_the_measured_rate():
    """The tokens a GPU must take in a step for a backward pass (4 FLOPs a parameter a token) at the
    measured rate to last as long as its gradients' all-reduce; alike where within HOLDS_WITHIN."""
    dp = [{"label": "1.3B", "params": 1.3e9, "bucketed_ms": 13.0, "bucketed_from": "measured"},
          {"label": "2.7B", "params": 2.7e9, "bucketed_ms": 27.0, "bucketed_from": "measured"}]
    bw = section.backward(dp, 500.0)
    want = 13.0e-3 * 500e12 / (4 * 1.3e9)
    assert [r["tokens"] for r in bw["rows"]] == pytest.approx([want, want]) and bw["alike"]
    assert bw["rows"][0]["backward_ms_per_token"] * want == pytest.approx(13.0)
    dp[1]["bucketed_ms"] = 27.0 * (1 + 2 * section.HOLDS_WITHIN)
    bw = section.backward(dp, 500.0)
    assert not bw["alike"] and bw["fewest"]["label"] == "1.3B" and bw["most"]["label"] == "2.7B"
    assert section.backward(dp, None) is None and section.backward([], 500.0) is None


def test_the_data_parallel_slide_pictures_the_all_reduce_beside_the_backward_pass(node_deck):
    """The main slide: the picture and the tokens from which the backward pass, at cuBLAS BF16's rate
    in turns with the BF16 headline, outlasts each model's all-reduce; the table behind it."""
    from bench.gemm import catalogue
    s = slides_of(node_deck["md"])
    main, table = s["What It Means for Data-Parallel Training"], s["What It Means for Data-Parallel Training — Table"]
    doc = node_deck["doc"]
    rate = Deck(copy.deepcopy(_fixture_results())).of(slides.precision).headline["baseline_tflops"]
    assert rate == _fixture_results()["benchmarks"][catalogue.HEADLINE_BF16]["cublas"]["tflops"]
    model = section.all_reduce_model(doc["benchmarks"]["multigpu.nccl"]["rows"], doc["node"]["gpu_count"],
                                     doc["device"]["memory_bytes"])
    tokens = [r["bucketed_ms"] * 1e-3 * rate * 1e12 / (4 * r["params"]) for r in model["dp"]]
    assert "data_parallel.svg" in main and "| Model |" not in main and prose_words(main) <= 60
    assert f"measured {rate:,.0f} TFLOPS (solid) outlasts it from **{min(tokens):,.0f}–{max(tokens):,.0f} tokens a GPU**" in main
    for r, t in zip(model["dp"], tokens):
        assert f"| {r['bucketed_ms']:,.1f} ms | {r['buckets']:,} | {t:,.0f} tokens a GPU |" in table
    svg = (figures_dir(node_deck["dir"]) / "data_parallel.svg").read_text()
    assert all(f"{r['label']} all-reduce, {r['bucketed_ms']:,.1f} ms" in svg for r in model["dp"])


def _all_to_all_rows(times_ms: dict, n: int, collective: str = "all_to_all") -> list[dict]:
    return [{"collective": collective, "bytes": b, "time_ms": {"median": t}, **multigpu.bandwidths(collective, b, t, n)}
            for b, t in sorted(times_ms.items())]


def test_a_moe_layer_is_two_all_to_alls_of_its_dispatch_interpolated_between_the_sizes_measured():
    """DeepSeek-V3's dispatch, 4,096 tokens x 8 experts x 7,168 BF16 values a GPU, between 256 and
    512 MiB: its time log-log between the two, twice for the combine; its bus bandwidth (n-1)/n of its
    algbw; beside nccl-tests' at the same size, level within 5%."""
    ours = _all_to_all_rows({256 << 20: 1.0, 512 << 20: 2.0}, 2)
    theirs = [{**r, "mode": section.PEER_MODE, "time_us": 1e3 * r["time_ms"]["median"] * 1.03} for r in ours]
    moe = section.moe_layer(ours + _all_to_all_rows({1 << 20: 0.1}, 2, "all_reduce"), 2, theirs)
    nbytes = 4096 * 8 * 7168 * 2
    w = math.log(nbytes / (256 << 20)) / math.log(2)
    assert moe["bytes"] == nbytes and moe["one_way_ms"] == pytest.approx(math.exp(w * math.log(2.0)))
    assert moe["layer_ms"] == pytest.approx(2 * moe["one_way_ms"])
    assert moe["busbw_gbps"] == pytest.approx(nbytes / (moe["one_way_ms"] * 1e-3) / 1e9 * 0.5)
    assert moe["versus_peer"]["call"] == "level with" and moe["versus_peer"]["pct"] == pytest.approx(3.0)
    slower = [{**r, "time_us": r["time_us"] / 1.03 * 0.9} for r in theirs]
    assert section.moe_layer(ours, 2, slower)["versus_peer"]["call"] == "slower than"
    # past the sizes measured: no time; no all-to-all at all: no slide
    short = section.moe_layer(_all_to_all_rows({1 << 20: 0.1, 64 << 20: 0.5}, 2), 2)
    assert short["measured"] is False and "one_way_ms" not in short
    assert section.moe_layer(_all_to_all_rows({1 << 20: 0.1}, 2, "all_reduce"), 2) is None


def test_the_committed_h200_deck_sizes_the_moe_layer_from_the_node_that_measured_all_to_all(tmp_path):
    """The H200's node of most GPUs measured no all-to-all: the slide comes from the one that did."""
    from tests.conftest import ROOT
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(ROOT / "results" / "nvidia-h200.yaml"), "--out-dir", str(tmp_path),
                           "--talk", build.FULL]) == 0
    slide = slides_of((tmp_path / "slides.md").read_text()).get("Mixture of Experts: the All-to-All")
    docs = {n: schema.load(ROOT / "results" / f"nvidia-h200-x{n}.yaml") for n in (2, 4)}
    measured = {n: any(r["collective"] == "all_to_all" for r in d["benchmarks"]["multigpu.nccl"]["rows"]) for n, d in docs.items()}
    if measured[2] and not measured[4]:
        assert slide and "on 2 GPUs" in slide and "all_to_all.svg" in slide
