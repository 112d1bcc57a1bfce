"""The overlap benchmark's arithmetic and the nvbandwidth peer's build and output, without a GPU."""
from pathlib import Path

import pytest

from bench.multigpu import nvbandwidth, overlap
from bench.core import schema
import slides.overlap


def test_layer_shapes_split_the_mlp_over_the_gpus():
    layer = overlap.shapes(4, 8192, 8192, 28672)
    assert layer["all_gather_gemm"]["gemm"] == [8192, 7168, 8192]          # tokens x slice x hidden
    assert layer["gemm_reduce_scatter"]["gemm"] == [8192, 8192, 7168]      # tokens x hidden x slice
    assert layer["all_gather_gemm"]["comm_bytes"] == 8192 * 8192 * 2      # the gathered BF16 input
    assert layer["gemm_reduce_scatter"]["comm_bytes"] == 8192 * 8192 * 4  # the FP32 partial sums
    with pytest.raises(ValueError, match="do not split"):
        overlap.shapes(3, 8192, 8192, 28672)
    # the model runs on 2, 4 and 8 GPUs, quick or not
    for n in (2, 4, 8):
        for tokens in (overlap.MODEL["tokens"], overlap.QUICK_TOKENS):
            overlap.shapes(n, tokens, overlap.MODEL["hidden"], overlap.MODEL["intermediate"])


def test_efficiency_against_the_ideal_and_the_serial_sum():
    e = overlap.efficiency(overlapped=1.1, gemm=1.0, comm=0.3)
    assert e["of_ideal"] == pytest.approx(1.0 / 1.1) and e["speedup_over_serial"] == pytest.approx(1.3 / 1.1)
    # overlap that costs more than it hides: below 1 over the serial sum, still a positive figure
    assert overlap.efficiency(overlapped=1.5, gemm=1.0, comm=0.3)["speedup_over_serial"] < 1


def _rank(ms: dict, passed=True):
    times = {w: {"median": ms[w], "samples": [ms[w]] * 3, "sm_clock_mhz": 1500.0} for w in overlap.WAYS}
    one = {"times": times, "turns": 3, "tile": "128x256",
           "timeline": [{"stream": "gemm", "chunk": 0, "start_ms": 0.0, "end_ms": 1.0}],
           "check": {"passed": passed, "rel_error": 1e-6, "tolerance": 1e-4, **({} if passed else {"detail": "NaN"})}}
    return {p: {"kernels": {label: one for label in overlap.KERNELS}} for p in overlap.PATTERNS}


def test_combine_takes_the_slowest_rank_sample_by_sample():
    fast = _rank({"overlapped": 1.0, "sequential": 1.3, "gemm": 0.9, "comm": 0.3})
    slow = _rank({"overlapped": 1.2, "sequential": 1.4, "gemm": 1.0, "comm": 0.4}, passed=False)
    r = overlap.combine([fast, slow], "all_gather_gemm", "persistent")
    assert r["times_ms"]["overlapped"]["median"] == 1.2 and r["times_ms"]["gemm"]["median"] == 1.0
    assert r["efficiency"]["of_ideal"] == pytest.approx(1.0 / 1.2)
    assert r["efficiency_by_sample"]["of_ideal"]["median"] == pytest.approx(1.0 / 1.2)
    assert not r["check"]["passed"] and "rank 1: NaN" in r["check"]["detail"]


def test_schema_names_every_pattern_gemm_and_way():
    spec = schema.RECORDS["multigpu.overlap"]["patterns"]
    assert set(spec) == set(overlap.PATTERNS)
    assert all(set(p["kernels"]) == set(overlap.KERNELS) for p in spec.values())
    assert all(set(k["times_ms"]) == set(overlap.WAYS) for p in spec.values() for k in p["kernels"].values())


def test_the_gemms_overlapped_take_the_sms_two_ways():
    from bench.gemm import catalogue
    persistent, per_tile = (catalogue.KERNELS[overlap.KERNELS[label]][1].tile for label in ("persistent", "a CTA a tile"))
    assert persistent.get("PERSISTENT") and not per_tile.get("PERSISTENT")
    assert overlap.KERNELS["persistent"] == catalogue.HEADLINE_BF16


NVB_OUTPUT = {"nvbandwidth": {"version": "v0.8", "git_version": "v0.8", "testcases": [
    {"name": "device_to_device_memcpy_write_ce", "status": "Passed",
     "bandwidth_matrix": [["N/A", "390.5"], ["391.0", "N/A"]], "bandwidth_description": "GB/s"},
    {"name": "device_to_device_latency_sm", "status": "Passed", "bandwidth_matrix": [["N/A", "812.3"], ["810", "N/A"]]},
    {"name": "device_to_device_memcpy_read_sm", "status": "Waived"}]}}


def test_nvbandwidth_matrices_become_rows_per_ordered_pair():
    rows, failed = nvbandwidth.parse(NVB_OUTPUT)
    assert failed == ["device_to_device_memcpy_read_sm: Waived"]
    write = [r for r in rows if r["case"] == "device_to_device_memcpy_write_ce"]
    assert [(r["src"], r["dst"], r["value"]) for r in write] == [(0, 1, 390.5), (1, 0, 391.0)]
    assert all(r["matches"] == "copy_engine" and r["unit"] == "GB/s" for r in write)
    assert {r["unit"] for r in rows if "latency" in r["case"]} == {"ns"}


