"""cuBLAS through CuPy's cublasGemmEx binding, and FP8 through cuBLASLt (bench/gemm/cublaslt.py): the
baseline every GEMM is compared with."""
from __future__ import annotations

_CUDA_R_32F, _CUDA_R_16BF = 0, 14                       # cudaDataType, library_types.h
_COMPUTE = {"fp32": "CUBLAS_COMPUTE_32F", "tf32": "CUBLAS_COMPUTE_32F_FAST_TF32", "bf16": "CUBLAS_COMPUTE_32F"}


def gemm(a, b, c, layout: str, precision: str, alpha: float = 1.0, scales=None) -> None:
    """C = alpha A B for row-major C through column-major cuBLAS: compute C^T = B^T A^T. C is FP32,
    or BF16 where it holds BF16 bit patterns (uint16); FP8 operands are e4m3 bit patterns (uint8),
    scaled by alpha or by blocks (``scales``: cuBLASLt's block scales, cublaslt.block_scales)."""
    import cupy
    import numpy as np
    from cupy_backends.cuda.libs import cublas

    if precision == "fp8":
        from .cublaslt import gemm_fp8, gemm_fp8_blocks
        return gemm_fp8(a, b, c, alpha) if scales is None else gemm_fp8_blocks(a, b, c, scales)

    m, k = a.shape
    n = c.shape[1]
    handle = cupy.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    cublas.setMathMode(handle, cublas.CUBLAS_DEFAULT_MATH)   # TF32 only where the compute type asks
    dtype = _CUDA_R_16BF if precision == "bf16" else _CUDA_R_32F
    alpha_, zero = np.full(1, alpha, np.float32), np.zeros(1, np.float32)
    trans_b = cublas.CUBLAS_OP_T if layout == "b_kmajor" else cublas.CUBLAS_OP_N
    ldb = k if layout == "b_kmajor" else n
    cublas.gemmEx(handle, trans_b, cublas.CUBLAS_OP_N, n, m, k,
                  alpha_.ctypes.data, b.data.ptr, dtype, ldb, a.data.ptr, dtype, k,
                  zero.ctypes.data, c.data.ptr, _CUDA_R_16BF if c.dtype == cupy.uint16 else _CUDA_R_32F, n,
                  getattr(cublas, _COMPUTE[precision]), -1)   # -1: CUBLAS_GEMM_DEFAULT
