// What the CuTe GEMM steps share: the tile constants (from the step catalogue, bench/gemm/catalogue.py),
// the SM80 TF32 MMA atom and warp layout, and the CTA's view of A, B and C.
// A (M,K) and B stored as (N,K) are both K-major, the TN layout the TF32 mma.sync wants.
#pragma once
#include <cute/tensor.hpp>

using namespace cute;

// The step catalogue (bench/gemm/catalogue.py) passes every constant with -D; none has a default here.
// MMA_ATOM: one warp's MMA, e.g. SM80_16x8x8_F32TF32TF32F32_TN (16x8x8, TF32 in, FP32 accumulate).
#if !defined(BM) || !defined(BN) || !defined(BK) || !defined(MMA_ATOM) || !defined(WARPS_M) || !defined(WARPS_N)
#error "BM, BN, BK, MMA_ATOM, WARPS_M and WARPS_N come from the step catalogue"
#endif

using MmaAtom = MMA_ATOM;
using WarpLayout = Layout<Shape<Int<WARPS_M>, Int<WARPS_N>, _1>>;   // warps tiled over (M, N)
constexpr int THREADS = 32 * size(WarpLayout{});
using AtomMNK = typename MMA_Traits<MmaAtom>::Shape_MNK;
static_assert(BM % (size<0>(AtomMNK{}) * WARPS_M) == 0 && BN % (size<1>(AtomMNK{}) * WARPS_N) == 0 &&
              BK % size<2>(AtomMNK{}) == 0, "the CTA tile is whole MMA tiles");
// Read back by the launcher (bench/gemm/launch.py): the threads of a CTA and the MMA atom's M x N x K.
extern "C" __constant__ int BLOCK_THREADS = THREADS;
extern "C" __constant__ int ATOM_MNK[3] = {size<0>(AtomMNK{}), size<1>(AtomMNK{}), size<2>(AtomMNK{})};

// This CTA's tiles: A (BM,BK,k), B (BN,BK,k) over the K steps, and C (BM,BN).
__device__ inline auto cta_tiles(const float* A, const float* B, float* C, int M, int N, int K) {
    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, _1{}));   // (M,K)
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(K, _1{}));   // (N,K)
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, _1{}));   // (M,N)
    auto tiler = make_shape(Int<BM>{}, Int<BN>{}, Int<BK>{});
    auto cta = make_coord(blockIdx.x, blockIdx.y, _);
    return cute::make_tuple(local_tile(mA, tiler, cta, Step<_1, X, _1>{}),              // (BM,BK,k)
                            local_tile(mB, tiler, cta, Step<X, _1, _1>{}),              // (BN,BK,k)
                            local_tile(mC, tiler, cta, Step<_1, _1, X>{}));             // (BM,BN)
}
