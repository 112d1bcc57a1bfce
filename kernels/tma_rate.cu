// TMA alone, beside the step that brings it in (bench/machinery/tma.py): what one load costs against its box's
// size, how many boxes an SM must keep in flight to fill the memory's bandwidth (against cp.async of
// the same bytes, issued by every thread), and what multicasting a box into the CTAs of a cluster
// saves against each CTA loading it. CLUSTER CTAs a cluster (1: the latency and the depth sweep).
//
// The source is a matrix of 128-byte rows (32 words), read in boxes of whole rows into shared memory
// swizzled as the GEMM's tiles are (CU_TENSOR_MAP_SWIZZLE_128B): the 16-byte chunk c of a box's row
// r lands at chunk c ^ (r % 8). A stream's box is STREAM_ROWS rows; box b of a stream starts at row
// (start + unit * spacing + b * STREAM_ROWS) modulo the region's rows, where unit is the cluster
// (every CTA of a cluster reads the same boxes): a region smaller than L2 is read from L2, with the
// units spread over it, and one far larger, rotated between launches, from memory. After its loads, each CTA writes its last box
// back, unswizzled, for the host to compare word for word.
#include <cuda.h>                           // CUtensorMap
#include <cute/arch/copy_sm80.hpp>          // SM80_CP_ASYNC_CACHEGLOBAL, cp_async_fence, cp_async_wait
#include <cute/arch/copy_sm90_desc.hpp>     // the mbarrier helpers, TMA::CacheHintSm90
#include <cute/arch/copy_sm90_tma.hpp>      // SM90_TMA_LOAD_2D, SM90_TMA_LOAD_MULTICAST_2D
#include <cute/arch/cluster_sm90.hpp>       // block_rank_in_cluster, cluster_sync
#include <cutlass/arch/barrier.h>           // ClusterBarrier: arrive on a peer's mbarrier

#if !defined(CLUSTER)
#error "CLUSTER comes from bench/machinery/tma.py"
#endif

using namespace cute;

constexpr int ROW_BYTES = 128;              // one 128-byte swizzle row
constexpr int ROW_WORDS = ROW_BYTES / 4;
constexpr int THREADS = 128;
constexpr int STREAM_ROWS = 64;             // a stream's box unless it says otherwise, and cp.async's: 8 KiB
constexpr int BOX_ROWS_MAX = 256;           // TMA's largest box: 32 KiB
constexpr int SLOTS_MAX = 16;               // boxes in flight a CTA
constexpr int SLOTS_IN_SWEEPS = 4;          // ... in the box-size and CTAs-an-SM sweeps
constexpr int SWIZZLE_ATOM = 1024;          // 8 rows: the dynamic base aligned to it
static_assert(STREAM_ROWS % (8 * CLUSTER) == 0, "each CTA's slice of a multicast box is whole 8-row atoms");
static_assert(SLOTS_MAX * STREAM_ROWS >= SLOTS_IN_SWEEPS * BOX_ROWS_MAX, "the sweeps' largest boxes in flight fit");
static_assert(STREAM_ROWS * ROW_BYTES % (16 * THREADS) == 0, "cp.async: every thread copies whole 16-byte chunks");
constexpr int SMEM_BYTES = SLOTS_MAX * STREAM_ROWS * ROW_BYTES + SWIZZLE_ATOM;
constexpr auto HINT = static_cast<uint64_t>(TMA::CacheHintSm90::EVICT_NORMAL);

extern __shared__ uint8_t dynamic_smem[];
__shared__ uint64_t full[SLOTS_MAX];        // "slot s has landed": one arrival (the arm) and the box's bytes
__shared__ uint64_t empty[SLOTS_MAX];       // multicast: "slot s has landed in every CTA of the cluster"

__device__ inline uint8_t* slots_base() {   // the swizzle pattern follows the address: align to its atom
    const uintptr_t p = reinterpret_cast<uintptr_t>(dynamic_smem);
    return reinterpret_cast<uint8_t*>((p + SWIZZLE_ATOM - 1) & ~uintptr_t(SWIZZLE_ATOM - 1));
}

__device__ inline int wrap(long long row, int rows) { return static_cast<int>(row % rows); }

