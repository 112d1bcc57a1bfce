"""Why a GEMM: its arithmetic intensity at the reference shape against the machine's balance, the
TF32 peak over the HBM bandwidth (the copy measured, else the memory's spec), drawn as a roofline:
each precision's peak, the bandwidth's slope, the reference shape's intensity, cuBLAS measured there,
and a matrix-vector product of the same A for contrast."""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.gemm import catalogue
from slides.kit import INK, MUTED, Line, Roof, RoofPoint, roofline
from slides.records import Context
import slides.device
import slides.gemm
import slides.hbm
import slides.peaks

# bytes an element takes in memory: FP32 (and TF32's operands, FP32 in memory) and the narrower ones
ELEMENT_BYTES = {"fp32": 4, **catalogue.ELEMENT_BYTES}
SHORT = {"fp32": "FP32", "tf32": "TF32", "bf16": "BF16", "fp8": "FP8"}
COLORS = {"fp32": "#475569", "tf32": "#2563eb", "bf16": "#059669", "fp8": "#d97706"}
ROOFLINE_HEIGHT = 300      # on the slide with two lines of text under it


def gemm_intensity(m: int, n: int, k: int, operand_bytes: int, output_bytes: int) -> float:
    """FLOP per byte of a GEMM whose operands and output each move once."""
    return 2 * m * n * k / (operand_bytes * (m * k + k * n) + output_bytes * m * n)


def gemv_intensity(m: int, k: int, element_bytes: int = 4) -> float:
    """FLOP per byte of y = A·x, A of M×K: each element of A used once."""
    return 2 * m * k / (element_bytes * (m * k + k + m))


def _point(row: dict) -> dict | None:
    """cuBLAS's best of a precision at its own intensity (its operands' and output's widths, from its params)."""
    best = row["measured"]
    params = (best["record"].get("params") or {}) if best else {}
    out = params.get("output")
    if not (best and all(isinstance(params.get(d), int) for d in "mnk") and out in ELEMENT_BYTES):
        return None
    return {"precision": row["precision"], "tflops": best["tflops"],
            "intensity": gemm_intensity(params["m"], params["n"], params["k"], ELEMENT_BYTES[row["precision"]], ELEMENT_BYTES[out]),
            "pct_of_peak": row["pct_of_peak"], "pct_of_run_peak": row["pct_of_run_peak"]}


@dataclass(frozen=True)
class WhyGemm(Context):
    """The roofline slide: the reference shape's intensity against the machine's balance (TF32's peak
    over the HBM bandwidth), a GEMV of the same A for contrast, each precision's roof and cuBLAS's
    measured points; balance and gemv are None where the results lack the shape or TF32's rate."""
    balance: dict | None = None
    gemv: dict | None = None
    roofs: list[dict] = field(default_factory=list)
    points: list[dict] = field(default_factory=list)     # cuBLAS measured, at its precision's intensity
    lacking: str = ""           # what the results lack for a roofline: the shape, or the rate
    bandwidth_from: str = ""    # where the balance's bandwidth comes from
    verdict: str = ""           # the reference shape: compute- or memory-bound, and by how much
    gemv_verdict: str = ""
    gemv_waits: str = ""        # the notes' word on the GEMV where it is memory-bound
    ridges: list[str] = field(default_factory=list)      # each roof's ridge, as the notes list them
    measured_at: list[str] = field(default_factory=list)  # each cuBLAS point, as the notes list them


