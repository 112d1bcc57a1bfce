"""GEMMs as public READMEs time them and what they cost: each in bursts from a rest beside the same
GEMM sustained (bench/burst.py), and each step's best kernel and its cuBLAS alone, their power,
joules per GEMM and TFLOPS per watt (harness.energy)."""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median_high

from slides.device import tflops_of
from slides.kit import ACCENT, GRID, GROUP, INK, MUTED, REF, Bar, bar_chart, drawing, nice_ticks, text, text_width
from slides.records import Context
import slides.device
import slides.gemm

# A GEMM "draws the cap" where its power alone is within this of the card's limit: then its joules
# follow its time, and TFLOPS per watt ranks the kernels as TFLOPS does.
AT_CAP = 0.95


@dataclass(frozen=True)
class Energy:
    """Each step's best kernel and its cuBLAS alone after their turns: power, joules per GEMM and
    TFLOPS per watt (harness.energy); rows empty where the records predate it."""
    rows: list[dict] = field(default_factory=list)
    power_limit_w: float | None = None
    at_cap: bool = False                # every one of them drew the power cap
    watts_lo: float | None = None
    watts_hi: float | None = None
    at_cap_pct: float = 100 * AT_CAP
    under: list[str] = field(default_factory=list)      # the kernels under the cap, each with its watts


@dataclass(frozen=True)
class Bursts(Context):
    """The bursts slides: each GEMM in bursts from a rest, as public READMEs time them, beside the same
    GEMM sustained (rows empty: not measured); then energy per GEMM at the steady state."""
    result: dict                        # burst.gemm as a slide shows it (Records.record)
    energy: Energy
    rows: list[dict] = field(default_factory=list)      # each GEMM's burst, its clock, the same sustained, the gain
    params: dict | None = None
    gain_lo: float | None = None        # the lowest and highest burst over the same GEMM sustained
    gain_hi: float | None = None
    gain_range: str | None = None       # those gains as signed percentages
    faster: bool = False                # every burst, even its slowest sample, above the same GEMM sustained
    clock_said: str = ""                # where every burst whose clocks were read ran at a higher clock
    verdict: str = ""                   # what the bursts show where they are not all faster


def context(deck) -> Bursts:
    """Each GEMM in bursts from a rest (bench/burst.py) beside the same GEMM sustained: TFLOPS and the
    SMs' clock of each, the sustained power (a burst is shorter than NVML's power window), and the
    burst's gain; then energy per GEMM."""
    (r,) = deck.need("Bursts From a Rest", "burst.gemm")
    if not r["measured"] or r["failed"]:
        return Bursts(result=r, energy=energy(deck))
    rows = [burst_row(row) for row in r["record"]["rows"]]
    gains = [x["gain"] for x in rows if x["gain"]]
    paired = [x for x in rows if x["sustained"]]
    clocked = [x for x in paired if x["clock"] and x["sustained"]["sm_clock_mhz"]]
    faster = bool(gains) and all(x["lo"] > x["sustained"]["tflops"] for x in paired)
    gain_range = f"{100 * (min(gains) - 1):+.1f} to {100 * (max(gains) - 1):+.1f}%" if gains else None
    return Bursts(result=r, energy=energy(deck), rows=rows, params=r["record"]["params"],
                  gain_lo=min(gains, default=None), gain_hi=max(gains, default=None), gain_range=gain_range, faster=faster,
                  clock_said=", at a higher clock" if clocked and all(x["clock"] > x["sustained"]["sm_clock_mhz"] for x in clocked) else "",
                  verdict=verdict(gain_range) if not faster else "")


def burst_row(row: dict) -> dict:
    """A GEMM's burst: its TFLOPS, the slowest and fastest of its samples, its SMs' clock, and the
    same GEMM sustained with the burst's gain over it."""
    sustained = row.get("sustained")
    if sustained:            # the probe's clock of the window, where it read one
        sustained = {**sustained, "sm_clock_mhz": sustained.get("sm_clock_mhz")}
    samples = row["samples"]
    dims = dict(zip("mnk", row["shape"]))
    return {"title": row["title"], "shape": row["shape"], "tflops": row["tflops"],
            "lo": min(tflops_of(dims, {"median": s["ms"]}) for s in samples),
            "hi": max(tflops_of(dims, {"median": s["ms"]}) for s in samples),
            "clock": median_high(s.get("sm_clock_mhz") or 0 for s in samples) or None,
            "sustained": sustained, "gain": row["tflops"] / sustained["tflops"] if sustained else None,
            "check": row["check"]}


def verdict(gain_range: str | None) -> str:
    """What bursts that are not all faster than the steady state say, or that there is nothing to
    set them beside."""
    if gain_range is None:
        return "No GEMM here was also run sustained: the bursts stand alone."
    return (f"Bursts are not all faster than the steady state here ({gain_range}): "
            "on this GPU the burst figure is no reason a public figure differs.")


