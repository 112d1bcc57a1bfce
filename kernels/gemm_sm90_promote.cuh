// What the FP8 steps that promote their sums into FP32 share (13 on): one K-tile's wgmmas on their own.
#pragma once
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue, and through it the tiles, the split-wave schedule and produce

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

// The consumer warpgroups half a K-tile apart. Each waits for its own K-tile's wgmmas before it
// promotes their sums, so in step both would promote at once while the tensor cores idle. Once, at
// the first K-tile, warpgroup 1 issues its wgmmas only after warpgroup 0's are done; from then on
// one warpgroup's wgmmas run while the other promotes, and nothing couples them again.
constexpr int SKEW_BARRIER = 1 + WARPGROUPS_M;       // named barriers 1 .. WARPGROUPS_M are the epilogue's
struct Skew {
    const int warpgroup = (threadIdx.x - 128 * PRODUCER_WARPGROUPS) / 128;
    bool first = WARPGROUPS_M == 2;                  // one warpgroup (64-row tiles): nothing to skew
    __device__ void before_first() const {           // warpgroup 1, before its first K-tile's wgmmas
        if (first && warpgroup == 1) cutlass::arch::NamedBarrier::sync(CONSUMER_THREADS, SKEW_BARRIER);
    }
    __device__ void after_first() {                  // warpgroup 0, once its first K-tile's wgmmas are done
        if (first && warpgroup == 0) cutlass::arch::NamedBarrier::arrive(CONSUMER_THREADS, SKEW_BARRIER);
        first = false;
    }
};
// #endregion kernel
