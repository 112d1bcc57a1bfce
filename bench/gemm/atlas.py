"""The shape atlas: each precision's kernels beside cuBLAS of its precision over the shapes models
run, not one reference shape and squares. Each atlas runs one kernel of the catalogue (ATLASES, by its
role), or where it has stand-ins the one the catalogue's rule picks (catalogue.kernel_for: stream-K
for a few hundred rows where the headline's tiles are too few, ping-pong consumers where K is short and
the tiles many, else the headline), with the headline in the same turns where the rule picked another. FP8 has two: the kernel that sums in
FP32 with a scale a tensor, against cuBLASLt's accurate mode, and the block-scaled one writing BF16,
against cuBLASLt given the same block scales.

A cell is M tokens through one projection of a real model: N its output features, K its input
features, M from single-batch decoding (64) to a long prefill (16384). Each cell is measured as the
sweep measures a size (bench/gemm/sweep.py): checked against a float64 GEMM of its own operands, then
timed in short turns with cuBLAS on each B layout it takes, warm from the cell before; the kernel and
the tile the catalogue picked for the shape (catalogue.tile_for) are recorded with it."""
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
if quick():    # two cells an atlas: M of decoding and of a prefill through the first projection
    PROJECTIONS = PROJECTIONS[:1]
def _register_atlas(name: str) -> None:
    role, label = catalogue.ATLASES[name]
    kernel = catalogue.resolve(role)
    streamed, turns = catalogue.streamed_for(kernel), catalogue.turns_for(kernel)
    stand_ins = [s for s in (streamed, turns) if s]
    step = catalogue.step_of(kernel)
    steps = {bid: catalogue.step_of(bid) for bid in (kernel, *(s.best.id for s in stand_ins))}
    routes = (role, *(f"best:{s.name}" for s in stand_ins))
    short = streamed and streamed.short_k_rows
    rule = (f"stream-K up to {catalogue.streamed_rows(streamed)} rows"
            + (f" ({short[1]} where K is at most {short[0]})" if short else "")
            + ", where its tiles by M take M and the headline's one row of tiles would leave over a"
              " quarter of the SMs idle" if streamed else "")
    if turns:
        rule += (f"{'; ' if rule else ''}ping-pong consumers where K is at most {catalogue.PINGPONG_MAX_K} and their"
                 f" tiles make {catalogue.PINGPONG_MIN_WAVES} waves or more")
    rule = f"{rule} (catalogue.kernel_for), else the headline" if rule else "its tile by M (catalogue.tile_for)"

    @register(catalogue.atlas_id(name), sources=tuple(dict.fromkeys(
                  (*(f for s in steps.values() for f in benchmarks.kernel_sources(s)), "bench/gemm/sweep.py"))),
              kernels=catalogue.definitions(routes), builds=tuple(b for s in steps.values() for b in sweep.tile_builds(s)),
              timeout_s=900, min_cc=step.min_cc, title=f"{label} over the shapes models run")
    def run(ctx) -> dict:
        prepares = {bid: launch.prepare_by_shape(s, ctx.device) for bid, s in steps.items()}

        def pick(shape: Shape):
            """The rule's kernel for the shape, and the atlas's own beside it where the rule picked another."""
            bid = catalogue.kernel_for(kernel, shape.m, shape.n, shape.k, ctx.device["sm_count"])
            partner = ("headline", step, prepares[kernel]) if bid != kernel else None
            return steps[bid], prepares[bid], shape, partner

        cells = [(f"{model} {projection} {m}×{n}×{k}", {"model": model, "projection": projection}, Shape(m, n, k))
                 for model, projection, n, k in PROJECTIONS for m in MS]
        rows, wrong = sweep.measure_all(ctx, cells, pick)
        return {"params": {"kernels": list(steps), "rule": rule,
                           "layout": step.layout, "precision": step.precision, "ms": list(MS),
                           "projections": [{"model": m, "projection": p, "n": n, "k": k} for m, p, n, k in PROJECTIONS],
                           "tiles": {bid: list(s.tiles) for bid, s in steps.items()},
                           **({"pingpong": {"max_k": catalogue.PINGPONG_MAX_K, "min_waves": catalogue.PINGPONG_MIN_WAVES}}
                              if turns else {}),
                           **{key: value for s in steps.values() for key, value in catalogue.rule_params(s).items()},
                           "cublas": f"{step.precision}, {' and '.join(catalogue.cublas_layouts(step.precision))}, same operands"
                                     + (", same scales" if step.precision == "fp8" else ""),
                           **({"scaling": step.scaling, "output": catalogue.output_of(step.best.tile)}
                              if step.precision == "fp8" else {}),
                           "warm_s": sweep.WARM_S, "timed_s": sweep.TIMED_S},
                "check": {"passed": not wrong, "method": "each cell against a float64 GEMM of its operands",
                          **({"detail": "; ".join(wrong)} if wrong else {})},
                "rows": rows}


for _name in catalogue.ATLASES:
    _register_atlas(_name)
