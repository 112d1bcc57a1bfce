"""The GPU tests (python -m pytest -m gpu) on the GPU that measures, as a record of the run: CI has
no GPU, so these tests pass or fail only here, and the deck says which on its title slide."""
from __future__ import annotations

import ast
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from .core import schema
from .core.registry import ROOT, register

TESTS = "tests/test_gpu.py"
COMMAND = ("-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider", TESTS)
LISTED_FAILURES = 20     # failing tests named in the record; past that, a count
LISTED_SLOWEST = 8       # the slowest tests named in the record with their seconds: where the check's time goes


def cases(report: Path) -> list:
    """The test cases of a JUnit XML report, read once for what the record says of them."""
    return list(ET.parse(report).getroot().iter("testcase"))


def outcomes(tests: list) -> dict:
    """Each test case of a report by its outcome: passed, failed (failures and errors), skipped."""
    out = {"passed": [], "failed": [], "skipped": []}
    for case in tests:
        name = case.get("name", "?")
        tags = {child.tag for child in case}
        out["failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"].append(name)
    return out


def slowest(tests: list, count: int = LISTED_SLOWEST) -> list[dict]:
    """The ``count`` test cases of a report that took longest, each with its seconds."""
    timed = [{"name": case.get("name", "?"), "seconds": float(case.get("time") or 0)} for case in tests]
    return sorted(timed, key=lambda t: -t["seconds"])[:count]


def _imports(path: Path) -> set[Path]:
    """The bench modules a file imports (``from bench.gemm import launch``, ``from ..core.timing
    import quick``, at any depth of the file), as their files."""
    package = path.relative_to(ROOT).parent.parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = (*package[:len(package) - node.level + 1], *(node.module or "").split(".")) if node.level \
            else tuple((node.module or "").split("."))
        if base[:1] != ("bench",):
            continue
        base = tuple(p for p in base if p)
        for target in (ROOT.joinpath(*base).with_suffix(".py"),
                       *(ROOT.joinpath(*base, alias.name).with_suffix(".py") for alias in node.names)):
            if target.exists():
                found.add(target)
    return found


def exercised(tests: str = TESTS) -> tuple[str, ...]:
    """What the GPU tests run: the tests, the bench modules they import (and those import) and
    every kernel, so that a change to any of it makes their outcome stale: it is the code they
    passed on."""
    todo, seen = list(_imports(ROOT / tests)), set()
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += _imports(path)
    return (tests, *sorted(str(p.relative_to(ROOT)) for p in seen),
            *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "kernels").rglob("*.cu*")))


def kernel_builds() -> tuple:
    """Every catalogue kernel's nvcc build, and each step's best with each of its tiles (the tests run
    tiles by M, small tiles and lone waves): the run compiles them in parallel before the tests, which
    would otherwise build the ones they load one after another (about 130 s of the 158 s the tests took
    in a run of their own without the tiles, H200, 2026-11-30)."""
    from .gemm import catalogue, benchmarks, sweep
    steps = {id(step): step for step, _ in catalogue.KERNELS.values()}.values()
    return (*(b for step, variant in catalogue.KERNELS.values() for b in benchmarks.builds(step, variant)),
            *(b for step in steps for b in sweep.tile_builds(step)))


@register(schema.GPU_TESTS, sources=exercised(), builds=kernel_builds(), timeout_s=900,
          title="The GPU tests (python -m pytest -m gpu) on this GPU")
def gpu_tests(ctx) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.xml"
        proc = subprocess.run([sys.executable, *COMMAND, f"--junitxml={report}"], cwd=ROOT,
                              capture_output=True, text=True)
        if not report.exists():
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
            raise RuntimeError(f"pytest wrote no report (exit status {proc.returncode}): {tail[0]}")
        tests = cases(report)
        seen, slow = outcomes(tests), slowest(tests)
    counts = {k: len(v) for k, v in seen.items()}
    ctx.progress(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    failing = seen["failed"][:LISTED_FAILURES]
    passed = counts["failed"] == 0 and counts["passed"] > 0
    return {"params": {"command": "python " + " ".join(COMMAND)},
            "tests": {**counts, "failures": failing, "slowest": slow},
            "check": {"passed": passed, "method": "every GPU test passes on this GPU",
                      **({} if passed else {"detail": f"{counts['failed']} of {sum(counts.values())} GPU tests failed"
                                                      + (f": {', '.join(failing[:3])}" if failing else "")})}}
