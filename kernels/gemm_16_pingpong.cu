// Ping-pong consumers, for BF16 where K is short: step 12's kernel with each consumer warpgroup
// computing whole tiles alone, the two taking the CTA's pieces in turn (TurnRing, SoloEpilogue,
// SoloTail in gemm_sm90_pingpong.cuh). In step 12 both warpgroups store their halves of one tile at
// once and the tensor cores wait; here one stores while the other's wgmmas run. The producer,
// schedule, ring and multicast are step 12's.
#include <cuda.h>                           // CUtensorMap
#include "gemm_sm90_pingpong.cuh"          // TurnRing, SoloEpilogue, SoloTail

// #region kernel
extern "C" __global__ void __cluster_dims__(CLUSTER_M, 1, 1) __launch_bounds__(THREADS, 1) gemm_pingpong(
        const __grid_constant__ CUtensorMap tmaA,     // A (M,K): box BK x BM, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaB,     // B (N,K): box BK x BN/CLUSTER_M, 128-byte swizzle
        const __grid_constant__ CUtensorMap tmaC,     // C (M,N): box EPILOGUE_N x BM/WARPGROUPS_M, 128-byte swizzle
        int M, int N, int K,
        float* partials,                              // per CTA of the last wave: its tail's sums (SoloTail)
        int* ready,                                   // (CONSUMER_THREADS) per CTA of the last wave: 1 while its tail waits
        int full_units, int left, int split,          // the last wave's plan (Schedule)
        float alpha) {                                // C = alpha A B
    SharedStorage& smem = shared_storage();
    const int rank = block_rank_in_cluster();
    const Schedule schedule(K, full_units, left, split);
    init_ring_barriers(smem);

    if (threadIdx.x < 128) {                                     // producer warpgroup: step 12's
        cutlass::arch::warpgroup_reg_dealloc<PRODUCER_REGS>();
        if (threadIdx.x == 0) produce(smem, schedule, tmaA, tmaB, M, N, rank);
    } else {
        cutlass::arch::warpgroup_reg_alloc<CONSUMER_REGS>();
        const int warpgroup = __shfl_sync(0xffffffff, (threadIdx.x - 128) / 128, 0);   // warp-uniform
        Tensor sA = make_tensor(make_smem_ptr(smem.A), SmemLayoutA{});        // (BM,BK,PIPE)
        Tensor sB = make_tensor(make_smem_ptr(smem.B), SmemLayoutB{});        // (BN,BK,PIPE)
        TiledMMA mma = make_tiled_mma(MmaAtom{}, SoloLayout{});
        ThrMMA thr = mma.get_slice(0);                                        // descriptors: the same in every thread
        Tensor tCrA = thr.make_fragment_A(thr.partition_A(sA));               // (MMA,MMA_M,MMA_K,PIPE) descriptors
        Tensor tCrB = thr.make_fragment_B(thr.partition_B(sB));               // (MMA,MMA_N,MMA_K,PIPE) descriptors
        Tensor tCrC = mma.get_slice(threadIdx.x % 128).partition_fragment_C(cta_tile_of_C(nullptr, 0, 0, 0, 0));   // (MMA,MMA_M,MMA_N)
        static_assert(decltype(size(tCrC))::value == 2 * FRAGMENT, "a warpgroup holds a whole tile");
        SoloEpilogue epilogue(alpha, warpgroup);
        TurnRing ring(warpgroup);
        Piece p, next;
        for (int i = 0; schedule.piece(i, p); ++i) {
            if (i % 2 != warpgroup) {                            // the other warpgroup's piece
                ring.pass(p.k1 - p.k0);
                continue;
            }
            ring.mma_piece(smem, mma, tCrA, tCrB, tCrC, p, i == 0, schedule.piece(i + 1, next));
            const SoloTail tail(partials, ready, p.unit - schedule.full_units);
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
// #endregion kernel