def test_every_case_matches_a_p2p_measurement():
    p2p = schema.RECORDS["multigpu.p2p"]["rows"][0]
    assert all(f"{m}?" in p2p for m in nvbandwidth.CASES.values())


def test_nvbandwidth_sources_come_from_its_cmakelists(tmp_path):
    (tmp_path / "CMakeLists.txt").write_text("project(nvbandwidth)\nset(src\n    a.cpp\n    k.cu\n    json/j.cpp\n)\n")
    assert nvbandwidth.sources(tmp_path) == [tmp_path / "a.cpp", tmp_path / "k.cu", tmp_path / "json" / "j.cpp"]
    (tmp_path / "CMakeLists.txt").write_text("project(other)\n")
    with pytest.raises(RuntimeError, match="not an nvbandwidth checkout"):
        nvbandwidth.sources(tmp_path)



# --- the slides, from a record that combine() made of simulated ranks ---------------------------

def _record(of_ideal_by_label: dict, n: int = 4) -> dict:
    """An ok multigpu.overlap record: each GEMM's overlapped time set so that it reaches the given
    share of the ideal (GEMM 1 ms, NCCL 0.4 ms alone), its timeline four chunks a stream."""
    from bench.core.registry import discover
    patterns = {}
    for p in overlap.PATTERNS:
        kernels = {}
        for label in overlap.KERNELS:
            ms = {"overlapped": 1.0 / of_ideal_by_label[label], "sequential": 1.4, "gemm": 1.0, "comm": 0.4}
            rank = _rank(ms)
            for r in rank.values():
                r["kernels"][label] = {**r["kernels"][label], "timeline": [
                    {"stream": s, "chunk": j, "start_ms": 0.3 * j + (0.1 if s == "gemm" else 0), "end_ms": 0.3 * j + 0.28}
                    for s in ("comm", "gemm") for j in range(4)]}
            kernels[label] = overlap.combine([rank, rank], p, label)
        patterns[p] = {**overlap.shapes(n, 8192, 8192, 28672)[p], "chunks": 4, "kernels": kernels}
    header = discover()["multigpu.overlap"].record_header()
    return {**header, "status": "ok", "params": {"ranks": n, "kernels": overlap.KERNELS, **overlap.MODEL, "chunks": 4,
                                                 "target_of_ideal": overlap.OVERLAP_TARGET, "nccl": "2.28.9"},
            "check": {"passed": True, "method": "simulated"}, "patterns": patterns}


def _node(n: int, record: dict | None):
    import copy

    import yaml
    doc = yaml.safe_load(Path("tests/fixtures/h200-x2.yaml").read_text())
    doc = copy.deepcopy(doc)
    doc["node"]["gpu_count"] = n
    doc["benchmarks"].pop("multigpu.overlap")
    if record:
        doc["benchmarks"]["multigpu.overlap"] = record
    return (Path(f"node-x{n}.yaml"), doc)


def _overlap_deck(*nodes):
    import yaml
    from slides.deck import Deck
    doc = yaml.safe_load(Path("tests/fixtures/h200-x2.yaml").read_text())
    return Deck(doc, nodes=nodes)


def test_overlap_calls_the_target_per_node_size_and_ours_against_cublas():
    met = {"persistent": 0.85, "a CTA a tile": 0.9, "cuBLAS": 0.9}
    short = {"persistent": 0.6, "a CTA a tile": 0.7, "cuBLAS": 0.8}
    deck = _overlap_deck(_node(2, _record(met, 2)), _node(4, _record(short)))
    c = deck.of(slides.overlap)
    assert c.measured and c.sizes == [2, 4] and c.largest["n"] == 4
    assert c.met_on == [{"n": 2, "all": True}, {"n": 4, "all": False}] and not c.met_everywhere
    # the best of ours (a CTA a tile, 70%) against cuBLAS (80%), the same every sample: behind by 10 points
    assert all(v == {"points": "−10.0 points", "call": "behind"} for v in c.against_cublas.values())
    row = c.largest["patterns"][0]["runs"][0]
    assert row["label"] == "persistent" and row["elsewhere"] == [{"n": 2, "of_ideal": pytest.approx(0.85)}]
    # overlapped at 1/0.6 ms against 1.4 ms one after the other: slower, and listed as such
    assert {r["label"] for r in c.slowed_by_overlap} == {"persistent", "a CTA a tile"}


def test_overlap_timeline_draws_every_recorded_event_legibly():
    import re
    from slides import overlap as section
    deck = _overlap_deck(_node(4, _record({"persistent": 0.8, "a CTA a tile": 0.9, "cuBLAS": 0.9})))
    svg = section.draw(deck.of(section), deck)["overlap_timeline.svg"]
    ours = [label for label, k in overlap.KERNELS.items() if k != "cublas"]
    # the bars: 4 chunks on each of two streams, for each of our GEMMs in each pattern
    assert svg.count("<rect") - 1 == len(overlap.PATTERNS) * len(ours) * 2 * 4     # less the background
    assert min(float(s) for s in re.findall(r"font-size:(\d+(?:\.\d+)?)px", svg)) >= 10


def test_no_overlap_record_no_slides():
    deck = _overlap_deck(_node(2, None))
    assert not deck.of(slides.overlap).measured
    assert deck.missing["Overlapping a GEMM With Its Communication"] == ["multigpu.overlap"]
