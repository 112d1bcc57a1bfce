"""gpu-benches, the memory peer, without a GPU: its three programs' printed rows parsed as they
print them, and the deck's comparison on a record in the benchmark's shape, both ways."""
from bench.peers import gpu_benches
from tests.test_atlas import built

STREAM = """block smBlocks   threads    occ%   |                init       read      scale      triad        3pt        5pt
  16      2112       1    0.8%     |  GB/s:          75         31         60        107         57         56
Configure 1 instead of 2
1024    270336       2  100.0%     |  GB/s:        3280       2453       2702       3138       2664       2662
"""
L2 = """     data set   exec time     spread       Eff. bw
       512 kB      1536 kB        10ms       0.8%   10521.4 GB/s        0 GB/s      0 GB/s      0 GB/s      0 GB/s
       512 kB    159744 kB        33ms       0.1%    3144.3 GB/s        0 GB/s      0 GB/s      0 GB/s      0 GB/s
"""
LATENCY = """clock: 1980 1980 1980
   100000  1980        2      1.6    32.3 32.3 32.3 32.4
   100000  1980    208.0      2.5    49.2 49.2 49.1 49.4
   100000  1980   2060.2     14.4   284.6 284.5 284.3 284.9
"""


def test_each_programs_rows_are_read_as_printed():
    stream = gpu_benches.parse_stream(STREAM)
    assert [r["block"] for r in stream] == [16, 1024]
    assert stream[1] == {"block": 1024, "threads": 270336, "blocks_per_sm": 2, "occupancy_pct": 100.0,
                         "gbps": {"init": 3280.0, "read": 2453.0, "scale": 2702.0, "triad": 3138.0, "stencil3": 2664.0,
                                  "stencil5": 2662.0}}
    l2 = gpu_benches.parse_l2_cache(L2)
    assert [(r["footprint_kb"], r["gbps"]) for r in l2] == [(1536.0, 10521.4), (159744.0, 3144.3)]
    latency = gpu_benches.parse_latency(LATENCY)
    assert [(r["footprint_kb"], r["cycles"]) for r in latency] == [(2.0, 32.3), (208.0, 49.2), (2060.2, 284.5)]


def peer_record(doc: dict, hbm_gbps: float, l2_cycles: float) -> dict:
    from bench.core import registry
    return {"family": "peers", "title": "peers.gpu_benches", "status": "ok",
            **registry.discover()["peers.gpu_benches"].provenance(),
            "measured_at": "2026-11-26T00:00:00+00:00", "git_commit": "0" * 40,
            "telemetry": doc["benchmarks"]["hbm.copy_scaling"]["telemetry"], "duration_s": 1.0,
            "params": {"checkout": "/x/gpu-benches", "commit": "1038c5d" + "0" * 33, "latency_s": 40,
                       "programs": {"stream": "gpu-stream", "l2_cache": "gpu-l2-cache", "latency": "gpu-latency"}},
            "check": {"passed": True},
            "stream": [{"block": 1024, "threads": 270336, "blocks_per_sm": 2, "occupancy_pct": 100.0,
                        "gbps": {k: hbm_gbps for k in gpu_benches.STREAM_KERNELS}}],
            "l2_cache": gpu_benches.parse_l2_cache(L2),
            "latency": [{"clock_mhz": 1980.0, "footprint_kb": kb, "cycles": c, "cycles_p5": c, "cycles_p95": c}
                        for kb, c in ((2.0, 32.3), (2060.0, l2_cycles))]}


def _ours(doc):
    """The fixture's own figures the slide divides by: HBM copy, L2 read, and the ld.ca sweep near 2 MB."""
    from slides import hbm, l2, memory_latency
    hbm_best = max(r["gbps"] for r in doc["benchmarks"]["hbm.copy_scaling"]["rows"])
    sweep = doc["benchmarks"]["latency.memory"]["sweep"]
    near = min(sweep, key=lambda s: abs(s["bytes"] - 2060 * 1024))
    return hbm_best, near["cycles"]


def test_pairs_that_agree_are_said_to_and_those_that_differ_name_the_method(fixture_doc, write_results, tmp_path):
    hbm_best, l2_cycles = _ours(fixture_doc)
    fixture_doc["benchmarks"]["peers.gpu_benches"] = peer_record(fixture_doc, hbm_gbps=hbm_best * 1.01, l2_cycles=l2_cycles * 1.5)
    slide = built(fixture_doc, write_results, tmp_path)[0]["Memory Beside gpu-benches"]
    assert "| HBM bandwidth |" in slide and "| -1.0% |" in slide, "ours over theirs, less one"
    assert "  - L2 hit latency: ours is ld.ca timed by clock64" in slide and "HBM bandwidth: ours copies" not in slide
    assert "HBM latency: gpu-latency reached 2.01 MiB in its 40 s, inside L2" in slide


def test_without_a_checkout_the_backup_divider_names_the_peer(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["peers.gpu_benches"] = {**fixture_doc["benchmarks"]["peers.gpu_benches"], "status": "skipped",
                                                      "reason": "no checkout of the peer: set GPU_BENCHES_DIR to one"}
    s = built(fixture_doc, write_results, tmp_path)[0]
    assert "Memory Beside gpu-benches" not in s
    assert "gpu-benches beside the memory slides (peers.gpu_benches)" in s["Backup Slides"]


def test_the_build_up_front_and_the_benchmarks_own_compile_each_program_once(tmp_path, monkeypatch):
    """The run builds the programs beside the benchmarks (prebuild, given the device) while the
    benchmark may ask for them too: one builds, the other waits and finds them."""
    import threading
    from bench.core import registry
    checkout = tmp_path / "gpu-benches"
    for folder, _, _ in gpu_benches.PROGRAMS.values():
        (checkout / folder).mkdir(parents=True)
        (checkout / folder / "main.cu").write_text("int main() {}\n")
    log = tmp_path / "nvcc.log"
    nvcc = tmp_path / "bin" / "nvcc"
    nvcc.parent.mkdir()
    # a compiler that takes a while, logs each call and writes the file after -o
    nvcc.write_text(f'#!/bin/sh\nsleep 0.2\necho "$@" >> {log}\nwhile [ "$1" != "-o" ]; do shift; done\n'
                    'printf built > "$2"\n')
    nvcc.chmod(0o755)
    monkeypatch.setenv("PATH", f"{nvcc.parent}:/usr/bin:/bin")
    monkeypatch.setenv(gpu_benches.PEER_ENV, str(checkout))
    monkeypatch.setattr(gpu_benches, "ROOT", tmp_path)
    monkeypatch.setattr(gpu_benches, "nvml_library", lambda: "/usr/lib/libnvidia-ml.so.1")
    device = {"compute_capability": "9.0"}
    prebuild = registry.discover()["peers.gpu_benches"].prebuild
    found = []
    threads = [threading.Thread(target=lambda: found.append(prebuild(device))),
               threading.Thread(target=lambda: found.append(gpu_benches.build(checkout, device)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found[0] == found[1] and all(path.read_text() == "built" for path in found[0].values())
    calls = log.read_text().splitlines()
    assert len(calls) == len(gpu_benches.PROGRAMS) and all("arch=compute_90a,code=sm_90a" in c for c in calls)
