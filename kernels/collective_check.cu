// What every rank of a collective sends, and a count of the output elements that differ from
// what the collective must produce. Values are small integers, so a sum over up to 64 ranks is
// exact in float32 and a check is equality, not a tolerance.

__device__ __forceinline__ float value_of(int rank, long long i) {
    return static_cast<float>((i * 7 + rank * 13) % 251);
}

// x[i] = value_of(rank, offset + i)
extern "C" __global__ void fill(float* x, long long n, int rank, long long offset) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        x[i] = value_of(rank, offset + i);
}

// What out[i] must be:
//   SUM_OF_RANKS  sum over ranks r of value_of(r, offset + i)       (all-reduce, reduce-scatter)
//   ONE_RANK      value_of(source, offset + i)                      (broadcast, send/recv)
//   GATHERED      value_of(i / per_rank, offset + i % per_rank)    (all-gather at offset 0; all-to-all at the
//                 receiver's rank x per_rank: part j is rank j's part for it)
enum Expect { SUM_OF_RANKS = 0, ONE_RANK = 1, GATHERED = 2 };

extern "C" __global__ void count_wrong(const float* out, long long n, int expect, int nranks, int source,
                                       long long offset, long long per_rank, unsigned long long* wrong) {
    unsigned long long mine = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
        float want;
        if (expect == SUM_OF_RANKS) {
            want = 0.f;
            for (int r = 0; r < nranks; ++r) want += value_of(r, offset + i);
        } else if (expect == ONE_RANK) {
            want = value_of(source, offset + i);
        } else {
            want = value_of(static_cast<int>(i / per_rank), offset + i % per_rank);
        }
        mine += out[i] != want;     // NaN (the poison) is never equal
    }
    if (mine) atomicAdd(wrong, mine);
}
