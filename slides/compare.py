"""The GPUs side by side: this deck's GPU first, each other GPU's results (each built as its own
deck) as a ratio to it, and what differs."""
from __future__ import annotations

from dataclasses import dataclass

from bench.core import schema
from slides.kit import grouped_bars
from slides.records import BuildError, Context, Records
import slides.device
import slides.gemm
import slides.hbm
import slides.l2
import slides.memory_latency
import slides.peaks
import slides.transpose


def _peak(c: Records, precision: str, key: str):
    row = c.of(slides.peaks).by.get(precision)
    value = row and row[key]
    return value["tflops"] if isinstance(value, dict) else value


def _latency_ns(c: Records, level: str):
    mem = c.of(slides.memory_latency)
    return mem.by[level]["ns"] if mem.levels and level in mem.by else None


# What the comparison sets side by side: (group, label, unit, digits, value from one GPU's context).
COMPARED = (
    ("chip", "SMs", "", 0, lambda c: c.of(slides.device).sm_count),
    ("chip", "SM clock, max", "MHz", 0, lambda c: c.of(slides.device).sm_clock_max_mhz),
    ("chip", "L2 cache", "MiB", 0, lambda c: c.of(slides.device).l2_bytes / 2**20),
    ("chip", "HBM", "GiB", 0, lambda c: c.of(slides.device).memory_bytes / 2**30),
    ("chip", "power limit", "W", 0, lambda c: c.of(slides.device).power_limit_w),
    ("peak", "TF32 tensor peak, max clock", "TFLOPS", 1, lambda c: _peak(c, "tf32", "tflops_max_clock")),
    ("peak", "HBM bandwidth, theoretical", "GB/s", 0, lambda c: c.of(slides.device).hbm_peak_gbps),
    ("measured", "cuBLAS TF32, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "tf32", "measured")),
    ("measured", "cuBLAS BF16, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "bf16", "measured")),
    ("measured", "SM clock while cuBLAS TF32 ran", "MHz", 0, lambda c: c.of(slides.peaks).tf32_clock_mhz),
    ("measured", "HBM copy, our best kernel", "GB/s", 0, lambda c: c.of(slides.hbm).best["gbps"] if c.of(slides.hbm).rows else None),
    ("measured", "cudaMemcpy", "GB/s", 0, lambda c: c.of(slides.hbm).memcpy["gbps"] if c.of(slides.hbm).rows else None),
    ("measured", "L2 read, ld.global.cg kernel", "GB/s", 0, lambda c: c.of(slides.l2).best_read["read"]["gbps"] if c.of(slides.l2).rows else None),
    ("measured", "transpose, best kernel", "GB/s", 0, lambda c: c.of(slides.transpose).best["gbps"] if c.of(slides.transpose).rows else None),
    ("measured", "L2 hit latency", "ns", 0, lambda c: _latency_ns(c, "L2")),
    ("measured", "HBM latency", "ns", 0, lambda c: _latency_ns(c, "HBM")),
)


def _ratio(a, b):
    return a / b if a and b else None


SAME = 0.05             # two figures within 5% of each other: the same, as far as these runs tell
PER_CLOCK_SAME = 0.03   # cuBLAS's work per MHz on the same SMs: past 3% apart, a difference to explain
# Shares of cuBLAS within this many points on every GPU, at every step: the same share.
SHARE_SAME_POINTS = 0.5
# what memory-bound work does where our best copy moves more, less or the same: as the slide says it, as the notes do
MEMORY_BOUND = {"more": "gains", "less": "loses", "same": "runs the same"}
MEMORY_BOUND_SAID = {"more": "gains what the memory gives", "less": "loses what the memory takes",
                     "same": "runs at the same speed"}


def _direction(ratio: float | None) -> str | None:
    """'more', 'less' or 'same': a ratio to this deck's GPU, read with SAME's margin."""
    if ratio is None:
        return None
    return "more" if ratio > 1 + SAME else "less" if ratio < 1 - SAME else "same"


def _variant_ratios(base, other) -> list[tuple[dict, float]]:
    """Each kernel measured on both GPUs, with its TFLOPS on ``other`` over those on ``base``."""
    out = []
    for mine, theirs in zip(base.of(slides.gemm).steps, other.of(slides.gemm).steps):
        for v, w in zip(mine.variants, theirs.variants):
            if v["tflops"] and w["tflops"] and not v["failed"] and not w["failed"]:
                out.append((v, w["tflops"] / v["tflops"]))
    return out


@dataclass(frozen=True)
class Compare(Context):
    """The GPUs side by side: this deck's GPU first, each other one as a ratio to it, by figure and by
    GEMM step, and for each other GPU what differs and what the data say about why."""
    names: list[str]
    rows: list[dict]                # each figure compared (COMPARED): its value on each GPU, each other's ratio
    by: dict                        # the rows by label
    steps: list[dict]               # each GEMM step's best kernel on each GPU (None: not measured), each other's ratio
    others: list[dict]              # each other GPU against this deck's, with the slides' lines on it
    differing: list[tuple[str, list]]       # the measurements whose ratios the figure plots
    share_gap: dict | None          # the step whose shares of each GPU's cuBLAS lie furthest apart (None: none measured everywhere)
    share_said: str
    shares_apart: bool              # that step's shares differ: the notes say where


def side_by_side(gpus: list) -> Compare | None:
    """The GPUs side by side: this deck's first, each other one as a ratio to it."""
    if len(gpus) < 2:
        return None
    base = gpus[0]
    rows = []
    for group, label, unit, digits, value in COMPARED:
        values = [value(c) for c in gpus]
        rows.append({"group": group, "label": label, "titled": f"{label} ({unit})" if unit else label, "digits": digits,
                     "per_gpu": values, "ratios": [_ratio(v, values[0]) for v in values[1:]]})
    steps = []
    for i, step in enumerate(base.of(slides.gemm).steps):
        bests = [c.of(slides.gemm).steps[i].best for c in gpus]
        ok = [b if b["tflops"] and not b["failed"] else None for b in bests]
        steps.append({"title": step.title, "name": step.name, "beyond": step.beyond, "gpus": ok,
                      "cells": [f"{b['tflops']:,.1f}" if b else "not measured" for b in ok],
                      "ratios": [_ratio(b and b["tflops"], ok[0] and ok[0]["tflops"]) for b in ok[1:]]})
    by = {r["label"]: r for r in rows}
    names = [c.of(slides.device).name for c in gpus]
    others = [against_base(base, c, j, by, steps, names[0]) for j, c in enumerate(gpus[1:])]
    differing = ([(r["label"], r["ratios"]) for r in rows if r["group"] == "measured" and any(r["ratios"])]
                 + [(f"GEMM: {s['title']}", s["ratios"]) for s in steps if any(s["ratios"])])
    # the step whose shares of its own cuBLAS lie furthest apart across the GPUs (every GPU measured)
    shares = lambda s: [b["pct_cublas"] for b in s["gpus"]]
    gap = lambda s: max(shares(s)) - min(shares(s))
    widest = max((s for s in steps if all(b and b["pct_cublas"] is not None for b in s["gpus"])), key=gap, default=None)
    share_gap = widest and {"step": widest["name"], "points": gap(widest), "same": gap(widest) < SHARE_SAME_POINTS,
                            "pcts": shares(widest)}
    return Compare(names=names, rows=rows, by=by, steps=steps, others=others, differing=differing, share_gap=share_gap,
                   share_said=share_said(share_gap, names), shares_apart=bool(share_gap) and not share_gap["same"])


# the ratios the lines on another GPU read, by the row of COMPARED they come from
RATIOS = {"hbm_peak_ratio": "HBM bandwidth, theoretical", "copy_ratio": "HBM copy, our best kernel",
          "memcpy_ratio": "cudaMemcpy", "l2_ratio": "L2 read, ld.global.cg kernel", "cublas_ratio": "cuBLAS TF32, fastest layout",
          "clock_ratio": "SM clock while cuBLAS TF32 ran", "hbm_latency_ratio": "HBM latency",
          "l2_size_ratio": "L2 cache", "memory_ratio": "HBM"}


def against_base(base, c, j: int, by: dict, steps: list[dict], base_name: str) -> dict:
    """The ``j``-th other GPU (its records ``c``) against this deck's (``base``): its ratios, the
    judgements they make, and the lines the slide and its notes say of them."""
    device, base_device = c.of(slides.device), base.of(slides.device)
    hand = [(s["ratios"][j], s["title"]) for s in steps if s["ratios"][j]]
    o = {"name": device.name,
         "same_sms": device.sm_count == base_device.sm_count,
         "same_clock": device.sm_clock_max_mhz == base_device.sm_clock_max_mhz,
         "compute_ratio": _ratio(device.sm_count * device.sm_clock_max_mhz,
                                 base_device.sm_count * base_device.sm_clock_max_mhz),
         **{key: by[label]["ratios"][j] for key, label in RATIOS.items()},
         "copy_pct_peak": [100 * _ratio(by["HBM copy, our best kernel"]["per_gpu"][k], by["HBM bandwidth, theoretical"]["per_gpu"][k])
                           if by["HBM copy, our best kernel"]["per_gpu"][k] else None for k in (j + 1, 0)],
         # the clock cuBLAS TF32 held on the other GPU and on this one
         "clocks": [by["SM clock while cuBLAS TF32 ran"]["per_gpu"][k] for k in (j + 1, 0)],
         "sms": base_device.sm_count,
         "steps_lo": min(hand) if hand else None, "steps_hi": max(hand) if hand else None}
    o["cublas_per_clock"] = _ratio(o["cublas_ratio"], o["clock_ratio"])
    o["memory"] = _direction(o["copy_ratio"])
    # a faster memory that is no nearer: the bandwidth grew, the latency did not shrink
    o["not_nearer"] = bool(o["hbm_latency_ratio"] and o["hbm_latency_ratio"] > 1 - SAME and o["memory"] == "more")
    o["per_clock_differs"] = bool(o["same_sms"] and o["cublas_per_clock"] and abs(o["cublas_per_clock"] - 1) > PER_CLOCK_SAME)
    # the kernels (every variant of every step) whose speed moved the way the memory did, by more
    # than SAME: at this shape the memory is part of their time, where the others' stay with the compute
    o["with_memory"] = ([v["name"] for v, ratio in _variant_ratios(base, c) if _direction(ratio) == o["memory"]]
                        if o["memory"] in ("more", "less") else [])
    return {**o, "summary_said": summary_said(o), "memory_said": memory_said(o), "memory_detail": memory_detail(o),
            "compute_said": compute_said(o, base_name), "compute_detail": compute_detail(o),
            "gemm_memory_said": gemm_memory_said(o)}


def summary_said(o: dict) -> str:
    """The notes' first line on another GPU: how fast its GEMM steps and its best copy run (empty: neither measured)."""
    said = ([f"the GEMM steps run {o['steps_lo'][0]:,.2f}× to {o['steps_hi'][0]:,.2f}× as fast"] if o["steps_lo"] else []) \
        + ([f"our best copy moves {o['copy_ratio']:,.2f}× the bytes per second"] if o["copy_ratio"] else [])
    return f"On the {o['name']} {', and '.join(said)}." if said else ""


def memory_said(o: dict) -> str:
    """The slide's line on memory: our best copy, the theoretical bandwidth, memory-bound work, a miss's
    latency (empty: no copy measured on both)."""
    if not o["copy_ratio"]:
        return ""
    peak = f", theoretical {o['hbm_peak_ratio']:,.2f}×" if o["hbm_peak_ratio"] else ""
    latency = f" An L2 miss takes {o['hbm_latency_ratio']:,.2f}× as long." if o["hbm_latency_ratio"] else ""
    return f"our best copy kernel {o['copy_ratio']:,.2f}×{peak}: memory-bound work {MEMORY_BOUND[o['memory']]}.{latency}"


def memory_detail(o: dict) -> str:
    """The notes' line on memory: as the slide's, with each copy's share of its GPU's bandwidth and
    whether a faster memory is a nearer one (empty: no copy measured on both)."""
    if not o["copy_ratio"]:
        return ""
    peak = (f" (theoretical bandwidth: {o['hbm_peak_ratio']:,.2f}×; the copy reaches {o['copy_pct_peak'][0]:,.0f}% of it, "
            f"against {o['copy_pct_peak'][1]:,.0f}%)") if o["hbm_peak_ratio"] else ""
    latency = (f" A load that misses L2 takes {o['hbm_latency_ratio']:,.2f}× as long"
               f"{': the faster memory is not a nearer one' if o['not_nearer'] else ''}.") if o["hbm_latency_ratio"] else ""
    return (f"Our best copy kernel moves {o['copy_ratio']:,.2f}× the bytes per second{peak}: "
            f"memory-bound work {MEMORY_BOUND_SAID[o['memory']]}.{latency}")


def compute_said(o: dict, base_name: str) -> str:
    """The slide's line on compute: the chip, the GEMM steps, cuBLAS and its clock, and whether its
    work per cycle explains it (empty: no step measured on both)."""
    if not o["steps_lo"]:
        return ""
    chip = "the same SMs and maximum clock" if o["same_sms"] and o["same_clock"] else f"SMs × clock {o['compute_ratio']:,.2f}×"
    cublas = ""
    if o["cublas_ratio"]:
        cublas = f", cuBLAS TF32 {o['cublas_ratio']:,.2f}×"
        if o["clock_ratio"]:
            cublas += f", its SMs at {o['clock_ratio']:,.2f}× the clock they held on the {base_name}"
            if not o["per_clock_differs"]:
                cublas += ": the same work per cycle, so cuBLAS moves with the clock it runs at, not with memory"
                if o["with_memory"]:
                    cublas += f"; {len(o['with_memory'])} of our variants also moved with memory"
    unexplained = f" {'More' if o['cublas_per_clock'] > 1 else 'Less'} work per cycle on the same SMs: unexplained." \
        if o["per_clock_differs"] else ""
    return f"{chip}; the GEMM steps {o['steps_lo'][0]:,.2f}× to {o['steps_hi'][0]:,.2f}×{cublas}.{unexplained}"


def compute_detail(o: dict) -> str:
    """The notes' line on compute: as the slide's, with the steps named, the clocks cuBLAS held, and
    its work per MHz where that differs (empty: no step measured on both)."""
    if not o["steps_lo"]:
        return ""
    chip = (f"The same {o['sms']:,.0f} SMs at the same maximum clock" if o["same_sms"] and o["same_clock"]
            else f"SMs × maximum clock {o['compute_ratio']:,.2f}×")
    cublas = f", cuBLAS TF32 {o['cublas_ratio']:,.2f}×" if o["cublas_ratio"] else ""
    clock = ""
    if o["clock_ratio"]:
        clock = f" The clock the power cap left cuBLAS: {o['clocks'][0]:,.0f} MHz against {o['clocks'][1]:,.0f}."
        if o["per_clock_differs"]:
            clock += (f" Per MHz of that clock cuBLAS did {o['cublas_per_clock']:,.2f}× the work: the same SMs on the same "
                      "operands should do the same per cycle, and nothing measured here explains the difference.")
    lo, hi = o["steps_lo"], o["steps_hi"]
    return f"{chip}: the GEMM steps run {lo[0]:,.2f}× ({lo[1]}) to {hi[0]:,.2f}× ({hi[1]}) as fast{cublas}.{clock}"


def gemm_memory_said(o: dict) -> str:
    """The notes' line on whether any GEMM kernel moved with a memory that differs (empty: the memory
    is the same, or no step measured)."""
    if not o["steps_lo"] or o["memory"] not in ("more", "less"):
        return ""
    if o["with_memory"]:
        return (f"{', '.join(o['with_memory'])} moved with the memory by more than {100 * SAME:,.0f}%: at this shape the "
                f"memory is part of {'its' if len(o['with_memory']) == 1 else 'their'} time, while the others' speed stays "
                "with the SMs and the clock.")
    return (f"The memory differs by more than {100 * SAME:,.0f}% and no GEMM kernel's speed moved with it: at this shape "
            "the steps are bound by the SMs and the clock, not the memory.")


def share_said(gap: dict | None, names: list[str]) -> str:
    """The notes' line on how far apart each step's shares of its own GPU's cuBLAS lie."""
    if gap is None:
        return "Each deck's results table has each step's share of its own cuBLAS."
    if gap["same"]:
        return (f"Each step's share of its own GPU's cuBLAS lies within {gap['points']:,.1f} points on every GPU; "
                "each deck's results table has the shares.")
    pcts = ", ".join(f"{pct:,.1f}% on the {name}" for pct, name in zip(gap["pcts"], names))
    return f"Each step's share of its own GPU's cuBLAS lies furthest apart at {gap['step']}: {pcts}, {gap['points']:,.1f} points."


def context(deck) -> Compare | None:
    """This deck's GPU beside the others' (deck.others, (path, document) pairs). A document the
    deck cannot be built from is left out with ``deck.warn(message)`` when a warning is asked
    for, and is an error otherwise."""
    accepted, section = [], None
    for path, other in deck.others:
        try:
            candidate = Records(other)
            section = side_by_side([deck, *accepted, candidate])
        except Exception as e:      # a neighbour's fault must not stop this GPU's deck
            message = f"{path}: cannot be compared ({type(e).__name__}: {schema.one_line(e, 200)})"
            if deck.warn is None:
                raise BuildError(message) from e
            deck.warn(f"left out of the comparison: {message}")
            continue
        accepted.append(candidate)
        deck.beside.append((path, other))
    return section


# --- figures --------------------------------------------------------------------------------------

def compare_gemm(compare: Compare) -> str:
    """Each step's best kernel and cuBLAS on every GPU compared."""
    groups = [s["title"] for s in compare.steps] + ["cuBLAS TF32, fastest layout"]
    cublas = compare.by["cuBLAS TF32, fastest layout"]["per_gpu"]
    series = [(name, [s["gpus"][k] and s["gpus"][k]["tflops"] for s in compare.steps] + [cublas[k]])
              for k, name in enumerate(compare.names)]
    return grouped_bars(groups, series, "TFLOPS at the reference shape")


def compare_ratios(compare: Compare) -> str:
    """Each other GPU's measurements divided by this deck's GPU's: where they differ, and by how much."""
    groups = [label for label, _ in compare.differing]
    series = [(f"{name} ÷ {compare.names[0]}", [ratios[j] for _, ratios in compare.differing])
              for j, name in enumerate(compare.names[1:])]
    return grouped_bars(groups, series, "ratio: right of 1 is more (of a latency: slower), left is less", digits=2, origin=1.0)


def draw(own: Compare | None, deck) -> dict[str, str]:
    compare = own
    if not compare:
        return {}
    svgs = {"compare_gemm.svg": compare_gemm(compare)}
    if compare.differing:
        svgs["compare_ratios.svg"] = compare_ratios(compare)
    return svgs
