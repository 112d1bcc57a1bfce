"""Matrix transpose of an N x N float matrix: shared-memory tile without and with
padding, 16-byte accesses with padding, and CuTe scalar and vectorized versions;
each checked element for element, reported in GB/s (read + written) beside a
copy of the same bytes in the same run."""
from __future__ import annotations

import numpy as np

from ..core.cuda import KERNELS, load_kernel
from ..core.registry import register
from ..core.timing import time_gpu

PLAIN = KERNELS / "transpose.cu"
CUTE = KERNELS / "transpose_cute.cu"
COPY = KERNELS / "hbm_copy.cu"
N = 32768
REPS = 20
# name -> (source, kernel, tile edge, threads per block (x, y), label, what it shows);
# tile edges and block shapes are the kernels' own constants.
KERNELS_RUN = {
    "smem": (PLAIN, "transpose_smem", 32, (32, 8), "Shared-memory tile", "32×32, no padding"),
    "smem_padded": (PLAIN, "transpose_smem_padded", 32, (32, 8), "Padded tile", "32×33: +1 float per row"),
    "vec4_padded": (PLAIN, "transpose_vec4_padded", 64, (512, 1), "Vectorized, padded", "16-byte accesses, 64×65 tile"),
    "cute": (CUTE, "transpose_cute", 32, (256, 1), "CuTe scalar", "layouts, scalar copies, 32×33 tile"),
    "cute_vec4": (CUTE, "transpose_cute_vec4", 64, (512, 1), "CuTe vectorized", "UniversalCopy<uint128_t>, 64×65 tile"),
}


@register("transpose.all", sources=[str(p.relative_to(KERNELS.parent)) for p in (PLAIN, CUTE, COPY)] + ["bench/core/cuda.py"],
          builds=((PLAIN, None), (CUTE, None), (COPY, {"UNROLL": 1})), title="Matrix transpose", timeout_s=900)
def transpose(ctx) -> dict:
    import cupy

    for _, _, tile, *_ in KERNELS_RUN.values():
        if N % tile:
            raise ValueError(f"N = {N} must be a multiple of the {tile}-element tile")
    nbytes = N * N * 4
    src = cupy.random.default_rng(5).standard_normal((N, N), dtype=cupy.float32)
    dst = cupy.empty_like(src)

    copy_kernel = load_kernel(COPY, "copy_f4", ctx.device, {"UNROLL": 1})
    copy_blocks = nbytes // (1024 * 16)
    sm_of_block = cupy.zeros(copy_blocks, dtype=cupy.uint32)
    copy_t = time_gpu(lambda: copy_kernel((copy_blocks,), (1024,), (src, dst, np.int64(nbytes // 16), sm_of_block)),
                      warmup=2, reps=REPS)
    copy_gbps = 2 * nbytes / copy_t["median"] / 1e6
    ctx.progress(f"copy of the same bytes: {copy_gbps:.1f} GB/s")

    rows, wrong = [], []
    for key, (source, name, tile, threads, label, note) in KERNELS_RUN.items():
        kernel = load_kernel(source, name, ctx.device)
        run = lambda: kernel((N // tile, N // tile), threads, (src, dst, np.int32(N)))
        dst.fill(cupy.nan)
        run()
        passed = bool(cupy.array_equal(dst, src.T))
        if not passed:
            wrong.append(label)
        t = time_gpu(run, warmup=2, reps=REPS)
        gbps = 2 * nbytes / t["median"] / 1e6
        rows.append({"key": key, "label": label, "note": note, "kernel": name, "source": source.name,
                     "tile": tile, "threads": list(threads), "check_passed": passed, "time_ms": t, "gbps": gbps,
                     "pct_of_copy": 100 * gbps / copy_gbps})
        ctx.progress(f"{label:>20s}: {gbps:8.1f} GB/s, {100 * gbps / copy_gbps:5.1f}% of copy, "
                     f"{'ok' if passed else 'WRONG'}")
    return {
        "params": {"n": N, "bytes": nbytes, "reps": REPS, "bytes_counted": "read + written"},
        "check": {"passed": not wrong, "method": "output poisoned with NaN, compared element for element "
                  "with the input's transpose", **({"detail": "wrong: " + ", ".join(wrong)} if wrong else {})},
        "copy": {"time_ms": copy_t, "gbps": copy_gbps, "kernel": "copy_f4, one block per tile"},
        "rows": rows,
        "gbps": max(r["gbps"] for r in rows),
    }
