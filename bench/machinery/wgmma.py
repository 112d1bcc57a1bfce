"""Hopper's machinery, measured directly: the mechanisms the GEMM steps rely on, alone.

machinery.wgmma: one warpgroup's wgmma (64 x N x K, A and B from shared memory, no loads at all)
for each precision the GEMM steps use and N from 8 to 256. The rate: K-tiles issued back to back
into the same sums with one batch in flight, as a GEMM's main loop issues them, by one, two and four
warpgroups on every SM (one CTA each), counted in FLOP per SM per clock from each warpgroup's own
cycle counter and in TFLOPS from CUDA events at the SMs' measured clock. The latency: one wgmma at
a time, each waited for, one warpgroup on one SM. Checked before it is timed: with A and B all ones
every sum is the K it added up, and the SASS holds the wgmma of that type and shape."""
from __future__ import annotations

import numpy as np

from ..gemm.catalogue import ELEMENTS, HOPPER, SASS_TYPES, WGMMA_OPCODES
from ..core.cuda import KERNELS, load_module
from ..gemm.launch import exported
from ..core.registry import register
from ..core.sass import disassemble
from ..core.timing import quick, time_gpu

SOURCE = KERNELS / "wgmma_rate.cu"
PRECISIONS = ("tf32", "bf16", "fp8")
NS = (8, 32, 64, 128, 256)
WARPGROUPS = (1, 2, 4)
# A thread holds N / 2 accumulators: at N = 256 four warpgroups' would not fit the register file
# (the kernel's static_assert); two do.
FEWER_WARPGROUPS = {256: 2}
ITERS = 256 if quick() else 4096       # K-tiles a warpgroup issues in a timed launch
CHECK_ITERS = 8                        # ... in the checked one: sums of 8 K-tiles of ones, exact in every type
REPS = 5 if quick() else 10


def defines(precision: str, n: int) -> dict:
    return {"ELEMENT": ELEMENTS[precision]["ELEMENT"], "WGMMA_N": n, "MAX_WARPGROUPS": FEWER_WARPGROUPS.get(n, max(WARPGROUPS))}


@register("machinery.wgmma", sources=(str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py", "bench/core/sass.py"),
          builds=tuple((SOURCE, defines(p, n)) for p in PRECISIONS for n in NS),
          title="wgmma alone: rate and latency against N, by precision", timeout_s=600, min_cc=HOPPER)
def wgmma(ctx) -> dict:
    import cupy
    sms = ctx.device["sm_count"]
    rows, wrong = [], []
    for precision in PRECISIONS:
        for n in NS:
            module, cubin = load_module(SOURCE, ctx.device, defines(precision, n))
            m, atom_n, atom_k = exported(module, "ATOM_MNK", 3)
            [k_tile] = exported(module, "K_TILE")
            label = f"{precision} N={n}"
            opcodes = _wgmma_opcodes(cubin, precision)
            shape = f"64x{n}x{atom_k}."
            if not opcodes or any(shape not in op or not op.endswith("." + SASS_TYPES[precision]) for op in opcodes):
                wrong.append(f"{label}: SASS holds {opcodes or 'no wgmma'}, not {WGMMA_OPCODES[precision]}.{shape}..{SASS_TYPES[precision]}")
            most = FEWER_WARPGROUPS.get(n, max(WARPGROUPS))

            def launch(name, blocks, warpgroups, iters):
                sums = cupy.full(blocks * 128 * warpgroups, cupy.nan, dtype=cupy.float32)
                clocks = cupy.zeros(blocks * warpgroups, dtype=cupy.int64)
                kernel = module.get_function(name)
                run = lambda: kernel((blocks,), (128 * warpgroups,), (np.int32(iters), sums, clocks))
                return run, sums, clocks

            # the check: every thread's first sum is the K it added (A and B all ones)
            for name, per_iter in (("wgmma_rate", k_tile), ("wgmma_latency", atom_k)):
                run, sums, _ = launch(name, sms, most, CHECK_ITERS)
                run()
                cupy.cuda.get_current_stream().synchronize()
                off = int(cupy.count_nonzero(sums != CHECK_ITERS * per_iter))
                if off:
                    wrong.append(f"{label} {name}: {off} of {sums.size} sums are not {CHECK_ITERS * per_iter}")

            flop_per_iter = 2 * m * atom_n * k_tile
            rates = []
            for warpgroups in (w for w in WARPGROUPS if w <= most):
                run, _, clocks = launch("wgmma_rate", sms, warpgroups, ITERS)
                t = time_gpu(run, warmup=2, reps=REPS)
                cycles = clocks.get().reshape(sms, warpgroups).max(axis=1)      # a CTA's slowest warpgroup
                per_clock = warpgroups * flop_per_iter * ITERS / cycles
                rates.append({"warpgroups": warpgroups, "time_ms": t,
                              "flop_per_sm_clock": float(np.median(per_clock)),
                              "tflops": sms * warpgroups * flop_per_iter * ITERS / (t["median"] * 1e-3) / 1e12})
            run, _, clocks = launch("wgmma_latency", 1, 1, ITERS)
            run()
            run()
            cupy.cuda.get_current_stream().synchronize()
            latency = float(clocks.get()[0]) / ITERS
            rows.append({"precision": precision, "n": n, "atom": [m, atom_n, atom_k], "k_tile": k_tile,
                         "sass": opcodes, "latency_cycles": latency, "rates": rates})
            best = max(rates, key=lambda r: r["flop_per_sm_clock"])
            ctx.progress(f"{precision:>4s} 64x{n}x{atom_k}: {best['flop_per_sm_clock']:,.0f} FLOP/SM/clock with "
                         f"{best['warpgroups']} warpgroups ({best['tflops']:.0f} TFLOPS), latency {latency:.0f} cycles")
    return {"params": {"precisions": list(PRECISIONS), "ns": list(NS), "warpgroups": list(WARPGROUPS), "iters": ITERS,
                       "check_iters": CHECK_ITERS, "reps": REPS, "ctas": "one per SM",
                       "operands": "A (64 x K-tile) and B (N x K-tile) in shared memory, all ones, never reloaded"},
            "check": {"passed": not wrong, "method": "with A and B all ones every sum equals the K it added; the SASS "
                                                    "holds the wgmma of the precision and N asked for",
                      **({"detail": "; ".join(wrong[:5])} if wrong else {})},
            "rows": rows}


def _wgmma_opcodes(cubin, precision: str) -> list[str]:
    functions = disassemble(cubin)
    return sorted({i.opcode for name in ("wgmma_rate", "wgmma_latency") for i in functions[name]
                   if i.mnemonic == WGMMA_OPCODES[precision]})
