"""Benchmarks in a process of their own: ``python -m bench.core.worker DEVICE_JSON OUT_DIR MODULE:ID ...``.

The worker runs the benchmarks in order, in one process, so that operands, compiled kernels and
the GPU's warm steady state carry over from one to the next. Each benchmark's stderr goes to
OUT_DIR/<id>.stderr and its record to OUT_DIR/<id>.json, written whole, as soon as it is done.
A benchmark that raises ends the worker after its record (the CUDA context may be broken); the
runner starts a fresh worker for the rest, as it does when one faults, hangs or dies."""
from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import peers, registry
from .cuda import arch_of, compile_all
from .device import TelemetrySampler, telemetry
from .timing import SM_CLOCKS, TIMED_SPANS, sm_clock


@dataclass
class RunContext:
    """What a benchmark's ``run(ctx)`` receives."""
    device: dict
    bench_id: str

    def progress(self, message: str) -> None:
        print(f"    {self.bench_id}: {message}", flush=True)


def _telemetry_or_error():
    try:
        return telemetry(), None
    except Exception as e:  # no NVML, no GPU: recorded, not fatal
        return None, f"{type(e).__name__}: {e}"


# The SMs' measured clock is cycles over the global timer's ns between two probes; it may exceed
# NVML's maximum by the probe's own error before the record is refused: the timer's tick (32 ns on
# the H200, 2026-11-29; read at run time, GLOBALTIMER_TICK) twice over a sample's mean span, and
# CLOCK_SLACK for NVML's whole MHz and the probes' reads. The H200 read 1,980.0 MHz at 1,980 over spans
# from 30 us to 50 ms, and 1,979.8 under a memory-bound copy; H100 records of 2026-11-25/26 read
# 1,995 over memory-bound work for seconds, 0.76% over, which no probe error explains: such a clock fails.
CLOCK_SLACK = 0.001
# ... judged over at least this much timed work
CLOCK_JUDGED_S = 0.01
_TICK_SRC = r"""
extern "C" __global__ void globaltimer_tick(unsigned long long* out, int n) {
    unsigned long long last, now, least = ~0ull;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(last));
    for (int i = 0; i < n; ) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now != last) { least = min(least, now - last); last = now; ++i; }
    }
    *out = least;
}
"""
COARSEST_TICK_NS = 1000.0       # the global timer's tick on GPUs that update it once a microsecond


@functools.cache
def globaltimer_tick_ns() -> float:
    """The global timer's smallest step on this GPU, in ns (COARSEST_TICK_NS where it cannot be read)."""
    try:
        import cupy
        out = cupy.zeros(1, cupy.uint64)
        cupy.RawKernel(_TICK_SRC, "globaltimer_tick")((1,), (1,), (out, cupy.int32(200)))
        return float(out.get()[0])
    except Exception:
        return COARSEST_TICK_NS


def clock_bound(clock: dict, tick_ns: float) -> float:
    """How far above the card's maximum the probe can read ``clock`` (a fraction): its slack, and the
    timer's tick at each end of a sample's mean span."""
    return CLOCK_SLACK + 2 * tick_ns / (1e9 * clock["seconds"] / max(1, clock["samples"]))


def clock_error(clock: dict | None, device: dict, tick_ns: float | None = None) -> str | None:
    """Why a measured SM clock cannot be right: above the card's maximum by more than the probe's error."""
    top = device.get("sm_clock_max_mhz")
    if not (clock and top and clock["seconds"] >= CLOCK_JUDGED_S):
        return None
    bound = clock_bound(clock, globaltimer_tick_ns() if tick_ns is None else tick_ns)
    if clock["mean"] > top * (1 + bound):
        return (f"the SMs' clock measured at {clock['mean']:.1f} MHz, {100 * (clock['mean'] / top - 1):.2f}% above the "
                f"card's maximum of {top} MHz, past the probe's error of {100 * bound:.2f}%: a measurement error")
    return None


def run_one(bench: registry.Benchmark, device: dict) -> dict:
    TIMED_SPANS.clear()
    SM_CLOCKS.clear()
    record = {**bench.record_header(), "status": "ok"}
    before, err = _telemetry_or_error()
    record["telemetry"] = {"before": before, "during": None, "after": None}
    if err:
        record["telemetry"]["error"] = err
    if bench.builds:
        # Its kernels, built (or found built) before its clock starts: the run's first benchmark to need
        # nvcc would otherwise carry the compiles beside it, and the next run's estimate with them
        compile_all(bench.builds, arch_of(device["compute_capability"]))
    t0 = time.perf_counter()
    try:
        with TelemetrySampler(enabled=before is not None) as sampler:
            measured = bench.run(RunContext(device=device, bench_id=bench.id))
        record["telemetry"]["during"] = sampler.summary(TIMED_SPANS)
        record["telemetry"]["sm_clock"] = sm_clock(SM_CLOCKS)       # measured over the timed samples
        record.update(measured)
        check = measured.get("check")
        if check is not None and not check["passed"]:
            record["status"] = "failed"
            record["reason"] = "check failed: " + check.get("detail", "output differs from the reference")
        elif wrong_clock := clock_error(record["telemetry"]["sm_clock"], device):
            record["status"] = "failed"
            record["reason"] = wrong_clock
    except Exception as e:
        traceback.print_exc()
        record["status"] = "failed"
        tb = traceback.extract_tb(e.__traceback__)[-1]
        record["reason"] = f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno})"
        record["raised"] = True          # the runner goes on in a fresh worker
    if bench.peer and os.environ.get(bench.peer):        # every peer's record names the commit it ran
        record["peer"] = {"checkout": os.environ[bench.peer], "commit": peers.checkout_commit(Path(os.environ[bench.peer]))}
    record["duration_s"] = round(time.perf_counter() - t0, 2)
    record["telemetry"]["after"], _ = _telemetry_or_error()
    return record


def _stderr_to(path: Path) -> None:
    """This process's fd 2 (and so its children's) to ``path``."""
    sys.stderr.flush()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 2)
    os.close(fd)


RAISED = 4       # the exit status after a benchmark raised: the runner goes on in a fresh worker


def main(argv) -> int:
    device_json, out_dir, *targets = argv
    device, out_dir = json.loads(Path(device_json).read_text()), Path(out_dir)
    for target in targets:
        module, bench_id = target.split(":", 1)
        importlib.import_module(module)
        bench = registry.discover(modules=())[bench_id]
        _stderr_to(out_dir / f"{bench_id}.stderr")
        record = run_one(bench, device)
        sys.stderr.flush()
        tmp = out_dir / f"{bench_id}.json.tmp"
        tmp.write_text(json.dumps(record))
        tmp.replace(out_dir / f"{bench_id}.json")
        if record.get("raised"):
            return RAISED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
