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

from . import peers, results, schema
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


def failed(bench: Benchmark, reason: str, started: float) -> dict:
    return {**bench.record_header(), "status": "failed", "reason": schema.one_line(reason, REASON_CHARS),
            "duration_s": round(time.monotonic() - started, 2),
            "telemetry": {"before": None, "after": None, "error": "the benchmark process ended before reporting"}}


def skip_reason(bench: Benchmark, device: dict) -> str | None:
    """Why ``bench`` cannot run on ``device`` (None: it can)."""
    if bench.min_cc and _cc(device) < bench.min_cc:
        need = ".".join(map(str, bench.min_cc))
        return f"needs compute capability {need}+, this GPU is {device['compute_capability']}"
    if bench.gpus > device.get("gpu_count", 1):
        return f"needs {bench.gpus}+ GPUs, this machine has {device.get('gpu_count', 1)}"
    return peers.missing(bench.peer) if bench.peer else None


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
    end_holding(token)


def end_holding(token: str) -> None:
    """Kill every process (but this one) holding ``token``, until none is left."""
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


def _read_record(bench: Benchmark, out_json: Path, started: float) -> dict:
    try:
        record = json.loads(out_json.read_bytes().decode("utf-8", errors="replace"))
        if isinstance(record, dict):
            record.pop("raised", None)
        schema.validate_record(bench.id, record)
    except (ValueError, schema.ResultsError) as e:      # JSON errors are ValueErrors
        return failed(bench, f"the benchmark's record is not valid: {e}", started)
    if record["status"] != "ok":
        record["reason"] = schema.one_line(record["reason"], REASON_CHARS)
    return record


def _keep_log(bench: Benchmark, session: Path, log_dir: Path | None) -> str:
    """The benchmark's stderr: kept in ``log_dir`` as <id>.stderr, its tail echoed; returned."""
    path = session / f"{bench.id}.stderr"
    stderr = path.read_bytes().decode("utf-8", errors="replace") if path.exists() else ""
    if log_dir is not None and stderr:
        log_dir.mkdir(parents=True, exist_ok=True)
        results.write_atomic(log_dir / f"{bench.id}.stderr", stderr)
    sys.stderr.write(stderr[-ECHO_BYTES:])
    return stderr


