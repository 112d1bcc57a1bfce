// Step 7 — warp specialization: a producer warpgroup issues every TMA load and the consumer
// warpgroups only wait, multiply and release; setmaxnreg hands the producer's registers to them.
//
// Same tiles, tensor maps and full/empty mbarriers as step 6; the loads no longer wait on the
// consumers' loop, so they run up to STAGES K-tiles ahead. The deeper-pipeline variant is this file
// compiled with as many stages as the shared-memory budget holds (bench/gemm.py).
#ifndef STAGES
#define STAGES 3
#endif
#ifndef PRODUCER_WARPGROUPS
#define PRODUCER_WARPGROUPS 1
#endif
#include <cuda.h>                           // CUtensorMap
#include <cutlass/arch/reg_reconfig.h>      // warpgroup_reg_alloc / dealloc: setmaxnreg
#include "gemm_sm90_tiles.cuh"

static_assert(PRODUCER_WARPGROUPS == 1, "warpgroup 0 produces, the others consume");
static_assert(BM <= 256 && BN <= 256, "a TMA box is at most 256 rows");
// One CTA per SM holds all 64K registers. The producer needs few; the consumers, each holding a
// 64 x BN accumulator (BN / 2 registers a thread), get the rest (a multiple of 8, at most 256).
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = cute::min(256, (65536 / 128 - PRODUCER_REGS) / WARPGROUPS_M / 8 * 8);
static_assert(CONSUMER_REGS >= BN / 2 + 40, "room for the accumulator and the loop");

extern "C" __global__ void __launch_bounds__(THREADS, 1) gemm_warp_specialized(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    const int k_tiles = K / BK;
    constexpr int CONSUMER_WARPS = CONSUMER_THREADS / 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            initialize_barrier(smem.full[s], 1);                 // one arrival: the producer's expect_tx
            initialize_barrier(smem.empty[s], CONSUMER_WARPS);   // one arrival per consumer warp
        }
        cutlass::arch::fence_barrier_init();
    }
    __syncthreads();

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0)
            for (int k = 0; k < k_tiles; ++k) {
                int s = k % STAGES;
                if (k >= STAGES) wait_barrier(smem.empty[s], (k / STAGES + 1) & 1);   // fill k/STAGES - 1 was read
                set_barrier_transaction_bytes(smem.full[s], STAGE_BYTES);
                constexpr auto hint = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);
                SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], hint, smem.A + s * BM * BK, k * BK, tm * BM);
                SM90_TMA_LOAD_2D::copy(&tmaB, &smem.full[s], hint, smem.B + s * BN * BK, k * BK, tn * BN);
            }
        return;
    }
    cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
    Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.A)), SmemLayoutA{});   // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.B)), SmemLayoutB{});   // (BN,BK,PIPE)
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpgroupLayout{});
    ThrMMA thr = mma.get_slice(threadIdx.x - 128);
    Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));                  // (MMA,MMA_M,MMA_K,PIPE) descriptors
    Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));                  // (MMA,MMA_N,MMA_K,PIPE) descriptors
    Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));           // (MMA,MMA_M,MMA_N)
    Tensor tCrC = thr.make_fragment_C(tCgC);                                 // (MMA,MMA_M,MMA_N)
    clear(tCrC);
    for (int k = 0; k < k_tiles; ++k) {
        wait_barrier(smem.full[k % STAGES], (k / STAGES) & 1);
        mma_async(mma, tCrA(_, _, _, k % STAGES), tCrB(_, _, _, k % STAGES), tCrC);
        warpgroup_wait<1>();                                     // K-tile k-1 is done: release its stage
        if (k > 0 && threadIdx.x % 32 == 0) arrive_barrier(smem.empty[(k - 1) % STAGES]);
    }
    warpgroup_wait<0>();
    copy(tCrC, tCgC);
    // #endregion kernel
}
