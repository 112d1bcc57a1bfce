// L2's two partitions, seen from every SM (bench/micro/l2_map.py): one CTA per SM, its thread 0 loading
// each probed line again and again, each load's address the value the one before returned (every
// slot holds its own address), with loads that bypass L1 (ld.global.cg). A line held in the
// partition near the SM answers sooner than one held in the far partition, across the chip.
// Each CTA starts at a different line (its index modulo the lines) and takes them in order from there,
// so that the CTAs do not all begin on one line.
#include <cstdint>

constexpr int THREADS = 32;

__device__ __forceinline__ uint64_t load_l2(uint64_t p) {
    uint64_t q;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(q) : "l"(p));
    return q;
}

// #region kernel
// lines: the probed slots' addresses; cycles[cta][line]: the clock over `hops` loads; smids[cta]:
// the SM it ran on; ends[cta][line]: where the chase ended (the line itself, checked).
extern "C" __global__ void __launch_bounds__(THREADS, 1) latency_map(const uint64_t* lines, int count, int hops,
                                                                      long long* cycles, int* smids, uint64_t* ends) {
    if (threadIdx.x != 0) return;
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    smids[blockIdx.x] = static_cast<int>(sm);
    for (int i = 0; i < count; ++i) {
        const int line = (i + blockIdx.x) % count;
        uint64_t p = load_l2(lines[line]);                   // in L2, and in the TLB, before the clock starts
        const long long began = clock64();
#pragma unroll 8
        for (int h = 0; h < hops; ++h) p = load_l2(p);
        cycles[blockIdx.x * count + line] = clock64() - began;
        ends[blockIdx.x * count + line] = p;
    }
}
// #endregion kernel

extern "C" __constant__ int CTA_THREADS = THREADS;
