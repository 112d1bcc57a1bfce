"""A small tuner for the persistent kernel (catalogue.TUNED): every combination of CTA tile width,
pipeline depth, cluster size and swizzle band in SPACE, all compiled at once, each checked at the
reference shape (the operands and their float64 product shared by all) and timed in turns with
cuBLAS TF32, so that every trial meets cuBLAS at the same clock; then the winner and the
hand-picked configuration head to head."""
from __future__ import annotations

import itertools

from . import catalogue, cublas, benchmarks, launch
from ..core import cuda
from .catalogue import DEEPEST
from .harness import REPS, ROUND_S, SETTLE_MAX_S, SHAPE, checked_launch, operands, ratio, tflops, time_in_turns
from ..core.registry import register
from ..core.timing import quick

STEP, HAND_PICKED = catalogue.KERNELS[catalogue.TUNED]
# STAGES DEEPEST: as many as the shared memory holds (the kernel works it out)
SPACE = ({"BN": (256,), "STAGES": (DEEPEST,), "CLUSTER_M": (1, 2), "GROUP_M": (16,)} if quick() else
         {"BN": (128, 256), "STAGES": (3, DEEPEST), "CLUSTER_M": (1, 2, 4), "GROUP_M": (8, 16)})
# Timed as the GEMM family times (harness.time_in_turns: turns with cuBLAS, settled, rounds), so a
# configuration's figure here and in the results table come from one method; the trials take as many
# rounds as the table (its interval), each shorter, and settle for less long (the chip is warm from
# the GEMMs before); the final is timed as the table is. Each trial meets cuBLAS alone: all 24 in one
# set of turns (tried on the H200, 2026-11-30, to save 34 s) ran the set at the clock of its mean power,
# above a fast pair's (cuBLAS 370 TFLOPS, against about 350 beside a fast trial), where the fast trials
# read 3-4% lower than head to head (93.3% against 96.8%), and each trial after the same neighbour.
TRIAL_REPS, TRIAL_ROUND_S, TRIAL_SETTLE_S = (REPS, ROUND_S / 2, 0.5) if quick() else (REPS, 0.16, 1.0)
def configurations(base: dict) -> list[dict]:
    """Every point of SPACE as a complete tile."""
    return [{**base, **point}
            for point in (dict(zip(SPACE, values)) for values in itertools.product(*SPACE.values()))]


def _point(tile: dict) -> dict:
    return {key: tile[key] for key in SPACE}


def _time_against_cublas(runs, ops, reps: int, settle_max_s: float, round_s: float) -> list[dict]:
    c = ops.poisoned_c()        # once: a C made per call would put its fill in cuBLAS's time
    fns = [*runs, lambda: cublas.gemm(ops.a, ops.b, c, STEP.layout, STEP.precision)]
    return time_in_turns(fns, reps, settle_max_s, round_s)[0]


def _variant(tile: dict) -> catalogue.Variant:
    return catalogue.Variant(HAND_PICKED.id, "trial", tile)


TILES = configurations(HAND_PICKED.tile)


@register("tune.persistent", sources=benchmarks.kernel_sources(STEP), kernels=catalogue.definitions(("tuned",)),
          builds=tuple(b for tile in TILES for b in benchmarks.builds(STEP, _variant(tile))), timeout_s=600,
          title="Tuner: the persistent kernel's tile, stages, cluster and swizzle band", min_cc=STEP.min_cc)
def tune(ctx) -> dict:
    cuda.compile_all([(STEP.source, tile) for tile in TILES], cuda.arch_of(ctx.device["compute_capability"]))
    ops = operands(SHAPE, STEP.layout, STEP.precision)
    trials, prepared = [], {}
    for i, tile in enumerate(TILES):
        trial = {"config": _point(tile)}
        try:
            prepare = launch.prepare(STEP, _variant(tile), ctx.device)
            kernel, check, _, _ = checked_launch(SHAPE, STEP.layout, STEP.precision, prepare)
            trial["check"] = check
            if check["passed"]:
                t_kernel, t_cublas = _time_against_cublas([kernel.run], ops, TRIAL_REPS, TRIAL_SETTLE_S, TRIAL_ROUND_S)
                trial.update(time_ms=t_kernel, tflops=tflops(SHAPE, t_kernel), **ratio("ratio", t_cublas, t_kernel),
                             cublas_tflops=tflops(SHAPE, t_cublas),
                             stages=kernel.resources["tile"]["STAGES"],
                             regs_per_thread=kernel.resources["regs_per_thread"],
                             smem_bytes=kernel.resources["smem_dynamic_bytes"])
                prepared[i] = prepare
            trial["outcome"] = "ok" if check["passed"] else "wrong"
        except Exception as e:            # a configuration that does not compile or launch is a result too
            trial.update(outcome="error", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        trials.append(trial)
        ctx.progress(f"[{i + 1}/{len(TILES)}] {trial['config']}: " + (f"{trial['tflops']:.1f} TFLOPS, "
                     f"{100 * trial['ratio']:.1f}% of cuBLAS" if "ratio" in trial else trial["outcome"]))
    timed = [i for i, t in enumerate(trials) if "ratio" in t]
    if not timed:
        raise RuntimeError("no configuration of the space compiled, ran and passed its check")
    winner = max(timed, key=lambda i: trials[i]["ratio"])
    hand_picked = next(i for i, t in enumerate(TILES) if _point(t) == _point(HAND_PICKED.tile))
    # the winner and the hand-picked tile, on the same operands, in turns with each other and cuBLAS
    contenders = {"winner": winner, "hand_picked": hand_picked}
    indices = [i for i in dict.fromkeys(contenders.values()) if i in prepared]
    runs = [prepared[i](ops.a, ops.b, ops.poisoned_c()).run for i in indices]
    *times, cublas_time = _time_against_cublas(runs, ops, REPS, SETTLE_MAX_S, ROUND_S)
    by_index = dict(zip(indices, times))
    final = {name: {"config": trials[i]["config"], "time_ms": by_index[i], "tflops": tflops(SHAPE, by_index[i]),
                    **ratio("ratio", cublas_time, by_index[i])}
             for name, i in contenders.items() if i in by_index}
    final["cublas_time_ms"] = cublas_time
    failed = [f"{t['config']}: {t['check'].get('detail')}" for t in trials if t["outcome"] == "wrong"]
    deepest = {str(t["config"]["BN"]): t["stages"] for t in trials if t["config"]["STAGES"] == DEEPEST and "stages" in t}
    return {"params": {"kernel": catalogue.TUNED, "bm": HAND_PICKED.tile["BM"], "space": {k: list(v) for k, v in SPACE.items()},
                       "stages_max": deepest, "m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "trial_reps": TRIAL_REPS, "trial_round_s": TRIAL_ROUND_S,
                       "trial_settle_s": TRIAL_SETTLE_S, "final_reps": REPS, "final_settle_s": SETTLE_MAX_S,
                       "timing": "in turns with cuBLAS TF32, as the GEMM family times"},
            "check": {"passed": not failed, "method": "every configuration against a float64 GEMM",
                      **({"detail": "; ".join(failed)} if failed else {})},
            "trials": trials, "winner": winner, "hand_picked": hand_picked, "final": final}
