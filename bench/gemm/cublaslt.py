"""cuBLASLt's FP8 GEMM through ctypes (CuPy binds cublasGemmEx, which has no FP8): e4m3 A and B,
both K-major (the only layout FP8 tensor cores read), FP32 accumulation, C = alpha A B in FP32 or BF16.

With gemm_fp8_blocks, A and B carry DeepSeek-V3's block scales instead of alpha (cuBLASLt 12.9 and later,
on compute capability 9.0 only): A per 1 x 128 of a row, B per 128 x 128.

``FAST_ACCUM`` off (cuBLASLt's default) promotes the tensor cores' partial sums into FP32 every
few K-tiles; on, it keeps them in the tensor cores' narrower accumulator, as a plain FP8 wgmma
loop does."""
from __future__ import annotations

import ctypes
from functools import lru_cache

from .catalogue import Refused

# cublasLt.h (CUDA 12 and 13)
_COMPUTE_32F = 68                      # cublasComputeType_t CUBLAS_COMPUTE_32F
_R_32F, _R_16BF, _R_8F_E4M3 = 0, 14, 28     # cudaDataType_t
_OUTPUT_TYPES = {"fp32": _R_32F, "bf16": _R_16BF}
_OP_N, _OP_T = 0, 1
_DESC_TRANSA, _DESC_TRANSB, _DESC_FAST_ACCUM = 3, 4, 25    # cublasLtMatmulDescAttributes_t
_DESC_A_SCALE_POINTER, _DESC_B_SCALE_POINTER, _DESC_A_SCALE_MODE, _DESC_B_SCALE_MODE = 17, 18, 31, 32
_SCALE_VEC128_32F, _SCALE_BLK128x128_32F = 4, 5     # cublasLtMatmulMatrixScale_t
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
def _plan(m: int, n: int, k: int, fast_accum: bool, output: str, scale_pointers: tuple[int, int] | None = None):
    """The descriptors and the heuristic's first algorithm for row-major C (M x N) = A (M x K) B^T,
    B stored N x K: column-major, C^T (N x M) = B' A' with B' (K x N) transposed, the TN of FP8."""
    desc = ctypes.c_void_p()
    _call("cublasLtMatmulDescCreate", ctypes.byref(desc), ctypes.c_int(_COMPUTE_32F), ctypes.c_int(_R_32F))
    _set(desc, _DESC_TRANSA, ctypes.c_int32(_OP_T))
    _set(desc, _DESC_TRANSB, ctypes.c_int32(_OP_N))
    _set(desc, _DESC_FAST_ACCUM, ctypes.c_int8(int(fast_accum)))
    if scale_pointers:   # cuBLAS's A is our B (N x K): 128 x 128 blocks; its B our A: 1 x 128
        _set(desc, _DESC_A_SCALE_MODE, ctypes.c_int32(_SCALE_BLK128x128_32F))
        _set(desc, _DESC_B_SCALE_MODE, ctypes.c_int32(_SCALE_VEC128_32F))
        # the heuristic refuses block modes without their scales (status 7): set before it
        _set(desc, _DESC_A_SCALE_POINTER, ctypes.c_void_p(scale_pointers[1]))
        _set(desc, _DESC_B_SCALE_POINTER, ctypes.c_void_p(scale_pointers[0]))
    a, b, c = _layout(_R_8F_E4M3, k, n, k), _layout(_R_8F_E4M3, k, m, k), _layout(_OUTPUT_TYPES[output], n, m, n)
    pref = ctypes.c_void_p()
    _call("cublasLtMatmulPreferenceCreate", ctypes.byref(pref))
    workspace = ctypes.c_uint64(WORKSPACE_BYTES)
    _call("cublasLtMatmulPreferenceSetAttribute", pref, ctypes.c_int(_PREF_MAX_WORKSPACE_BYTES),
          ctypes.byref(workspace), ctypes.sizeof(workspace))
    heuristic, found = ctypes.create_string_buffer(_HEURISTIC_BYTES), ctypes.c_int(0)
    status = _library().cublasLtMatmulAlgoGetHeuristic(_handle(), desc, a, b, c, c, pref, ctypes.c_int(1),
                                                       heuristic, ctypes.byref(found))
    if status == _NOT_SUPPORTED or (not status and found.value < 1):
        raise Refused(f"cuBLASLt has no FP8 GEMM{' with block scales' if scale_pointers else ''} for {m}x{n}x{k} "
                      "(its FP8 GEMMs take dimensions in multiples of 16)")
    if status:
        raise CublasLtError(f"cublasLtMatmulAlgoGetHeuristic returned cublasStatus_t {status}")
    return desc, a, b, c, heuristic


def _output(c) -> str:
    """C's type: BF16 bit patterns (uint16, as CuPy holds them) or FP32."""
    import cupy
    return "bf16" if c.dtype == cupy.uint16 else "fp32"


def gemm_fp8(a, b, c, alpha: float = 1.0, fast_accum: bool = False) -> None:
    """C (M x N, FP32, or BF16 bit patterns) = alpha A B^T on the current stream: A (M x K) and B
    (N x K) e4m3 bit patterns (uint8)."""
    (m, k), n = a.shape, b.shape[0]
    _matmul(*_plan(m, n, k, fast_accum, _output(c)), a, b, c, alpha)


def _matmul(desc, a_layout, b_layout, c_layout, heuristic, a, b, c, alpha: float) -> None:
    import cupy
    workspace = _workspace(cupy.cuda.Device().id)
    alpha_, beta = ctypes.c_float(alpha), ctypes.c_float(0.0)
    ptr = lambda x: ctypes.c_void_p(x.data.ptr)
    _call("cublasLtMatmul", _handle(), desc, ctypes.byref(alpha_), ptr(b), a_layout, ptr(a), b_layout,
          ctypes.byref(beta), ptr(c), c_layout, ptr(c), c_layout, heuristic, ptr(workspace),
          ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(cupy.cuda.get_current_stream().ptr))


def block_scales(sfa, sfb):
    """cuBLASLt's layouts of block scales (harness.block_quantize's): A's (M x L, L = K/128 rounded
    up) M-major; B's (N/128 x L) K-major with each row padded to a multiple of 4 (unpadded, cuBLASLt
    returns a wrong product without an error)."""
    import cupy
    rows, width = sfb.shape
    padded = cupy.zeros((rows, -(-width // 4) * 4), dtype=cupy.float32)
    padded[:, :width] = sfb
    return cupy.ascontiguousarray(sfa.T), padded


def gemm_fp8_blocks(a, b, c, scales) -> None:
    """C (M x N, BF16 bit patterns or FP32) = A B^T with block scales, on the current stream: A
    (M x K) and B (N x K) e4m3 bit patterns, ``scales`` from block_scales()."""
    (m, k), n = a.shape, b.shape[0]
    _matmul(*_plan(m, n, k, False, _output(c), tuple(x.data.ptr for x in scales)), a, b, c, 1.0)


@lru_cache(maxsize=None)
def _workspace(device: int):
    import cupy
    return cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
