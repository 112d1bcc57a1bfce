"""The shape atlas (bench/gemm/atlas.py): each precision's kernels over the projections of real models,
M from decoding to prefill, as a heatmap of the ratio to cuBLAS in turns of the kernel the catalogue's
rule picked (stream-K outlined); where they hold cuBLAS and where they fall behind; stream-K, the
kernel for the few-row shapes: its code, its plan for one cell, and its speed over the headline in the
same turns; and ping-pong consumers, BF16's kernel where K is short: its code, its idea over time,
and its speed over the headline in the same turns."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from statistics import median

from bench.gemm import catalogue, plan
from bench.gemm.catalogue import ATLASES, atlas_id
from slides.fmt import fmt_range
from slides.gemm import code_view, gain_in_turns, standing
from slides.kit import Cell, heatmap
from slides.records import Context
from slides.step_diagrams import pingpong_diagram, stream_k_diagram, stream_k_runs
from slides.sweep import tile_label
from slides.why_gemm import ELEMENT_BYTES, gemm_intensity
import slides.device
import slides.hbm

LARGE_M = 512          # from this M up, the kernel is held to HELD_LARGE of cuBLAS ...
HELD_LARGE = 0.95
SMALL_M = 256          # ... and up to this M, to HELD_SMALL
HELD_SMALL = 0.90
ERROR_HELD = 1.25      # a cell's error is held to this many times cuBLAS's on the same operands
SLIDES = {name: "Shape Atlas — " + re.sub(r"\b[a-z]", lambda c: c.group().upper(), label) for name, (_, label) in ATLASES.items()}
ANSWER = "bf16"
STREAM_K = catalogue.STREAM_K.title          # its slides' titles begin so
STREAMED = {s.best.id for s in catalogue.SHAPE_STEPS}
TURNED = {s.best.id for s in catalogue.TURN_STEPS}
STAND_INS = STREAMED | TURNED      # the kernels the atlas runs in place of its own


@dataclass(frozen=True)
class Atlas(Context):
    """The shape atlas's slides: each atlas's heatmap of its kernels over real models' projections
    against cuBLAS in turns (``maps``, by the atlas's name: a dict each, rows None where not measured),
    where they hold cuBLAS and where they fall behind, and stream-K's code and plan beside them (None
    without an atlas)."""
    maps: dict
    answer: str                         # the atlas whose slide answers the sizes section's question
    measured: bool                      # an atlas has figures: without one the section shows nothing
    streamed_ids: list[str]             # the atlases whose small shapes stream-K may run
    parts: list[str]                    # the slides in order: each atlas with figures by name, "stream_k" after the last
                                        # of those stream-K may run in (its code and plan: the backup beside that atlas),
                                        # "pingpong" after the one ping-pong consumers may run in
    summary: list[dict]                 # the takeaways' line: each precision whose atlas has figures
    stream_k: dict | None
    pingpong: dict | None = None


def _where(row: dict) -> str:
    return f"{row['model']} {row['projection']}, M = {row['shape'][0]:,}"


def _grid(row: dict, sm_count: int) -> dict:
    """The output tiles the tile that ran made of the cell's C (the CTAs with work: a cluster's
    partner past the last row has none); where they are fewer than the SMs, how many clusters shared
    their K-tiles (``shared_by``: stream-K's, or a lone last wave split with the idle clusters, whose
    plan launched more clusters than units), and how many CTAs each SM held (``per_sm``: every cluster
    the GPU holds at once launched), or else the SMs they left ``idle``."""
    m, n, _ = row["shape"]
    tiles = plan.ctas({**row["tile"], "CLUSTER_M": 1}, m, n)
    launched = row.get("plan") or {}
    shared = launched.get("clusters", 0) > launched.get("units", 0)
    return {"tiles": tiles, "idle": sm_count - tiles if tiles < sm_count and not shared else 0,
            "streamed": launched.get("kind") == "stream_k", "shared_by": launched["clusters"] if shared else None,
            "per_sm": launched["clusters"] * row["tile"].get("CLUSTER_M", 1) // sm_count if shared else 1}


def _clusters_said(grid: dict) -> str:
    """The clusters that shared a cell's K-tiles, and the CTAs an SM held where more than one."""
    return f"{grid['shared_by']} clusters" + (f" ({grid['per_sm']} CTAs an SM)" if grid["per_sm"] > 1 else "")


