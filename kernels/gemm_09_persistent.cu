// Step 9 — persistent: one cluster per pair of SMs for the whole run, each walking output tiles
// in the CTA-swizzled order; the shared ring carries over from tile to tile, so the producer
// loads the next tile's first K-tiles while the consumers store the last one's C.
//
// Same cluster, multicast and warpgroups as step 8; launched with as many CTAs as the GPU holds
// at once (bench/gemm/launch.py), instead of one per tile.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tiles.cuh"              // B_SLICE; the empty barriers count the whole cluster's warps

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_persistent(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    const int k_tiles = K / BK, tiles = (M / BM) * (N / BN);
    const int rank = block_rank_in_cluster();
    // This cluster's tiles: CLUSTER_M consecutive ones in the swizzled order, then the same a grid further.
    const int first = blockIdx.x - rank, stride = gridDim.x;
    init_ring_barriers(smem);

    // #region kernel
    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            int fill = 0;                                        // K-tiles loaded so far, over all tiles
            for (int t = first + rank; t < tiles; t += stride) {
                auto [tm, tn] = cta_tile(M, N, t);
                for (int k = 0; k < k_tiles; ++k, ++fill) {
                    int s = acquire_stage(smem, fill);
                    SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
                    SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                                     smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
                }
            }
        }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);              // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
        Tensor tCrC = thr.partition_fragment_C(cta_tile_of_C(C, M, N, 0, 0)); // (MMA,MMA_M,MMA_N)
        int fill = 0;
        for (int t = first + rank; t < tiles; t += stride) {
            auto [tm, tn] = cta_tile(M, N, t);
            clear(tCrC);
            for (int k = 0; k < k_tiles; ++k, ++fill)
                mma_stage(smem, mma, tCrA, tCrB, tCrC, fill, k > 0);
            warpgroup_wait<0>();
            release_stage(smem, (fill - 1) % RING);           // the tile's last K-tile
            copy(tCrC, thr.partition_C(cta_tile_of_C(C, M, N, tm, tn)));
        }
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
    // #endregion kernel
}
