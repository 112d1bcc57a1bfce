// Stream-K, for shapes whose tiles cannot fill the SMs (a few hundred rows of M): the K-tiles of every
// output tile, laid end to end, are cut into one contiguous run per cluster, so that every SM streams
// the same number of K-tiles however few the tiles. A run splits where a tile ends;
// a tile cut between runs is finished by the cluster that started it, which adds the partial sums the
// clusters after it left, in their order (the sum does not depend on timing).
//
// Step 12's kernel otherwise: the same ring, leaner loop and TMA-store epilogue. The catalogue picks
// its tile by M, so that a cluster's column of tiles spans M: B is read once, in whatever order the
// runs take it (64-row tiles of one consumer warpgroup at M = 64, clusters of 2 and 4 tiles past 128).
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tma_store.cuh"         // Epilogue, Piece, TailSums, load_piece, lean_fragments
#include "gemm_sm90_lean_loop.cuh"          // LeanRing

// K-tiles a consumer sums in the tensor cores' accumulator before adding them into FP32 registers of
// its own (0: a piece's all at once). A long K summed in one accumulator errs more than cuBLAS,
// which splits it (BF16 at M = 64, K = 28,672: 2.1x its error, H200); a second set of sums costs a
// tile's registers again, so only the tiles by M, whose accumulators are small, take it.
#ifndef PROMOTE_EVERY
#define PROMOTE_EVERY 0
#endif
static_assert(PROMOTE_EVERY == 0 || 2 * FRAGMENT + 40 <= CONSUMER_REGS, "room for both sets of sums");

// #region kernel
// A cluster's run: K-tiles [runs[c], runs[c + 1]) of all the units' K-tiles laid end to end (unit u's
// K-tile k is u * k_tiles + k), from the launcher's plan (bench/gemm/plan.py, stream_k). Its pieces
// (unit, K-tiles [k0, k1)) split where a unit ends. A piece that starts its unit (k0 = 0) owns it; one
// that starts mid-unit is the first of its run, and the clusters whose runs start inside a unit are
// the ones that help its owner.
struct Run {
    const int* runs;
    int k_tiles, cluster, next, end;
    __device__ Run(const int* runs, int K)
        : runs(runs), k_tiles(ceil_div(K, BK)), cluster(blockIdx.x / CLUSTER_M),
          next(runs[cluster]), end(runs[cluster + 1]) {}
    __device__ bool piece(Piece& p) {                        // the run's next piece; false past its end
        if (next == end) return false;
        const int unit = next / k_tiles, k0 = next % k_tiles, k1 = min(k_tiles, k0 + end - next);
        p = {unit, k0, k1};
        next += k1 - k0;
        return true;
    }
    __device__ int last_helper(Piece p) const {              // helpers are clusters cluster + 1 .. this
        int c = cluster;
        while (runs[c + 1] < (p.unit + 1) * k_tiles) ++c;    // runs[clusters] is every K-tile: it stops there
        return c;
    }
};                                                           // the producer and the consumers each follow it

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, CTAS_PER_SM) gemm_stream_k(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA: the sums of its run's first piece, if a helper's (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA: 1 while those sums wait
        const int* runs,                              // (clusters + 1) where each cluster's run starts, then the end
        float alpha) {                                // C = alpha A B: FP8's per-tensor scales, 1 for the others
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup
        producer_registers();
        if (threadIdx.x == 0) {
            Run run(runs, K);
            int fill = 0;
            Piece p;
            while (run.piece(p)) load_piece(smem, p, fill, tmaA, tmaB, M, N, rank);
        }
    } else {
        consumer_registers();
        auto [mma, tCrA, tCrB, tCrC] = lean_fragments(smem);
        Epilogue epilogue(alpha);
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        Run run(runs, K);
        LeanRing ring;
        Piece p;
        // a piece's sums done: a helper leaves them in this cluster's slot; an owner adds its helpers', in
        // order, and stores the tile
        auto finish = [&](auto& piece_sums) {
            if (p.k0 > 0) {
                TailSums(partials, ready, run.cluster).leave(piece_sums);
                return;
            }
            for (int c = run.cluster + 1, last = run.last_helper(p); c <= last; ++c)
                TailSums(partials, ready, c).add_to(piece_sums);
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            epilogue.store(piece_sums, tmaC, tm, tn);
        };
        while (run.piece(p)) {
            if constexpr (PROMOTE_EVERY > 0) {
                Tensor sums = make_fragment_like(tCrC);          // (MMA,MMA_M,MMA_N) FP32: the piece's
                clear(sums);
                for (int k0 = p.k0; k0 < p.k1; k0 += PROMOTE_EVERY) {
                    ring.mma_piece(smem, mma, tCrA, tCrB, tCrC, Piece{p.unit, k0, min(p.k1, k0 + PROMOTE_EVERY)});
                    CUTE_UNROLL
                    for (int j = 0; j < size(sums); ++j) sums(j) += tCrC(j);
                }
                finish(sums);
            } else {
                ring.mma_piece(smem, mma, tCrA, tCrB, tCrC, p);
                finish(tCrC);
            }
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
// #endregion kernel