def _idle_explains(grid: dict, row: dict, sm_count: int) -> bool:
    """Whether the idle SMs account for at least half of what the cell fell short of cuBLAS by."""
    return grid["idle"] / sm_count >= (1 - row["ratio_same_layout"]) / 2


def _ran_narrow(row: dict, speeds: dict[int, float] | None) -> bool:
    """Whether the cell ran the kernel at one of the other widths its record's rule names (``speeds``,
    _width_speeds): its best tile narrower, which tile_for picked because its waves end first."""
    kernel = row.get("kernel")
    if kernel not in catalogue.KERNELS or kernel in STREAMED or not speeds:
        return False
    best, tile = catalogue.step_of(kernel).best.tile, row["tile"]
    return (tile["BN"] != best["BN"] and tile["BN"] in speeds
            and all(tile.get(key, 1) == best.get(key, 1) for key in ("BM", "CLUSTER_M")))


def _width_speeds(params: dict, kernel: str | None) -> dict[int, float] | None:
    """Each other width's speed over the best's that the record's rule ran with (records before
    2026-11-30 name one for every width), None where it names none."""
    if "narrow_speeds" in params:
        return {int(width): speed for width, speed in params["narrow_speeds"].items()}
    if "narrow_speed" in params and kernel in catalogue.KERNELS:
        return {width: params["narrow_speed"] for width in catalogue.step_of(kernel).widths}
    return None


def _narrow(correct: list[dict], sm_count: int, speeds: dict[int, float] | None) -> dict | None:
    """The cells that ran a narrower width of the headline: how many, the tiles they ran, and for the first
    of them the waves each width takes there (catalogue.waves), the narrower's as long as how many of
    the best's at its speed, the narrower's share of the best's speed (the rule the notes state)."""
    cells = [x for x in correct if _ran_narrow(x, speeds)]
    if not cells:
        return None
    row, best = cells[0], catalogue.step_of(cells[0]["kernel"]).best.tile
    narrow = {**best, "BN": row["tile"]["BN"]}
    speed = speeds[narrow["BN"]]
    waves = {name: catalogue.waves(tile, *row["shape"], sm_count) for name, tile in (("narrow", narrow), ("wide", best))}
    wave = narrow["BN"] / best["BN"] / speed       # a narrow wave's length, in wide waves
    ran = sorted({x["tile"]["BN"] for x in cells}, reverse=True)      # each narrower width that ran, widest first
    return {"cells": len(cells), "tile": tile_label(row["tile"]), "best": tile_label(best), "where": _where(row),
            "tiles": " or ".join(tile_label({**best, "BN": width}) for width in ran),
            **waves,
            "wave_pct": 100 * wave, "as_wide": waves["narrow"] * wave}


def _wider_tile(row: dict, sm_count: int) -> dict | None:
    """The tile a correct cell's kernel would have run there had it not narrowed its tile by M
    (catalogue.fewer_sharers), where it ran a narrower one; else None."""
    step = catalogue.step_of(row["kernel"]) if row["outcome"] == "correct" and row.get("kernel") in catalogue.KERNELS else None
    if not step or not step.sharers:
        return None
    wide = catalogue.tile_for(replace(step, sharers=0), *row["shape"], sm_count)
    return wide if row["tile"]["BN"] < wide["BN"] else None


def _fewer_sharers(correct: list[dict], params: dict, sm_count: int) -> dict | None:
    """The cells whose kernel ran its tile by M narrower, where more clusters than the record's bound
    (`sharers`) would have shared each tile (catalogue.fewer_sharers; stream-K's are its code slide's):
    how many, and the first of them with the tile it would otherwise have run."""
    cells = [(x, wide) for x in correct if x["kernel"] not in STREAMED for wide in [_wider_tile(x, sm_count)] if wide]
    if not cells or not params.get("sharers"):
        return None
    row, wide = cells[0]
    return {"sharers": params["sharers"], "step": catalogue.NARROWEST, "cells": len(cells), "where": _where(row),
            "tile": tile_label(row["tile"]), "wide": tile_label(wide)}


