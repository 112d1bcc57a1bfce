// What the FP8 steps that promote their sums into FP32 share (13 on): one K-tile's wgmmas on their own.
#pragma once
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue, and through it the tiles and the split-wave schedule

// A stage holds A's and B's K-tiles only.
struct NothingMore {
    __device__ void operator()(uint64_t&, int, int, int) const {}
};

// The producer's loop, as in step 12: each piece's K-tiles of A, and this CTA's slice of B multicast to
// the cluster, into the ring; more(full, s, k, tm) loads what else stage s holds for K-tile k of tile row
// tm, before A and B can complete its barrier.
template <class More = NothingMore>
__device__ inline void produce(SharedStorage& smem, Schedule const& schedule, CUtensorMap const& tmaA,
                               CUtensorMap const& tmaB, int M, int N, int rank, More more = {}) {
    int fill = 0;
    Piece p;
    for (int i = 0; schedule.piece(i, p); ++i) {
        auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
        for (int k = p.k0; k < p.k1; ++k, ++fill) {
            int s = acquire_stage(smem, fill);
            more(smem.full[s], s, k, tm);
            SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
            SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                             smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
        }
    }
}

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
