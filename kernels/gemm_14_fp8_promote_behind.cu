// Step 14 (FP8 only) — promotion behind the next K-tile: step 13 waits for a K-tile's wgmmas before
// it adds their sums into FP32, and its warpgroup issues nothing meanwhile. Here two accumulators take
// K-tiles in turn: K-tile k + 1's wgmmas are issued into one before K-tile k's sums, in the other, are
// added, so the tensor cores keep this warpgroup's work while it adds. Three sets of sums in registers
// fit a 128 x 96 tile (at 128 x 128 ptxas spills them).
#include "gemm_sm90_promote.cuh"          // produce, mma_k_tile_alone, Epilogue

static_assert(3 * FRAGMENT + 48 <= CONSUMER_REGS, "room for two accumulators, the FP32 sums and the loop");

// #region kernel
// The ring's next stage and its fill's parity, carried from one K-tile to the next.
struct Ring {
    uint32_t stage = 0, phase = 0;
    __device__ uint32_t take(SharedStorage& smem) {          // wait for the next K-tile; its stage
        wait_barrier(smem.full[stage], phase);
        const uint32_t s = stage;
        if (++stage == RING) stage = 0, phase ^= 1;
        return s;
    }
};

// K-tile `done`'s sums, in acc, added into FP32 once its wgmmas are finished (`in_flight` batches
// may still run: the next K-tile's), and its stage released.
template <int in_flight, class FragC>
__device__ inline void promote(SharedStorage& smem, uint32_t done, FragC& acc, FragC& sums) {
    warpgroup_wait<in_flight>();
    warpgroup_fence_operand(acc);
    release_stage(smem, done);
    CUTE_UNROLL
    for (int j = 0; j < size(sums); ++j) sums(j) += acc(j);
}

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_fp8_promote_behind(
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
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank);
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
        Tensor even = thr.partition_fragment_C(cta_tile_of_C(nullptr, 0, 0, 0, 0)); // (MMA,MMA_M,MMA_N) K-tiles k0, k0 + 2, ...
        Tensor odd = make_fragment_like(even);                                   // K-tiles k0 + 1, k0 + 3, ...
        Tensor sums = make_fragment_like(even);                                  // FP32: the whole K's
        static_assert(decltype(size(even))::value == FRAGMENT);
        Epilogue epilogue(alpha);
        Ring ring;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(sums);
            uint32_t s = ring.take(smem);
            mma_k_tile_alone(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), even);
            for (int k = p.k0; k < p.k1; k += 2) {                 // even holds K-tile k, in flight
                uint32_t done = s;
                if (k + 1 < p.k1) {
                    s = ring.take(smem);
                    mma_k_tile_alone(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), odd);
                    promote<1>(smem, done, even, sums);
                } else {
                    promote<0>(smem, done, even, sums);
                    break;
                }
                done = s;                                            // odd holds K-tile k + 1, in flight
                if (k + 2 < p.k1) {
                    s = ring.take(smem);
                    mma_k_tile_alone(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), even);
                    promote<1>(smem, done, odd, sums);
                } else {
                    promote<0>(smem, done, odd, sums);
                }
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
