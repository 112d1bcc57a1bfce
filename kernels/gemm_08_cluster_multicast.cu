// Step 8 — clusters with TMA multicast: CLUSTER_M CTAs on neighbouring SMs compute vertically
// adjacent tiles, which share B's tile; each loads 1/CLUSTER_M of it and multicasts that slice
// into every CTA of the cluster, so L2 serves B's tile once per cluster instead of once per CTA.
//
// Same producer/consumer warpgroups as step 7. A stage is refilled only when the consumers of
// every CTA in the cluster have released it, so each "empty" barrier collects their arrivals too.
#ifndef STAGES
#define STAGES 4
#endif
#ifndef PRODUCER_WARPGROUPS
#define PRODUCER_WARPGROUPS 1
#endif
#ifndef CLUSTER_M
#define CLUSTER_M 2
#endif
#include <cuda.h>                           // CUtensorMap
#include <cutlass/arch/reg_reconfig.h>      // warpgroup_reg_alloc / dealloc: setmaxnreg
#include "gemm_sm90_tiles.cuh"

static_assert(PRODUCER_WARPGROUPS == 1, "warpgroup 0 produces, the others consume");
static_assert(CLUSTER_M >= 2 && BN % (8 * CLUSTER_M) == 0, "B's tile splits into whole 8-row swizzle atoms");
static_assert(BM <= 256 && BN / CLUSTER_M <= 256, "a TMA box is at most 256 rows");
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = cute::min(256, (65536 / 128 - PRODUCER_REGS) / WARPGROUPS_M / 8 * 8);
static_assert(CONSUMER_REGS >= BN / 2 + 40, "room for the accumulator and the loop");
constexpr int B_SLICE = BN / CLUSTER_M;     // rows of B's tile each CTA loads for the whole cluster

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_cluster_multicast(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    const int k_tiles = K / BK;
    const int rank = block_rank_in_cluster();
    constexpr int CONSUMER_WARPS = CONSUMER_THREADS / 32;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            initialize_barrier(smem.full[s], 1);                             // the producer's expect_tx
            initialize_barrier(smem.empty[s], CONSUMER_WARPS * CLUSTER_M);   // every consumer warp of the cluster
        }
        cutlass::arch::fence_barrier_init();
    }
    cluster_sync();                          // the peers' barriers exist before anything lands in them

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0)
            for (int k = 0; k < k_tiles; ++k) {
                int s = k % STAGES;
                if (k >= STAGES) wait_barrier(smem.empty[s], (k / STAGES + 1) & 1);   // read in every CTA
                set_barrier_transaction_bytes(smem.full[s], STAGE_BYTES);             // A, and all of B's slices
                constexpr auto hint = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);
                constexpr uint16_t everyone = (1 << CLUSTER_M) - 1;
                SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], hint, smem.A + s * BM * BK, k * BK, tm * BM);
                SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], everyone, hint,
                                                 smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
            }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.A)), SmemLayoutA{});   // (BM,BK,PIPE)
        Tensor sB = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.B)), SmemLayoutB{});   // (BN,BK,PIPE)
        TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpgroupLayout{});
        ThrMMA thr = mma.get_slice(threadIdx.x - 128);
        Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));              // (MMA,MMA_M,MMA_K,PIPE) descriptors
        Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));              // (MMA,MMA_N,MMA_K,PIPE) descriptors
        Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));       // (MMA,MMA_M,MMA_N)
        Tensor tCrC = thr.make_fragment_C(tCgC);                             // (MMA,MMA_M,MMA_N)
        clear(tCrC);
        for (int k = 0; k < k_tiles; ++k) {
            wait_barrier(smem.full[k % STAGES], (k / STAGES) & 1);
            mma_async(mma, tCrA(_, _, _, k % STAGES), tCrB(_, _, _, k % STAGES), tCrC);
            warpgroup_wait<1>();                                 // K-tile k-1 is done: release it cluster-wide
            if (k > 0)
                for (int cta = 0; cta < CLUSTER_M; ++cta)
                    cutlass::arch::ClusterBarrier::arrive(&smem.empty[(k - 1) % STAGES], cta, threadIdx.x % 32 == 0);
        }
        warpgroup_wait<0>();
        copy(tCrC, tCgC);
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
    // #endregion kernel
}
