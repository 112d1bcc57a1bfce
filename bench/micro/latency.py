"""Latency micro-benchmarks, timed with the SM's cycle counter.

Instruction latency: ILP independent chains of one dependent operation in one
warp, OPS_PER_ITER operations per loop iteration; cycles per warp-instruction.
The SASS of every variant is read back and must hold the intended instruction
once per operation (that is the check). With the SM full of warps the same
kernels give the issue rate per sub-partition.

Memory latency: one thread chases pointers through a random cycle of slots one
cache line apart, in shared memory, through L1, through L2 (bypassing L1) and
from HBM (a working set far larger than L2, flushed first); then a sweep of
working-set sizes."""
from __future__ import annotations

import re

import numpy as np

from ..core.cuda import KERNELS, load_kernel, load_module
from ..core.registry import register
from ..core.sass import disassemble, histogram, timed_loop
from ..core.timing import quick

# --- instruction latency -------------------------------------------------------

INSTRUCTION_SOURCE = KERNELS / "instruction_latency.cu"
OPS_PER_ITER = 256
ITERS = 64                  # timed loop iterations: 16,384 operations per warp, over all its chains
ILPS = (1, 2, 4, 8, 16, 32, 64, 128)
ISSUE_ILP = 8               # chains per thread when the SM is full of warps
SUBPARTITIONS = 4
REPS = 5
# Operation -> (the name the deck shows, the SASS instruction that must appear once per operation)
OPERATIONS = {
    "FADD": ("FADD", ("FADD",)), "FMUL": ("FMUL", ("FMUL",)), "FFMA": ("FFMA", ("FFMA",)),
    # ptxas issues integer adds as IADD3 (ALU pipe) or IMAD (FMA pipe): either counts
    "IADD": ("IADD", ("IADD3", "IMAD")), "IMUL": ("IMUL", ("IMAD",)),
    "FRCP": ("__frcp_rn", ("MUFU.RCP",)), "FSQRT": ("__fsqrt_rn", ("MUFU.RSQ",)),
    "SINF": ("__sinf", ("MUFU.SIN",)), "LOGF": ("__logf", ("MUFU.LG2",)), "EXPF": ("__expf", ("MUFU.EX2",)),
}


def sass_evidence(functions: dict, op: str, ilp: int) -> dict:
    body = timed_loop(functions[f"chain_{op}_{ilp}"])
    counts = histogram(body)
    # the loop counter's increment is an IADD3 too (below sm_90; Hopper's is a uniform UIADD3)
    compared = {r for i in body if i.mnemonic == "ISETP" for r in re.findall(r"\bU?R\d+\b", i.operands)}
    counter = {m.group(1) for i in body if (m := re.match(r"(U?R\d+), \1, 0x1, U?RZ$", i.operands))} & compared
    primary = sum(1 for i in body if i.mnemonic in OPERATIONS[op][1] and i.operands.split(",")[0] not in counter)
    return {"loop_instructions": len(body), "per_op": round(len(body) / OPS_PER_ITER, 2),
            "primary_per_op": primary / OPS_PER_ITER,
            "mix_per_op": {m: round(n / OPS_PER_ITER, 3) for m, n in counts.most_common(6)}}


