// Step 5 — WGMMA pipelined: STAGES shared buffers; cp.async fills K-tile k+STAGES-1 while the
// tensor cores multiply K-tile k, and the wgmmas of K-tile k are issued before those of k-1 are waited for. The CTA-swizzle variant is this file compiled with GROUP_M > 0.
//
// Same wgmma, swizzled layout and copy as step 4 (gemm_sm90_tiles.cuh).
#include "gemm_sm90_tiles.cuh"

static_assert(RING >= 2, "overlap needs a second buffer");

extern "C" __global__ void __launch_bounds__(THREADS, 1) gemm_wgmma_pipe(const Element* A, const Element* B, float* C,
                                                                       int M, int N, int K) {
    SharedStorage& smem = shared_storage();
    auto [gA, gB, gC] = cta_tiles(A, B, C, M, N, K);                         // (BM,BK,k), (BN,BK,k), (BM,BN)
    Tensor sA = make_tensor(make_smem_ptr(smem.A), SmemLayoutA{});           // (BM,BK,PIPE), swizzled
    Tensor sB = make_tensor(make_smem_ptr(smem.B), SmemLayoutB{});           // (BN,BK,PIPE)

    auto cp = cp_async_partitions(gA, gB, sA, sB);
    auto copyAB = get<0>(cp);
    Tensor tAgA = get<1>(cp);                                                // (CPY,CPY_M,CPY_K,k)
    Tensor tAsA = get<2>(cp);                                                // (CPY,CPY_M,CPY_K,PIPE)
    Tensor tBgB = get<3>(cp);                                                // (CPY,CPY_N,CPY_K,k)
    Tensor tBsB = get<4>(cp);                                                // (CPY,CPY_N,CPY_K,PIPE)

    auto [mma, thr, tCrA, tCrB] = consumer_fragments(smem);                  // (MMA,MMA_M|N,MMA_K,PIPE) descriptors
    Tensor tCgC = thr.partition_C(gC);                                       // (MMA,MMA_M,MMA_N)
    Tensor tCrC = thr.make_fragment_C(tCgC);                                 // (MMA,MMA_M,MMA_N)
    clear(tCrC);

    // #region kernel
    const int k_tiles = size<3>(tAgA);
    auto load = [&](int k) {            // one cp.async group per K-tile, empty past the end so waits stay uniform
        if (k < k_tiles) {
            copy(copyAB, tAgA(_, _, _, k), tAsA(_, _, _, k % RING));
            copy(copyAB, tBgB(_, _, _, k), tBsB(_, _, _, k % RING));
        }
        cp_async_fence();
    };
    for (int k = 0; k < RING - 1; ++k) load(k);                           // prologue: fill all but one stage

    for (int k = 0; k < k_tiles; ++k) {
        cp_async_wait<RING - 2>();         // this thread's copies of K-tile k have landed
        cutlass::arch::fence_view_async_shared();
        __syncthreads();                     // ... and every thread's
        mma_async(mma, tCrA(_, _, _, k % RING), tCrB(_, _, _, k % RING), tCrC);
        warpgroup_wait<1>();                 // K-tile k-1's wgmmas are done in this warpgroup (k's still run) ...
        __syncthreads();                     // ... and in every warpgroup, so its stage can be refilled
        load(k + RING - 1);                // into stage (k - 1) % RING
    }
    warpgroup_wait<0>();
    copy(tCrC, tCgC);
    // #endregion kernel
}
