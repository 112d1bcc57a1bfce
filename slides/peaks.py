"""Theoretical peaks: SMs x per-SM rate x clock (slides/device.py), at the maximum SM clock and at
the clock the SMs ran at while cuBLAS ran (measured; NVML's median sample in records without it),
beside the fastest cuBLAS layout measured; drawn as the ladder of precisions, each precision's three
figures side by side. The backup table adds the memory hierarchy: each level's latency beside the
bandwidth measured there."""
from __future__ import annotations

from dataclasses import dataclass

from slides.device import PRECISION_NAMES, peak_tflops
from slides.kit import grouped_bars
from slides.records import Context, span
import slides.device
import slides.gemm
import slides.hbm
import slides.l2
import slides.memory_latency

PEAKS_HEIGHT = 290         # on the slide with two lines of text under it

# The clocks cuBLAS ran the tensor cores at against the maximum: under it, held there by the power
# cap (NVML's throttle reason), or not; as the slide says it, and as its backup table's notes do.
CLOCK_AGAINST_MAX = {"capped": "held under the maximum by the power cap", "under": "under the maximum",
                     "reached": "up to the maximum"}
TABLE_NOTE = {"capped": "At the maximum clock the tensor cores' peak is out of reach: under load the power cap holds the "
                        "clock lower, so the table also gives the peak at the clock the SMs ran at while cuBLAS ran.",
              "under": "At the maximum clock the tensor cores' peak is out of reach: under load the clock stays lower, "
                       "so the table also gives the peak at the clock the SMs ran at while cuBLAS ran.",
              "reached": "The table also gives the peak at the clock the SMs ran at while cuBLAS ran."}
OUT_OF_REACH = "Under load the clock stays below the maximum, so the tensor cores' peak at the maximum clock is out of reach."
# How the tensor cores' rate grows past the first tensor-core precision, where each is twice the one
# before and where not (the factor from the first to the last filled in).
LADDER = {True: "doubling with each narrower precision", False: "{ladder:,.0f}× from {first} to {last}"}
# How the clock TF32's run-clock peak is taken at was read, by whether the record measured it.
CLOCK_READ = {True: "measured, each SM's cycle counter read against the GPU's global timer around every timed sample, "
                    "not NVML's sampled clock",
              False: "NVML's median sample (these records predate the measured clock)"}


@dataclass(frozen=True)
class Peaks(Context):
    """The peaks slides: each precision's dense peak at the maximum clock and at the clock the SMs
    ran at under cuBLAS, beside cuBLAS's fastest (no rows: this GPU has no per-SM rates); the ladder
    of precisions; the clocks under cuBLAS against the maximum; and the memory hierarchy."""
    rows: list[dict]
    by: dict[str, dict]                 # the rows by precision
    tf32_clock_mhz: float | None        # the clock cuBLAS TF32 ran at
    tf32_clock_read: str                # how, in CLOCK_READ's words
    # the first tensor-core precision's rate over FP32's, and how the rate grows down the ladder from
    # there, in LADDER's words (None: no rows)
    tensor_over_fp32: float | None
    first_tensor: str | None
    ladder: str | None
    # what the notes add to how a bar is made: TF32's peaks and cuBLAS's figure, and whether the clock
    # under load leaves the peak at the maximum clock out of reach
    bar_notes: list[str]
    tensor_clocks: dict | None          # the span of the clocks cuBLAS ran the tensor cores at
    clock_against_max: str              # in CLOCK_AGAINST_MAX's words
    table_note: str                     # in TABLE_NOTE's
    run_pct: dict | None                # the span of cuBLAS's shares of the tensor cores' peak at its clock
    hbm_copy: dict | None               # the best HBM copy (slides/hbm.py), the table's HBM row
    hierarchy: list[dict] | None        # each level's latency and the bandwidth measured there, said (None: not measured)
    layouts_said: str                   # the notes' sentence on the B layout each precision's cuBLAS figure ran with ("" where none ran)


def context(deck) -> Peaks:
    device = deck.of(slides.device)
    rows = [peak_row(device, p, rate, deck.of(slides.gemm).cublas_rows) for p, rate in (device.rates or {}).items()]
    by = {row["precision"]: row for row in rows}
    tensor = [row for row in rows if row["precision"] != "fp32"]
    clocks = [row["clock_mhz"] for row in tensor if row["clock_mhz"]]
    below_max = bool(clocks) and all(clock < device.sm_clock_max_mhz for clock in clocks)
    against_max = ("capped" if any(power_capped(row) for row in tensor) else "under") if below_max else "reached"
    tf32 = by.get("tf32")
    return Peaks(
        rows=rows, by=by, tf32_clock_mhz=tf32["clock_mhz"] if tf32 else None,
        tf32_clock_read=CLOCK_READ[bool(tf32 and tf32["clock_measured"])],
        tensor_over_fp32=tensor[0]["per_sm_per_clk"] / by["fp32"]["per_sm_per_clk"] if tensor and "fp32" in by else None,
        first_tensor=tensor[0]["precision"] if tensor else None, ladder=ladder_said(tensor) if tensor else None,
        bar_notes=[*([tf32_said(tf32)] if tf32 and tf32["tflops_run_clock"] else []), *([OUT_OF_REACH] if below_max else [])],
        tensor_clocks=span(clocks), clock_against_max=CLOCK_AGAINST_MAX[against_max], table_note=TABLE_NOTE[against_max],
        run_pct=span(row["pct_of_run_peak"] for row in tensor if row["tflops_run_clock"]),
        hbm_copy=deck.of(slides.hbm).best, hierarchy=hierarchy(deck),
        layouts_said=layouts_said([row for row in tensor if row["measured"]]))


