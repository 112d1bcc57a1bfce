"""Hopper's machinery measured alone (bench/machinery.py). wgmma: its rate against N in each
precision as a share of the tensor cores' dense rate per clock (slides/device.py), counted in each
warpgroup's own cycles, so no clock reading enters it; and its latency. The in-talk slide sits beside
the step that brings in wgmma (kernels.md.j2); this section's own slide is the backup table."""
from __future__ import annotations

from bench import catalogue
from slides.kit import PALETTE, Chart, Line, Series, line_chart

ID = "machinery.wgmma"
SLIDE = "wgmma Alone: Rate Against N"
# The target: at N = 256, at least this share of the dense peak in every precision.
HELD = 0.95


def _beside() -> str:
    """The step the wgmma slide follows: the first whose SASS must hold a wgmma."""
    return next(s.key for s in catalogue.STEPS if set(s.sass) & set(catalogue.WGMMA_OPCODES.values()))


def context(deck) -> dict:
    (r,) = deck.need(SLIDE, ID)
    rates = deck["device"]["rates"] or {}
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return {"id": ID, "wgmma": None}
    series, rows = {}, []
    for row in r["record"]["rows"]:
        peak = rates.get(row["precision"])
        best = max(row["rates"], key=lambda x: x["flop_per_sm_clock"])
        share = best["flop_per_sm_clock"] / peak if peak else None
        by_warpgroups = {x["warpgroups"]: x["flop_per_sm_clock"] / peak if peak else None for x in row["rates"]}
        rows.append({**row, "best": best, "share": share, "by_warpgroups": by_warpgroups,
                     "name": row["precision"].upper(), "atom": "×".join(map(str, row["atom"]))})
        series.setdefault(row["precision"], []).append((row["n"], share))
    widest = max(r_["n"] for r_ in rows)
    at_widest = [x for x in rows if x["n"] == widest]
    held = [x for x in at_widest if x["share"] is not None and x["share"] >= HELD]
    # the narrowest N at which each precision reaches the target: below it the tensor cores idle
    first = {p: min((n for n, s in pts if s is not None and s >= HELD), default=None) for p, pts in series.items()}
    narrowest = min(x["n"] for x in rows)
    return {"id": ID, "wgmma": {
        "rows": rows, "series": series, "widest": widest, "held_pct": 100 * HELD,
        "at_widest": at_widest, "held_everywhere": len(held) == len(at_widest),
        "short": [x["name"] for x in at_widest if x not in held], "first_held": first, "narrowest": narrowest,
        "warpgroups": r["record"]["params"]["warpgroups"], "beside": _beside(),
        "latency_at_widest": {x["name"]: x["latency_cycles"] for x in at_widest}}}


def rate_chart(m: dict) -> str:
    """Each precision's best rate against N, as a share of its dense peak per clock."""
    series = [Series(p.upper(), [(n, 100 * s) for n, s in pts if s is not None], PALETTE[i])
              for i, (p, pts) in enumerate(m["series"].items())]
    return line_chart(Chart("N, the wgmma's width (64 × N × 32 bytes of K)", "% of the dense peak per clock", series,
                            lines=[Line("y", m["held_pct"], f"{m['held_pct']:.0f}%")], x_log=True,
                            width=620, height=300))


def draw(deck) -> dict[str, str]:
    m = deck["machinery"]["wgmma"]
    return {"machinery_wgmma.svg": rate_chart(m)} if m else {}