def _one_wave_cells(correct: list[dict], params: dict) -> int:
    """The cells whose kernel ran its record's one-wave width (catalogue.one_wave)."""
    rule = params.get("one_wave")
    if not rule:
        return 0
    return sum(1 for x in correct if x.get("kernel") in catalogue.KERNELS and x["kernel"] not in STAND_INS
               and not _ran_one_row(x) and x["tile"]["BN"] == rule["width"])


def _ran_one_row(row: dict) -> bool:
    """Whether the headline ran the cell as one row of its tiles alone (catalogue.one_row): no cluster
    over M where its best tile has one, M within one tile's rows."""
    kernel = row.get("kernel")
    if kernel not in catalogue.KERNELS or kernel in STAND_INS:
        return False
    best = catalogue.step_of(kernel).best.tile
    return row["tile"].get("CLUSTER_M", 1) == 1 < best.get("CLUSTER_M", 1) and row["shape"][0] <= best["BM"]


def _rule_said(params: dict, kernel: str | None, streamed: bool, one_wave: int = 0, one_row: list[dict] = ()) -> str:
    """How the atlas's rule picked the kernel's tile, with the constants the record ran with ("" where
    the record predates them or the kernel has one tile): its small tile where its best tile's CTAs would
    leave most SMs idle, else the width whose waves end first (catalogue.tile_for), and the ``one_wave``
    cells that ran its one-wave width instead (catalogue.one_wave), and the ``one_row`` cells that ran one
    row of tiles alone (catalogue.one_row)."""
    speeds = _width_speeds(params, kernel)
    if kernel not in catalogue.KERNELS or not speeds:
        return ""
    step = catalogue.step_of(kernel)
    best = tile_label(step.best.tile)
    small = (f"{tile_label(step.tiles[1])} where {best} would make fewer CTAs than "
             f"{100 * params['small_tile_below_sms']:,.0f}% of the SMs, else " if step.small_tile else "")
    widths = " or ".join(tile_label({**step.best.tile, "BN": w}) for w in (step.best.tile["BN"], *step.widths))
    rows_fixed = [rows for rows, change in step.rows_tiles if "BN" in change]
    lead = ("Past stream-K's rows the headline" if streamed else
            f"Past M = {max(rows_fixed):,} the kernel" if rows_fixed else "In every cell the headline")
    counted = (f"a narrower one at {100 * next(iter(speeds.values())):,.0f}% of the speed"
               if len(set(speeds.values())) == 1 else
               ", ".join(f"{tile_label({**step.best.tile, 'BN': w})} {'counted ' if i == 0 else ''}at {100 * v:,.0f}%"
                         f"{' of the speed' if i == 0 else ''}" for i, (w, v) in enumerate(speeds.items())))
    filled = (f", or {tile_label({**step.best.tile, 'BN': params['one_wave']['width']})} where only it fills one wave "
              f"({one_wave} cell{'s' if one_wave > 1 else ''})" if one_wave else "")
    alone = (f" {len(one_row)} cell{'s' if len(one_row) > 1 else ''} of M = {max(x['shape'][0] for x in one_row):,} "
             f"ran one tile row alone, no cluster." if one_row else "")
    return f"{lead} ran {small}{widths}, whichever's waves end first ({counted}){filled}.{alone}"


def _versus_headline(cells: list[dict], name: str = "stream-K") -> str:
    """A stand-in (stream-K, or ``name``) over the headline in the cells where it ran, the two in the
    same turns, as the notes go on to say it: the median and the range of its speed over the
    headline's, and how many cells each interval calls faster, slower or a tie ("" where no cell has
    the pair)."""
    pairs = [x["headline"] for x in cells if "ratio" in x.get("headline", {})]
    if not pairs:
        return ""
    ratios = [p["ratio"] for p in pairs]
    slower, tie = sum(p["ci"][1] < 1 for p in pairs), sum(p["ci"][0] <= 1 <= p["ci"][1] for p in pairs)
    return (f": {name} at {100 * median(ratios):,.0f}% of its speed (median; {100 * min(ratios):,.0f}–"
            f"{100 * max(ratios):,.0f}%), faster in {sum(p['ci'][0] > 1 for p in pairs)} of {len(pairs)} cells"
            + (f", slower in {slower}" if slower else "") + (f", a tie in {tie}" if tie else ""))


