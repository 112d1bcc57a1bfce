"""Burst against sustained: the GEMMs timed the way public READMEs time them, beside the steady
state every other figure here is taken at.

fast.cu's benchmark (matmul.cu) runs a GEMM once to check it, then times eight back to back
between two events, on whatever state the GPU is in: in a run of its own, a GPU at rest. Here each
GEMM rests REST_S, runs once, and its next BURST_RUNS are timed the same way, with the SMs' clock
measured over them and NVML's clock and power read right after; BURSTS such bursts give a median
and a range. After every GEMM's bursts, each runs back to back to its steady state and is timed
alone there, with its power from the energy counter: the sustained figure it is set beside. The
first runs SUSTAIN_S from the rest its bursts left; each next starts from the one before's steady
state and runs until its own rounds settle (harness.settle, at most SUSTAIN_S)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from .gemm import catalogue, cublas, benchmarks, harness, launch
from .peers import fastcu
from .core.device import telemetry
from .gemm.harness import Shape
from .core.registry import register
from .core.timing import quick, time_gpu
from .core.stats import summarize

# idle before each burst, long enough for the clock to rise again: after 1, 2, 3 and 5 s the bursts of
# cuBLAS TF32 and the headline ran at the same clock and TFLOPS, within 0.2% (H200, 2026-11-30)
REST_S = 0.5 if quick() else 1.0
BURST_RUNS = 8                        # fast.cu's repeat_times
BURSTS = 2 if quick() else 3
# then sustained: back to back this long (from a rest the clock falls for about ten seconds:
# settle.headline), and a window of harness.energy() for its time, clock and power; a quick run,
# which measures no energy, sustains none
SUSTAIN_S = 8.0
# TF32 at the reference shape, as the talk's headline; BF16 at fast.cu's own, where its README quotes
BF16_SHAPE = fastcu.SHAPES[1]
TF32 = catalogue.KERNELS[catalogue.HEADLINE]
BF16 = catalogue.KERNELS[catalogue.HEADLINE_BF16]
LAYOUT = "b_kmajor"


def burst(run) -> dict:
    """BURSTS times: a rest, one run, then BURST_RUNS timed back to back between two events."""
    samples = []
    for _ in range(BURSTS):
        time.sleep(REST_S)
        t = time_gpu(run, warmup=1, reps=1, batch=BURST_RUNS)
        now = telemetry()
        samples.append({"ms": t["median"], "sm_clock_mhz": t.get("sm_clock_mhz"), "nvml_sm_clock_mhz": now["sm_clock_mhz"],
                        "power_w": now["power_w"], "temperature_c": now["temperature_c"]})
    return {"time_ms": summarize([s["ms"] for s in samples]), "samples": samples}


def _cublas(precision: str):
    return lambda a, b, c: harness.Launch(lambda: cublas.gemm(a, b, c, LAYOUT, precision))


def _gemms(device: dict) -> dict:
    """Each GEMM: (its title, its precision, its shape, prepare(a, b, c)), by name; prepare's C is
    FP32 (M x N), or None where the GEMM writes its own (fast.cu: BF16, column-major)."""
    out = {"cublas_tf32": ("cuBLAS TF32", "tf32", harness.SHAPE, _cublas("tf32")),
           "headline": (TF32[0].title, "tf32", harness.SHAPE, launch.prepare(*TF32, device)),
           "cublas_bf16": ("cuBLAS BF16", "bf16", BF16_SHAPE, _cublas("bf16")),
           "headline_bf16": (f"{BF16[0].title} (BF16)", "bf16", BF16_SHAPE, launch.prepare(*BF16, device))}
    checkout = os.environ.get(fastcu.PEER_ENV)
    if checkout and Path(checkout).is_dir():
        out["fastcu"] = ("fast.cu kernel 12", "bf16", BF16_SHAPE, fastcu.peer(fastcu.build(Path(checkout))))
    return out


def _checked(name: str, shape: Shape, precision: str, prepare):
    """(run, check): the GEMM on the shape's operands, its poisoned C checked against float64."""
    import cupy
    if name != "fastcu":
        launched, check, _, _ = harness.checked_launch(shape, LAYOUT, precision, prepare)
        return launched.run, check
    ops = harness.operands(shape, LAYOUT, precision)
    c = ops.poisoned_c("bf16", rows=shape.n, cols=shape.m)          # column-major C: (N, M) row-major
    run = lambda: prepare(ops.a, ops.b, c)
    run()
    cupy.cuda.get_current_stream().synchronize()
    return run, ops.check(c.T)


@register("burst.gemm", sources=(*benchmarks.kernel_sources(TF32[0]), *benchmarks.kernel_sources(BF16[0]), "bench/peers/fastcu.py",
                                  str(fastcu.ENTRY.relative_to(fastcu.ROOT))),
          kernels=catalogue.definitions(("headline", "headline_bf16")),
          builds=(*benchmarks.builds(*TF32), *benchmarks.builds(*BF16)), timeout_s=300, min_cc=catalogue.HOPPER,
          title="GEMMs in bursts from a rest, as public READMEs time them")
def run(ctx) -> dict:
    rows, wrong, runs = [], [], []
    for name, (title, precision, shape, prepare) in _gemms(ctx.device).items():
        fn, check = _checked(name, shape, precision, prepare)
        if not check["passed"]:
            wrong.append(f"{title}: {check.get('detail')}")
        b = burst(fn)
        runs.append(fn)
        rows.append({"name": name, "title": title, "precision": precision, "shape": shape.dims, "check": check,
                     **b, "tflops": harness.tflops(shape, b["time_ms"])})
        ctx.progress(f"{title} at {shape.m}x{shape.n}x{shape.k}: {rows[-1]['tflops']:.1f} TFLOPS in bursts of "
                     f"{BURST_RUNS} from a rest, SMs at {b['samples'][-1]['sm_clock_mhz'] or 0:.0f} MHz")
    if harness.ENERGY_S:            # a quick run measures no energy window, so no sustained figure
        for i, (row, fn) in enumerate(zip(rows, runs)):
            _sustain(fn, first=i == 0)
            shape = Shape(*row["shape"])
            sustained = harness.energy(fn, shape, row["time_ms"]["median"])
            if sustained:
                row["sustained"] = {**sustained, "tflops": harness.tflops(shape, {"median": sustained["time_ms"]})}
                ctx.progress(f"{row['title']} sustained: {row['sustained']['tflops']:.1f} TFLOPS at {sustained['watts']:.0f} W")
    if "fastcu" not in {r["name"] for r in rows}:
        ctx.progress(f"fast.cu not timed: ${fastcu.PEER_ENV} names no checkout")
    return {"params": {"rest_s": REST_S, "runs": BURST_RUNS, "bursts": BURSTS, "warmup": 1, "layout": LAYOUT,
                       "sustain_s": SUSTAIN_S, "sustain_settle_rule": harness.SETTLE_RULE, "energy_s": harness.ENERGY_S,
                       "timing": "after a rest, one run, then the runs back to back between two events"},
            "check": {"passed": not wrong, **({"detail": "; ".join(wrong)} if wrong else {})},
            "rows": rows}


def _sustain(fn, first: bool) -> None:
    """Bring ``fn`` to its steady state: the first GEMM from the rest the bursts left, for SUSTAIN_S;
    each next one from the one before's steady state, until its rounds settle (harness.settle)."""
    if first:
        harness.warm(fn, SUSTAIN_S)
    else:
        harness.settle([fn], *harness.pace([fn]), max_s=SUSTAIN_S)
