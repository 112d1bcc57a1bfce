"""GEMM across sizes (bench/gemm/sweep.py): each step's best kernel at every size, cuBLAS timed in turns
beside it, and how close the headline kernel stays to cuBLAS from WITHIN_FROM up."""
from __future__ import annotations

import math

from bench.gemm import catalogue, plan
from slides.kit import ACCENT, Chart, GROUP, INK, Series, line_chart
import slides.device
import slides.gemm
import slides.precision

WITHIN_FROM = 1024      # the size from which the best kernel is held to cuBLAS
HELD_TO = 0.9           # ... and the share of cuBLAS it is held to there


def size_label(shape: list[int]) -> str:
    return str(shape[0]) if len(set(shape)) == 1 else "×".join(map(str, shape))


def tile_label(tile: dict) -> str:
    return f"{tile['BM']}×{tile['BN']}"


def summary(title: str, record: dict, device: dict, cublas_error: float | None = None,
            reference: list[int] | None = None) -> dict:
    """How close a step's best kernel stays to cuBLAS across sizes, from WITHIN_FROM up; where it is
    correct, refused or wrong; its error against float64 across sizes, beside cuBLAS's on the
    reference operands (``cublas_error``, from the GEMM records); and which of its tiles ran where
    (the catalogue picks one per shape)."""
    all_rows = record["rows"]
    rows = [r for r in all_rows if r["outcome"] == "correct"]
    errors = [r["check"]["rel_error"] for r in rows]
    large = [r for r in rows if min(r["shape"]) >= WITHIN_FROM]
    worst = min(large, key=lambda r: r["ratio_same_layout"]) if large else None
    out = {"title": title, "within_from": WITHIN_FROM, "precision": record["params"]["precision"].upper(),
           "worst": worst and {"size": size_label(worst["shape"]), "pct": 100 * worst["ratio_same_layout"],
                               "held": worst["ratio_same_layout"] >= HELD_TO,
                               # "within N%" rounds up: 90.7% of cuBLAS is within 10%, not 9%
                               "within_pct": math.ceil(round(100 - 100 * worst["ratio_same_layout"], 6))},
           "above": [size_label(r["shape"]) for r in rows if r["ratio_same_layout"] >= 1],
           "refused": [size_label(r["shape"]) for r in all_rows if r["outcome"] == "refused"],
           "wrong": [size_label(r["shape"]) for r in all_rows if r["outcome"] == "wrong"],
           "small": None, "small_tile": None, "at_reference": None,
           "error": errors and {"lo": min(errors), "hi": max(errors), "cublas": cublas_error}}
    at_reference = next((r for r in rows if r["shape"] == reference), None)     # the GEMM slides' shape
    if at_reference:
        out["at_reference"] = {"tflops": at_reference["tflops"]["kernel"], "pct": 100 * at_reference["ratio_same_layout"]}
    tiles = record["params"].get("tiles") or []
    if len(tiles) > 1:        # the sizes where the catalogue picked the small tile
        big, small = tile_label(tiles[0]), tile_label(tiles[1])
        at = [size_label(r["shape"]) for r in all_rows if r.get("tile") and tile_label(r["tile"]) == small]
        out["small_tile"] = {"tile": small, "big": big, "at": at, "below_pct": 100 * record["params"]["small_tile_below_sms"],
                             "sms": device["sm_count"]}
    elif tiles and rows:      # one tile: what it leaves idle at the smallest size
        n, tile = rows[0]["shape"], tiles[0]
        count = plan.ctas(tile, n[0], n[1])
        if count < device["sm_count"]:
            out["small"] = {"size": size_label(n), "tiles": count, "sms": device["sm_count"], "tile": tile_label(tile)}
    return out


def cells(record: dict, small_tile: dict | None) -> dict:
    """Each size's row, marked where the small tile ran."""
    small = small_tile["tile"] if small_tile else None
    return {size_label(r["shape"]): {**r, "small": bool(small and r.get("tile") and tile_label(r["tile"]) == small)}
            for r in record["rows"]}


def share_range(cells: dict) -> dict | None:
    """A step's lowest and highest share of its cuBLAS over the sizes it ran (each with its size),
    and the sizes it refused; None where it ran none."""
    ran = {size: c["ratio_same_layout"] for size, c in cells.items() if c["outcome"] == "correct"}
    if not ran:
        return None
    low, high = min(ran, key=ran.get), max(ran, key=ran.get)
    return {"low": {"size": low, "pct": 100 * ran[low]}, "high": {"size": high, "pct": 100 * ran[high]},
            "refused": [size for size, c in cells.items() if c["outcome"] == "refused"]}


