"""The shape atlas (bench/gemm/atlas.py): each precision's headline kernel over the projections of real
models, M from decoding to prefill, as a heatmap of its ratio to cuBLAS in turns; where it holds
cuBLAS and where it falls behind."""
from __future__ import annotations

from statistics import median

from bench.gemm import catalogue
from slides.kit import Cell, heatmap
from slides.sweep import tile_label

LARGE_M = 512          # from this M up, the kernel is held to HELD_LARGE of cuBLAS ...
HELD_LARGE = 0.95
SMALL_M = 256          # ... and up to this M, to HELD_SMALL
HELD_SMALL = 0.90
SLIDES = {"tf32": "Shape Atlas — TF32", "bf16": "Shape Atlas — BF16"}


def _where(row: dict) -> str:
    return f"{row['model']} {row['projection']}, M = {row['shape'][0]:,}"


def _grid(row: dict, sm_count: int) -> dict:
    """The output tiles the tile that ran made of the cell's C (the CTAs with work: a cluster's
    partner past the last row has none), and whether they leave SMs idle."""
    m, n, _ = row["shape"]
    tiles = catalogue.ctas({**row["tile"], "CLUSTER_M": 1}, m, n)
    return {"tiles": tiles, "idle": tiles < sm_count}


def one(deck, bench_id: str, sm_count: int) -> dict:
    step, _ = catalogue.KERNELS[bench_id]
    (r,) = deck.need(SLIDES[step.precision], f"atlas.{step.precision}")
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return {**r, "rows": None, "precision": step.precision.upper()}
    rec = r["record"]
    params, rows = rec["params"], rec["rows"]
    correct = [x for x in rows if x["outcome"] == "correct"]
    ratios = [x["ratio_same_layout"] for x in correct]
    large = [x for x in correct if x["shape"][0] >= LARGE_M]
    small = [x for x in correct if x["shape"][0] <= SMALL_M]
    low = lambda part: min(part, key=lambda x: x["ratio_same_layout"]) if part else None
    worst, worst_large, worst_small = low(correct), low(large), low(small)
    tiles = params.get("tiles") or []
    small_tile = tile_label({**tiles[0], **tiles[1]}) if len(tiles) > 1 else None
    return {**r, "precision": step.precision.upper(), "title": step.title_of(step.best), "rows": rows,
            "params": params, "correct": len(correct),
            "median_pct": 100 * median(ratios) if ratios else None,
            "worst": worst and {"where": _where(worst), "pct": 100 * worst["ratio_same_layout"], **_grid(worst, sm_count)},
            "large": worst_large and {"from": LARGE_M, "pct": 100 * worst_large["ratio_same_layout"],
                                      "where": _where(worst_large), "target_pct": 100 * HELD_LARGE,
                                      "held": worst_large["ratio_same_layout"] >= HELD_LARGE},
            "small": worst_small and {"to": SMALL_M, "pct": 100 * worst_small["ratio_same_layout"],
                                      "where": _where(worst_small), "target_pct": 100 * HELD_SMALL,
                                      "held": worst_small["ratio_same_layout"] >= HELD_SMALL, **_grid(worst_small, sm_count)},
            "above": sum(x >= 1 for x in ratios), "small_tile": small_tile,
            "wrong": [_where(x) for x in rows if x["outcome"] == "wrong"]}


def context(deck) -> dict:
    sms = deck["device"]["sm_count"]
    both = {"tf32": one(deck, catalogue.HEADLINE, sms), "bf16": one(deck, catalogue.HEADLINE_BF16, sms)}
    return {**both, "measured": any(a["rows"] for a in both.values()), "ids": [a["id"] for a in both.values()]}


def atlas_map(a: dict) -> str:
    """Rows the projections, columns M; each cell the kernel's % of cuBLAS (same layout, in turns),
    outlined where the catalogue's small tile ran."""
    params, by = a["params"], {}
    for row in a["rows"]:
        by[(row["model"], row["projection"], row["shape"][0])] = row
    labels, grid = [], []
    for p in params["projections"]:
        labels.append(f"{p['model']} {p['projection']} ({p['n']:,}×{p['k']:,})")
        line = []
        for m in params["ms"]:
            row = by.get((p["model"], p["projection"], m))
            if not row or row["outcome"] != "correct":
                line.append(Cell(None, row["outcome"] if row else "—"))
                continue
            ratio = row["ratio_same_layout"]
            small = bool(a["small_tile"] and row.get("tile") and tile_label(row["tile"]) == a["small_tile"])
            line.append(Cell(ratio, f"{100 * ratio:.0f}", small))
        grid.append(line)
    marked = f"outlined: the {a['small_tile']} tile ran (the catalogue's rule for shapes that would idle SMs)" if a["small_tile"] else ""
    return heatmap(labels, [f"{m:,}" for m in params["ms"]], grid,
                   f"{a['title']}: % of cuBLAS {a['precision']} (same layout, in turns), by projection (N×K)",
                   "M, the rows of A (tokens)", marked)


def draw(deck) -> dict[str, str]:
    return {f"atlas_{key}.svg": atlas_map(deck["atlas"][key]) for key in ("tf32", "bf16") if deck["atlas"][key]["rows"]}
