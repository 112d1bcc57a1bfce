"""HBM bandwidth scaling: a 16-byte-access copy on 1 thread, 1 warp, 1 SM, ...,
all SMs, beside cudaMemcpy device-to-device, in one run. Bytes are counted as
read plus written."""
from __future__ import annotations

from .cuda import KERNELS, load_kernel
from .registry import register
from .timing import l2_flusher, time_gpu

SOURCE = KERNELS / "hbm_copy.cu"
BUFFER_BYTES = 256 << 20      # the copy's source (and destination) size, far above any L2
UNROLL = 4                    # independent 16-byte loads in flight per thread
THREADS_PER_BLOCK = 1024
SM_COUNTS = (1, 8, 32, 64)    # plus every SM, and every SM at full occupancy
TARGET_MS = 20.0              # a small configuration copies a window sized to run about this long
MIN_WINDOW_BYTES = 1 << 20
REPS = 10


def configurations(device: dict) -> list[dict]:
    per_sm = max(1, device["max_threads_per_sm"] // THREADS_PER_BLOCK)
    rows = [{"label": "1 thread", "sms": 1, "blocks": 1, "threads": 1},
            {"label": "1 warp", "sms": 1, "blocks": 1, "threads": 32}]
    rows += [{"label": f"{n} SM" + ("s" if n > 1 else ""), "sms": n, "blocks": n, "threads": THREADS_PER_BLOCK}
             for n in SM_COUNTS if n < device["sm_count"]]
    rows.append({"label": "all SMs", "sms": device["sm_count"], "blocks": device["sm_count"],
                 "threads": THREADS_PER_BLOCK})
    if per_sm > 1:
        rows.append({"label": f"all SMs, {per_sm} blocks/SM", "sms": device["sm_count"],
                     "blocks": device["sm_count"] * per_sm, "threads": THREADS_PER_BLOCK})
    return rows


@register("hbm.copy_scaling", sources=[str(SOURCE.relative_to(KERNELS.parent))],
          title="HBM copy bandwidth vs SMs", timeout_s=600)
def copy_scaling(ctx) -> dict:
    import cupy

    kernel = load_kernel(SOURCE, "copy_f4", ctx.device, {"UNROLL": UNROLL})
    rng = cupy.random.default_rng(1234)
    src = rng.standard_normal(BUFFER_BYTES // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    flush = l2_flusher(ctx.device["l2_bytes"])
    rows, failures = [], []

    def copy_window(cfg, nbytes, sm_of_block):
        n16 = nbytes // 16
        kernel((cfg["blocks"],), (cfg["threads"],), (src, dst, cupy.int64(n16), sm_of_block))

    def checked(label, nbytes, run):
        """Poison the destination, run once, compare byte for byte."""
        dst.view(cupy.uint32).fill(0xFFFFFFFF)   # NaN in every float
        run()
        ok = bool(cupy.array_equal(dst[: nbytes // 4].view(cupy.uint32), src[: nbytes // 4].view(cupy.uint32)))
        if not ok:
            failures.append(label)
        return ok

    for cfg in configurations(ctx.device):
        sm_of_block = cupy.zeros(cfg["blocks"], dtype=cupy.uint32)
        # Size the window from a short probe so that slow configurations stay short.
        probe = time_gpu(lambda: copy_window(cfg, MIN_WINDOW_BYTES, sm_of_block), warmup=1, reps=1, before_each=flush)
        per_ms = MIN_WINDOW_BYTES / probe["median"]
        nbytes = int(min(BUFFER_BYTES, max(MIN_WINDOW_BYTES, per_ms * TARGET_MS))) // MIN_WINDOW_BYTES * MIN_WINDOW_BYTES
        passed = checked(cfg["label"], nbytes, lambda: copy_window(cfg, nbytes, sm_of_block))
        t = time_gpu(lambda: copy_window(cfg, nbytes, sm_of_block), warmup=2, reps=REPS, before_each=flush)
        rows.append({**cfg, "bytes": nbytes, "sms_used": int(cupy.unique(sm_of_block).size),
                     "check_passed": passed, "time_ms": t, "gbps": 2 * nbytes / t["median"] / 1e6})
        ctx.progress(f"{cfg['label']:>24s}: {rows[-1]['gbps']:9.1f} GB/s over {nbytes >> 20} MiB")

    def memcpy():
        cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, BUFFER_BYTES,
                                      cupy.cuda.runtime.memcpyDeviceToDevice,
                                      cupy.cuda.get_current_stream().ptr)
    passed = checked("cudaMemcpy", BUFFER_BYTES, memcpy)
    t = time_gpu(memcpy, warmup=2, reps=REPS * 2, before_each=flush)
    memcpy_row = {"label": "cudaMemcpy D2D", "bytes": BUFFER_BYTES, "check_passed": passed,
                  "time_ms": t, "gbps": 2 * BUFFER_BYTES / t["median"] / 1e6}
    ctx.progress(f"{'cudaMemcpy':>24s}: {memcpy_row['gbps']:9.1f} GB/s")

    best = max(rows, key=lambda r: r["gbps"])
    return {
        "params": {"buffer_bytes": BUFFER_BYTES, "unroll": UNROLL, "bytes_per_access": 16,
                   "threads_per_block": THREADS_PER_BLOCK, "reps": REPS, "target_ms": TARGET_MS,
                   "l2_flushed": True, "bytes_counted": "read + written"},
        "check": {"passed": not failures, "method": "destination poisoned with NaN, compared bit for bit",
                  **({"detail": "copy differs for " + ", ".join(failures)} if failures else {})},
        "rows": rows,
        "memcpy": memcpy_row,
        "gbps": best["gbps"],
    }
