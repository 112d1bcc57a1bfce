"""Runs benchmarks one process each, with a time limit, and merges every record
into the results file as soon as it exists.

Whatever a benchmark does, the run goes on: a fault, a hang, a record the results file
cannot hold (NaN, a negative time, a wrong type) or undecodable output each become a failed
record with a one-line reason, and the next benchmark starts. Nothing a worker started
outlives it: each worker leads its own process group, and every process that inherits the
worker's token (its environment variable BENCH_WORKER_TOKEN) is killed when the worker ends,
even one that left the group with setsid(); on SIGINT, SIGTERM or SIGHUP the runner does the
same, records the interrupted benchmark as failed and stops."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from . import results, schema
from .registry import ROOT, Benchmark
from .topology import child_env

REASON_CHARS = 500            # a reason is one line of at most this; the full stderr goes to the log
ECHO_BYTES = 20_000           # of a worker's stderr, the tail echoed to the terminal
TOKEN = "BENCH_WORKER_TOKEN"


class Interrupted(Exception):
    """The runner got a signal to stop."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _cc(device: dict) -> tuple[int, int]:
    major, minor = device["compute_capability"].split(".")
    return int(major), int(minor)


def _failed(bench: Benchmark, reason: str, started: float) -> dict:
    return {**bench.record_header(), "status": "failed", "reason": schema.one_line(reason, REASON_CHARS),
            "duration_s": round(time.monotonic() - started, 2),
            "telemetry": {"before": None, "after": None,
                          "error": "the benchmark process ended before reporting"}}


def skip_reason(bench: Benchmark, device: dict) -> str | None:
    """Why ``bench`` cannot run on ``device`` (None: it can)."""
    if bench.min_cc and _cc(device) < bench.min_cc:
        need = ".".join(map(str, bench.min_cc))
        return f"needs compute capability {need}+, this GPU is {device['compute_capability']}"
    if bench.gpus > device.get("gpu_count", 1):
        return f"needs {bench.gpus}+ GPUs, this machine has {device.get('gpu_count', 1)}"
    if bench.peer and not os.environ.get(bench.peer):
        return f"no checkout of the peer: set {bench.peer} to one (README: Past one GPU)"
    if bench.peer and not Path(os.environ[bench.peer]).is_dir():
        return f"{bench.peer}={os.environ[bench.peer]} is not a folder"
    return None


def skipped(bench: Benchmark, reason: str) -> dict:
    return {**bench.record_header(), "status": "skipped", "reason": reason}


def _holding_token(token: str) -> list[int]:
    """Processes whose environment carries ``token``: a worker and everything it started."""
    needle = f"{TOKEN}={token}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:           # gone, or not ours to read
                pass
    return found


def end_worker(proc: subprocess.Popen, token: str) -> None:
    """Kill the worker's process group and every process holding its token, until none is left."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    for _ in range(50):               # a process may fork while it is being killed
        left = _holding_token(token)
        if not left:
            return
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)


def _stderr_reason(stderr: str) -> str:
    return " | ".join(line.strip() for line in stderr.strip().splitlines()[-3:] if line.strip())


def run_isolated(bench: Benchmark, device: dict, workdir: Path, log_dir: Path | None = None) -> dict:
    """Run one benchmark in a child process; a fault, a hang or an unreadable record becomes a
    failed record. The worker's whole stderr is kept in ``log_dir`` (if given) as <id>.stderr."""
    reason = skip_reason(bench, device)
    if reason:
        return skipped(bench, reason)
    device_json, out_json, err_log = (workdir / f"{bench.id}.{x}" for x in ("device.json", "out.json", "stderr"))
    device_json.write_text(json.dumps(device))
    token = uuid.uuid4().hex
    env = {**child_env(), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "PYTHONUNBUFFERED": "1", TOKEN: token}
    started = time.monotonic()
    with open(err_log, "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.worker", bench.module, bench.id, str(device_json), str(out_json)],
            cwd=ROOT, env=env, stderr=err, start_new_session=True)
        try:
            code = proc.wait(timeout=bench.timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:                       # also on Interrupted: nothing of the worker's is left running
            end_worker(proc, token)
    stderr = err_log.read_bytes().decode("utf-8", errors="replace")
    if log_dir is not None and stderr:
        log_dir.mkdir(parents=True, exist_ok=True)
        results.write_atomic(log_dir / f"{bench.id}.stderr", stderr)
    sys.stderr.write(stderr[-ECHO_BYTES:])
    if code is None:
        return _failed(bench, f"timeout: still running after {bench.timeout_s:g} s, killed", started)
    tail = _stderr_reason(stderr)
    if code != 0 or not out_json.exists():
        how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
        return _failed(bench, f"process {how}" + (f": {tail}" if tail else ""), started)
    try:
        record = json.loads(out_json.read_bytes().decode("utf-8", errors="replace"))
        schema.validate_record(bench.id, record)
    except (ValueError, schema.ResultsError) as e:      # JSON errors are ValueErrors
        return _failed(bench, f"the benchmark's record is not valid: {e}", started)
    if record["status"] != "ok":
        record["reason"] = schema.one_line(record["reason"], REASON_CHARS)
    return record


def _summary(rec: dict) -> str:
    if rec["status"] != "ok":
        return f"{rec['status'].upper()}: {rec['reason']}"
    for key, unit in (("tflops", "TFLOPS"), ("gbps", "GB/s")):
        if key in rec:
            return f"ok, {rec[key]:.1f} {unit}"
    return "ok"


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def _merge(out: Path, device: dict, software: dict, records: dict, node: dict | None) -> dict:
    """Merge with the stop signals held back: a signal then arrives once the file is whole."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        return results.merge(out, device, software, records, node)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def run_all(benchmarks: list[Benchmark], out: Path, device: dict, software: dict, log=print,
            node: dict | None = None) -> dict:
    """Run each benchmark isolated; merge each record into ``out`` (a node's file when ``node``, the
    node's topology, is given) as it arrives. On SIGINT,
    SIGTERM or SIGHUP the running benchmark is ended and recorded as interrupted, and
    ``Interrupted`` is raised once the records so far are safe."""
    merged = None
    t_start = time.monotonic()
    log_dir = Path(out).with_name(Path(out).stem + ".logs")
    in_main_thread = threading.current_thread() is threading.main_thread()     # where Python runs handlers
    previous = {s: signal.signal(s, _raise_interrupted) for s in STOP_SIGNALS} if in_main_thread else {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            for i, bench in enumerate(benchmarks, 1):
                log(f"[{i}/{len(benchmarks)}] {bench.id} (limit {bench.timeout_s:g} s) ...", flush=True)
                t0 = time.monotonic()
                try:
                    rec = run_isolated(bench, device, Path(tmp), log_dir)
                except Interrupted as stop:
                    rec = _failed(bench, f"interrupted: the runner got {stop}", t0)
                    merged = _merge(out, device, software, {bench.id: rec}, node)
                    log(f"[{i}/{len(benchmarks)}] {bench.id}: interrupted ({stop}); the records so far are "
                        f"in {out}", flush=True)
                    raise
                merged = _merge(out, device, software, {bench.id: rec}, node)
                log(f"[{i}/{len(benchmarks)}] {bench.id}: {_summary(rec)} "
                    f"({time.monotonic() - t0:.1f} s, {time.monotonic() - t_start:.0f} s total)", flush=True)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return merged
