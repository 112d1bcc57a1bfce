"""The hand-written GEMM progression as the deck tells it: the steps, their
benchmark ids and the operand layout each kernel reads. Kept apart from the
benchmark code so that editing the story does not mark measurements stale."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """One step of the hand-written progression, as the deck tells it."""
    key: str
    title: str
    technique: str
    variants: tuple[tuple[str, str], ...]   # (benchmark id, label); the last is the step's best
    layout: str                             # the B layout its kernel reads
    precision: str
    beyond: bool = False                    # past the reference deck's last step: what it left on the table


STEPS = (
    Step("naive", "Naive FP32", "FP32 scalar, one thread per element of C",
         (("gemm.naive_fp32", "naive"),), "b_row", "fp32"),
    Step("cute_mma", "CuTe Simple MMA", "TF32 tensor cores (SM80 16x8x8 atom), operands from global memory",
         (("gemm.cute_mma_tf32", "simple MMA"),), "b_kmajor", "tf32"),
    Step("cute_smem", "CuTe SMEM", "+ shared memory tiles filled by cp.async",
         (("gemm.cute_smem_k8", "K-tile 8"), ("gemm.cute_smem_k32", "K-tile 32")), "b_kmajor", "tf32"),
    Step("wgmma", "CuTe WGMMA", "SM90 wgmma reading swizzled shared memory",
         (("gemm.wgmma", "WGMMA"),), "b_kmajor", "tf32"),
    Step("wgmma_pipe", "WGMMA Pipelined", "+ a ring of shared buffers: cp.async of K-tile k+1 overlaps the wgmma of k",
         (("gemm.wgmma_pipe", "2 stages, 128x128"), ("gemm.wgmma_pipe_128x256", "3 stages, 128x256"),
          ("gemm.wgmma_pipe_swizzle", "+ CTA swizzle")), "b_kmajor", "tf32"),
    Step("wgmma_tma", "WGMMA + TMA", "+ TMA loads, each issued by one thread (the last warp to finish reading the stage), "
         "full mbarriers counting the bytes, 3 stages",
         (("gemm.wgmma_tma_128x128", "128x128 tile"), ("gemm.wgmma_tma_128x256", "128x256 tile")),
         "b_kmajor", "tf32"),
    Step("warp_specialized", "Warp Specialization",
         "+ a producer warpgroup issuing the TMA loads, full/empty mbarrier pairs, two consumer warpgroups "
         "issuing wgmma, setmaxnreg "
         "moving registers to them; then as many stages as shared memory holds",
         (("gemm.warp_specialized", "3 stages"), ("gemm.warp_specialized_deep", "all the stages that fit")),
         "b_kmajor", "tf32", beyond=True),
    Step("cluster", "Clusters + TMA Multicast",
         "+ clusters of 2 CTAs on vertically adjacent tiles: each loads half of their common B tile and "
         "multicasts it into both", (("gemm.cluster_multicast", "cluster of 2"),), "b_kmajor", "tf32", beyond=True),
    Step("persistent", "Persistent Kernel",
         "+ one CTA per SM for the whole run, walking output tiles in the swizzled order; the next tile's "
         "loads overlap this tile's epilogue",
         (("gemm.persistent_no_cluster", "no cluster"), ("gemm.persistent", "2-CTA clusters")), "b_kmajor", "tf32",
         beyond=True),
    Step("split_wave", "Split Last Wave",
         "+ the tiles past the last full wave split in two along K: their owners compute the first part, "
         "the clusters that would idle compute the rest and leave partial sums for the owners to add",
         (("gemm.split_wave", "split last wave"),), "b_kmajor", "tf32", beyond=True),
    Step("tma_store", "TMA-Store Epilogue",
         "+ C leaves through shared memory: each warpgroup stages 32-column chunks that TMA stores while it "
         "writes the next, and goes back to wgmma as soon as its registers are in shared memory; and a leaner "
         "main loop (descriptors in uniform registers, the ring's stage carried): at the power cap, "
         "fewer instructions leave more clock",
         (("gemm.tma_store", "TMA-store epilogue"),), "b_kmajor", "tf32", beyond=True),
)
