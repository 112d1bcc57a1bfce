// Streaming copy with 16-byte accesses. Each thread issues UNROLL independent
// loads before its stores, so bytes in flight = threads x UNROLL x 16: the
// quantity Little's law says bandwidth needs.
#ifndef UNROLL
#define UNROLL 4
#endif
// 1: evict-first cache hints (ld.global.cs / st.global.cs), so streamed lines
// do not displace each other in L2.
#ifndef STREAMING
#define STREAMING 0
#endif

__device__ __forceinline__ float4 load16(const float4* p) {
#if STREAMING
    return __ldcs(p);
#else
    return *p;
#endif
}

__device__ __forceinline__ void store16(float4* p, float4 v) {
#if STREAMING
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void copy_f4(const float4* __restrict__ src, float4* __restrict__ dst,
                                   long long n, unsigned* __restrict__ sm_of_block) {
    // Which SM ran each block, so the results can show how many SMs took part.
    if (threadIdx.x == 0) {
        unsigned smid;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        sm_of_block[blockIdx.x] = smid;
    }
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    // Lane-consecutive indices for each u: every warp access is one coalesced 512-byte request.
    for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
        float4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) v[u] = load16(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) store16(dst + i + u * stride, v[u]);
    }
    for (; i < n; i += stride) store16(dst + i, load16(src + i));
}
