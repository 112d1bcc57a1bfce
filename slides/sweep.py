"""GEMM across sizes (bench/gemm/sweep.py): each step's best kernel at every size, cuBLAS timed in turns
beside it, and how close the headline kernel stays to cuBLAS from WITHIN_FROM up."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.gemm import catalogue, plan
from slides.kit import ACCENT, Chart, GROUP, INK, Series, line_chart
from slides.records import Context
import slides.device
import slides.gemm
import slides.precision

WITHIN_FROM = 1024      # the size from which the best kernel is held to cuBLAS
HELD_TO = 0.9           # ... and the share of cuBLAS it is held to there
# cuBLAS as each sweep's slide names it: as a kernel is held to it, and again where the kernel is at or above it
TF32_CUBLAS = ("cuBLAS", "cuBLAS")
BF16_CUBLAS = ("cuBLAS BF16", "it")


@dataclass(frozen=True)
class Bf16Sweep:
    """The BF16 headline across sizes, beside cuBLAS BF16 on both layouts (best None: not measured)."""
    result: dict                        # the record as a slide shows it (Records.record)
    best: dict | None = None            # its summary (summary)
    sizes_said: list[str] = field(default_factory=list)     # each size's figures, as the notes list them


@dataclass(frozen=True)
class Sweep(Context):
    """The sweep slides: each step's best kernel across sizes, each checked, then timed in turns with
    cuBLAS of its precision (steps empty: none measured); how close the headline's step stays to
    cuBLAS and what its sizes showed; then the BF16 headline across sizes."""
    bf16: Bf16Sweep
    steps: list[dict] = field(default_factory=list)     # each step's record, its cells by size and its range of shares
    sizes: list[str] = field(default_factory=list)
    top: dict | None = None             # the headline's step
    best: dict | None = None            # its summary (summary)
    held: str = ""                      # how close it stays to cuBLAS, said aloud
    precision: str = "tf32"             # the cuBLAS every step is timed beside, but for steps of another precision
    cublas_rows: list[dict] = field(default_factory=list)   # the headline's cuBLAS on both layouts, by size
    small_tile: dict | None = None      # where the catalogue picked the headline's smaller tile
    findings: list[str] = field(default_factory=list)       # the notes' sentences on what the headline's sizes showed
    ranged_over_ran: bool = False       # a step refused sizes, so its range of shares is over those it ran


def size_label(shape: list[int]) -> str:
    return str(shape[0]) if len(set(shape)) == 1 else "×".join(map(str, shape))


def tile_label(tile: dict) -> str:
    return f"{tile['BM']}×{tile['BN']}"


def summary(title: str, record: dict, device: dict, cublas: tuple[str, str], cublas_error: float | None = None,
            reference: list[int] | None = None) -> dict:
    """How close a step's best kernel stays to cuBLAS (``cublas``: as the slide names it) across sizes, from
    WITHIN_FROM up; where it is correct, refused or wrong; its error against float64 across sizes,
    beside cuBLAS's on the reference operands (``cublas_error``, from the GEMM records); and which of
    its tiles ran where (the catalogue picks one per shape)."""
    all_rows = record["rows"]
    rows = [r for r in all_rows if r["outcome"] == "correct"]
    errors = [r["check"]["rel_error"] for r in rows]
    large = [r for r in rows if min(r["shape"]) >= WITHIN_FROM]
    worst = min(large, key=lambda r: r["ratio_same_layout"]) if large else None
    worst = worst and {"size": size_label(worst["shape"]), "pct": 100 * worst["ratio_same_layout"],
                       "held": worst["ratio_same_layout"] >= HELD_TO,
                       # "within N%" rounds up: 90.7% of cuBLAS is within 10%, not 9%
                       "within_pct": math.ceil(round(100 - 100 * worst["ratio_same_layout"], 6))}
    # the reference shape by its name: the chart's axis holds the square sizes only
    above = [size_label(r["shape"]) if r["shape"] != reference else "the reference" for r in rows if r["ratio_same_layout"] >= 1]
    at_reference = next((r for r in rows if r["shape"] == reference), None)     # the GEMM slides' shape
    return {"title": title, "standing": standing(worst, above, cublas), "held": held(title, worst, above, cublas[0]),
            "refused": [size_label(r["shape"]) for r in all_rows if r["outcome"] == "refused"],
            "wrong": [size_label(r["shape"]) for r in all_rows if r["outcome"] == "wrong"],
            "at_reference": at_reference and {"tflops": at_reference["tflops"]["kernel"], "pct": 100 * at_reference["ratio_same_layout"]},
            "error": errors and error_said(min(errors), max(errors), cublas_error, cublas[0]),
            **tiles(record, rows, device)}


def standing(worst: dict | None, above: list[str], cublas: tuple[str, str]) -> str:
    """How close the kernel stays to cuBLAS from WITHIN_FROM up, and where it is at or above it, as
    the slide's bullet goes on after the kernel's name."""
    of, above_of = cublas
    if worst and worst["pct"] >= 100:      # no shortfall to say: every size from WITHIN_FROM up is above
        return f", from {WITHIN_FROM} up: at or above {of} (same layout) at every size."
    said = ""
    if worst:
        said = f", from {WITHIN_FROM} up: " + (f"within {worst['within_pct']}% of {of} at every size" if worst["held"]
                                               else f"down to {worst['pct']:,.0f}% of {of} at {worst['size']}")
    said += "."
    if above:
        listed = f"{', '.join(above[:-1])} and {above[-1]}" if len(above) > 1 else above[0]
        said += f" At or above {above_of} (same layout) at {listed}."
    return said


def held(title: str, worst: dict | None, above: list[str], of: str) -> str:
    """The same, said aloud: how close to cuBLAS it stays from the smallest size that fills the chip."""
    if not worst:
        return ""
    if worst["pct"] >= 100:
        return f"From size {WITHIN_FROM} up, {title} is at or above {of} at every size."
    said = f"From size {WITHIN_FROM} up, {title} " + (f"stays within {worst['within_pct']}% of {of} at every size" if worst["held"]
                                                     else f"falls to {worst['pct']:,.0f}% of {of} at {worst['size']}")
    return said + (f", and is at or above it at {len(above)} of the sizes" if above else "") + "."


def error_said(lo: float, hi: float, cublas: float | None, of: str) -> str:
    """The kernel's error against float64 across sizes, and cuBLAS's on the reference operands."""
    return f"{lo:.1e}–{hi:.1e} across sizes" + (f"; {of}'s on the reference operands {cublas:.1e}" if cublas is not None else "")


def tiles(record: dict, rows: list[dict], device: dict) -> dict:
    """Where the catalogue picked a kernel's smaller tile (small_tile); or, of one tile, what it leaves
    idle at the smallest size (small)."""
    tiles = record["params"].get("tiles") or []
    if len(tiles) > 1:        # the sizes where the catalogue picked the small tile
        big, small = tile_label(tiles[0]), tile_label(tiles[1])
        at = [size_label(r["shape"]) for r in record["rows"] if r.get("tile") and tile_label(r["tile"]) == small]
        return {"small": None, "small_tile": {"tile": small, "big": big, "at": at, "sms": device.sm_count,
                                              "below_pct": 100 * record["params"]["small_tile_below_sms"]}}
    if tiles and rows:        # one tile: what it leaves idle at the smallest size
        n, tile = rows[0]["shape"], tiles[0]
        count = plan.ctas(tile, n[0], n[1])
        if count < device.sm_count:
            return {"small": {"size": size_label(n), "tiles": count, "sms": device.sm_count, "tile": tile_label(tile)},
                    "small_tile": None}
    return {"small": None, "small_tile": None}


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


def context(deck) -> Sweep:
    """Each step's best kernel across sizes (bench/gemm/sweep.py), cuBLAS timed in turns beside it, and
    how close the headline kernel stays to cuBLAS from WITHIN_FROM up; then the BF16 headline's."""
    gemm, device = deck.of(slides.gemm), deck.of(slides.device)
    recs = deck.need("GEMM Across Sizes", *(s.sweep_id for s in gemm.steps))
    measured = [(s, r) for s, r in zip(gemm.steps, recs) if r["measured"] and "rows" in r["record"]]
    bf16 = _bf16(deck)
    if not measured:
        return Sweep(bf16=bf16)
    top_step, top_record = next(((s, r["record"]) for s, r in measured
                                 if gemm.headline and s.title == gemm.headline["to_title"]), (None, None))
    headline = gemm.headline and gemm.headline["to"].get("baseline")
    best = summary(top_step.title, top_record, device, TF32_CUBLAS, headline and headline["error"],
                   gemm.shape and gemm.shape["dims"]) if top_step else None
    steps = [step_row(s, r, best["small_tile"] if s is top_step else None) for s, r in measured]
    top = next((s for s in steps if s["step"] is top_step), None)
    correct_everywhere = [s["title"] for s in steps if all(r["outcome"] == "correct" for r in s["record"]["rows"])]
    sizes = [size_label(row["shape"]) for row in steps[0]["record"]["rows"]]
    return Sweep(bf16=bf16, steps=steps, sizes=sizes,
                 top=top, best=best, precision=top["step"].precision if top else "tf32",
                 held=best["held"] if best else "", cublas_rows=cublas_rows(top, sizes) if top else [],
                 small_tile=best["small_tile"] if best and best["small_tile"] and best["small_tile"]["at"] else None,
                 findings=findings(best, correct_everywhere, gemm.headline) if best else [],
                 ranged_over_ran=any(s["shares"] and s["shares"]["refused"] for s in steps))


