// What the Hopper (wgmma) GEMM steps share: the tile constants (from the step catalogue, bench/gemm/catalogue.py),
// the SM90 wgmma atom of the operands' type tiled over warpgroups, the 128-byte-swizzled shared-memory
// layout that wgmma and TMA both read and write, the CTA tile order, and the shared-memory carve-up.
// A (M,K) and B stored as (N,K) are both K-major: TF32 wgmma takes no other layout, and BF16 takes it too.
#pragma once
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>   // fence_view_async_shared, fence_barrier_init

using namespace cute;

// The step catalogue (bench/gemm/catalogue.py) passes every constant with -D; none has a default here.
#if !defined(ELEMENT) || !defined(BM) || !defined(BN) || !defined(BK) || !defined(STAGES) || !defined(GROUP_M) \
    || !defined(WARPGROUPS_M) || !defined(PRODUCER_WARPGROUPS) || !defined(CLUSTER_M)
#error "ELEMENT, BM, BN, BK, STAGES, GROUP_M, WARPGROUPS_M, PRODUCER_WARPGROUPS and CLUSTER_M come from the step catalogue"
#endif
// ELEMENT: what A and B hold as wgmma reads them, tfloat32_t or bfloat16_t; BK of them make 128 bytes.
// GROUP_M: the CTA swizzle, 0 walks M first, G > 0 walks bands of G tile rows, N first.
// PRODUCER_WARPGROUPS: warp-specialized steps 1, a warpgroup that only issues TMA loads.
// CLUSTER_M: CTAs per cluster, on vertically adjacent tiles that share B's tile.
// STAGES: shared buffers in the ring; 0 asks for as many as fit (RING_STAGES, exported below).
#ifndef STATIC_SMEM_BYTES
#define STATIC_SMEM_BYTES 0     // a step's own static shared memory beside the ring (step 11's staging)
#endif
#ifndef CTAS_PER_SM
#define CTAS_PER_SM 1           // CTAs an SM holds at once, sharing its shared memory and registers (steps 13-15)
#endif

using Element = ELEMENT;
// One warpgroup's wgmma, 64 x BN x (32 bytes of K), A and B from shared memory, chosen by CuTe for the type.
using MmaAtom = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<BN>, Int<BK>>>());
using AtomMNK = typename MMA_Traits<MmaAtom>::Shape_MNK;
using WarpgroupLayout = Layout<Shape<Int<WARPGROUPS_M>, _1, _1>>;    // warpgroups stacked over M
constexpr int CONSUMER_THREADS = 128 * WARPGROUPS_M;                  // the threads that issue wgmma
constexpr int THREADS = 128 * PRODUCER_WARPGROUPS + CONSUMER_THREADS;
static_assert(BM == size<0>(AtomMNK{}) * WARPGROUPS_M, "each warpgroup owns 64 rows of the CTA tile");
static_assert(BN % size<1>(AtomMNK{}) == 0 && BK % size<2>(AtomMNK{}) == 0, "the CTA tile is whole atoms");
static_assert(BK * sizeof(Element) == 128, "one K-tile row is one 128-byte swizzle row");

// Shared tiles: rows of BK elements (128 bytes), 16-byte chunks XOR-swizzled within each 8-row,
// 1 KiB atom, the layout TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and wgmma reads.
constexpr int STAGE_BYTES = (BM + BN) * BK * sizeof(Element);
// A Hopper SM's 228 KiB of shared memory, shared by its CTAs, 1 KiB of each reserved: 227 KiB for one
constexpr int SMEM_CAPACITY = (228 / CTAS_PER_SM - 1) * 1024;
constexpr int ALIGN_SLACK = 1024;             // the dynamic base aligned up to the 1 KiB swizzle atom
// The deepest ring: A and B tiles and two mbarriers a stage, SharedStorage rounded up to 1 KiB, the slack.
constexpr int DEEPEST_RING = (SMEM_CAPACITY - STATIC_SMEM_BYTES - 2 * ALIGN_SLACK) / (STAGE_BYTES + 2 * 8);
constexpr int RING = STAGES > 0 ? STAGES : DEEPEST_RING;
using SmemLayoutA = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                           Shape<Int<BM>, Int<BK>, Int<RING>>{}));   // (BM,BK,PIPE)
using SmemLayoutB = decltype(tile_to_shape(GMMA::Layout_K_SW128_Atom<Element>{},
                                           Shape<Int<BN>, Int<BK>, Int<RING>>{}));   // (BN,BK,PIPE)