// Every thread: the box of `box_rows` rows at `slot`, unswizzled, into out (row-major words).
__device__ inline void write_back(const uint8_t* slot, int box_rows, bool swizzled, uint32_t* out) {
    for (int i = threadIdx.x; i < box_rows * ROW_BYTES / 16; i += THREADS) {
        const int r = i / (ROW_BYTES / 16), c = i % (ROW_BYTES / 16);
        const int at = r * ROW_BYTES + 16 * (swizzled ? c ^ (r % 8) : c);
        reinterpret_cast<uint4*>(out)[i] = *reinterpret_cast<const uint4*>(slot + at);
    }
}

// #region kernel
// Latency: one thread loads a box, waits for it, and loads the next, `iters` times; row i of the
// walk is i * stride (stride 0: the same box, from L2 after the first).
__device__ inline void latency(const CUtensorMap* map, int box_rows, int iters, int stride, int rows,
                               uint32_t* out, long long* clocks) {
    uint8_t* slot = slots_base();
    if (threadIdx.x == 0) {
        initialize_barrier(full[0], 1);
        cutlass::arch::fence_barrier_init();
        long long row = 0;
        const long long began = clock64();
        for (int i = 0; i < iters; ++i, row += stride) {
            set_barrier_transaction_bytes(full[0], box_rows * ROW_BYTES);
            SM90_TMA_LOAD_2D::copy(map, &full[0], HINT, slot, 0, wrap(row, rows));
            wait_barrier(full[0], i & 1);
        }
        clocks[blockIdx.x] = clock64() - began;
    }
    __syncthreads();
    write_back(slot, box_rows, true, out);
}

// A stream: thread 0 keeps `slots` boxes of `box_rows` rows in flight, each slot refilled as soon
// as its box has landed (MULTICAST: landed in every CTA of the cluster; each CTA loads 1/CLUSTER of
// the box's rows into all of them, the map's box being that slice). The other threads wait, as a
// GEMM's consumers would read.
template <bool MULTICAST>
__device__ inline void tma_stream(const CUtensorMap* map, int box_rows, int slots, int boxes, int start, int spacing,
                                  int rows, uint32_t* out, long long* clocks) {
    const int slice = MULTICAST ? box_rows / CLUSTER : box_rows;
    uint8_t* base = slots_base();
    const int rank = CLUSTER > 1 ? static_cast<int>(block_rank_in_cluster()) : 0;
    const long long first = start + static_cast<long long>(blockIdx.x / CLUSTER) * spacing;
    if (threadIdx.x == 0) {
        for (int s = 0; s < slots; ++s) {
            initialize_barrier(full[s], 1);
            initialize_barrier(empty[s], CLUSTER);
        }
        cutlass::arch::fence_barrier_init();
    }
    if constexpr (MULTICAST) cluster_sync(); else __syncthreads();   // every peer's barriers exist
    if (threadIdx.x == 0) {
        const long long began = clock64();
        for (int b = 0; b < boxes + slots; ++b) {
            const int s = b % slots;
            if (b >= slots) {                                        // box b - slots has landed in slot s
                wait_barrier(full[s], (b / slots - 1) & 1);
                if constexpr (MULTICAST) {                           // ... here; tell every CTA, wait for all
                    for (int cta = 0; cta < CLUSTER; ++cta) cutlass::arch::ClusterBarrier::arrive(&empty[s], cta, 1);
                    wait_barrier(empty[s], (b / slots - 1) & 1);
                }
            }
            if (b >= boxes) continue;
            set_barrier_transaction_bytes(full[s], box_rows * ROW_BYTES);
            uint8_t* slot = base + s * box_rows * ROW_BYTES;
            const int row = wrap(first + static_cast<long long>(b) * box_rows, rows);
            if constexpr (MULTICAST)
                SM90_TMA_LOAD_MULTICAST_2D::copy(map, &full[s], (1 << CLUSTER) - 1, HINT,
                                                 slot + rank * slice * ROW_BYTES, 0, row + rank * slice);
            else
                SM90_TMA_LOAD_2D::copy(map, &full[s], HINT, slot, 0, row);
        }
        clocks[blockIdx.x] = clock64() - began;
    }
    __syncthreads();
    write_back(base + (boxes - 1) % slots * box_rows * ROW_BYTES, box_rows, true,
               out + static_cast<size_t>(blockIdx.x) * box_rows * ROW_WORDS);
    if constexpr (MULTICAST) cluster_sync();                         // no CTA leaves while a peer may signal it
}

