"""Hopper's machinery measured alone (bench/machinery/wgmma.py). wgmma: its rate against N in each
precision as a share of the tensor cores' dense rate per clock (slides/device.py), counted in each
warpgroup's own cycles, so no clock reading enters it; and its latency. The in-talk slide sits beside
the step that brings in wgmma (gemm.md.j2); this section's own slide is the backup table."""
from __future__ import annotations

from bench.gemm import catalogue
from slides.kit import PALETTE, Chart, Line, Series, line_chart
import slides.device

ID = "machinery.wgmma"
SLIDE = "wgmma Alone: Rate Against N"
# The target: at N = 256, at least this share of the dense peak in every precision.
HELD = 0.95


def _beside() -> str:
    """The step the wgmma slide follows: the first whose SASS must hold a wgmma."""
    return next(s.key for s in catalogue.STEPS if set(s.sass) & set(catalogue.WGMMA_OPCODES.values()))


def context(deck) -> dict:
    (r,) = deck.need(SLIDE, ID)
    rates = deck.of(slides.device)["rates"] or {}
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return {"id": ID, "wgmma": None}
    if not all(rates.get(row["precision"]) for row in r["record"]["rows"]):
        return {"id": ID, "wgmma": None}       # shares of a peak this GPU's rate table does not give
    series, rows = {}, []
    for row in r["record"]["rows"]:
        peak = rates.get(row["precision"])
        best = max(row["rates"], key=lambda x: x["flop_per_sm_clock"])
        share = best["flop_per_sm_clock"] / peak if peak else None
        by_warpgroups = {x["warpgroups"]: x["flop_per_sm_clock"] / peak if peak else None for x in row["rates"]}
        rows.append({**row, "best": best, "share": share, "by_warpgroups": by_warpgroups,
                     "name": row["precision"].upper(), "mnk": row["atom"], "atom": "×".join(map(str, row["atom"]))})
        series.setdefault(row["precision"], []).append((row["n"], share))
    widest = max(r_["n"] for r_ in rows)
    narrowest = min(x["n"] for x in rows)
    at_widest = [x for x in rows if x["n"] == widest]
    held = [x for x in at_widest if x["share"] is not None and x["share"] >= HELD]
    # the narrowest N at which each precision reaches the target, and the precisions that share it
    first = {p: min((n for n, s in pts if s is not None and s >= HELD), default=None) for p, pts in series.items()}
    reach = {}
    for p, n in first.items():
        if n is not None:
            reach.setdefault(n, []).append(p.upper())
    timing = {n: _timing([x for x in rows if x["n"] == n], rates) for n in sorted({narrowest, *first.values()} - {None})}
    return {"id": ID, "wgmma": {
        "rows": rows, "series": series, "widest": widest, "held_pct": 100 * HELD,
        "at_widest": at_widest, "held_everywhere": len(held) == len(at_widest),
        # where every precision prints the same share at the widest N, it is said once: their lines coincide
        "alike_at_widest": (at_widest[0]["share"] if len(at_widest) > 1 and all(x["share"] is not None for x in at_widest)
                            and len({f"{100 * x['share']:.1f}" for x in at_widest}) == 1 else None),
        "short": [x["name"] for x in at_widest if x not in held], "reach": reach, "narrowest": narrowest,
        "all_precisions": len(series), "timing": timing, "timing_widest": _timing(at_widest, rates),
        "warpgroups": r["record"]["params"]["warpgroups"], "beside": _beside(),
        "latency_at_widest": {x["name"]: x["latency_cycles"] for x in at_widest}}}


def _timing(rows: list[dict], rates: dict) -> dict | None:
    """At one N: the cycles a wgmma holds the tensor cores (its FLOP over the measured rate per SM
    clock), the cycles its work would take at the peak, its share of the peak, its latency alone,
    and how many must be in flight to cover that latency; None where the precisions disagree (to
    the cycle, the percent), so that one figure speaks for all of them."""
    seen = set()
    for x in rows:
        flop = 2 * x["mnk"][0] * x["mnk"][1] * x["mnk"][2]
        held = flop / x["best"]["flop_per_sm_clock"]
        peak = rates.get(x["precision"])
        seen.add((round(held), round(flop / peak) if peak else None, round(100 * x["share"]) if x["share"] else None,
                  round(x["latency_cycles"]), -(-round(x["latency_cycles"]) // max(1, round(held)))))
    if len(seen) != 1:
        return None
    held, work, pct, latency, in_flight = seen.pop()
    return {"held": held, "work": work, "pct": pct, "latency": latency, "in_flight": in_flight}


def rate_chart(m: dict) -> str:
    """Each precision's best rate against N, as a share of its dense peak per clock. A line that
    coincides with one drawn before it (within half a point at every N) is dashed over it, so that
    each colour still shows."""
    drawn, series = [], []
    for i, (p, pts) in enumerate(m["series"].items()):
        pts = [(n, 100 * s) for n, s in pts if s is not None]
        under = sum(len(o) == len(pts) and all(n == q and abs(y - z) < 0.5 for (n, y), (q, z) in zip(pts, o))
                    for o in drawn)
        series.append(Series(p.upper(), pts, PALETTE[i], dash=f"6 {6 * under}" if under else None))
        drawn.append(pts)
    return line_chart(Chart("N, the wgmma's width (64 × N × 32 bytes of K)", "% of the dense peak per clock", series,
                            lines=[Line("y", m["held_pct"], f"{m['held_pct']:.0f}%")], x_log=True,
                            width=620, height=300))


def draw(own, deck) -> dict[str, str]:
    m = own["wgmma"]
    return {"machinery_wgmma.svg": rate_chart(m)} if m else {}
