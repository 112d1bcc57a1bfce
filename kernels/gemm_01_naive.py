"""Step 1 — naive FP32 GEMM: one thread per element of C, every operand read from global memory."""
from numba import cuda, float32

BLOCK = (16, 16)   # threads per block: x across the columns of C (coalesced B reads), y down its rows


# #region kernel
@cuda.jit
def gemm_naive(a, b, c):
    """C(M,N) = A(M,K) · B(K,N), all row-major float32."""
    col, row = cuda.grid(2)
    if row >= c.shape[0] or col >= c.shape[1]:
        return
    acc = float32(0.0)                   # a bare 0.0 would make the sum float64
    for k in range(a.shape[1]):          # K loads of A and K loads of B for K FMAs
        acc += a[row, k] * b[k, col]
    c[row, col] = acc
# #endregion kernel


def grid(m: int, n: int) -> tuple[int, int]:
    """Blocks covering C: any M and N (the kernel guards the edges)."""
    return ((n + BLOCK[0] - 1) // BLOCK[0], (m + BLOCK[1] - 1) // BLOCK[1])
