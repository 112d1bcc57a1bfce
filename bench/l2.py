"""L2 bandwidth scaling: a working set that fits comfortably in L2, read (and
copied) with loads and stores that bypass L1, from 1 SM up to every SM and
over-subscribed. Read-only counts the bytes read; copy counts read + written."""
from __future__ import annotations

import numpy as np

from .cuda import KERNELS, load_kernel
from .registry import register
from .timing import time_gpu

SOURCE = KERNELS / "l2_bandwidth.cu"
READ_BYTES = 16 << 20        # the read-only working set
COPY_BYTES = 8 << 20         # copy: source and destination, 16 MiB together
UNROLL = 4
SM_COUNTS = (1, 2, 4, 8, 16, 32, 64)
OVERSUBSCRIBED = ((2, 1024), (8, 256), (32, 256))   # (blocks per SM, threads): more warps, then queued waves
TARGET_MS = 5.0
REPS = 20


def configurations(device: dict) -> list[dict]:
    sms = device["sm_count"]
    rows = [{"label": f"{n} SM" + ("s" if n > 1 else ""), "sms": n, "blocks": n, "threads": 1024}
            for n in SM_COUNTS if n < sms]
    rows.append({"label": "all SMs", "sms": sms, "blocks": sms, "threads": 1024})
    rows += [{"label": f"all SMs, {per} blocks/SM × {threads}", "sms": sms, "blocks": sms * per, "threads": threads}
             for per, threads in OVERSUBSCRIBED]
    return rows


@register("l2.bandwidth_scaling", sources=[str(SOURCE.relative_to(KERNELS.parent)), "bench/cuda.py"],
          builds=((SOURCE, {"UNROLL": UNROLL}),), title="L2 bandwidth vs SMs", timeout_s=600)
def bandwidth_scaling(ctx) -> dict:
    import cupy

    defines = {"UNROLL": UNROLL}
    read = load_kernel(SOURCE, "l2_read", ctx.device, defines)
    copy = load_kernel(SOURCE, "l2_copy", ctx.device, defines)
    rng = cupy.random.default_rng(11)
    src = rng.random(READ_BYTES // 4, dtype=cupy.float32)         # positive: the sums are well conditioned
    csrc = rng.random(COPY_BYTES // 4, dtype=cupy.float32)
    cdst = cupy.empty_like(csrc)
    expected_sum = float(src.astype(cupy.float64).sum())
    rows, wrong = [], []

    for cfg in configurations(ctx.device):
        sums = cupy.full(cfg["blocks"] * cfg["threads"], cupy.nan, dtype=cupy.float32)
        grid, block = (cfg["blocks"],), (cfg["threads"],)
        run_read = lambda passes: read(grid, block, (src, np.int64(READ_BYTES // 16), np.int32(passes), sums))
        run_copy = lambda passes: copy(grid, block, (csrc, cdst, np.int64(COPY_BYTES // 16), np.int32(passes)))
        row = dict(cfg)
        for kind, run, nbytes, counted in (("read", run_read, READ_BYTES, 1), ("copy", run_copy, COPY_BYTES, 2)):
            if kind == "copy":
                cdst.fill(cupy.nan)
            run(1)
            if kind == "read":
                got = float(sums.astype(cupy.float64).sum())
                if not abs(got - expected_sum) <= 1e-4 * expected_sum:
                    wrong.append(f"read on {cfg['label']}: sum {got} vs {expected_sum}")
            elif not bool(cupy.array_equal(cdst, csrc)):
                wrong.append(f"copy on {cfg['label']}")
            probe = time_gpu(lambda: run(1), warmup=1, reps=3)
            passes = int(max(1, min(100000, TARGET_MS / probe["median"])))
            t = time_gpu(lambda: run(passes), warmup=2, reps=REPS)
            row[kind] = {"passes": passes, "time_ms": t,
                         "gbps": counted * nbytes * passes / t["median"] / 1e6}
        rows.append(row)
        ctx.progress(f"{cfg['label']:>28s}: read {row['read']['gbps']:8.1f} GB/s, copy {row['copy']['gbps']:8.1f} GB/s")
    return {
        "params": {"read_bytes": READ_BYTES, "copy_bytes": COPY_BYTES, "unroll": UNROLL, "bytes_per_access": 16,
                   "loads": "ld.global.cg / st.global.cg (bypass L1)", "reps": REPS,
                   "bytes_counted": {"read": "bytes read", "copy": "bytes read + bytes written"}},
        "check": {"passed": not wrong, "method": "read: the threads' sums add up to the float64 sum of the data "
                  "(relative 1e-4); copy: destination poisoned with NaN, compared bit for bit",
                  **({"detail": "; ".join(wrong)} if wrong else {})},
        "rows": rows,
        "gbps": max(r["read"]["gbps"] for r in rows),
    }
