// Step 6 — WGMMA + TMA: one thread issues tensor-map bulk copies (TMA) of whole A and B tiles into a
// STAGES-deep ring of shared buffers. Two mbarriers per stage: "full" counts the bytes landing and
// the warpgroups wait on it; "empty" collects one arrival per warp done reading, and the producer
// waits on it before refilling. No thread computes an address or moves a byte of A or B any more.
//
// The tensor maps come from Python (bench/gemm.py, cuTensorMapEncodeTiled) with the same BM, BN, BK
// and 128-byte swizzle as the shared layout here (gemm_sm90_tiles.cuh).
#ifndef STAGES
#define STAGES 3
#endif
#include <cuda.h>                        // CUtensorMap
#include "gemm_sm90_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1) gemm_wgmma_tma(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
    Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));           // (MMA,MMA_M,MMA_N)
    Tensor tCrC = thr.make_fragment_C(tCgC);                                 // (MMA,MMA_M,MMA_N)
    clear(tCrC);
    init_ring_barriers(smem);

    // #region kernel
    const bool producer = threadIdx.x == 0;
    const int k_tiles = K / BK;
    auto load = [&](int k) {             // producer only: both tiles of K-tile k, completing on full[k % STAGES]
        if (k >= k_tiles) return;
        int s = acquire_stage(smem, k);                           // its previous tile has been read
        SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
        SM90_TMA_LOAD_2D::copy(&tmaB, &smem.full[s], TMA_HINT, smem.B + s * BN * BK, k * BK, tn * BN);
    };
    if (producer)
        for (int k = 0; k < STAGES - 1; ++k) load(k);

    for (int k = 0; k < k_tiles; ++k) {
        mma_stage(smem, mma, tCrA, tCrB, tCrC, k, k > 0);       // K-tile k-1 is done in this warpgroup: released
        if (producer) load(k + STAGES - 1);                      // into stage (k - 1) % STAGES, once all have read it
    }
    warpgroup_wait<0>();
    copy(tCrC, tCgC);
    // #endregion kernel
}
