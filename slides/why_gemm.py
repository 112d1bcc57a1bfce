"""Why a GEMM: its arithmetic intensity at the reference shape against the machine's balance, the
TF32 peak over the HBM bandwidth (the copy measured, else the memory's spec), drawn as a roofline:
each precision's peak, the bandwidth's slope, the reference shape's intensity, cuBLAS measured there,
and a matrix-vector product of the same A for contrast."""
from __future__ import annotations

from bench.gemm import catalogue
from slides.kit import INK, MUTED, Line, Roof, RoofPoint, roofline
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


def context(deck) -> dict:
    device, hbm, shape = deck.of(slides.device), deck.of(slides.hbm), deck.of(slides.gemm)["shape"]
    rows = deck.of(slides.peaks)["rows"]
    tf32 = deck.of(slides.peaks)["by"].get("tf32")
    if not (tf32 and shape):
        return {"balance": None, "gemv": None, "roofs": []}
    measured = bool(hbm["rows"])
    gbps = hbm["best"]["gbps"] if measured else device["hbm_peak_gbps"]
    balance = 1000 * tf32["tflops_max_clock"] / gbps
    gemv = gemv_intensity(shape["m"], shape["k"])
    return {"balance": {"tflops": tf32["tflops_max_clock"], "gbps": gbps, "measured": measured, "flop_per_byte": balance,
                        "margin": shape["intensity_fp32"] / balance,
                        # the reference shape's intensity past the balance: it can be compute-bound
                        "compute_bound": shape["intensity_fp32"] > balance},
            # a matrix-vector product of the same A: what the bandwidth allows it, and whether that is under the roof
            "gemv": {"intensity": gemv, "tflops": gbps * gemv / 1000, "memory_bound": gemv < balance,
                     "pct_of_peak": 100 * gbps * gemv / 1000 / tf32["tflops_max_clock"]},
            "roofs": [{"precision": r["precision"], "name": r["name"], "tflops": r["tflops_max_clock"],
                       "ridge": 1000 * r["tflops_max_clock"] / gbps} for r in rows],
            "points": [p for p in map(_point, rows) if p]}


def roofline_figure(w: dict, shape: dict, clock_mhz: float) -> str:
    b, gemv = w["balance"], w["gemv"]
    bw = f"HBM, {'copy measured' if b['measured'] else 'spec (copy not measured)'}: {b['gbps']:,.0f} GB/s"
    measured = {p["precision"]: p for p in w["points"]}
    roofs = [Roof(f"{SHORT[r['precision']]} peak {r['tflops']:,.0f}"
                  + (f", cuBLAS {measured[r['precision']]['tflops']:,.0f}" if r["precision"] in measured else ""),
                  r["tflops"], COLORS[r["precision"]], f"ridge {r['ridge']:,.0f}" if r["precision"] == "tf32" else "")
             for r in w["roofs"]]
    points = [RoofPoint(p["intensity"], p["tflops"], color=COLORS[p["precision"]]) for p in w["points"]]
    points.append(RoofPoint(gemv["intensity"], gemv["tflops"],
                            f"GEMV of the same A: {gemv['intensity']:.2f} FLOP/byte, at most {gemv['tflops']:,.1f} TFLOPS",
                            MUTED, bound=True))
    marks = [Line("x", shape["intensity_fp32"], f"GEMM {shape['m']}×{shape['n']}×{shape['k']}, FP32 operands: "
                  f"{shape['intensity_fp32']:,.0f}", INK)]
    title = (f"Attainable: the lower of each peak (at {clock_mhz:,.0f} MHz) and bandwidth × FLOP per byte"
             + ("; dots: cuBLAS, measured" if points[:-1] else ""))
    return roofline(b["gbps"], bw, roofs, points, marks, title, height=ROOFLINE_HEIGHT)


def draw(own, deck) -> dict[str, str]:
    w = own
    if not w["balance"]:
        return {}
    return {"roofline.svg": roofline_figure(w, deck.of(slides.gemm)["shape"], deck.of(slides.device)["sm_clock_max_mhz"])}
