// Step 14 (FP8 only) — block scales, as DeepSeek-V3 trains: A scaled per 1 x SCALE_BLOCK of a row,
// B per SCALE_BLOCK x SCALE_BLOCK, so that an outlier costs the precision of its own block only, not
// of the whole tensor. A K-tile is one scale block along K (BK e4m3 values are 128 bytes), so step
// 13's promotion is where the scales go in: each K-tile's sums, in the tensor cores' own precision,
// are multiplied by their row's A scale and their column block's B scale as they are added in FP32.
// A's scales travel with A's K-tile, through the ring: a consumer reads them from shared memory, not
// from L2 (with each thread loading its own, a K-tile ahead, the step ran 9-11% slower in turns).
// B's, one float a block, come from L1: copied through the ring as well, 16 bytes a block, the
// step ran 2-8% slower in turns (H100): a stage's small copies cost the copy engine more than they save.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_promote.cuh"          // mma_k_tile_alone, Epilogue

#ifndef SCALE_BLOCK
#error "SCALE_BLOCK comes from the step catalogue"
#endif
static_assert(BK == SCALE_BLOCK, "a K-tile is one block of scales along K");
// A tile starts on a multiple of gcd(BN, SCALE_BLOCK) columns, 64 or 128 of them: each 64 columns of
// it lie in one block of B, the first or the second.
static_assert(BN % 64 == 0 && BN <= SCALE_BLOCK + 64 * (1 + (BN % SCALE_BLOCK == 0)),
              "a tile's columns lie in at most two blocks of B, the second starting at column 64 or 128");
static_assert(2 * FRAGMENT + 40 <= CONSUMER_REGS, "room for the accumulator, the FP32 sums, the scales and the loop");

// A's scales of each stage's K-tile, one float a row of the tile, copied by the producer beside A and B
// and counted on the stage's full barrier, as DeepGEMM does: A's scales are M-major, so a K-tile's rows
// are one contiguous run, one bulk copy. A bulk copy starts on 16 bytes; where k M is not a multiple of
// 4 floats the run starts SKEW floats into the stage's row (the 16 bytes it starts in, no further).
constexpr int SCALE_GRANULE = 16 / sizeof(float);
__shared__ alignas(128) float a_scale_ring[RING][BM + SCALE_GRANULE];
static_assert(BM % SCALE_GRANULE == 0, "a tile's first row keeps K-tile k's skew, (k M) mod 4");
static_assert(SMEM_BYTES_NEEDED + STATIC_SMEM_BYTES + sizeof(a_scale_ring) <= SMEM_CAPACITY,
              "A's scales fit beside the ring and the staging");

__device__ inline int scale_skew(int k, int M) { return int(size_t(k) * M % SCALE_GRANULE); }

// A float at a 32-bit shared address. Through the ring's generic address each K-tile read the CTA's id
// in its cluster, and built the address from it, before the K-tile's first wgmma (Nsight Compute's
// source counters, H200): set once a piece, the step ran 2.3% faster in a probe's turns (median;
// within noise in the records' own pairs).
__device__ inline float load_shared(uint32_t at) {
    float value;
    asm volatile("ld.shared.f32 %0, [%1];" : "=f"(value) : "r"(at));
    return value;
}

struct ScalesOfA {
    const float* sfa;
    int M;
    // K-tile k's scales of tile row tm into stage s (rows past M, not copied, are never stored)
    __device__ void operator()(uint64_t& full, int s, int k, int tm) const {
        const int rows = min(BM, M - tm * BM), skew = scale_skew(k, M);
        if (rows <= 0) return;                    // a cluster's tile wholly past M
        const int bytes = round_up(skew + rows, int(SCALE_GRANULE)) * int(sizeof(float));
        cutlass::arch::ClusterTransactionBarrier::expect_transaction(&full, bytes);
        SM90_BULK_COPY_G2S::copy(sfa + size_t(k) * M + tm * BM - skew, &full, a_scale_ring[s], bytes);
    }
};

// #region kernel
// sums += acc x its row's A scale x its 64 columns' B scale (scale[row][block]). A thread's
// accumulators come in fours, two adjacent columns of its row r, the same two of row r + 8, then the
// next 8 columns (wgmma's accumulator layout); the tile's first FIRST groups of 64 columns lie in B's
// first block. Unrolled, with FIRST a constant, each FFMA's scale is a register known at compile time.
// acc(j) goes into sums(j ^ 1), the pair swapped (the epilogue stores it back in order): a split
// tile's float4 scratch keeps sums(j) in j's register quad, as wgmma keeps acc(j), so each sum and its
// accumulator would share a register bank, and half the FFMA read all three sources from one bank.
template <int FIRST, class Frag>
__device__ inline void add_scaled(Frag& sums, Frag const& acc, float const (&scale)[2][2]) {
    CUTE_UNROLL
    for (int j = 0; j < size(sums); ++j)
        sums(j ^ 1) = fmaf(scale[j / 2 % 2][8 * (j / 4) / 64 >= FIRST], acc(j), sums(j ^ 1));
}

