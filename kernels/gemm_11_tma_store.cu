// Step 11 — TMA-store epilogue: C leaves through shared memory. Each consumer warpgroup writes its
// accumulators a column chunk at a time into a small swizzled staging buffer and one thread hands the
// chunk to TMA, which stores it while the warpgroup writes the next chunk and then goes back to the
// next tile's wgmma: the registers are free as soon as they are in shared memory.
//
// Same schedule, split last wave, ring and multicast as step 10; the staging buffers fit beside the
// ring because a chunk is EPILOGUE_N columns, not the whole tile. The main loop is leaner than step
// 10's (lean_fragments below): at the power cap, every instruction issued costs clock.
// EPILOGUE_N: columns of C per staged chunk, one 128-byte swizzle row; EPILOGUE_BUFFERS: a warpgroup
// fills one while TMA reads the other. The staging is static shared memory beside the ring.
#if !defined(EPILOGUE_N) || !defined(EPILOGUE_BUFFERS)
#error "EPILOGUE_N and EPILOGUE_BUFFERS come from the step catalogue"
#endif
#define STATIC_SMEM_BYTES (EPILOGUE_BUFFERS * BM * EPILOGUE_N * 4)
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_split_wave.cuh"        // Schedule, Piece, FRAGMENT

constexpr int WG_ROWS = BM / WARPGROUPS_M;          // rows of C a consumer warpgroup holds
static_assert(EPILOGUE_N * sizeof(float) == 128, "a staged row is one 128-byte swizzle row");
static_assert(BN % EPILOGUE_N == 0, "the tile is whole chunks");
// (BM,EPILOGUE_N) floats, rows of 128 bytes whose 16-byte chunks (4 floats) are XOR-ed with the row
// within its 8-row atom: CU_TENSOR_MAP_SWIZZLE_128B's layout. Warpgroup w's rows are the w-th box.
using SmemLayoutC = decltype(composition(Swizzle<3, 2, 3>{}, make_layout(Shape<Int<BM>, Int<EPILOGUE_N>>{}, LayoutRight{})));

// The consumers' wgmma descriptors, as consumer_fragments makes them but sliced by a warp-uniform
// warpgroup index (a shuffle): a warpgroup's descriptors are the same in all its threads, and ptxas
// then keeps them in uniform registers instead of building them per thread and moving them over
// for every wgmma (about a fifth fewer instructions per K-tile).
__device__ inline auto lean_fragments(SharedStorage& smem) {
    const int warpgroup = __shfl_sync(0xffffffff, (threadIdx.x - 128 * PRODUCER_WARPGROUPS) / 128, 0);
    Tensor sA = make_tensor(make_smem_ptr(smem.A), SmemLayoutA{});        // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.B), SmemLayoutB{});        // (BN,BK,PIPE)
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpgroupLayout{});
    ThrMMA thr = mma.get_slice(warpgroup * 128);
    return cute::make_tuple(mma, thr.make_fragment_A(thr.partition_A(sA)),        // (MMA,MMA_M,MMA_K,PIPE) descriptors
                            thr.make_fragment_B(thr.partition_B(sB)),              // (MMA,MMA_N,MMA_K,PIPE) descriptors
                            thr.partition_fragment_C(cta_tile_of_C(nullptr, 0, 0, 0, 0)));   // (MMA,MMA_M,MMA_N)
}

__shared__ alignas(1024) float staging[EPILOGUE_BUFFERS * BM * EPILOGUE_N];   // (BM,EPILOGUE_N) x EPILOGUE_BUFFERS

// #region kernel
// A consumer warpgroup's side of the epilogue. Chunks are numbered over all the tiles a CTA stores, so
// that a buffer is reused only after TMA has finished reading the chunk before in it.
struct Epilogue {
    const int warpgroup = (threadIdx.x - 128 * PRODUCER_WARPGROUPS) / 128;
    const bool leader = threadIdx.x % 128 == 0;     // the thread that issues its warpgroup's TMA stores
    int chunk = 0;
    __device__ void sync() const {   // this warpgroup's 128 threads (named barriers 1 on; 0 is __syncthreads)
        cutlass::arch::NamedBarrier::arrive_and_wait(128, 1 + warpgroup);
    }
    template <class FragC>
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
            float* buffer = staging + chunk % EPILOGUE_BUFFERS * BM * EPILOGUE_N;
            if (leader) tma_store_wait<EPILOGUE_BUFFERS - 1>();   // TMA has read this buffer's last chunk
            sync();
            const uint32_t base = cast_smem_ptr_to_uint(buffer);
            CUTE_UNROLL
            for (int i = 0; i < PER_CHUNK; i += 2) {              // a value pair: two adjacent columns
                auto [row, col] = coords(i);
                uint32_t at = base + SmemLayoutC{}(row, col) * sizeof(float);
                asm volatile("st.shared.v2.f32 [%0], {%1, %2};" :: "r"(at), "f"(tCrC(j * PER_CHUNK + i)),
                             "f"(tCrC(j * PER_CHUNK + i + 1)));
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

extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_tma_store(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (TailSums)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split) {        // the last wave's plan (Schedule)
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            int fill = 0;
            Piece p;
            for (int i = 0; schedule.piece(i, p); ++i) {
                auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
                for (int k = p.k0; k < p.k1; ++k, ++fill) {
                    int s = acquire_stage(smem, fill);
                    SM90_TMA_LOAD_2D::copy(&tmaA, &smem.full[s], TMA_HINT, smem.A + s * BM * BK, k * BK, tm * BM);
                    SM90_TMA_LOAD_MULTICAST_2D::copy(&tmaB, &smem.full[s], WHOLE_CLUSTER, TMA_HINT,
                                                     smem.B + s * BN * BK + rank * B_SLICE * BK, k * BK, tn * BN + rank * B_SLICE);
                }
            }
        }
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        auto [mma, tCrA, tCrB, tCrC] = lean_fragments(smem);
        Epilogue epilogue;
        static_assert(decltype(size(tCrC))::value == FRAGMENT);
        // The ring's next stage and its fill's parity, carried rather than divided out of a count.
        uint32_t stage = 0, phase = 0, previous = 0;
        Piece p;
        for (int i = 0; schedule.piece(i, p); ++i) {
            clear(tCrC);
            warpgroup_fence_operand(tCrC);       // else ptxas serializes the wgmmas: the sums are added outside them
            for (int k = p.k0; k < p.k1; ++k) {
                wait_barrier(smem.full[stage], phase);
                mma_async(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
                warpgroup_wait<1>();                             // the K-tile before this one has been read
                if (k > p.k0) release_stage(smem, previous);
                previous = stage;
                if (++stage == RING) stage = 0, phase ^= 1;
            }
            warpgroup_wait<0>();
            warpgroup_fence_operand(tCrC);
            release_stage(smem, previous);
            const TailSums tail(partials, ready, p.unit - schedule.full_units);
            if (p.k0 > 0) {                                      // a helper: leave the tail's sums
                tail.leave(tCrC);
                continue;
            }
            if (p.k1 < schedule.k_tiles) tail.add_to(tCrC);     // an owner: add them
            auto [tm, tn] = cta_tile(M, N, p.unit * CLUSTER_M + rank);
            epilogue.store(tCrC, tmaC, tm, tn);
        }
        epilogue.drain();
    }
    cluster_sync();                          // no CTA leaves while a peer may still signal its barriers
}
