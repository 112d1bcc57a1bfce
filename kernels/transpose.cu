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

// 16-byte global accesses: a block of (TILE / 4) x TILE threads; thread (x, y)
// reads 4 consecutive floats of tile row y and writes 4 consecutive floats of
// output row y. The tile stays padded by one float (scalar shared accesses):
// bank = (row + column) mod 32 is then distinct across each warp both ways.
extern "C" __global__ void transpose_vec4_padded(const float* __restrict__ in, float* __restrict__ out, int n) {
    __shared__ float tile[TILE][TILE + 1];
    const int x = threadIdx.x, y = threadIdx.y;                       // x < TILE / 4, y < TILE
    const int r0 = blockIdx.y * TILE, c0 = blockIdx.x * TILE;
    const float4 v = reinterpret_cast<const float4*>(in + (size_t)(r0 + y) * n + c0)[x];
    tile[y][4 * x + 0] = v.x;
    tile[y][4 * x + 1] = v.y;
    tile[y][4 * x + 2] = v.z;
    tile[y][4 * x + 3] = v.w;
    __syncthreads();
    const float4 w = make_float4(tile[4 * x + 0][y], tile[4 * x + 1][y], tile[4 * x + 2][y], tile[4 * x + 3][y]);
    reinterpret_cast<float4*>(out + (size_t)(c0 + y) * n + r0)[x] = w;
}
