// Step 9 — persistent: one cluster per pair of SMs for the whole run, each walking output tiles
// in the CTA-swizzled order; the shared ring carries over from tile to tile, so the producer
// loads the next tile's first K-tiles while the consumers store the last one's C.
//
// Same cluster, multicast and warpgroups as step 8; launched with as many CTAs as the GPU holds
// at once (bench/gemm.py), instead of one per tile.
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
static_assert(BN % (8 * CLUSTER_M) == 0, "B's tile splits into whole 8-row swizzle atoms");
static_assert(BM <= 256 && BN / CLUSTER_M <= 256, "a TMA box is at most 256 rows");
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = cute::min(256, (65536 / 128 - PRODUCER_REGS) / WARPGROUPS_M / 8 * 8);
static_assert(CONSUMER_REGS >= BN / 2 + 40, "room for the accumulator and the loop");
constexpr int B_SLICE = BN / CLUSTER_M;     // rows of B's tile each CTA loads for the whole cluster

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_persistent(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    const int k_tiles = K / BK, tiles = (M / BM) * (N / BN);
    const int rank = block_rank_in_cluster();
    // This cluster's tiles: CLUSTER_M consecutive ones in the swizzled order, then the same a grid further.
    const int first = blockIdx.x - rank, stride = gridDim.x;
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
        if (threadIdx.x == 0) {
            int fill = 0;                                        // K-tiles loaded so far, over all tiles
            for (int t = first + rank; t < tiles; t += stride) {
                auto [tm, tn] = cta_tile(M, N, t);
                for (int k = 0; k < k_tiles; ++k, ++fill) {
                    int s = fill % STAGES;
                    if (fill >= STAGES) wait_barrier(smem.empty[s], (fill / STAGES + 1) & 1);
                    set_barrier_transaction_bytes(smem.full[s], STAGE_BYTES);
                    constexpr auto hint = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);
                    constexpr uint16_t everyone = (1 << CLUSTER_M) - 1;
                    SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], hint, smem.A + s * BM * BK, k * BK, tm * BM);
                    SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], everyone, hint,
                                                     smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
                }
            }
        }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        Tensor sA = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.A)), SmemLayoutA{});   // (BM,BK,PIPE)
        Tensor sB = make_tensor(make_smem_ptr(reinterpret_cast<tfloat32_t*>(smem.B)), SmemLayoutB{});   // (BN,BK,PIPE)
        TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpgroupLayout{});
        ThrMMA thr = mma.get_slice(threadIdx.x - 128);
        Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));              // (MMA,MMA_M,MMA_K,PIPE) descriptors
        Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));              // (MMA,MMA_N,MMA_K,PIPE) descriptors
        Tensor tCrC = thr.partition_fragment_C(cta_tile_of_C(C, M, N, 0, 0)); // (MMA,MMA_M,MMA_N)
        auto release = [&](int stage) {                          // this warp has read `stage`, in every CTA
            for (int cta = 0; cta < CLUSTER_M; ++cta)
                cutlass::arch::ClusterBarrier::arrive(&smem.empty[stage], cta, threadIdx.x % 32 == 0);
        };
        int fill = 0;
        for (int t = first + rank; t < tiles; t += stride) {
            auto [tm, tn] = cta_tile(M, N, t);
            clear(tCrC);
            for (int k = 0; k < k_tiles; ++k, ++fill) {
                wait_barrier(smem.full[fill % STAGES], (fill / STAGES) & 1);
                mma_async(mma, tCrA(_, _, _, fill % STAGES), tCrB(_, _, _, fill % STAGES), tCrC);
                warpgroup_wait<1>();
                if (k > 0) release((fill - 1) % STAGES);
            }
            warpgroup_wait<0>();
            release((fill - 1) % STAGES);                        // the tile's last K-tile
            copy(tCrC, thr.partition_C(cta_tile_of_C(C, M, N, tm, tn)));
        }
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
    // #endregion kernel
}
