// Step 3 — CuTe with shared memory: each CTA tile of A and B is copied once into shared memory with cp.async (16-byte copies), then read from there by every warp's MMAs.
//
// Same MMA and layouts as step 2 (gemm_sm80_tiles.cuh). K-tile 8 and K-tile 32 are two compiles of this file.
#include "gemm_sm80_tiles.cuh"

constexpr int VEC = 4;                 // floats per cp.async (16 bytes)
constexpr int PAD = 4;                 // floats of padding per shared row: rows stay 16-byte aligned, banks shift
using SmemLayoutA = Layout<Shape<Int<BM>, Int<BK>>, Stride<Int<BK + PAD>, _1>>;   // (BM,BK) K-major
using SmemLayoutB = Layout<Shape<Int<BN>, Int<BK>>, Stride<Int<BK + PAD>, _1>>;   // (BN,BK) K-major
// Copy threads: BK / VEC of them along K (one 16-byte vector each), the rest down the rows.
using CopyThreads = Layout<Shape<Int<THREADS * VEC / BK>, Int<BK / VEC>>, Stride<Int<BK / VEC>, _1>>;
static_assert(BK % VEC == 0 && BM % size<0>(CopyThreads{}) == 0 && BN % size<0>(CopyThreads{}) == 0,
              "the copy threads tile the CTA tile exactly");

extern "C" __global__ void __launch_bounds__(THREADS) gemm_cute_smem(const float* A, const float* B, float* C,
                                                                   int M, int N, int K) {
    __shared__ __align__(16) float smemA[cosize_v<SmemLayoutA>];
    __shared__ __align__(16) float smemB[cosize_v<SmemLayoutB>];
    auto [gA, gB, gC] = cta_tiles(A, B, C, M, N, K);             // (BM,BK,k), (BN,BK,k), (BM,BN)
    Tensor sA = make_tensor(make_smem_ptr(smemA), SmemLayoutA{});  // (BM,BK)
    Tensor sB = make_tensor(make_smem_ptr(smemB), SmemLayoutB{});  // (BN,BK)

    // #region kernel
    // global -> shared: cp.async, 16 bytes per thread per copy
    auto copyAB = make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEALWAYS<uint128_t>, float>{},
                                  CopyThreads{}, Layout<Shape<_1, Int<VEC>>>{});
    auto thrCopy = copyAB.get_slice(threadIdx.x);
    Tensor tAgA = thrCopy.partition_S(gA);                        // (CPY,CPY_M,CPY_K,k)
    Tensor tAsA = thrCopy.partition_D(sA);                        // (CPY,CPY_M,CPY_K)
    Tensor tBgB = thrCopy.partition_S(gB);                        // (CPY,CPY_N,CPY_K,k)
    Tensor tBsB = thrCopy.partition_D(sB);                        // (CPY,CPY_N,CPY_K)

    // shared -> registers -> tensor cores
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpLayout{});
    ThrMMA thr = mma.get_slice(threadIdx.x);
    Tensor tCsA = thr.partition_A(sA);                            // (MMA,MMA_M,MMA_K)
    Tensor tCsB = thr.partition_B(sB);                            // (MMA,MMA_N,MMA_K)
    Tensor tCgC = thr.partition_C(gC);                            // (MMA,MMA_M,MMA_N)
    Tensor tCrA = thr.partition_fragment_A(sA);                   // (MMA,MMA_M,MMA_K)
    Tensor tCrB = thr.partition_fragment_B(sB);                   // (MMA,MMA_N,MMA_K)
    Tensor tCrC = thr.make_fragment_C(tCgC);                      // (MMA,MMA_M,MMA_N)
    clear(tCrC);

    for (int k = 0; k < size<3>(tAgA); ++k) {
        copy(copyAB, tAgA(_, _, _, k), tAsA);                     // each tile leaves global memory once
        copy(copyAB, tBgB(_, _, _, k), tBsB);
        cp_async_fence();
        cp_async_wait<0>();
        __syncthreads();
        copy(tCsA, tCrA);                                         // shared -> registers (float -> tf32)
        copy(tCsB, tCrB);
        gemm(mma, tCrA, tCrB, tCrC);
        __syncthreads();                                          // the tile is read before it is overwritten
    }
    copy(tCrC, tCgC);
    // #endregion kernel
}
