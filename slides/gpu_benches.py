"""This project's memory figures beside RRZE-HPC's gpu-benches, run on the same GPU in the same run
(bench/peers/gpu_benches.py): each pair, its difference, and where they differ by more than AGREE, what
the two methods do differently (from the two programs' code, not from a measurement)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from slides.kit import fmt_bytes
from slides.records import Context
import slides.device
import slides.hbm
import slides.l2
import slides.memory_latency

ID = "peers.gpu_benches"
SLIDE = "Memory Beside gpu-benches"
AGREE = 0.05                    # the bound: within 5%, the two agree
L2_REACHED = 0.9               # our ld.ca sweep is on L2's plateau from the first size within this of our L2 level

# What each pair's two methods do differently, said where they disagree.
METHODS = {
    "hbm_bandwidth": "ours copies 16 bytes a load; gpu-stream moves 8-byte doubles, its occupancy set by padding "
                     "shared memory",
    "l2_bandwidth": "gpu-l2-cache reads each element twice through the read-only path, which L1 caches, and counts "
                    "both; ours bypasses L1",
    "l1_latency": "ours is ld.ca timed by clock64; gpu-latency's cycles are CUDA-event time times NVML's clock",
    "l2_latency": "ours is ld.ca timed by clock64; gpu-latency's cycles are CUDA-event time times NVML's clock",
}


def _nearest(rows: list[dict], nbytes: float) -> dict:
    """The row whose size is nearest ``nbytes`` on a log scale."""
    return min(rows, key=lambda r: abs(math.log(r["bytes"] / nbytes)))


def _pair(name: str, what: str, unit: str, ours: float | None, theirs: float | None, ours_how: str, theirs_how: str) -> dict:
    ratio = ours / theirs if ours and theirs else None
    agree = ratio is not None and abs(ratio - 1) <= AGREE
    return {"name": name, "what": what, "unit": unit, "ours": ours, "theirs": theirs, "ours_how": ours_how,
            "theirs_how": theirs_how, "ratio": ratio, "agree": agree,
            "method": None if agree or ratio is None else METHODS[name]}


@dataclass(frozen=True)
class Comparison:
    """Each pair of figures, ours beside gpu-benches', and where they differ, what the two methods do
    differently; how far gpu-latency's sweep reached in the time the run gave it."""
    pairs: list[dict]
    agree: list[dict]
    differ: list[dict]
    agree_pct: float
    params: dict
    commit: str                         # gpu-benches' commit, abbreviated
    latency_reached_bytes: int          # the largest working set gpu-latency reached
    hbm_latency_reached: bool           # past L2
    ours_hbm_latency: str               # our HBM latency, as a clause after theirs ("": not measured)


@dataclass(frozen=True)
class GpuBenches(Context):
    """The slide of this project's memory figures beside gpu-benches' (peer; None: not measured)."""
    peer: Comparison | None = None
    id: str = ID


def context(deck) -> GpuBenches:
    (r,) = deck.need(SLIDE, ID)
    if not r["measured"] or r["failed"] and "stream" not in r["record"]:
        return GpuBenches()
    rec = r["record"]
    hbm, l2, mem = deck.of(slides.hbm), deck.of(slides.l2), deck.of(slides.memory_latency)
    l2_bytes = deck.of(slides.device).l2_bytes
    pairs = []
    if rec["stream"]:
        scale = max(rec["stream"], key=lambda x: x["gbps"]["scale"])
        pairs.append(_pair("hbm_bandwidth", "HBM bandwidth", "GB/s", hbm.best["gbps"] if hbm.rows else None,
                           scale["gbps"]["scale"], "copy", "gpu-stream scale"))
    if rec["l2_cache"]:
        best = max(rec["l2_cache"], key=lambda x: x["gbps"])
        pairs.append(_pair("l2_bandwidth", "L2 bandwidth", "GB/s", l2.best_read["read"]["gbps"] if l2.rows else None,
                           best["gbps"], "read", f"gpu-l2-cache, {fmt_bytes(best['footprint_kb'] * 1024)}"))
    lat = rec["latency"]
    reached = max((x["footprint_kb"] * 1024 for x in lat), default=0)
    if lat and mem.levels:
        small = min(lat, key=lambda x: x["footprint_kb"])
        pairs.append(_pair("l1_latency", "L1 hit latency", "cycles", mem.by["L1"]["cycles"], small["cycles"],
                           f"ld.ca, {fmt_bytes(mem.by['L1']['bytes'])}", f"{fmt_bytes(small['footprint_kb'] * 1024)}"))
        # L2's plateau: from where our sweep reaches our L2 level, to a quarter of L2
        plateau = next((s["bytes"] for s in mem.sweep if s["cycles"] >= L2_REACHED * mem.by["L2"]["cycles"]), None)
        in_l2 = [x for x in lat if plateau and plateau <= x["footprint_kb"] * 1024 <= l2_bytes / 4]
        if in_l2:
            theirs = max(in_l2, key=lambda x: x["footprint_kb"])
            size = theirs["footprint_kb"] * 1024
            ours = _nearest(mem.sweep, size)
            pairs.append(_pair("l2_latency", "L2 hit latency", "cycles", ours["cycles"], theirs["cycles"],
                               f"ld.ca, {fmt_bytes(ours['bytes'])}", fmt_bytes(size)))
    compared = [p for p in pairs if p["ratio"] is not None]
    return GpuBenches(peer=Comparison(
        pairs=pairs, agree=[p for p in compared if p["agree"]], differ=[p for p in compared if not p["agree"]],
        agree_pct=100 * AGREE, params=rec["params"], commit=rec["params"]["commit"][:12],
        latency_reached_bytes=reached, hbm_latency_reached=reached > l2_bytes,
        ours_hbm_latency=f"; ours is {mem.by['HBM']['cycles']:,.0f} cycles" if mem.levels else ""))
