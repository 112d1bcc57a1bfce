// The split-wave steps' schedule (10 on): which (cluster tile, K range) pieces each persistent
// cluster computes, whole tiles over the full waves and then its part of the split last wave.
#pragma once
#include "gemm_sm90_tiles.cuh"

constexpr int FRAGMENT = BM * BN / CONSUMER_THREADS;   // accumulators a consumer thread holds

// A cluster's work, in order: whole tiles over the full waves, then its part of the last wave:
// pieces (cluster tile, K-tiles [k0, k1)).
struct Piece { int unit, k0, k1; };
struct Schedule {
    int k_tiles, clusters, cluster, full_units, left, helpers, split;
    __device__ Schedule(int M, int N, int K) {
        int units = (M / BM) * (N / BN) / CLUSTER_M;        // a unit: one tile per CTA of the cluster
        k_tiles = K / BK;
        clusters = gridDim.x / CLUSTER_M;
        cluster = blockIdx.x / CLUSTER_M;
        left = units % clusters;                            // the last wave's units, one per owner cluster
        full_units = units - left;
        helpers = clusters - left;                          // the clusters with nothing in the last wave
        int rounds = (left + helpers - 1) / helpers;        // tails a helper computes, at most
        split = (rounds * k_tiles + rounds) / (rounds + 1); // owners' K-tiles: ceil(rounds k / (rounds + 1))
    }
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
