// Step 6 — WGMMA + TMA: tensor-map bulk copies (TMA) of whole A and B tiles, each issued by one
// thread, into a STAGES-deep ring of shared buffers. A "full" mbarrier per stage counts the bytes
// landing and the warpgroups wait on it. No thread computes an address or moves a byte of A or B.
//
// Who refills a stage: the warp that finishes reading it last (a count per stage in shared memory),
// so no warp ever waits for another to issue a load. A fixed producer thread would have to wait
// for the slowest warp, stalling its own warpgroup's wgmma behind the other's.
//
// The tensor maps come from Python (bench/gemm/launch.py, cuTensorMapEncodeTiled) with the boxes this
// kernel exports (LOAD_BOXES) and the 128-byte swizzle of the shared layout here (gemm_sm90_tiles.cuh).
#include <cuda.h>                        // CUtensorMap
#include <cuda/atomic>                   // cuda::atomic_ref: the per-stage count of warps done reading
#include "gemm_sm90_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1) gemm_wgmma_tma(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN, 128-byte swizzle
        float* C, int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    __shared__ unsigned reads_done[RING];                  // warps done reading stage s, over all its fills
    if (threadIdx.x < RING) reads_done[threadIdx.x] = 0;
    auto tile = cta_tile(M, N);
    const int tm = get<0>(tile), tn = get<1>(tile);
    auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
    Tensor tCgC = thr.partition_C(cta_tile_of_C(C, M, N, tm, tn));           // (MMA,MMA_M,MMA_N)
    Tensor tCrC = thr.make_fragment_C(tCgC);                                 // (MMA,MMA_M,MMA_N)
    clear(tCrC);
    init_ring_barriers(smem);                                                // (its "empty" barriers go unused)

    // #region kernel
    const int k_tiles = K / BK;
    constexpr unsigned WARPS = THREADS / 32;
    auto load = [&](int k) {             // both tiles of K-tile k into stage k % RING, landing on full[s]
        int s = k % RING;
        set_barrier_transaction_bytes(smem.full[s], STAGE_BYTES);
        SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
        SM90_TMA_LOAD_2D::copy(&tmaB, &smem.full[s], TMA_HINT, smem.B + s * BN * BK, k * BK, tn * BN);
    };
    if (threadIdx.x == 0)
        for (int k = 0; k < RING && k < k_tiles; ++k) load(k);

    for (int k = 0; k < k_tiles; ++k) {
        int s = k % RING;
        wait_barrier(smem.full[s], (k / RING) & 1);            // the stage's (k / RING)-th fill has landed
        mma_async(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), tCrC);
        warpgroup_wait<1>();                                     // this warpgroup is done with K-tile k-1
        if (k > 0 && threadIdx.x % 32 == 0) {
            int done = k - 1, ds = done % RING;
            cuda::atomic_ref<unsigned, cuda::thread_scope_block> count(reads_done[ds]);
            bool last = count.fetch_add(1, cuda::memory_order_acq_rel) % WARPS == WARPS - 1;
            if (last && done + RING < k_tiles) load(done + RING);   // the last reader refills it
        }
    }
    warpgroup_wait<0>();
    copy(tCrC, tCgC);
    // #endregion kernel
}
