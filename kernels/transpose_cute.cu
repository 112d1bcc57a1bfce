// Matrix transpose in CuTe: the output is the input's layout with its strides
// swapped, so "transpose" is a copy between two views, staged through a padded
// shared-memory tile. Scalar: one float per copy; vectorized: 16-byte global
// copies (UniversalCopy<uint128_t>), scalar shared-memory accesses.
#include <cute/tensor.hpp>

using namespace cute;

using TileShape = Shape<_32, _32>;
// Row-major tile padded by one float: bank = (row + column) mod 32, conflict-free both ways.
using SmemLayout = Layout<TileShape, Stride<Int<33>, _1>>;

template <class T>
__device__ auto matrix_views(const T* in, T* out, int n) {
    auto gIn = make_tensor(make_gmem_ptr(in), make_layout(make_shape(n, n), LayoutRight{}));   // (n,n) in(r,c)
    auto gOut = make_tensor(make_gmem_ptr(out), make_layout(make_shape(n, n), LayoutLeft{})); // (n,n) out(c,r) as (r,c)
    auto cta = make_coord(blockIdx.y, blockIdx.x);
    return cute::make_tuple(local_tile(gIn, TileShape{}, cta), local_tile(gOut, TileShape{}, cta));   // (32,32) each
}

// 256 threads: reads along rows (consecutive threads, consecutive columns), writes along
// output rows (consecutive threads, consecutive input rows).
extern "C" __global__ void transpose_cute(const float* in, float* out, int n) {
    __shared__ float smem[cosize_v<SmemLayout>];
    auto [tileIn, tileOut] = matrix_views(in, out, n);                 // (32,32), (32,32)
    Tensor sTile = make_tensor(make_smem_ptr(smem), SmemLayout{});     // (32,32)
    auto readThreads = Layout<Shape<_8, _32>, Stride<_32, _1>>{};      // thread -> (row, col) for reading
    auto writeThreads = Layout<Shape<_32, _8>, Stride<_1, _32>>{};     // thread -> (row, col) for writing
    copy(local_partition(tileIn, readThreads, threadIdx.x), local_partition(sTile, readThreads, threadIdx.x));  // (4,1)
    __syncthreads();
    copy(local_partition(sTile, writeThreads, threadIdx.x), local_partition(tileOut, writeThreads, threadIdx.x)); // (1,4)
}

// 256 threads, 4 floats each: a (32,8) grid of threads over the tile's (32, 8 x 4) elements.
extern "C" __global__ void transpose_cute_vec4(const float* in, float* out, int n) {
    __shared__ float smem[cosize_v<SmemLayout>];
    auto [tileIn, tileOut] = matrix_views(in, out, n);                 // (32,32), (32,32)
    Tensor sTile = make_tensor(make_smem_ptr(smem), SmemLayout{});     // (32,32)
    // Reading: thread t takes row t/8, columns 4(t%8)..4(t%8)+3 (16 contiguous bytes).
    auto readCopy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                    Layout<Shape<_32, _8>, Stride<_8, _1>>{},     // threads (32,8)
                                    Layout<Shape<_1, _4>>{});                      // values (1,4)
    auto readThr = readCopy.get_thread_slice(threadIdx.x);
    Tensor rIn = make_fragment_like(readThr.partition_S(tileIn));      // (CPY,1,1)
    copy(readCopy, readThr.partition_S(tileIn), rIn);
    // Padded rows are not 16-byte aligned: the shared side stays scalar, element by element.
    Tensor sIn = readThr.partition_D(sTile);                           // (CPY,1,1)
    CUTE_UNROLL
    for (int i = 0; i < size(rIn); ++i) sIn(i) = rIn(i);
    __syncthreads();
    // Writing: thread t takes output row t/8 (an input column), 4 consecutive input rows.
    auto writeCopy = make_tiled_copy(Copy_Atom<UniversalCopy<uint128_t>, float>{},
                                     Layout<Shape<_8, _32>, Stride<_1, _8>>{},    // threads (8,32)
                                     Layout<Shape<_4, _1>>{});                     // values (4,1)
    auto writeThr = writeCopy.get_thread_slice(threadIdx.x);
    Tensor rOut = make_fragment_like(writeThr.partition_D(tileOut));   // (CPY,1,1)
    Tensor sOut = writeThr.partition_S(sTile);                         // (CPY,1,1)
    CUTE_UNROLL
    for (int i = 0; i < size(rOut); ++i) rOut(i) = sOut(i);
    copy(writeCopy, rOut, writeThr.partition_D(tileOut));
}
