"""The GPUs side by side: this deck's GPU first, each other GPU's results (each built as its own
deck) as a ratio to it, and what differs."""
from __future__ import annotations

from bench.core import schema
from slides.kit import grouped_bars
from slides.records import BuildError, Records
import slides.device
import slides.gemm
import slides.hbm
import slides.l2
import slides.memory_latency
import slides.peaks
import slides.transpose


def _peak(c: Records, precision: str, key: str):
    row = c.of(slides.peaks)["by"].get(precision)
    value = row and row[key]
    return value["tflops"] if isinstance(value, dict) else value


def _latency_ns(c: Records, level: str):
    mem = c.of(slides.memory_latency)
    return mem["by"][level]["ns"] if mem["levels"] and level in mem["by"] else None


# What the comparison sets side by side: (group, label, unit, digits, value from one GPU's context).
COMPARED = (
    ("chip", "SMs", "", 0, lambda c: c.of(slides.device)["sm_count"]),
    ("chip", "SM clock, max", "MHz", 0, lambda c: c.of(slides.device)["sm_clock_max_mhz"]),
    ("chip", "L2 cache", "MiB", 0, lambda c: c.of(slides.device)["l2_bytes"] / 2**20),
    ("chip", "HBM", "GiB", 0, lambda c: c.of(slides.device)["memory_bytes"] / 2**30),
    ("chip", "power limit", "W", 0, lambda c: c.of(slides.device)["power_limit_w"]),
    ("peak", "TF32 tensor peak, max clock", "TFLOPS", 1, lambda c: _peak(c, "tf32", "tflops_max_clock")),
    ("peak", "HBM bandwidth, theoretical", "GB/s", 0, lambda c: c.of(slides.device)["hbm_peak_gbps"]),
    ("measured", "cuBLAS TF32, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "tf32", "measured")),
    ("measured", "cuBLAS BF16, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "bf16", "measured")),
    ("measured", "SM clock while cuBLAS TF32 ran", "MHz", 0, lambda c: c.of(slides.peaks)["tf32_clock_mhz"]),
    ("measured", "HBM copy, our best kernel", "GB/s", 0, lambda c: c.of(slides.hbm)["best"]["gbps"] if c.of(slides.hbm)["rows"] else None),
    ("measured", "cudaMemcpy", "GB/s", 0, lambda c: c.of(slides.hbm)["memcpy"]["gbps"] if c.of(slides.hbm)["rows"] else None),
    ("measured", "L2 read, ld.global.cg kernel", "GB/s", 0, lambda c: c.of(slides.l2)["best_read"]["read"]["gbps"] if c.of(slides.l2)["rows"] else None),
    ("measured", "transpose, best kernel", "GB/s", 0, lambda c: c.of(slides.transpose)["best"]["gbps"] if c.of(slides.transpose)["rows"] else None),
    ("measured", "L2 hit latency", "ns", 0, lambda c: _latency_ns(c, "L2")),
    ("measured", "HBM latency", "ns", 0, lambda c: _latency_ns(c, "HBM")),
)


def _ratio(a, b):
    return a / b if a and b else None


SAME = 0.05             # two figures within 5% of each other: the same, as far as these runs tell
PER_CLOCK_SAME = 0.03   # cuBLAS's work per MHz on the same SMs: past 3% apart, a difference to explain


def _direction(ratio: float | None) -> str | None:
    """'more', 'less' or 'same': a ratio to this deck's GPU, read with SAME's margin."""
    if ratio is None:
        return None
    return "more" if ratio > 1 + SAME else "less" if ratio < 1 - SAME else "same"


def _variant_ratios(base, other) -> list[tuple[dict, float]]:
    """Each kernel measured on both GPUs, with its TFLOPS on ``other`` over those on ``base``."""
    out = []
    for mine, theirs in zip(base.of(slides.gemm)["steps"], other.of(slides.gemm)["steps"]):
        for v, w in zip(mine["variants"], theirs["variants"]):
            if v["tflops"] and w["tflops"] and not v["failed"] and not w["failed"]:
                out.append((v, w["tflops"] / v["tflops"]))
    return out


def side_by_side(gpus: list) -> dict | None:
    """The GPUs side by side: this deck's first, each other one as a ratio to it."""
    if len(gpus) < 2:
        return None
    base = gpus[0]
    rows = []
    for group, label, unit, digits, value in COMPARED:
        values = [value(c) for c in gpus]
        rows.append({"group": group, "label": label, "unit": unit, "digits": digits, "per_gpu": values,
                     "ratios": [_ratio(v, values[0]) for v in values[1:]]})
    steps = []
    for i, step in enumerate(base.of(slides.gemm)["steps"]):
        bests = [c.of(slides.gemm)["steps"][i]["best"] for c in gpus]
        ok = [b if b["tflops"] and not b["failed"] else None for b in bests]
        steps.append({"title": step["title"], "name": step["name"], "beyond": step["beyond"], "gpus": ok,
                      "ratios": [_ratio(b and b["tflops"], ok[0] and ok[0]["tflops"]) for b in ok[1:]]})
    by = {r["label"]: r for r in rows}
    others = []
    for j, c in enumerate(gpus[1:]):
        hand = [(s["ratios"][j], s["title"]) for s in steps if s["ratios"][j]]
        others.append({
            "name": c.of(slides.device)["name"],
            "same_sms": c.of(slides.device)["sm_count"] == base.of(slides.device)["sm_count"],
            "same_clock": c.of(slides.device)["sm_clock_max_mhz"] == base.of(slides.device)["sm_clock_max_mhz"],
            "compute_ratio": _ratio(c.of(slides.device)["sm_count"] * c.of(slides.device)["sm_clock_max_mhz"],
                                    base.of(slides.device)["sm_count"] * base.of(slides.device)["sm_clock_max_mhz"]),
            **{key: by[label]["ratios"][j] for key, label in (
                ("hbm_peak_ratio", "HBM bandwidth, theoretical"), ("copy_ratio", "HBM copy, our best kernel"),
                ("memcpy_ratio", "cudaMemcpy"), ("l2_ratio", "L2 read, ld.global.cg kernel"), ("cublas_ratio", "cuBLAS TF32, fastest layout"),
                ("clock_ratio", "SM clock while cuBLAS TF32 ran"), ("hbm_latency_ratio", "HBM latency"),
                ("l2_size_ratio", "L2 cache"), ("memory_ratio", "HBM"))},
            "copy_pct_peak": [100 * _ratio(by["HBM copy, our best kernel"]["per_gpu"][k], by["HBM bandwidth, theoretical"]["per_gpu"][k])
                              if by["HBM copy, our best kernel"]["per_gpu"][k] else None for k in (j + 1, 0)],
            "steps_lo": min(hand) if hand else None, "steps_hi": max(hand) if hand else None,
        })
        o = others[-1]
        o["cublas_per_clock"] = _ratio(o["cublas_ratio"], o["clock_ratio"])
        o["memory"] = _direction(o["copy_ratio"])
        # a faster memory that is no nearer: the bandwidth grew, the latency did not shrink
        o["not_nearer"] = bool(o["hbm_latency_ratio"] and o["hbm_latency_ratio"] > 1 - SAME and o["memory"] == "more")
        o["per_clock_differs"] = bool(o["same_sms"] and o["cublas_per_clock"]
                                      and abs(o["cublas_per_clock"] - 1) > PER_CLOCK_SAME)
        # the kernels (every variant of every step) whose speed moved the way the memory did, by more
        # than SAME: at this shape the memory is part of their time, where the others' stay with the compute
        o["with_memory"] = ([v["name"] for v, ratio in _variant_ratios(base, c) if _direction(ratio) == o["memory"]]
                            if o["memory"] in ("more", "less") else [])
    differing = ([(r["label"], r["ratios"]) for r in rows if r["group"] == "measured" and any(r["ratios"])]
                 + [(f"GEMM: {s['title']}", s["ratios"]) for s in steps if any(s["ratios"])])
    # the step whose shares of its own cuBLAS lie furthest apart across the GPUs (every GPU measured)
    shares = lambda s: [b["pct_cublas"] for b in s["gpus"]]
    gap = lambda s: max(shares(s)) - min(shares(s))
    widest = max((s for s in steps if all(b and b["pct_cublas"] is not None for b in s["gpus"])), key=gap, default=None)
    return {"names": [c.of(slides.device)["name"] for c in gpus], "same_pct": 100 * SAME, "rows": rows, "by": by, "steps": steps, "others": others,
            "differing": differing,
            "share_gap": widest and {"step": widest["name"], "points": gap(widest), "same": gap(widest) < SHARE_SAME_POINTS,
                                     "pcts": shares(widest)}}


# Shares of cuBLAS within this many points on every GPU, at every step: the same share.
SHARE_SAME_POINTS = 0.5


def context(deck) -> dict | None:
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

def compare_gemm(compare: dict) -> str:
    """Each step's best kernel and cuBLAS on every GPU compared."""
    groups = [s["title"] for s in compare["steps"]] + ["cuBLAS TF32, fastest layout"]
    cublas = compare["by"]["cuBLAS TF32, fastest layout"]["per_gpu"]
    series = [(name, [s["gpus"][k] and s["gpus"][k]["tflops"] for s in compare["steps"]] + [cublas[k]])
              for k, name in enumerate(compare["names"])]
    return grouped_bars(groups, series, "TFLOPS at the reference shape")


def compare_ratios(compare: dict) -> str:
    """Each other GPU's measurements divided by this deck's GPU's: where they differ, and by how much."""
    groups = [label for label, _ in compare["differing"]]
    series = [(f"{name} ÷ {compare['names'][0]}", [ratios[j] for _, ratios in compare["differing"]])
              for j, name in enumerate(compare["names"][1:])]
    return grouped_bars(groups, series, "ratio: right of 1 is more (of a latency: slower), left is less", digits=2, origin=1.0)


def draw(own, deck) -> dict[str, str]:
    compare = own
    if not compare:
        return {}
    svgs = {"compare_gemm.svg": compare_gemm(compare)}
    if compare["differing"]:
        svgs["compare_ratios.svg"] = compare_ratios(compare)
    return svgs