def step_row(step: dict, r: dict, small_tile: dict | None) -> dict:
    """A step's row of the table: its record, its cells by size (the small tile marked where it ran),
    and its lowest and highest share of cuBLAS."""
    by_size = cells(r["record"], small_tile)
    return {"title": step.title, "key": step.key, "sweep_id": step.sweep_id, "step": step, "result": r,
            "record": r["record"], "cells": by_size, "shares": share_range(by_size)}


def cublas_rows(top: dict, sizes: list[str]) -> list[dict]:
    """The cuBLAS the headline's step took turns with, on both layouts: its TFLOPS at each of ``sizes``
    (None where the kernel did not run correctly)."""
    precision, cells = top["step"].precision.upper(), top["cells"]
    return [{"name": f"cuBLAS {precision}, {layout}",
             "tflops": [cells[size]["tflops"][key] if cells[size]["outcome"] == "correct" else None for size in sizes]}
            for key, layout in (("cublas_b_kmajor", "B K-major"), ("cublas_b_row", "B row-major"))]


def findings(best: dict, correct_everywhere: list[str], headline: dict | None) -> list[str]:
    """What the headline's sizes showed, a sentence each, for the notes."""
    said = []
    if best["at_reference"] and headline:
        said.append(f"At the reference shape this sweep times it at {best['at_reference']['tflops']:,.1f} TFLOPS, "
                    f"{best['at_reference']['pct']:,.1f}% of cuBLAS, from short timings; the settle slide shows how the clock "
                    f"falls over a GEMM's first seconds. The headline, {headline['to']['tflops']:,.1f} TFLOPS "
                    f"({headline['to']['pct_cublas']:,.1f}%), is the results table's: settled first, longer samples.")
    if best["refused"]:
        said.append(f"It refuses, with a message, the sizes that are multiples of none of its tiles ({', '.join(best['refused'])}).")
    if correct_everywhere:
        said.append(f"Correct at every size, ragged ones included: {', '.join(correct_everywhere)}; "
                    "the other steps refuse the sizes that are multiples of no tile.")
    if small := best["small"]:
        said.append(f"Small sizes leave SMs idle: at {small['size']} the kernel's {small['tile']} tiles number {small['tiles']}, "
                    f"for {small['sms']} SMs; a smaller tile or a split along K would fix it.")
    if small_tile := best["small_tile"]:
        said.append(f"The step catalogue gives the kernel a second, smaller tile ({small_tile['tile']}) and picks it per shape: "
                    f"wherever its {small_tile['big']} tiles would number fewer CTAs than {small_tile['below_pct']:,.0f}% of the SMs. "
                    "Ragged sizes are whole tiles to it: TMA reads zeros past the edge and stores nothing there.")
    return said


