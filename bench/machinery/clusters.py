"""Clusters alone, beside the steps that bring in thread-block clusters (bench/machinery/wgmma.py holds
the wgmma's): for clusters of 2, 4 and 8 CTAs (one CTA per SM), a load's latency from the CTA's own
shared memory and from the next CTA's (a chase through a random ring, one thread), the bytes per SM
per clock each path streams (every thread of every SM reading), and the cycles of a barrier: the
CTA's, the cluster's with its memory ordered, the cluster's relaxed, and an mbarrier signal to a
peer and back. Then setmaxnreg, as the warp-specialized steps use it (kernels/register_trade.cu):
the producer's registers handed to the consumers once, and given and taken back in a row. Checked
before it is timed: each chase ends where the host's does, each thread's sum of what it read is the
host's, and the register trade's SASS holds both setmaxnreg forms at the count it starts from."""
from __future__ import annotations

import numpy as np

from ..gemm import catalogue
from ..gemm.catalogue import HOPPER
from ..core.cuda import KERNELS, load_module
from ..gemm.launch import exported
from ..core.registry import register
from ..core.sass import disassemble
from ..core.timing import quick, time_gpu

SOURCE = KERNELS / "cluster_rate.cu"
TRADE_SOURCE = KERNELS / "register_trade.cu"
TRADE_TILE = catalogue.KERNELS[catalogue.HEADLINE][1].tile     # the warpgroups and registers of the headline
TRADES = 256 if quick() else 4096      # setmaxnreg round trips in a row
SETMAXNREG_SASS = ("USETMAXREG.DEALLOC", "USETMAXREG.TRY_ALLOC")   # setmaxnreg.dec and .inc (a retried allocation)
CLUSTERS = (2, 4, 8)
HOPS = 2048 if quick() else 16384      # the chase's dependent loads
PASSES = 64 if quick() else 1024       # reads of the whole buffer by every thread of a CTA
MEETINGS = 512 if quick() else 4096    # barriers in a row; signal round trips
RING_SEED = 2026
REPS = 5 if quick() else 10            # timed launches of each stream


def ring(words: int, seed: int = RING_SEED) -> np.ndarray:
    """A ring through every index in a random order: ring[j] is the index after j."""
    order = np.random.default_rng(seed).permutation(words).astype(np.uint32)
    nxt = np.empty(words, dtype=np.uint32)
    nxt[order] = np.roll(order, -1)
    return nxt


def chase_end(nxt: np.ndarray, hops: int) -> int:
    """Where a chase from index 0 ends after ``hops`` steps (the ring is one cycle through all)."""
    j = 0
    for _ in range(hops % len(nxt)):
        j = int(nxt[j])
    return j


def stream_sums(words: np.ndarray, threads: int, passes: int) -> np.ndarray:
    """Each thread's sum (modulo 2^32) after reading its 16-byte vectors of ``words`` ``passes`` times."""
    vectors = words.astype(np.uint64).reshape(-1, 4).sum(axis=1)
    per_thread = vectors.reshape(-1, threads).sum(axis=0)
    return ((per_thread * passes) % 2**32).astype(np.uint32)


def register_trade(ctx, wrong: list) -> dict:
    """setmaxnreg on every SM, one CTA each, with the headline step's warpgroups: the hand-over's
    cycles per warpgroup (the consumers wait for the producer's release) and a round trip's."""
    import cupy
    module, cubin = load_module(TRADE_SOURCE, ctx.device, TRADE_TILE)
    [warpgroups] = exported(module, "CTA_WARPGROUPS")
    entry, producer, consumer = exported(module, "REGS", 3)
    sms = ctx.device["sm_count"]
    found = {name: sorted({i.opcode for i in instructions if i.mnemonic == "USETMAXREG"})
             for name, instructions in disassemble(cubin).items()}
    cycles = {}
    for name, args in (("hand_over", ()), ("round_trip", (np.int32(TRADES),))):
        f = module.get_function(name)
        if f.num_regs != entry:
            wrong.append(f"{name}: launched with {f.num_regs} registers a thread, not the {entry} its setmaxnreg assumes")
        if not all(any(op.startswith(form) for op in found.get(name, [])) for form in SETMAXNREG_SASS):
            wrong.append(f"{name}: SASS holds {found.get(name) or 'no USETMAXREG'}, not both setmaxnreg forms")
        clocks = cupy.zeros(sms * warpgroups, dtype=cupy.int64)
        for _ in range(2):                                          # the first launch loads the module
            f((sms,), (128 * warpgroups,), (*args, clocks))
        per_wg = clocks.get().reshape(sms, warpgroups).astype(float)
        if not (per_wg > 0).all():
            wrong.append(f"{name}: {int((per_wg <= 0).sum())} warpgroups recorded no cycles")
        cycles[name] = per_wg / (TRADES if args else 1)
    hand = cycles["hand_over"]
    return {"regs": {"entry": entry, "producer": producer, "consumer": consumer}, "warpgroups": warpgroups,
            "sass": found, "round_trips": TRADES,
            "hand_over_cycles": {"producer": float(np.median(hand[:, 0])), "consumers": float(np.median(hand[:, 1:])),
                                 "consumers_slowest": float(hand[:, 1:].max())},
            "round_trip_cycles": float(np.median(cycles["round_trip"]))}


@register("machinery.cluster", sources=(str(SOURCE.relative_to(KERNELS.parent)), str(TRADE_SOURCE.relative_to(KERNELS.parent)),
                                        "kernels/gemm_sm90_tiles.cuh", "bench/core/cuda.py", "bench/gemm/launch.py", "bench/core/sass.py"),
          builds=tuple((SOURCE, {"CLUSTER": c}) for c in CLUSTERS) + ((TRADE_SOURCE, TRADE_TILE),),
          title="clusters alone: a peer's shared memory and the cluster's barriers", timeout_s=300, min_cc=HOPPER)
