"""Theoretical peaks: SMs x per-SM rate x clock (slides/device.py), at the maximum SM clock and at
the clock the SMs ran at while cuBLAS ran (measured; NVML's median sample in records without it),
beside the fastest cuBLAS layout measured; drawn as the ladder of precisions, each precision's three
figures side by side."""
from __future__ import annotations

from slides.device import PRECISION_NAMES, peak_tflops
from slides.kit import grouped_bars
import slides.device
import slides.gemm

PEAKS_HEIGHT = 290         # on the slide with two lines of text under it


def context(deck) -> dict:
    device = deck.of(slides.device)
    rows = []
    for p, r in (device["rates"] or {}).items():
        peak = peak_tflops(device, r, device["sm_clock_max_mhz"])
        runs = [c for c in deck.of(slides.gemm)["cublas_rows"] if c["precision"] == p and c["tflops"] and not c["failed"]]
        best = max(runs, key=lambda c: c["tflops"]) if runs else None
        clock = best["clock_mhz"] if best else None
        run_peak = peak_tflops(device, r, clock) if clock else None
        rows.append({"precision": p, "name": PRECISION_NAMES[p], "per_sm_per_clk": r, "tflops_max_clock": peak,
                     "clock_mhz": clock, "clock_measured": bool(best and best["clock_measured"]),
                     "tflops_run_clock": run_peak, "measured": best,
                     "pct_of_peak": 100 * best["tflops"] / peak if best else None,
                     "pct_of_run_peak": 100 * best["tflops"] / run_peak if run_peak else None})
    by = {row["precision"]: row for row in rows}
    # the ladder: the tensor cores' rate over the CUDA cores', and each narrower precision's over the one before
    tensor = [row for row in rows if row["precision"] != "fp32"]
    steps = [b["per_sm_per_clk"] / a["per_sm_per_clk"] for a, b in zip(tensor, tensor[1:])]
    ran = [row for row in rows if row["tflops_run_clock"]]
    capped = [row for row in tensor if row["measured"]
              and "sw_power_cap" in (((row["measured"]["record"].get("telemetry") or {}).get("during") or {}).get("throttle_reasons") or [])]
    return {"rows": rows, "by": by, "tf32_clock_mhz": by["tf32"]["clock_mhz"] if "tf32" in by else None,
            "tf32_clock_measured": "tf32" in by and by["tf32"]["clock_measured"],
            "tensor_over_fp32": tensor[0]["per_sm_per_clk"] / by["fp32"]["per_sm_per_clk"] if tensor and "fp32" in by else None,
            "first_tensor": tensor[0]["precision"] if tensor else None, "last_tensor": tensor[-1]["precision"] if tensor else None,
            "ladder": tensor[-1]["per_sm_per_clk"] / tensor[0]["per_sm_per_clk"] if len(tensor) > 1 else None,
            # each narrower precision twice the one before: the tensor cores' rate doubles down the ladder
            "doubles": bool(steps) and all(x == 2 for x in steps),
            # the clocks cuBLAS ran the tensor cores at, and whether every one was under the maximum
            "tensor_clocks": [row["clock_mhz"] for row in tensor if row["clock_mhz"]],
            "tensor_below_max": any(row["clock_mhz"] for row in tensor)
            and all(row["clock_mhz"] < device["sm_clock_max_mhz"] for row in tensor if row["clock_mhz"]),
            "power_capped": bool(capped),
            "run_pct": [row["pct_of_run_peak"] for row in ran if row["precision"] != "fp32"],
            "max_pct": [row["pct_of_peak"] for row in rows if row["pct_of_peak"]]}


def peaks_figure(peaks: dict, clock_mhz: float) -> str:
    """Each precision's dense peak at the maximum clock, at the clock the SMs ran at under cuBLAS, and
    cuBLAS's fastest alone: a series only where some precision has it."""
    rows = peaks["rows"]
    series = [(f"Peak at the maximum clock ({clock_mhz:,.0f} MHz)", [r["tflops_max_clock"] for r in rows]),
              ("Peak at the clock the SMs ran at under cuBLAS (each precision's own)", [r["tflops_run_clock"] for r in rows]),
              ("cuBLAS measured, alone (its faster layout)", [r["measured"]["tflops"] if r["measured"] else None for r in rows])]
    series = [s for s in series if any(s[1])]
    return grouped_bars([r["name"] for r in rows], series, "Dense TFLOPS by precision: the peak, and cuBLAS measured", digits=0,
                        height=PEAKS_HEIGHT)


def draw(own, deck) -> dict[str, str]:
    peaks = own
    return {"peaks.svg": peaks_figure(peaks, deck.of(slides.device)["sm_clock_max_mhz"])} if peaks["rows"] else {}
