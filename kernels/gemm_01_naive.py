"""Step 1 — naive FP32 GEMM: one thread per element of C, every operand read from global memory.

The matrices arrive flat (row-major) with their sizes, and the indices are
unsigned 32-bit: with 2-D arrays and signed indices numba emits about fifteen
instructions of 64-bit address and negative-index arithmetic per load, and the
kernel ran at a third of this speed on the H100."""
from numba import cuda, float32, uint32

BLOCK = (16, 16)   # threads per block: x across the columns of C (coalesced B reads), y down its rows


# #region kernel
@cuda.jit
def gemm_naive(a, b, c, m, n, k):
    """C(m,n) = A(m,k) · B(k,n); a, b, c flat row-major float32."""
    col, row = cuda.grid(2)
    if row >= m or col >= n:
        return
    a_at = uint32(row) * uint32(k)     # A[row, 0]
    b_at = uint32(col)                 # B[0, col]
    acc = float32(0.0)                 # a bare 0.0 would make the sum float64
    for _ in range(uint32(k)):         # k loads of A, k loads of B, k FMAs: no reuse
        acc += a[a_at] * b[b_at]
        a_at += uint32(1)
        b_at += uint32(n)
    c[uint32(row) * uint32(n) + uint32(col)] = acc
# #endregion kernel


def grid(m: int, n: int) -> tuple[int, int]:
    """Blocks covering C: any m and n (the kernel guards the edges)."""
    return ((n + BLOCK[0] - 1) // BLOCK[0], (m + BLOCK[1] - 1) // BLOCK[1])