def cluster(ctx) -> dict:
    import cupy

    from ..gemm.launch import resident_ctas
    rows, wrong = [], []
    for size in CLUSTERS:
        module, _ = load_module(SOURCE, ctx.device, {"CLUSTER": size})
        [words_n] = exported(module, "BUFFER_WORDS")
        [threads] = exported(module, "CTA_THREADS")
        nxt = ring(words_n)
        words = cupy.asarray(nxt)
        smem = 4 * words_n
        names = ("chase_own", "chase_peer", "stream_own", "stream_peer", "meet_cta", "meet_cluster",
                 "meet_cluster_relaxed", "signal_peer")
        functions = {name: module.get_function(name) for name in names}
        for f in functions.values():
            f.max_dynamic_shared_size_bytes = smem

        def kernel(name):
            return lambda grid, block, args: functions[name](grid, block, args, shared_mem=smem)
        full = resident_ctas(functions["stream_own"], threads, smem, size)   # every SM, one CTA each, in whole clusters

        def cycles(clocks, ctas=None, slowest=False) -> float:
            got = clocks.get()[:ctas]
            got = got[got > 0]
            return float(got.max() if slowest else np.median(got))

        # latency: one cluster; each CTA's thread 0 follows its own ring, then the next CTA's
        expected_end = chase_end(nxt, HOPS)
        chase = {}
        for where in ("own", "peer"):
            ends = cupy.full(size, 0xFFFFFFFF, dtype=cupy.uint32)
            clocks = cupy.zeros(size, dtype=cupy.int64)
            for _ in range(2):                                          # the first launch loads the module
                kernel(f"chase_{where}")((size,), (threads,), (words, np.int32(HOPS), ends, clocks))
            off = int(cupy.count_nonzero(ends != expected_end))
            if off:
                wrong.append(f"cluster {size} chase_{where}: {off} of {size} CTAs ended off the ring's index {expected_end}")
            chase[where] = cycles(clocks) / HOPS

        # bandwidth: every SM; each thread reads its vectors of the whole buffer PASSES times
        expected = cupy.asarray(np.tile(stream_sums(nxt, threads, PASSES), full))
        stream = {}
        for where in ("own", "peer"):
            sums = cupy.zeros(full * threads, dtype=cupy.uint32)
            clocks = cupy.zeros(full, dtype=cupy.int64)
            run = lambda: kernel(f"stream_{where}")((full,), (threads,), (words, np.int32(PASSES), sums, clocks))
            t = time_gpu(run, warmup=2, reps=REPS)
            off = int(cupy.count_nonzero(sums != expected))
            if off:
                wrong.append(f"cluster {size} stream_{where}: {off} of {sums.size} threads' sums are wrong")
            bytes_per_cta = 4 * words_n * PASSES
            # the launch's rate: every CTA's bytes by the time of its slowest (a peer's reads are uneven)
            stream[where] = {"bytes_per_sm_clock": bytes_per_cta / cycles(clocks, slowest=True), "time_ms": t,
                             "tbps": full * bytes_per_cta / (t["median"] * 1e-3) / 1e12}

        # barriers in a row on every SM, and a signal between two CTAs of one cluster
        meet = {}
        for kind in ("cta", "cluster", "cluster_relaxed"):
            clocks = cupy.zeros(full, dtype=cupy.int64)
            for _ in range(2):
                kernel(f"meet_{kind}")((full,), (threads,), (np.int32(MEETINGS), clocks))
            meet[kind] = cycles(clocks) / MEETINGS
        clocks = cupy.zeros(size, dtype=cupy.int64)
        for _ in range(2):
            kernel("signal_peer")((size,), (threads,), (np.int32(MEETINGS), clocks))
        round_trip = cycles(clocks, 1) / MEETINGS
        cupy.cuda.get_current_stream().synchronize()
        rows.append({"cluster": size, "ctas": full, "chase_cycles": chase, "stream": stream,
                     "barrier_cycles": meet, "signal_round_trip_cycles": round_trip})
        ctx.progress(f"clusters of {size}: a load {chase['own']:.0f} cycles own, {chase['peer']:.0f} a peer's; "
                     f"{stream['own']['bytes_per_sm_clock']:.0f} and {stream['peer']['bytes_per_sm_clock']:.0f} B/SM/clock; "
                     f"barrier {meet['cta']:.0f} (CTA), {meet['cluster']:.0f} (cluster), {meet['cluster_relaxed']:.0f} "
                     f"(relaxed) cycles; signal round trip {round_trip:.0f}")
    trade = register_trade(ctx, wrong)
    ctx.progress(f"setmaxnreg: the consumers take {trade['regs']['consumer']} registers in "
                 f"{trade['hand_over_cycles']['consumers']:.0f} cycles; a give-and-take {trade['round_trip_cycles']:.0f}")
    return {"params": {"clusters": list(CLUSTERS), "hops": HOPS, "passes": PASSES, "meetings": MEETINGS, "reps": REPS,
                       "buffer_bytes": 4 * words_n, "threads": threads, "ring_seed": RING_SEED},
            "check": {"passed": not wrong, "method": "each chase ends on the ring's index the host computes; each "
                                                    "thread's sum of what it read equals the host's (modulo 2^32); the "
                                                    "register trade launched with the registers its setmaxnreg assume, "
                                                    "whose SASS holds USETMAXREG's release and allocation",
                      **({"detail": "; ".join(wrong[:5])} if wrong else {})},
            "rows": rows, "setmaxnreg": trade}
