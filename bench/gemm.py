"""The GEMM family: cuBLAS baselines and the hand-written progression, through one harness.

Shape and layouts are the reference deck's: A(M x K) row-major times B(K x N)
gives C(M x N) row-major, with B stored either row-major ("b_row", N contiguous)
or K-major ("b_kmajor", i.e. B transposed in memory, as TF32 wgmma wants both
operands). C is poisoned with NaN, then every element is checked against a
float64 GEMM of the same operands (run_gemm)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .registry import register
from .timing import TIMED_SPANS, batch_filling, summarize, time_gpu, time_gpu_alternating


@dataclass(frozen=True)
class Shape:
    m: int
    n: int
    k: int

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k


SHAPE = Shape(m=4096, n=8192, k=16384)
ODD_SHAPE = Shape(m=1031, n=1553, k=1291)    # multiples of no tile
LAYOUTS = {"b_row": "B row-major (N contiguous)", "b_kmajor": "B K-major (stored transposed)"}
SEED = 2026
WARMUP, REPS = 3, 20
# A timed sample is as many GEMMs back to back as fill this: the power cap moves the clock by
# several percent within milliseconds, and a sample this long averages over the swings.
SAMPLE_MS = 200.0
# Before timing, each GEMM runs in such samples until it is steady: the last SETTLE_WINDOW of
# them spread (p10 to p90) less than SETTLED_SPREAD of their median. From a rest, a tensor-core
# GEMM at the power cap loses clock for ten seconds or more as the chip warms (settle.headline);
# timed inside that drift, the spread would be the drift's. Never less than SETTLE_MIN_S, and
# timed anyway, marked unsettled, after SETTLE_MAX_S.
SETTLE_WINDOW, SETTLED_SPREAD = 10, 0.02
SETTLE_MIN_S, SETTLE_MAX_S = 2.0, 40.0
SETTLE_RULE = {"window": SETTLE_WINDOW, "spread": SETTLED_SPREAD, "min_s": SETTLE_MIN_S, "max_s": SETTLE_MAX_S}

# Relative Frobenius error allowed, by arithmetic: FP32 accumulates
# in FP32; TF32 rounds each operand to 10 mantissa bits (unit roundoff 2^-11);
# BF16 operands are exact in the reference, so only the FP32 accumulation errs.
TOLERANCE = {"fp32": 1e-5, "tf32": 2e-3, "bf16": 1e-4}


def cublas_id(precision: str, layout: str) -> str:
    return f"gemm.cublas_{precision}_{layout}"


# --- cuBLAS through CuPy's cublasGemmEx binding --------------------------------

_CUDA_R_32F, _CUDA_R_16BF = 0, 14                       # cudaDataType, library_types.h
_COMPUTE = {"fp32": "CUBLAS_COMPUTE_32F", "tf32": "CUBLAS_COMPUTE_32F_FAST_TF32", "bf16": "CUBLAS_COMPUTE_32F"}


def _to_bf16_bits(x):
    """float32 -> bfloat16 bit patterns (round to nearest even); CuPy has no bf16 dtype."""
    import cupy
    u = x.view(cupy.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cupy.uint16)


def _bf16_to_f64(bits):
    import cupy
    return (bits.astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)


def make_operands(shape: Shape, layout: str, precision: str, seed: int = SEED):
    """Fresh random A and B (B transposed in memory for b_kmajor; bf16 as uint16 bit patterns)."""
    import cupy
    rng = cupy.random.default_rng(seed)
    a = rng.standard_normal((shape.m, shape.k), dtype=cupy.float32)
    b = rng.standard_normal((shape.n, shape.k) if layout == "b_kmajor" else (shape.k, shape.n), dtype=cupy.float32)
    if precision == "bf16":
        a, b = _to_bf16_bits(a), _to_bf16_bits(b)
    return a, b


def reference_error(a, b, c, layout: str, precision: str) -> dict:
    """Relative Frobenius error of C against a float64 product of the same operands
    (cuBLAS DGEMM), and whether every element of C was written (no NaN left of the poison)."""
    import cupy
    up = _bf16_to_f64 if precision == "bf16" else (lambda x: x.astype(cupy.float64))
    a64, b64 = up(a), up(b)
    ref = a64 @ (b64.T if layout == "b_kmajor" else b64)
    del a64, b64
    unwritten = int(cupy.isnan(c).sum())
    err = float(cupy.linalg.norm(cupy.nan_to_num(c.astype(cupy.float64)) - ref) / cupy.linalg.norm(ref))
    tol = TOLERANCE[precision]
    passed = unwritten == 0 and err <= tol
    check = {"passed": passed, "rel_error": err, "tolerance": tol, "unwritten": unwritten,
             "reference": "float64 GEMM of the same operands, relative Frobenius norm"}
    if not passed:
        check["detail"] = (f"{unwritten} elements of C never written" if unwritten
                           else f"relative error {err:.2e} above {precision} tolerance {tol:.0e}")
    return check


@dataclass
class Launch:
    """A GEMM ready to run on given operands, and what it occupies on the GPU."""
    run: Callable[[], None]
    resources: dict | None = None      # threads_per_block, regs_per_thread, smem_*_bytes, local_bytes, grid


class Refused(ValueError):
    """A kernel declines a shape before launching (e.g. not a multiple of its tile)."""


def warm(run, seconds: float) -> None:
    """Run ``run`` back to back for ``seconds`` of wall time (in batches, so the queue stays full)."""
    import time
    import cupy
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        for _ in range(8):
            run()
        cupy.cuda.get_current_stream().synchronize()


def window_spread(samples_ms) -> float | None:
    """The settling rule's measure: p10-p90 over the median of the last SETTLE_WINDOW samples
    (None while there are fewer)."""
    if len(samples_ms) < SETTLE_WINDOW:
        return None
    t = summarize(samples_ms[-SETTLE_WINDOW:])
    return (t["p90"] - t["p10"]) / t["median"]


def settle(runs, batch: int) -> dict:
    """Run ``runs`` in turns, a sample of ``batch`` runs each, until the first of them is steady
    (window_spread under SETTLED_SPREAD, after at least SETTLE_MIN_S) or SETTLE_MAX_S has passed.
    Its samples are not timings: their spans are taken back out of TIMED_SPANS, so the telemetry
    recorded "during" the run is that of the timed samples."""
    import time
    began, samples, spans = time.monotonic(), [], len(TIMED_SPANS)
    while True:
        samples.append(time_gpu_alternating(runs, warmup=0, reps=1, batch=batch)[0]["median"])
        elapsed, spread = time.monotonic() - began, window_spread(samples)
        steady = spread is not None and spread < SETTLED_SPREAD
        if (steady and elapsed >= SETTLE_MIN_S) or elapsed >= SETTLE_MAX_S:
            del TIMED_SPANS[spans:]
            return {"seconds": round(elapsed, 2), "samples": len(samples), "settled": steady,
                    "window_spread": spread, "first_ms": samples[0], "last_ms": samples[-1]}


def checked_launch(shape: Shape, layout: str, precision: str, prepare):
    """Fresh operands, C poisoned with NaN, one run, and its check against float64:
    (the launch, the check, the operands (A, B, C)). ``prepare`` may raise Refused."""
    import cupy
    a, b = make_operands(shape, layout, precision)
    c = cupy.full((shape.m, shape.n), cupy.nan, dtype=cupy.float32)
    launch = prepare(a, b, c)
    launch.run()
    cupy.cuda.get_current_stream().synchronize()
    return launch, reference_error(a, b, c, layout, precision), (a, b, c)


def run_gemm(ctx, *, precision: str, layout: str, prepare, warmup: int = WARMUP, reps: int = REPS,
             against_cublas: bool = False) -> dict:
    """The one GEMM harness: fresh operands, poisoned C, float64 check, then timing
    at the reference shape; then correctness (or a clear refusal) at ODD_SHAPE.
    ``against_cublas``: then cuBLAS (same operands and layout) twice: settled and timed alone
    right after the kernel, so that both meet the chip at the same temperature (the clock the power
    cap leaves a GEMM falls as the chip warms over a run of benchmarks, and a kernel that draws
    less power keeps a higher one); and timed in turns with the kernel, so that both meet the
    same clock: their ratio per unit of clock."""
    checked = lambda shape: checked_launch(shape, layout, precision, prepare)
    launch, check, operands = checked(SHAPE)
    runs = [launch.run]
    if against_cublas:           # C is checked already: cuBLAS may overwrite it
        runs.append(lambda: _cublas_gemm(*operands, layout, precision))
    batch = batch_filling(runs, SAMPLE_MS)
    settled = settle([launch.run], batch)
    t = time_gpu(launch.run, warmup=warmup, reps=reps, batch=batch)
    if against_cublas:
        cublas_settled = settle(runs[1:], batch)
        cublas_alone = time_gpu(runs[1], warmup=warmup, reps=reps, batch=batch)
        in_turns = time_gpu_alternating(runs, warmup=warmup, reps=reps, batch=batch)
    tflops = SHAPE.flops / (t["median"] * 1e-3) / 1e12
    try:
        _, odd_check, _ = checked(ODD_SHAPE)
        odd = {"outcome": "correct" if odd_check["passed"] else "wrong", "check": odd_check}
    except Refused as e:
        odd = {"outcome": "refused", "reason": str(e)}
    odd["shape"] = [ODD_SHAPE.m, ODD_SHAPE.n, ODD_SHAPE.k]
    if odd["outcome"] == "wrong":
        check = {**check, "passed": False, "detail": f"wrong at the odd shape {odd['shape']}: {odd_check['detail']}"}
    record = {"params": {"m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "layout": layout, "precision": precision,
                         "output": "fp32", "warmup": warmup, "reps": reps, "sample_ms": SAMPLE_MS,
                         "batch": batch, "seed": SEED, "settle_rule": SETTLE_RULE},
              "check": check, "settle": settled, "time_ms": t, "tflops": tflops, "odd_shape": odd}
    versus = ""
    if against_cublas:
        record["cublas_alone"] = {"id": cublas_id(precision, layout), "settle": cublas_settled,
                                  "time_ms": cublas_alone, "ratio": cublas_alone["median"] / t["median"]}
        record["cublas_in_turns"] = {"id": cublas_id(precision, layout), "time_ms": in_turns[1],
                                     "kernel_time_ms": in_turns[0], "ratio": in_turns[1]["median"] / in_turns[0]["median"]}
        versus = (f" ({100 * record['cublas_alone']['ratio']:.1f}% of cuBLAS timed alone after it, "
                  f"{100 * record['cublas_in_turns']['ratio']:.1f}% in turns with it)")
    steady = f"steady after {settled['seconds']:.0f} s" if settled["settled"] else f"NOT steady after {settled['seconds']:.0f} s"
    ctx.progress(f"{tflops:.1f} TFLOPS{versus}, {steady}, rel. error {check['rel_error']:.1e}, odd shape {odd['outcome']}")
    if launch.resources:
        record["resources"] = launch.resources
    return record


def _cublas_gemm(a, b, c, layout: str, precision: str):
    """C = A B for row-major C through column-major cuBLAS: compute C^T = B^T A^T."""
    import cupy
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    m, k = a.shape
    n = c.shape[1]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)   # TF32 only where the compute type asks
    dtype = _CUDA_R_16BF if precision == "bf16" else _CUDA_R_32F
    one, zero = np.ones(1, np.float32), np.zeros(1, np.float32)
    trans_b = cublas.CUBLAS_OP_T if layout == "b_kmajor" else cublas.CUBLAS_OP_N
    ldb = k if layout == "b_kmajor" else n
    cublas.gemmEx(handle, trans_b, cublas.CUBLAS_OP_N, n, m, k,
                  one.ctypes.data, b.data.ptr, dtype, ldb, a.data.ptr, dtype, k,
                  zero.ctypes.data, c.data.ptr, _CUDA_R_32F, n,
                  getattr(cublas, _COMPUTE[precision]), -1)   # -1: CUBLAS_GEMM_DEFAULT


def _register_cublas(precision: str, layout: str):
    @register(cublas_id(precision, layout), sources=[], timeout_s=300,
              title=f"cuBLAS {precision.upper()}, {LAYOUTS[layout]}")
    def run(ctx) -> dict:
        prepare = lambda a, b, c: Launch(lambda: _cublas_gemm(a, b, c, layout, precision))
        return run_gemm(ctx, precision=precision, layout=layout, prepare=prepare)


for _precision in ("fp32", "tf32", "bf16"):
    for _layout in LAYOUTS:
        _register_cublas(_precision, _layout)


# --- the hand-written progression: one registration per kernel -----------------

def _numba():
    """numba.cuda, importable beside newer NumPy: numba-cuda 0.30 still calls np.row_stack,
    which NumPy 2.5 removed (it was an alias of vstack)."""
    import numpy as np
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda
    return cuda


def _numba_resources(kernel, block, grid) -> dict:
    compiled = next(iter(kernel.overloads.values()))      # the one specialization launched
    return {"threads_per_block": block[0] * block[1], "grid": list(grid),
            "regs_per_thread": int(compiled.regs_per_thread),
            "smem_static_bytes": int(compiled.shared_mem_per_block), "smem_dynamic_bytes": 0,
            "local_bytes": int(compiled.local_mem_per_thread)}


def _naive_prepare(device: dict):
    _numba()
    from kernels import gemm_01_naive as k

    def prepare(a, b, c):
        (m, kk), n = a.shape, c.shape[1]
        grid = k.grid(m, n)
        flat = (a.ravel(), b.ravel(), c.ravel())
        run = lambda: k.gemm_naive[grid, k.BLOCK](*flat, m, n, kk)
        run()                                   # compiles, so that the resources can be read
        return Launch(run, _numba_resources(k.gemm_naive, k.BLOCK, grid))
    return prepare


def tensor_map_args(box_rows: int, box_cols: int) -> dict:
    """cuTensorMapEncodeTiled's arguments for a row-major float32 matrix read in boxes of
    box_rows x box_cols, swizzled 128-byte rows in shared memory (the wgmma layout), before the
    matrix's address and extent are known: the one place the TMA box is defined."""
    if box_cols * 4 != 128:
        raise ValueError(f"a 128-byte-swizzled box row is 128 bytes: {box_cols} floats is not")
    return {"data_type": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "box": [box_cols, box_rows],   # innermost first
            "element_strides": [1, 1], "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
            "swizzle": "CU_TENSOR_MAP_SWIZZLE_128B", "l2_promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
            "oob_fill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"}


