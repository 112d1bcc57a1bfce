"""The multi-GPU family without a GPU: its arithmetic (bus-bandwidth factors, nccl-tests' sizes,
the α–β fit, the data-parallel estimate, the comparison with the peer), its topology, its place in
the results and the runner, and its slides on the node fixture (two H200s)."""
import copy
import math
import json

import pytest

import build
from bench import multigpu, runner, schema
from bench.registry import discover
from bench.topology import NO_MULTICAST, child_env, pairs_of
from slides import multigpu as section
from slides.deck import figures_dir
from tests.test_build import assert_spoken_first, deck, headings, slides_of  # noqa: F401 (deck: the fixture deck)


@pytest.mark.parametrize("n,all_reduce,gather", [(2, 1.0, 0.5), (4, 1.5, 0.75), (8, 1.75, 0.875)])
def test_bus_factors_are_nccl_tests(n, all_reduce, gather):
    f = multigpu.BUS_FACTOR
    assert f["all_reduce"](n) == all_reduce
    assert f["all_gather"](n) == f["reduce_scatter"](n) == gather
    assert f["broadcast"](n) == f["send_recv"](n) == 1.0
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
    bucket, how = section.all_reduce_ms(measured, fit, 25 << 20)
    w = math.log((25 << 20) / (16 << 20)) / math.log(2)
    assert how == "measured" and bucket == pytest.approx(0.5 ** (1 - w) * 0.8 ** w)
    assert section.all_reduce_ms(measured, fit, 4e9) == (pytest.approx(0.01 + 40.0), "fit")
    rows = section.data_parallel(measured, fit, memory_bytes=80e9)          # 80 GB: up to 2.7B at 16 B a parameter
    assert [r["params"] for r in rows] == [350e6, 1.3e9, 2.7e9]
    big = rows[-1]
    assert big["bytes"] == 5.4e9 and big["one_from"] == "fit" and big["buckets"] == -(-5_400_000_000 // (25 << 20))
    last = 5.4e9 - (big["buckets"] - 1) * (25 << 20)
    assert big["bucketed_ms"] == pytest.approx((big["buckets"] - 1) * bucket + section.all_reduce_ms(measured, fit, last)[0])


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
    assert t["large"]["worst_at"] == {"name": "all-reduce", "bytes": 1 << 30, "ours_faster": True}
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
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path)]) == 0
    return {"md": (tmp_path / "slides.md").read_text(), "dir": tmp_path, "doc": node_doc}


def test_multigpu_slides_come_from_the_node_results(node_deck):
    md, doc = node_deck["md"], node_deck["doc"]
    titles = headings(md)
    i = titles.index("Takeaways")
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
    assert ("Not measured on this GPU: the multi-GPU section (multigpu.p2p, multigpu.nccl, multigpu.nccl_tests)"
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
    return {k: rec[k] for k in ("family", "title", "source_hash", "measured_at", "telemetry")} | {
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
    assert f"STALE: multigpu.p2p in {node.name} was measured with code that has changed since" in out
    assert "multigpu.nccl in" not in out
    title = slides_of((tmp_path / "slides.md").read_text())["CUDA Performance Study"]
    assert f"Stale, code changed since measured: multigpu.p2p in {node.name}." in title


def test_nccl_choices_are_read_from_its_tuning_log():
    """Both the names newer NCCL logs and the enum numbers of older releases; rank 0's lines only
    name a collective's total bytes, as the rows count them."""
    log = ("host:1:1 [0] NCCL INFO AllReduce: 4096 Bytes -> Algo TREE proto LL channel{Lo..Hi}={0..1}\n"
           "host:1:1 [0] NCCL INFO AllGather: 67108864 Bytes -> Algo 1 proto 2 time 123.4\n"
           "host:1:1 [0] NCCL INFO Broadcast:    32768 Bytes -> Algo RING proto SIMPLE channel{Lo..Hi}={0..0}\n"
           "host:1:1 [0] NCCL INFO Init COMPLETE\n")
    assert multigpu.nccl_choices(log) == {
        ("all_reduce", 4096): {"algorithm": "TREE", "protocol": "LL"},
        ("all_gather", 64 << 20): {"algorithm": "RING", "protocol": "SIMPLE"},
        ("broadcast", 32768): {"algorithm": "RING", "protocol": "SIMPLE"}}


def test_the_nccl_notes_name_its_choice_where_recorded(fixture_doc, node_doc, write_results, tmp_path):
    for r in node_doc["benchmarks"]["multigpu.nccl"]["rows"]:
        if r["collective"] == "all_reduce":
            r.update(algorithm="RING", protocol="LL128" if r["bytes"] < 1 << 20 else "SIMPLE")
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(write_results(node_doc, "node.yaml"))]) == 0
    notes = slides_of((tmp_path / "slides.md").read_text())["NCCL: Bus Bandwidth by Message Size"]
    assert "(NCCL chose RING, SIMPLE)" in notes and "Its smallest size: RING, LL128." in notes


