// wgmma alone: how fast Hopper's tensor cores take one warpgroup's 64 x N x K instructions, with A and
// B from shared memory and no loads at all (bench/machinery/wgmma.py). Every warpgroup of a CTA multiplies
// the same tiles of ones again and again; one CTA per SM.
// ELEMENT (tfloat32_t, bfloat16_t, float_e4m3_t) and WGMMA_N come from the benchmark; a K-tile is 128 bytes
// of K, the GEMM steps' (32 TF32, 64 BF16 or 128 e4m3 values), four wgmmas of 32 bytes each.
#include <cute/tensor.hpp>

using namespace cute;

#if !defined(ELEMENT) || !defined(WGMMA_N) || !defined(MAX_WARPGROUPS)
#error "ELEMENT, WGMMA_N and MAX_WARPGROUPS come from bench/machinery/wgmma.py"
#endif

using Element = ELEMENT;
constexpr int BK = 128 / sizeof(Element);
using Atom = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<WGMMA_N>, Int<BK>>>());
using SmemA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{}, Shape<_64, Int<BK>>{}));   // (64,BK)
using SmemB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{}, Shape<Int<WGMMA_N>, Int<BK>>{}));  // (N,BK)
static_assert(WGMMA_N / 2 + 40 <= 65536 / (128 * MAX_WARPGROUPS), "a thread's accumulators fit its share of the registers");

// Bytes, not Elements: e4m3's constructor would be a dynamic initialization of shared memory.
__shared__ alignas(1024) unsigned char smem_a_bytes[cosize_v<SmemA> * sizeof(Element)];
__shared__ alignas(1024) unsigned char smem_b_bytes[cosize_v<SmemB> * sizeof(Element)];

// #region kernel
// The tiles, ones, and this warpgroup's wgmma descriptors and accumulators (zeroed).
__device__ inline auto fragments() {
    Element* smem_a = reinterpret_cast<Element*>(smem_a_bytes);
    Element* smem_b = reinterpret_cast<Element*>(smem_b_bytes);
    for (int i = threadIdx.x; i < cosize_v<SmemA>; i += blockDim.x) smem_a[i] = Element(1.0f);
    for (int i = threadIdx.x; i < cosize_v<SmemB>; i += blockDim.x) smem_b[i] = Element(1.0f);
    __syncthreads();
    TiledMMA mma = make_tiled_mma(Atom{});
    ThrMMA thr = mma.get_slice(threadIdx.x % 128);
    Tensor tCrC = thr.partition_fragment_C(make_identity_tensor(Shape<_64, Int<WGMMA_N>>{}));     // (MMA,MMA_M,MMA_N)
    clear(tCrC);
    return cute::make_tuple(mma, thr.make_fragment_A(thr.partition_A(make_tensor(make_smem_ptr(smem_a), SmemA{}))),
                            thr.make_fragment_B(thr.partition_B(make_tensor(make_smem_ptr(smem_b), SmemB{}))), tCrC);
}

// Each thread's first sum (every sum is the K it added up: all ones) and, from each warpgroup's first
// thread, the cycles its loop took.
template <class FragC>
__device__ inline void report(FragC const& tCrC, long long cycles, float* sums, long long* clocks) {
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    sums[thread] = tCrC(0);
    if (threadIdx.x % 128 == 0) clocks[thread / 128] = cycles;
}

// Throughput: each warpgroup issues a K-tile's wgmmas `iters` times into the same sums, one batch
// in flight while it issues the next, as a GEMM's main loop does.
extern "C" __global__ void __launch_bounds__(128 * MAX_WARPGROUPS, 1) wgmma_rate(int iters, float* sums, long long* clocks) {
    auto [mma, tCrA, tCrB, tCrC] = fragments();
    const long long start = clock64();
    for (int i = 0; i < iters; ++i) {
        warpgroup_fence_operand(tCrC);
        warpgroup_arrive();
        gemm(mma, tCrA, tCrB, tCrC);
        warpgroup_commit_batch();
        warpgroup_wait<1>();
    }
    warpgroup_wait<0>();
    warpgroup_fence_operand(tCrC);
    report(tCrC, clock64() - start, sums, clocks);
}

// Latency: one wgmma (the K-tile's first 32 bytes) at a time, each waited for before the next.
extern "C" __global__ void __launch_bounds__(128 * MAX_WARPGROUPS, 1) wgmma_latency(int iters, float* sums, long long* clocks) {
    auto [mma, tCrA, tCrB, tCrC] = fragments();
    const long long start = clock64();
    for (int i = 0; i < iters; ++i) {
        warpgroup_fence_operand(tCrC);
        warpgroup_arrive();
        gemm(mma, tCrA(_, _, 0), tCrB(_, _, 0), tCrC);
        warpgroup_commit_batch();
        warpgroup_wait<0>();
    }
    warpgroup_fence_operand(tCrC);
    report(tCrC, clock64() - start, sums, clocks);
}
// #endregion kernel

// Read back by the benchmark: the wgmma's M x N x K, and K of a K-tile.
extern "C" __constant__ int ATOM_MNK[3] = {size<0>(typename MMA_Traits<Atom>::Shape_MNK{}),
                                           size<1>(typename MMA_Traits<Atom>::Shape_MNK{}),
                                           size<2>(typename MMA_Traits<Atom>::Shape_MNK{})};
extern "C" __constant__ int K_TILE = BK;
