"""Trying a change to a kernel's constants before it becomes a catalogue entry:

    python -m bench.gemm.trial gemm.lean_loop_fp8 --shape 2048x7168x16384 --variant w192:BN=192

Each variant is the catalogue's kernel (an id or a role, catalogue.resolve) built with the tile the
catalogue picks for the shape (catalogue.tile_for) and the constants the variant changes (a new width
keeps a ring of named depth at its bytes, unless the variant names STAGES); the catalogue's own pick
runs first as the base. Every run is checked against float64, then all are timed in turns as the GEMM
benchmarks time them (harness.time_in_turns), over copies of the operands where they are small beside
L2 (sweep.operand_sets); --cublas adds cuBLAS (cuBLASLt for FP8) of the kernel's precision and
scaling. Each line gives a run's TFLOPS and its time over the base's, with the interval of the
sample-by-sample ratio. --source NAME=PATH builds variant NAME from an edited copy
of the kernel's file (its headers beside it, the same function), for a change that is code, not
constants. --counters reads Nsight Compute's counters of one launch of each run instead of timing
them (each launch's name, time, CTAs and clock beside the counters --profile reads): what a pair
of times does not say, such as cuBLAS's tile or a split-K kernel beside its GEMM. A run whose kernel
faults ends the trial in one line naming it (its process's CUDA context is lost), the rows before it
kept. Nothing goes to results/: a change that pays becomes a catalogue entry, which python -m bench
then measures."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from . import catalogue
from .harness import Shape

BASE = "catalogue"
FAULTED = 3           # main's exit status where a run faulted: the CUDA context is lost, so the process ends at once
_NAME = re.compile(r"[A-Za-z][\w.-]*$")
_DEFINE = re.compile(r"[A-Z][A-Z0-9_]*$")


def parse_shape(text: str) -> Shape:
    """'MxNxK' (or with ×) as a Shape."""
    dims = re.split(r"[x×]", text.strip())
    if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
        raise ValueError(f"a shape is MxNxK in positive integers, such as 4096x8192x16384: not {text!r}")
    return Shape(*map(int, dims))


def parse_variant(text: str) -> tuple[str, dict]:
    """'name:KEY=VALUE[,KEY=VALUE...]' as (name, {KEY: value}), a value an int where it is one."""
    name, sep, changes = text.partition(":")
    if not sep or not _NAME.match(name) or name == BASE or not changes:
        raise ValueError(f"a variant is NAME:KEY=VALUE[,KEY=VALUE...], its name not {BASE!r}, such as "
                         f"w192:BN=192,CLUSTER_M=1: not {text!r}")
    tile = {}
    for change in changes.split(","):
        key, eq, value = change.partition("=")
        if not eq or not _DEFINE.match(key) or not value:
            raise ValueError(f"{change!r} in variant {name!r} is not KEY=VALUE, KEY a constant's name in capitals")
        tile[key] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return name, tile


def parse_sources(texts: list[str], variants: dict[str, dict]) -> dict[str, str]:
    """'NAME=PATH' as {NAME: PATH}: variant NAME built from the file at PATH."""
    sources = {}
    for text in texts:
        name, eq, path = text.partition("=")
        if not eq or name not in variants:
            raise ValueError(f"--source is NAME=PATH, NAME one of the variants ({', '.join(variants) or 'none given'}): not {text!r}")
        if not Path(path).is_file():
            raise ValueError(f"--source {name}: no file at {path}")
        sources[name] = path
    return sources


def tiles(bench_id: str, shape: Shape, sm_count: int, variants: dict[str, dict]) -> dict[str, dict]:
    """Each run's tile at the shape: the catalogue's first (its step's pick by shape for the step's best
    kernel, else the kernel's own tile), then each variant's changes to it (changed)."""
    step, variant = catalogue.KERNELS[bench_id]
    picked = catalogue.tile_for(step, shape.m, shape.n, shape.k, sm_count) if variant is step.best else variant.tile
    return {BASE: picked, **{name: changed(picked, changes) for name, changes in variants.items()}}


def changed(tile: dict, changes: dict) -> dict:
    """``tile`` with a variant's changes; a new width keeps a ring of named depth at its bytes, as the
    catalogue's widths do (catalogue.at_width), unless the variant names STAGES itself."""
    if "BN" in changes and "STAGES" not in changes:
        tile = catalogue.at_width(tile, changes["BN"])
    return {**tile, **changes}


class Faulted(RuntimeError):
    """A run's kernel faulted on the GPU (an illegal address, a trap): the process's CUDA context is
    lost, so nothing more can run in it."""


def _cuda_errors() -> tuple[type[Exception], ...]:
    """What cupy raises once a kernel has faulted."""
    from cupy_backends.cuda.api.driver import CUDADriverError
    from cupy_backends.cuda.api.runtime import CUDARuntimeError
    return CUDADriverError, CUDARuntimeError


def _cublas_run(step: catalogue.Step, ops, output: str):
    from . import cublas
    c = ops.poisoned_c(output)
    return c, lambda a, b: (lambda: cublas.gemm(a, b, c, step.layout, step.precision, **ops.scaling))


def _checked_runs(step: catalogue.Step, shape: Shape, by_name: dict[str, dict], device: dict, with_cublas: bool,
                  sources: dict[str, str] | None):
    """Each run built and checked: (runs, each over the operand sets; checks; refused variants; sets)."""
    import numpy as np
    from . import launch
    from .harness import Refused, checked_launch, operands
    from .sweep import operand_sets
    output = catalogue.output_of(by_name[BASE])          # C's type, the base's (and cuBLAS's)
    ops = operands(shape, step.layout, step.precision, step.scaling)
    c_bytes = shape.m * shape.n * np.dtype(launch.OUTPUT_DTYPES[output]).itemsize
    sets = operand_sets(ops.a, ops.b, c_bytes, device["l2_bytes"])
    runs, checks, refused = {}, {}, {}
    for name, tile in by_name.items():
        built = replace(step, source=(sources or {}).get(name, step.source))
        prepare = launch.prepare(built, replace(step.best, tile=tile), device)
        try:
            first, checks[name], _, c = checked_launch(shape, step.layout, step.precision, prepare, step.scaling,
                                                       catalogue.output_of(tile))
        except Refused as e:
            if name == BASE:
                raise
            refused[name] = str(e)
            continue
        except _cuda_errors() as e:
            raise Faulted(f"{name} faulted in its check: {e}") from e
        runs[name] = [first.run] + [prepare(a, b, c.copy(), **ops.scaling).run for a, b in sets[1:]]
    if with_cublas:
        c, make = _cublas_run(step, ops, output)
        runs["cublas"] = [make(a, b) for a, b in sets]
        runs["cublas"][0]()
        checks["cublas"] = ops.check(c)
    return runs, checks, refused, sets


def measure(step: catalogue.Step, shape: Shape, by_name: dict[str, dict], device: dict, with_cublas: bool,
            sources: dict[str, str] | None = None) -> dict:
    """One shape: each run checked, then all timed in turns; a row of the table. ``sources``: the
    variants built from another file than the step's."""
    from .harness import ratio, tflops, time_in_turns
    from .sweep import cycled
    runs, checks, refused, sets = _checked_runs(step, shape, by_name, device, with_cublas, sources)
    times = dict(zip(runs, time_in_turns(list(cycled(runs).values()))[0]))
    return {"shape": shape.dims, "operand_sets": len(sets), "tiles": by_name, **({"sources": sources} if sources else {}),
            "runs": {name: {"tflops": tflops(shape, t), "check": {k: checks[name][k] for k in ("passed", "rel_error")},
                            "over_base": ratio("r", t, times[BASE])["r_by_sample"]}
                     for name, t in times.items()},
            **({"refused": refused} if refused else {})}


# What --counters reads of each launch beside the counters --profile reads (profile.METRICS)
LAUNCH_METRICS = {"gpu__time_duration.sum": "time, ns", "launch__grid_size": "CTAs",
                  "sm__cycles_elapsed.avg.per_second": "the SMs' clock, cycles a second"}


def launch_once(step: catalogue.Step, shape: Shape, by_name: dict[str, dict], device: dict, with_cublas: bool,
                sources: dict[str, str] | None = None) -> dict:
    """One shape in the process ncu reads: each run checked, then launched once inside a profiler
    window of its own (ncu --profile-from-start off reads those launches only). The runs launched, in order."""
    import cupy
    runs, _, refused, _ = _checked_runs(step, shape, by_name, device, with_cublas, sources)
    cupy.cuda.Device().synchronize()
    for run in runs.values():
        cupy.cuda.runtime.profilerStart()
        run[0]()
        cupy.cuda.Device().synchronize()
        cupy.cuda.runtime.profilerStop()
    return {"shape": shape.dims, "runs": list(runs), **({"refused": refused} if refused else {})}


def counters_by_run(launches: list[tuple[str, dict]], order: list[dict], function: str) -> list[dict]:
    """ncu's launches (profile.parse_launches, in launch order) given to the runs that made them
    (``order``, launch_once's shapes): a kernel's run makes one launch of ``function``, cuBLAS's run
    every launch up to the next of ours (a split-K GEMM and its reduction)."""
    rows, i = [], 0
    for shape in order:
        runs = {}
        for name in shape["runs"]:
            start = i
            if name == "cublas":
                while i < len(launches) and launches[i][0] != function:
                    i += 1
            elif i < len(launches) and launches[i][0] == function:
                i += 1
            if i == start:
                raise RuntimeError(f"ncu read no launch of {name} at {'x'.join(map(str, shape['shape']))}"
                                   f" ({'the next is ' + launches[i][0] if i < len(launches) else 'none left'})")
            runs[name] = [{"kernel": kernel, **values} for kernel, values in launches[start:i]]
        rows.append({**shape, "runs": runs})
    if i != len(launches):
        raise RuntimeError(f"ncu read {len(launches) - i} launches past the runs, the first {launches[i][0]}")
    return rows


def read_counters(child_argv: list[str], timeout_s: float = 570) -> list[dict]:
    """ncu over this tool's own process with ``child_argv`` and --launch-once: each shape's runs with
    their launches' counters (counters_by_run)."""
    from .profile import IN_PROFILER_WINDOWS, METRICS, run_ncu
    with tempfile.TemporaryDirectory() as tmp:
        order = Path(tmp) / "order.json"
        launches = run_ncu(IN_PROFILER_WINDOWS, [*child_argv, "--launch-once", str(order)], "the trial's runs", timeout_s,
                           module="bench.gemm.trial", metrics={**METRICS, **LAUNCH_METRICS})
        step = catalogue.step_of(catalogue.resolve(child_argv[0]))
        return counters_by_run(launches, json.loads(order.read_text()), step.function)


def counter_lines(row: dict) -> list[str]:
    """A shape's lines of counters: a line a launch, its run named on its first."""
    out = [f"{'x'.join(map(str, row['shape']))}"]
    width = max(map(len, [*row["runs"], *row.get("refused", {})]))
    for name, launches in row["runs"].items():
        for j, c in enumerate(launches):
            out.append(f"  {name if j == 0 else '':<{width}}  {c['gpu__time_duration.sum'] / 1e3:8.1f} us  "
                       f"{int(c['launch__grid_size']):5d} CTAs  {c['sm__cycles_elapsed.avg.per_second'] / 1e6:5.0f} MHz  "
                       f"tensor {c['sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active']:5.1f}%  "
                       f"DRAM {c['dram__throughput.avg.pct_of_peak_sustained_elapsed']:5.1f}%  "
                       f"L1 hit {c['l1tex__t_sector_hit_rate.pct']:5.1f}%  {c['kernel'][:120]}")
    out += [f"  {name:<{width}}  refused: {reason}" for name, reason in row.get("refused", {}).items()]
    return out


def lines(row: dict) -> list[str]:
    """A shape's lines of the table."""
    out = [f"{'x'.join(map(str, row['shape']))}" + (f" (over {row['operand_sets']} operand sets)" if row["operand_sets"] > 1 else "")]
    width = max(map(len, [*row["runs"], *row.get("refused", {})]))
    for name, run in row["runs"].items():
        r, check = run["over_base"], run["check"]
        out.append(f"  {name:<{width}}  {run['tflops']:8.1f} TFLOPS  time over {BASE}'s {r['median']:.3f} "
                   f"[{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]  error {check['rel_error']:.1e}"
                   + ("" if check["passed"] else "  FAILED its check"))
    out += [f"  {name:<{width}}  refused: {reason}" for name, reason in row.get("refused", {}).items()]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gemm.trial", description=(
        "Try changes to a catalogue kernel's constants: each variant checked, then timed in turns with the "
        "catalogue's own pick for the shape (and cuBLAS with --cublas). Nothing goes to results/."))
    parser.add_argument("kernel", help="a kernel of the catalogue: its id (gemm.lean_loop_fp8) or its role (headline_fp8)")
    parser.add_argument("--shape", action="append", required=True, help="MxNxK; repeat for more shapes")
    parser.add_argument("--variant", action="append", default=[], help="NAME:KEY=VALUE[,KEY=VALUE...]; repeat for more")
    parser.add_argument("--source", action="append", default=[], help="NAME=PATH: variant NAME built from this copy of the kernel's file")
    parser.add_argument("--cublas", action="store_true", help="time cuBLAS (cuBLASLt for FP8) of its precision in the same turns")
    parser.add_argument("--counters", action="store_true",
                        help="read Nsight Compute's counters of one launch of each run (ncu on PATH) instead of timing them")
    parser.add_argument("--json", help="write the rows to this file too")
    parser.add_argument("--launch-once", help=argparse.SUPPRESS)    # the process --counters runs under ncu: its order file
    args = parser.parse_args(argv)
    try:
        bench_id = catalogue.resolve(args.kernel)
        step = catalogue.step_of(bench_id)
        shapes = [parse_shape(s) for s in args.shape]
        variants = dict(parse_variant(v) for v in args.variant)
        if len(variants) != len(args.variant):
            raise ValueError("two variants share a name")
        sources = parse_sources(args.source, variants)
        if not step.cute:
            raise ValueError(f"{args.kernel} is a numba kernel: its constants are not a tile of defines")
    except (KeyError, ValueError) as e:
        parser.error(str(e.args[0] if isinstance(e, KeyError) else e))
    if args.counters:
        return counters_main(args)
    from ..core import cuda
    from ..core.device import NoGPU, collect_device
    try:
        device = collect_device()
    except NoGPU as e:
        print(e, file=sys.stderr)
        return 1
    by_shape = [tiles(bench_id, shape, device["sm_count"], variants) for shape in shapes]
    failed = cuda.compile_all([(sources.get(name, step.source), tile) for by_name in by_shape for name, tile in by_name.items()],
                              cuda.arch_of(device["compute_capability"]))
    if failed:
        print("\n".join(f"{tile}: {error}" for (_, tile), error in failed.items()), file=sys.stderr)
        return 1
    from .harness import Refused, keep_busy
    keep_busy()                 # the chip warm from its rest before the first turns (harness.FIRST_WARM_S)
    rows = []
    for shape, by_name in zip(shapes, by_shape):
        try:
            if args.launch_once:
                rows.append(launch_once(step, shape, by_name, device, args.cublas, sources))
                continue
            rows.append(measure(step, shape, by_name, device, args.cublas, sources))
        except (Faulted, *_cuda_errors()) as e:
            print(f"{'x'.join(map(str, shape.dims))}: {e if isinstance(e, Faulted) else f'a run faulted: {e}'}; "
                  "the CUDA context is lost, so the trial stops here", file=sys.stderr, flush=True)
            _save(args, rows)
            return FAULTED
        except Refused as e:
            print(f"{'x'.join(map(str, shape.dims))}: refused: {e}", flush=True)
            if args.launch_once:        # the shape's line under --counters says so
                rows.append({"shape": shape.dims, "runs": [], "refused": {BASE: str(e)}})
            continue
        print("\n".join(lines(rows[-1])), flush=True)
    _save(args, rows)
    return 0


def _save(args, rows: list[dict]) -> None:
    """The rows measured, to --json's file (or --counters' order file)."""
    if args.json or args.launch_once:
        with open(args.launch_once or args.json, "w") as f:
            json.dump(rows, f, indent=1)


def counters_main(args) -> int:
    """--counters: this tool's runs again in a process under ncu, and their counters printed."""
    import shutil
    if shutil.which("ncu") is None:
        print("ncu (Nsight Compute) is not on PATH: --counters reads its counters", file=sys.stderr)
        return 1
    child = [args.kernel, *(f"--shape={s}" for s in args.shape), *(f"--variant={v}" for v in args.variant),
             *(f"--source={s}" for s in args.source), *(["--cublas"] if args.cublas else [])]
    try:
        rows = read_counters(child)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"--counters: {e}", file=sys.stderr)
        return 1
    for row in rows:
        print("\n".join(counter_lines(row)), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    status = main()
    if status == FAULTED:        # cupy would print a traceback for each module it fails to unload
        sys.stdout.flush()
        os._exit(status)
    sys.exit(status)
