"""A small tuner for the persistent kernel (catalogue.TUNED): every combination of CTA tile width,
pipeline depth, cluster size and swizzle band in SPACE, all compiled at once, each checked at the
reference shape (the operands and their float64 product shared by all) and timed in turns with
cuBLAS TF32, so that every trial meets cuBLAS at the same clock; then the winner and the
hand-picked configuration head to head."""
from __future__ import annotations

import itertools

from . import catalogue, cublas, cuda, gemm, launch
from .catalogue import DEEPEST
from .harness import SHAPE, checked_launch, operands, tflops, warm
from .registry import register
from .timing import batch_filling, quick, time_gpu_alternating

STEP, HAND_PICKED = catalogue.KERNELS[catalogue.TUNED]
# STAGES DEEPEST: as many as the shared memory holds (the kernel works it out)
SPACE = ({"BN": (256,), "STAGES": (DEEPEST,), "CLUSTER_M": (1, 2), "GROUP_M": (16,)} if quick() else
         {"BN": (128, 256), "STAGES": (3, DEEPEST), "CLUSTER_M": (1, 2, 4), "GROUP_M": (8, 16)})
# Timed in turns with cuBLAS, so the power cap's drift falls on both alike: shorter samples than the
# GEMM family's keep two dozen trials within a minute; the chip is warm from the GEMMs before.
SAMPLE_MS = 50.0
TRIAL_WARM_S, TRIAL_REPS = (0.1, 3) if quick() else (0.2, 4)
FINAL_WARM_S, FINAL_REPS = (0.3, 6) if quick() else (1.0, 20)


def configurations(base: dict) -> list[dict]:
    """Every point of SPACE as a complete tile."""
    return [{**base, **point}
            for point in (dict(zip(SPACE, values)) for values in itertools.product(*SPACE.values()))]


def _point(tile: dict) -> dict:
    return {key: tile[key] for key in SPACE}


def _time_against_cublas(runs, ops, warm_s: float, reps: int) -> list[dict]:
    fns = [*runs, lambda: cublas.gemm(ops.a, ops.b, ops.poisoned_c(), STEP.layout, STEP.precision)]
    warm(lambda: [fn() for fn in fns], warm_s)
    return time_gpu_alternating(fns, warmup=1, reps=reps, batch=batch_filling(fns, SAMPLE_MS))


def _variant(tile: dict) -> catalogue.Variant:
    return catalogue.Variant(HAND_PICKED.id, "trial", tile)


TILES = configurations(HAND_PICKED.tile)


@register("tune.persistent", sources=gemm.kernel_sources(STEP), definition={"space": SPACE, "base": HAND_PICKED.tile},
          builds=tuple(b for tile in TILES for b in gemm.builds(STEP, _variant(tile))), timeout_s=600,
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
                t_kernel, t_cublas = _time_against_cublas([kernel.run], ops, TRIAL_WARM_S, TRIAL_REPS)
                trial.update(time_ms=t_kernel, tflops=tflops(SHAPE, t_kernel), ratio=t_cublas["median"] / t_kernel["median"],
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
    *times, cublas_time = _time_against_cublas(runs, ops, FINAL_WARM_S, FINAL_REPS)
    by_index = dict(zip(indices, times))
    final = {name: {"config": trials[i]["config"], "time_ms": by_index[i], "tflops": tflops(SHAPE, by_index[i]),
                    "ratio": cublas_time["median"] / by_index[i]["median"]}
             for name, i in contenders.items() if i in by_index}
    final["cublas_time_ms"] = cublas_time
    failed = [f"{t['config']}: {t['check'].get('detail')}" for t in trials if t["outcome"] == "wrong"]
    deepest = {str(t["config"]["BN"]): t["stages"] for t in trials if t["config"]["STAGES"] == DEEPEST and "stages" in t}
    return {"params": {"kernel": catalogue.TUNED, "bm": HAND_PICKED.tile["BM"], "space": {k: list(v) for k, v in SPACE.items()},
                       "stages_max": deepest, "m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "trial_warm_s": TRIAL_WARM_S,
                       "trial_reps": TRIAL_REPS, "final_warm_s": FINAL_WARM_S, "final_reps": FINAL_REPS,
                       "sample_ms": SAMPLE_MS},
            "check": {"passed": not failed, "method": "every configuration against a float64 GEMM",
                      **({"detail": "; ".join(failed)} if failed else {})},
            "trials": trials, "winner": winner, "hand_picked": hand_picked, "final": final}
