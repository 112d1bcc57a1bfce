"""The one registry of benchmarks.

A benchmark module calls ``register`` at import time; ``discover`` imports every
module of bench/ that imports it (``MODULES``). Modules must import no GPU library at top level:
the runner and the tests import them all, on machines without a GPU too, to read ids and sources.
"""
from __future__ import annotations

import fnmatch
import importlib
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .provenance import ROOT, provenance

BENCH = ROOT / "bench"

# An import of register from the registry (bench/core/registry.py, from any room of bench/), on
# one line or in parentheses over several.
REGISTERS = re.compile(r"^from (\.|\.\.core\.|\.core\.)registry import "
                       r"(\([^)]*\bregister\b[^)]*\)|[^\n(]*\bregister\b)", re.M)


def module_name(path: Path) -> str:
    """bench/gemm/sweep.py -> bench.gemm.sweep"""
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def benchmark_modules() -> tuple[str, ...]:
    """Every bench module, in any room, that imports ``register``: a new benchmark module joins no list."""
    return tuple(module_name(p) for p in sorted(BENCH.rglob("*.py")) if REGISTERS.search(p.read_text()))


MODULES = benchmark_modules()
# Code every measurement passes through: a change here makes every result stale.
COMMON_SOURCES = ("bench/core/timing.py",)


@dataclass(frozen=True)
class Benchmark:
    id: str                          # stable, "<family>.<name>"
    run: Callable                    # run(ctx) -> dict of measurements (+ "check")
    sources: tuple[str, ...]         # repo-relative files whose content defines the result
    title: str = ""
    timeout_s: float = 600.0
    min_cc: tuple[int, int] | None = None   # skipped on GPUs below this compute capability
    code: str | None = None                 # the kernel file whose `#region kernel` the deck shows
    gpus: int = 1                           # GPUs of one host it needs; 2+: its record goes to the node's file
    peer: str | None = None                 # environment variable naming the peer's checkout it builds
    kernels: dict | None = None             # the catalogue's kernels it runs, by route (catalogue.definitions): hashed too
    builds: tuple = ()                      # (source, defines) it compiles with nvcc: the run builds them up front
    prebuild: Callable | None = None        # other host work it needs (a peer's build), given the device: done up front, beside them
    env: tuple[tuple[str, str], ...] = ()   # what its process's environment needs (a peer's loader): a worker of its own

    @property
    def family(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def module(self) -> str:
        return self.run.__module__

    def provenance(self) -> dict:
        """What its record says it was made from: source_hash, sources and kernels (bench/core/provenance.py)."""
        return provenance(self.sources, self.kernels or {})

    def source_hash(self) -> str:
        return self.provenance()["source_hash"]

    def record_header(self) -> dict:
        """The fields every result record starts with."""
        from .schema import now_iso
        from .timing import quick
        return {"family": self.family, "title": self.title or self.id, **self.provenance(),
                "measured_at": now_iso(), "git_commit": git_commit(), **({"quick": True} if quick() else {})}


_REGISTRY: dict[str, Benchmark] = {}


def register(id: str, *, sources, **kw) -> Callable:
    """Decorator: register ``fn`` as benchmark ``id``. The registering module's own
    file and COMMON_SOURCES are always part of its sources."""
    if "." not in id:
        raise ValueError(f"benchmark id {id!r} must look like '<family>.<name>'")

    def wrap(fn):
        module_file = Path(importlib.import_module(fn.__module__).__file__).resolve()
        own = str(module_file.relative_to(ROOT)) if module_file.is_relative_to(ROOT) else str(module_file)
        add(Benchmark(id=id, run=fn, sources=tuple(dict.fromkeys((own, *COMMON_SOURCES, *sources))), **kw))
        return fn
    return wrap


def add(bench: Benchmark) -> None:
    old = _REGISTRY.get(bench.id)
    if old is not None and old.run is not bench.run:
        raise ValueError(f"benchmark id {bench.id!r} registered twice ({old.module}, {bench.module})")
    _REGISTRY[bench.id] = bench


def discover(modules=MODULES) -> dict[str, Benchmark]:
    for name in modules:
        importlib.import_module(name)
    return dict(sorted(_REGISTRY.items()))


def _matches(bench: Benchmark, pattern: str) -> bool:
    return pattern in (bench.id, bench.family) or fnmatch.fnmatchcase(bench.id, pattern)


def select(benchmarks: dict[str, Benchmark], patterns) -> list[Benchmark]:
    """Benchmarks whose id or family matches any pattern (exact, or a glob)."""
    if not patterns:
        return list(benchmarks.values())
    unknown = [p for p in patterns if not any(_matches(b, p) for b in benchmarks.values())]
    if unknown:
        raise KeyError(f"no benchmark or family matches {', '.join(unknown)}; see --list")
    return [b for b in benchmarks.values() if any(_matches(b, p) for p in patterns)]


GIT_COMMIT_ENV = "BENCH_GIT_COMMIT"


DIRTY = "-dirty"     # after the commit, as git describe --dirty writes it: the tree differed from it


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, cwd=ROOT)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_commit() -> str | None:
    """The commit the code was at: $BENCH_GIT_COMMIT (a copy of the tree without .git, such as
    the GPU machine's, is told it), else HEAD of the project's own checkout, with DIRTY where a
    file differs from it; None where the project is no checkout's root (a copy inside another
    checkout has no commit of its own)."""
    if os.environ.get(GIT_COMMIT_ENV):
        return os.environ[GIT_COMMIT_ENV]
    top = _git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != ROOT.resolve():
        return None
    head = _git("rev-parse", "HEAD")
    if not head:
        return None
    changes = _git("status", "--porcelain", "--untracked-files=no")
    return head + (DIRTY if changes else "")