def _errors(correct: list[dict], versus: str) -> str | None:
    """Each cell's error over cuBLAS's on its operands, as the slide says it: whether all are held to
    ERROR_HELD, else how many and the worst; None where no cell has cuBLAS's."""
    ratios = [(x["check"]["rel_error"] / x["cublas_check"]["rel_error"], x) for x in correct
              if x.get("cublas_check", {}).get("rel_error")]
    if not ratios:
        return None
    worst, at = max(ratios, key=lambda r: r[0])
    if worst <= ERROR_HELD:
        return f"within {ERROR_HELD:,.2f}× {versus}'s in every cell"
    held = sum(r <= ERROR_HELD for r, _ in ratios)
    return f"within {ERROR_HELD:,.2f}× {versus}'s in {held} of {len(ratios)} cells; worst {worst:,.1f}×, {_where(at)}"


def _large(row: dict, versus: str) -> dict:
    """The worst cell from LARGE_M up, against the share of cuBLAS the kernel is held to there."""
    pct = 100 * row["ratio_same_layout"]
    return {"from": LARGE_M, "pct": pct, "where": _where(row),
            "said": f"at least {100 * HELD_LARGE:,.0f}% of {versus} everywhere" if row["ratio_same_layout"] >= HELD_LARGE else
                    f"down to {pct:,.1f}% of {versus} at {_where(row)} (target {100 * HELD_LARGE:,.0f}%)"}


def _small(row: dict, sm_count: int) -> dict:
    """The worst cell up to SMALL_M, against the share of cuBLAS the kernel is held to there, and
    what its grid of tiles leaves of the SMs."""
    pct = 100 * row["ratio_same_layout"]
    return {"to": SMALL_M, "pct": pct, "where": _where(row),
            "said": f"at least {100 * HELD_SMALL:,.0f}% everywhere" if row["ratio_same_layout"] >= HELD_SMALL else
                    f"down to {pct:,.1f}% at {_where(row)}: {_tiles_said(row, sm_count)}"}


def _tiles_said(row: dict, sm_count: int) -> str:
    """A cell's tiles against the SMs: too few, shared by more clusters, a few SMs idle, or enough."""
    grid = _grid(row, sm_count)
    if grid["idle"]:
        return (f"only {grid['tiles']} tiles for {sm_count} SMs" if _idle_explains(grid, row, sm_count) else
                f"{grid['tiles']} tiles for {sm_count} SMs, the {grid['idle']} idle too few to explain it")
    if grid["shared_by"]:
        return f"{grid['tiles']} tiles for {sm_count} SMs, their K-tiles shared by {_clusters_said(grid)}"
    return f"{grid['tiles']} tiles for {sm_count} SMs, enough to fill them"


def _worst_said(row: dict, sm_count: int) -> str:
    """The worst cell of all and why it lost, as the notes go on to say it."""
    grid = _grid(row, sm_count)
    kernels_loss = "the kernel's loss, not the grid's"
    if grid["idle"] and _idle_explains(grid, row, sm_count):
        why = f"where its {grid['tiles']} tiles leave SMs idle, a shape still without its kernel"
    elif grid["idle"]:
        why = f"with {grid['tiles']} tiles for {sm_count} SMs, {grid['idle']} idle: mostly the kernel's loss"
    elif grid["shared_by"]:
        shared = (f"stream-K dealt its {grid['tiles']} tiles' K-tiles evenly to {_clusters_said(grid)}" if grid["streamed"] else
                  f"{_clusters_said(grid)}, the idle ones helping, shared its {grid['tiles']} tiles' K")
        why = f"where {shared}: {kernels_loss}"
    else:
        why = f"with {grid['tiles']} tiles, enough for every SM: {kernels_loss}"
    return f"; the worst, {100 * row['ratio_same_layout']:,.1f}% at {_where(row)}, {why}"


