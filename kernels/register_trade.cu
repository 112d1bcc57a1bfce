// setmaxnreg alone (bench/machinery/clusters.py): what the warp-specialized steps pay to move registers from
// the producer warpgroup to the consumers. Built with the headline step's constants, so that the
// warpgroups and the register counts are the GEMM's own (gemm_sm90_tiles.cuh): one CTA per SM holds
// every register; the producer gives up all but PRODUCER_REGS a thread, the consumers take CONSUMER_REGS.
#include <cstdint>
#include "gemm_sm90_tiles.cuh"              // THREADS, PRODUCER_REGS, CONSUMER_REGS; setmaxnreg's wrappers

constexpr int WARPGROUPS = THREADS / 128;
constexpr int ENTRY_REGS = 65536 / THREADS / 8 * 8;    // what a thread holds at launch (ptxas' count, checked)
static_assert(PRODUCER_REGS < ENTRY_REGS && ENTRY_REGS < CONSUMER_REGS, "the producer gives, the consumers take");

__device__ inline int warpgroup() { return threadIdx.x / 128; }

// #region kernel
// The GEMM's hand-over, once: the producer releases, the consumers wait until the CTA's pool holds
// what they ask for. clocks[cta][warpgroup]: from the CTA's barrier to the warpgroup's setmaxnreg done.
extern "C" __global__ void __launch_bounds__(THREADS, 1) hand_over(long long* clocks) {
    __syncthreads();
    const long long began = clock64();
    if (warpgroup() < PRODUCER_WARPGROUPS) cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
    else cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
    const long long took = clock64() - began;
    if (threadIdx.x % 128 == 0) clocks[blockIdx.x * WARPGROUPS + warpgroup()] = took;
}

// Giving and taking back, `iters` times in a row, every warpgroup at once (each takes back only what
// it gave, so the pool never runs short): the instructions' own cost.
extern "C" __global__ void __launch_bounds__(THREADS, 1) round_trip(int iters, long long* clocks) {
    __syncthreads();
    const long long began = clock64();
    for (int i = 0; i < iters; ++i) {
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        cutlass::arch::warpgroup_reg_alloc<ENTRY_REGS>();
    }
    const long long took = clock64() - began;
    if (threadIdx.x % 128 == 0) clocks[blockIdx.x * WARPGROUPS + warpgroup()] = took;
}
// #endregion kernel

// Read back by the benchmark.
extern "C" __constant__ int CTA_WARPGROUPS = WARPGROUPS;
extern "C" __constant__ int REGS[3] = {ENTRY_REGS, PRODUCER_REGS, CONSUMER_REGS};   // at launch, producer's, consumers'
