// Step 12 — a leaner main loop: the same kernel as step 11, its consumers' K-loop issuing fewer
// instructions. The wgmma descriptors are sliced by a warp-uniform warpgroup index, so ptxas keeps
// them in uniform registers; the ring's stage and its fill's parity are carried from one K-tile to
// the next instead of divided out of a running count (LeanRing, gemm_sm90_lean_loop.cuh).
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue, and through it lean_fragments and produce
#include "gemm_sm90_lean_loop.cuh"          // LeanRing

// #region kernel
extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_lean_loop(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split,          // the last wave's plan (Schedule)
        float alpha) {                                // C = alpha A B: FP8's per-tensor scales, 1 for the others
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank);
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, tCrA, tCrB, tCrC] = lean_fragments(smem);
        Epilogue epilogue(alpha);
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        LeanRing ring;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            ring.mma_piece(smem, mma, tCrA, tCrB, tCrC, p);
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(tCrC);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(tCrC);     // an owner: add them
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            epilogue.store(tCrC, tmaC, tm, tn);
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
// #endregion kernel
