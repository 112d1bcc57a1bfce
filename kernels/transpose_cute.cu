// Matrix transpose in CuTe: the output is the input's layout with its strides
// swapped, so "transpose" is a copy between two views, staged through a padded
// shared-memory tile. Scalar: one float per copy on a 32 x 32 tile; vectorized:
// 16-byte global copies (UniversalCopy<uint128_t>) on a 64 x 64 tile, with scalar
// shared-memory accesses (padded rows are not 16-byte aligned).
#include <cute/tensor.hpp>

using namespace cute;

template <int T>
using TileShape = Shape<Int<T>, Int<T>>;
// Row-major tile padded by one float: bank = (row + column) mod 32.
template <int T>
using SmemLayout = Layout<TileShape<T>, Stride<Int<T + 1>, _1>>;

// (T,T) tiles of in (row-major) and of out viewed so that out_view(r, c) = out[c][r].
template <int T>
__device__ auto tile_views(const float* in, float* out, int n) {
    auto gIn = make_tensor(make_gmem_ptr(in), make_layout(make_shape(n, n), LayoutRight{}));   // (n,n)
    auto gOut = make_tensor(make_gmem_ptr(out), make_layout(make_shape(n, n), LayoutLeft{})); // (n,n)
    auto cta = make_coord(blockIdx.y, blockIdx.x);
    return cute::make_tuple(local_tile(gIn, TileShape<T>{}, cta), local_tile(gOut, TileShape<T>{}, cta));
}

constexpr int SCALAR_TILE = 32, SCALAR_THREADS = 256;

extern "C" __global__ void __launch_bounds__(SCALAR_THREADS) transpose_cute(const float* in, float* out, int n) {
    __shared__ float smem[cosize_v<SmemLayout<SCALAR_TILE>>];
    auto [tileIn, tileOut] = tile_views<SCALAR_TILE>(in, out, n);             // (32,32), (32,32)
    Tensor sTile = make_tensor(make_smem_ptr(smem), SmemLayout<SCALAR_TILE>{});  // (32,32)
    auto readThreads = Layout<Shape<_8, _32>, Stride<_32, _1>>{};   // consecutive threads: consecutive columns
    auto writeThreads = Layout<Shape<_32, _8>, Stride<_1, _32>>{};  // consecutive threads: consecutive output columns
    static_assert(size(readThreads) == SCALAR_THREADS && size(writeThreads) == SCALAR_THREADS);
    copy(local_partition(tileIn, readThreads, threadIdx.x), local_partition(sTile, readThreads, threadIdx.x));    // (4,1)
    __syncthreads();
    copy(local_partition(sTile, writeThreads, threadIdx.x), local_partition(tileOut, writeThreads, threadIdx.x));  // (1,4)
}

constexpr int VEC_TILE = 64, VEC_THREADS = 512;

extern "C" __global__ void __launch_bounds__(VEC_THREADS) transpose_cute_vec4(const float* in, float* out, int n) {
    __shared__ float smem[cosize_v<SmemLayout<VEC_TILE>>];
    auto [tileIn, tileOut] = tile_views<VEC_TILE>(in, out, n);                // (64,64), (64,64)
    Tensor sTile = make_tensor(make_smem_ptr(smem), SmemLayout<VEC_TILE>{});   // (64,64)
    // Reading: 32 rows x 16 threads per pass, each thread 4 consecutive floats of a row.
    auto readCopy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                    Layout<Shape<_32, _16>, Stride<_16, _1>>{},   // threads (32,16)
                                    Layout<Shape<_1, _4>>{});                      // values (1,4)
    // Writing: 16 threads x 32 output rows per pass, each thread 4 consecutive floats of an output row.
    auto writeCopy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                     Layout<Shape<_16, _32>, Stride<_1, _16>>{},  // threads (16,32)
                                     Layout<Shape<_4, _1>>{});                     // values (4,1)
    static_assert(size(readCopy) == VEC_THREADS && size(writeCopy) == VEC_THREADS);
    auto readThr = readCopy.get_thread_slice(threadIdx.x);
    Tensor gIn = readThr.partition_S(tileIn);                          // (CPY,2,1)
    Tensor sIn = readThr.partition_D(sTile);                           // (CPY,2,1)
    Tensor rIn = make_fragment_like(gIn);                              // (CPY,2,1)
    copy(readCopy, gIn, rIn);
    CUTE_UNROLL
    for (int i = 0; i < size(rIn); ++i) sIn(i) = rIn(i);             // scalar shared stores
    __syncthreads();
    auto writeThr = writeCopy.get_thread_slice(threadIdx.x);
    Tensor sOut = writeThr.partition_S(sTile);                         // (CPY,1,2)
    Tensor gOut = writeThr.partition_D(tileOut);                       // (CPY,1,2)
    Tensor rOut = make_fragment_like(gOut);                            // (CPY,1,2)
    CUTE_UNROLL
    for (int i = 0; i < size(rOut); ++i) rOut(i) = sOut(i);           // scalar shared loads
    copy(writeCopy, rOut, gOut);
}
