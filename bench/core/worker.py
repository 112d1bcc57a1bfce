"""Benchmarks in a process of their own: ``python -m bench.core.worker DEVICE_JSON OUT_DIR MODULE:ID ...``.

The worker runs the benchmarks in order, in one process, so that operands, compiled kernels and
the GPU's warm steady state carry over from one to the next. Each benchmark's stderr goes to
OUT_DIR/<id>.stderr and its record to OUT_DIR/<id>.json, written whole, as soon as it is done.
A benchmark that raises ends the worker after its record (the CUDA context may be broken); the
runner starts a fresh worker for the rest, as it does when one faults, hangs or dies."""
from __future__ import annotations

import importlib
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import registry
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


# The SMs' measured clock may exceed NVML's maximum by this much before the measurement is refused
# as an error. On the H100 (2026-11-25) the probe read 1,980.0 MHz over a 2 s spin, the global timer
# and the CUDA events agreeing with the host's clock to 0.01%; but one run read 1,995 over a naive
# GEMM's samples (0.8% over; the next run 1,979), as the shared-memory chase reads 1,995 over its
# 0.3 ms. Past 1%, no clock the card runs explains it.
CLOCK_SLACK = 0.01
# ... judged over at least this much timed work: shorter, the timer's granularity dominates.
CLOCK_JUDGED_S = 0.01


def clock_error(clock: dict | None, device: dict) -> str | None:
    """Why a measured SM clock cannot be right: above the card's maximum."""
    top = device.get("sm_clock_max_mhz")
    if clock and top and clock["seconds"] >= CLOCK_JUDGED_S and clock["mean"] > top * (1 + CLOCK_SLACK):
        return (f"the SMs' clock measured at {clock['mean']:.0f} MHz, above the card's maximum of {top} MHz: "
                "a measurement error")
    return None


def run_one(bench: registry.Benchmark, device: dict) -> dict:
    TIMED_SPANS.clear()
    SM_CLOCKS.clear()
    record = {**bench.record_header(), "status": "ok"}
    before, err = _telemetry_or_error()
    record["telemetry"] = {"before": before, "during": None, "after": None}
    if err:
        record["telemetry"]["error"] = err
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
