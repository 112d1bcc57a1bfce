"""L2 bandwidth scaling: a working set that fits comfortably in L2, read (and
copied) with loads and stores that bypass L1, from 1 SM up to every SM and
over-subscribed. Read-only counts the bytes read; copy counts read + written."""
from __future__ import annotations

import numpy as np

from ..core.cuda import KERNELS, load_kernel
from ..core.registry import register
from ..core.timing import time_gpu

SOURCE = KERNELS / "l2_bandwidth.cu"
READ_BYTES = 16 << 20        # the read-only working set
COPY_BYTES = 8 << 20         # copy: source and destination, 16 MiB together
UNROLL = 4
SM_COUNTS = (1, 2, 4, 8, 16, 32, 64)
PLACED = (4, 8, 16)          # SM counts read on the SMs the block scheduler picks, and on SMs spread apart
ONE_BLOCK_AN_SM_SMEM = 120 << 10   # more than half an SM's shared memory: no SM runs two blocks
WORKING_SETS = tuple(1 << e for e in range(20, 29))   # 1 MiB to 256 MiB: from inside L2 to well past it
SWEEP_THREADS = 256          # a block's threads in the working-set sweep, whose grid is all resident at once:
                             # blocks queued behind others would each reread their own share, a quarter of the set
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


def rate(run, nbytes: int) -> dict:
    """GB/s of ``run(passes)``, which moves ``nbytes`` a pass, with as many passes as fill TARGET_MS."""
    probe = time_gpu(lambda: run(1), warmup=1, reps=3)
    passes = int(max(1, min(100000, TARGET_MS / probe["median"])))
    t = time_gpu(lambda: run(passes), warmup=2, reps=REPS)
    return {"passes": passes, "time_ms": t, "gbps": nbytes * passes / t["median"] / 1e6}


