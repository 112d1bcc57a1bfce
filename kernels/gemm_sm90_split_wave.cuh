// The split-wave steps' schedule (10 on): which (cluster tile, K range) pieces each persistent
// cluster computes, whole tiles over the full waves and then its part of the split last wave.
#pragma once
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_tiles.cuh"

constexpr int FRAGMENT = BM * BN / CONSUMER_THREADS;   // accumulators a consumer thread holds

// A cluster's work, in order: whole tiles over the full waves, then its part of the last wave:
// pieces (cluster tile, K-tiles [k0, k1)). The plan of the last wave comes from the launcher
// (bench/gemm/plan.py, split_wave): full_units whole units before it, `left` units in it, each computed
// by an owner cluster over K-tiles [0, split) and by a helper (a cluster with no unit left) over the
// rest. A unit: one tile per CTA of the cluster.
struct Piece { int unit, k0, k1; };
struct Schedule {
    int k_tiles, clusters, cluster, full_units, left, helpers, split;
    __device__ Schedule(int K, int full_units, int left, int split)
        : k_tiles(ceil_div(K, BK)), clusters(gridDim.x / CLUSTER_M), cluster(blockIdx.x / CLUSTER_M),
          full_units(full_units), left(left), helpers(clusters - left), split(split) {}
    __device__ bool piece(int i, Piece& p) const {          // this cluster's i-th piece; false past the last
        int whole = full_units / clusters;
        if (i < whole) { p = {cluster + i * clusters, 0, k_tiles}; return true; }
        i -= whole;
        if (cluster < left) { p = {full_units + cluster, 0, split}; return i == 0; }
        int tail = cluster - left + i * helpers;            // helpers take the tails in turn
        p = {full_units + tail, split, k_tiles};
        return tail < left && split < k_tiles;
    }
};

// A stage holds A's and B's K-tiles only.
struct NothingMore {
    __device__ void operator()(uint64_t&, int, int, int) const {}
};

// The producer's side of a piece: its K-tiles of A, and this CTA's slice of B multicast to the
// cluster, into the ring from its fill-th stage on; more(full, s, k, tm) loads what else stage s
// holds for K-tile k of tile row tm, before A and B can complete its barrier.
template <class More = NothingMore>
__device__ inline void load_piece(SharedStorage& smem, Piece p, int& fill, CUtensorMap const& tmaA,
                                  CUtensorMap const& tmaB, int M, int N, int rank, More more = {}) {
    auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
    for (int k = p.k0; k < p.k1; ++k, ++fill) {
        int s = acquire_stage(smem, fill);
        more(smem.full[s], s, k, tm);
        SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
        SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                         smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
    }
}

// The producer's loop: the cluster's pieces in the schedule's order, the ring's fills counted across them.
template <class More = NothingMore>
__device__ inline void produce(SharedStorage& smem, Schedule const& schedule, CUtensorMap const& tmaA,
                               CUtensorMap const& tmaB, int M, int N, int rank, More more = {}) {
    int fill = 0;
    Piece p;
    for (int i = 0; schedule.piece(i, p); ++i) load_piece(smem, p, fill, tmaA, tmaB, M, N, rank, more);
}

// The split tiles' partial sums, in scratch the launcher gives: a slot per last-wave unit and CTA of
// the cluster, holding FRAGMENT floats per consumer thread as float4s (thread t's j-th at
// j * CONSUMER_THREADS + t: each store and load of a warp is 512 contiguous bytes), and a flag per
// consumer thread, 1 while its sums wait for the owner. The launcher (bench/gemm/launch.py) reads a
// slot's floats and flags back, and gives a slot per CTA of the grid.
extern "C" __constant__ int TAIL_SLOT[2] = {FRAGMENT * CONSUMER_THREADS, CONSUMER_THREADS};
struct TailSums {
    float4* sums;
    int* ready;
    __device__ TailSums(float* partials, int* flags, int unit) {
        const int slot = unit * CLUSTER_M + block_rank_in_cluster(), ct = threadIdx.x - 128 * PRODUCER_WARPGROUPS;
        sums = reinterpret_cast<float4*>(partials) + slot * (FRAGMENT / 4) * CONSUMER_THREADS + ct;
        ready = flags + slot * CONSUMER_THREADS + ct;
    }
    template <class FragC>
    __device__ void leave(FragC const& acc) const {          // a helper, after its K-tiles
        CUTE_UNROLL
        for (int j = 0; j < FRAGMENT / 4; ++j)
            __stcg(sums + j * CONSUMER_THREADS, make_float4(acc(4 * j), acc(4 * j + 1), acc(4 * j + 2), acc(4 * j + 3)));
        __threadfence();                                     // the sums are visible before the flag
        atomicExch(ready, 1);
    }
    template <class FragC>
    __device__ void add_to(FragC& acc) const {               // the owner, after its K-tiles
        while (*reinterpret_cast<volatile int*>(ready) == 0) __nanosleep(256);
        __threadfence();
        CUTE_UNROLL
        for (int j = 0; j < FRAGMENT / 4; ++j) {
            float4 v = __ldcg(sums + j * CONSUMER_THREADS);
            acc(4 * j) += v.x, acc(4 * j + 1) += v.y, acc(4 * j + 2) += v.z, acc(4 * j + 3) += v.w;
        }
        *ready = 0;                                          // for the next launch
    }
};
static_assert(FRAGMENT % 4 == 0, "a thread's sums are whole float4s");
