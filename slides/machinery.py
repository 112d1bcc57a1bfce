"""Hopper's machinery measured alone (bench/machinery/wgmma.py). wgmma: its rate against N in each
precision as a share of the tensor cores' dense rate per clock (slides/device.py), counted in each
warpgroup's own cycles, so no clock reading enters it; and its latency. The in-talk slide sits beside
the step that brings in wgmma (gemm.md.j2); this section's own slide is the backup table."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm import catalogue
from slides.kit import PALETTE, Chart, Line, Series, line_chart
from slides.records import Context
import slides.device

ID = "machinery.wgmma"
SLIDE = "wgmma Alone: Rate Against N"
# The target: at N = 256, at least this share of the dense peak in every precision.
HELD = 0.95


def _beside() -> str:
    """The step the wgmma slide follows: the first whose SASS must hold a wgmma."""
    return next(s.key for s in catalogue.STEPS if set(s.sass) & set(catalogue.WGMMA_OPCODES.values()))


@dataclass(frozen=True)
class Wgmma:
    """wgmma measured alone: each precision's rate against N as a share of the dense peak per clock,
    and what the talk's slide finds in it."""
    rows: list[dict]                    # each precision and N: its rate by warpgroups, best, share, latency
    series: dict[str, list[tuple]]      # each precision's (N, share of the peak), for the figure
    warpgroups: list[int]               # the warpgroup counts measured
    widest: int                         # the widest N measured
    held_pct: float                     # HELD, the target share
    shares_at_widest: str               # each precision's share there, or the one they all print alike
    widest_said: str                    # the slide's first finding: the shares at the widest N against the target
    reach_said: list[str]               # from which N each precision reaches the target, and what a narrower one costs
    # a wgmma's timing (_timing) at the N the first precision reaches the target from and at the widest,
    # where that N is narrower and each is one figure for every precision
    in_flight: dict | None
    latency_at_widest: str              # each precision's latency at the widest N
    beside: str                         # the step the talk's slide follows


@dataclass(frozen=True)
class Machinery(Context):
    """The machinery measured alone: wgmma's rate against N (None: not measured, or shares of a peak
    this GPU's rate table does not give)."""
    wgmma: Wgmma | None = None
    id: str = ID


def context(deck) -> Machinery:
    (r,) = deck.need(SLIDE, ID)
    rates = deck.of(slides.device).rates or {}
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return Machinery()
    if not all(rates.get(row["precision"]) for row in r["record"]["rows"]):
        return Machinery()       # shares of a peak this GPU's rate table does not give
    series, rows = {}, []
    for row in r["record"]["rows"]:
        peak = rates[row["precision"]]
        best = max(row["rates"], key=lambda x: x["flop_per_sm_clock"])
        share = best["flop_per_sm_clock"] / peak
        rows.append({**row, "best": best, "share": share,
                     "by_warpgroups": {x["warpgroups"]: x["flop_per_sm_clock"] / peak for x in row["rates"]},
                     "name": row["precision"].upper(), "mnk": row["atom"], "atom": "×".join(map(str, row["atom"]))})
        series.setdefault(row["precision"], []).append((row["n"], share))
    widest = max(r_["n"] for r_ in rows)
    narrowest = min(x["n"] for x in rows)
    at_widest = [x for x in rows if x["n"] == widest]
    # the narrowest N at which each precision reaches the target, and the precisions that share it
    first = {p: min((n for n, s in pts if s >= HELD), default=None) for p, pts in series.items()}
    reach = {}
    for p, n in first.items():
        if n is not None:
            reach.setdefault(n, []).append(p.upper())
    timing = {n: _timing([x for x in rows if x["n"] == n], rates) for n in sorted({narrowest, *first.values()} - {None})}
    return Machinery(wgmma=Wgmma(
        rows=rows, series=series, warpgroups=r["record"]["params"]["warpgroups"], widest=widest, held_pct=100 * HELD,
        shares_at_widest=shares_said(at_widest), widest_said=widest_said(at_widest, widest),
        reach_said=[reach_said(n, names, len(series), narrowest, timing.get(narrowest)) for n, names in reach.items()],
        in_flight=in_flight(next(iter(reach), None), widest, timing, _timing(at_widest, rates)),
        latency_at_widest="; ".join(f"{x['name']} {x['latency_cycles']:,.0f} cycles" for x in at_widest),
        beside=_beside()))


def _alike(rows: list[dict]) -> bool:
    """Whether every precision prints the same share (its lines coincide on the figure)."""
    return len(rows) > 1 and len({f"{100 * x['share']:.1f}" for x in rows}) == 1


