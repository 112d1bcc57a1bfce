"""GEMM across sizes: the best kernel of each step of the catalogue beside cuBLAS of its precision
on both B layouts, at square sizes from 1024 to 16384, sizes that are multiples of no tile, and the
reference shape.

At each size the kernel is checked first (the size's operands, poisoned C, float64 reference),
then it and cuBLAS on the same operands (B as the kernel reads it, and B in the other layout)
are timed in turns, so that all three meet the same clock. A kernel that takes whole tiles only
refuses the other sizes, and the refusal is recorded. The steps share each size's operands and
reference (bench/gemm/harness.py keeps them), and the chip stays warm from one size to the next."""
from __future__ import annotations

from dataclasses import replace

from . import catalogue, cublas, benchmarks, launch
from .catalogue import Step
from .harness import SHAPE, Refused, Shape, checked_cublas, checked_launch, keep_busy, tflops, warm
from ..core.registry import register
from ..core.timing import quick, time_gpu_alternating

SIZES = (2048,) if quick() else (1024, 2048, 3000, 4096, 6000, 8192, 16384)   # 3000, 6000: multiples of no tile
# each size, before timing: the clock settles where the three GEMMs leave it (a tenth of a second: the
# chip is busy from the size before, and the kernel and cuBLAS meet the same clock in their turns)
WARM_S = 0.05 if quick() else 0.1
TIMED_S = 0.1 if quick() else 0.4     # each size's timed loop lasts about this long, whatever the speed
MIN_REPS, MAX_REPS = 3, 100


def shapes() -> list[Shape]:
    return [Shape(n, n, n) for n in SIZES] + [SHAPE]


def picked_tile(launch_) -> dict | None:
    """The tile the catalogue picked for the shape, as a row records it."""
    tile = (launch_.resources or {}).get("tile")
    return tile and {key: tile[key] for key in ("BM", "BN", "CLUSTER_M") if key in tile}


def measure(step: Step, prepare, shape: Shape, partner: tuple | None = None) -> dict:
    """One size: check the kernel, then time it in turns with cuBLAS of its precision on both layouts;
    ``partner``, (name, step, prepare) of the kernel the shape would otherwise run, checked and timed
    in the same turns."""
    import cupy
    row = {"shape": shape.dims, "kernel": step.best.id}
    try:
        launch_, check, ops, c = checked_launch(shape, step.layout, step.precision, prepare, step.scaling,
                                                catalogue.output_of(step.best.tile))
    except Refused as e:
        return {**row, "outcome": "refused", "reason": str(e)}
    if picked_tile(launch_):
        row["tile"] = picked_tile(launch_)
    planned = next((key for key in ("stream_k", "split_wave") if key in (launch_.resources or {})), None)
    if planned:     # how the clusters shared the work: what the deck draws
        row["plan"] = {"kind": planned, **{key: launch_.resources[planned][key] for key in ("units", "clusters", "k_tiles")}}
    if not check["passed"]:
        return {**row, "outcome": "wrong", "check": check}
    # cuBLAS on the same operands, its error beside the kernel's
    cublas_run, cublas_check = checked_cublas(ops, step.precision, catalogue.output_of(step.best.tile))
    row["cublas_check"] = {key: cublas_check[key] for key in ("passed", "rel_error")}
    runs = {"kernel": launch_.run, f"cublas_{step.layout}": cublas_run}
    cublas_runs = list(runs)[1:]
    # the same B stored the other way, where cuBLAS takes that layout in this precision (FP8: K-major only)
    other = next((layout for layout in catalogue.cublas_layouts(step.precision) if layout != step.layout), None)
    if other:
        b_other = cupy.ascontiguousarray(ops.b.T)
        runs[f"cublas_{other}"] = lambda: cublas.gemm(ops.a, b_other, c, other, step.precision, **ops.scaling)
        cublas_runs.append(f"cublas_{other}")
    if partner:
        name, their_step, their_prepare = partner
        theirs, their_check, _, _ = checked_launch(shape, their_step.layout, their_step.precision, their_prepare,
                                                   their_step.scaling, catalogue.output_of(their_step.best.tile))
        row[name] = {"kernel": their_step.best.id, "tile": picked_tile(theirs),
                     "check": {key: their_check[key] for key in ("passed", "rel_error")}}
        runs[name] = theirs.run
    fns = list(runs.values())
    for fn in fns[1:]:      # cuBLAS picks its kernel for a shape on the first call; the kernel ran in its check
        fn()
    first = time_gpu_alternating(fns, warmup=0, reps=1)
    one_round = sum(t["median"] for t in first) * 1e-3
    if one_round > TIMED_S:
        # a slow kernel at a large size (the naive ones at 16384: seconds a run): that round is its timing
        reps, timed = 1, first
    else:
        reps = max(MIN_REPS, min(MAX_REPS, round(TIMED_S / one_round)))
        warm(lambda: [fn() for fn in fns], WARM_S)
        timed = time_gpu_alternating(fns, warmup=0, reps=reps)
    times = dict(zip(runs, timed))
    rate = {name: tflops(shape, t) for name, t in times.items()}
    if partner:     # the kernel's speed over the partner's: the ratio of their medians, and of their intervals' far ends
        their_time, our_time = times[partner[0]], times["kernel"]
        row[partner[0]].update(ratio=rate["kernel"] / rate[partner[0]],
                               ci=[their_time["ci"][0] / our_time["ci"][1], their_time["ci"][1] / our_time["ci"][0]])
    return {**row, "outcome": "correct", "check": check, "reps": reps, "time_ms": times, "tflops": rate,
            "ratio_same_layout": rate["kernel"] / rate[f"cublas_{step.layout}"],
            "ratio_best_layout": rate["kernel"] / max(rate[name] for name in cublas_runs)}