@register("l2.bandwidth_scaling", sources=[str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py"],
          builds=((SOURCE, {"UNROLL": UNROLL}),), title="L2 bandwidth vs SMs", timeout_s=600)
def bandwidth_scaling(ctx) -> dict:
    import cupy

    defines = {"UNROLL": UNROLL}
    read = load_kernel(SOURCE, "l2_read", ctx.device, defines)
    copy = load_kernel(SOURCE, "l2_copy", ctx.device, defines)
    for kernel in (read, copy):
        kernel.max_dynamic_shared_size_bytes = ONE_BLOCK_AN_SM_SMEM
    rng = cupy.random.default_rng(11)
    src = rng.random(READ_BYTES // 4, dtype=cupy.float32)         # positive: the sums are well conditioned
    csrc = rng.random(COPY_BYTES // 4, dtype=cupy.float32)
    cdst = cupy.empty_like(csrc)
    expected_sum = float(src.astype(cupy.float64).sum())
    rows, wrong = [], []

    for cfg in configurations(ctx.device):
        sums = cupy.full(cfg["blocks"] * cfg["threads"], cupy.nan, dtype=cupy.float32)
        ran_on = cupy.full(cfg["blocks"], -1, dtype=cupy.int32)
        grid, block = (cfg["blocks"],), (cfg["threads"],)
        # a block an SM: shared memory no two blocks fit beside, so that n blocks are n SMs
        smem = ONE_BLOCK_AN_SM_SMEM if cfg["blocks"] == cfg["sms"] else 0
        run_read = lambda passes: read(grid, block, (src, np.int64(READ_BYTES // 16), np.int32(passes), sums, ran_on),
                                       shared_mem=smem)
        run_copy = lambda passes: copy(grid, block, (csrc, cdst, np.int64(COPY_BYTES // 16), np.int32(passes)),
                                       shared_mem=smem)
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
            row[kind] = rate(run, counted * nbytes)
        row["sms_used"] = int(cupy.unique(ran_on).size)
        if row["sms_used"] != cfg["sms"]:
            wrong.append(f"{cfg['label']}: the read's blocks ran on {row['sms_used']} SMs")
        rows.append(row)
        ctx.progress(f"{cfg['label']:>28s}: read {row['read']['gbps']:8.1f} GB/s, copy {row['copy']['gbps']:8.1f} GB/s")
    return {
        "params": {"read_bytes": READ_BYTES, "copy_bytes": COPY_BYTES, "unroll": UNROLL, "bytes_per_access": 16,
                   "loads": "ld.global.cg / st.global.cg (bypass L1)", "reps": REPS,
                   "bytes_counted": {"read": "bytes read", "copy": "bytes read + bytes written"}},
        "check": {"passed": not wrong, "method": "read: the threads' sums add up to the float64 sum of the data "
                  "(relative 1e-4); copy: destination poisoned with NaN, compared bit for bit; the read's blocks ran on "
                  "as many SMs as the row says, one block an SM where blocks and SMs are as many",
                  **({"detail": "; ".join(wrong)} if wrong else {})},
        "rows": rows,
        "gbps": max(r["read"]["gbps"] for r in rows),
    }


def spread(sms: int, n: int) -> list[int]:
    """``n`` SM numbers evenly apart over ``sms``."""
    return sorted({i * sms // n for i in range(n)})


def mask(chosen, sms: int) -> np.ndarray:
    """A bit per SM, 32 to a word, set for the chosen."""
    words = np.zeros(-(-sms // 32), dtype=np.uint32)
    for sm in chosen:
        words[sm // 32] |= np.uint32(1 << (sm % 32))
    return words


@register("l2.placement", sources=[str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py"],
          builds=((SOURCE, {"UNROLL": UNROLL}),), title="L2 bandwidth: where the SMs are, and the working set",
          timeout_s=300)
def placement(ctx) -> dict:
    """The same L2 read on n SMs (n in PLACED) where a grid of n blocks lands, against n SMs spread
    over the chip's SM numbers (consecutive numbers share a GPC): whether a count's rate is its SMs'
    or their place. Then the read's rate against its working set, as many blocks as the SMs hold at
    once, from inside L2 to five times past it."""
    import cupy

    defines = {"UNROLL": UNROLL}
    read = load_kernel(SOURCE, "l2_read", ctx.device, defines)
    read_on = load_kernel(SOURCE, "l2_read_on", ctx.device, defines)
    read_on.max_dynamic_shared_size_bytes = ONE_BLOCK_AN_SM_SMEM
    where = load_kernel(SOURCE, "where_blocks_run", ctx.device, defines)
    where.max_dynamic_shared_size_bytes = ONE_BLOCK_AN_SM_SMEM
    sms = ctx.device["sm_count"]
    rng = cupy.random.default_rng(11)
    src = rng.random(max(WORKING_SETS) // 4, dtype=cupy.float32)
    ran_on = cupy.full(sms, -1, dtype=cupy.int32)
    rows, wrong = [], []

    def read_placed(chosen: list[int], label: str) -> dict:
        words = cupy.asarray(mask(chosen, sms))
        sums = cupy.full(len(chosen) * 1024, cupy.nan, dtype=cupy.float32)
        n16 = READ_BYTES // 16
        run = lambda passes: read_on((sms,), (1024,), (src, np.int64(n16), np.int32(passes), sums, words,
                                                      np.int32(words.size), ran_on), shared_mem=ONE_BLOCK_AN_SM_SMEM)
        run(1)
        expected = float(src[:READ_BYTES // 4].astype(cupy.float64).sum())
        got = float(sums.astype(cupy.float64).sum())
        if not abs(got - expected) <= 1e-4 * expected:
            wrong.append(f"{label}: sum {got} vs {expected}")
        if sorted(ran_on.get().tolist()) != list(range(sms)):
            wrong.append(f"{label}: the blocks did not run one on every SM")
        return rate(run, READ_BYTES)

    for n in PLACED:
        scheduled = cupy.full(n, -1, dtype=cupy.int32)
        where((n,), (1024,), (scheduled,), shared_mem=ONE_BLOCK_AN_SM_SMEM)    # as the read's blocks: one an SM
        picked = sorted(set(scheduled.get().tolist()))
        if len(picked) != n or not all(0 <= sm < sms for sm in picked):
            wrong.append(f"{n} blocks landed on SMs {picked}, not {n} distinct SMs of 0..{sms - 1}")
        row = {"sms": n, "scheduled_sms": picked, "spread_sms": spread(sms, n)}
        row["scheduled"] = read_placed(picked, f"{n} SMs where the scheduler puts {n} blocks")
        row["spread"] = read_placed(row["spread_sms"], f"{n} SMs spread apart")
        rows.append(row)
        ctx.progress(f"{n:3d} SMs: where {n} blocks land (SMs {picked[:4]}...) {row['scheduled']['gbps']:7.0f} GB/s, "
                     f"spread apart {row['spread']['gbps']:7.0f} GB/s")

    from cuda.bindings import driver as cu
    threads = SWEEP_THREADS
    err, per_sm = cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(cu.CUfunction(read.kernel.ptr), threads, 0)
    if err != cu.CUresult.CUDA_SUCCESS or per_sm < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed ({err.name}, {per_sm} blocks)")
    blocks = sms * per_sm
    swept_on = cupy.full(blocks, -1, dtype=cupy.int32)
    sweep = []
    for nbytes in WORKING_SETS:
        sums = cupy.full(blocks * threads, cupy.nan, dtype=cupy.float32)
        run = lambda passes: read((blocks,), (threads,), (src, np.int64(nbytes // 16), np.int32(passes), sums, swept_on))
        run(1)
        expected = float(src[:nbytes // 4].astype(cupy.float64).sum())
        got = float(sums.astype(cupy.float64).sum())
        if not abs(got - expected) <= 1e-4 * expected:
            wrong.append(f"working set {nbytes}: sum {got} vs {expected}")
        sweep.append({"bytes": nbytes, **rate(run, nbytes)})
        ctx.progress(f"working set {nbytes >> 20:4d} MiB: {sweep[-1]['gbps']:7.0f} GB/s")
    return {"params": {"read_bytes": READ_BYTES, "placed": list(PLACED), "threads": 1024,
                       "smem_bytes": ONE_BLOCK_AN_SM_SMEM, "sweep_blocks": blocks, "sweep_threads": threads,
                       "loads": "ld.global.cg (bypass L1)", "reps": REPS},
            "check": {"passed": not wrong, "method": "the threads' sums add up to the float64 sum of what they read "
                      "(relative 1e-4); the placed reads ran one block on every SM, "
                      "and a grid of n blocks landed on n distinct SMs",
                      **({"detail": "; ".join(wrong[:5])} if wrong else {})},
            "rows": rows, "sweep": sweep}
