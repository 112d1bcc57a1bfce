// Step 8 — clusters with TMA multicast: CLUSTER_M CTAs on neighbouring SMs compute vertically
// adjacent tiles, which share B's tile; each loads 1/CLUSTER_M of it and multicasts that slice
// into every CTA of the cluster, so L2 serves B's tile once per cluster instead of once per CTA.
//
// Same producer/consumer warpgroups as step 7. A stage is refilled only when the consumers of
// every CTA in the cluster have released it, so each "empty" barrier collects their arrivals too.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tiles.cuh"              // B_SLICE; the empty barriers count the whole cluster's warps

static_assert(CLUSTER_M >= 2, "a cluster shares B between at least two CTAs");

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_cluster_multicast(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    const int k_tiles = K / BK;
    const int rank = block_rank_in_cluster();
    init_ring_barriers(smem);                // in every CTA before any peer's multicast lands

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0)
            for (int k = 0; k < k_tiles; ++k) {
                int s = acquire_stage(smem, k);      // read in every CTA; full[s] counts A and all of B's slices
                SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
                SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                                 smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
            }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);              // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
        Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));       // (MMA,MMA_M,MMA_N)
        Tensor tCrC = thr.make_fragment_C(tCgC);                             // (MMA,MMA_M,MMA_N)
        clear(tCrC);
        for (int k = 0; k < k_tiles; ++k)
            mma_stage(smem, mma, tCrA, tCrB, tCrC, k, k > 0);    // K-tile k-1 is done: release it cluster-wide
        warpgroup_wait<0>();
        copy(tCrC, tCgC);
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
    // #endregion kernel
}
