// Matrix transpose through a shared-memory tile: coalesced reads of a TILE x TILE
// block of rows, coalesced writes of the same block as columns. n is a multiple
// of TILE (the benchmark checks before launch).
#define TILE 32
#define BLOCK_ROWS 8   // a block of TILE x BLOCK_ROWS threads; each thread moves TILE / BLOCK_ROWS elements

// PAD = 0: the column read of the tile has all 32 lanes of a warp in one bank
// (32-way conflict); PAD = 1 shifts each row by one bank.
template <int PAD>
__device__ void transpose_tile(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE][TILE + PAD];
    int col = blockIdx.x * TILE + threadIdx.x;
    int row = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(row + j) * n + col];
    __syncthreads();
    col = blockIdx.y * TILE + threadIdx.x;
    row = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS) out[(size_t)(row + j) * n + col] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_smem(const float* in, float* out, int n) { transpose_tile<0>(in, out, n); }
extern "C" __global__ void transpose_smem_padded(const float* in, float* out, int n) { transpose_tile<1>(in, out, n); }

// 16-byte global accesses both ways, on a larger tile (VEC_TILE x VEC_TILE, VEC_THREADS
// threads) so that each row segment read or written is 256 bytes. Thread t reads 4
// consecutive floats of tile row t / (VEC_TILE / 4) (+ multiples of the rows a pass
// covers) and writes 4 consecutive floats of an output row the same way. Shared
// accesses stay scalar: the tile is padded by one float, so its rows are not 16-byte aligned.
#define VEC_TILE 64
#define VEC_THREADS 512

extern "C" __global__ void __launch_bounds__(VEC_THREADS) transpose_vec4_padded(const float* __restrict__ in, float* __restrict__ out, int n) {
    constexpr int P = VEC_TILE + 1;
    constexpr int ACROSS = VEC_TILE / 4;             // threads across a row: one float4 each
    constexpr int DOWN = VEC_THREADS / ACROSS;        // rows covered per pass
    static_assert(VEC_TILE % 4 == 0 && VEC_THREADS % ACROSS == 0 && VEC_TILE % DOWN == 0, "whole passes over the tile");
    __shared__ float tile[VEC_TILE * P];
    const int r0 = blockIdx.y * VEC_TILE, c0 = blockIdx.x * VEC_TILE;
    const int x = threadIdx.x % ACROSS, y = threadIdx.x / ACROSS;
#pragma unroll
    for (int j = 0; j < VEC_TILE; j += DOWN) {
        const float4 v = reinterpret_cast<const float4*>(in + (size_t)(r0 + y + j) * n + c0)[x];
        float* row = tile + (y + j) * P + 4 * x;
        row[0] = v.x; row[1] = v.y; row[2] = v.z; row[3] = v.w;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < VEC_TILE; j += DOWN) {
        const int c = y + j;                          // output row c0 + c is input column c0 + c
        reinterpret_cast<float4*>(out + (size_t)(c0 + c) * n + r0)[x] =
            make_float4(tile[(4 * x) * P + c], tile[(4 * x + 1) * P + c], tile[(4 * x + 2) * P + c], tile[(4 * x + 3) * P + c]);
    }
}
