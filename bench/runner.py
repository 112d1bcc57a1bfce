"""Runs benchmarks one process each, with a time limit, and merges every record
into the results file as soon as it exists."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import results
from .registry import ROOT, Benchmark


def _cc(device: dict) -> tuple[int, int]:
    major, minor = device["compute_capability"].split(".")
    return int(major), int(minor)


def _failed(bench: Benchmark, reason: str, started: float) -> dict:
    return {**bench.record_header(), "status": "failed", "reason": reason,
            "duration_s": round(time.monotonic() - started, 2),
            "telemetry": {"before": None, "after": None,
                          "error": "the benchmark process ended before reporting"}}


def skip_reason(bench: Benchmark, device: dict) -> str | None:
    """Why ``bench`` cannot run on ``device`` (None: it can)."""
    if bench.min_cc and _cc(device) < bench.min_cc:
        need = ".".join(map(str, bench.min_cc))
        return f"needs compute capability {need}+, this GPU is {device['compute_capability']}"
    return None


def skipped(bench: Benchmark, reason: str) -> dict:
    return {**bench.record_header(), "status": "skipped", "reason": reason}


def run_isolated(bench: Benchmark, device: dict, workdir: Path) -> dict:
    """Run one benchmark in a child process; a fault or a hang becomes a failed record."""
    reason = skip_reason(bench, device)
    if reason:
        return skipped(bench, reason)
    device_json, out_json, err_log = (workdir / f"{bench.id}.{x}" for x in ("device.json", "out.json", "stderr"))
    device_json.write_text(json.dumps(device))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    with open(err_log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", bench.module, bench.id, str(device_json), str(out_json)],
            cwd=ROOT, env=env, stderr=err, start_new_session=True)
        try:
            code = proc.wait(timeout=bench.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return _failed(bench, f"timeout: still running after {bench.timeout_s:g} s, killed", started)
    stderr = err_log.read_text()
    stderr_tail = " | ".join(stderr.strip().splitlines()[-3:])
    if stderr_tail:
        sys.stderr.write(stderr)
    if code != 0 or not out_json.exists():
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return _failed(bench, f"process {how}" + (f": {stderr_tail}" if stderr_tail else ""), started)
    return json.loads(out_json.read_text())


def _summary(rec: dict) -> str:
    if rec["status"] != "ok":
        return f"{rec['status'].upper()}: {rec['reason']}"
    for key, unit in (("tflops", "TFLOPS"), ("gbps", "GB/s")):
        if key in rec:
            return f"ok, {rec[key]:.1f} {unit}"
    return "ok"


def run_all(benchmarks: list[Benchmark], out: Path, device: dict, software: dict, log=print) -> dict:
    """Run each benchmark isolated; merge each record into ``out`` as it arrives."""
    merged = None
    t_start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for i, bench in enumerate(benchmarks, 1):
            log(f"[{i}/{len(benchmarks)}] {bench.id} (limit {bench.timeout_s:g} s) ...", flush=True)
            t0 = time.monotonic()
            rec = run_isolated(bench, device, Path(tmp))
            merged = results.merge(out, device, software, {bench.id: rec})
            log(f"[{i}/{len(benchmarks)}] {bench.id}: {_summary(rec)} "
                f"({time.monotonic() - t0:.1f} s, {time.monotonic() - t_start:.0f} s total)", flush=True)
    return merged