def _bf16(deck) -> Bf16Sweep:
    """The BF16 headline across sizes, beside cuBLAS BF16 on both layouts."""
    step = catalogue.step_of(catalogue.HEADLINE_BF16)
    (r,) = deck.need("BF16 Across Sizes", step.sweep_id)
    if not r["measured"] or "rows" not in r["record"]:
        return Bf16Sweep(result=r)
    headline = deck.of(slides.precision).headline
    best = summary(step.title_of(step.best), r["record"], deck.of(slides.device), BF16_CUBLAS,
                   headline and headline["baseline"]["error"], deck.of(slides.gemm).shape and deck.of(slides.gemm).shape["dims"])
    return Bf16Sweep(result=r, best=best, sizes_said=[size_said(size, c) for size, c in cells(r["record"], best["small_tile"]).items()])


def size_said(size: str, c: dict) -> str:
    """A size's figures as the notes list them: the kernel's TFLOPS against cuBLAS's, or its outcome."""
    if c["outcome"] != "correct":
        return f"{size}: {c['outcome']}"
    return (f"{size}: {c['tflops']['kernel']:,.0f} TFLOPS against {c['tflops']['cublas_b_kmajor']:,.0f} "
            f"({100 * c['ratio_same_layout']:,.0f}%)" + (", small tile" if c["small"] else ""))


# --- figures --------------------------------------------------------------------------------------

def gemm_sweep(top: dict | None, others: list[dict]) -> str:
    """TFLOPS against the size of square GEMMs: a headline kernel (its title and record) in colour, cuBLAS of its precision
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
    drawn = [s for s in series if s.points]
    return line_chart(Chart("M = N = K (log scale)", "TFLOPS", drawn, height=300,
                            x_ticks=tuple({x for s in drawn for x, _ in s.points})))      # every size measured


def draw(own: Sweep, deck) -> dict[str, str]:
    figures = {}
    if own.steps:
        figures["gemm_sweep.svg"] = gemm_sweep(own.top, [s for s in own.steps if s is not own.top])
    if own.bf16.best:
        figures["gemm_sweep_bf16.svg"] = gemm_sweep({"title": own.bf16.best["title"], "record": own.bf16.result["record"]}, [])
    return figures