static_assert(cosize_v<SmemLayoutA> == BM * BK * RING && cosize_v<SmemLayoutB> == BN * BK * RING,
              "stages are dense, so stage s starts s tiles into the buffer");

struct alignas(1024) SharedStorage {          // 1 KiB: the swizzle atom's alignment
    Element A[cosize_v<SmemLayoutA>];
    Element B[cosize_v<SmemLayoutB>];
    uint64_t full[RING];                        // TMA steps: "stage s has landed" (the copy engine counts bytes)
    uint64_t empty[RING];                       // TMA steps: "stage s has been read" (every consumer warp arrives)
};
constexpr int SMEM_BYTES_NEEDED = sizeof(SharedStorage) + ALIGN_SLACK;
static_assert(SMEM_BYTES_NEEDED + STATIC_SMEM_BYTES <= SMEM_CAPACITY, "a CTA's share of the SM's shared memory");

__device__ inline SharedStorage& shared_storage() {
    extern __shared__ uint8_t smem_raw[];
    uint32_t misalign = cast_smem_ptr_to_uint(smem_raw) & 1023;
    return *reinterpret_cast<SharedStorage*>(smem_raw + ((1024 - misalign) & 1023));
}

// A consumer thread's wgmma: the tiled MMA over the warpgroups, this thread's slice of it, and
// its wgmma descriptors of A and B in every stage of the ring. Consumer threads are numbered from
// 0, after the producer warpgroup if there is one.
__device__ inline auto consumer_fragments(SharedStorage& smem) {
    Tensor sA = make_tensor(make_smem_ptr(smem.A), SmemLayoutA{});        // (BM,BK,PIPE)
    Tensor sB = make_tensor(make_smem_ptr(smem.B), SmemLayoutB{});        // (BN,BK,PIPE)
    TiledMMA mma = make_tiled_mma(MmaAtom{}, WarpgroupLayout{});
    ThrMMA thr = mma.get_slice(threadIdx.x - 128 * PRODUCER_WARPGROUPS);
    return cute::make_tuple(mma, thr,
                            thr.make_fragment_A(thr.partition_A(sA)),     // (MMA,MMA_M,MMA_K,PIPE) descriptors
                            thr.make_fragment_B(thr.partition_B(sB)));    // (MMA,MMA_N,MMA_K,PIPE) descriptors
}

// --- the TMA steps (6 on): a ring of STAGES buffers, each with a "full" and an "empty" mbarrier --

constexpr int B_SLICE = BN / CLUSTER_M;     // rows of B's tile each CTA of a cluster loads for all of them
static_assert(BN % (8 * CLUSTER_M) == 0, "B's tile splits into whole 8-row swizzle atoms");
static_assert(BM <= 256 && B_SLICE <= 256, "a TMA box is at most 256 rows");

// full[s]: one arrival (the producer's expect_tx) and the bytes of the stage; empty[s]: one arrival
// per consumer warp of the cluster. Every CTA of the cluster has its barriers before any is used.
__device__ inline void init_ring_barriers(SharedStorage& smem) {
    if (threadIdx.x == 0) {
        for (int s = 0; s < RING; ++s) {
            initialize_barrier(smem.full[s], 1);
            initialize_barrier(smem.empty[s], CONSUMER_THREADS / 32 * CLUSTER_M);
        }
        cutlass::arch::fence_barrier_init();
    }
    if constexpr (CLUSTER_M > 1) cluster_sync(); else __syncthreads();
}

// This warp has finished reading stage s: arrive on its empty barrier in every CTA of the cluster
// (every CTA's producer refills its own slice of B into all of them).
__device__ inline void release_stage(SharedStorage& smem, int s) {
    if constexpr (CLUSTER_M == 1) {
        if (threadIdx.x % 32 == 0) arrive_barrier(smem.empty[s]);
    } else {                                  // lane c on CTA c's barrier: one instruction for the cluster
        const int lane = threadIdx.x % 32;
        cutlass::arch::ClusterBarrier::arrive(&smem.empty[s], lane, lane < CLUSTER_M);
    }
}

