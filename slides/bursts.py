"""GEMMs as public READMEs time them and what they cost: each in bursts from a rest beside the same
GEMM sustained (bench/burst.py), and each step's best kernel and its cuBLAS alone, their power,
joules per GEMM and TFLOPS per watt (harness.energy)."""
from __future__ import annotations

from statistics import median_high

from slides.device import tflops_of
from slides.kit import ACCENT, Bar, bar_chart

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
        if sustained:            # the probe's clock of the window, where it read one
            sustained = {**sustained, "sm_clock_mhz": sustained.get("sm_clock_mhz")}
        samples = row["samples"]
        dims = dict(zip("mnk", row["shape"]))
        rows.append({"title": row["title"], "shape": row["shape"], "tflops": row["tflops"],
                     "lo": min(tflops_of(dims, {"median": s["ms"]}) for s in samples),
                     "hi": max(tflops_of(dims, {"median": s["ms"]}) for s in samples),
                     "clock": median_high(s.get("sm_clock_mhz") or 0 for s in samples) or None,
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


def context(deck) -> dict:
    return {"burst": bursts(deck), "energy": energies(deck)}


def draw(deck) -> dict[str, str]:
    en = deck["bursts"]["energy"]
    return {"energy.svg": energy_bars(en)} if en["rows"] else {}
