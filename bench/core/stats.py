"""The statistics of timings, shared by the measuring side and the deck: a median with p10/p90
and a distribution-free interval of the median, whether two intervals overlap, a spread."""
from __future__ import annotations

import numpy as np

# The confidence the interval of a median is asked for: the widest pair of order statistics
# that covers the median at least this often (with too few samples, all of them, and less).
CONFIDENCE = 0.95


def median_interval(n: int, confidence: float = CONFIDENCE) -> tuple[int, int, float]:
    """The order statistics (0-based ranks lo, hi) of n samples that hold the median with at
    least ``confidence``, distribution-free (the binomial's, p = 1/2), and their coverage; with
    too few samples for it, the extremes and the coverage they have."""
    from math import comb
    below = 0.0           # P(Binomial(n, 1/2) <= j - 1) as j grows
    best = (0, n - 1, 1 - 2 * 0.5**n)
    for j in range(1, n // 2 + 1):
        below += comb(n, j - 1) / 2**n
        coverage = 1 - 2 * below
        if coverage < confidence:
            break
        best = (j - 1, n - j, coverage)
    return best


def summarize(times_ms) -> dict:
    t = np.asarray(times_ms, dtype=float)
    if t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0):
        raise ValueError(f"cannot summarize timings {times_ms!r}")
    p10, median, p90 = np.percentile(t, [10, 50, 90])
    lo, hi, coverage = median_interval(t.size)
    ranked = np.sort(t)
    return {"median": float(median), "p10": float(p10), "p90": float(p90), "n": int(t.size),
            "ci": [float(ranked[lo]), float(ranked[hi])], "ci_level": round(coverage, 4)}


def overlap(a: dict, b: dict) -> bool:
    """Two summaries' intervals of the median overlap: neither is told apart from the other."""
    return a["ci"][0] <= b["ci"][1] and b["ci"][0] <= a["ci"][1]


def spread(t: dict) -> float:
    """A timing's spread: p10 to p90 over the median."""
    return (t["p90"] - t["p10"]) / t["median"]
