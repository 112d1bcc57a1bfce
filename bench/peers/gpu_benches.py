"""The memory peer: RRZE-HPC's gpu-benches, built at run time from a checkout named by
$GPU_BENCHES_DIR (its code stays there; binaries go to .cache/peers/) and run on the same GPU in the
same run as this project's memory benchmarks, so the deck sets their figures side by side:

- gpu-stream: one double per thread over 2 GiB arrays, six kernels (init, read, scale, triad and
  two stencils), occupancy stepped by padding shared memory; bandwidth counts each array's bytes once.
- gpu-l2-cache: 512 kB a block read by 200,000 blocks from a footprint that grows from L2's size to
  DRAM's; bandwidth counts the bytes the kernel asks for.
- gpu-latency: a pointer chase of generic loads over a growing footprint. Its sweep takes well over
  an hour on a Hopper part (each size rebuilds the chain on the host, 21 times), so it runs for
  LATENCY_S seconds and keeps the sizes it reached: L1 and L2, not DRAM.

The programs are compiled with nvcc for this GPU alone (their Makefiles name sm_70 and /opt/cuda);
gpu-l2-cache without its CUPTI counters, which its source leaves unused."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..core.peers import checkout_commit
from ..core.registry import ROOT, register

PEER_ENV = "GPU_BENCHES_DIR"
# gpu-latency's time: past L1 into L2, not DRAM. The H200 reached 932 kB in 40 s, and a size's time
# grows with it, so this reaches about 580 kB, past where our sweep meets L2's latency (362 kB).
LATENCY_S = 25
RUN_TIMEOUT_S = 240             # gpu-stream and gpu-l2-cache each finish in about a minute
STREAM_KERNELS = ("init", "read", "scale", "triad", "stencil3", "stencil5")
# program: (its folder, the C++ standard its source needs, what else it compiles with)
PROGRAMS = {"stream": ("gpu-stream", "c++20", ()),
            "l2_cache": ("gpu-l2-cache", "c++17", ("-DGPU_MEASURE_METRICS_H_", "-include", "no_counters.h")),
            "latency": ("gpu-latency", "c++11", ("nvml",))}


def nvml_library() -> str:
    """The NVML library this process loads (the driver's): the path gpu-latency links against."""
    import ctypes
    ctypes.CDLL("libnvidia-ml.so.1")
    for line in Path("/proc/self/maps").read_text().splitlines():
        if "libnvidia-ml.so" in line:
            return line.split()[-1]
    raise RuntimeError("libnvidia-ml.so.1 loaded but not found in /proc/self/maps")


def build(checkout: Path, device: dict) -> dict[str, Path]:
    """The three programs, compiled for this GPU into .cache/peers/: their paths by name."""
    for folder, _, _ in PROGRAMS.values():
        if not (checkout / folder / "main.cu").exists():
            raise RuntimeError(f"{checkout} holds no {folder}/main.cu: is {PEER_ENV} a checkout of RRZE-HPC/gpu-benches?")
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: gpu-benches is built with the CUDA toolkit's nvcc")
    cc = device["compute_capability"].replace(".", "") + ("a" if device["compute_capability"] == "9.0" else "")

    def command(name: str, out: Path) -> list[str]:
        folder, std, extra = PROGRAMS[name]
        flags = [str(out / f) if f == "no_counters.h" else f for f in extra if f != "nvml"]
        libs = ["-Xlinker", nvml_library()] if "nvml" in extra else []      # the driver's NVML, by its path
        return [nvcc, f"-std={std}", "-O3", f"-gencode=arch=compute_{cc},code=sm_{cc}", "-Xcompiler", "-fopenmp",
                *flags, "-o", str(out / name), str(checkout / folder / "main.cu"), *libs]
    # the binaries are kept while the checkout's commit and every command that builds them stay the same
    commands = "|".join(" ".join(command(name, Path("OUT"))) for name in PROGRAMS)
    key = hashlib.sha256(f"{checkout_commit(checkout)}|{commands}".encode()).hexdigest()[:12]
    out = ROOT / ".cache" / "peers" / f"gpu-benches-{key}"
    out.mkdir(parents=True, exist_ok=True)
    built = {name: out / name for name in PROGRAMS}
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # the run's build up front and its benchmark's: one builds, one waits
        (out / "no_counters.h").write_text("static inline void initMeasureMetric() {}   // CUPTI counters: unused\n")
        for name, (folder, _, _) in PROGRAMS.items():
            if built[name].exists():
                continue
            proc = subprocess.run(command(name, out), capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"building gpu-benches' {folder} failed: {proc.stderr.strip()[-1500:]}")
    return built


def run(binary: Path, seconds: float | None = None) -> str:
    """A program's stdout; with ``seconds``, what it printed by then (it is stopped there)."""
    try:
        proc = subprocess.run([str(binary)], capture_output=True, text=True, timeout=seconds or RUN_TIMEOUT_S,
                              cwd=binary.parent)
    except subprocess.TimeoutExpired as stopped:
        if seconds is None:
            raise RuntimeError(f"{binary.name} ran past {RUN_TIMEOUT_S} s") from None
        out = stopped.stdout or b""
        return out.decode() if isinstance(out, bytes) else out
    if proc.returncode != 0:
        raise RuntimeError(f"{binary.name} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return proc.stdout


NUMBER = r"[-+]?\d+(?:\.\d+)?"


def parse_stream(text: str) -> list[dict]:
    """gpu-stream's rows: block size, threads in all, blocks per SM, occupancy, then GB/s by kernel."""
    rows = []
    for line in text.splitlines():
        m = re.match(rf"\s*(\d+)\s+(\d+)\s+(\d+)\s+({NUMBER})%\s*\|\s*GB/s:((?:\s+{NUMBER}){{6}})\s*$", line)
        if m:
            rows.append({"block": int(m[1]), "threads": int(m[2]), "blocks_per_sm": int(m[3]), "occupancy_pct": float(m[4]),
                         "gbps": dict(zip(STREAM_KERNELS, map(float, m[5].split())))})
    return rows


def parse_l2_cache(text: str) -> list[dict]:
    """gpu-l2-cache's rows: a block's data, the footprint (kB), the fastest time's spread, GB/s."""
    rows = []
    for line in text.splitlines():
        m = re.match(rf"\s*({NUMBER}) kB\s+({NUMBER}) kB\s+({NUMBER})ms\s+({NUMBER})%\s+({NUMBER}) GB/s", line)
        if m:
            rows.append({"block_kb": float(m[1]), "footprint_kb": float(m[2]), "spread_pct": float(m[4]),
                         "gbps": float(m[5])})
    return rows


def parse_latency(text: str) -> list[dict]:
    """gpu-latency's rows: the footprint (kB) and cycles a load (mean, median, 5th and 95th
    percentile of its repetitions), with the SM clock NVML gave it."""
    rows = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) == 8 and all(re.fullmatch(NUMBER, f) for f in fields):
            rows.append({"clock_mhz": float(fields[1]), "footprint_kb": float(fields[2]), "cycles": float(fields[5]),
                         "cycles_p5": float(fields[6]), "cycles_p95": float(fields[7])})
    return rows


@register("peers.gpu_benches", sources=("bench/peers/gpu_benches.py",), title="gpu-benches (RRZE-HPC), the memory peer",
          # its three programs built up front, beside the run (about 7 s of nvcc), not in its own time
          prebuild=lambda device: build(Path(os.environ[PEER_ENV]), device), timeout_s=600, peer=PEER_ENV)
def gpu_benches(ctx) -> dict:
    checkout = Path(os.environ[PEER_ENV])
    ctx.progress(f"building gpu-benches from {checkout} ({checkout_commit(checkout)[:12]})")
    binaries = build(checkout, ctx.device)
    stream = parse_stream(run(binaries["stream"]))
    ctx.progress(f"gpu-stream: {len(stream)} rows, best read {max((r['gbps']['read'] for r in stream), default=0):,.0f} GB/s")
    l2 = parse_l2_cache(run(binaries["l2_cache"]))
    ctx.progress(f"gpu-l2-cache: {len(l2)} rows, best {max((r['gbps'] for r in l2), default=0):,.0f} GB/s")
    latency = parse_latency(run(binaries["latency"], seconds=LATENCY_S))
    ctx.progress(f"gpu-latency: {len(latency)} sizes in {LATENCY_S} s, up to {max((r['footprint_kb'] for r in latency), default=0):,.0f} kB")
    empty = [name for name, rows in (("gpu-stream", stream), ("gpu-l2-cache", l2), ("gpu-latency", latency)) if not rows]
    return {"params": {"checkout": str(checkout), "commit": checkout_commit(checkout), "latency_s": LATENCY_S,
                       "programs": {name: folder for name, (folder, _, _) in PROGRAMS.items()}},
            "check": {"passed": not empty, "method": "each program printed rows in its format; the programs check "
                                                    "nothing themselves, so their figures stand as they print them",
                      **({"detail": f"no rows from {', '.join(empty)}"} if empty else {})},
            "stream": stream, "l2_cache": l2, "latency": latency}
