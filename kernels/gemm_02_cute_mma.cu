// Step 2 — CuTe simple MMA: TF32 tensor cores (SM80 16x8x8 atom, 4 warps tiled 2x2), operands straight from global memory.
//
// C(M,N) = A(M,K) · B(K,N), A and B K-major; tile constants, atom and warp layout in gemm_sm80_tiles.cuh.
#include "gemm_sm80_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS) gemm_cute_mma(const float* A, const float* B, float* C,
                                                                  int M, int N, int K) {
    auto [gA, gB, gC] = cta_tiles(A, B, C, M, N, K);             // (BM,BK,k), (BN,BK,k), (BM,BN)

    // #region kernel
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpLayout{});
    ThrMMA thr = mma.get_slice(threadIdx.x);
    Tensor tCgA = thr.partition_A(gA);                            // (MMA,MMA_M,MMA_K,k)
    Tensor tCgB = thr.partition_B(gB);                            // (MMA,MMA_N,MMA_K,k)
    Tensor tCgC = thr.partition_C(gC);                            // (MMA,MMA_M,MMA_N)
    Tensor tCrA = thr.partition_fragment_A(gA(_, _, 0));          // (MMA,MMA_M,MMA_K)
    Tensor tCrB = thr.partition_fragment_B(gB(_, _, 0));          // (MMA,MMA_N,MMA_K)
    Tensor tCrC = thr.make_fragment_C(tCgC);                      // (MMA,MMA_M,MMA_N)
    clear(tCrC);

    for (int k = 0; k < size<3>(tCgA); ++k) {
        copy(tCgA(_, _, _, k), tCrA);                             // global -> registers (float -> tf32)
        copy(tCgB(_, _, _, k), tCrB);
        gemm(mma, tCrA, tCrB, tCrC);                              // mma.sync on the tensor cores
    }
    copy(tCrC, tCgC);                                             // registers -> global
    // #endregion kernel
}
