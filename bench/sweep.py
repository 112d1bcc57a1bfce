"""GEMM across sizes: the best kernel of each step of the progression beside cuBLAS TF32 on
both B layouts, at square sizes from 1024 to 16384, sizes that are multiples of no tile,
and the reference shape.

At each size the kernel is checked first (fresh operands, poisoned C, float64 reference),
then it and cuBLAS on the same operands (B as the kernel reads it, and B in the other
layout) are timed in turns, so that all three meet the same clock. A kernel that takes
whole tiles only refuses the other sizes, and the refusal is recorded."""
from __future__ import annotations

from . import gemm, registry
from .gemm import SHAPE, Refused, Shape, _cublas_gemm, checked_launch, warm
from .progression import STEPS
from .registry import register
from .timing import time_gpu_alternating

SIZES = (1024, 2048, 3000, 4096, 6000, 8192, 16384)   # 3000 and 6000: multiples of no tile
WARM_S = 0.5        # each size, before timing: the clock settles where the three GEMMs leave it
TIMED_S = 0.5       # each size's timed loop lasts about this long, whatever the speed
MIN_REPS, MAX_REPS = 5, 100


def shapes() -> list[Shape]:
    return [Shape(n, n, n) for n in SIZES] + [SHAPE]


def measure(kernel: gemm.HandWritten, prepare, shape: Shape) -> dict:
    """One size: check the kernel, then time it in turns with cuBLAS TF32 on both layouts."""
    import cupy
    row = {"shape": [shape.m, shape.n, shape.k]}
    try:
        launch, check, (a, b, c) = checked_launch(shape, kernel.layout, kernel.precision, prepare)
    except Refused as e:
        return {**row, "outcome": "refused", "reason": str(e)}
    if not check["passed"]:
        return {**row, "outcome": "wrong", "check": check}
    other = "b_row" if kernel.layout == "b_kmajor" else "b_kmajor"
    b_other = cupy.ascontiguousarray(b.T)         # the same B, stored the other way
    c_cublas = cupy.empty_like(c)
    runs = {"kernel": launch.run,
            f"cublas_{kernel.layout}": lambda: _cublas_gemm(a, b, c_cublas, kernel.layout, "tf32"),
            f"cublas_{other}": lambda: _cublas_gemm(a, b_other, c_cublas, other, "tf32")}
    fns = list(runs.values())
    one_round = sum(t["median"] for t in time_gpu_alternating(fns, warmup=1, reps=2)) * 1e-3
    reps = max(MIN_REPS, min(MAX_REPS, round(TIMED_S / one_round)))
    warm(lambda: [fn() for fn in fns], WARM_S)
    times = dict(zip(runs, time_gpu_alternating(fns, warmup=1, reps=reps)))
    tflops = {name: shape.flops / (t["median"] * 1e-3) / 1e12 for name, t in times.items()}
    return {**row, "outcome": "correct", "check": check, "time_ms": times, "tflops": tflops,
            "ratio_same_layout": tflops["kernel"] / tflops[f"cublas_{kernel.layout}"],
            "ratio_best_layout": tflops["kernel"] / max(tflops[f"cublas_{kernel.layout}"], tflops[f"cublas_{other}"])}


def _register_sweep(step) -> None:
    bid, label = step.variants[-1]                  # the step's best kernel
    kernel = gemm.HAND_WRITTEN[bid]
    measured = registry.discover(("bench.gemm",))[bid]

    @register(f"sweep.{step.key}", sources=[*measured.sources, "bench/progression.py"], timeout_s=600,
              title=f"{step.title}{f' ({label})' if len(step.variants) > 1 else ''} across sizes", min_cc=measured.min_cc)
    def run(ctx) -> dict:
        prepare = kernel.make_prepare(ctx.device)
        rows = []
        for shape in shapes():
            row = measure(kernel, prepare, shape)
            rows.append(row)
            size = "×".join(map(str, row["shape"]))
            ctx.progress(f"{size}: " + (f"{row['tflops']['kernel']:.1f} TFLOPS, {100 * row['ratio_same_layout']:.1f}% "
                                        f"of cuBLAS in turns" if row["outcome"] == "correct" else row["outcome"]))
        wrong = [f"{'×'.join(map(str, r['shape']))}: {r['check'].get('detail', 'wrong')}"
                 for r in rows if r["outcome"] == "wrong"]
        return {"params": {"kernel": bid, "label": label, "layout": kernel.layout, "precision": kernel.precision,
                           "cublas": "tf32, both layouts, same operands", "sizes": list(SIZES),
                           "warm_s": WARM_S, "timed_s": TIMED_S, "min_reps": MIN_REPS, "max_reps": MAX_REPS},
                "check": {"passed": not wrong, "method": "each size against a float64 GEMM of its operands",
                          **({"detail": "; ".join(wrong)} if wrong else {})},
                "rows": rows}


for _step in STEPS:
    _register_sweep(_step)
