"""The overlap benchmark's arithmetic and the nvbandwidth peer's build and output, without a GPU."""
import json
from pathlib import Path

import pytest

from bench import nvbandwidth, overlap, schema


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
    from bench import catalogue
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