constexpr auto TMA_HINT = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);
constexpr uint16_t WHOLE_CLUSTER = (1 << CLUSTER_M) - 1;   // multicast mask: every CTA of the cluster

// Producer thread: the stage that the fill-th K-tile through the ring goes to, once the fill before
// it in that stage has been read (in every CTA of the cluster), with full[s] armed for its bytes.
__device__ inline int acquire_stage(SharedStorage& smem, int fill) {
    int s = fill % RING;
    if (fill >= RING) wait_barrier(smem.empty[s], (fill / RING + 1) & 1);
    set_barrier_transaction_bytes(smem.full[s], STAGE_BYTES);
    return s;
}

// --- the warp-specialized steps (7 on): warpgroup 0 produces, the others consume -----------------
#if PRODUCER_WARPGROUPS
#include <cutlass/arch/reg_reconfig.h>      // warpgroup_reg_alloc / dealloc: setmaxnreg
static_assert(PRODUCER_WARPGROUPS == 1, "one producer warpgroup");
// One CTA per SM holds all 64K registers. The producer needs few; the consumers, each holding a
// 64 x BN accumulator (BN / 2 registers a thread), get the rest (a multiple of 8, at most 256).
// CTAs sharing an SM keep the launch's even split of them instead (CTAS_PER_SM in the launch bounds).
constexpr int PRODUCER_REGS = 40;
constexpr int CONSUMER_REGS = CTAS_PER_SM > 1 ? 65536 / CTAS_PER_SM / THREADS / 8 * 8
                                              : cute::min(256, (65536 / 128 - PRODUCER_REGS) / WARPGROUPS_M / 8 * 8);
static_assert(CONSUMER_REGS >= BN / 2 + 40, "room for the accumulator and the loop");
__device__ inline void producer_registers() {
    if constexpr (CTAS_PER_SM == 1) cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
}
__device__ inline void consumer_registers() {
    if constexpr (CTAS_PER_SM == 1) cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
}
#endif

// Output tile number `id` as (tile row, tile column). Tiles are numbered in the order they are
// launched (one CTA each) or visited (persistent CTAs); neighbours in that order run together, so
// it decides which A and B tiles they share in L2. M is walked first, so tiles 2i and 2i+1 share a
// column (B's tile) whenever the tile rows of a band are even. A ragged edge is a tile too (the
// TMA steps read zeros past it and store nothing there), and tile rows come in whole clusters.
static_assert(GROUP_M % CLUSTER_M == 0, "a cluster's tiles lie in one band");
__device__ inline cute::tuple<int, int> cta_tile(int M, int N, int id = blockIdx.x) {
    int tiles_m = ceil_div(ceil_div(M, BM), CLUSTER_M) * CLUSTER_M, tiles_n = ceil_div(N, BN);
    if (GROUP_M == 0) return {id % tiles_m, id / tiles_m};
    int band = id / (GROUP_M * tiles_n), first_m = band * GROUP_M;
    int rows = min(tiles_m - first_m, GROUP_M);             // the last band may be narrower
    int in_band = id % (GROUP_M * tiles_n);
    return {first_m + in_band % rows, in_band / rows};
}

// This CTA's output tile in global memory: C (BM,BN).
__device__ inline auto cta_tile_of_C(float* C, int M, int N, int tm, int tn) {
    Tensor mC = make_tensor(make_gmem_ptr(C), make_shape(M, N), make_stride(N, _1{}));   // (M,N)
    return local_tile(mC, Shape<Int<BM>, Int<BN>>{}, make_coord(tm, tn));                // (BM,BN)
}