def tensor_map(x, box_rows: int, box_cols: int):
    """A TMA descriptor for the row-major float32 matrix ``x`` (cuda-bindings' cuTensorMapEncodeTiled),
    as a structured NumPy scalar that CuPy passes by value to a ``__grid_constant__ CUtensorMap``."""
    import ctypes
    import numpy as np
    from cuda.bindings import driver as cu

    opaque = np.dtype([(f"w{i}", "<u8") for i in range(16)])      # CUtensorMap: 128 opaque bytes
    args = tensor_map_args(box_rows, box_cols)
    rows, cols = x.shape
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, args["data_type"]), 2, x.data.ptr,
        [cu.cuuint64_t(cols), cu.cuuint64_t(rows)], [cu.cuuint64_t(cols * x.itemsize)],
        [cu.cuuint32_t(v) for v in args["box"]], [cu.cuuint32_t(v) for v in args["element_strides"]],
        getattr(cu.CUtensorMapInterleave, args["interleave"]), getattr(cu.CUtensorMapSwizzle, args["swizzle"]),
        getattr(cu.CUtensorMapL2promotion, args["l2_promotion"]), getattr(cu.CUtensorMapFloatOOBfill, args["oob_fill"]))
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err.name}) for a {rows}x{cols} matrix, box {args['box']}")
    return np.frombuffer(ctypes.string_at(tmap.getPtr(), opaque.itemsize), dtype=opaque)[0]


