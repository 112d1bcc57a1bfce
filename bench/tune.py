"""A small tuner for the persistent kernel (step 9): every combination of CTA tile width,
pipeline depth, cluster size and swizzle band in SPACE, each compiled, checked at the
reference shape and timed in turns with cuBLAS TF32 (so that every trial meets cuBLAS at
the same clock); then the winner and the hand-picked configuration head to head."""
from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from . import gemm, registry
from .gemm import HAND_WRITTEN, SHAPE, _cublas_gemm, _cute_prepare, checked_launch, stages_that_fit, warm
from .cuda import KERNELS, arch_of, compile_cu
from .registry import register
from .timing import batch_filling, time_gpu_alternating

TUNED = "gemm.persistent"       # the kernel tuned; its tile is the hand-picked point of the space
SPACE = {"BN": (128, 256), "STAGES": (3, "max"), "CLUSTER_M": (1, 2, 4), "GROUP_M": (8, 16)}
# Timed in turns with cuBLAS, so the power cap's drift falls on both alike: shorter samples than
# the GEMM family's (bench/gemm.py) do, and keep four dozen trials within minutes.
SAMPLE_MS = 100.0
TRIAL_WARM_S, TRIAL_REPS = 1.0, 10      # samples of SAMPLE_MS each
FINAL_WARM_S, FINAL_REPS = 2.0, 30


def configurations(base: dict) -> list[dict]:
    """Every point of SPACE as a complete tile ("max" stages: as many as shared memory holds)."""
    tiles = []
    for values in itertools.product(*SPACE.values()):
        point = dict(zip(SPACE, values))
        if point["STAGES"] == "max":
            point["STAGES"] = stages_that_fit(base["BM"], point["BN"], base["BK"])
        tiles.append({**base, **point, "MMA_ATOM": f"SM90_64x{point['BN']}x8_F32TF32TF32_SS_TN"})
    return tiles


def _point(tile: dict) -> dict:
    return {key: tile[key] for key in SPACE}


def _time_against_cublas(run, operands, layout: str, warm_s: float, reps: int, extra=()) -> list[dict]:
    cublas = lambda: _cublas_gemm(*operands, layout, "tf32")
    fns = [run, *extra, cublas]
    warm(lambda: [fn() for fn in fns], warm_s)
    return time_gpu_alternating(fns, warmup=2, reps=reps, batch=batch_filling(fns, SAMPLE_MS))


@register("tune.persistent", sources=[*registry.discover(("bench.gemm",))[TUNED].sources], timeout_s=900,
          title="Tuner: the persistent kernel's tile, stages, cluster and swizzle band", min_cc=gemm.HOPPER)
def tune(ctx) -> dict:
    kernel = HAND_WRITTEN[TUNED]
    tiles = configurations(kernel.tile)
    arch = arch_of(ctx.device["compute_capability"])
    with ThreadPoolExecutor(16) as pool:      # nvcc runs in its own processes: compile them all at once
        compiled = [pool.submit(compile_cu, KERNELS / kernel.source, arch, tile) for tile in tiles]
    trials, prepared = [], {}
    for i, (tile, cubin) in enumerate(zip(tiles, compiled), 1):
        trial = {"config": _point(tile)}
        try:
            cubin.result()                    # a compile error (or serialized wgmma) is this trial's outcome
            prepare = _cute_prepare(kernel.source, kernel.function, tile, ctx.device, kernel.sass_required)
            launch, check, operands = checked_launch(SHAPE, kernel.layout, kernel.precision, prepare)
            trial["check"] = check
            if check["passed"]:
                t_kernel, t_cublas = _time_against_cublas(launch.run, operands, kernel.layout, TRIAL_WARM_S, TRIAL_REPS)
                trial.update(time_ms=t_kernel, tflops=SHAPE.flops / (t_kernel["median"] * 1e-3) / 1e12,
                             ratio=t_cublas["median"] / t_kernel["median"],
                             regs_per_thread=launch.resources["regs_per_thread"],
                             smem_bytes=launch.resources["smem_dynamic_bytes"])
                prepared[i - 1] = prepare
            trial["outcome"] = "ok" if check["passed"] else "wrong"
        except Exception as e:            # a configuration that does not compile or launch is a result too
            trial.update(outcome="error", reason=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        trials.append(trial)
        ctx.progress(f"[{i}/{len(tiles)}] {trial['config']}: " + (f"{trial['tflops']:.1f} TFLOPS, "
                     f"{100 * trial['ratio']:.1f}% of cuBLAS" if "ratio" in trial else trial["outcome"]))
    timed = [i for i, t in enumerate(trials) if "ratio" in t]
    if not timed:
        raise RuntimeError("no configuration of the space compiled, ran and passed its check")
    winner = max(timed, key=lambda i: trials[i]["ratio"])
    hand_picked = next(i for i, t in enumerate(tiles) if _point(t) == _point(kernel.tile))
    # the winner and the hand-picked tile, on the same operands, in turns with each other and cuBLAS
    contenders = {"winner": winner, "hand_picked": hand_picked}
    indices = [i for i in dict.fromkeys(contenders.values()) if i in prepared]
    launches = [checked_launch(SHAPE, kernel.layout, kernel.precision, prepared[i]) for i in indices]
    operands = launches[0][2]           # every contender and cuBLAS read the first one's operands
    runs = [launches[0][0].run] + [prepared[i](*operands).run for i in indices[1:]]
    *times, cublas = _time_against_cublas(runs[0], operands, kernel.layout, FINAL_WARM_S, FINAL_REPS, extra=runs[1:])
    by_index = dict(zip(indices, times))
    final = {name: {"config": trials[i]["config"], "time_ms": by_index[i],
                    "tflops": SHAPE.flops / (by_index[i]["median"] * 1e-3) / 1e12,
                    "ratio": cublas["median"] / by_index[i]["median"]}
             for name, i in contenders.items() if i in by_index}
    final["cublas_time_ms"] = cublas
    failed = [f"{t['config']}: {t['check'].get('detail')}" for t in trials if t["outcome"] == "wrong"]
    return {"params": {"kernel": TUNED, "bm": kernel.tile["BM"], "space": {k: list(v) for k, v in SPACE.items()},
                       "stages_max": {str(bn): stages_that_fit(kernel.tile["BM"], bn, kernel.tile["BK"]) for bn in SPACE["BN"]},
                       "m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "trial_warm_s": TRIAL_WARM_S,
                       "trial_reps": TRIAL_REPS, "final_warm_s": FINAL_WARM_S, "final_reps": FINAL_REPS,
                       "sample_ms": SAMPLE_MS},
            "check": {"passed": not failed, "method": "every configuration against a float64 GEMM",
                      **({"detail": "; ".join(failed)} if failed else {})},
            "trials": trials, "winner": winner, "hand_picked": hand_picked, "final": final}
