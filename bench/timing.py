"""The one timer: CUDA events around the timed region, warm-up, many repetitions,
median with p10/p90."""
from __future__ import annotations

import numpy as np


def summarize(times_ms) -> dict:
    t = np.asarray(times_ms, dtype=float)
    if t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"cannot summarize timings {times_ms!r}")
    p10, median, p90 = np.percentile(t, [10, 50, 90])
    return {"median": float(median), "p10": float(p10), "p90": float(p90), "n": int(t.size)}


def time_gpu(fn, *, warmup: int = 3, reps: int = 20, before_each=None) -> dict:
    """Time ``fn`` (which enqueues GPU work on the current stream) with CUDA events.

    ``before_each`` runs before every repetition, outside the timed region (for
    example an L2 flush)."""
    import cupy

    for _ in range(warmup):
        if before_each:
            before_each()
        fn()
    cupy.cuda.get_current_stream().synchronize()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        if before_each:
            before_each()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, end))
    return summarize(times)

