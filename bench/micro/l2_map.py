"""L2's two partitions, from every SM: the latency of a load that hits L2, from each SM to each of a
set of lines spread over a buffer, one CTA per SM, each line loaded again and again through L1's
bypass (ld.global.cg). A line lives in one partition; the SMs beside it answer sooner than those
across the chip. The record keeps every SM's latency to every line (cycles a load, a row an SM, by SM number);
the deck finds the two levels and which SMs see which lines near. Checked: every chase ends on its
own line, and the CTAs ran on distinct SMs, every one of them."""
from __future__ import annotations

import numpy as np

from ..core.cuda import KERNELS, load_module
from ..gemm.launch import exported
from ..core.registry import register
from ..core.timing import quick

SOURCE = KERNELS / "l2_latency_map.cu"
BUFFER_BYTES = 256 << 20           # the lines' spread: every address bit L2's hash may read
LINES = 32 if quick() else 64
HOPS = 64 if quick() else 256      # loads a line, each waiting for the one before
LINE_SEED = 2027
ONE_CTA_PER_SM_SMEM = 120 << 10    # more than half an SM's shared memory: no two CTAs share one


def line_offsets(count: int = LINES, seed: int = LINE_SEED) -> np.ndarray:
    """Byte offsets of ``count`` distinct 128-byte lines drawn from the buffer, in ascending order."""
    picks = np.random.default_rng(seed).choice(BUFFER_BYTES // 128, size=count, replace=False)
    return np.sort(picks).astype(np.int64) * 128


@register("l2.latency_map", sources=(str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py"),
          builds=((SOURCE, {}),), title="L2 latency from every SM to each line: the near and far partition",
          timeout_s=120)
def latency_map(ctx) -> dict:
    import cupy

    module, _ = load_module(SOURCE, ctx.device, {})
    [threads] = exported(module, "CTA_THREADS")
    kernel = module.get_function("latency_map")
    kernel.max_dynamic_shared_size_bytes = ONE_CTA_PER_SM_SMEM
    sms = ctx.device["sm_count"]
    buffer = cupy.empty(BUFFER_BYTES // 8, dtype=cupy.uint64)
    buffer[...] = cupy.uint64(buffer.data.ptr) + 8 * cupy.arange(buffer.size, dtype=cupy.uint64)   # each slot: itself
    offsets = line_offsets()
    lines = cupy.asarray(np.uint64(buffer.data.ptr) + offsets.astype(np.uint64))
    cycles = cupy.zeros((sms, LINES), dtype=cupy.int64)
    smids = cupy.full(sms, -1, dtype=cupy.int32)
    ends = cupy.zeros((sms, LINES), dtype=cupy.uint64)
    for _ in range(2):                                  # the first loads the module
        kernel((sms,), (threads,), (lines, np.int32(LINES), np.int32(HOPS), cycles, smids, ends),
               shared_mem=ONE_CTA_PER_SM_SMEM)
    cupy.cuda.get_current_stream().synchronize()
    wrong = []
    off = int(cupy.count_nonzero(ends != lines[None, :]))
    if off:
        wrong.append(f"{off} of {ends.size} chases ended off their line")
    ran_on = smids.get()
    if sorted(ran_on.tolist()) != list(range(sms)):
        wrong.append(f"the CTAs ran on {len(set(ran_on.tolist()))} distinct SMs of {sms}")
    per_load = cycles.get() / HOPS
    rows = sorted(({"sm": int(sm), "cycles": [round(float(v), 1) for v in per_load[cta]]} for cta, sm in enumerate(ran_on)),
                  key=lambda r: r["sm"])
    ctx.progress(f"L2 latency from {sms} SMs to {LINES} lines: {per_load.min():.0f} to {per_load.max():.0f} "
                 f"cycles a load, median {np.median(per_load):.0f}")
    return {"params": {"buffer_bytes": BUFFER_BYTES, "lines": LINES, "hops": HOPS, "line_seed": LINE_SEED,
                       "line_offsets": offsets.tolist(), "threads": threads, "smem_bytes": ONE_CTA_PER_SM_SMEM,
                       "load": "ld.global.cg.u64, each address the value the load before returned"},
            "check": {"passed": not wrong, "method": "every chase ends on its own line (each slot holds its own address); "
                                                    "the CTAs ran on distinct SMs, all of them",
                      **({"detail": "; ".join(wrong)} if wrong else {})},
            "rows": rows}
