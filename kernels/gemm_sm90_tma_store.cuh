// The TMA-store epilogue (steps 11 on): C leaves through shared memory, a column chunk at a time.
// C_ELEMENT: what C holds, float or bfloat16_t (rounded from the FP32 sums: half the bytes to store);
// EPILOGUE_N: columns of C per staged chunk, one 128-byte swizzle row; EPILOGUE_BUFFERS: a warpgroup
// fills one while TMA reads the other. The staging is static shared memory beside the ring.
#pragma once
#if !defined(EPILOGUE_N) || !defined(EPILOGUE_BUFFERS) || !defined(C_ELEMENT)
#error "EPILOGUE_N, EPILOGUE_BUFFERS and C_ELEMENT come from the step catalogue"
#endif
#define STATIC_SMEM_BYTES (EPILOGUE_BUFFERS * BM * EPILOGUE_N * sizeof(C_ELEMENT))
#include <cuda_bf16.h>                      // __floats2bfloat162_rn
#include "gemm_sm90_split_wave.cuh"        // Schedule, Piece, FRAGMENT, TailSums

using CElement = C_ELEMENT;
constexpr int WG_ROWS = BM / WARPGROUPS_M;          // rows of C a consumer warpgroup holds
static_assert(EPILOGUE_N * sizeof(CElement) == 128, "a staged row is one 128-byte swizzle row");
static_assert(BN % EPILOGUE_N == 0, "the tile is whole chunks");
// Read back by the launcher (bench/gemm/launch.py): the box (rows, columns) each TMA store writes.
extern "C" __constant__ int STORE_BOX[2] = {WG_ROWS, EPILOGUE_N};
static_assert(sizeof(CElement) == 4 || sizeof(CElement) == 2, "C holds floats or BF16");
// (BM,EPILOGUE_N) values of C, rows of 128 bytes whose 16-byte chunks (4 floats, 8 BF16) are XOR-ed
// with the row within its 8-row atom: CU_TENSOR_MAP_SWIZZLE_128B's layout. Warpgroup w's rows are the w-th box.
constexpr int CHUNK_LOG2 = sizeof(CElement) == 4 ? 2 : 3;       // log2 of the values in 16 bytes
using SmemLayoutC = decltype(composition(Swizzle<3, CHUNK_LOG2, 3>{}, make_layout(Shape<Int<BM>, Int<EPILOGUE_N>>{}, LayoutRight{})));

__shared__ alignas(1024) CElement staging[EPILOGUE_BUFFERS * BM * EPILOGUE_N];   // (BM,EPILOGUE_N) x EPILOGUE_BUFFERS

// Two adjacent columns of C into the staging at shared address `at`: floats as they are, BF16 rounded
// to nearest and packed in one word.
// APART: x and y need not sit in an aligned register pair (a 64-bit store's): two 32-bit stores, volatile
// so that ptxas does not pair them again and place the sums for it.
template <bool APART = false>
__device__ inline void store_pair(uint32_t at, float x, float y) {
    if constexpr (sizeof(CElement) == 4 && APART) {
        asm volatile("st.volatile.shared.f32 [%0], %1;\n\tst.volatile.shared.f32 [%0+4], %2;" :: "r"(at), "f"(x), "f"(y));
    } else if constexpr (sizeof(CElement) == 4) {
        asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(at), "f"(x), "f"(y));
    } else {
        __nv_bfloat162 pair = __floats2bfloat162_rn(x, y);
        asm volatile("st.shared.b32 [%0], %1;" :: "r"(at), "r"(*reinterpret_cast<uint32_t*>(&pair)));
    }
}

// #region kernel
// A consumer warpgroup's side of the epilogue. Chunks are numbered over all the tiles a CTA stores, so
// that a buffer is reused only after TMA has finished reading the chunk before in it.
struct Epilogue {
    const float alpha;                              // C = alpha A B
    const int warpgroup = (threadIdx.x - 128 * PRODUCER_WARPGROUPS) / 128;
    const bool leader = threadIdx.x % 128 == 0;     // the thread that issues its warpgroup's TMA stores
    int chunk = 0;
    __device__ explicit Epilogue(float alpha) : alpha(alpha) {}
    __device__ void sync() const {   // this warpgroup's 128 threads (named barriers 1 on; 0 is __syncthreads)
        cutlass::arch::NamedBarrier::arrive_and_wait(128, 1 + warpgroup);
    }
    // SWAPPED: tCrC holds each pair of adjacent columns swapped, value i in slot i ^ 1 (step 14's sums)
    template <bool SWAPPED = false, class FragC>
    __device__ void store(FragC const& tCrC, CUtensorMap const& tmaC, int tm, int tn) {
        // The 64 x EPILOGUE_N wgmma atom maps threads to C as the 64 x BN one does, over fewer columns:
        // the (row, column) in a chunk of each of this thread's values, in the accumulators' order.
        using ChunkAtom = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<EPILOGUE_N>, Int<BK>>>());
        auto chunk_mma = make_tiled_mma(ChunkAtom{}, WarpgroupLayout{});
        Tensor coords = chunk_mma.get_slice(threadIdx.x - 128 * PRODUCER_WARPGROUPS)
                                 .partition_C(make_identity_tensor(Shape<Int<BM>, Int<EPILOGUE_N>>{}));   // (MMA,1,1)
        constexpr int PER_CHUNK = decltype(size(coords))::value;
        static_assert(PER_CHUNK * (BN / EPILOGUE_N) == size(FragC{}), "the chunks are the accumulators, in order");
        CUTE_UNROLL
        for (int j = 0; j < BN / EPILOGUE_N; ++j, ++chunk) {
            CElement* buffer = staging + chunk % EPILOGUE_BUFFERS * BM * EPILOGUE_N;
            if (leader) tma_store_wait<EPILOGUE_BUFFERS - 1>();   // TMA has read this buffer's last chunk
            sync();
            const uint32_t base = cast_smem_ptr_to_uint(buffer);
            CUTE_UNROLL
            for (int i = 0; i < PER_CHUNK; i += 2) {              // a value pair: two adjacent columns
                auto [row, col] = coords(i);
                store_pair<SWAPPED>(base + SmemLayoutC{}(row, col) * sizeof(CElement), alpha * tCrC(j * PER_CHUNK + i + SWAPPED),
                                    alpha * tCrC(j * PER_CHUNK + i + 1 - SWAPPED));
            }
            tma_store_fence();                                    // the writes are visible to TMA
            sync();
            if (leader) {
                SM90_TMA_STORE_2D::copy(&tmaC, buffer + warpgroup * WG_ROWS * EPILOGUE_N,
                                        tn * BN + j * EPILOGUE_N, tm * BM + warpgroup * WG_ROWS);
                tma_store_arrive();
            }
        }
    }
    __device__ void drain() const {  // shared memory must outlive the stores that read it
        if (leader) tma_store_wait<0>();
    }
};
// #endregion kernel
