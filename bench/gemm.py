"""The GEMM family: cuBLAS baselines now, the hand-written progression later.

Shape and layouts are the reference deck's: A(M x K) row-major times B(K x N)
gives C(M x N) row-major, with B stored either row-major ("b_row", N contiguous)
or K-major ("b_kmajor", i.e. B transposed in memory, as TF32 wgmma wants both
operands). Every result is checked against float64 on sampled entries, and C is
poisoned with NaN first so that an unwritten element fails the check."""
from __future__ import annotations

from dataclasses import dataclass

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
LAYOUTS = {"b_row": "B row-major (N contiguous)", "b_kmajor": "B K-major (stored transposed)"}
SEED = 2026
SAMPLE_ROWS = SAMPLE_COLS = 48   # float64 reference on a 48 x 48 sample of C
WARMUP, REPS = 5, 100

# Relative Frobenius error allowed on the sample, by arithmetic: FP32 accumulates
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
    """Fresh random A and B (B transposed in memory for b_kmajor) and their float64 views."""
    import cupy
    rng = cupy.random.default_rng(seed)
    a = rng.standard_normal((shape.m, shape.k), dtype=cupy.float32)
    b = rng.standard_normal((shape.n, shape.k) if layout == "b_kmajor" else (shape.k, shape.n), dtype=cupy.float32)
    if precision == "bf16":
        a, b = _to_bf16_bits(a), _to_bf16_bits(b)
    return a, b


def sampled_error(a, b, c, layout: str, precision: str, seed: int = SEED) -> dict:
    """Relative Frobenius error of C against a float64 product on sampled rows x columns,
    and whether every element of C was written (no NaN left from the poison)."""
    import cupy
    import numpy as np
    rng = np.random.default_rng(seed + 1)
    m, n = c.shape
    rows = cupy.asarray(rng.choice(m, SAMPLE_ROWS, replace=False))
    cols = cupy.asarray(rng.choice(n, SAMPLE_COLS, replace=False))
    up = _bf16_to_f64 if precision == "bf16" else (lambda x: x.astype(cupy.float64))
    a_s = up(a[rows])
    b_s = up(b[cols]).T if layout == "b_kmajor" else up(b[:, cols])
    ref = a_s @ b_s
    got = c[rows][:, cols].astype(cupy.float64)
    err = float(cupy.linalg.norm(got - ref) / cupy.linalg.norm(ref))
    unwritten = int(cupy.isnan(c).sum())
    tol = TOLERANCE[precision]
    passed = unwritten == 0 and err <= tol
    check = {"passed": passed, "rel_error": err, "tolerance": tol, "unwritten": unwritten,
             "sampled": SAMPLE_ROWS * SAMPLE_COLS, "reference": "float64 on sampled rows x columns"}
    if not passed:
        check["detail"] = (f"{unwritten} elements of C never written" if unwritten
                           else f"relative error {err:.2e} above {precision} tolerance {tol:.0e}")
    return check


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
        import cupy
        a, b = make_operands(SHAPE, layout, precision)
        c = cupy.full((SHAPE.m, SHAPE.n), cupy.nan, dtype=cupy.float32)
        _cublas_gemm(a, b, c, layout, precision)
        check = sampled_error(a, b, c, layout, precision)
        t = time_gpu(lambda: _cublas_gemm(a, b, c, layout, precision), warmup=WARMUP, reps=REPS)
        tflops = SHAPE.flops / (t["median"] * 1e-3) / 1e12
        ctx.progress(f"{tflops:.1f} TFLOPS, rel. error {check['rel_error']:.1e}")
        return {"params": {"m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "layout": layout,
                           "precision": precision, "output": "fp32", "warmup": WARMUP, "reps": REPS,
                           "seed": SEED},
                "check": check, "time_ms": t, "tflops": tflops}


for _precision in ("fp32", "tf32", "bf16"):
    for _layout in LAYOUTS:
        _register_cublas(_precision, _layout)