@register("latency.instruction", sources=[str(INSTRUCTION_SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py",
                                          "bench/core/sass.py"],
          builds=((INSTRUCTION_SOURCE, {"OPS_PER_ITER": OPS_PER_ITER}),),
          title="Instruction latency and throughput", timeout_s=600)
def instruction_latency(ctx) -> dict:
    import cupy

    defines = {"OPS_PER_ITER": OPS_PER_ITER}
    module, cubin = load_module(INSTRUCTION_SOURCE, ctx.device, defines)
    functions = disassemble(cubin)
    a, b = np.float32(0.999999), np.float32(1e-6)
    ops_per_warp = ITERS * OPS_PER_ITER      # per thread, over all its ILP chains
    rows, wrong = [], []

    def run(op, ilp, blocks, threads):
        warps = blocks * threads // 32
        out = cupy.full(blocks * threads, cupy.nan, dtype=cupy.float32)
        clocks = cupy.zeros(2 * warps, dtype=cupy.int64)
        smid = cupy.zeros(warps, dtype=cupy.uint32)
        kernel = module.get_function(f"chain_{op}_{ilp}")
        kernel((blocks,), (threads,), (a, b, np.int32(ITERS), out, clocks, smid))
        cupy.cuda.get_current_stream().synchronize()
        return clocks.get().reshape(-1, 2), smid.get()

    for op, (name, _) in OPERATIONS.items():
        row = {"op": op, "name": name, "cycles": {}, "sass": {}}
        for ilp in ILPS:
            row["sass"][ilp] = sass_evidence(functions, op, ilp)
            if row["sass"][ilp]["primary_per_op"] != 1.0:
                wrong.append(f"{op} ILP {ilp}: {row['sass'][ilp]['primary_per_op']:.2f} "
                             f"{'/'.join(OPERATIONS[op][1])} per operation")
            run(op, ilp, 1, 32)                                 # warm the instruction cache
            spans = [np.diff(run(op, ilp, 1, 32)[0][0])[0] for _ in range(REPS)]
            row["cycles"][ilp] = float(np.median(spans)) / ops_per_warp   # all chains together
        # the issue rate: every SM full of warps, each with ISSUE_ILP chains per thread
        per_sm = ctx.device["max_threads_per_sm"] // 1024
        clocks, smid = run(op, ISSUE_ILP, ctx.device["sm_count"] * per_sm, 1024)
        rates = []
        for sm in np.unique(smid):
            mine = clocks[smid == sm]
            span = mine[:, 1].max() - mine[:, 0].min()
            warp_instructions = len(mine) * ops_per_warp
            rates.append(span / (warp_instructions / SUBPARTITIONS))
        row["issue_cycles_per_subpartition"] = float(np.median(rates))
        row["warps_per_sm"] = per_sm * 1024 // 32
        rows.append(row)
        ctx.progress(f"{name:>10s}: ILP 1 {row['cycles'][1]:6.2f}, ILP 128 {row['cycles'][128]:5.2f} cycles; "
                     f"full SM {row['issue_cycles_per_subpartition']:.2f} cycles/instr/sub-partition; "
                     f"{row['sass'][1]['per_op']} SASS instr/op")
    return {
        "params": {"ops_per_iter": OPS_PER_ITER, "iters": ITERS, "ilps": list(ILPS), "reps": REPS,
                   "issue_ilp": ISSUE_ILP, "threads_per_block": 1024, "subpartitions": SUBPARTITIONS,
                   "unit": "cycles per warp-instruction (per source-level operation)"},
        "check": {"passed": not wrong, "method": "the SASS of every variant's timed loop holds the intended "
                                                "instruction exactly once per operation",
                  **({"detail": "; ".join(wrong)} if wrong else {})},
        "rows": rows,
    }


# --- memory latency ------------------------------------------------------------

MEMORY_SOURCE = KERNELS / "memory_latency.cu"
LINE = 128                       # bytes between slots: one cache line each
SHARED_SLOTS = 2048              # 8 KiB of 4-byte shared addresses
STEPS = 20000
LEVELS = (("shared", "shared memory", 8 << 10), ("L1", "L1 (ld.ca)", 8 << 10),
          ("L2", "L2 (ld.cg)", 4 << 20), ("HBM", "HBM (ld.cg, L2 flushed)", 256 << 20))
# 4 KiB to 1 GiB in half-octave steps, quarter-octave from 8 to 128 MiB where L2 gives way to HBM
SWEEP_BYTES = sorted({int(2 ** (e / 2)) for e in range(24, 61)} | {int(2 ** (e / 4)) for e in range(92, 113)})
SWEEP_BYTES = SWEEP_BYTES[::2] if quick() else SWEEP_BYTES     # a smoke refresh: every other size


class RandomCycle:
    """One random cycle through every slot: ``next[i]`` is the slot after slot i."""

    def __init__(self, slots: int, rng):
        self.order = rng.permutation(slots)
        self.next = np.empty(slots, dtype=np.int64)
        self.next[self.order] = np.roll(self.order, -1)
        self.position = np.empty(slots, dtype=np.int64)
        self.position[self.order] = np.arange(slots)

    def walk(self, start: int, steps: int) -> int:
        """The slot ``steps`` hops after ``start``."""
        return int(self.order[(self.position[start] + steps) % len(self.order)])


@register("latency.memory", sources=[str(MEMORY_SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py"],
          builds=((MEMORY_SOURCE, {"SHARED_SLOTS": SHARED_SLOTS}),),
          title="Memory latency by pointer chasing", timeout_s=900)
def memory_latency(ctx) -> dict:
    import cupy

    rng = np.random.default_rng(7)
    kernels = {name: load_kernel(MEMORY_SOURCE, f"chase_{name}", ctx.device, {"SHARED_SLOTS": SHARED_SLOTS})
               for name in ("shared", "l1", "l2")}
    result = cupy.zeros(3, dtype=cupy.uint64)
    flush_buf = cupy.zeros(2 * ctx.device["l2_bytes"] // 4, dtype=cupy.float32)
    max_bytes = max([b for *_, b in LEVELS] + SWEEP_BYTES)
    arena = cupy.zeros(max_bytes // 8, dtype=cupy.uint64)
    base = arena.data.ptr
    wrong = []

    def chase(kernel_name, nbytes, warm, flush=False):
        """Lay a random cycle over ``nbytes`` of the arena, chase it; (cycles, ns) per load."""
        slots = nbytes // LINE                 # sweep sizes need not be whole lines
        cycle = RandomCycle(slots, rng)
        arena[: slots * (LINE // 8) : LINE // 8] = cupy.asarray(base + cycle.next.astype(np.uint64) * LINE, dtype=cupy.uint64)
        if flush:
            flush_buf.sum()
        kernels[kernel_name]((1,), (1,), (np.uint64(base), np.int32(warm), np.int32(STEPS), result))
        cycles, ns, last = result.get().tolist()
        expected = base + LINE * cycle.walk(0, warm + STEPS)
        if last != expected:
            wrong.append(f"{kernel_name} over {nbytes} B ended at {last:#x}, not {expected:#x}")
        return cycles / STEPS, ns / STEPS

    levels = []
    for key, label, nbytes in LEVELS:
        if key == "shared":
            cycle = RandomCycle(SHARED_SLOTS, rng)
            kernels["shared"]((1,), (32,), (cupy.asarray(cycle.next, dtype=cupy.uint32), np.uint32(0),
                                            np.int32(SHARED_SLOTS), np.int32(STEPS), result))
            cycles, ns, last = result.get().tolist()
            if last != cycle.walk(0, SHARED_SLOTS + STEPS):
                wrong.append(f"shared chase ended on slot {last}, not {cycle.walk(0, SHARED_SLOTS + STEPS)}")
            c, t = cycles / STEPS, ns / STEPS
        elif key == "HBM":
            c, t = chase("l2", nbytes, warm=0, flush=True)
        else:
            c, t = chase("l1" if key == "L1" else "l2", nbytes, warm=nbytes // LINE)
        levels.append({"level": key, "label": label, "bytes": nbytes, "cycles": c, "ns": t})
        ctx.progress(f"{label:>24s}: {c:7.1f} cycles, {t:6.1f} ns")

    sweep = []
    for nbytes in SWEEP_BYTES:
        slots = nbytes // LINE
        c, t = chase("l1", nbytes, warm=min(slots, 1 << 20))
        sweep.append({"bytes": nbytes, "cycles": c, "ns": t})
    ctx.progress(f"sweep of {len(sweep)} sizes: {sweep[0]['cycles']:.0f} to {sweep[-1]['cycles']:.0f} cycles")
    return {
        "params": {"line_bytes": LINE, "steps": STEPS, "shared_slots": SHARED_SLOTS, "sweep_load": "ld.ca",
                   "threads": 1, "clock": "clock64 and %globaltimer around the timed chase"},
        "check": {"passed": not wrong, "method": "each chase must end on the slot the host's walk of the same "
                                                "cycle predicts", **({"detail": "; ".join(wrong)} if wrong else {})},
        "levels": levels,
        "sweep": sweep,
    }

