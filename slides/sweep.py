"""GEMM across sizes (bench/sweep.py): each step's best kernel at every size, cuBLAS timed in turns
beside it, and how close the headline kernel stays to cuBLAS from WITHIN_FROM up."""
from __future__ import annotations

from bench.harness import SHAPE
from slides.kit import ACCENT, Chart, GROUP, INK, Series, line_chart

WITHIN_FROM = 2048      # the size from which the best kernel is held to cuBLAS (issue 6: within 10%)


def size_label(shape: list[int]) -> str:
    return str(shape[0]) if len(set(shape)) == 1 else "×".join(map(str, shape))


def context(deck) -> dict:
    gemm, device = deck["gemm"], deck["device"]
    """Each step's best kernel across sizes (bench/sweep.py), cuBLAS TF32 timed in turns beside it,
    and how close the best kernel stays to cuBLAS from WITHIN_FROM up."""
    recs = deck.need("GEMM Across Sizes", *(s["sweep_id"] for s in gemm["steps"]))
    steps = [{"title": s["title"], "key": s["key"], "sweep_id": s["sweep_id"], "step": s, "summary": r, "record": r["record"]}
             for s, r in zip(gemm["steps"], recs) if r["measured"] and "rows" in r["record"]]
    if not steps:
        return {"steps": [], "sizes": [], "best": None, "top": None, "correct_everywhere": []}
    sizes = [size_label(row["shape"]) for row in steps[0]["record"]["rows"]]
    for s in steps:
        s["cells"] = {size_label(row["shape"]): row for row in s["record"]["rows"]}
    top = gemm["headline"] and next((s for s in steps if s["title"] == gemm["headline"]["to_title"]), None)
    best = None
    if top:
        rows = [r for r in top["record"]["rows"] if r["outcome"] == "correct"]
        large = [r for r in rows if min(r["shape"]) >= WITHIN_FROM]
        worst = min(large, key=lambda r: r["ratio_same_layout"]) if large else None
        best = {"title": top["title"], "within_from": WITHIN_FROM,
                "worst": worst and {"size": size_label(worst["shape"]), "pct": 100 * worst["ratio_same_layout"]},
                "above": [size_label(r["shape"]) for r in rows if r["ratio_same_layout"] >= 1],
                "refused": [size_label(r["shape"]) for r in top["record"]["rows"] if r["outcome"] == "refused"],
                "wrong": [size_label(r["shape"]) for r in top["record"]["rows"] if r["outcome"] == "wrong"],
                "small": None}
        at_reference = next((r for r in rows if r["shape"] == SHAPE.dims), None)
        best["at_reference"] = at_reference and {"tflops": at_reference["tflops"]["kernel"],
                                                 "pct": 100 * at_reference["ratio_same_layout"]}
        tile = (top["step"]["best"]["resources"] or {}).get("tile")
        if tile and rows:
            n = rows[0]["shape"]
            tiles = (n[0] // tile["BM"]) * (n[1] // tile["BN"])
            if tiles < device["sm_count"]:
                best["small"] = {"size": size_label(n), "tiles": tiles, "sms": device["sm_count"],
                                 "tile": f"{tile['BM']}×{tile['BN']}"}
    correct_everywhere = [s["title"] for s in steps if all(r["outcome"] == "correct" for r in s["record"]["rows"])]
    return {"steps": steps, "sizes": sizes, "best": best, "top": top, "correct_everywhere": correct_everywhere}


# --- figures --------------------------------------------------------------------------------------

def gemm_sweep(sweep: dict) -> str:
    """TFLOPS against the size of square GEMMs: the headline kernel's step in colour, cuBLAS of its
    precision on both layouts (timed in turns with it) in black, every other step in grey (the
    table beside gives their figures); refused sizes leave gaps."""
    def square(rows, key):
        return [(r["shape"][0], r["tflops"][key]) for r in rows
                if r["outcome"] == "correct" and len(set(r["shape"])) == 1]
    top = sweep["top"]
    others = [Series("the other steps", square(s["record"]["rows"], "kernel"), GROUP, marks=False, legend=False)
              for s in sweep["steps"] if s is not top]
    others = [s for s in others if s.points]
    if others:
        others[0].legend = True
    series = others
    if top:
        rows, precision = top["record"]["rows"], top["step"]["precision"].upper()
        series += [Series(top["title"], square(rows, "kernel"), ACCENT),
                   Series(f"cuBLAS {precision}, B K-major", square(rows, "cublas_b_kmajor"), INK, marks=False),
                   Series(f"cuBLAS {precision}, B row-major", square(rows, "cublas_b_row"), INK, marks=False, dash="6,4")]
    return line_chart(Chart("M = N = K (log scale)", "TFLOPS", [s for s in series if s.points], height=300))


def draw(deck) -> dict[str, str]:
    return {"gemm_sweep.svg": gemm_sweep(deck["sweep"])} if deck["sweep"]["steps"] else {}
