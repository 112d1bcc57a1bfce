// Clusters alone: what a CTA pays to read a peer's shared memory (distributed shared memory) and to
// meet its cluster, against the same within itself (bench/machinery/wgmma.py). CLUSTER CTAs a cluster,
// THREADS threads a CTA, one CTA per SM: the buffer, in dynamic shared memory, takes more than half
// of an SM's. Loads are written in PTX so that the state space is the
// only difference between the two paths: ld.shared on the CTA's own buffer, ld.shared::cluster on
// a peer's (its address from mapa), both volatile so that no pass of the loop is folded away.
#include <cstdint>
#include <cutlass/arch/barrier.h>          // ClusterBarrier: mbarrier init, arrive (local or a peer's), wait

#if !defined(CLUSTER)
#error "CLUSTER comes from bench/machinery/wgmma.py"
#endif

constexpr int WORDS = 32768;                // 128 KiB a CTA: the chased ring, and the buffer read through
constexpr int THREADS = 512;
static_assert(WORDS % (4 * THREADS) == 0, "every thread reads whole 16-byte vectors, the same count");
static_assert(CLUSTER >= 2 && CLUSTER <= 8, "a peer to read, within the portable cluster size");

extern __shared__ __align__(16) uint32_t buf[];   // WORDS of them
__shared__ uint64_t signal;                 // the ping-pong's mbarrier, one per CTA

__device__ inline uint32_t rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ inline void cluster_sync() {      // with the memory ordering the buffers need
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ inline void cluster_meet() {      // the meeting alone, no memory ordered (.relaxed)
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\nbarrier.cluster.wait.aligned;" ::: "memory");
}
// The buffer's address in the shared::cluster window: this CTA's own, or the peer's `ahead` ranks on.
__device__ inline uint32_t cluster_address(int ahead) {
    uint32_t own = static_cast<uint32_t>(__cvta_generic_to_shared(buf)), peer;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer) : "r"(own), "r"((rank() + ahead) % CLUSTER));
    return peer;
}

template <bool PEER>
__device__ inline uint32_t load(uint32_t addr) {
    uint32_t v;
    if constexpr (PEER) asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(addr));
    else asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr));
    return v;
}
template <bool PEER>
__device__ inline uint4 load4(uint32_t addr) {
    uint4 v;
    if constexpr (PEER) asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    else asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr));
    return v;
}

// Every CTA's buffer from the host's words, then the cluster meets: each peer's is written.
__device__ inline uint32_t fill(const uint32_t* words, bool peer) {
    for (int i = threadIdx.x; i < WORDS; i += THREADS) buf[i] = words[i];
    cluster_sync();
    return peer ? cluster_address(1) : static_cast<uint32_t>(__cvta_generic_to_shared(buf));
}

// #region kernel
// Latency: one thread follows the ring (words[j] is the next index) `iters` hops, each load waiting
// for the one before; its own ring or the next CTA's.
template <bool PEER>
__device__ inline void chase(const uint32_t* words, int iters, uint32_t* ends, long long* clocks) {
    const uint32_t base = fill(words, PEER);
    if (threadIdx.x == 0) {
        uint32_t j = 0;
        const long long start = clock64();
        for (int i = 0; i < iters; ++i) j = load<PEER>(base + 4 * j);
        clocks[blockIdx.x] = clock64() - start;
        ends[blockIdx.x] = j;
    }
    cluster_sync();                         // no CTA leaves while a peer may still read its buffer
}

// Bandwidth: every thread reads its 16-byte vectors of the whole buffer `iters` times, summing them.
template <bool PEER>
__device__ inline void stream(const uint32_t* words, int iters, uint32_t* sums, long long* clocks) {
    const uint32_t base = fill(words, PEER);
    uint32_t sum = 0;
    __syncthreads();
    const long long start = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll 8
        for (int v = threadIdx.x; v < WORDS / 4; v += THREADS) {
            const uint4 x = load4<PEER>(base + 16 * v);
            sum += x.x + x.y + x.z + x.w;
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) clocks[blockIdx.x] = clock64() - start;
    sums[blockIdx.x * THREADS + threadIdx.x] = sum;
    cluster_sync();
}

// Barriers: the CTA alone (bar.sync), the whole cluster with its memory ordered (release and
// acquire, as cluster.sync() does) and the whole cluster's meeting alone (relaxed).
enum Meeting { CTA, CLUSTER_ORDERED, CLUSTER_RELAXED };
template <Meeting kind>
__device__ inline void meet(int iters, long long* clocks) {
    cluster_sync();
    const long long start = clock64();
    for (int i = 0; i < iters; ++i) {
        if constexpr (kind == CTA) __syncthreads();
        else if constexpr (kind == CLUSTER_ORDERED) cluster_sync();
        else cluster_meet();
    }
    if (threadIdx.x == 0) clocks[blockIdx.x] = clock64() - start;
    cluster_sync();
}

// A signal across the cluster, as the GEMM's consumers release a stage in every CTA of the cluster:
// rank 0 arrives on rank 1's mbarrier, rank 1 waits for it and arrives on rank 0's; `iters` round trips.
__device__ inline void ping_pong(int iters, long long* clocks) {
    using Barrier = cutlass::arch::ClusterBarrier;
    if (threadIdx.x == 0) Barrier::init(&signal, 1);
    cutlass::arch::fence_barrier_init();
    cluster_sync();
    const uint32_t me = rank();
    if (threadIdx.x == 0 && me < 2) {
        uint32_t phase = 0;
        const long long start = clock64();
        for (int i = 0; i < iters; ++i) {
            if (me == 0) Barrier::arrive(&signal, 1, 1);
            Barrier::wait(&signal, phase);
            if (me == 1) Barrier::arrive(&signal, 0, 1);
            phase ^= 1;
        }
        clocks[blockIdx.x] = clock64() - start;
    }
    cluster_sync();
}
// #endregion kernel

#define KERNEL extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
KERNEL chase_own(const uint32_t* words, int iters, uint32_t* ends, long long* clocks) { chase<false>(words, iters, ends, clocks); }
KERNEL chase_peer(const uint32_t* words, int iters, uint32_t* ends, long long* clocks) { chase<true>(words, iters, ends, clocks); }
KERNEL stream_own(const uint32_t* words, int iters, uint32_t* sums, long long* clocks) { stream<false>(words, iters, sums, clocks); }
KERNEL stream_peer(const uint32_t* words, int iters, uint32_t* sums, long long* clocks) { stream<true>(words, iters, sums, clocks); }
KERNEL meet_cta(int iters, long long* clocks) { meet<CTA>(iters, clocks); }
KERNEL meet_cluster(int iters, long long* clocks) { meet<CLUSTER_ORDERED>(iters, clocks); }
KERNEL meet_cluster_relaxed(int iters, long long* clocks) { meet<CLUSTER_RELAXED>(iters, clocks); }
KERNEL signal_peer(int iters, long long* clocks) { ping_pong(iters, clocks); }

// Read back by the benchmark: the buffer's words and a CTA's threads.
extern "C" __constant__ int BUFFER_WORDS = WORDS;
extern "C" __constant__ int CTA_THREADS = THREADS;
