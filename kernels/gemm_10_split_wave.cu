// Step 10 — split last wave: the tiles left over after the last full wave are split in two along K.
// Each has an owner cluster that computes its first K-tiles; the clusters with no tile left compute the
// rest, one tile after another, and leave partial sums in global memory for the owner to add.
//
// Same persistent clusters, multicast and ring as step 9. The split point balances the two: an
// owner's K-tiles cover a helper's run of tails, so the last wave ends sooner; all helpers work at the
// same K at the same time, like the owners, so the tiles they load are still shared in L2.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_split_wave.cuh"        // Schedule, Piece, FRAGMENT, produce

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_split_wave(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        float* C, int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split) {        // the last wave's plan (Schedule)
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank);
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);              // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
        Tensor tCrC = thr.partition_fragment_C(cta_tile_of_C(C, M, N, 0, 0)); // (MMA,MMA_M,MMA_N)
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        int fill = 0;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(tCrC);
            warpgroup_fence_operand(tCrC);       // else ptxas serializes the wgmmas: the sums are added outside them
            for (int k = p.k0; k < p.k1; ++k, ++fill)
                mma_stage(smem, mma, tCrA, tCrB, tCrC, fill, k > p.k0);
            warpgroup_wait<0>();
            warpgroup_fence_operand(tCrC);
            release_stage(smem, (fill - 1) % RING);
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(tCrC);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(tCrC);     // an owner: add them
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            copy(tCrC, thr.partition_C(cta_tile_of_C(C, M, N, tm, tn)));
        }
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
    // #endregion kernel
}
