"""One benchmark in its own process: ``python -m bench.worker MODULE ID DEVICE_JSON OUT_JSON``.

The runner starts one worker per benchmark, so that a kernel that faults or
hangs takes only its own process down. The worker writes its record to
OUT_JSON; a process that dies before that is reported by the runner."""
from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from . import registry
from .device import TelemetrySampler, telemetry
from .timing import TIMED_SPANS


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


def run_one(bench: registry.Benchmark, device: dict) -> dict:
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
        record.update(measured)
        check = measured.get("check")
        if check is not None and not check["passed"]:
            record["status"] = "failed"
            record["reason"] = "check failed: " + check.get("detail", "output differs from the reference")
    except Exception as e:
        traceback.print_exc()
        record["status"] = "failed"
        tb = traceback.extract_tb(e.__traceback__)[-1]
        record["reason"] = f"{type(e).__name__}: {e} (at {Path(tb.filename).name}:{tb.lineno})"
    record["duration_s"] = round(time.perf_counter() - t0, 2)
    record["telemetry"]["after"], _ = _telemetry_or_error()
    return record


def main(argv) -> int:
    module, bench_id, device_json, out_json = argv
    importlib.import_module(module)
    bench = registry.discover(modules=())[bench_id]
    device = json.loads(Path(device_json).read_text())
    record = run_one(bench, device)
    Path(out_json).write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
