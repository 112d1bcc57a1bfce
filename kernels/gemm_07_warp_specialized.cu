// Step 7 — warp specialization: a producer warpgroup issues every TMA load and the consumer
// warpgroups only wait, multiply and release; setmaxnreg hands the producer's registers to them.
//
// Same tiles, tensor maps and full/empty mbarriers as step 6; the loads no longer wait on the
// consumers' loop, so they run up to STAGES K-tiles ahead. The deeper-pipeline variant is this file
// compiled with as many stages as the shared-memory budget holds (bench/gemm/launch.py).
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tiles.cuh"              // with PRODUCER_WARPGROUPS: PRODUCER_REGS, CONSUMER_REGS

extern "C" __global__ void __launch_bounds__(THREADS, 1) gemm_warp_specialized(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    const int k_tiles = K / BK;
    init_ring_barriers(smem);

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0)
            for (int k = 0; k < k_tiles; ++k) {
                int s = acquire_stage(smem, k);
                SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
                SM90_TMA_LOAD_2D::copy(&tmaB, &smem.full[s], TMA_HINT, smem.B + s * BN * BK, k * BK, tn * BN);
            }
        return;
    }
    cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
    auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
    Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));           // (MMA,MMA_M,MMA_N)
    Tensor tCrC = thr.make_fragment_C(tCgC);                                 // (MMA,MMA_M,MMA_N)
    clear(tCrC);
    for (int k = 0; k < k_tiles; ++k)
        mma_stage(smem, mma, tCrA, tCrB, tCrC, k, k > 0);        // K-tile k-1 is done: release its stage
    warpgroup_wait<0>();
    copy(tCrC, tCgC);
    // #endregion kernel
}
