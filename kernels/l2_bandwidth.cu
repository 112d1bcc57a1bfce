// L2 bandwidth: a working set small enough to stay in L2, read (or copied) over
// and over with loads and stores that bypass L1 (ld.cg / st.cg). Each thread
// keeps UNROLL independent 16-byte loads in flight.
#ifndef UNROLL
#define UNROLL 4
#endif

// Each thread's sum goes to sums[thread], so the loads stay live and the host can check them.
extern "C" __global__ void l2_read(const float4* __restrict__ src, long long n, int passes, float* __restrict__ sums) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        long long i = first;
        for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(src + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) acc += (v[u].x + v[u].y) + (v[u].z + v[u].w);
        }
        for (; i < n; i += stride) {
            const float4 v = __ldcg(src + i);
            acc += (v.x + v.y) + (v.z + v.w);
        }
    }
    sums[first] = acc;
}

extern "C" __global__ void l2_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n, int passes) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (int p = 0; p < passes; ++p) {
        long long i = first;
        for (; i + (UNROLL - 1) * stride < n; i += UNROLL * stride) {
            float4 v[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) v[u] = __ldcg(src + i + u * stride);
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) __stcg(dst + i + u * stride, v[u]);
        }
        for (; i < n; i += stride) __stcg(dst + i, __ldcg(src + i));
    }
}
