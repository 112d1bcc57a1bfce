"""Writing results: atomic replace, merged by benchmark id, so that rerunning one
family keeps the others and an interrupted run loses nothing already written."""
from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import tempfile
from pathlib import Path

from . import schema


def umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step, readable as a plain write would leave it (0666
    under the umask: mkstemp's own 0600 would hide the deck from a web server)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_target(path: Path) -> None:
    """Raise OSError unless ``path`` can be written as a results file is (its folder made, a file
    created beside it and its lock file opened): asked before the first benchmark spends GPU time."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".probe"), locked(path):
        pass


def existing(path: Path, device: dict, node_file: bool = False) -> dict:
    """The benchmarks already in ``path`` ({} if there is no file).

    An existing file that is not valid, that was measured on another GPU, or that is a node's file
    where a GPU's is written (or the other way round: a merge would drop its node section) is
    reported and left untouched: earlier results are never overwritten blindly."""
    path = Path(path)
    if not path.exists():
        return {}
    doc = _known(path) or schema.load(path)
    if doc["device"]["name"] != device["name"]:
        raise schema.ResultsError(
            f"{path}: holds results for {doc['device']['name']!r}, not {device['name']!r}; "
            "choose another --out")
    if ("node" in doc) != node_file:
        raise schema.ResultsError(f"{path}: " + ("a node's results file, where this run writes one GPU's; choose "
                                                 "another --out" if "node" in doc else "one GPU's results file, "
                                                 "where this run writes a node's; choose another --node-out"))
    return doc["benchmarks"]


@contextlib.contextmanager
def locked(path: Path):
    """Hold ``path``'s lock file (.<name>.lock beside it) for a read-merge-write: two runners on
    one results file (one per GPU of a node, say) take turns instead of losing each other's records."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


ATTEMPT_FIELDS = ("status", "reason", "measured_at", "git_commit")     # what last_attempt keeps of a rerun


def launch_fingerprint(resources: dict | None) -> str | None:
    """What identifies a kernel's launch in its record: its resources (registers, shared memory, grid,
    tile, SASS counts), hashed; None for a record without them."""
    if not resources:
        return None
    return hashlib.sha256(json.dumps(resources, sort_keys=True).encode()).hexdigest()[:16]


def kept_or_new(old: dict | None, new: dict) -> dict:
    """The record a file keeps for one id: the new one, unless it measured nothing (skipped, or
    failed before its check: no peer checkout, a build or a process that failed) where the file
    holds a measured one. That one stays, the attempt noted in its ``last_attempt``: a rerun on a
    machine that lacks something never loses what was measured (build.py says so, and flags the
    record stale where the code has changed since). A new record takes the old one's Nsight Compute
    ``profile`` (python -m bench --profile) where it launched the kernel that was profiled (its ``of``)."""
    if old and old.get("status") == "ok" and new.get("status") != "ok" and "check" not in new:
        return {**old, "last_attempt": {k: new[k] for k in ATTEMPT_FIELDS if k in new}}
    profile, launched = (old or {}).get("profile"), launch_fingerprint(new.get("resources"))
    if profile and "profile" not in new and launched and profile.get("of") == launched:
        return {**new, "profile": profile}
    return new


def merge(path: Path, device: dict, software: dict, records: dict, node: dict | None = None) -> dict:
    """Add ``records`` to the results file at ``path`` (created if absent), atomically, each as
    ``kept_or_new`` decides; a node's
    file (the records of benchmarks on several GPUs) also holds ``node``, its topology. The file's
    other records stay, those of ids no benchmark registers now too (a step taken out of the
    catalogue: python -m bench lists them, and only a person removes them). A document
    that ``schema.load`` would refuse (too large, too deep, text not UTF-8) is a LimitError, and
    nothing is written."""
    path = Path(path)
    with locked(path):
        kept = existing(path, device, node is not None)
        merged = {
            "schema_version": schema.SCHEMA_VERSION,
            "device": device,
            "software": software,
            "benchmarks": dict(sorted({**kept, **{bid: kept_or_new(kept.get(bid), rec)
                                                  for bid, rec in records.items()}}.items())),
            **({"node": node} if node else {}),
        }
        schema.validate(merged, str(path))
        write_atomic(path, schema.dump_loadable(merged, str(path)))
        _WRITTEN[path.resolve()] = (_signature(path), merged)
    return merged


# What this process last wrote to each file, by the file's identity then: a run's next merge reads
# it from here instead of parsing the whole file again, unless another process has replaced it since.
_WRITTEN: dict[Path, tuple[tuple, dict]] = {}


def _signature(path: Path) -> tuple:
    st = path.stat()
    return st.st_ino, st.st_size, st.st_mtime_ns


def _known(path: Path) -> dict | None:
    written = _WRITTEN.get(path.resolve())
    try:
        return written[1] if written and written[0] == _signature(path) else None
    except OSError:
        return None