// One consumer thread's K-tiles of a piece, promoted and scaled into sums: its rows r and r + 8 take
// A's scales from the stage (read before it is released); B's (N/SCALE_BLOCK, ldb) are K-major, the
// tile's first block's row and its second's (the first again at N's edge: those columns are never
// stored), from L2 through L1 (a tile's 128 K-tiles are 4 cache lines). Each is read while the
// K-tile's wgmmas run: after them, the warp's promotion is all that stands before its next K-tile's.
template <int FIRST, class TiledMma, class FragA, class FragB, class FragC>
__device__ inline void promote_piece(SharedStorage& smem, TiledMma& mma, FragA const& tCrA, FragB const& tCrB,
                                     FragC& acc, FragC& sums, Piece p, int r, int M, const float* b_first,
                                     const float* b_second, uint32_t& stage, uint32_t& phase, Skew& skew) {
    clear(sums);
    const uint32_t a_row = cast_smem_ptr_to_uint(&a_scale_ring[0][0]) + r * sizeof(float);   // row r, stage 0, skew 0
    const int skew_step = M % SCALE_GRANULE;
    int a_skew = scale_skew(p.k0, M);
    for (int k = p.k0; k < p.k1; ++k) {
        wait_barrier(smem.full[stage], phase);
        skew.before_first();
        mma_k_tile_alone(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), acc);
        const uint32_t a = a_row + stage * sizeof(a_scale_ring[0]) + a_skew * sizeof(float);
        a_skew = (a_skew + skew_step) & (SCALE_GRANULE - 1);                 // K-tile k + 1's, (k + 1) M mod 4
        const float a0 = load_shared(a), a1 = load_shared(a + 8 * sizeof(float)),
                    b0 = __ldg(b_first + k), b1 = __ldg(b_second + k);
        const float scale[2][2] = {{a0 * b0, a0 * b1}, {a1 * b0, a1 * b1}};
        warpgroup_wait<0>();
        skew.after_first();
        release_stage(smem, stage);
        add_scaled<FIRST>(sums, acc, scale);     // promoted and scaled: added in FP32
        if (++stage == RING) stage = 0, phase ^= 1;
    }
}

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, CTAS_PER_SM) gemm_fp8_blocks(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split,          // the last wave's plan (Schedule)
        const float* sfa,                             // (L,M) A's scales, M-major: into the ring by the producer
        const float* sfb, int ldb) {                  // (N/SCALE_BLOCK,ldb) B's scales, K-major
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup
        producer_registers();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank, ScalesOfA{sfa, M});
    } else {
        consumer_registers();
        auto [mma, tCrA, tCrB, acc] = lean_fragments(smem);      // (MMA,MMA_M|N,MMA_K,PIPE) descriptors, one K-tile's sums
        Tensor sums = make_fragment_like(acc);                   // (MMA,MMA_M,MMA_N) FP32: the whole K's
        const int r = get<0>(mma.get_slice(threadIdx.x - 128 * PRODUCER_WARPGROUPS)
                                .partition_C(make_identity_tensor(Shape<Int<BM>, Int<BN>>{}))(0));  // this thread's first row
        Epilogue epilogue(1.0f);                                 // the scales are in the sums
        static_assert(decltype(size(acc))::value == FRAGMENT);
        uint32_t stage = 0, phase = 0;
        Skew skew;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            const int block = tn * BN / SCALE_BLOCK;
            const float *b_first = sfb + size_t(block) * ldb,
                        *b_second = block + 1 < ceil_div(N, SCALE_BLOCK) ? b_first + ldb : b_first;
            // the tile's groups of 64 columns in B's first block: as many as it holds, or one where the tile starts 64 into it
            if (tn * BN % SCALE_BLOCK == 0)
                promote_piece<SCALE_BLOCK / 64>(smem, mma, tCrA, tCrB, acc, sums, p, r, M, b_first, b_second, stage, phase, skew);
            else
                promote_piece<1>(smem, mma, tCrA, tCrB, acc, sums, p, r, M, b_first, b_second, stage, phase, skew);
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(sums);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(sums);     // an owner: add them
            epilogue.store<true>(sums, tmaC, tm, tn);          // its pairs swapped (add_scaled)
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
// #endregion kernel
