// Step 13 (FP8 only) — sums promoted to FP32: Hopper's FP8 tensor cores add their products into an
// accumulator of about 14 bits, so over a long K the sum drifts. Each consumer warpgroup starts
// every K-tile's wgmmas from zero and, once they are done, adds their sums into FP32 registers of
// its own. The accumulator and the FP32 sums both live in registers, so the tile is narrower than
// step 12's: BN / 2 floats each of the 232 a consumer thread has.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue

static_assert(BN / 2 * 2 + 40 <= CONSUMER_REGS, "room for the accumulator, the FP32 sums and the loop");

// #region kernel
// wgmma over one K-tile into c, its first instruction overwriting c (scale-out zero): c holds this
// K-tile's sums alone, in the tensor cores' own precision.
template <class TiledMma, class FragA, class FragB, class FragC>
__device__ inline void mma_k_tile_alone(TiledMma& mma, FragA const& a, FragB const& b, FragC& c) {
    warpgroup_fence_operand(c);
    warpgroup_arrive();
    mma.accumulate_ = GMMA::ScaleOut::Zero;
    CUTE_UNROLL
    for (int kb = 0; kb < size<2>(a); ++kb) {
        gemm(mma, a(_, _, kb), b(_, _, kb), c);
        mma.accumulate_ = GMMA::ScaleOut::One;
    }
    warpgroup_commit_batch();
    warpgroup_fence_operand(c);
}

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_fp8_promote(
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

    if (threadIdx.x < 128) {                                     // producer warpgroup, as in step 12
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
        auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
        Tensor tCrC = thr.partition_fragment_C(cta_tile_of_C(nullptr, 0, 0, 0, 0)); // (MMA,MMA_M,MMA_N) one K-tile's
        Tensor sums = make_fragment_like(tCrC);                                  // (MMA,MMA_M,MMA_N) FP32: the whole K's
        Epilogue epilogue(alpha);
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        uint32_t stage = 0, phase = 0;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(sums);
            for (int k = p.k0; k < p.k1; ++k) {
                wait_barrier(smem.full[stage], phase);
                mma_k_tile_alone(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
                warpgroup_wait<0>();             // the K-tile's sums are in tCrC; the other warpgroup's wgmmas run meanwhile
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