def layouts_said(measured: list[dict]) -> str:
    """The notes' sentence on the B layout of each precision's cuBLAS figure ("" where none ran)."""
    if not measured:
        return ""
    each = "; ".join(f"{row['precision'].upper()}, {row['measured']['layout_name']}" for row in measured)
    return f"cuBLAS's figures are each precision's fastest B layout measured: {each}."


def peak_row(device: slides.device.Device, precision: str, rate: int, cublas_rows: list[dict]) -> dict:
    """One precision's peak at the maximum clock, and at the clock its fastest cuBLAS run ran at."""
    peak = peak_tflops(device, rate, device.sm_clock_max_mhz)
    runs = [c for c in cublas_rows if c["precision"] == precision and c["tflops"] and not c["failed"]]
    best = max(runs, key=lambda c: c["tflops"]) if runs else None
    clock = best["clock_mhz"] if best else None
    run_peak = peak_tflops(device, rate, clock) if clock else None
    return {"precision": precision, "name": PRECISION_NAMES[precision], "per_sm_per_clk": rate, "tflops_max_clock": peak,
            "clock_mhz": clock, "clock_measured": bool(best and best["clock_measured"]),
            "tflops_run_clock": run_peak, "measured": best,
            "pct_of_peak": 100 * best["tflops"] / peak if best else None,
            "pct_of_run_peak": 100 * best["tflops"] / run_peak if run_peak else None}


def ladder_said(tensor: list[dict]) -> str:
    """How the tensor cores' rate grows down the ladder of precisions, in LADDER's words."""
    steps = [b["per_sm_per_clk"] / a["per_sm_per_clk"] for a, b in zip(tensor, tensor[1:])]
    first, last = tensor[0], tensor[-1]
    return LADDER[bool(steps) and all(x == 2 for x in steps)].format(
        ladder=last["per_sm_per_clk"] / first["per_sm_per_clk"], first=first["precision"].upper(), last=last["precision"].upper())


def tf32_said(tf32: dict) -> str:
    """TF32's bar in the notes: its peaks at the maximum clock and at cuBLAS's, and what cuBLAS did."""
    return (f"For TF32 that is {tf32['tflops_max_clock']:,.0f} TFLOPS at the maximum clock and {tf32['tflops_run_clock']:,.0f} "
            f"at the {tf32['clock_mhz']:,.0f} MHz cuBLAS ran at; cuBLAS did {tf32['measured']['tflops']:,.0f}.")


def power_capped(row: dict) -> bool:
    """Whether NVML named the power cap as a throttle reason while the row's cuBLAS ran."""
    if not row["measured"]:
        return False
    during = (row["measured"]["record"].get("telemetry") or {}).get("during") or {}
    return "sw_power_cap" in (during.get("throttle_reasons") or [])


def hierarchy(deck) -> list[dict] | None:
    """Each level of the memory-latency chase, with the bandwidth measured at it where there is one:
    L2's best read (slides/l2.py), HBM's best copy (slides/hbm.py)."""
    mem, l2, hbm = deck.of(slides.memory_latency), deck.of(slides.l2), deck.of(slides.hbm)
    if not mem.levels:
        return None
    bandwidth = {"L2": f"{l2.best_read['read']['gbps']:,.0f} GB/s read" if l2.rows else "",
                 "HBM": f"{hbm.best['gbps']:,.0f} GB/s copy" if hbm.rows else ""}
    return [{**lv, "bandwidth": bandwidth.get(lv["level"], "")} for lv in mem.levels]


# --- figures --------------------------------------------------------------------------------------

def peaks_figure(peaks: Peaks, clock_mhz: float) -> str:
    """Each precision's dense peak at the maximum clock, at the clock the SMs ran at under cuBLAS, and
    cuBLAS's fastest alone: a series only where some precision has it."""
    rows = peaks.rows
    series = [(f"Peak at the maximum clock ({clock_mhz:,.0f} MHz)", [r["tflops_max_clock"] for r in rows]),
              ("Peak at the clock the SMs ran at under cuBLAS (each precision's own)", [r["tflops_run_clock"] for r in rows]),
              ("cuBLAS measured, alone (its faster layout)", [r["measured"]["tflops"] if r["measured"] else None for r in rows])]
    series = [s for s in series if any(s[1])]
    return grouped_bars([r["name"] for r in rows], series, "Dense TFLOPS by precision: the peak, and cuBLAS measured", digits=0,
                        height=PEAKS_HEIGHT)


def draw(own: Peaks, deck) -> dict[str, str]:
    return {"peaks.svg": peaks_figure(own, deck.of(slides.device).sm_clock_max_mhz)} if own.rows else {}
