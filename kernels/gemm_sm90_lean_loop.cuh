// Step 12's main loop (12 on, and stream-K): the consumers' K-loop over a piece, issuing fewer
// instructions. Its descriptors come from lean_fragments (gemm_sm90_tiles.cuh): sliced by a
// warp-uniform warpgroup index, so ptxas keeps them in uniform registers.
#pragma once
#include "gemm_sm90_split_wave.cuh"        // Piece

// The ring's next stage and its fill's parity, carried from one K-tile to the next (and from one
// piece to the next) rather than divided out of a running count. mma_piece: a piece's K-tiles into
// tCrC, from zero, each stage released as soon as its wgmmas are done.
// #region kernel
struct LeanRing {
    uint32_t stage = 0, phase = 0, previous = 0;
    template <class TiledMma, class FragA, class FragB, class FragC>
    __device__ void mma_piece(SharedStorage& smem, TiledMma& mma, FragA const& tCrA, FragB const& tCrB,
                              FragC& tCrC, Piece p) {
        clear(tCrC);
        warpgroup_fence_operand(tCrC);       // else ptxas serializes the wgmmas: the sums are added outside them
        for (int k = p.k0; k < p.k1; ++k) {
            wait_barrier(smem.full[stage], phase);
            mma_async(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
            warpgroup_wait<1>();                             // the K-tile before this one has been read
            if (k > p.k0) release_stage(smem, previous);
            previous = stage;
            if (++stage == RING) stage = 0, phase ^= 1;
        }
        warpgroup_wait<0>();
        warpgroup_fence_operand(tCrC);
        release_stage(smem, previous);
    }
};
// #endregion kernel
