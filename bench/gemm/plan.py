"""What Python plans of a GEMM launch, and the deck reads again from the records: the CTAs a tile
makes of an output, and how the split-wave and stream-K kernels share K among persistent clusters
(the kernels follow the plan they are given: kernels/gemm_sm90_split_wave.cuh, gemm_15_stream_k.cu)."""
from __future__ import annotations


def ctas(tile: dict, m: int, n: int) -> int:
    """The CTAs a tile makes of an M x N output, its ragged edges included, in whole clusters."""
    rows = -(-m // tile["BM"])
    return -(-rows // tile.get("CLUSTER_M", 1)) * tile.get("CLUSTER_M", 1) * -(-n // tile["BN"])


# What a helper's tail costs beyond its K-tiles, in K-tiles: leaving its partial sums, the owner
# waiting for them and adding them. Measured as the plan that charges it (H200, 2026-11-30, each plan
# in turns with cuBLAS on every atlas cell that splits): of 0, 2, 4 and 8, 8 was fastest where the
# helpers run two or more tails (over 96 cells a mean of 100.0% of cuBLAS's speed against 93.0%
# charging none; FP8 at Llama-3 8B's QKV, M = 1,024, 54% against 100%) and tied with 4 where they run
# one. A K-tile is 128 bytes of K in every precision, so a tail's partial sums cost about the same
# K-tiles in each. The same rule splits a lone wave (fewer units than clusters) with the idle
# clusters as helpers: over the 63 such cells of the atlases and of three widths outside them (H200,
# 2026-11-30, in turns), 72.1% of cuBLAS's speed on average launching only the units' clusters,
# 87.8% split.
TAIL_FIXUP_K_TILES = 8


def split_wave(units: int, clusters: int, k_tiles: int) -> dict:
    """The plan of a split-wave kernel's last wave, which the kernel is given: ``units`` cluster
    tiles on up to ``clusters`` persistent clusters (as many as fit at once); the ``left`` units past
    the full waves each have an owner that computes K-tiles [0, split) and a helper (a cluster with no
    unit left) that computes the rest, up to ``rounds`` tails one after another. The split balances an
    owner's part against a helper's run of tails, each charged TAIL_FIXUP_K_TILES; where that run
    could not end before a whole unit would, the last wave is not split (split = k_tiles). Units
    fewer than the clusters are a lone last wave: the idle clusters help it, or where it is not
    split, only its units' clusters launch."""
    left = units % clusters
    helpers = clusters - left
    rounds = -(-left // helpers)
    split = min(k_tiles, -(-rounds * (k_tiles + TAIL_FIXUP_K_TILES) // (rounds + 1))) if left else k_tiles
    if units < clusters and split == k_tiles:
        return split_wave(units, units, k_tiles)
    return {"units": units, "clusters": clusters, "k_tiles": k_tiles, "full_waves": units // clusters,
            "full_units": units - left, "left": left, "helpers": helpers, "rounds": rounds, "split": split,
            "fixup_k_tiles": TAIL_FIXUP_K_TILES}


def splits(plan: dict) -> bool:
    """Whether a split-wave plan splits its last wave: it has one (units left past the full waves) and
    did not leave it whole (split = k_tiles)."""
    return bool(plan["left"]) and plan["split"] < plan["k_tiles"]


def last_wave_k_tiles(plan: dict) -> int:
    """The K-tiles a split-wave plan's last wave lasts: a whole unit's where it is not split; split, an
    owner's part or a helper's run of tails, whichever is longer, each tail charged what its plan
    charged for its partial sums (none, in plans from before the charge)."""
    k, split = plan["k_tiles"], plan["split"]
    return max(split, plan["rounds"] * (k - split + plan.get("fixup_k_tiles", 0))) if splits(plan) else k


def stream_k(units: int, clusters: int, k_tiles: int) -> dict:
    """A stream-K kernel's plan: the K-tiles of ``units`` cluster tiles laid end to end, cut into one
    contiguous run per cluster, as even as whole K-tiles allow; no more clusters than K-tiles, so
    that no run is empty. ``runs`` are where each run starts, then the end (the kernel's argument)."""
    total = units * k_tiles
    clusters = min(clusters, total)
    runs = [total * c // clusters for c in range(clusters + 1)]
    starts = [r for r in runs[1:-1] if r % k_tiles]          # runs that start inside a unit: its helpers
    return {"units": units, "clusters": clusters, "k_tiles": k_tiles, "runs": runs,
            "run_k_tiles": [total // clusters, -(-total // clusters)], "helpers": len(starts),
            "split_units": len({r // k_tiles for r in starts})}