def resident_ctas(kernel, threads: int, smem_bytes: int, cluster: int) -> int:
    """How many CTAs of ``kernel`` the GPU holds at once, in whole clusters of ``cluster``
    (the driver's cuOccupancyMaxActiveClusters): a persistent kernel's grid."""
    from cuda.bindings import driver as cu
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = cluster, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = smem_bytes
    err, clusters = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(kernel.kernel.ptr), config)
    if err != cu.CUresult.CUDA_SUCCESS or clusters < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters failed ({err.name}, {clusters} clusters) "
                           f"for {threads} threads, {smem_bytes} bytes of shared memory, clusters of {cluster}")
    return clusters * cluster


def split_wave(units: int, clusters: int, k_tiles: int) -> dict:
    """The last wave of a split-wave kernel (gemm_10_split_wave.cu's Schedule, which this
    mirrors): ``units`` cluster tiles on ``clusters`` persistent clusters; the ``left`` units past
    the full waves each have an owner that computes K-tiles [0, split) and a helper (a cluster with
    no unit left) that computes the rest, up to ``rounds`` tails one after another."""
    left = units % clusters
    helpers = clusters - left
    rounds = -(-left // helpers)
    split = -(-rounds * k_tiles // (rounds + 1))
    return {"units": units, "clusters": clusters, "k_tiles": k_tiles, "full_waves": units // clusters,
            "left": left, "helpers": helpers, "rounds": rounds, "split": split if left else k_tiles}


def _cute_prepare(source: str, name: str, tile: dict, device: dict, sass_required: tuple[str, ...]):
    """prepare() for a CuTe GEMM kernel with a CTA tile of tile["BM"] x tile["BN"] x tile["BK"],
    compiled with the constants in ``tile``; refuses shapes that are not whole tiles. Its SASS
    must hold each of ``sass_required`` (HMMA, HGMMA, UTMALDG), or it is on a slower path.

    SM80 kernels (WARPS_M x WARPS_N warps) take (A, B, C, M, N, K) on an (M/BM, N/BN) grid;
    SM90 kernels (WARPGROUPS_M consumer warpgroups, after PRODUCER_WARPGROUPS) take a 1-D grid,
    the order of its tiles being the kernel's (one CTA a tile, or as many as fit at once when
    PERSISTENT), and dynamic shared memory of the size the kernel exports as SMEM_BYTES; kernels
    that must hold UTMALDG take tensor maps of A and B in place of the pointers (B's box is
    1/CLUSTER_M of its tile: each CTA of a cluster loads that slice for all of them), and those
    with EPILOGUE_N one of C, stored through shared memory a chunk at a time; SPLIT_WAVE
    kernels also take scratch for the partial sums of split tiles and their ready flags."""
    import cupy
    import numpy as np
    from .cuda import KERNELS, load_module
    from .sass import disassemble, histogram

    module, cubin = load_module(KERNELS / source, device, tile)
    counts = histogram(disassemble(cubin)[name])
    missing = [op for op in sass_required if not counts[op]]
    if missing:
        raise RuntimeError(f"{name}: no {', '.join(missing)} in its SASS: a slower path was compiled")
    kernel = module.get_function(name)
    hopper = "WARPGROUPS_M" in tile
    threads = (128 * (tile["WARPGROUPS_M"] + tile.get("PRODUCER_WARPGROUPS", 0)) if hopper
               else 32 * tile["WARPS_M"] * tile["WARPS_N"])
    cluster = tile.get("CLUSTER_M", 1)
    smem_dynamic = 0
    if hopper:
        smem_dynamic = int(cupy.ndarray((1,), cupy.int32, memptr=module.get_global("SMEM_BYTES")).get()[0])
        kernel.max_dynamic_shared_size_bytes = smem_dynamic
    uses_tma = "UTMALDG" in sass_required
    boxes = {"a": (tile["BM"], tile["BK"]), "b": (tile["BN"] // cluster, tile["BK"])}   # (rows, cols)
    if tile.get("EPILOGUE_N"):       # C leaves in chunks of EPILOGUE_N columns of a warpgroup's rows
        boxes["c"] = (tile["BM"] // tile["WARPGROUPS_M"], tile["EPILOGUE_N"])
    resident = resident_ctas(kernel, threads, smem_dynamic, cluster) if tile.get("PERSISTENT") else None

    def prepare(a, b, c):
        (m, k), n = a.shape, c.shape[1]
        if m % (tile["BM"] * cluster) or n % tile["BN"] or k % tile["BK"]:
            raise Refused(f"{name} takes whole {tile['BM'] * cluster}×{tile['BN']}×{tile['BK']} tiles only"
                          f"{' (a cluster of ' + str(cluster) + ' tiles over M)' if cluster > 1 else ''}; "
                          f"{m}×{n}×{k} is not")
        tiles = (m // tile["BM"], n // tile["BN"])
        grid = ((min(resident, tiles[0] * tiles[1]) if resident else tiles[0] * tiles[1]),) if hopper else tiles
        operands = (tensor_map(a, *boxes["a"]), tensor_map(b, *boxes["b"])) if uses_tma else (a, b)
        args = (*operands, tensor_map(c, *boxes["c"]) if "c" in boxes else c, np.int32(m), np.int32(n), np.int32(k))
        if tile.get("SPLIT_WAVE"):       # per CTA: one tile's partial sums, and a ready flag per consumer thread
            consumers = 128 * tile["WARPGROUPS_M"]
            args += (cupy.empty(grid[0] * tile["BM"] * tile["BN"], cupy.float32),
                     cupy.zeros(grid[0] * consumers, cupy.int32))
        run = lambda: kernel(grid, (threads,), args, shared_mem=smem_dynamic)
        attrs = kernel.attributes
        resources = {"threads_per_block": threads, "grid": list(grid),
                     "grid_axes": "tiles, in the kernel's order" if hopper else "x over M, y over N",
                     "regs_per_thread": int(attrs["num_regs"]),
                     "smem_static_bytes": int(attrs["shared_size_bytes"]), "smem_dynamic_bytes": smem_dynamic,
                     "local_bytes": int(attrs["local_size_bytes"]),
                     "tile": {**tile, "atom_mnk": list(ATOM_SHAPES[tile["MMA_ATOM"]])},
                     "sass": {**{op: counts[op] for op in sass_required}, "instructions": sum(counts.values())}}
        if uses_tma:
            resources["tma"] = {operand: tensor_map_args(*box) for operand, box in boxes.items()}
        if resident:
            resources["resident_ctas"] = resident
        if tile.get("SPLIT_WAVE"):
            resources["split_wave"] = split_wave(tiles[0] * tiles[1] // cluster, grid[0] // cluster, k // tile["BK"])
        return Launch(run, resources)
    return prepare


@dataclass(frozen=True)
class HandWritten:
    """A hand-written GEMM kernel as the harness and the profiler need it."""
    precision: str
    layout: str
    kernel_name: str                                  # for Nsight Compute's --kernel-name (a regex)
    make_prepare: Callable[[dict], Callable]          # device -> prepare(a, b, c) -> Launch
    reps: int = REPS
    tile: dict | None = None                          # CuTe kernels: the constants they are compiled with,
    source: str | None = None                         # their file in kernels/, function name, and the
    function: str | None = None                       # SASS instructions they must contain
    sass_required: tuple[str, ...] = ()


HAND_WRITTEN: dict[str, HandWritten] = {}


def _register_kernel(bid: str, title: str, source: str, kernel: HandWritten, extra_sources=(), min_cc=None):
    """The one registration of a hand-written GEMM kernel."""
    HAND_WRITTEN[bid] = kernel

    @register(bid, sources=[source, *extra_sources], code=source, title=title, timeout_s=600, min_cc=min_cc)
    def run(ctx) -> dict:
        return run_gemm(ctx, precision=kernel.precision, layout=kernel.layout, prepare=kernel.make_prepare(ctx.device),
                        warmup=min(3, kernel.reps), reps=kernel.reps, against_cublas=True)


def _cute(source: str, name: str, tile: dict, sass_required: tuple[str, ...]) -> HandWritten:
    return HandWritten("tf32", "b_kmajor", f"regex:^{name}$",
                       lambda device: _cute_prepare(source, name, tile, device, sass_required),
                       tile=tile, source=source, function=name, sass_required=sass_required)


_register_kernel("gemm.naive_fp32", "Naive FP32", "kernels/gemm_01_naive.py",
                 HandWritten("fp32", "b_row", "regex:gemm_naive", _naive_prepare, reps=5))
# Each step's CTA tile, warp layout and MMA atom: the constants its kernel is compiled
# with (-D), recorded with its result, and drawn in its diagram.
SM80_TF32_ATOM = {"MMA_ATOM": "SM80_16x8x8_F32TF32TF32F32_TN", "WARPS_M": 2, "WARPS_N": 2}
ATOM_SHAPES = {"SM80_16x8x8_F32TF32TF32F32_TN": (16, 8, 8),
               "SM90_64x128x8_F32TF32TF32_SS_TN": (64, 128, 8), "SM90_64x256x8_F32TF32TF32_SS_TN": (64, 256, 8)}
_CUTE_SOURCES = ("kernels/gemm_sm80_tiles.cuh", "bench/cuda.py", "bench/sass.py")
_SM90_SOURCES = ("kernels/gemm_sm90_tiles.cuh", "bench/cuda.py", "bench/sass.py")
_register_kernel("gemm.cute_mma_tf32", "CuTe simple MMA (TF32)", "kernels/gemm_02_cute_mma.cu",
                 _cute("gemm_02_cute_mma.cu", "gemm_cute_mma", {"BM": 128, "BN": 128, "BK": 8, **SM80_TF32_ATOM}, ("HMMA",)),
                 _CUTE_SOURCES)
for _bk in (8, 32):
    _register_kernel(f"gemm.cute_smem_k{_bk}", f"CuTe SMEM, K-tile {_bk} (TF32)", "kernels/gemm_03_cute_smem.cu",
                     _cute("gemm_03_cute_smem.cu", "gemm_cute_smem", {"BM": 128, "BN": 128, "BK": _bk, **SM80_TF32_ATOM}, ("HMMA",)),
                     _CUTE_SOURCES)


HOPPER = (9, 0)      # wgmma and TMA: compute capability 9.0 (sm_90a)
# Hopper steps: two warpgroups, each a 64 x BN slice of the CTA tile; BK = 32 floats is one
# 128-byte swizzle row. STAGES: shared buffers in the ring; GROUP_M: the CTA swizzle's band of
# tile rows (0: none).
def _sm90(bn: int, stages: int, group_m: int = 0, **beyond) -> dict:
    return {"BM": 128, "BN": bn, "BK": 32, "STAGES": stages, "GROUP_M": group_m, "WARPGROUPS_M": 2,
            "MMA_ATOM": f"SM90_64x{bn}x8_F32TF32TF32_SS_TN", **beyond}


# The swizzle band: a wave of 132 tiles of 128 x 256 spans 16 tile rows by 8.25 tile columns, so
# it reads 16 panels of A and 8.25 of B, each of the full K: fewer bytes than the 8 x 16.5 of a band
# of 8 (for the reference shape on the H100, 3.2 GB from DRAM against 4.2 GB, in Nsight Compute).
BAND = 16

HOPPER_SMEM_PER_CTA = 227 * 1024     # the most shared memory a Hopper CTA may opt in to


def staging_bytes(tile: dict) -> int:
    """Shared memory a kernel with a TMA-store epilogue stages C in: EPILOGUE_BUFFERS chunks of
    BM x EPILOGUE_N floats (gemm_11_tma_store.cu); none for the others."""
    return tile.get("EPILOGUE_BUFFERS", 0) * tile["BM"] * tile.get("EPILOGUE_N", 0) * 4


def stages_that_fit(bm: int, bn: int, bk: int = 32, reserved: int = 0) -> int:
    """The deepest ring of A and B tiles that fits HOPPER_SMEM_PER_CTA beside two mbarriers a
    stage, the 1 KiB alignment slack (gemm_sm90_tiles.cuh's SharedStorage, which rounds up to 1 KiB)
    and ``reserved`` bytes for other uses."""
    stage_bytes, barrier_bytes, slack = (bm + bn) * bk * 4, 16, 1024
    return (HOPPER_SMEM_PER_CTA - 2 * slack - reserved) // (stage_bytes + barrier_bytes)


_register_kernel("gemm.wgmma", "CuTe WGMMA (TF32)", "kernels/gemm_04_wgmma.cu",
                 _cute("gemm_04_wgmma.cu", "gemm_wgmma", _sm90(128, 1), ("HGMMA",)), _SM90_SOURCES, HOPPER)
for _bid, _title, _tile in (("gemm.wgmma_pipe", "WGMMA pipelined, 2 stages (TF32)", _sm90(128, 2)),
                            ("gemm.wgmma_pipe_128x256", "WGMMA pipelined, 3 stages, 128×256 (TF32)", _sm90(256, 3)),
                            ("gemm.wgmma_pipe_swizzle", "WGMMA pipelined + CTA swizzle (TF32)", _sm90(256, 3, BAND))):
    _register_kernel(_bid, _title, "kernels/gemm_05_wgmma_pipe.cu",
                     _cute("gemm_05_wgmma_pipe.cu", "gemm_wgmma_pipe", _tile, ("HGMMA",)), _SM90_SOURCES, HOPPER)
for _bn in (128, 256):
    _register_kernel(f"gemm.wgmma_tma_128x{_bn}", f"WGMMA + TMA, 128×{_bn} tile (TF32)", "kernels/gemm_06_wgmma_tma.cu",
                     _cute("gemm_06_wgmma_tma.cu", "gemm_wgmma_tma", _sm90(_bn, 3, BAND), ("HGMMA", "UTMALDG")),
                     _SM90_SOURCES, HOPPER)

# Beyond the reference deck: a producer warpgroup (PRODUCER_WARPGROUPS), as many stages as the
# shared memory holds, clusters of CLUSTER_M CTAs sharing B by TMA multicast, persistent CTAs.
_WS = {"PRODUCER_WARPGROUPS": 1}
_DEEP = stages_that_fit(128, 256)
_EPILOGUE = {"EPILOGUE_N": 32, "EPILOGUE_BUFFERS": 2}     # C staged 32 columns (128 bytes) at a time, double-buffered
_DEEP_BESIDE_STAGING = stages_that_fit(128, 256, reserved=staging_bytes({"BM": 128, **_EPILOGUE}))
for _bid, _title, _source, _name, _tile in (
        ("gemm.warp_specialized", "Warp-specialized, 3 stages (TF32)", "gemm_07_warp_specialized.cu",
         "gemm_warp_specialized", _sm90(256, 3, BAND, **_WS)),
        ("gemm.warp_specialized_deep", f"Warp-specialized, {_DEEP} stages (TF32)", "gemm_07_warp_specialized.cu",
         "gemm_warp_specialized", _sm90(256, _DEEP, BAND, **_WS)),
        ("gemm.cluster_multicast", "2-CTA clusters + TMA multicast (TF32)", "gemm_08_cluster_multicast.cu",
         "gemm_cluster_multicast", _sm90(256, _DEEP, BAND, **_WS, CLUSTER_M=2)),
        ("gemm.persistent_no_cluster", "Persistent, no cluster (TF32)", "gemm_09_persistent.cu",
         "gemm_persistent", _sm90(256, _DEEP, BAND, **_WS, CLUSTER_M=1, PERSISTENT=1)),
        ("gemm.persistent", "Persistent, 2-CTA clusters (TF32)", "gemm_09_persistent.cu",
         "gemm_persistent", _sm90(256, _DEEP, BAND, **_WS, CLUSTER_M=2, PERSISTENT=1)),
        ("gemm.split_wave", "Persistent + split last wave (TF32)", "gemm_10_split_wave.cu",
         "gemm_split_wave", _sm90(256, _DEEP, BAND, **_WS, CLUSTER_M=2, PERSISTENT=1, SPLIT_WAVE=1)),
        ("gemm.tma_store", "TMA-store epilogue (TF32)", "gemm_11_tma_store.cu",
         "gemm_tma_store", _sm90(256, _DEEP_BESIDE_STAGING, BAND, **_WS, CLUSTER_M=2, PERSISTENT=1, SPLIT_WAVE=1, **_EPILOGUE))):
    sass = ("HGMMA", "UTMALDG", "UTMASTG") if "EPILOGUE_N" in _tile else ("HGMMA", "UTMALDG")
    sources = (*_SM90_SOURCES, "kernels/gemm_sm90_split_wave.cuh") if "SPLIT_WAVE" in _tile else _SM90_SOURCES
    _register_kernel(_bid, _title, f"kernels/{_source}", _cute(_source, _name, _tile, sass), sources, HOPPER)