def _floor_share(row: dict, params: dict, device, copy_gbps: float | None) -> float | None:
    """Where a cell is bound by memory (its least bytes, A and B read once and C written once, at the
    measured HBM copy's rate take longer than its FLOPs at the tensor cores' dense peak at the clock
    it ran at): the kernel's share of that floor, the HBM roofline; None where compute bounds it, or
    without a copy, a rate or a clock."""
    rate = (device.rates or {}).get(params["precision"])
    timed = (row.get("time_ms") or {}).get("kernel") or {}      # the schema does not promise a row's timings
    if not (rate and copy_gbps and timed.get("median") and timed.get("sm_clock_mhz")):
        return None
    m, n, k = row["shape"]
    flops = 2 * m * n * k
    intensity = gemm_intensity(m, n, k, ELEMENT_BYTES[params["precision"]], ELEMENT_BYTES[params.get("output", "fp32")])
    floor_ms = flops / intensity / copy_gbps / 1e6
    compute_ms = flops / slides.device.peak_tflops(device, rate, timed["sm_clock_mhz"]) / 1e9
    return floor_ms / timed["median"] if floor_ms > compute_ms else None


def _memory(correct: list[dict], params: dict, device, copy: dict | None) -> dict | None:
    """The cells bound by memory (_floor_share), each by (model, projection, M), and the kernel's
    shares of the HBM roofline there; None where no cell is."""
    shares = {(x["model"], x["projection"], x["shape"][0]): share for x in correct
              if (share := _floor_share(x, params, device, copy and copy["gbps"])) is not None}
    if not shares:
        return None
    return {"cells": shares, "up_to": max(m for _, _, m in shares), "gbps": copy["gbps"],
            "range": fmt_range({"low": 100 * min(shares.values()), "high": 100 * max(shares.values())}, 0),
            "median": 100 * median(shares.values())}


def _cold(correct: list[dict]) -> dict | None:
    """The cells whose operands fit in L2, timed over copies of them (sweep.operand_sets): how many,
    and the range of copies; None where no cell's did."""
    cycled = [x for x in correct if x.get("operand_sets", 1) > 1]
    if not cycled:
        return None
    sets = [x["operand_sets"] for x in cycled]
    return {"cells": len(cycled), "sets": fmt_range({"low": min(sets), "high": max(sets)}, 0)}


def _baseline(params: dict) -> dict:
    """What an atlas's cells are divided by: the library (versus), as the heatmap's title names it
    (baseline), and as the notes say it (baseline_said); FP8's cuBLASLt in the mode the record names."""
    precision = params["precision"]
    if precision != "fp8":
        return {"versus": "cuBLAS", "baseline": f"cuBLAS {precision.upper()} (same layout, in turns)",
                "baseline_said": f"cuBLAS {precision.upper()}"}
    mode, said = (("same block scales", "given the same block scales") if params.get("scaling") == "blocks"
                  else ("accurate mode", "in its accurate mode"))
    return {"versus": "cuBLASLt", "baseline": f"cuBLASLt FP8 ({mode}, {params.get('output', 'fp32').upper()} C, in turns)",
            "baseline_said": f"cuBLASLt FP8 {said}"}