def node_of(node_doc: dict, n: int) -> dict:
    """The node fixture as a node of ``n`` GPUs would record it: every GPU, every pair through the
    NVSwitches, every ordered pair's peer-to-peer row, the collectives' bus bandwidth from their times
    with the factors of n ranks (the times are the two GPUs', which is all a fixture can say)."""
    doc = copy.deepcopy(node_doc)
    node, gpu = doc["node"], doc["node"]["gpus"][0]
    node["gpu_count"] = n
    node["gpus"] = [{**gpu, "index": i, "pci_bus_id": f"0000:{i:02x}:00.0"} for i in range(n)]
    pair = node["pairs"][0]
    node["pairs"] = [{**pair, "a": a, "b": b} for a in range(n) for b in range(a + 1, n)]
    row = doc["benchmarks"]["multigpu.p2p"]["rows"][0]
    doc["benchmarks"]["multigpu.p2p"]["rows"] = [{**row, "src": s, "dst": d} for s in range(n) for d in range(n) if s != d]
    for bid in ("multigpu.nccl", "multigpu.nccl_tests"):
        rec = doc["benchmarks"][bid]
        rec["params"]["ranks"] = n
        for r in rec["rows"]:
            ms = r["time_ms"]["median"] if "time_ms" in r else r["time_us"] / 1e3
            r.update(multigpu.bandwidths(r["collective"], r["bytes"], ms, n))
    return doc


@pytest.mark.parametrize("n", [4, 8])
def test_a_node_of_more_gpus_builds_its_section(n, fixture_doc, node_doc, write_results, tmp_path):
    """The family is written for any number of GPUs of a host: a node of 4 or 8 draws every GPU, lists
    every pair, and holds bus bandwidth to the factors of n ranks."""
    doc = node_of(node_doc, n)
    schema.validate(doc, "node")
    fixture_doc["device"].update(name=doc["device"]["name"], slug=doc["device"]["slug"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare",
                       "--node", str(write_results(doc, f"node-x{n}.yaml"))]) == 0
    s = slides_of((tmp_path / "slides.md").read_text())
    title = f"Past One GPU: {n} × NVIDIA H200"
    assert title in s and f"Every pair of the {n} GPUs: **18 NVLinks** through NVSwitches" in s[title]
    assert s[title].count("\n- ") == 3                               # one line for all the pairs joined alike
    topology = (figures_dir(tmp_path) / "node_topology.svg").read_text()
    assert all(f">GPU {i}<" in topology for i in range(n))
    assert f"all-reduce {2 * (n - 1) / n:.2f} on {n} GPUs" in s["NCCL: Bus Bandwidth by Message Size"]
    big = next(r for r in doc["benchmarks"]["multigpu.nccl"]["rows"] if r["collective"] == "all_reduce"
               and r["bytes"] == 4 << 30)
    assert big["busbw_gbps"] == pytest.approx(big["algbw_gbps"] * 2 * (n - 1) / n)


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
    """python -m bench.nccl_json: one file a collective in nccl-tests' -J layout (version 3), each
    size's time, algbw and busbw the record's, and a line saying the times are not nccl-tests'."""
    from bench import nccl_json
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
