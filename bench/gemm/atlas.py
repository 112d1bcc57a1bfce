"""The shape atlas: each precision's kernels beside cuBLAS of its precision over the shapes models
run, not one reference shape and squares: the one the catalogue's rule picks for the shape
(catalogue.kernel_for: stream-K for a few hundred rows, else the headline), and the headline in the
same turns where the rule picked stream-K.

A cell is M tokens through one projection of a real model: N its output features, K its input
features, M from single-batch decoding (64) to a long prefill (16384). Each cell is measured as the
sweep measures a size (bench/gemm/sweep.py): checked against a float64 GEMM of its own operands, then
timed in short turns with cuBLAS on both B layouts, warm from the cell before; the kernel and the
tile the catalogue picked for the shape (catalogue.tile_for) are recorded with it."""
from __future__ import annotations

from . import benchmarks, catalogue, launch, sweep
from .harness import Shape
from ..core.registry import register
from ..core.timing import quick

MS = (128, 4096) if quick() else (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
# (model, projection, N, K): fused where the model runs them as one GEMM
PROJECTIONS = (
    ("Llama-3 8B", "QKV", 6144, 4096),           # 32 query heads and 8 key/value heads of 128
    ("Llama-3 8B", "gate+up", 28672, 4096),
    ("Llama-3 8B", "down", 4096, 14336),
    ("Llama-3 70B", "QKV", 10240, 8192),
    ("Llama-3 70B", "down", 8192, 28672),
    ("DeepSeek-V3", "q_a+kv_a", 2112, 7168),     # 1536 + 576: a width no tile divides
    ("DeepSeek-V3", "q_b", 24576, 1536),
    ("DeepSeek-V3", "o", 7168, 16384),
)
if quick():
    PROJECTIONS = PROJECTIONS[:1] + PROJECTIONS[5:6]
ATLAS = {"tf32": "headline", "bf16": "headline_bf16"}     # each precision's headline, by its role (catalogue.ROLES)


def atlas_id(precision: str) -> str:
    return f"atlas.{precision}"


def _register_atlas(precision: str) -> None:
    headline = catalogue.HEADLINES[precision]
    streamed = next(s for s in catalogue.SHAPE_STEPS if s.precision == precision)
    steps = {bid: catalogue.step_of(bid) for bid in (headline, streamed.best.id)}
    routes = (ATLAS[precision], f"best:{streamed.name}")

    @register(atlas_id(precision), sources=tuple(dict.fromkeys(
                  (*(f for s in steps.values() for f in benchmarks.kernel_sources(s)), "bench/gemm/sweep.py"))),
              kernels=catalogue.definitions(routes), builds=tuple(b for s in steps.values() for b in sweep.tile_builds(s)),
              timeout_s=900, min_cc=streamed.min_cc, title=f"{precision.upper()} over the shapes models run")
    def run(ctx) -> dict:
        prepares = {bid: launch.prepare_by_shape(step, ctx.device) for bid, step in steps.items()}

        def pick(shape: Shape):
            """The rule's kernel for the shape, and the headline beside it where the rule picked another."""
            bid = catalogue.kernel_for(precision, shape.m, shape.n, ctx.device["sm_count"])
            partner = ("headline", steps[headline], prepares[headline]) if bid != headline else None
            return steps[bid], prepares[bid], shape, partner

        cells = [(f"{model} {projection} {m}×{n}×{k}", {"model": model, "projection": projection}, Shape(m, n, k))
                 for model, projection, n, k in PROJECTIONS for m in MS]
        rows, wrong = sweep.measure_all(ctx, cells, pick)
        return {"params": {"kernels": list(steps), "rule": "stream-K where its tile for M spans M in one cluster "
                                                             "(catalogue.kernel_for), else the headline",
                           "layout": "b_kmajor", "precision": precision, "ms": list(MS),
                           "projections": [{"model": m, "projection": p, "n": n, "k": k} for m, p, n, k in PROJECTIONS],
                           "tiles": {bid: list(step.tiles) for bid, step in steps.items()},
                           "small_tile_below_sms": catalogue.SMALL_TILE_BELOW,
                           "cublas": f"{precision}, both layouts, same operands",
                           "warm_s": sweep.WARM_S, "timed_s": sweep.TIMED_S},
                "check": {"passed": not wrong, "method": "each cell against a float64 GEMM of its operands",
                          **({"detail": "; ".join(wrong)} if wrong else {})},
                "rows": rows}


for _precision in ATLAS:
    _register_atlas(_precision)