def one(deck, name: str, device, copy: dict | None) -> dict:
    """One atlas: its record (result), its cells, and what its slide and notes say of them."""
    (r,) = deck.need(SLIDES[name], atlas_id(name))
    label = ATLASES[name][1]
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return {"result": r, "rows": None, "precision": label, "title": SLIDES[name]}
    rec = r["record"]
    params, rows = rec["params"], rec["rows"]
    named = _baseline(params)
    versus = named["versus"]
    correct = [x for x in rows if x["outcome"] == "correct"]
    ratios = [x["ratio_same_layout"] for x in correct]
    large = [x for x in correct if x["shape"][0] >= LARGE_M]
    small = [x for x in correct if x["shape"][0] <= SMALL_M]
    low = lambda part: min(part, key=lambda x: x["ratio_same_layout"]) if part else None
    worst, worst_large, worst_small = low(correct), low(large), low(small)
    streamed = [x for x in correct if x.get("kernel") in STREAMED]
    speeds = _width_speeds(params, params["kernels"][0] if params.get("kernels") else None)
    return {"result": r, "precision": label, "title": SLIDES[name], **named,
            "rows": rows, "params": params, "correct": len(correct),
            "median_pct": 100 * median(ratios) if ratios else None,
            "worst": worst and {"where": _where(worst), "pct": 100 * worst["ratio_same_layout"]},
            "worst_said": _worst_said(worst, device.sm_count) if worst else "",
            "large": worst_large and _large(worst_large, versus), "small": worst_small and _small(worst_small, device.sm_count),
            "memory": _memory(correct, params, device, copy), "cold": _cold(correct),
            "above": sum(x >= 1 for x in ratios), "error": _errors(correct, versus), "narrow": _narrow(correct, device.sm_count, speeds), "speeds": speeds,
            "fewer_sharers": _fewer_sharers(correct, params, device.sm_count),
            "rule_said": _rule_said(params, params["kernels"][0] if params.get("kernels") else None, bool(streamed),
                                    _one_wave_cells(correct, params), [x for x in correct if _ran_one_row(x)]),
            "streamed": _streamed(correct, streamed), "turned": _turned(correct, params),
            "wrong": [_where(x) for x in rows if x["outcome"] == "wrong"]}


def _turned(correct: list[dict], params: dict) -> dict | None:
    """Where ping-pong consumers ran (catalogue.kernel_for): its cells, the rule's longest K and fewest
    waves as the record names them (None in a record from before it did), and its speed over the
    headline's in the same turns."""
    cells = [x for x in correct if x.get("kernel") in TURNED]
    if not cells:
        return None
    rule = params.get("pingpong") or {}
    return {"cells": len(cells), "max_k": rule.get("max_k"), "min_waves": rule.get("min_waves"),
            "versus": _versus_headline(cells, "ping-pong")}


def _streamed(correct: list[dict], streamed: list[dict]) -> dict | None:
    """Where stream-K ran: its cells, the most rows, and where the headline ran cells of no more rows
    (catalogue.STREAM_K_BF16's short K), the rows it ran at every K and the longest K it left."""
    if not streamed:
        return None
    up_to = max(x["shape"][0] for x in streamed)
    left = [x for x in correct if x.get("kernel") not in STAND_INS and not _ran_one_row(x) and x["shape"][0] <= up_to]
    return {"cells": len(streamed), "up_to": up_to, "versus": _versus_headline(streamed),
            "short_k": left and {"k": max(x["shape"][2] for x in left),
                                 "rows": max((m for m in {x["shape"][0] for x in streamed}
                                              if m < min(x["shape"][0] for x in left)), default=0)}}


def _example(atlases: dict) -> tuple[dict, dict] | None:
    """The cell stream-K's plan is drawn for: its smallest M on the first projection, from the BF16
    atlas if it ran there (the talk's model precision), else TF32's."""
    for a in (atlases["bf16"], atlases["tf32"]):
        cells = [x for x in (a["rows"] or []) if x["outcome"] == "correct" and x.get("kernel") in STREAMED
                 and (x.get("plan") or {}).get("kind") == "stream_k"]
        if cells:
            return a, min(cells, key=lambda x: x["shape"][0])
    return None


