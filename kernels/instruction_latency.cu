// Cycles per warp-instruction of one operation: ILP independent chains of
// dependent operations, each op written as inline PTX so that the compiler can
// neither fold a chain nor merge steps. OPS_PER_ITER ops per loop iteration keep
// the loop's own instructions negligible. The SASS of each instantiation is read
// back (cuobjdump) to confirm what the loop body holds.
#include <cstdint>

#ifndef OPS_PER_ITER
#define OPS_PER_ITER 256
#endif

struct FADD  { static __device__ __forceinline__ float op(float x, float a, float) { float r; asm volatile("add.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(a)); return r; } };
struct FMUL  { static __device__ __forceinline__ float op(float x, float a, float) { float r; asm volatile("mul.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(a)); return r; } };
// FFMA adds x itself: with a second register operand (x*a + b) the register
// reads of 128 live chains collide in the register banks (1.14 cycles, not 1.05).
struct FFMA  { static __device__ __forceinline__ float op(float x, float a, float) { float r; asm volatile("fma.rn.f32 %0, %1, %2, %1;" : "=f"(r) : "f"(x), "f"(a)); return r; } };
struct FRCP  { static __device__ __forceinline__ float op(float x, float, float) { return __frcp_rn(x); } };
struct FSQRT { static __device__ __forceinline__ float op(float x, float, float) { return __fsqrt_rn(x); } };
struct SINF  { static __device__ __forceinline__ float op(float x, float, float) { return __sinf(x); } };
struct LOGF  { static __device__ __forceinline__ float op(float x, float, float) { return __logf(x); } };
struct EXPF  { static __device__ __forceinline__ float op(float x, float, float) { return __expf(x); } };
// Integer ops reinterpret the float registers' bits, so one kernel body serves both.
// IADD adds x to itself: with a constant operand ptxas merges two steps into one
// three-input IADD3, which is how a chain of adds can seem to take half a cycle.
struct IADD  { static __device__ __forceinline__ float op(float x, float, float) { int r; asm volatile("add.s32 %0, %1, %1;" : "=r"(r) : "r"(__float_as_int(x))); return __int_as_float(r); } };
// IMUL squares x: below sm_90 ptxas turns x*a*a into x*(a*a), with a*a on the uniform datapath.
struct IMUL  { static __device__ __forceinline__ float op(float x, float, float) { int r; asm volatile("mul.lo.s32 %0, %1, %1;" : "=r"(r) : "r"(__float_as_int(x))); return __int_as_float(r); } };

// One warp (or many, for the issue rate): each thread runs ILP chains.
// clocks[2 warp], clocks[2 warp + 1]: the SM's clock before and after the timed
// loop; smid[warp]: the SM it ran on.
template <class Op, int ILP>
__device__ void chains(float a, float b, int iters, float* out, long long* clocks, unsigned* smid) {
    static_assert(OPS_PER_ITER % ILP == 0, "the loop body holds a whole number of steps per chain");
    float x[ILP];
#pragma unroll
    for (int i = 0; i < ILP; ++i) x[i] = 1.0f + 1e-3f * (threadIdx.x + i);   // run-time values
    __syncwarp();
    const long long t0 = clock64();
#pragma unroll 1
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int s = 0; s < OPS_PER_ITER / ILP; ++s)
#pragma unroll
            for (int i = 0; i < ILP; ++i) x[i] = Op::op(x[i], a, b);
    }
    const long long t1 = clock64();
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ILP; ++i) sum += x[i];
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;           // keeps every chain live
    if (threadIdx.x % 32 == 0) {
        clocks[2 * warp] = t0;
        clocks[2 * warp + 1] = t1;
        unsigned id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        smid[warp] = id;
    }
}

#define CHAIN_KERNEL(OP, ILP) \
    extern "C" __global__ void chain_##OP##_##ILP(float a, float b, int iters, float* out, long long* clocks, unsigned* smid) \
    { chains<OP, ILP>(a, b, iters, out, clocks, smid); }
#define CHAIN_ILPS(OP) CHAIN_KERNEL(OP, 1) CHAIN_KERNEL(OP, 2) CHAIN_KERNEL(OP, 4) CHAIN_KERNEL(OP, 8) \
    CHAIN_KERNEL(OP, 16) CHAIN_KERNEL(OP, 32) CHAIN_KERNEL(OP, 64) CHAIN_KERNEL(OP, 128)

CHAIN_ILPS(FADD) CHAIN_ILPS(FMUL) CHAIN_ILPS(FFMA) CHAIN_ILPS(IADD) CHAIN_ILPS(IMUL)
CHAIN_ILPS(FRCP) CHAIN_ILPS(FSQRT) CHAIN_ILPS(SINF) CHAIN_ILPS(LOGF) CHAIN_ILPS(EXPF)