def context(deck) -> WhyGemm:
    device, hbm, shape = deck.of(slides.device), deck.of(slides.hbm), deck.of(slides.gemm).shape
    rows = deck.of(slides.peaks).rows
    tf32 = deck.of(slides.peaks).by.get("tf32")
    if not (tf32 and shape):
        return WhyGemm(lacking="the rate" if shape else "the shape")
    measured = bool(hbm.rows)
    gbps = hbm.best["gbps"] if measured else device.hbm_peak_gbps
    balance = 1000 * tf32["tflops_max_clock"] / gbps
    margin = shape["intensity_fp32"] / balance
    gemv = gemv_intensity(shape["m"], shape["k"])
    gemv_tflops = gbps * gemv / 1000
    # the reference shape's intensity past the balance: it can be compute-bound
    compute_bound = shape["intensity_fp32"] > balance
    memory_bound_gemv = gemv < balance
    roofs = [{"precision": r["precision"], "name": r["name"], "tflops": r["tflops_max_clock"],
              "ridge": 1000 * r["tflops_max_clock"] / gbps} for r in rows]
    points = [p for p in map(_point, rows) if p]
    return WhyGemm(
        balance={"tflops": tf32["tflops_max_clock"], "gbps": gbps, "measured": measured, "flop_per_byte": balance,
                 "margin": margin},
        # a matrix-vector product of the same A: what the bandwidth allows it, and its share of the peak
        gemv={"intensity": gemv, "tflops": gemv_tflops, "pct_of_peak": 100 * gemv_tflops / tf32["tflops_max_clock"]},
        roofs=roofs, points=points,
        bandwidth_from="measured copy" if measured else "HBM spec, copy not measured",
        verdict=f"compute-bound by {margin:,.1f}×, if tiles on chip reuse each byte that often" if compute_bound
        else f"memory-bound even at best, its intensity {margin:,.2f}× the balance",
        gemv_verdict=f"memory-bound, at most {gemv_tflops:,.1f} TFLOPS" if memory_bound_gemv else "past the ridge too",
        gemv_waits="and waits on memory" if memory_bound_gemv else "",
        ridges=[f"{r['name']} {r['ridge']:,.0f} FLOP per byte" for r in roofs],
        measured_at=[measured_at(p) for p in points])


def measured_at(point: dict) -> str:
    """cuBLAS's point as the notes say it: its intensity, TFLOPS and share of the peak, and of the
    peak at the clock it ran at where that is known."""
    at_clock = f" ({point['pct_of_run_peak']:,.0f}% at the clock it ran at)" if point["pct_of_run_peak"] else ""
    return (f"{point['precision'].upper()} {point['intensity']:,.0f} FLOP per byte, {point['tflops']:,.1f} TFLOPS, "
            f"{point['pct_of_peak']:,.0f}% of the peak{at_clock}")


def roofline_figure(w: WhyGemm, shape: dict, clock_mhz: float) -> str:
    b, gemv = w.balance, w.gemv
    bw = f"HBM, {'copy measured' if b['measured'] else 'spec (copy not measured)'}: {b['gbps']:,.0f} GB/s"
    measured = {p["precision"]: p for p in w.points}
    roofs = [Roof(f"{SHORT[r['precision']]} peak {r['tflops']:,.0f}"
                  + (f", cuBLAS {measured[r['precision']]['tflops']:,.0f}" if r["precision"] in measured else ""),
                  r["tflops"], COLORS[r["precision"]], f"ridge {r['ridge']:,.0f}" if r["precision"] == "tf32" else "")
             for r in w.roofs]
    points = [RoofPoint(p["intensity"], p["tflops"], color=COLORS[p["precision"]]) for p in w.points]
    points.append(RoofPoint(gemv["intensity"], gemv["tflops"],
                            f"GEMV of the same A: {gemv['intensity']:.2f} FLOP/byte, at most {gemv['tflops']:,.1f} TFLOPS",
                            MUTED, bound=True))
    marks = [Line("x", shape["intensity_fp32"], f"GEMM {shape['m']}×{shape['n']}×{shape['k']}, FP32 operands: "
                  f"{shape['intensity_fp32']:,.0f}", INK)]
    title = (f"Attainable: the lower of each peak (at {clock_mhz:,.0f} MHz) and bandwidth × FLOP per byte"
             + ("; dots: cuBLAS, measured" if points[:-1] else ""))
    return roofline(b["gbps"], bw, roofs, points, marks, title, height=ROOFLINE_HEIGHT)


def draw(own: WhyGemm, deck) -> dict[str, str]:
    if not own.balance:
        return {}
    return {"roofline.svg": roofline_figure(own, deck.of(slides.gemm).shape, deck.of(slides.device).sm_clock_max_mhz)}