def shares_said(at_widest: list[dict]) -> str:
    """The precisions' shares of the peak at one N: each, or the one they all print alike."""
    if _alike(at_widest):
        return f"every precision reaches {100 * at_widest[0]['share']:,.1f}%"
    return "each precision reaches " + ", ".join(f"{x['name']} {100 * x['share']:,.1f}%" for x in at_widest)


def widest_said(at_widest: list[dict], widest: int) -> str:
    """The shares at the widest N against the target: said once where they print alike."""
    short = [x["name"] for x in at_widest if x["share"] < HELD]
    if _alike(at_widest):
        return (f"At N = {widest} every precision reaches {100 * at_widest[0]['share']:,.1f}% of the dense peak per clock"
                f"{f', under {100 * HELD:,.0f}%' if short else ''}: one line.")
    shares = ", ".join(f"{x['name']} {100 * x['share']:,.1f}%" for x in at_widest)
    held = f"under {100 * HELD:,.0f}% in {', '.join(short)}" if short else f"at least {100 * HELD:,.0f}% in every precision"
    return f"At N = {widest}: {shares} of the dense peak per clock, {held}."


def _who(names: list[str], precisions: int) -> str:
    """The precisions that reach the target at one N, as the subject of "reach"."""
    if len(names) == precisions:
        return "Every precision reaches"
    return f"{names[0]} reaches" if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]} reach"


def reach_said(n: int, names: list[str], precisions: int, narrowest: int, at_narrowest: dict | None) -> str:
    """From which N these precisions reach the target, and what the narrowest wgmma costs below it."""
    reach = f"{_who(names, precisions)} {100 * HELD:,.0f}%"
    if n == narrowest:
        return f"{reach} at every N measured, down to {n}."
    if not at_narrowest:
        return f"{reach} from N = {n}: narrower wgmmas leave the tensor cores waiting."
    t = at_narrowest
    return (f"{reach} from N = {n}; at N = {narrowest} a wgmma still holds the tensor cores {t['held']} cycles "
            f"for {t['work']} cycles of work ({t['pct']}% of the peak).")


def in_flight(first: int | None, widest: int, timing: dict, at_widest: dict | None) -> dict | None:
    """A wgmma's timing at ``first``, the N the first precision reaches the target from, beside the
    widest N's: where it is narrower and both are one figure for every precision."""
    if first is None or first >= widest or not timing[first] or not at_widest:
        return None
    return {"first": first, "at_first": timing[first], "at_widest": at_widest}


def _timing(rows: list[dict], rates: dict) -> dict | None:
    """At one N: the cycles a wgmma holds the tensor cores (its FLOP over the measured rate per SM
    clock), the cycles its work would take at the peak, its share of the peak, its latency alone,
    and how many must be in flight to cover that latency; None where the precisions disagree (to
    the cycle, the percent), so that one figure speaks for all of them."""
    seen = set()
    for x in rows:
        flop = 2 * x["mnk"][0] * x["mnk"][1] * x["mnk"][2]
        held = flop / x["best"]["flop_per_sm_clock"]
        seen.add((round(held), round(flop / rates[x["precision"]]), round(100 * x["share"]),
                  round(x["latency_cycles"]), -(-round(x["latency_cycles"]) // max(1, round(held)))))
    if len(seen) != 1:
        return None
    held, work, pct, latency, in_flight = seen.pop()
    return {"held": held, "work": work, "pct": pct, "latency": latency, "in_flight": in_flight}


def rate_chart(m: Wgmma) -> str:
    """Each precision's best rate against N, as a share of its dense peak per clock. A line that
    coincides with one drawn before it (within half a point at every N) is dashed over it, so that
    each colour still shows."""
    drawn, series = [], []
    for i, (p, pts) in enumerate(m.series.items()):
        pts = [(n, 100 * s) for n, s in pts]
        under = sum(len(o) == len(pts) and all(n == q and abs(y - z) < 0.5 for (n, y), (q, z) in zip(pts, o))
                    for o in drawn)
        series.append(Series(p.upper(), pts, PALETTE[i], dash=f"6 {6 * under}" if under else None))
        drawn.append(pts)
    return line_chart(Chart("N, the wgmma's width (64 × N × 32 bytes of K)", "% of the dense peak per clock", series,
                            lines=[Line("y", m.held_pct, f"{m.held_pct:.0f}%")], x_log=True,
                            width=620, height=300))


def draw(own: Machinery, deck) -> dict[str, str]:
    return {"machinery_wgmma.svg": rate_chart(own.wgmma)} if own.wgmma else {}
