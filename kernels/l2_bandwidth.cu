// L2 bandwidth: a working set small enough to stay in L2, read (or copied) over
// and over with loads and stores that bypass L1 (ld.cg / st.cg). Each thread
// keeps UNROLL independent 16-byte loads in flight.
#ifndef UNROLL
#define UNROLL 4
#endif

// Every 16-byte element of src this thread owns as thread `threadIdx.x` of block `block` of
// `blocks`, `passes` times over: loaded UNROLL at a time, then handed to use(index, value).
template <class Use>
__device__ __forceinline__ void stream(const float4* __restrict__ src, long long n, int passes, Use use,
                                       int block = blockIdx.x, int blocks = gridDim.x) {
    const long long stride = (long long)blocks * blockDim.x;
    const long long first = (long long)block * blockDim.x + threadIdx.x;
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


extern "C" __global__ void l2_copy(const float4* __restrict__ src, float4* __restrict__ dst, long long n, int passes) {
    stream(src, n, passes, [&](long long i, float4 v) { __stcg(dst + i, v); });
}

__device__ __forceinline__ int sm_id() {
    int sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    return sm;
}

// Each thread's sum goes to sums[thread], so the loads stay live and the host can check them; each
// block records its SM, so the host knows how many SMs the grid really ran on.
extern "C" __global__ void l2_read(const float4* __restrict__ src, long long n, int passes, float* __restrict__ sums,
                                   int* __restrict__ sms) {
    if (threadIdx.x == 0) sms[blockIdx.x] = sm_id();
    float acc = 0.0f;
    stream(src, n, passes, [&](long long, float4 v) { acc += (v.x + v.y) + (v.z + v.w); });
    sums[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The read on chosen SMs: one block on every SM (the grid), and only those whose SM's bit is set in
// `chosen` read, splitting the data by their rank among the chosen; each block records its SM.
extern "C" __global__ void l2_read_on(const float4* __restrict__ src, long long n, int passes,
                                      float* __restrict__ sums, const unsigned* __restrict__ chosen, int words,
                                      int* __restrict__ sms) {
    const int sm = sm_id();
    sms[blockIdx.x] = sm;
    if (sm >= 32 * words || !(chosen[sm / 32] >> (sm % 32) & 1u)) return;   // past the mask: the host's check fails
    int rank = __popc(chosen[sm / 32] & ((1u << (sm % 32)) - 1u)), blocks = 0;
    for (int w = 0; w < words; ++w) {
        blocks += __popc(chosen[w]);
        if (w < sm / 32) rank += __popc(chosen[w]);
    }
    float acc = 0.0f;
    stream(src, n, passes, [&](long long, float4 v) { acc += (v.x + v.y) + (v.z + v.w); }, rank, blocks);
    sums[(long long)rank * blockDim.x + threadIdx.x] = acc;
}

// Where the block scheduler puts a grid's blocks: each block's SM.
extern "C" __global__ void where_blocks_run(int* __restrict__ sms) {
    if (threadIdx.x == 0) sms[blockIdx.x] = sm_id();
}
