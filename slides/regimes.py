"""cuBLAS TF32 at the reference shape as each part of the run timed it: alone, in turns with each
kernel, in the sweep, in the tuner, and from a rest. One library and one shape: its figures differ
by what it ran beside, at what clock and power. This slide puts them side by side, so that each
other slide's cuBLAS figure reads against the rest."""
from __future__ import annotations

from dataclasses import dataclass, field
from statistics import median_high

from bench.gemm import catalogue
from slides.fmt import fmt_range
from slides.records import Context, clock_during, span
from slides.device import tflops_of
from slides.kit import PALETTE, Bar, bar_chart
import slides.gemm

PRECISION, LAYOUT = "tf32", "b_kmajor"      # the Hopper kernels' operands: the cuBLAS most slides divide by
# the figures' spread per MHz of the SMs' clock under this: the clock accounts for the spread
PER_CLOCK_SAME = 0.03
# ... and from this rank correlation of the figures and their clocks up, the clock sets their order
CLOCK_ORDERED = 0.8


@dataclass(frozen=True)
class Regimes(Context):
    """The two slides of one cuBLAS's figures: cuBLAS TF32 at the reference shape as each part of the
    run timed it, a row a regime (alone, in turns, across sizes, in the tile search, after a rest),
    how far apart they are in TFLOPS and per MHz of the SMs' clock, and whether the clock accounts
    for it (rows empty: none measured)."""
    result: dict                        # cuBLAS alone as a slide shows it (Records.record)
    rows: list[dict] = field(default_factory=list)
    shape: list[int] | None = None
    lo: float | None = None             # the slowest and fastest figure of all the regimes
    hi: float | None = None
    spread_pct: float | None = None
    per_clock_pct: float | None = None  # the drawn figures' spread per MHz of the SMs' clock (each regime's ends)
    clock_clause: str = ""              # after the spread, whether the clock accounts for it ("; per MHz …")
    layout_name: str = catalogue.LAYOUTS[LAYOUT]
    precision: str = PRECISION.upper()
    turn_ms: float | None = None        # the turns' length on the GEMM slides
    trials: int | None = None           # the tuner's trials


def _power(rec: dict) -> float | None:
    during = (rec.get("telemetry") or {}).get("during")
    return during["power_w"]["median"] if during else None


NONE_SAID = "—"     # a table's cell where the run recorded nothing


def _row(regime: str, beside: str, tflops: list[float], clocks: list[float | None], measured: bool,
         power: list[float | None]) -> dict:
    # the clock each end of the range ran at, where every figure has its clock
    at = dict(zip(tflops, clocks)) if all(clocks) else {}
    clocks, power = [c for c in clocks if c], [p for p in power if p]
    return {"regime": regime, "beside": beside, "lo": min(tflops), "hi": max(tflops), "count": len(tflops),
            "lo_at_mhz": at.get(min(tflops)), "hi_at_mhz": at.get(max(tflops)),
            # as the table prints them: a range where a regime has several figures, else one
            "tflops": {"low": min(tflops), "high": max(tflops) if len(tflops) > 1 else min(tflops)},
            "clock_measured": measured,
            # the table's cells: a range, NVML's where the SMs' clock was not measured, or a dash
            "clocks_said": f"{fmt_range(span(clocks), 0)}{'' if measured else ' (NVML)'}" if clocks else NONE_SAID,
            # the power's range where its ends are more than half a watt apart
            "power_said": fmt_range({"low": min(power), "high": max(power) if max(power) > min(power) + 0.5 else min(power)}, 0)
            if power else NONE_SAID,
            # the figures the picture draws, its two ends, each with its clock
            "drawn": [(t, at[t]) for t in sorted({min(tflops), max(tflops)})] if at else []}


def _ranks(xs: list[float]) -> list[int]:
    order = sorted(range(len(xs)), key=xs.__getitem__)
    return [order.index(i) for i in range(len(xs))]


def per_clock_spread(drawn: list[tuple[float, float]]) -> float:
    """How far apart the figures drawn, (TFLOPS, MHz) each, lie per MHz of the SMs' clock."""
    per_mhz = [t / c for t, c in drawn]
    return max(per_mhz) / min(per_mhz) - 1


def clock_said(drawn: list[tuple[float, float]]) -> str:
    """Whether the SMs' clock accounts for the spread of the figures drawn, (TFLOPS, MHz) each: most
    of it where their work per MHz is level; where the faster ran at the higher clocks (their ranks
    agree, Spearman's rho at least CLOCK_ORDERED), that the clock sets the order, not in proportion;
    else that it does not explain it."""
    per_clock = per_clock_spread(drawn)
    if per_clock < PER_CLOCK_SAME:
        return f"per MHz of the SMs' clock {100 * per_clock:,.1f}% apart: the clock the power cap left accounts for most of it"
    n, ranks = len(drawn), [_ranks([x[i] for x in drawn]) for i in (0, 1)]
    rho = 1 - 6 * sum((a - b) ** 2 for a, b in zip(*ranks)) / (n * (n * n - 1)) if n > 1 else 0
    clocks = [c for _, c in drawn]
    if rho >= CLOCK_ORDERED:
        return (f"the faster ran at the higher clocks ({min(clocks):,.0f} to {max(clocks):,.0f} MHz, "
                f"{100 * (max(clocks) / min(clocks) - 1):,.0f}% apart), though not in proportion: per MHz {100 * per_clock:,.1f}% apart")
    return f"per MHz of the SMs' clock {100 * per_clock:,.1f}% apart: the clock does not explain it"


