"""The one timer: CUDA events around the timed region, warm-up, many repetitions,
median with p10/p90."""
from __future__ import annotations

import time

import numpy as np

# Host-clock spans of every timed loop in this process, so that telemetry
# sampled meanwhile can be told apart from set-up and checks.
TIMED_SPANS: list[tuple[float, float]] = []

# Before each start event the stream is kept busy this long, so that the host's
# launch overhead (Python, argument packing) overlaps GPU work instead of being
# timed as idle GPU time between the start event and the kernel.
HOLD_US = 200

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


def _stream_holder():
    import cupy
    spin = cupy.RawKernel(_SPIN_SRC, "spin")
    cycles = cupy.int64(HOLD_US * 2000)   # at 2 GHz; a slower clock only holds longer
    return lambda: spin((1,), (1,), (cycles,))


def time_gpu(fn, *, warmup: int = 3, reps: int = 20) -> dict:
    """Time ``fn`` (which enqueues GPU work on the current stream) with CUDA events."""
    return time_gpu_alternating([fn], warmup=warmup, reps=reps)[0]


def time_gpu_alternating(fns, *, warmup: int = 3, reps: int = 20) -> list[dict]:
    """Time each of ``fns`` ``reps`` times, taking turns within every repetition, so that
    all of them meet the same clocks and temperatures (a GPU held at its power cap moves its
    clock from one millisecond to the next): their ratio is then fair even where each
    alone would drift."""
    import cupy

    hold = _stream_holder()
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
            fn()
            end.record()
            end.synchronize()
            own.append(cupy.cuda.get_elapsed_time(start, end))
    TIMED_SPANS.append((began, time.monotonic()))
    return [summarize(t) for t in times]
