"""The headline kernel and cuBLAS under the power cap, from a rest to a steady state.

Each GEMM, after REST_S idle, runs for DURATION_S as back-to-back samples of SERIES_MS, each
timed with the one timer (which measures the SMs' clock over it) and followed by an NVML reading
of the clock, power and temperature.
The record keeps every sample in order; the deck computes the spread of a GEMM harness's round
(harness.ROUND_S) of consecutive samples by when they end, and when the harness's settling rule
would have started timing: how long a GEMM must run from a rest before its timings settle."""
from __future__ import annotations

import time

from . import catalogue, benchmarks, harness, launch
from ..core.device import telemetry
from .harness import SHAPE, checked_cublas, checked_launch
from ..core.registry import register
from ..core.timing import batch_filling, quick, time_gpu

STEP, HEADLINE = catalogue.KERNELS[catalogue.HEADLINE]
REST_S = 0.5 if quick() else 3.0             # idle before each GEMM's run
DURATION_S = 1.5 if quick() else 10.0        # each GEMM's run of samples
# Longer than the GEMM family's samples: the series shows the drift over seconds, and a reading of
# NVML after each sample would otherwise leave the GPU idle for a good part of the time.
SERIES_MS = 200.0


def series(run, batch: int, seconds: float) -> list[dict]:
    """Samples of ``batch`` runs, back to back for ``seconds``, each with its telemetry."""
    rows, began = [], time.monotonic()
    while time.monotonic() - began < seconds:
        t = time_gpu(run, warmup=0, reps=1, batch=batch)
        now = telemetry()
        rows.append({"t_s": round(time.monotonic() - began, 3), "ms": t["median"], "sm_clock_mhz": now["sm_clock_mhz"],
                     "sm_clock_measured_mhz": t["sm_clock_mhz"], "power_w": now["power_w"],
                     "temperature_c": now["temperature_c"]})
    return rows


@register("settle.headline", sources=benchmarks.kernel_sources(STEP), kernels=catalogue.definitions(("headline",)),
          builds=benchmarks.builds(STEP, HEADLINE), timeout_s=300, min_cc=STEP.min_cc,
          title="The headline kernel and cuBLAS from a rest to a steady state")
def run(ctx) -> dict:
    kernel, check, ops, _ = checked_launch(SHAPE, STEP.layout, STEP.precision, launch.prepare(STEP, HEADLINE, ctx.device))
    runs = {"kernel": kernel.run, "cublas": checked_cublas(ops)[0]}
    out = {}
    for name, fn in runs.items():
        batch = batch_filling([fn], SERIES_MS)
        time.sleep(REST_S)
        rows = series(fn, batch, DURATION_S)
        out[name] = {"batch": batch, "rows": rows}
        ctx.progress(f"{name}: {len(rows)} samples of {batch} runs, {rows[0]['ms']:.3f} ms at first, "
                     f"{rows[-1]['ms']:.3f} at the end; {rows[0]['sm_clock_mhz']} → {rows[-1]['sm_clock_mhz']} MHz")
    return {"params": {"kernel": HEADLINE.id, "cublas": f"{STEP.precision}, {STEP.layout}, same operands",
                       "m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "rest_s": REST_S, "duration_s": DURATION_S,
                       "sample_ms": SERIES_MS, "gemm_settle_rule": harness.SETTLE_RULE, "gemm_reps": harness.REPS,
                       "gemm_turn_ms": harness.TURN_MS},
            "check": check, "series": out}
