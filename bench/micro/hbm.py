"""HBM bandwidth scaling: a 16-byte-access copy on 1 thread, 1 warp, 1 SM, ...,
all SMs, beside cudaMemcpy device-to-device, in one run. Bytes are counted as
read plus written.

Method: repeated copies in steady state, so the dirty lines each copy leaves in
L2 are written back during the next one, as in any long stream. A configuration
too slow to copy the whole buffer in TARGET_MS copies a window of it instead,
and successive repetitions walk through the buffer, so no repetition finds its
data in L2. (Flushing L2 before each repetition would not do: the flush writes
the previous copy's dirty lines back outside the timed region and leaves this
copy's last L2-full of writes unwritten, flattering every row.)"""
from __future__ import annotations

import itertools

from ..core.cuda import KERNELS, load_kernel
from ..core.registry import register
from ..core.timing import quick, time_gpu

SOURCE = KERNELS / "hbm_copy.cu"
BUFFER_BYTES = 256 << 20      # the copy's source (and destination) size, far above any L2
UNROLL = 4                    # 16-byte loads in flight per thread in the SM-limited rows
THREADS_PER_BLOCK = 1024
SM_COUNTS = (1, 8, 32, 64)    # then every SM: one block each, and one block per tile
TARGET_MS = 20.0              # a window is sized to take about this long
MIN_WINDOW_BYTES = 1 << 20
REPS = 10 if quick() else 50


def configurations(device: dict) -> list[dict]:
    """Rows of the scaling table. Up to "all SMs, 1 block/SM" the grid holds one
    block per SM (the block scheduler spreads them over distinct SMs; the run
    records how many it used) and blocks loop over tiles; the last row launches
    one block per tile and lets the hardware keep every SM full."""
    rows = [{"label": "1 thread", "sms": 1, "blocks": 1, "threads": 1, "unroll": UNROLL},
            {"label": "1 warp", "sms": 1, "blocks": 1, "threads": 32, "unroll": UNROLL}]
    rows += [{"label": f"{n} SM" + ("s" if n > 1 else ""), "sms": n, "blocks": n,
              "threads": THREADS_PER_BLOCK, "unroll": UNROLL} for n in SM_COUNTS if n < device["sm_count"]]
    rows.append({"label": "all SMs, 1 block/SM", "sms": device["sm_count"], "blocks": device["sm_count"],
                 "threads": THREADS_PER_BLOCK, "unroll": UNROLL})
    tile_bytes = THREADS_PER_BLOCK * 16   # one vector per thread: each block is short-lived
    rows.append({"label": "all SMs, 1 block/tile", "sms": device["sm_count"],
                 "blocks": BUFFER_BYTES // tile_bytes, "threads": THREADS_PER_BLOCK, "unroll": 1})
    return rows


def window_bytes(bytes_per_ms: float) -> int:
    """The buffer, or the largest power-of-two fraction of it copied in TARGET_MS."""
    nbytes = BUFFER_BYTES
    while nbytes > MIN_WINDOW_BYTES and nbytes > bytes_per_ms * TARGET_MS:
        nbytes //= 2
    return nbytes


@register("hbm.copy_scaling", sources=[str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py"],
          title="HBM copy bandwidth vs SMs", timeout_s=600)
def copy_scaling(ctx) -> dict:
    import cupy

    rng = cupy.random.default_rng(1234)
    src = rng.standard_normal(BUFFER_BYTES // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    rows, failures = [], []

    def checked(label, nbytes, run):
        """Poison the destination, run once, compare bit for bit."""
        dst.view(cupy.uint32).fill(0xFFFFFFFF)   # NaN in every float
        run()
        words = nbytes // 4
        if not bool(cupy.array_equal(dst[:words].view(cupy.uint32), src[:words].view(cupy.uint32))):
            failures.append(label)
            return False
        return True

    for cfg in configurations(ctx.device):
        kernel = load_kernel(SOURCE, "copy_f4", ctx.device, {"UNROLL": cfg["unroll"]})
        sm_of_block = cupy.zeros(cfg["blocks"], dtype=cupy.uint32)

        def copy(offset, nbytes):
            kernel((cfg["blocks"],), (cfg["threads"],),
                   (src[offset // 4:], dst[offset // 4:], cupy.int64(nbytes // 16), sm_of_block))

        probe = time_gpu(lambda: copy(0, MIN_WINDOW_BYTES), warmup=1, reps=3)
        nbytes = window_bytes(MIN_WINDOW_BYTES / probe["median"])
        offsets = itertools.cycle(range(0, BUFFER_BYTES, nbytes))
        passed = checked(cfg["label"], nbytes, lambda: copy(0, nbytes))
        t = time_gpu(lambda: copy(next(offsets), nbytes), warmup=3, reps=REPS)
        rows.append({**cfg, "bytes": nbytes, "sms_used": int(cupy.unique(sm_of_block).size),
                     "check_passed": passed, "time_ms": t, "gbps": 2 * nbytes / t["median"] / 1e6})
        ctx.progress(f"{cfg['label']:>22s}: {rows[-1]['gbps']:8.1f} GB/s, {nbytes >> 20} MiB windows, "
                     f"{rows[-1]['sms_used']} SMs used")

    def memcpy():
        cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, BUFFER_BYTES,
                                      cupy.cuda.runtime.memcpyDeviceToDevice,
                                      cupy.cuda.get_current_stream().ptr)
    passed = checked("cudaMemcpy", BUFFER_BYTES, memcpy)
    t = time_gpu(memcpy, warmup=3, reps=REPS)
    memcpy_row = {"label": "cudaMemcpy D2D", "bytes": BUFFER_BYTES, "check_passed": passed,
                  "time_ms": t, "gbps": 2 * BUFFER_BYTES / t["median"] / 1e6}
    ctx.progress(f"{'cudaMemcpy':>22s}: {memcpy_row['gbps']:8.1f} GB/s")

    return {
        "params": {"buffer_bytes": BUFFER_BYTES, "bytes_per_access": 16, "reps": REPS,
                   "target_ms": TARGET_MS, "bytes_counted": "read + written",
                   "cache": "steady state; windows rotate through the buffer"},
        "check": {"passed": not failures, "method": "destination poisoned with NaN, compared bit for bit",
                  **({"detail": "copy differs for " + ", ".join(failures)} if failures else {})},
        "rows": rows,
        "memcpy": memcpy_row,
        "gbps": max(r["gbps"] for r in rows),
    }
