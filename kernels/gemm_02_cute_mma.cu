// Step 2 — CuTe simple MMA: TF32 tensor cores (SM80 16x8x8 atom, 4 warps tiled 2x2), operands straight from global memory.
//
// C(M,N) = A(M,K) · B(K,N) with A row-major and B stored K-major (as B^T, N x K row-major):
// both operands are "K-major", the TN layout the TF32 mma.sync atom wants.
#include <cute/tensor.hpp>

using namespace cute;

// Tile constants come from Python (bench/gemm.py) so that one definition drives
// the compile, the diagram and the slide.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif

#ifndef MMA_ATOM
#define MMA_ATOM SM80_16x8x8_F32TF32TF32F32_TN        // one warp: 16x8x8, TF32 in, FP32 accumulate
#endif
#ifndef WARPS_M
#define WARPS_M 2
#endif
#ifndef WARPS_N
#define WARPS_N 2
#endif
using MmaAtom = MMA_ATOM;
using WarpLayout = Layout<Shape<Int<WARPS_M>, Int<WARPS_N>, _1>>;   // warps tiled over (M, N)
constexpr int THREADS = 32 * size(WarpLayout{});

extern "C" __global__ void __launch_bounds__(THREADS) gemm_cute_mma(const float* A, const float* B, float* C,
                                                                  int M, int N, int K) {
    static_assert(BM % (size<0>(typename MMA_Traits<MmaAtom>::Shape_MNK{}) * WARPS_M) == 0 &&
                  BN % (size<1>(typename MMA_Traits<MmaAtom>::Shape_MNK{}) * WARPS_N) == 0 &&
                  BK % size<2>(typename MMA_Traits<MmaAtom>::Shape_MNK{}) == 0, "the CTA tile is whole MMA tiles");
    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, _1{}));   // (M,K)
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(K, _1{}));   // (N,K)
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, _1{}));   // (M,N)

    auto tiler = make_shape(Int<BM>{}, Int<BN>{}, Int<BK>{});
    auto cta = make_coord(blockIdx.x, blockIdx.y, _);
    Tensor gA = local_tile(mA, tiler, cta, Step<_1, X, _1>{});   // (BM,BK,k)
    Tensor gB = local_tile(mB, tiler, cta, Step<X, _1, _1>{});   // (BN,BK,k)
    Tensor gC = local_tile(mC, tiler, cta, Step<_1, _1, X>{});   // (BM,BN)

    // #region kernel
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpLayout{});
    ThrMMA thr = mma.get_slice(threadIdx.x);
    Tensor tCgA = thr.partition_A(gA);                            // (MMA,MMA_M,MMA_K,k)
    Tensor tCgB = thr.partition_B(gB);                            // (MMA,MMA_N,MMA_K,k)
    Tensor tCgC = thr.partition_C(gC);                            // (MMA,MMA_M,MMA_N)
    Tensor tCrA = thr.partition_fragment_A(gA(_, _, 0));          // (MMA,MMA_M,MMA_K)
    Tensor tCrB = thr.partition_fragment_B(gB(_, _, 0));          // (MMA,MMA_N,MMA_K)
    Tensor tCrC = thr.make_fragment_C(tCgC);                      // (MMA,MMA_M,MMA_N)
    clear(tCrC);

    for (int k = 0; k < size<3>(tCgA); ++k) {
        copy(tCgA(_, _, _, k), tCrA);                             // global -> registers (float -> tf32)
        copy(tCgB(_, _, _, k), tCrB);
        gemm(mma, tCrA, tCrB, tCrC);                              // mma.sync on the tensor cores
    }
    copy(tCrC, tCgC);                                             // registers -> global
    // #endregion kernel
}
