// Step 12 — a leaner main loop: the same kernel as step 11, its consumers' K-loop issuing fewer
// instructions. The wgmma descriptors are sliced by a warp-uniform warpgroup index, so ptxas keeps
// them in uniform registers; the ring's stage and its fill's parity are carried from one K-tile to
// the next instead of divided out of a running count.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue, and through it lean_fragments

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
        if (threadIdx.x == 0) {
            int fill = 0;
            Piece p;
            for (int i = 0; schedule.piece(i, p); ++i) {
                auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
                for (int k = p.k0; k < p.k1; ++k, ++fill) {
                    int s = acquire_stage(smem, fill);
                    SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
                    SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                                     smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
                }
            }
        }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, tCrA, tCrB, tCrC] = lean_fragments(smem);
        Epilogue epilogue(alpha);
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        // The ring's next stage and its fill's parity, carried rather than divided out of a count.
        uint32_t stage = 0, phase = 0, previous = 0;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(tCrC);
            warpgroup_fence_operand(tCrC);       // else ptxas serializes the wgmmas: the sums are added outside them
            for (int k = p.k0; k < p.k1; ++k) {
                wait_barrier(smem.full[stage], phase);
                mma_async(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
                warpgroup_wait<1>();                             // the K-tile before this one has been read
                if (k > p.k0) release_stage(smem, previous);
                previous = stage;
                if (++stage == RING) stage = 0, phase ^= 1;
            }
            warpgroup_wait<0>();
            warpgroup_fence_operand(tCrC);
            release_stage(smem, previous);
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