def _worker(batch: list[Benchmark], device: dict, workdir: Path, log_dir: Path | None, starting):
    """One worker process running ``batch`` in order: yields (benchmark, record) as each record
    lands, and after a fault, a hang or an unreadable record yields that benchmark's failed record
    and ends (the caller starts a fresh worker for the rest)."""
    session = Path(tempfile.mkdtemp(prefix="worker-", dir=workdir))
    device_json = session / "device.json"
    device_json.write_text(json.dumps(device))
    token = uuid.uuid4().hex
    env = {**child_env(**dict(batch[0].env)), "PYTHONUNBUFFERED": "1", TOKEN: token,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with open(session / f"{batch[0].id}.stderr", "w") as err:      # until the worker points it at the benchmark's
        proc = subprocess.Popen([sys.executable, "-m", "bench.core.worker", str(device_json), str(session),
                                 *(f"{b.module}:{b.id}" for b in batch)],
                                cwd=ROOT, env=env, stderr=err, start_new_session=True)
    try:
        for bench in batch:
            starting(bench)
            started = time.monotonic()
            out_json = session / f"{bench.id}.json"
            while not out_json.exists():
                code = proc.poll()
                if code is not None and not out_json.exists():
                    end_worker(proc, token)
                    tail = _stderr_reason(_keep_log(bench, session, log_dir))
                    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
                    yield bench, failed(bench, f"process {how}" + (f": {tail}" if tail else ""), started)
                    return
                if time.monotonic() - started > bench.timeout_s:
                    end_worker(proc, token)
                    _keep_log(bench, session, log_dir)
                    yield bench, failed(bench, f"timeout: still running after {bench.timeout_s:g} s, killed", started)
                    return
                time.sleep(0.02)
            _keep_log(bench, session, log_dir)
            raised = b'"raised": true' in out_json.read_bytes()      # then the worker ends after this record
            record = _read_record(bench, out_json, started)
            yield bench, record
            if raised:
                return
    finally:                       # also on Interrupted: nothing of the worker's is left running
        end_worker(proc, token)


def run_session(benchmarks: list[Benchmark], device: dict, workdir: Path, log_dir: Path | None = None,
                starting=lambda bench: None):
    """Yield (benchmark, record) for each of ``benchmarks``: the skipped ones first (a worker
    between two of them would end, and the next would start cold: a second of warm-up and its
    operands again), then the others in order, run by as few worker processes as faults and
    environments allow. ``starting(bench)`` is called as each begins. A fault, a hang or an
    unreadable record becomes a failed record."""
    pending = []
    for bench in benchmarks:
        reason = skip_reason(bench, device)
        if reason:
            starting(bench)
            yield bench, skipped(bench, reason)
        else:
            pending.append(bench)
    while pending:
        batch = []
        for bench in pending:
            if bench.env != pending[0].env:
                break
            batch.append(bench)
        for bench, record in _worker(batch, device, workdir, log_dir, starting):
            yield bench, record
            pending.remove(bench)


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


class WriteFailed(Exception):
    """The results file could not be written; the record was kept elsewhere (the message says where)."""


def _merge(out: Path, device: dict, software: dict, records: list[tuple[Benchmark, dict]], node: dict | None,
           log_dir: Path, started: float) -> dict:
    """Merge the records, (benchmark, record) pairs, in one write, with the stop signals held back (a
    signal then arrives once the file is whole). A record that would make the file unloadable (too
    large, too deep, not UTF-8) is merged as a failed record saying why; where the file cannot be
    written at all, the records are kept in ``log_dir`` (or the temporary folder) and WriteFailed
    says where."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        try:
            return results.merge(out, device, software, {bench.id: rec for bench, rec in records}, node)
        except schema.LimitError:
            merged = None
            for bench, rec in records:          # which of them: each alone, the one past a limit failed
                try:
                    merged = results.merge(out, device, software, {bench.id: rec}, node)
                except schema.LimitError as e:
                    rec = failed(bench, f"its record cannot be written: {e}", started)
                    merged = results.merge(out, device, software, {bench.id: rec}, node)
            return merged
        except OSError as e:
            kept = "; ".join(f"{bench.id}'s record is kept in {_keep_record(bench.id, rec, log_dir)}" for bench, rec in records)
            raise WriteFailed(f"cannot write {out} ({e.strerror or e}); {kept}") from e
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _keep_record(bid: str, rec: dict, log_dir: Path) -> str:
    text = json.dumps(rec, indent=1, ensure_ascii=True)
    for folder in (log_dir, Path(tempfile.gettempdir())):
        try:
            path = folder / f"{bid}.record.json"
            results.write_atomic(path, text)           # makes the folder
            return str(path)
        except OSError:
            continue
    return "no folder that could be written: it is lost"


# Finished benchmarks a pace is taken from: fewer swung the estimate by a fifth and more on the H200's
# logs of 2026-11-29 (one benchmark's duration differs from its last by a few seconds either way).
PACED = 3


def time_left(estimates: dict, remaining: list[Benchmark], done: list[tuple[str, float]]) -> float:
    """About how many seconds the remaining benchmarks take: their durations in the last run of this
    kind, scaled by how this run's finished ones compared with theirs (a hotter or cooler card, a
    slower host): by a family's own pace once PACED of it have finished, else by the run's once PACED
    have. The run's first benchmark is left out of the pace: it also carries the worker's start and
    the chip's first warm-up, whichever benchmark comes first. A benchmark without a duration takes
    the mean so far."""
    took, expected, counted = {}, {}, {}     # by family, of the finished benchmarks the last run timed too
    for bid, seconds in done[1:]:
        if estimates.get(bid):
            family = bid.split(".", 1)[0]
            took[family], expected[family] = took.get(family, 0.0) + seconds, expected.get(family, 0.0) + estimates[bid]
            counted[family] = counted.get(family, 0) + 1
    overall = sum(took.values()) / sum(expected.values()) if sum(counted.values()) >= PACED else 1.0
    pace = {family: took[family] / expected[family] for family in expected if counted[family] >= PACED}
    typical = sum(t for _, t in done) / len(done) if done else 10.0
    return sum(pace.get(b.family, overall) * estimates[b.id] if estimates.get(b.id) else typical for b in remaining)


def left_said(seconds: float) -> str:
    """The time left as the progress line says it: whole minutes from ten minutes up; below, minutes and
    tens of seconds, since a whole minute is past a fifth of the little that is left."""
    if seconds >= 600:
        return f"about {seconds / 60:.0f} min left"
    tens = round(seconds / 10) * 10
    if tens < 60:
        return f"about {seconds:.0f} s left"
    return f"about {tens // 60} min" + (f" {tens % 60} s" if tens % 60 else "") + " left"


def _left(estimates: dict, remaining: list[Benchmark], done: list[tuple[str, float]]) -> str:
    return left_said(time_left(estimates, remaining, done))


def run_all(benchmarks: list[Benchmark], out: Path, device: dict, software: dict, log=print,
            node: dict | None = None, estimates: dict | None = None) -> dict:
    """Run the benchmarks in worker processes; merge each record into ``out`` (a node's file when
    ``node``, the node's topology, is given) as it arrives. ``estimates``: seconds by id, for the time left. On SIGINT,
    SIGTERM or SIGHUP the running benchmark is ended and recorded as
    interrupted, and ``Interrupted`` is raised once the records so far are safe."""
    merged = None
    t_start = time.monotonic()
    log_dir = Path(out).with_name(Path(out).stem + ".logs")
    in_main_thread = threading.current_thread() is threading.main_thread()     # where Python runs handlers
    previous = {s: signal.signal(s, _raise_interrupted) for s in STOP_SIGNALS} if in_main_thread else {}
    index = {}      # by id: the how-manieth begun (the skipped ones begin first: run_session)
    current, durations, t0 = [None], [], [time.monotonic()]
    # skipped records, written with the next: a merge rewrites the whole file (2 s for a full run's), a skip takes none
    held = []

    def starting(bench):
        current[0], t0[0] = bench, time.monotonic()
        index[bench.id] = len(index) + 1
        left = _left(estimates or {}, [b for b in benchmarks if (b.id not in index or b is bench)
                                       and not skip_reason(b, device)], durations)
        log(f"[{index[bench.id]}/{len(benchmarks)}] {bench.id} (limit {bench.timeout_s:g} s; {left}) ...", flush=True)

    try:
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            try:
                for bench, rec in run_session(benchmarks, device, Path(tmp), log_dir, starting):
                    if rec["status"] == "skipped":
                        held.append((bench, rec))
                    else:
                        merged = _merge(out, device, software, [*held, (bench, rec)], node, log_dir, t0[0])
                        held.clear()
                        durations.append((bench.id, time.monotonic() - t0[0]))
                    log(f"[{index[bench.id]}/{len(benchmarks)}] {bench.id}: {_summary(rec)} "
                        f"({time.monotonic() - t0[0]:.1f} s, {time.monotonic() - t_start:.0f} s total)", flush=True)
                if held:
                    merged = _merge(out, device, software, held, node, log_dir, t0[0])
            except Interrupted as stop:
                bench = current[0]
                if bench is not None and bench.id not in {b.id for b, _ in held}:
                    held.append((bench, failed(bench, f"interrupted: the runner got {stop}", t0[0])))
                if held:
                    merged = _merge(out, device, software, held, node, log_dir, t0[0])
                if bench is not None:
                    log(f"[{index[bench.id]}/{len(benchmarks)}] {bench.id}: interrupted ({stop}); the records so far "
                        f"are in {out}", flush=True)
                raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return merged
