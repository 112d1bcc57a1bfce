"""Theoretical peaks: SMs x per-SM rate x clock (slides/device.py), at the maximum SM clock and at
the clock the SMs ran at while cuBLAS ran (measured; NVML's median sample in records without it),
beside the fastest cuBLAS layout measured."""
from __future__ import annotations

from slides.device import PRECISION_NAMES, peak_tflops


def context(deck) -> dict:
    device = deck["device"]
    rows = []
    for p, r in (device["rates"] or {}).items():
        peak = peak_tflops(device, r, device["sm_clock_max_mhz"])
        runs = [c for c in deck["gemm"]["cublas_rows"] if c["precision"] == p and c["tflops"] and not c["failed"]]
        best = max(runs, key=lambda c: c["tflops"]) if runs else None
        clock = best["clock_mhz"] if best else None
        run_peak = peak_tflops(device, r, clock) if clock else None
        rows.append({"precision": p, "name": PRECISION_NAMES[p], "per_sm_per_clk": r, "tflops_max_clock": peak,
                     "clock_mhz": clock, "clock_measured": bool(best and best["clock_measured"]),
                     "tflops_run_clock": run_peak, "measured": best,
                     "pct_of_peak": 100 * best["tflops"] / peak if best else None,
                     "pct_of_run_peak": 100 * best["tflops"] / run_peak if run_peak else None})
    by = {row["precision"]: row for row in rows}
    return {"rows": rows, "by": by, "tf32_clock_mhz": by["tf32"]["clock_mhz"] if "tf32" in by else None,
            "tf32_clock_measured": "tf32" in by and by["tf32"]["clock_measured"]}