def context(deck) -> dict:
    """Each step's best kernel across sizes (bench/gemm/sweep.py), cuBLAS timed in turns beside it, and
    how close the headline kernel stays to cuBLAS from WITHIN_FROM up; then the BF16 headline's."""
    gemm, device = deck.of(slides.gemm), deck.of(slides.device)
    recs = deck.need("GEMM Across Sizes", *(s["sweep_id"] for s in gemm["steps"]))
    steps = [{"title": s["title"], "key": s["key"], "sweep_id": s["sweep_id"], "step": s, "summary": r, "record": r["record"]}
             for s, r in zip(gemm["steps"], recs) if r["measured"] and "rows" in r["record"]]
    bf16 = _bf16(deck)
    if not steps:
        return {"steps": [], "sizes": [], "best": None, "top": None, "correct_everywhere": [], "bf16": bf16}
    sizes = [size_label(row["shape"]) for row in steps[0]["record"]["rows"]]
    top = gemm["headline"] and next((s for s in steps if s["title"] == gemm["headline"]["to_title"]), None)
    headline = gemm["headline"] and gemm["headline"]["to"].get("baseline")
    best = summary(top["title"], top["record"], device, headline and headline["error"],
                   deck.of(slides.gemm)["shape"] and deck.of(slides.gemm)["shape"]["dims"]) if top else None
    for s in steps:
        s["cells"] = cells(s["record"], best["small_tile"] if s is top else None)
        s["shares"] = share_range(s["cells"])
    correct_everywhere = [s["title"] for s in steps if all(r["outcome"] == "correct" for r in s["record"]["rows"])]
    return {"steps": steps, "sizes": sizes, "best": best, "top": top, "correct_everywhere": correct_everywhere,
            "bf16": bf16}


def _bf16(deck) -> dict | None:
    """The BF16 headline across sizes, beside cuBLAS BF16 on both layouts."""
    step = catalogue.step_of(catalogue.HEADLINE_BF16)
    (r,) = deck.need("BF16 Across Sizes", step.sweep_id)
    if not r["measured"] or "rows" not in r["record"]:
        return {**r, "best": None}
    title = step.title_of(step.best)
    headline = deck.of(slides.precision)["headline"]
    best = summary(title, r["record"], deck.of(slides.device), headline and headline["baseline"]["error"],
                   deck.of(slides.gemm)["shape"] and deck.of(slides.gemm)["shape"]["dims"])
    return {**r, "best": best, "title": title, "cells": cells(r["record"], best["small_tile"]),
            "sizes": [size_label(row["shape"]) for row in r["record"]["rows"]]}


# --- figures --------------------------------------------------------------------------------------

def gemm_sweep(top: dict | None, others: list[dict]) -> str:
    """TFLOPS against the size of square GEMMs: a headline kernel in colour, cuBLAS of its precision
    on both layouts (timed in turns with it) in black, every other step in grey (the table beside
    gives their figures); refused sizes leave gaps."""
    def square(rows, key):
        return [(r["shape"][0], r["tflops"][key]) for r in rows
                if r["outcome"] == "correct" and len(set(r["shape"])) == 1]
    series = [Series("the other steps", square(s["record"]["rows"], "kernel"), GROUP, marks=False, legend=False)
              for s in others]
    series = [s for s in series if s.points]
    if series:
        series[0].legend = True
    if top:
        rows, precision = top["record"]["rows"], top["record"]["params"]["precision"].upper()
        series += [Series(top["title"], square(rows, "kernel"), ACCENT),
                   Series(f"cuBLAS {precision}, B K-major", square(rows, "cublas_b_kmajor"), INK, marks=False),
                   Series(f"cuBLAS {precision}, B row-major", square(rows, "cublas_b_row"), INK, marks=False, dash="6,4")]
    return line_chart(Chart("M = N = K (log scale)", "TFLOPS", [s for s in series if s.points], height=300))


def draw(own, deck) -> dict[str, str]:
    sweep, figures = own, {}
    if sweep["steps"]:
        figures["gemm_sweep.svg"] = gemm_sweep(sweep["top"], [s for s in sweep["steps"] if s is not sweep["top"]])
    if sweep["bf16"]["best"]:
        figures["gemm_sweep_bf16.svg"] = gemm_sweep(sweep["bf16"], [])
    return figures
