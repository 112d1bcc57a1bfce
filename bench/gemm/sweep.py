"""GEMM across sizes: the best kernel of each step of the catalogue beside cuBLAS of its precision
on both B layouts, at square sizes from 1024 to 16384, sizes that are multiples of no tile, and the
reference shape.

At each size the kernel is checked first (the size's operands, poisoned C, float64 reference),
then it and cuBLAS on the same operands (B as the kernel reads it, and B in the other layout)
are timed in turns, so that all three meet the same clock; where the operands fit in L2, the runs
cycle through copies of them, so that each reads them from memory. A kernel that takes whole tiles only
refuses the other sizes, and the refusal is recorded. The steps share each size's operands and
reference (bench/gemm/harness.py keeps them), and the chip stays warm from one size to the next."""
from __future__ import annotations

import itertools
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


# Where a size's A, B and C fit in L2 with room to spare, a run finds what the run before it left
# there, and repeated runs over one set of operands time L2 rather than memory (at 64 x 2112 x 7168
# BF16, B's 30 MB: a kernel ran 15-19% faster after one on the same operands than after cuBLAS on
# B's transposed copy; H200, 2026-11-30). The timed runs then cycle through copies of the operands,
# enough to fill L2 this many times over, so that each run reads A and B from memory, as a model's
# weights come.
COLD_L2S = 2


def operand_sets(a, b, c_bytes: int, l2_bytes: int) -> list[tuple]:
    """The (A, B) pairs the timed runs cycle through: ``a`` and ``b``, then copies where one set, with
    a C of ``c_bytes``, would fill L2 less than COLD_L2S times over."""
    sets = -(-COLD_L2S * l2_bytes // (a.nbytes + b.nbytes + c_bytes))
    return [(a, b)] + [(a.copy(), b.copy()) for _ in range(sets - 1)]


def cycled(runs: dict[str, list]) -> dict:
    """One function a name, each call running that name's next run over the operand sets. The calls
    share one count, so runs queued one after another read sets one after another: a set comes round
    again only after all the others."""
    turn = itertools.count()
    return {name: (lambda by_set=by_set: by_set[next(turn) % len(by_set)]()) for name, by_set in runs.items()}


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
    # each timed run made for operands (A, B), into a C of its own: the kernel, then cuBLAS
    gemm = lambda layout: lambda a, b, c: lambda: cublas.gemm(a, b, c, layout, step.precision, **ops.scaling)
    makers = {"kernel": lambda a, b, c: prepare(a, b, c, **ops.scaling).run, f"cublas_{step.layout}": gemm(step.layout)}
    checked = {"kernel": launch_.run, f"cublas_{step.layout}": cublas_run}     # on the first set, as checked
    cublas_runs = list(makers)[1:]
    # the same B stored the other way, where cuBLAS takes that layout in this precision (FP8: K-major only)
    other = next((layout for layout in catalogue.cublas_layouts(step.precision) if layout != step.layout), None)
    if other:
        makers[f"cublas_{other}"] = lambda a, b, c: gemm(other)(a, cupy.ascontiguousarray(b.T), c)
        cublas_runs.append(f"cublas_{other}")
    if partner:
        name, their_step, their_prepare = partner
        theirs, their_check, _, their_c = checked_launch(shape, their_step.layout, their_step.precision, their_prepare,
                                                         their_step.scaling, catalogue.output_of(their_step.best.tile))
        row[name] = {"kernel": their_step.best.id, "tile": picked_tile(theirs),
                     "check": {key: their_check[key] for key in ("passed", "rel_error")}}
        makers[name] = lambda a, b, _: their_prepare(a, b, cupy.empty_like(their_c), **ops.scaling).run
        checked[name] = theirs.run
    sets = operand_sets(ops.a, ops.b, c.nbytes, cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["l2CacheSize"])
    if len(sets) > 1:
        row["operand_sets"] = len(sets)
    runs = cycled({name: [checked.get(name) or make(*sets[0], cupy.empty_like(c))]
                         + [make(a, b, cupy.empty_like(c)) for a, b in sets[1:]] for name, make in makers.items()})
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
