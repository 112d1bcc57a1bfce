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
// #endregion kernel