// The same stream by cp.async: every thread copies its 16-byte chunks of each box and keeps
// SLOTS of its groups in flight.
template <int SLOTS>
__device__ inline void cp_async_stream(const uint4* words, int boxes, int start, int spacing, int rows,
                                       uint32_t* out, long long* clocks) {
    constexpr int CHUNKS = STREAM_ROWS * ROW_BYTES / 16 / THREADS;  // a thread's of each box
    uint4* base = reinterpret_cast<uint4*>(slots_base());
    const long long first = start + static_cast<long long>(blockIdx.x) * spacing;
    __syncthreads();
    const long long began = clock64();
    for (int b = 0; b < boxes; ++b) {
        const long long row = wrap(first + static_cast<long long>(b) * STREAM_ROWS, rows);
        const uint4* box = words + row * (ROW_BYTES / 16);
        uint4* slot = base + (b % SLOTS) * (STREAM_ROWS * ROW_BYTES / 16);
        for (int j = 0; j < CHUNKS; ++j) {
            const int chunk = j * THREADS + threadIdx.x;
            SM80_CP_ASYNC_CACHEGLOBAL<uint128_t>::copy(reinterpret_cast<const uint128_t&>(box[chunk]),
                                                       reinterpret_cast<uint128_t&>(slot[chunk]));
        }
        cp_async_fence();
        cp_async_wait<SLOTS - 1>();                                  // box b - SLOTS + 1 has landed
    }
    cp_async_wait<0>();
    __syncthreads();
    if (threadIdx.x == 0) clocks[blockIdx.x] = clock64() - began;
    write_back(reinterpret_cast<uint8_t*>(base + (boxes - 1) % SLOTS * (STREAM_ROWS * ROW_BYTES / 16)), STREAM_ROWS,
               false, out + static_cast<size_t>(blockIdx.x) * STREAM_ROWS * ROW_WORDS);
}
// #endregion kernel

#define KERNEL extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
#define MAP const __grid_constant__ CUtensorMap map
#define STREAM_ARGS int box_rows, int slots, int boxes, int start, int spacing, int rows, uint32_t* out, long long* clocks
#define STREAM_CALL box_rows, slots, boxes, start, spacing, rows, out, clocks
KERNEL stream_separate(MAP, STREAM_ARGS) { tma_stream<false>(&map, STREAM_CALL); }
#if CLUSTER > 1
KERNEL stream_multicast(MAP, STREAM_ARGS) { tma_stream<true>(&map, STREAM_CALL); }
#else
KERNEL load_latency(MAP, int box_rows, int iters, int stride, int rows, uint32_t* out, long long* clocks) {
    latency(&map, box_rows, iters, stride, rows, out, clocks);
}
#define CP_ASYNC(n) KERNEL cp_async_##n(const uint4* words, int boxes, int start, int spacing, int rows, uint32_t* out, \
                                        long long* clocks) { cp_async_stream<n>(words, boxes, start, spacing, rows, out, clocks); }
CP_ASYNC(1) CP_ASYNC(2) CP_ASYNC(4) CP_ASYNC(8) CP_ASYNC(16)
extern "C" __constant__ int CP_ASYNC_SLOTS[] = {1, 2, 4, 8, 16};      // the kernels above, cp_async_<slots>
extern "C" __constant__ int CP_ASYNC_KINDS = sizeof(CP_ASYNC_SLOTS) / sizeof(int);
#endif

// Read back by the benchmark: a box's row, the stream's box, the slots a CTA holds (and the sweeps'),
// the largest box, a CTA's threads, its shared memory.
extern "C" __constant__ int BOX_ROW_BYTES = ROW_BYTES;
extern "C" __constant__ int STREAM_BOX_ROWS = STREAM_ROWS;
extern "C" __constant__ int MAX_SLOTS = SLOTS_MAX;
extern "C" __constant__ int SWEEP_SLOTS = SLOTS_IN_SWEEPS;
extern "C" __constant__ int MAX_BOX_ROWS = BOX_ROWS_MAX;
extern "C" __constant__ int CTA_THREADS = THREADS;
extern "C" __constant__ int DYNAMIC_SMEM_BYTES = SMEM_BYTES;     // for SLOTS_MAX boxes; s boxes need s boxes' and ...
extern "C" __constant__ int ALIGN_SLACK_BYTES = SWIZZLE_ATOM;    // ... this, to align the first
