// L2 bandwidth: a working set small enough to stay in L2, read (or copied) over
// and over with loads and stores that bypass L1 (ld.cg / st.cg). Each thread
// keeps UNROLL independent 16-byte loads in flight.
#ifndef UNROLL
#define UNROLL 4
#endif

// Every 16-byte element of src this thread owns, `passes` times over: loaded
// UNROLL at a time, then handed to use(index, value).
template <class Use>
__device__ __forceinline__ void stream(const float4* __restrict__ src, long long n, int passes, Use use) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int p = 0; p < passes; ++p) {
        long long i = first;
        for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(src + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) use(i + u * stride, v[u]);
        }
        for (; i < n; i += stride) use(i, __ldcg(src + i));
    }
}

// Each thread's sum goes to sums[thread], so the loads stay live and the host can check them.
extern "C" __global__ void l2_read(const float4* __restrict__ src, long long n, int passes, float* __restrict__ sums) {
    float acc = 0.0f;
    stream(src, n, passes, [&](long long, float4 v) { acc += (v.x + v.y) + (v.z + v.w); });
    sums[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

extern "C" __global__ void l2_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n, int passes) {
    stream(src, n, passes, [&](long long i, float4 v) { __stcg(dst + i, v); });
}
