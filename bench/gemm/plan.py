"""What Python plans of a GEMM launch, and the deck reads again from the records: the CTAs a tile
makes of an output, and how the split-wave and stream-K kernels share K among persistent clusters
(the kernels follow the plan they are given: kernels/gemm_sm90_split_wave.cuh, gemm_15_stream_k.cu)."""
from __future__ import annotations


def ctas(tile: dict, m: int, n: int) -> int:
    """The CTAs a tile makes of an M x N output, its ragged edges included, in whole clusters."""
    rows = -(-m // tile["BM"])
    return -(-rows // tile.get("CLUSTER_M", 1)) * tile.get("CLUSTER_M", 1) * -(-n // tile["BN"])


def split_wave(units: int, clusters: int, k_tiles: int) -> dict:
    """The plan of a split-wave kernel's last wave, which the kernel is given: ``units`` cluster
    tiles on ``clusters`` persistent clusters; the ``left`` units past the full waves each have an
    owner that computes K-tiles [0, split) and a helper (a cluster with no unit left) that computes
    the rest, up to ``rounds`` tails one after another. The split balances an owner's part
    against a helper's run of tails."""
    left = units % clusters
    helpers = clusters - left
    rounds = -(-left // helpers)
    split = -(-rounds * k_tiles // (rounds + 1))
    return {"units": units, "clusters": clusters, "k_tiles": k_tiles, "full_waves": units // clusters,
            "full_units": units - left, "left": left, "helpers": helpers, "rounds": rounds,
            "split": split if left else k_tiles}


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
