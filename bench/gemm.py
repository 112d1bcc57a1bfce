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
from .timing import time_gpu


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
WARMUP, REPS = 5, 100

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


def run_gemm(ctx, *, precision: str, layout: str, prepare, warmup: int = WARMUP, reps: int = REPS) -> dict:
    """The one GEMM harness: fresh operands, poisoned C, float64 check, then timing
    at the reference shape; then correctness (or a clear refusal) at ODD_SHAPE."""
    import cupy

    def checked(shape):
        a, b = make_operands(shape, layout, precision)
        c = cupy.full((shape.m, shape.n), cupy.nan, dtype=cupy.float32)
        launch = prepare(a, b, c)
        launch.run()
        cupy.cuda.get_current_stream().synchronize()
        return launch, reference_error(a, b, c, layout, precision)

    launch, check = checked(SHAPE)
    t = time_gpu(launch.run, warmup=warmup, reps=reps)
    tflops = SHAPE.flops / (t["median"] * 1e-3) / 1e12
    try:
        _, odd_check = checked(ODD_SHAPE)
        odd = {"outcome": "correct" if odd_check["passed"] else "wrong", "check": odd_check}
    except Refused as e:
        odd = {"outcome": "refused", "reason": str(e)}
    odd["shape"] = [ODD_SHAPE.m, ODD_SHAPE.n, ODD_SHAPE.k]
    if odd["outcome"] == "wrong":
        check = {**check, "passed": False, "detail": f"wrong at the odd shape {odd['shape']}: {odd_check['detail']}"}
    ctx.progress(f"{tflops:.1f} TFLOPS, rel. error {check['rel_error']:.1e}, odd shape {odd['outcome']}")
    record = {"params": {"m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "layout": layout, "precision": precision,
                         "output": "fp32", "warmup": warmup, "reps": reps, "seed": SEED},
              "check": check, "time_ms": t, "tflops": tflops, "odd_shape": odd}
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


def _cute_prepare(source: str, name: str, tile: dict, threads: int, device: dict, tensor_op: str):
    """prepare() for a CuTe GEMM kernel taking (A, B, C, M, N, K) with a CTA tile of
    tile["BM"] x tile["BN"] x tile["BK"], compiled with those constants; refuses
    shapes that are not whole tiles. The SASS must hold ``tensor_op`` instructions."""
    import numpy as np
    from .cuda import KERNELS, load_module
    from .sass import disassemble, histogram

    module, cubin = load_module(KERNELS / source, device, tile)
    counts = histogram(disassemble(cubin)[name])
    if not counts[tensor_op]:
        raise RuntimeError(f"{name}: no {tensor_op} in its SASS: the tensor cores are not used")

    def prepare(a, b, c):
        (m, k), n = a.shape, c.shape[1]
        if m % tile["BM"] or n % tile["BN"] or k % tile["BK"]:
            raise Refused(f"{name} takes whole {tile['BM']}×{tile['BN']}×{tile['BK']} tiles only; "
                          f"{m}×{n}×{k} is not")
        kernel = module.get_function(name)
        grid = (m // tile["BM"], n // tile["BN"])
        run = lambda: kernel(grid, (threads,), (a, b, c, np.int32(m), np.int32(n), np.int32(k)))
        attrs = kernel.attributes
        return Launch(run, {"threads_per_block": threads, "grid": list(grid), "grid_axes": "x over M, y over N",
                            "regs_per_thread": int(attrs["num_regs"]),
                            "smem_static_bytes": int(attrs["shared_size_bytes"]), "smem_dynamic_bytes": 0,
                            "local_bytes": int(attrs["local_size_bytes"]),
                            "tile": {**tile, "atom_mnk": list(ATOM_SHAPES[tile["MMA_ATOM"]])},
                            "sass": {tensor_op: counts[tensor_op], "instructions": sum(counts.values())}})
    return prepare


@dataclass(frozen=True)
class HandWritten:
    """A hand-written GEMM kernel as the harness and the profiler need it."""
    precision: str
    layout: str
    kernel_name: str                                  # for Nsight Compute's --kernel-name (a regex)
    make_prepare: Callable[[dict], Callable]          # device -> prepare(a, b, c) -> Launch
    reps: int = 20


HAND_WRITTEN: dict[str, HandWritten] = {}


def _register_kernel(bid: str, title: str, source: str, kernel: HandWritten, extra_sources=()):
    """The one registration of a hand-written GEMM kernel."""
    HAND_WRITTEN[bid] = kernel

    @register(bid, sources=[source, *extra_sources], code=source, title=title, timeout_s=600)
    def run(ctx) -> dict:
        return run_gemm(ctx, precision=kernel.precision, layout=kernel.layout,
                        prepare=kernel.make_prepare(ctx.device), warmup=min(3, kernel.reps), reps=kernel.reps)


def _cute(source: str, name: str, tile: dict) -> HandWritten:
    threads = 32 * tile["WARPS_M"] * tile["WARPS_N"]
    return HandWritten("tf32", "b_kmajor", f"regex:^{name}$",
                       lambda device: _cute_prepare(source, name, tile, threads, device, tensor_op="HMMA"))


_register_kernel("gemm.naive_fp32", "Naive FP32", "kernels/gemm_01_naive.py",
                 HandWritten("fp32", "b_row", "regex:gemm_naive", _naive_prepare, reps=5))
# Each step's CTA tile, warp layout and MMA atom: the constants its kernel is compiled
# with (-D), recorded with its result, and drawn in its diagram.
SM80_TF32_ATOM = {"MMA_ATOM": "SM80_16x8x8_F32TF32TF32F32_TN", "WARPS_M": 2, "WARPS_N": 2}
ATOM_SHAPES = {"SM80_16x8x8_F32TF32TF32F32_TN": (16, 8, 8)}
_CUTE_SOURCES = ("kernels/gemm_sm80_tiles.cuh", "bench/cuda.py", "bench/sass.py")
_register_kernel("gemm.cute_mma_tf32", "CuTe simple MMA (TF32)", "kernels/gemm_02_cute_mma.cu",
                 _cute("gemm_02_cute_mma.cu", "gemm_cute_mma", {"BM": 128, "BN": 128, "BK": 8, **SM80_TF32_ATOM}),
                 _CUTE_SOURCES)
for _bk in (8, 32):
    _register_kernel(f"gemm.cute_smem_k{_bk}", f"CuTe SMEM, K-tile {_bk} (TF32)", "kernels/gemm_03_cute_smem.cu",
                     _cute("gemm_03_cute_smem.cu", "gemm_cute_smem", {"BM": 128, "BN": 128, "BK": _bk, **SM80_TF32_ATOM}),
                     _CUTE_SOURCES)
