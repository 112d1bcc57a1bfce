// Ping-pong consumers (kernels/gemm_16_pingpong.cu): each consumer warpgroup computes whole BM x BN
// tiles alone (BM / 64 wgmma atoms deep), the two taking the CTA's pieces in turn, so that one
// warpgroup's epilogue runs while the other's wgmmas keep the tensor cores busy. What the cooperative
// steps share with it (the ring, the schedule, the staging and its swizzle, the stores' box) comes from
// the headers it includes; this one holds what differs: a warpgroup's turn on the ring, its epilogue
// over all BM rows, and its sums in the split tiles' slots.
#pragma once
#include "gemm_sm90_tma_store.cuh"         // staging, SmemLayoutC, store_pair, STORE_BOX, and the tiles and schedule

// The tiles' header counts two consumer warpgroups, their threads and registers, and a tile of BM
// rows split between them; here each takes all BM rows of its own tile.
static_assert(WARPGROUPS_M == 2, "two consumer warpgroups, each a whole tile");
static_assert(EPILOGUE_BUFFERS % 2 == 0, "each warpgroup its own half of the staging buffers");
constexpr int OWN_BUFFERS = EPILOGUE_BUFFERS / 2;
using SoloLayout = Layout<Shape<_1, _1, _1>>;      // one warpgroup over the whole tile
constexpr int TURN = 3;      // named barriers TURN + w: warpgroup w's turn on the ring (1 and 2 are the epilogues')

// #region kernel
// A warpgroup's view of the ring: it waits on and releases only its own pieces' stages, and passes
// over the other warpgroup's. The empty barriers count both warpgroups' warps, so each of its warps
// arrives twice. A stage's full barrier tells only one phase from the next by its parity, so a
// warpgroup starts on its piece once the other has waited on all the stages of the piece before:
// from then on, the stages it waits on are at most one fill ahead.
struct TurnRing {
    uint32_t stage = 0, phase = 0, previous = 0;
    const int warpgroup;
    __device__ explicit TurnRing(int warpgroup) : warpgroup(warpgroup) {}
    __device__ void pass(int k_tiles) {             // the other warpgroup's piece
        const uint32_t next = stage + k_tiles;
        phase ^= (next / RING) & 1;
        stage = next % RING;
    }
    __device__ void release(SharedStorage& smem, int s) const {
        release_stage(smem, s);
        release_stage(smem, s);
    }
    // first: no piece before it; hand_on: the other warpgroup takes the next piece
    template <class TiledMma, class FragA, class FragB, class FragC>
    __device__ void mma_piece(SharedStorage& smem, TiledMma& mma, FragA const& tCrA, FragB const& tCrB,
                              FragC& tCrC, Piece p, bool first, bool hand_on) {
        if (!first) cutlass::arch::NamedBarrier::sync(256, TURN + warpgroup);
        clear(tCrC);
        warpgroup_fence_operand(tCrC);
        for (int k = p.k0; k < p.k1; ++k) {
            wait_barrier(smem.full[stage], phase);
            mma_async(mma, tCrA(_, _, _, stage), tCrB(_, _, _, stage), tCrC);
            warpgroup_wait<1>();
            if (k > p.k0) release(smem, previous);
            previous = stage;
            if (++stage == RING) stage = 0, phase ^= 1;
        }
        if (hand_on) cutlass::arch::NamedBarrier::arrive(256, TURN + 1 - warpgroup);
        warpgroup_wait<0>();
        warpgroup_fence_operand(tCrC);
        release(smem, previous);
    }
};

