"""cuBLAS TF32 at the reference shape as each part of the run timed it: alone, in turns with each
kernel, in the sweep, in the tuner, and from a rest. One library and one shape: its figures differ
by what it ran beside, at what clock and power. This slide puts them side by side, so that each
other slide's cuBLAS figure reads against the rest."""
from __future__ import annotations

from statistics import median_high

from bench.gemm import catalogue
from slides.records import clock_during
from slides.device import tflops_of
from slides.kit import PALETTE, Bar, bar_chart
import slides.gemm

PRECISION, LAYOUT = "tf32", "b_kmajor"      # the Hopper kernels' operands: the cuBLAS most slides divide by
# the figures' spread per MHz of the SMs' clock under this: the clock accounts for the spread
PER_CLOCK_SAME = 0.03


def _power(rec: dict) -> float | None:
    during = (rec.get("telemetry") or {}).get("during")
    return during["power_w"]["median"] if during else None


def _row(regime: str, beside: str, tflops: list[float], clocks: list[float | None], measured: bool,
         power: list[float | None]) -> dict:
    # the clock each end of the range ran at, where every figure has its clock
    at = dict(zip(tflops, clocks)) if all(clocks) else {}
    clocks, power = [c for c in clocks if c], [p for p in power if p]
    return {"regime": regime, "beside": beside, "lo": min(tflops), "hi": max(tflops), "count": len(tflops),
            "lo_at_mhz": at.get(min(tflops)), "hi_at_mhz": at.get(max(tflops)),
            "clock_lo": min(clocks, default=None), "clock_hi": max(clocks, default=None), "clock_measured": measured,
            # a range where the clocks differ once rounded to a MHz
            "clock_range": bool(clocks) and round(max(clocks)) != round(min(clocks)),
            "power_lo": min(power, default=None), "power_hi": max(power, default=None),
            "per_mhz": [t / c for t, c in zip(tflops, clocks)] if len(clocks) == len(tflops) else []}


def context(deck) -> dict:
    gemm = deck.of(slides.gemm)
    shape = gemm["shape"]["dims"] if gemm["shape"] else None
    bid = catalogue.cublas_id(PRECISION, LAYOUT)
    (alone,) = deck.need("One cuBLAS, Several Figures", bid)
    rows = []
    if alone["tflops"] and not alone["failed"]:
        rows.append(_row("alone", "nothing: its own record", [alone["tflops"]], [alone["clock_mhz"]],
                         alone["clock_measured"], [_power(alone["record"])]))
    paired = [v for s in gemm["steps"] for v in s["variants"] if v["baseline"] and v["baseline"]["id"] == bid]
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
        return {"rows": [], "alone": alone}
    lo, hi = min(r["lo"] for r in rows), max(r["hi"] for r in rows)
    per_mhz = [x for r in rows for x in r["per_mhz"]]
    per_clock_spread = (max(per_mhz) / min(per_mhz) - 1) if len(per_mhz) == sum(r["count"] for r in rows) else None
    return {"rows": rows, "alone": alone, "shape": shape, "lo": lo, "hi": hi, "spread_pct": 100 * (hi / lo - 1),
            "per_clock_pct": per_clock_spread and 100 * per_clock_spread,
            "clock_explains": per_clock_spread is not None and per_clock_spread < PER_CLOCK_SAME,
            # per MHz further apart than in TFLOPS: what the clock would explain runs the other way
            "clock_widens": per_clock_spread is not None and per_clock_spread > hi / lo - 1,
            "per_clock_same_pct": 100 * PER_CLOCK_SAME, "layout_name": catalogue.LAYOUTS[LAYOUT],
            "precision": PRECISION.upper(), "turn_ms": paired[0]["record"]["params"]["turn_ms"] if paired else None,
            "trials": len(tune["record"].get("trials", [])) if tune["measured"] else None}


def regimes_figure(rg: dict) -> str:
    """A bar for each regime's figure, two (its slowest and fastest) for a regime of several, each with
    the SMs' clock it ran at: one colour a regime."""
    bars = []
    for i, r in enumerate(rg["rows"]):
        mhz = lambda c: (f"at {c:,.0f} MHz" + ("" if r["clock_measured"] else " (NVML)")) if c else ""
        color = PALETTE[i % len(PALETTE)]
        if r["count"] == 1:
            bars.append(Bar(r["regime"], r["lo"], color, mhz(r["lo_at_mhz"])))
        else:
            bars += [Bar(f"{r['regime']}: slowest of {r['count']}", r["lo"], color, mhz(r["lo_at_mhz"])),
                     Bar(f"{r['regime']}: fastest", r["hi"], color, mhz(r["hi_at_mhz"]))]
    shape = f", {'×'.join(map(str, rg['shape']))}" if rg["shape"] else ""
    return bar_chart(bars, f"cuBLAS {rg['precision']}, {rg['layout_name']}{shape}: TFLOPS by how the run timed it")


def draw(own, deck) -> dict[str, str]:
    rg = own
    return {"regimes.svg": regimes_figure(rg)} if rg["rows"] else {}