// This CTA's tiles in global memory: A (BM,BK,k), B (BN,BK,k) over the K steps, and C (BM,BN).
__device__ inline auto cta_tiles(const Element* A, const Element* B, float* C, int M, int N, int K) {
    Tensor mA = make_tensor(make_gmem_ptr(A), make_shape(M, K), make_stride(K, _1{}));   // (M,K)
    Tensor mB = make_tensor(make_gmem_ptr(B), make_shape(N, K), make_stride(K, _1{}));   // (N,K)
    auto [tm, tn] = cta_tile(M, N);
    return cute::make_tuple(local_tile(mA, Shape<Int<BM>, Int<BK>>{}, make_coord(tm, _)),   // (BM,BK,k)
                            local_tile(mB, Shape<Int<BN>, Int<BK>>{}, make_coord(tn, _)),   // (BN,BK,k)
                            cta_tile_of_C(C, M, N, tm, tn));                                // (BM,BN)
}

// The cp.async steps' copy: BK / 4 threads along K (one 16-byte swizzle chunk each), the rest down
// the rows; .cg, no L1 copy: each tile is read once per CTA. The copy and this thread's share of
// A and B in global (source) and shared (destination) memory.
template <class GA, class GB, class SA, class SB>
__device__ inline auto cp_async_partitions(GA gA, GB gB, SA sA, SB sB) {
    constexpr int VEC = 16 / sizeof(Element);                              // elements per cp.async
    using CopyThreads = Layout<Shape<Int<THREADS * VEC / BK>, Int<BK / VEC>>, Stride<Int<BK / VEC>, _1>>;
    static_assert(BM % size<0>(CopyThreads{}) == 0 && BN % size<0>(CopyThreads{}) == 0,
                  "the copy threads tile the CTA tile exactly");
    auto copyAB = make_tiled_copy(Copy_Atom<SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>, Element>{},
                                  CopyThreads{}, Layout<Shape<_1, Int<VEC>>>{});
    auto thr = copyAB.get_slice(threadIdx.x);
    return cute::make_tuple(copyAB, thr.partition_S(gA), thr.partition_D(sA), thr.partition_S(gB), thr.partition_D(sB));
}

// wgmma over one K-tile (BK / atom K instructions per warpgroup), issued asynchronously; the caller
// waits with warpgroup_wait<N>() before reading the accumulators or reusing the stage.
template <class TiledMma, class FragA, class FragB, class FragC>
__device__ inline void mma_async(TiledMma& mma, FragA const& a, FragB const& b, FragC& c) {
    warpgroup_fence_operand(c);
    warpgroup_arrive();
    gemm(mma, a, b, c);
    warpgroup_commit_batch();
    warpgroup_fence_operand(c);
}

// Consumer: wgmma over the fill-th K-tile once it has landed; then wait for the K-tile before it
// (this one's wgmmas still run) and, if it belongs to the same tile, release its stage.
template <class TiledMma, class FragA, class FragB, class FragC>
__device__ inline void mma_stage(SharedStorage& smem, TiledMma& mma, FragA const& tCrA, FragB const& tCrB,
                                 FragC& tCrC, int fill, bool release_previous) {
    int s = fill % RING;
    wait_barrier(smem.full[s], (fill / RING) & 1);          // the stage's (fill / RING)-th fill has landed
    mma_async(mma, tCrA(_, _, _, s), tCrB(_, _, _, s), tCrC);
    warpgroup_wait<1>();
    if (release_previous) release_stage(smem, (fill - 1) % RING);
}

// Step 12's descriptors (12 on): the consumers' wgmma descriptors, as consumer_fragments makes them
// but sliced by a warp-uniform warpgroup index (a shuffle): a warpgroup's descriptors are the same in all its threads, and ptxas
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

// Read back by the launcher (bench/gemm/launch.py): the threads of a CTA, the dynamic shared memory a
// launch must ask for, the depth of the ring it holds, the wgmma's M x N x K, and the boxes (rows,
// columns) that TMA loads of A and of B.
extern "C" __constant__ int BLOCK_THREADS = THREADS;
extern "C" __constant__ int SMEM_BYTES = SMEM_BYTES_NEEDED;
extern "C" __constant__ int RING_STAGES = RING;
extern "C" __constant__ int ATOM_MNK[3] = {size<0>(AtomMNK{}), size<1>(AtomMNK{}), size<2>(AtomMNK{})};
extern "C" __constant__ int LOAD_BOXES[2][2] = {{BM, BK}, {B_SLICE, BK}};
