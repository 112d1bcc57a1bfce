"""cuBLAS TF32 at the reference shape as each part of the run timed it: alone, in turns with each
kernel, in the sweep, in the tuner, and from a rest. One library and one shape: its figures differ
by what it ran beside, at what clock and power. This slide puts them side by side, so that each
other slide's cuBLAS figure reads against the rest."""
from __future__ import annotations

from statistics import median_high

from bench import catalogue, cublas as cublas_lib
from slides.deck import clock_during, clock_measured
from slides.device import tflops_of
from slides.kit import ACCENT, Bar, bar_chart

PRECISION, LAYOUT = "tf32", "b_kmajor"      # the Hopper kernels' operands: the cuBLAS most slides divide by
# the figures' spread per MHz of the SMs' clock under this: the clock accounts for the spread
PER_CLOCK_SAME = 0.03


def _power(rec: dict) -> float | None:
    during = (rec.get("telemetry") or {}).get("during")
    return during["power_w"]["median"] if during else None


def _row(regime: str, beside: str, tflops: list[float], clocks: list[float | None], measured: bool,
         power: list[float | None]) -> dict:
    clocks, power = [c for c in clocks if c], [p for p in power if p]
    return {"regime": regime, "beside": beside, "lo": min(tflops), "hi": max(tflops), "count": len(tflops),
            "clock_lo": min(clocks, default=None), "clock_hi": max(clocks, default=None), "clock_measured": measured,
            "power_lo": min(power, default=None), "power_hi": max(power, default=None),
            "per_mhz": [t / c for t, c in zip(tflops, clocks)] if len(clocks) == len(tflops) else []}


def context(deck) -> dict:
    gemm = deck["gemm"]
    shape = gemm["shape"]["dims"] if gemm["shape"] else None
    bid = cublas_lib.bench_id(PRECISION, LAYOUT)
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
            rows.append(_row("sweep", f"each step's best kernel, {len(swept)} sweeps",
                             [row["tflops"][f"cublas_{LAYOUT}"] for _, row in swept],
                             [t.get("sm_clock_mhz") for t in times], all("sm_clock_mhz" in t for t in times),
                             [_power(r["record"]) for r, _ in swept]))
    tune = deck.record("tune.persistent")
    if tune["measured"] and not tune["failed"] and "final" in tune["record"]:
        t = tune["record"]["final"]["cublas_time_ms"]
        params = tune["record"]["params"]
        rows.append(_row("tuner", "the winner and the hand-picked tile", [tflops_of(params, t)],
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
    extra = {"burst": bursts(deck), "energy": energies(deck)}
    if not rows:
        return {"rows": [], "alone": alone, **extra}
    lo, hi = min(r["lo"] for r in rows), max(r["hi"] for r in rows)
    per_mhz = [x for r in rows for x in r["per_mhz"]]
    per_clock_spread = (max(per_mhz) / min(per_mhz) - 1) if len(per_mhz) == sum(r["count"] for r in rows) else None
    return {"rows": rows, "alone": alone, "shape": shape, "lo": lo, "hi": hi, "spread_pct": 100 * (hi / lo - 1),
            "per_clock_pct": per_clock_spread and 100 * per_clock_spread,
            "clock_explains": per_clock_spread is not None and per_clock_spread < PER_CLOCK_SAME,
            "per_clock_same_pct": 100 * PER_CLOCK_SAME, "layout_name": cublas_lib.LAYOUTS[LAYOUT],
            "precision": PRECISION.upper(), "turn_ms": paired[0]["record"]["params"]["turn_ms"] if paired else None,
            "trials": len(tune["record"].get("trials", [])) if tune["measured"] else None, **extra}



# A GEMM "draws the cap" where its power alone is within this of the card's limit: then its joules
# follow its time, and TFLOPS per watt ranks the kernels as TFLOPS does.
AT_CAP = 0.95


def bursts(deck) -> dict:
    """Each GEMM in bursts from a rest, as public READMEs time them (bench/burst.py), beside the
    same GEMM sustained: TFLOPS and the SMs' clock of each, the sustained power (a burst is shorter
    than NVML's power window), and the burst's gain."""
    (r,) = deck.need("Bursts From a Rest", "burst.gemm")
    if not r["measured"] or r["failed"]:
        return {"rows": [], "record": r}
    rows = []
    for row in r["record"]["rows"]:
        sustained = row.get("sustained")
        samples = row["samples"]
        dims = dict(zip("mnk", row["shape"]))
        rows.append({"title": row["title"], "shape": row["shape"], "tflops": row["tflops"],
                     "lo": min(tflops_of(dims, {"median": s["ms"]}) for s in samples),
                     "hi": max(tflops_of(dims, {"median": s["ms"]}) for s in samples),
                     "clock": median_high(s["sm_clock_mhz"] or 0 for s in samples) or None,
                     "sustained": sustained, "gain": row["tflops"] / sustained["tflops"] if sustained else None,
                     "check": row["check"]})
    gains = [x["gain"] for x in rows if x["gain"]]
    return {"rows": rows, "record": r, "params": r["record"]["params"],
            "gain_lo": min(gains, default=None), "gain_hi": max(gains, default=None),
            "faster": bool(gains) and min(gains) > 1}


def energies(deck) -> dict:
    """Each step's best kernel and its cuBLAS alone after their turns: power, joules per GEMM and
    TFLOPS per watt (harness.energy), and whether every one of them drew the power cap."""
    gemm, limit = deck["gemm"], deck["device"]["power_limit_w"]
    rows = []
    for s in gemm["steps"]:
        best = s["best"]
        mine = best["record"].get("energy") if best["measured"] and not best["failed"] else None
        if not mine:
            continue
        theirs = (best["record"].get("cublas") or {}).get("energy")
        rows.append({"name": s["title"], "index": s["index"], "precision": s["precision"].upper(), "kernel": mine,
                     "cublas": theirs})
    if not rows:
        return {"rows": []}
    watts = [x[who]["watts"] for x in rows for who in ("kernel", "cublas") if x[who]]
    return {"rows": rows, "power_limit_w": limit, "at_cap": min(watts) >= AT_CAP * limit,
            "watts_lo": min(watts), "watts_hi": max(watts), "at_cap_pct": 100 * AT_CAP,
            "under": [x for x in rows if x["kernel"]["watts"] < AT_CAP * limit]}


def energy_bars(en: dict) -> str:
    """GFLOPS per watt of each step's best alone, its power and joules per GEMM, and the GFLOPS per
    watt of the cuBLAS it took turns with."""
    bars = [Bar(f"{x['index']}. {x['name']}", 1e3 * x["kernel"]["tflops_per_watt"], ACCENT,
                f"(at {x['kernel']['watts']:.0f} W, {x['kernel']['joules']:.2f} J a GEMM"
                + (f"; its cuBLAS {x['precision']}: {1e3 * x['cublas']['tflops_per_watt']:.1f})" if x["cublas"] else ")"))
            for x in en["rows"]]
    return bar_chart(bars, "GFLOPS per watt, each alone at the steady state (energy counter)", height=40 + 22 * len(bars) + 46)


def draw(deck) -> dict[str, str]:
    en = deck["regimes"]["energy"]
    return {"energy.svg": energy_bars(en)} if en["rows"] else {}