def stream_k(deck, atlases: dict) -> dict:
    """Stream-K's slides: its code (the step's focus) and its plan for one atlas cell, drawn from the
    units, clusters and K-tiles the cell's run recorded."""
    step = catalogue.STREAM_K
    # each precision's stream-K at the reference shape, timed in turns with its headline there
    reference = deck.need(f"{STREAM_K} — Diagram", *(s.best.id for s in catalogue.SHAPE_STEPS))
    example = _example(atlases)
    # (both TFLOPS from those turns: the record's own figure is from its turns with cuBLAS)
    at_reference = [{"precision": catalogue.step_of(x["id"]).precision.upper(), **pair, "call": _call(pair)}
                    for x in reference if x["measured"] and not x["failed"]
                    for pair in [gain_in_turns(x, catalogue.before(x["id"]))] if pair]
    cell = None
    if example:
        a, row = example
        runs = plan.stream_k(row["plan"]["units"], row["plan"]["clusters"], row["plan"]["k_tiles"])
        cell = {"precision": a["precision"], "where": _where(row), "shape": row["shape"], "tile": row["tile"],
                "plan": runs, **stream_k_runs(runs)}
    return {"title": STREAM_K, "slide_title": STREAM_K, "technique": step.technique, "code": code_view(step.code, step.focus, deck.out_dir),
            "cell": cell, "diagram": "stream_k.svg" if cell else None, "at_reference": at_reference,
            # the tiles the atlas runs it with, by M, smallest first: each up to the rows its cluster's column spans
            "tiles": [_tile_said({**step.best.tile, **change}) for _, change in step.rows_tiles],
            "promoted": _promoted(atlases), "narrowed": _narrowed(atlases, deck.of(slides.device).sm_count)}


def pingpong(deck, atlas: dict, step: catalogue.Step) -> dict:
    """Ping-pong consumers' slides (``step``, standing in for ``atlas``'s kernel): its code, its idea
    over time drawn from the tile its record ran (None where not measured), its speed over the headline
    in the atlas's turns, and at the reference shape."""
    (record,) = deck.need(f"{step.title} — Diagram", step.best.id)
    measured = record["record"] if record["measured"] else {}
    pair = gain_in_turns(record, step.against) if measured and not record["failed"] else None
    shape = measured.get("params") or {}
    return {"title": step.title, "slide_title": step.title, "ids": [step.best.id], "precision": step.precision.upper(),
            "technique": step.technique, "code": code_view(step.code, step.focus, deck.out_dir),
            "diagram": "pingpong.svg", "tile": (measured.get("resources") or {}).get("tile"), "turned": atlas.get("turned"),
            "at_reference": pair and {**pair, "shape": f"{shape['m']:,}×{shape['n']:,}×{shape['k']:,}",
                                      "call": _pingpong_call(pair)}}


def _pingpong_call(pair: dict) -> str:
    """Ping-pong consumers against the headline at the reference shape, from their turns' interval."""
    return {"behind": "slower: over so long a K the epilogue is a small share, and the narrower tile reads more per FLOP, "
                      "so the atlas runs it only where K is short",
            "ahead of": "faster even there", "level with": "a tie"}[standing(pair)]


def _narrowed(atlases: dict, sm_count: int) -> dict | None:
    """The atlas cells whose stream-K ran its tile by M narrower, where more clusters than their
    record's bound (`sharers`) would have shared each tile (catalogue.fewer_sharers)."""
    cells, sharers = [], None
    for a in atlases.values():
        for x in a["rows"] or []:
            if x.get("kernel") in STREAMED and _wider_tile(x, sm_count):
                cells.append(x)
                sharers = (a.get("params") or {}).get("sharers") or sharers
    return {"sharers": sharers, "cells": len(cells), "where": _where(cells[0])} if cells and sharers else None


def _promoted(atlases: dict) -> list[dict]:
    """The atlases whose stream-K added its sums into FP32 registers every few K-tiles (PROMOTE_EVERY,
    as their records name its tiles), and how many K-tiles it summed in the accumulator first."""
    every = [(a["precision"], [t.get("PROMOTE_EVERY", 0) for kernel, tiles in (a["params"].get("tiles") or {}).items()
                                if kernel in STREAMED for t in tiles])
             for a in atlases.values() if a["rows"]]
    return [{"precision": precision, "every": max(kept)} for precision, kept in every if kept and max(kept) > 0]


def _rows_spanned(tile: dict) -> int:
    return tile["BM"] * tile.get("CLUSTER_M", 1)


def _tile_said(tile: dict) -> str:
    """One of stream-K's tiles, its cluster, and the rows up to which it is picked."""
    cluster = tile.get("CLUSTER_M", 1)
    return tile_label(tile) + (f" in clusters of {cluster}" if cluster > 1 else "") + f" up to {_rows_spanned(tile)} rows"


