"""The shape atlas: each precision's headline kernel beside cuBLAS of its precision over the shapes
models run, not one reference shape and squares.

A cell is M tokens through one projection of a real model: N its output features, K its input
features, M from single-batch decoding (64) to a long prefill (16384). Each cell is measured as the
sweep measures a size (bench/gemm/sweep.py): checked against a float64 GEMM of its own operands, then
timed in short turns with cuBLAS on both B layouts, warm from the cell before; the tile the
catalogue's rule picked for the shape (catalogue.tile_for) is recorded with it."""
from __future__ import annotations

from . import benchmarks, catalogue, sweep
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
ATLAS = ("headline", "headline_bf16")     # roles of the catalogue (catalogue.ROLES)


def atlas_id(bench_id: str) -> str:
    return f"atlas.{catalogue.KERNELS[bench_id][0].precision}"


def _register_atlas(role: str) -> None:
    bench_id = catalogue.resolve(role)
    step, best = catalogue.KERNELS[bench_id]

    @register(atlas_id(bench_id), sources=(*benchmarks.kernel_sources(step), "bench/gemm/sweep.py"),
              kernels=catalogue.definitions((role,)), builds=sweep.tile_builds(step),
              timeout_s=900, min_cc=step.min_cc, title=f"{step.title_of(best)} over the shapes models run")
    def run(ctx) -> dict:
        rows, wrong = sweep.measure_all(ctx, step, [(f"{model} {projection} {m}×{n}×{k}", {"model": model, "projection": projection},
                                                     Shape(m, n, k)) for model, projection, n, k in PROJECTIONS for m in MS])
        return {"params": {"kernel": best.id, "layout": step.layout, "precision": step.precision, "ms": list(MS),
                           "projections": [{"model": m, "projection": p, "n": n, "k": k} for m, p, n, k in PROJECTIONS],
                           "tiles": list(step.tiles), "small_tile_below_sms": catalogue.SMALL_TILE_BELOW,
                           "cublas": f"{step.precision}, both layouts, same operands",
                           "warm_s": sweep.WARM_S, "timed_s": sweep.TIMED_S},
                "check": {"passed": not wrong, "method": "each cell against a float64 GEMM of its operands",
                          **({"detail": "; ".join(wrong)} if wrong else {})},
                "rows": rows}


for _role in ATLAS:
    _register_atlas(_role)