def context(deck) -> Regimes:
    gemm = deck.of(slides.gemm)
    shape = gemm.shape["dims"] if gemm.shape else None
    bid = catalogue.cublas_id(PRECISION, LAYOUT)
    (alone,) = deck.need("One cuBLAS, Several Figures", bid)
    rows = []
    if alone["tflops"] and not alone["failed"]:
        rows.append(_row("alone", "nothing: its own record", [alone["tflops"]], [alone["clock_mhz"]],
                         alone["clock_measured"], [_power(alone["record"])]))
    paired = [v for s in gemm.steps for v in s.variants if v["baseline"] and v["baseline"]["id"] == bid]
    if paired:
        rows.append(_row("in turns", f"each of {len(paired)} kernels (and the kernel before it)",
                         [v["baseline_tflops"] for v in paired], [v["clock_mhz"] for v in paired],
                         all(v["clock_measured"] for v in paired), [_power(v["record"]) for v in paired]))
    if shape:
        swept = [(r, row) for r in (deck.record(s.sweep_id) for s in catalogue.SWEPT) if r["measured"] and not r["failed"]
                 for row in r["record"]["rows"] if row["shape"] == shape and row["outcome"] == "correct"
                 and f"cublas_{LAYOUT}" in row["tflops"] and row["tflops"]["kernel"]]
        swept = [(r, row) for r, row in swept if r["record"]["params"]["precision"] == PRECISION]
        if swept:
            times = [row["time_ms"][f"cublas_{LAYOUT}"] for _, row in swept]
            rows.append(_row("across sizes", f"each step's best kernel, in {len(swept)} size sweeps",
                             [row["tflops"][f"cublas_{LAYOUT}"] for _, row in swept],
                             [t.get("sm_clock_mhz") for t in times], all("sm_clock_mhz" in t for t in times),
                             [_power(r["record"]) for r, _ in swept]))
    tune = deck.record("tune.persistent")
    if tune["measured"] and not tune["failed"] and "final" in tune["record"]:
        t = tune["record"]["final"]["cublas_time_ms"]
        params = tune["record"]["params"]
        rows.append(_row("tile search", "the search's winner and the hand-picked tile", [tflops_of(params, t)],
                         [t.get("sm_clock_mhz") or clock_during(tune["record"])], "sm_clock_mhz" in t, [_power(tune["record"])]))
    settle = deck.record("settle.headline")
    if settle["measured"] and not settle["failed"]:
        p = settle["record"]["params"]
        tail = settle["record"]["series"]["cublas"]["rows"][-10:]       # its last ten samples: warm, at the cap
        key = "sm_clock_measured_mhz" if all("sm_clock_measured_mhz" in r for r in tail) else "sm_clock_mhz"
        rows.append(_row("after a rest", f"nothing, {p['duration_s']:g} s from a {p['rest_s']:g} s rest (its last seconds)",
                         [tflops_of(p, {"median": median_high(r["ms"] for r in tail)})],
                         [median_high(r[key] for r in tail)], key != "sm_clock_mhz",
                         [median_high(r["power_w"] for r in tail)]))
    if not rows:
        return Regimes(result=alone)
    lo, hi = min(r["lo"] for r in rows), max(r["hi"] for r in rows)
    drawn = [x for r in rows for x in r["drawn"]] if all(r["drawn"] for r in rows) else []
    return Regimes(result=alone, rows=rows, shape=shape, lo=lo, hi=hi, spread_pct=100 * (hi / lo - 1),
                   per_clock_pct=100 * per_clock_spread(drawn) if drawn else None,
                   clock_clause=f"; {clock_said(drawn)}" if drawn else "",
                   turn_ms=paired[0]["record"]["params"]["turn_ms"] if paired else None,
                   trials=len(tune["record"].get("trials", [])) if tune["measured"] else None)


def regimes_figure(rg: Regimes) -> str:
    """A bar for each regime's figure, two (its slowest and fastest) for a regime of several, each with
    the SMs' clock it ran at: one colour a regime."""
    bars = []
    for i, r in enumerate(rg.rows):
        mhz = lambda c: (f"at {c:,.0f} MHz" + ("" if r["clock_measured"] else " (NVML)")) if c else ""
        color = PALETTE[i % len(PALETTE)]
        if r["count"] == 1:
            bars.append(Bar(r["regime"], r["lo"], color, mhz(r["lo_at_mhz"])))
        else:
            bars += [Bar(f"{r['regime']}: slowest of {r['count']}", r["lo"], color, mhz(r["lo_at_mhz"])),
                     Bar(f"{r['regime']}: fastest", r["hi"], color, mhz(r["hi_at_mhz"]))]
    shape = f", {'×'.join(map(str, rg.shape))}" if rg.shape else ""
    return bar_chart(bars, f"cuBLAS {rg.precision}, {rg.layout_name}{shape}: TFLOPS by how the run timed it")


def draw(own: Regimes, deck) -> dict[str, str]:
    return {"regimes.svg": regimes_figure(own)} if own.rows else {}
