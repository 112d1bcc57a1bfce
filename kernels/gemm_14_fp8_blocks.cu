// Step 14 (FP8 only) — block scales, as DeepSeek-V3 trains: A scaled per 1 x SCALE_BLOCK of a row,
// B per SCALE_BLOCK x SCALE_BLOCK, so that an outlier costs the precision of its own block only, not
// of the whole tensor. A K-tile is one scale block along K (BK e4m3 values are 128 bytes), so step
// 13's promotion is where the scales go in: each K-tile's sums, in the tensor cores' own precision,
// are multiplied by their row's A scale and their column block's B scale as they are added in FP32.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_promote.cuh"          // mma_k_tile_alone, Epilogue

#ifndef SCALE_BLOCK
#error "SCALE_BLOCK comes from the step catalogue"
#endif
static_assert(BK == SCALE_BLOCK, "a K-tile is one block of scales along K");
// A tile starts on a multiple of gcd(BN, SCALE_BLOCK) columns: at most two blocks of B, the second
// from column SCALE_BLOCK - 64 or SCALE_BLOCK of the tile (add_scaled's two instances).
static_assert(BN % 64 == 0 && BN <= SCALE_BLOCK + 64 * (1 + (BN % SCALE_BLOCK == 0)),
              "a tile's columns lie in at most two blocks of B, the second starting at column 64 or 128");
static_assert(2 * FRAGMENT + 40 <= CONSUMER_REGS, "room for the accumulator, the FP32 sums, the scales and the loop");

// #region kernel
// sums += acc x its row's A scale x its column block's B scale. A thread's accumulators come in fours,
// two adjacent columns of its row r, the same two of row r + 8, then the next 8 columns (wgmma's
// accumulator layout); the columns from NEXT_BLOCK_AT on lie in the second block. Unrolled, every
// index is a constant.
template <int NEXT_BLOCK_AT, class Frag>
__device__ inline void add_scaled(Frag& sums, Frag const& acc, float const (&a)[2], float const (&b)[2]) {
    const float s[4] = {a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1]};   // (row, block) pairs
    CUTE_UNROLL
    for (int j = 0; j < size(sums); ++j)
        sums(j) += acc(j) * s[2 * (j / 2 % 2) + (8 * (j / 4) >= NEXT_BLOCK_AT)];
}

// One consumer thread's scales for one output tile: A's (L,M) M-major, so a warp's rows of a K-tile are
// contiguous; B's (N/SCALE_BLOCK, ldb) K-major (L = K/SCALE_BLOCK, rounded up, as N/SCALE_BLOCK is).
// Past M or N a scale is 0: those rows and columns of C are never stored.
struct BlockScales {
    const float *a0, *a1, *b0, *b1;             // at K-tile 0: row r, row r + 8, the first block, the second
    int m, next_block_at;
    __device__ BlockScales(const float* sfa, const float* sfb, int ldb, int M, int N, int tm, int tn, int r) {
        const int row = tm * BM + r, first = tn * BN / SCALE_BLOCK, blocks = ceil_div(N, SCALE_BLOCK);
        m = M;
        a0 = row < M ? sfa + row : nullptr;
        a1 = row + 8 < M ? sfa + row + 8 : nullptr;
        b0 = sfb + first * ldb;
        b1 = first + 1 < blocks ? b0 + ldb : nullptr;
        next_block_at = SCALE_BLOCK - tn * BN % SCALE_BLOCK;
    }
    // K-tile k's scales, loaded a K-tile ahead: a warp issues in order, so the first instruction that
    // reads a load waits for it (several hundred cycles from L2, more under the TMA loads' traffic)
    __device__ void load(int k, float (&a)[2], float (&b)[2]) const {
        a[0] = a0 ? __ldg(a0 + k * m) : 0.f, a[1] = a1 ? __ldg(a1 + k * m) : 0.f;
        b[0] = __ldg(b0 + k), b[1] = b1 ? __ldg(b1 + k) : 0.f;
    }
    template <class Frag>
    __device__ void add(Frag& sums, Frag const& acc, float const (&a)[2], float const (&b)[2]) const {
        if (next_block_at == SCALE_BLOCK) add_scaled<SCALE_BLOCK>(sums, acc, a, b);
        else add_scaled<SCALE_BLOCK - 64>(sums, acc, a, b);
    }
};

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_fp8_blocks(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split,          // the last wave's plan (Schedule)
        const float* sfa,                             // (L,M) A's scales, M-major
        const float* sfb, int ldb) {                  // (N/SCALE_BLOCK,ldb) B's scales, K-major
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
        Tensor tCrC = thr.partition_fragment_C(cta_tile_of_C(nullptr, 0, 0, 0, 0)); // (MMA,MMA_M,MMA_N) one K-tile's
        Tensor sums = make_fragment_like(tCrC);                                  // (MMA,MMA_M,MMA_N) FP32: the whole K's
        const int r = get<0>(thr.partition_C(make_identity_tensor(Shape<Int<BM>, Int<BN>>{}))(0));  // this thread's first row
        Epilogue epilogue(1.0f);                                                 // the scales are in the sums
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        uint32_t stage = 0, phase = 0;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            const BlockScales scales(sfa, sfb, ldb, M, N, tm, tn, r);
            clear(sums);
            float a[2], b[2], next_a[2], next_b[2];
            scales.load(p.k0, next_a, next_b);
            for (int k = p.k0; k < p.k1; ++k) {
                a[0] = next_a[0], a[1] = next_a[1], b[0] = next_b[0], b[1] = next_b[1];
                wait_barrier(smem.full[stage], phase);
                mma_k_tile_alone(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
                if (k + 1 < p.k1) scales.load(k + 1, next_a, next_b);   // a K-tile ahead: two K-tiles' wgmmas to land
                warpgroup_wait<0>();
                release_stage(smem, stage);
                scales.add(sums, tCrC, a, b);    // promoted and scaled: added in FP32
                if (++stage == RING) stage = 0, phase ^= 1;
            }
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(sums);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(sums);     // an owner: add them
            epilogue.store(sums, tmaC, tm, tn);
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
// #endregion kernel
