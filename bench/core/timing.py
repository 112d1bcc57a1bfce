"""The one timer: CUDA events around the timed region, warm-up, many repetitions,
median with p10/p90 and a confidence interval of the median; optionally a batch of back-to-back
runs per sample. Around each sample a probe reads every SM's cycle counter against the GPU's
global timer: the clock the SMs ran at, measured, beside NVML's sampled one."""
from __future__ import annotations

import functools
import os
import time

import numpy as np

from .stats import summarize

# python -m bench --quick: every benchmark takes fewer samples and sizes (a smoke refresh); its
# records say so, and so does the deck.
QUICK_ENV = "BENCH_QUICK"


def quick() -> bool:
    return os.environ.get(QUICK_ENV) == "1"

# Host-clock spans of every timed loop in this process, so that telemetry
# sampled meanwhile can be told apart from set-up and checks.
TIMED_SPANS: list[tuple[float, float]] = []
# The SMs' clock over each timed sample of this process: (MHz, the sample's length in ns).
SM_CLOCKS: list[tuple[float, float]] = []
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


_PROBE_SRC = r"""
extern "C" __global__ void sm_clock_probe(unsigned long long* out) {
    // one block per SM, one thread: its SM's cycle counter beside the global timer (ns)
    unsigned int sm;
    unsigned long long ns;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const unsigned long long cycles = clock64();
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    out[2 * sm] = cycles;
    out[2 * sm + 1] = ns;
}
"""
PROBE_SLOTS = 1024       # past any SM id


def _stream_holder(batch: int):
    import cupy
    spin = cupy.RawKernel(_SPIN_SRC, "spin")
    cycles = cupy.int64((HOLD_US + HOLD_PER_RUN_US * (batch - 1)) * 2000)   # at 2 GHz; a slower clock only holds longer
    return lambda: spin((1,), (1,), (cycles,))


class _ClockProbe:
    """The SMs' clock over a span of GPU work: a probe before it and one after it each write,
    per SM, the cycle counter and the global timer; an SM's clock is its cycles over the ns
    between the two, and the span's is the median over the SMs both probes reached."""

    def __init__(self):
        import cupy
        self._kernel = cupy.RawKernel(_PROBE_SRC, "sm_clock_probe")
        self._sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        self._marks = [cupy.zeros(2 * PROBE_SLOTS, cupy.uint64) for _ in range(2)]

    def clear(self) -> None:
        for m in self._marks:
            m.fill(0)

    def mark(self, which: int) -> None:
        self._kernel((self._sms,), (1,), (self._marks[which],))

    def read(self) -> tuple[float, float] | None:
        """(MHz, ns) of the span, after the stream has passed the second mark; None if no SM was
        reached by both probes."""
        (c0, t0), (c1, t1) = (m.get().astype(np.int64).reshape(-1, 2).T for m in self._marks)
        both = (t0 > 0) & (t1 > t0)
        if not both.any():
            return None
        mhz = 1e3 * (c1[both] - c0[both]) / (t1[both] - t0[both])
        return float(np.median(mhz)), float(np.median(t1[both] - t0[both]))


@functools.cache
def clock_probe() -> _ClockProbe:
    return _ClockProbe()


def sm_clock(samples) -> dict | None:
    """The SMs' clock over timed samples [(MHz, ns)]: its mean weighted by time, and its range."""
    if not samples:
        return None
    mhz, ns = np.array(samples, dtype=float).T
    return {"mean": float(np.sum(mhz * ns) / np.sum(ns)), "min": float(mhz.min()), "max": float(mhz.max()),
            "samples": len(samples), "seconds": float(ns.sum() / 1e9)}


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
    Sample r starts its turns at fn r mod len(fns): each fn is first as often as the others, since
    the first follows the hold's near-idle GPU and read 2-8% slower there (an A/A pair in single-run
    turns, H200 2026-11-30; tests/test_gpu.py holds it within 1%).
    ``keep_samples``: each summary also holds its samples in order (sample i of every fn together)."""
    import cupy

    # the hold covers the host while it queues the first turn, or the whole sample of single turns
    hold = _stream_holder(batch * (len(fns) if turns == 1 else 1))
    probe = clock_probe()
    for _ in range(warmup):
        for fn in fns:
            fn()
    cupy.cuda.get_current_stream().synchronize()
    marks = [cupy.cuda.Event() for _ in range(turns * len(fns) + 1)]
    times, clocks = [[] for _ in fns], []
    began = time.monotonic()
    for rep in range(reps):
        order = [(rep + i) % len(fns) for i in range(len(fns))]     # the fn in each slot of a turn
        probe.clear()
        hold()
        probe.mark(0)
        marks[0].record()
        for turn in range(turns):
            for slot, i in enumerate(order):
                for _ in range(batch):
                    fns[i]()
                marks[1 + turn * len(fns) + slot].record()
        probe.mark(1)
        cupy.cuda.get_current_stream().synchronize()
        spans = [cupy.cuda.get_elapsed_time(a, b) for a, b in zip(marks, marks[1:])]
        for slot, i in enumerate(order):
            times[i].append(sum(spans[slot::len(fns)]) / (turns * batch))
        clock = probe.read()
        if clock:
            clocks.append(clock)
    TIMED_SPANS.append((began, time.monotonic()))
    SM_CLOCKS.extend(clocks)
    clock = sm_clock(clocks)
    return [{**summarize(t), "batch": batch, **({"turns": turns} if turns > 1 else {}),
             **({"sm_clock_mhz": clock["mean"]} if clock else {}),
             **({"samples": t} if keep_samples else {})} for t in times]