def energy(deck) -> Energy:
    """Each step's best kernel and its cuBLAS alone after their turns, and whether every one of them
    drew the power cap."""
    gemm, limit = deck.of(slides.gemm), deck.of(slides.device).power_limit_w
    rows = []
    for s in gemm.steps:
        best = s.best
        mine = best["record"].get("energy") if best["measured"] and not best["failed"] else None
        if not mine:
            continue
        theirs = (best["record"].get("cublas") or {}).get("energy")
        rows.append({"name": s.title, "index": s.index, "precision": s.precision.upper(), "kernel": mine,
                     "cublas": theirs})
    if not rows:
        return Energy()
    watts = [x[who]["watts"] for x in rows for who in ("kernel", "cublas") if x[who]]
    return Energy(rows=rows, power_limit_w=limit, at_cap=min(watts) >= AT_CAP * limit, watts_lo=min(watts), watts_hi=max(watts),
                  under=[f"{x['name']} ({x['kernel']['watts']:,.0f} W)" for x in rows if x["kernel"]["watts"] < AT_CAP * limit])


def energy_bars(en: Energy) -> str:
    """GFLOPS per watt of each step's best alone, its power and joules per GEMM, and the GFLOPS per
    watt of the cuBLAS it took turns with."""
    bars = [Bar(f"{x['index']}. {x['name']}", 1e3 * x["kernel"]["tflops_per_watt"], ACCENT,
                f"(at {x['kernel']['watts']:.0f} W, {x['kernel']['joules']:.2f} J a GEMM"
                + (f"; its cuBLAS {x['precision']}: {1e3 * x['cublas']['tflops_per_watt']:.1f})" if x["cublas"] else ")"))
            for x in en.rows]
    return bar_chart(bars, "GFLOPS per watt, each alone at the steady state (energy counter)", height=40 + 22 * len(bars) + 46)


def _clock(mhz) -> str:
    return f" at {mhz:,.0f} MHz" if mhz else ""


def bursts_figure(b: Bursts, width: int = 860) -> str:
    """Each GEMM a dumbbell on one TFLOPS axis: sustained (muted) joined to its burst from a rest (the
    accent), each dot labelled with its TFLOPS and its SMs' clock, the slower to its left, the faster
    (with the burst's gain) to its right."""
    rows, params = b.rows, b.params
    top, row_h, bottom, size = 58, 36, 30, 12
    h = top + row_h * len(rows) + bottom
    dwg = drawing(width, h)
    named = lambda r: f"{r['title']}, {'×'.join(map(str, r['shape']))}"       # the shape: rows differ in it
    left = max(text_width(named(r), size) for r in rows) + 24
    burst_label = lambda r: (f"{r['tflops']:,.1f}{_clock(r['clock'])}"
                             + (f", {100 * (r['gain'] - 1):+.1f}%" if r["gain"] else ", no sustained run")
                             + ("  check failed" if not r["check"]["passed"] else ""))
    sustained_label = lambda r: f"{r['sustained']['tflops']:,.1f}{_clock(r['sustained']['sm_clock_mhz'])}"

    def ends(r):
        """(value, label, colour, text colour) of the row's dots, the slower first."""
        burst = (r["tflops"], burst_label(r), ACCENT, INK if r["check"]["passed"] else REF)
        if not r["sustained"]:
            return [burst]
        held = (r["sustained"]["tflops"], sustained_label(r), MUTED, MUTED)
        return sorted([held, burst], key=lambda e: e[0])
    ticks = nice_ticks(max(e[0] for r in rows for e in ends(r)))
    # the widest scale that keeps each faster dot's label inside the figure
    scale = min([(width - 30 - left) / ticks[-1]]
                + [(width - 6 - 12 - text_width(ends(r)[-1][1], 11) - left) / ends(r)[-1][0] for r in rows])
    x_of = lambda v: left + v * scale
    text(dwg, (left, 18), "TFLOPS of each GEMM, and its SMs' clock", size=12, color=MUTED)
    legend = [(MUTED, "sustained: alone, at its steady state"),
              (ACCENT, f"burst: after {params['rest_s']:,.0f} s idle, {params['runs']} runs back to back")]
    x = left
    for color, label in legend:
        dwg.add(dwg.circle((x + 6, 36), 6, fill=color))
        text(dwg, (x + 18, 40), label, size=12)
        x += 18 + text_width(label, 12) + 28
    for t in ticks:
        if x_of(t) > width - 6:
            break
        dwg.add(dwg.line((x_of(t), top - 4), (x_of(t), h - bottom), stroke=GRID))
        text(dwg, (x_of(t), h - bottom + 18), f"{t:,.0f}", size=11, color=MUTED, anchor="middle")
    for i, r in enumerate(rows):
        y = top + (i + 0.5) * row_h
        text(dwg, (left - 12, y + 4), named(r), size=size, anchor="end")
        dots = ends(r)
        if len(dots) == 2:
            dwg.add(dwg.line((x_of(dots[0][0]), y), (x_of(dots[1][0]), y), stroke=GROUP, stroke_width=4))
            value, label, _, ink = dots[0]
            at = x_of(value)
            # left of its dot where it clears the names, else under the dumbbell
            if at - 10 - text_width(label, 11) > left:
                text(dwg, (at - 10, y + 4), label, size=11, color=ink, anchor="end")
            else:
                text(dwg, (at, y + 17), label, size=11, color=ink, anchor="middle")
        for value, _, color, _ in dots:
            dwg.add(dwg.circle((x_of(value), y), 6, fill=color))
        value, label, _, ink = dots[-1]
        text(dwg, (x_of(value) + 12, y + 4), label, size=11, color=ink)
    return dwg.tostring()


def draw(own: Bursts, deck) -> dict[str, str]:
    return {**({"bursts.svg": bursts_figure(own)} if own.rows else {}),
            **({"energy.svg": energy_bars(own.energy)} if own.energy.rows else {})}
