// Step 13 (FP8 only) — sums promoted to FP32: Hopper's FP8 tensor cores add their products into an
// accumulator of about 14 bits, so over a long K the sum drifts. Each consumer warpgroup starts
// every K-tile's wgmmas from zero and, once they are done, adds their sums into FP32 registers of
// its own. The accumulator and the FP32 sums both live in registers, so the tile is narrower than
// step 12's: BN / 2 floats each of the 232 a consumer thread has. Its wgmma descriptors are step 12's
// (lean_fragments, in uniform registers): with each thread building its own, about 25 more instructions
// a K-tile lie between one K-tile's last wgmma and the next one's first, and the step ran 7-9% slower.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_promote.cuh"          // mma_k_tile_alone, Epilogue

static_assert(2 * FRAGMENT + 40 <= CONSUMER_REGS, "room for the accumulator, the FP32 sums and the loop");

// #region kernel
extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, CTAS_PER_SM) gemm_fp8_promote(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split,          // the last wave's plan (Schedule)
        float alpha) {                                // C = alpha A B: the per-tensor scales
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup
        producer_registers();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank);
    } else {
        consumer_registers();
        auto [mma, tCrA, tCrB, tCrC] = lean_fragments(smem);      // (MMA,MMA_M|N,MMA_K,PIPE) descriptors, one K-tile's sums
        Tensor sums = make_fragment_like(tCrC);                                  // (MMA,MMA_M,MMA_N) FP32: the whole K's
        Epilogue epilogue(alpha);
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        uint32_t stage = 0, phase = 0;
        Skew skew;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(sums);
            for (int k = p.k0; k < p.k1; ++k) {
                wait_barrier(smem.full[stage], phase);
                skew.before_first();
                mma_k_tile_alone(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
                warpgroup_wait<0>();             // the K-tile's sums are in tCrC; the other warpgroup's wgmmas run meanwhile
                skew.after_first();
                release_stage(smem, stage);
                CUTE_UNROLL
                for (int j = 0; j < size(sums); ++j) sums(j) += tCrC(j);     // promoted: added in FP32
                if (++stage == RING) stage = 0, phase ^= 1;
            }
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(sums);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(sums);     // an owner: add them
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            epilogue.store(sums, tmaC, tm, tn);
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
// #endregion kernel
