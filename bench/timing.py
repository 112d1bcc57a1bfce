"""The one timer: CUDA events around the timed region, warm-up, many repetitions,
median with p10/p90; optionally a batch of back-to-back runs per sample."""
from __future__ import annotations

import os
import time

import numpy as np

# python -m bench --quick: every benchmark takes fewer samples and sizes (a smoke refresh); its
# records say so, and so does the deck.
QUICK_ENV = "BENCH_QUICK"


def quick() -> bool:
    return os.environ.get(QUICK_ENV) == "1"

# Host-clock spans of every timed loop in this process, so that telemetry
# sampled meanwhile can be told apart from set-up and checks.
TIMED_SPANS: list[tuple[float, float]] = []

# Before each start event the stream is kept busy this long, so that the host's
# launch overhead (Python, argument packing) overlaps GPU work instead of being
# timed as idle GPU time between the start event and the kernel.
HOLD_US = 200
# ... and this much longer per run of a batch: the host enqueues a launch in well under this.
HOLD_PER_RUN_US = 25

_SPIN_SRC = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}
"""


def summarize(times_ms) -> dict:
    t = np.asarray(times_ms, dtype=float)
    if t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"cannot summarize timings {times_ms!r}")
    p10, median, p90 = np.percentile(t, [10, 50, 90])
    return {"median": float(median), "p10": float(p10), "p90": float(p90), "n": int(t.size)}


def spread(t: dict) -> float:
    """A timing's spread: p10 to p90 over the median."""
    return (t["p90"] - t["p10"]) / t["median"]


def _stream_holder(batch: int):
    import cupy
    spin = cupy.RawKernel(_SPIN_SRC, "spin")
    cycles = cupy.int64((HOLD_US + HOLD_PER_RUN_US * (batch - 1)) * 2000)   # at 2 GHz; a slower clock only holds longer
    return lambda: spin((1,), (1,), (cycles,))


def time_gpu(fn, *, warmup: int = 3, reps: int = 20, batch: int = 1) -> dict:
    """Time ``fn`` (which enqueues GPU work on the current stream) with CUDA events."""
    return time_gpu_alternating([fn], warmup=warmup, reps=reps, batch=batch)[0]


def batch_filling(fns, sample_ms: float) -> int:
    """Runs of the slowest of ``fns`` that fill a sample of ``sample_ms`` (at least one)."""
    probe = time_gpu_alternating(fns, warmup=1, reps=3)
    return max(1, round(sample_ms / max(t["median"] for t in probe)))


def time_gpu_alternating(fns, *, warmup: int = 3, reps: int = 20, batch: int = 1, keep_samples: bool = False) -> list[dict]:
    """Time each of ``fns`` ``reps`` times, taking turns within every repetition, so that
    all of them meet the same clocks and temperatures (a GPU held at its power cap moves its
    clock from one millisecond to the next): their ratio is then fair even where each
    alone would drift. A sample is ``batch`` runs back to back between one pair of events, and
    its time their mean: samples of tens of milliseconds average over the clock's swings.
    ``keep_samples``: each summary also holds its samples in order (turn i of every fn is sample i)."""
    import cupy

    hold = _stream_holder(batch)
    for _ in range(warmup):
        for fn in fns:
            fn()
    cupy.cuda.get_current_stream().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = [[] for _ in fns]
    began = time.monotonic()
    for _ in range(reps):
        for fn, own in zip(fns, times):
            hold()
            start.record()
            for _ in range(batch):
                fn()
            end.record()
            end.synchronize()
            own.append(cupy.cuda.get_elapsed_time(start, end) / batch)
    TIMED_SPANS.append((began, time.monotonic()))
    return [{**summarize(t), "batch": batch, **({"samples": t} if keep_samples else {})} for t in times]
