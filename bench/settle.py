"""The headline kernel and cuBLAS under the power cap, from a rest to a steady state.

Each GEMM, after REST_S idle, runs for DURATION_S as back-to-back samples of gemm.SAMPLE_MS
(the GEMM family's sample), each timed with the one timer and followed by an NVML reading of
the clock, power and temperature. The record keeps every sample in order; build.py computes
the spread of WINDOW consecutive samples by when they start, which says how long a GEMM must
run before its timings settle, and how much of the GEMM slides' spread is that drift."""
from __future__ import annotations

import time

from . import gemm, registry
from .device import telemetry
from .gemm import SAMPLE_MS, SHAPE, HAND_WRITTEN, _cublas_gemm, checked_launch
from .progression import STEPS
from .registry import register
from .timing import batch_filling, time_gpu

HEADLINE = STEPS[-1].variants[-1][0]     # the last step's best kernel
REST_S = 5.0          # idle before each GEMM's run, as between two benchmarks
DURATION_S = 30.0     # each GEMM's run of samples
_measured = registry.discover(("bench.gemm",))[HEADLINE]


def series(run, batch: int, seconds: float) -> list[dict]:
    """Samples of ``batch`` runs, back to back for ``seconds``, each with its telemetry."""
    rows, began = [], time.monotonic()
    while time.monotonic() - began < seconds:
        t = time_gpu(run, warmup=0, reps=1, batch=batch)
        now = telemetry()
        rows.append({"t_s": round(time.monotonic() - began, 3), "ms": t["median"], "sm_clock_mhz": now["sm_clock_mhz"],
                     "power_w": now["power_w"], "temperature_c": now["temperature_c"]})
    return rows


@register("settle.headline", sources=[*_measured.sources, "bench/progression.py"], timeout_s=300,
          title="The headline kernel and cuBLAS from a rest to a steady state", min_cc=_measured.min_cc)
def run(ctx) -> dict:
    kernel = HAND_WRITTEN[HEADLINE]
    launch, check, operands = checked_launch(SHAPE, kernel.layout, kernel.precision, kernel.make_prepare(ctx.device))
    runs = {"kernel": launch.run, "cublas": lambda: _cublas_gemm(*operands, kernel.layout, kernel.precision)}
    out = {}
    for name, fn in runs.items():
        batch = batch_filling([fn], SAMPLE_MS)
        time.sleep(REST_S)
        rows = series(fn, batch, DURATION_S)
        out[name] = {"batch": batch, "rows": rows}
        ctx.progress(f"{name}: {len(rows)} samples of {batch} runs, {rows[0]['ms']:.3f} ms at first, "
                     f"{rows[-1]['ms']:.3f} at the end; {rows[0]['sm_clock_mhz']} → {rows[-1]['sm_clock_mhz']} MHz")
    return {"params": {"kernel": HEADLINE, "cublas": f"{kernel.precision}, {kernel.layout}, same operands",
                       "m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "rest_s": REST_S, "duration_s": DURATION_S,
                       "sample_ms": SAMPLE_MS, "gemm_settle_rule": gemm.SETTLE_RULE, "gemm_reps": gemm.REPS},
            "check": check, "series": out}
