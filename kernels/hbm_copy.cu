// Streaming copy with 16-byte accesses. A block copies a contiguous tile of
// blockDim x UNROLL vectors, loading all UNROLL before storing any, so bytes in
// flight = threads x UNROLL x 16 (what Little's law says bandwidth needs); then
// it jumps gridDim tiles ahead. With a grid of one block per tile, each block
// copies one tile and retires.
#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void copy_f4(const float4* __restrict__ src, float4* __restrict__ dst,
                                   long long n, unsigned* __restrict__ sm_of_block) {
    // Which SM ran each block, so the results can show how many SMs took part.
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        sm_of_block[blockIdx.x] = smid;
    }
    const long long tile = (long long)blockDim.x * UNROLL;
    for (long long base = blockIdx.x * tile; base < n; base += gridDim.x * tile) {
        float4 v[UNROLL];
        // Lane-consecutive indices for each u: one coalesced 512-byte request per warp.
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + u * blockDim.x + threadIdx.x;
            if (i < n) v[u] = src[i];
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const long long i = base + u * blockDim.x + threadIdx.x;
            if (i < n) dst[i] = v[u];
        }
    }
}