def measure_all(ctx, cells, pick) -> tuple[list, list]:
    """Each cell, (name, fields of its row, shape), measured in turn with what ``pick(shape)`` gives,
    measure()'s arguments (step, prepare, shape[, partner]): its rows, and what each wrong cell's check said."""
    keep_busy()
    rows, wrong = [], []
    for name, fields, shape in cells:
        row = {**fields, **measure(*pick(shape))}
        rows.append(row)
        ctx.progress(f"{name}: " + (f"{row['tflops']['kernel']:.1f} TFLOPS, {100 * row['ratio_same_layout']:.1f}% "
                                    "of cuBLAS in turns" if row["outcome"] == "correct" else row["outcome"]))
        if row["outcome"] == "wrong":
            wrong.append(f"{name}: {row['check'].get('detail', 'wrong')}")
    return rows, wrong


def tile_builds(step: Step) -> tuple:
    """The builds of a step's best kernel with each of its tiles: what prepare_by_shape picks from."""
    return tuple(b for tile in step.tiles for b in benchmarks.builds(step, replace(step.best, tile=tile)))


def _register_sweep(step: Step) -> None:
    best = step.best

    @register(step.sweep_id, sources=benchmarks.kernel_sources(step),
              kernels=catalogue.definitions((f"best:{step.name}",)), builds=tile_builds(step),
              timeout_s=600, min_cc=step.min_cc, title=f"{step.title_of(best)} across sizes")
    def run(ctx) -> dict:
        prepare = launch.prepare_by_shape(step, ctx.device)
        rows, wrong = measure_all(ctx, [("×".join(map(str, shape.dims)), {}, shape) for shape in shapes()],
                                  lambda shape: (step, prepare, shape))
        return {"params": {"kernel": best.id, "label": best.label, "layout": step.layout, "precision": step.precision,
                           "tiles": list(step.tiles), **catalogue.rule_params(step),
                           "cublas": f"{step.precision}, {' and '.join(catalogue.cublas_layouts(step.precision))}, same operands",
                           "sizes": list(SIZES),
                           "warm_s": WARM_S, "timed_s": TIMED_S, "min_reps": MIN_REPS, "max_reps": MAX_REPS},
                "check": {"passed": not wrong, "method": "each size against a float64 GEMM of its operands",
                          **({"detail": "; ".join(wrong)} if wrong else {})},
                "rows": rows}


for _step in catalogue.SWEPT:
    _register_sweep(_step)
