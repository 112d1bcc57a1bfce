// Pointer chasing: one thread follows a random cycle through the working set;
// each slot holds the address of the next, so each load's address is the
// previous load's value and the chain holds nothing but loads. The SM clock and
// the global nanosecond timer are read around the chase: the result is in
// cycles and in nanoseconds without assuming a clock.
#include <cstdint>

#ifndef SHARED_SLOTS
#define SHARED_SLOTS 2048   // 8 KiB of 32-bit shared-memory addresses
#endif

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// CACHED: 1 loads through L1 (ld.ca), 0 bypasses it (ld.cg: L2 and below).
template <int CACHED>
__device__ __forceinline__ uint64_t next_of(uint64_t p) {
    uint64_t q;
    if (CACHED) asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(q) : "l"(p));
    else        asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(q) : "l"(p));
    return q;
}

__device__ __forceinline__ void record(unsigned long long* result, long long c0, long long c1,
                                       unsigned long long n0, unsigned long long n1, uint64_t last) {
    result[0] = c1 - c0;   // cycles
    result[1] = n1 - n0;   // nanoseconds
    result[2] = last;      // where the chain ended: keeps it live, and is checked
}

// start: the address of a slot in the cycle; warm loads first, then steps timed loads.
template <int CACHED>
__device__ void chase_global(uint64_t start, int warm, int steps, unsigned long long* result) {
    uint64_t p = start;
    for (int i = 0; i < warm; ++i) p = next_of<CACHED>(p);
    const unsigned long long n0 = global_ns();
    const long long c0 = clock64();
#pragma unroll 8
    for (int i = 0; i < steps; ++i) p = next_of<CACHED>(p);
    const long long c1 = clock64();
    record(result, c0, c1, n0, global_ns(), p);
}

extern "C" __global__ void chase_l1(uint64_t start, int warm, int steps, unsigned long long* result) {
    chase_global<1>(start, warm, steps, result);
}

extern "C" __global__ void chase_l2(uint64_t start, int warm, int steps, unsigned long long* result) {
    chase_global<0>(start, warm, steps, result);
}

// next[i] is the slot index after slot i; the block turns it into shared addresses.
extern "C" __global__ void chase_shared(const unsigned* next, unsigned start, int warm, int steps,
                                        unsigned long long* result) {
    static_assert(SHARED_SLOTS * 4 <= 48 * 1024, "the table fits in static shared memory");
    __shared__ unsigned table[SHARED_SLOTS];
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(table));
    for (int i = threadIdx.x; i < SHARED_SLOTS; i += blockDim.x) table[i] = base + 4 * next[i];
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned p = base + 4 * start;
    for (int i = 0; i < warm; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
    const unsigned long long n0 = global_ns();
    const long long c0 = clock64();
#pragma unroll 8
    for (int i = 0; i < steps; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p));
    const long long c1 = clock64();
    record(result, c0, c1, n0, global_ns(), (p - base) / 4);   // the slot reached
}
