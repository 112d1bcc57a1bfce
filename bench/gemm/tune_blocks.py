"""The block-scaled kernel's constants, each changed alone (KNOBS), against the catalogue's pick at
the reference shape: each knob and the pick checked, then timed in turns, a pair at a time
(trial.measure, the GEMM family's timer), so that each knob's cost or gain is a measured pair with
its interval. What the talk says of the techniques that did not close the gap to DeepGEMM, where
they are constants; those that are code are in the catalogue's comments beside the kernel's tile.
All seven in one set of turns (H200, 2026-12-01) read each knob 1-3% faster against the pick than
sets of three had: a sample of seven runs' turns spans half a second, where the power cap moves the clock."""
from __future__ import annotations

from dataclasses import replace

from . import benchmarks, catalogue, launch
from .harness import SHAPE
from .trial import BASE, changed, measure
from ..core import cuda
from ..core.registry import register

STEP, PICK = catalogue.KERNELS[catalogue.BLOCK_SCALED]
# Each knob's changes to the pick's tile. Five stages fit only beside one staging buffer for C, so
# four beside one buffer is the pair that tells the ring's depth from the buffer's.
KNOBS = {
    "3 stages": {"STAGES": 3},
    "5 stages, 1 buffer for C": {"STAGES": 5, "EPILOGUE_BUFFERS": 1},
    "4 stages, 1 buffer for C": {"STAGES": 4, "EPILOGUE_BUFFERS": 1},
    "3 buffers for C": {"EPILOGUE_BUFFERS": 3},
    "bands of 8 tile rows": {"GROUP_M": 8},
    "bands of 32 tile rows": {"GROUP_M": 32},
}


def tiles(sm_count: int) -> dict[str, dict]:
    """The pick's tile at the reference shape (BASE), then each knob's."""
    picked = catalogue.tile_for(STEP, SHAPE.m, SHAPE.n, SHAPE.k, sm_count)
    return {BASE: picked, **{name: changed(picked, changes) for name, changes in KNOBS.items()}}


# the builds the run compiles up front: the tiles at an H100's and an H200's 132 SMs
_BUILDS = tuple(b for tile in tiles(132).values() for b in benchmarks.builds(STEP, replace(PICK, tile=tile)))


@register("tune.fp8_blocks", sources=(*benchmarks.kernel_sources(STEP), "bench/gemm/trial.py", "bench/gemm/sweep.py"),
          kernels=catalogue.definitions(("block_scaled",)), builds=_BUILDS, timeout_s=600,
          title="The block-scaled kernel's constants, each changed, beside its pick", min_cc=STEP.min_cc)
def tune_blocks(ctx) -> dict:
    by_name = tiles(ctx.device["sm_count"])
    cuda.compile_all([(STEP.source, tile) for tile in by_name.values()], cuda.arch_of(ctx.device["compute_capability"]))
    pairs = {}
    for name in KNOBS:
        row = measure(STEP, SHAPE, {BASE: by_name[BASE], name: by_name[name]}, ctx.device, with_cublas=False)
        pairs[name] = {"pick": row["runs"][BASE], "knob": row["runs"][name]}
        ctx.progress(f"{name}: {row['runs'][name]['tflops']:.1f} TFLOPS beside the pick's {row['runs'][BASE]['tflops']:.1f}, "
                     f"time over the pick's {row['runs'][name]['over_base']['median']:.3f}")
    # the pick names no depth (the deepest ring that fits): the one its build holds
    stages = launch.build(STEP, replace(PICK, tile=by_name[BASE]), ctx.device).tile["STAGES"]
    wrong = [name for name, pair in pairs.items() if not pair["knob"]["check"]["passed"]] + \
            ([BASE] if not all(pair["pick"]["check"]["passed"] for pair in pairs.values()) else [])
    return {"params": {"kernel": PICK.id, "shape": SHAPE.dims, "knobs": KNOBS, "pick_stages": stages,
                       "timing": "in turns, each knob with the pick alone"},
            "check": {"passed": not wrong, **({"detail": f"failed its check: {', '.join(wrong)}"} if wrong else {})},
            "shape": SHAPE.dims, "tiles": by_name, "pairs": pairs}