// A warpgroup's epilogue over its whole tile: each chunk of EPILOGUE_N columns, all BM rows, into one
// of its own staging buffers, stored as BM / 64 boxes of 64 rows (STORE_BOX).
struct SoloEpilogue {
    const float alpha;
    const int warpgroup;
    const bool leader = threadIdx.x % 128 == 0;     // the thread that issues its warpgroup's TMA stores
    int chunk = 0;
    __device__ SoloEpilogue(float alpha, int warpgroup) : alpha(alpha), warpgroup(warpgroup) {}
    __device__ void sync() const { cutlass::arch::NamedBarrier::arrive_and_wait(128, 1 + warpgroup); }
    template <class FragC>
    __device__ void store(FragC const& tCrC, CUtensorMap const& tmaC, int tm, int tn) {
        using ChunkAtom = decltype(GMMA::ss_op_selector<Element, Element, float, Shape<_64, Int<EPILOGUE_N>, Int<BK>>>());
        Tensor coords = make_tiled_mma(ChunkAtom{}, SoloLayout{}).get_slice(threadIdx.x % 128)
                            .partition_C(make_identity_tensor(Shape<Int<BM>, Int<EPILOGUE_N>>{}));   // (MMA,MMA_M,1)
        constexpr int PER_CHUNK = size<0>(decltype(coords){}), ATOMS_M = size<1>(decltype(coords){});
        static_assert(PER_CHUNK * (BN / EPILOGUE_N) == size<0>(FragC{}) && ATOMS_M == size<1>(FragC{}),
                      "a chunk's values are a run of each atom's accumulators");
                CUTE_UNROLL
        for (int j = 0; j < BN / EPILOGUE_N; ++j, ++chunk) {
            CElement* buffer = staging + (warpgroup * OWN_BUFFERS + chunk % OWN_BUFFERS) * BM * EPILOGUE_N;
            if (leader) tma_store_wait<OWN_BUFFERS - 1>();   // TMA has read this buffer's last chunk
            sync();
            const uint32_t base = cast_smem_ptr_to_uint(buffer);
            CUTE_UNROLL
            for (int m = 0; m < ATOMS_M; ++m) {
                CUTE_UNROLL
                for (int i = 0; i < PER_CHUNK; i += 2) {
                    auto [row, col] = coords(i, m, 0);
                    store_pair(base + SmemLayoutC{}(row, col) * sizeof(CElement), alpha * tCrC(j * PER_CHUNK + i, m, 0),
                               alpha * tCrC(j * PER_CHUNK + i + 1, m, 0));
                }
            }
            tma_store_fence();
            sync();
            if (leader) {
                CUTE_UNROLL
                for (int b = 0; b < WARPGROUPS_M; ++b)
                    SM90_TMA_STORE_2D::copy(&tmaC, buffer + b * WG_ROWS * EPILOGUE_N, tn * BN + j * EPILOGUE_N,
                                            tm * BM + b * WG_ROWS);
                tma_store_arrive();
            }
        }
    }
    __device__ void drain() const { if (leader) tma_store_wait<0>(); }
};

// A warpgroup's BM x BN sums in a split tile's slot (TAIL_SLOT), laid out as the cooperative steps'
// two warpgroups leave theirs: thread t's first half where thread t leaves its sums, the second where
// thread t + 128 does. Thread t's flag says when they wait (thread t + 128's is left at 0).
struct SoloTail {
    static constexpr int HALF = FRAGMENT / 4;       // float4s of a cooperative thread's sums
    float4* sums;
    int* ready;
    __device__ SoloTail(float* partials, int* flags, int unit) {
        const int slot = unit * CLUSTER_M + block_rank_in_cluster(), t = threadIdx.x % 128;
        sums = reinterpret_cast<float4*>(partials) + slot * HALF * CONSUMER_THREADS + t;
        ready = flags + slot * CONSUMER_THREADS + t;
    }
    __device__ static int at(int j) { return j % HALF * CONSUMER_THREADS + j / HALF * 128; }
    template <class FragC>
    __device__ void leave(FragC const& acc) const {          // a helper, after its K-tiles
        CUTE_UNROLL
        for (int j = 0; j < 2 * HALF; ++j)
            __stcg(sums + at(j), make_float4(acc(4 * j), acc(4 * j + 1), acc(4 * j + 2), acc(4 * j + 3)));
        __threadfence();                                     // the sums are visible before the flag
        atomicExch(ready, 1);
    }
    template <class FragC>
    __device__ void add_to(FragC& acc) const {               // the owner, after its K-tiles
        while (*reinterpret_cast<volatile int*>(ready) == 0) __nanosleep(256);
        __threadfence();
        CUTE_UNROLL
        for (int j = 0; j < 2 * HALF; ++j) {
            float4 v = __ldcg(sums + at(j));
            acc(4 * j) += v.x, acc(4 * j + 1) += v.y, acc(4 * j + 2) += v.z, acc(4 * j + 3) += v.w;
        }
        *ready = 0;                                          // for the next launch
    }
};
// #endregion kernel
