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


def time_gpu_alternating(fns, *, warmup: int = 3, reps: int = 20, batch: int = 1, turns: int = 1,
                         keep_samples: bool = False) -> list[dict]:
    """Time each of ``fns`` ``reps`` times, taking turns, so that all of them meet the same clocks
    and temperatures: their ratio is then fair even where each alone would drift. A turn is
    ``batch`` runs of one fn back to back between two events; a sample is ``turns`` turns of each
    fn in order (f0, f1, f0, f1, ...) queued at once, and its time for a fn the mean of its runs.
    Under the power cap the clock swings about once a second: turns much shorter than that keep the
    fns at the same clock, and samples of a second of turns average over the swing.
    ``keep_samples``: each summary also holds its samples in order (sample i of every fn together)."""
    import cupy

    # the hold covers the host while it queues the first turn, or the whole sample of single turns
    hold = _stream_holder(batch * (len(fns) if turns == 1 else 1))
    for _ in range(warmup):
        for fn in fns:
            fn()
    cupy.cuda.get_current_stream().synchronize()
    marks = [cupy.cuda.Event() for _ in range(turns * len(fns) + 1)]
    times = [[] for _ in fns]
    began = time.monotonic()
    for _ in range(reps):
        hold()
        marks[0].record()
        for turn in range(turns):
            for i, fn in enumerate(fns):
                for _ in range(batch):
                    fn()
                marks[1 + turn * len(fns) + i].record()
        marks[-1].synchronize()
        spans = [cupy.cuda.get_elapsed_time(a, b) for a, b in zip(marks, marks[1:])]
        for i, own in enumerate(times):
            own.append(sum(spans[i::len(fns)]) / (turns * batch))
    TIMED_SPANS.append((began, time.monotonic()))
    return [{**summarize(t), "batch": batch, **({"turns": turns} if turns > 1 else {}),
             **({"samples": t} if keep_samples else {})} for t in times]
