"""cuBLASLt's FP8 GEMM through ctypes (CuPy binds cublasGemmEx, which has no FP8): e4m3 A and B,
both K-major (the only layout FP8 tensor cores read), FP32 accumulation, FP32 C = alpha A B.

``FAST_ACCUM`` off (cuBLASLt's default) promotes the tensor cores' partial sums into FP32 every
few K-tiles; on, it keeps them in the tensor cores' narrower accumulator, as a plain FP8 wgmma
loop does."""
from __future__ import annotations

import ctypes
from functools import lru_cache

# cublasLt.h (CUDA 12 and 13)
_COMPUTE_32F = 68                      # cublasComputeType_t CUBLAS_COMPUTE_32F
_R_32F, _R_8F_E4M3 = 0, 28             # cudaDataType_t
_OP_N, _OP_T = 0, 1
_DESC_TRANSA, _DESC_TRANSB, _DESC_FAST_ACCUM = 3, 4, 25    # cublasLtMatmulDescAttributes_t
_PREF_MAX_WORKSPACE_BYTES = 1          # cublasLtMatmulPreferenceAttributes_t
_HEURISTIC_BYTES = 96                  # cublasLtMatmulHeuristicResult_t: algo (64), workspaceSize, state, wavesCount, reserved[4]
WORKSPACE_BYTES = 32 * 2**20           # what cuBLAS asks for on Hopper


class CublasLtError(RuntimeError):
    pass


@lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    """The libcublasLt that CuPy's cuBLAS loaded (found in this process's maps), else the loader's."""
    from cupy_backends.cuda.libs import cublas          # noqa: F401  loads libcublas, which loads libcublasLt
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libcublasLt.so" in line})
    for name in (*paths, "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    raise CublasLtError("no libcublasLt found (CuPy's cuBLAS loads one; install CuPy for this CUDA)")


_NOT_SUPPORTED = 15                    # cublasStatus_t CUBLAS_STATUS_NOT_SUPPORTED


def _call(fn: str, *args) -> None:
    status = getattr(_library(), fn)(*args)
    if status:
        raise CublasLtError(f"{fn} returned cublasStatus_t {status}")


@lru_cache(maxsize=1)
def _handle() -> ctypes.c_void_p:
    handle = ctypes.c_void_p()
    _call("cublasLtCreate", ctypes.byref(handle))
    return handle


def _layout(dtype: int, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
    layout = ctypes.c_void_p()
    _call("cublasLtMatrixLayoutCreate", ctypes.byref(layout), ctypes.c_int(dtype),
          ctypes.c_uint64(rows), ctypes.c_uint64(cols), ctypes.c_int64(ld))
    return layout


def _set(desc: ctypes.c_void_p, attribute: int, value) -> None:
    _call("cublasLtMatmulDescSetAttribute", desc, ctypes.c_int(attribute), ctypes.byref(value), ctypes.sizeof(value))


@lru_cache(maxsize=None)
def _plan(m: int, n: int, k: int, fast_accum: bool):
    """The descriptors and the heuristic's first algorithm for row-major C (M x N) = A (M x K) B^T,
    B stored N x K: column-major, C^T (N x M) = B' A' with B' (K x N) transposed, the TN of FP8."""
    desc = ctypes.c_void_p()
    _call("cublasLtMatmulDescCreate", ctypes.byref(desc), ctypes.c_int(_COMPUTE_32F), ctypes.c_int(_R_32F))
    _set(desc, _DESC_TRANSA, ctypes.c_int32(_OP_T))
    _set(desc, _DESC_TRANSB, ctypes.c_int32(_OP_N))
    _set(desc, _DESC_FAST_ACCUM, ctypes.c_int8(int(fast_accum)))
    a, b, c = _layout(_R_8F_E4M3, k, n, k), _layout(_R_8F_E4M3, k, m, k), _layout(_R_32F, n, m, n)
    pref = ctypes.c_void_p()
    _call("cublasLtMatmulPreferenceCreate", ctypes.byref(pref))
    workspace = ctypes.c_uint64(WORKSPACE_BYTES)
    _call("cublasLtMatmulPreferenceSetAttribute", pref, ctypes.c_int(_PREF_MAX_WORKSPACE_BYTES),
          ctypes.byref(workspace), ctypes.sizeof(workspace))
    heuristic, found = ctypes.create_string_buffer(_HEURISTIC_BYTES), ctypes.c_int(0)
    status = _library().cublasLtMatmulAlgoGetHeuristic(_handle(), desc, a, b, c, c, pref, ctypes.c_int(1),
                                                       heuristic, ctypes.byref(found))
    if status == _NOT_SUPPORTED or (not status and found.value < 1):
        from .harness import Refused
        raise Refused(f"cuBLASLt has no FP8 GEMM for {m}x{n}x{k} (its FP8 GEMMs take dimensions in multiples of 16)")
    if status:
        raise CublasLtError(f"cublasLtMatmulAlgoGetHeuristic returned cublasStatus_t {status}")
    return desc, a, b, c, heuristic


def gemm_fp8(a, b, c, alpha: float = 1.0, fast_accum: bool = False) -> None:
    """C (M x N, FP32) = alpha A B^T on the current stream: A (M x K) and B (N x K) e4m3 bit patterns (uint8)."""
    import cupy
    (m, k), n = a.shape, b.shape[0]
    desc, a_layout, b_layout, c_layout, heuristic = _plan(m, n, k, fast_accum)
    workspace = _workspace(cupy.cuda.Device().id)
    alpha_, beta = ctypes.c_float(alpha), ctypes.c_float(0.0)
    ptr = lambda x: ctypes.c_void_p(x.data.ptr)
    _call("cublasLtMatmul", _handle(), desc, ctypes.byref(alpha_), ptr(b), a_layout, ptr(a), b_layout,
          ctypes.byref(beta), ptr(c), c_layout, ptr(c), c_layout, heuristic, ptr(workspace),
          ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(cupy.cuda.get_current_stream().ptr))


@lru_cache(maxsize=None)
def _workspace(device: int):
    import cupy
    return cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