def _call(pair: dict) -> str:
    """Stream-K against the headline at the reference shape, from their turns' interval."""
    return {"behind": "slower, so stream-K runs only where one cluster's column of tiles covers all of M, and the headline everywhere else",
            "ahead of": "faster even there", "level with": "a tie"}[standing(pair)]


def context(deck) -> Atlas:
    device, copy = deck.of(slides.device), deck.of(slides.hbm).best
    maps = {name: one(deck, name, device, copy) for name in ATLASES}
    measured = any(a["rows"] for a in maps.values())
    streamed = [name for name, (role, _) in ATLASES.items() if catalogue.streamed_for(catalogue.resolve(role))]
    parts = [name for name, a in maps.items() if a["rows"]]
    # stream-K's slides, and its backup pages, only beside an atlas it may run in (they are that atlas's kernel)
    beside = [name for name in parts if name in streamed]
    turned = next((name for name in parts if catalogue.turns_for(catalogue.resolve(ATLASES[name][0]))), None)
    if beside:
        parts.insert(parts.index(beside[-1]) + 1, "stream_k")
    # ping-pong's after the atlas it may run in, and after stream-K's where that atlas may run it too
    if turned:
        parts.insert(max(parts.index(turned), parts.index("stream_k") if "stream_k" in parts else -1) + 1, "pingpong")
    return Atlas(maps=maps, answer=ANSWER, measured=measured, streamed_ids=[atlas_id(name) for name in streamed], parts=parts,
                 summary=[a for a in maps.values() if a["rows"] and a["median_pct"] is not None],
                 stream_k=stream_k(deck, maps) if beside else None, pingpong=pingpong(deck, maps[turned], catalogue.turns_for(catalogue.resolve(ATLASES[turned][0]))) if turned else None)


def atlas_map(a: dict) -> str:
    """Rows the projections, columns M; each cell the % of cuBLAS (same layout, in turns) of the kernel
    the catalogue's rule picked, outlined where that was stream-K and barred where ping-pong consumers."""
    params, by, memory = a["params"], {}, a["memory"]
    bound = memory["cells"] if memory else {}
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
            line.append(Cell(ratio, f"{100 * ratio:.0f}", row.get("kernel") in STREAMED, _ran_narrow(row, a["speeds"]),
                             (p["model"], p["projection"], m) in bound, barred=row.get("kernel") in TURNED))
        grid.append(line)
    short = a["streamed"] and a["streamed"]["short_k"]
    marked = (f"outlined: stream-K ran (up to M = {a['streamed']['up_to']:,}"
              + (f"; {short['rows']:,} where K ≤ {short['k']:,}" if short else "") + ")") if a["streamed"] else ""
    narrow = a["narrow"]
    footnote = (f"the {narrow['tiles']} tile ran, not {narrow['best']}: its waves end first"
                if narrow else "")
    # the title states the finding: the median cell and the lowest, and where
    finding = (f": median {a['median_pct']:.1f}%, lowest {a['worst']['pct']:.1f}% at {a['worst']['where']}"
               if a["median_pct"] is not None and a["worst"] else "")
    dotted = (f"bound by memory: {memory['range']}% of the HBM roofline ({memory['gbps']:,.0f} GB/s, the measured copy)"
              if memory else "")
    turned = a.get("turned")
    bounds = f" (K ≤ {turned['max_k']:,}, their tiles {turned['min_waves']} waves or more)" if turned and turned["max_k"] else ""
    barred = f"barred: ping-pong consumers ran{bounds}" if turned else ""
    return heatmap(labels, [f"{m:,}" for m in params["ms"]], grid, f"{a['precision']}: % of {a['baseline']}{finding}",
                   "M, the rows of A (tokens); rows: projections (N×K)", marked, footnote=footnote, dotted=dotted, barred=barred)


def draw(own: Atlas, deck) -> dict[str, str]:
    out = {f"atlas_{name}.svg": atlas_map(a) for name, a in own.maps.items() if a["rows"]}
    sk = own.stream_k
    if sk and sk["cell"]:
        out[sk["diagram"]] = stream_k_diagram(sk["cell"])
    pp = own.pingpong
    if pp and pp["tile"]:
        out[pp["diagram"]] = pingpong_diagram(pp["tile"])
    return out
