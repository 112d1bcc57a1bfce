"""Render the Slidev deck (slides.md) and its figures (svgs/) from a results file.

    python build.py [--results results/<gpu>.yaml]

All data is gathered and every derived number computed into one context first;
the templates in slides/ only format it. Nothing is written unless the results
file validates and every template renders."""
from __future__ import annotations

import argparse
import hashlib
import math
import os
import re
import shutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import jinja2
from markupsafe import Markup

from bench import registry, schema
from bench import catalogue, cublas as cublas_lib
from bench.harness import SHAPE
from bench.timing import spread, summarize
from slides import escape, figures
from slides import multigpu as multigpu_section

ROOT = Path(__file__).resolve().parent
DEFAULT_RESULTS = ROOT / "results" / "nvidia-h100-80gb-hbm3.yaml"
SLIDES_DIR = ROOT / "slides"

# Dense FLOP per clock per SM by compute capability (NVIDIA architecture
# whitepapers): FP32 FMA on the CUDA cores, TF32 and BF16 on the tensor cores.
PER_SM_FLOP_PER_CLK = {
    "8.0": {"fp32": 128, "tf32": 1024, "bf16": 2048},
    "8.6": {"fp32": 256, "tf32": 512, "bf16": 1024},
    "8.9": {"fp32": 256, "tf32": 512, "bf16": 1024},
    "9.0": {"fp32": 256, "tf32": 2048, "bf16": 4096},
}
ARCH_NAMES = {"7.0": "Volta", "7.5": "Turing", "8.0": "Ampere", "8.6": "Ampere", "8.7": "Ampere", "8.9": "Ada Lovelace",
              "9.0": "Hopper", "10.0": "Blackwell", "10.3": "Blackwell", "12.0": "Blackwell"}
SWEEP_WITHIN_FROM = 2048      # the size from which the best kernel is held to cuBLAS (issue 6: within 10%)
SETTLE_SPREAD = 0.03          # the p10-p90 spread a GEMM timing is held to (issue 6: under 3%)
SUBPARTITIONS_PER_SM = 4     # one warp scheduler each, every architecture since Volta
WARP_SIZE = 32
PRECISION_NAMES = {"fp32": "FP32 (CUDA cores)", "tf32": "TF32 (tensor cores)", "bf16": "BF16 (tensor cores)"}


class Context:
    """Collects what the deck needs and remembers what the results lack."""

    def __init__(self, doc: dict, benchmarks: dict):
        self.doc = doc
        self.benchmarks = benchmarks
        self.missing: dict[str, list[str]] = {}

    def record(self, bid: str) -> dict:
        """A result, summarized for the slides; ``measured`` is False when absent or skipped."""
        rec = self.doc["benchmarks"].get(bid)
        current = self.benchmarks.get(bid)
        out = {"id": bid, "measured": False, "status": "absent", "reason": "not in the results",
               "stale": False, "stale_why": "", "failed": False, "record": {},
               "tflops": None, "time_ms": None, "check": None, "clock_mhz": None,
               "pct_cublas": None, "baseline_tflops": None, "speedup": None}
        if rec is None:
            return out
        out.update(status=rec["status"], reason=rec.get("reason", ""), record=rec,
                   measured=rec["status"] != "skipped", failed=rec["status"] == "failed",
                   tflops=rec.get("tflops"), time_ms=rec.get("time_ms"), check=rec.get("check"),
                   clock_mhz=clock_during(rec))
        if current is None or current.source_hash() != rec["source_hash"]:
            out["stale"] = True
            out["stale_why"] = ("no longer in the registry" if current is None
                                else "its source changed after it was measured")
        return out

    def need(self, slide: str, *bids: str) -> list[dict]:
        recs = [self.record(b) for b in bids]
        lacking = [r["id"] for r in recs if not r["measured"]]
        if lacking:
            self.missing.setdefault(slide, []).extend(lacking)
        return recs


def clock_during(rec: dict) -> float | None:
    during = (rec.get("telemetry") or {}).get("during")
    return during["sm_clock_mhz"]["median"] if during else None


def device_context(doc: dict) -> dict:
    d = dict(doc["device"])
    cc = d["compute_capability"]
    d["arch"] = ARCH_NAMES.get(cc, f"compute capability {cc}")
    d["sm_name"] = "sm_" + cc.replace(".", "")
    d["subpartitions"] = SUBPARTITIONS_PER_SM
    d["warp_size"] = WARP_SIZE
    rates = PER_SM_FLOP_PER_CLK.get(cc)
    d["fp32_lanes_per_sm"] = rates["fp32"] // 2 if rates else None
    d["hbm_peak_gbps"] = d["mem_clock_max_mhz"] * 1e6 * 2 * d["mem_bus_width_bits"] / 8 / 1e9
    return d


def peaks_context(device: dict, gemm: dict) -> list[dict]:
    """Peak = SMs x per-SM rate x clock, at the maximum SM clock and at the median
    clock NVML saw while cuBLAS ran; beside it the fastest cuBLAS layout measured."""
    rates = PER_SM_FLOP_PER_CLK.get(device["compute_capability"])
    if not rates:
        return []
    rows = []
    for p, r in rates.items():
        peak = device["sm_count"] * r * device["sm_clock_max_mhz"] * 1e6 / 1e12
        runs = [c for c in gemm["cublas_rows"] if c["precision"] == p and c["tflops"] and not c["failed"]]
        best = max(runs, key=lambda c: c["tflops"]) if runs else None
        clock = best["clock_mhz"] if best else None
        run_peak = device["sm_count"] * r * clock * 1e6 / 1e12 if clock else None
        rows.append({"precision": p, "name": PRECISION_NAMES[p], "per_sm_per_clk": r, "tflops_max_clock": peak,
                     "clock_mhz": clock, "tflops_run_clock": run_peak, "measured": best,
                     "pct_of_peak": 100 * best["tflops"] / peak if best else None,
                     "pct_of_run_peak": 100 * best["tflops"] / run_peak if run_peak else None})
    return rows


MAX_BLOCKS_PER_SM = 32      # every architecture since Volta except Turing's 16


def occupancy(resources: dict, device: dict) -> dict:
    """Resident blocks and warps per SM from the kernel's resources and the device
    limits, and which limit binds (registers are allocated per warp in 256s; each
    block reserves 1 KiB of shared memory)."""
    threads = resources["threads_per_block"]
    warps = math.ceil(threads / device["warp_size"])
    regs_per_warp = math.ceil(resources["regs_per_thread"] * device["warp_size"] / 256) * 256
    smem = resources["smem_static_bytes"] + resources["smem_dynamic_bytes"]
    limits = {"threads": device["max_threads_per_sm"] // threads,
              "registers": (device["regs_per_sm"] // regs_per_warp) // warps if regs_per_warp else MAX_BLOCKS_PER_SM,
              "shared memory": device["smem_per_sm_bytes"] // (smem + 1024) if smem else MAX_BLOCKS_PER_SM,
              "blocks": MAX_BLOCKS_PER_SM}
    limiter = min(limits, key=limits.get)
    blocks = limits[limiter]
    max_warps = device["max_threads_per_sm"] // device["warp_size"]
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps, "occupancy_pct": 100 * blocks * warps / max_warps,
            "limited_by": limiter, "limits": limits}


def block_shape(resources: dict, shape: dict) -> tuple[int, int] | None:
    """The launch's block (x over columns of C, y over rows), from the recorded grid."""
    grid = resources.get("grid")
    if not grid or len(grid) != 2:
        return None
    bx, by = math.ceil(shape["n"] / grid[0]), math.ceil(shape["m"] / grid[1])
    return (bx, by) if bx * by == resources["threads_per_block"] else None


# The profile counters that say how busy a unit is, and the unit's name on the slide.
UTILIZATION = {"dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM",
               "l1tex__throughput.avg.pct_of_peak_sustained_active": "L1 / shared memory",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor cores (HMMA/HGMMA pipe)",
               "sm__instruction_throughput.avg.pct_of_peak_sustained_active": "SM instruction issue"}
# (a tensor-core kernel's SM busy is its tensor pipe's: on a tie the tensor cores are named)
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def waves(resources: dict, occupancy_: dict | None, device: dict) -> dict | None:
    """How the output tiles fall on the CTAs that run at once: a persistent kernel's grid, or
    every SM's resident blocks. The last wave's idle CTAs are time no tile order wins back."""
    tile = resources.get("tile") if resources else None
    if not tile or not occupancy_:
        return None
    tiles = (SHAPE.m // tile["BM"]) * (SHAPE.n // tile["BN"])
    at_once = resources.get("resident_ctas") or device["sm_count"] * occupancy_["blocks_per_sm"]
    n = tiles / at_once
    out = {"tiles": tiles, "at_once": at_once, "waves": n, "full_waves": math.ceil(n),
           "last_wave_ctas": tiles - (math.ceil(n) - 1) * at_once, "idle_pct": 100 * (1 - n / math.ceil(n)),
           "split": None}
    split = resources.get("split_wave")
    if split and split["left"]:
        # the last wave lasts as long as an owner's part or a helper's run of tails, whichever is longer
        k = split["k_tiles"]
        last = max(split["split"], split["rounds"] * (k - split["split"])) / k
        out["split"] = {**split, "last_wave": last, "split_pct": 100 * split["split"] / k,
                        "idle_pct": 100 * (1 - n / (split["full_waves"] + last))}
    return out


def busiest_unit(profile: dict) -> dict:
    """The unit closest to its peak: where a kernel's time goes."""
    name = max(UTILIZATION, key=lambda m: profile["metrics"].get(m, -1))
    return {"unit": UTILIZATION[name], "pct": profile["metrics"][name]}


# Code on a slide is set at 11 px (line height 1.4) below the title and a line of prose: this many
# lines fit. A longer kernel region shows its step's focus, and the whole region goes to backup slides.
MAX_CODE_LINES = 22


def code_view(source: str | None, focus: tuple[str, str] | None) -> dict | None:
    """What a step's code slide shows of its kernel file: the lines between its #region kernel
    markers when they fit, else the focus the catalogue names (first and last line, by a text each
    holds); then the whole region in pages of MAX_CODE_LINES for the backup slides."""
    if not source:
        return None
    lines = (ROOT / source).read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if "#region kernel" in line or "#endregion kernel" in line]
    region = lines[marks[0] + 1:marks[1]] if len(marks) == 2 else lines
    view = {"source": source, "snippet": source, "language": "python" if source.endswith(".py") else "cpp", "lines": len(region),
            "shown": None, "first": 1, "pages": []}
    if len(region) <= MAX_CODE_LINES:
        return view
    if not focus:
        raise BuildError(f"{source}: {len(region)} lines of kernel do not fit on a slide ({MAX_CODE_LINES}); "
                         f"name the step's focus in bench/catalogue.py")
    start = next((i for i, line in enumerate(region) if focus[0] in line), None)
    end = next((i for i, line in enumerate(region) if i >= (start or 0) and focus[1] in line), None)
    if start is None or end is None or end - start + 1 > MAX_CODE_LINES:
        raise BuildError(f"{source}: the focus {focus} is not a run of at most {MAX_CODE_LINES} lines of its kernel region")
    per_page = math.ceil(len(region) / math.ceil(len(region) / MAX_CODE_LINES))     # as even as the pages can be
    pages = [region[i:i + per_page] for i in range(0, len(region), per_page)]
    return {**view, "shown": textwrap.dedent("\n".join(region[start:end + 1])), "first": start + 1,
            "last": end + 1, "pages": [textwrap.dedent("\n".join(page)) for page in pages]}


def gemm_context(ctx: Context, device: dict) -> dict:
    cublas = {}
    for precision in cublas_lib.PRECISIONS:
        for layout in cublas_lib.LAYOUTS:
            r = ctx.record(cublas_lib.bench_id(precision, layout))
            r.update(precision=precision, layout=layout, layout_name=cublas_lib.LAYOUTS[layout])
            cublas[(precision, layout)] = r
    tf32 = [r for (precision, _), r in cublas.items() if precision == "tf32" and r["measured"] and not r["failed"]]
    best_tf32 = max(tf32, key=lambda r: r["tflops"]) if tf32 else None

    by_id = {r["id"]: r for r in cublas.values()}
    steps, prev = [], None
    for i, step in enumerate(catalogue.STEPS, 1):
        baseline = cublas[(step.precision, step.layout)]     # the naive FP32 kernel against cuBLAS FP32
        title = f"Kernel {i}: {step.title}"
        variants = []
        for variant in step.variants:
            r = ctx.record(variant.id)
            r["label"] = variant.label
            # the baseline: cuBLAS of the kernel's precision and layout, on the same operands, timed
            # in turns with it sample by sample (bench/harness.py); its figures are that timing's
            versus = r["record"].get("cublas")
            r["baseline"], r["ratio_spread"] = None, None
            if versus and r["tflops"]:
                base = by_id[versus["id"]]
                r["baseline"] = {"id": versus["id"], "precision": base["precision"].upper(),
                                 "layout_name": base["layout_name"], "timing": "in turns",
                                 "tflops": versus["tflops"], "time_ms": versus["time_ms"],
                                 "error": versus["check"]["rel_error"], "check": versus["check"]}
                r["baseline_tflops"] = versus["tflops"]
                r["pct_cublas"] = 100 * r["tflops"] / versus["tflops"]
                # turn by turn: what is left of the spread once both meet the same clock
                r["ratio_spread"] = spread(versus["ratio_by_turn"])
            res = r["record"].get("resources")
            r["resources"] = res
            r["occupancy"] = occupancy(res, device) if res else None
            r["odd_shape"] = r["record"].get("odd_shape")
            prof = r["record"].get("profile")
            r["profile"] = [{"name": prof["names"][m], "value": v} for m, v in prof["metrics"].items()] if prof else None
            r["busiest"] = busiest_unit(prof) if prof else None
            r["tensor_pct"] = prof["metrics"].get(TENSOR_PIPE) if prof else None
            variants.append(r)
        for slide in ("Code", "Diagram", "Performance"):
            ctx.need(f"{title} — {slide}", *(v["id"] for v in variants))
        best = variants[-1]
        usable = best["tflops"] and not best["failed"]
        # the diagram is drawn from the launch configuration the measured run recorded
        res = best["resources"] or {}
        block = block_shape(res, {"m": SHAPE.m, "n": SHAPE.n}) if "tile" not in res and res else None
        drawable = block or "tile" in res
        diagram = f"gemm_{step.key}.svg" if drawable else None
        if usable and prev:
            best["speedup"] = best["tflops"] / prev["best"]["tflops"]
            best["speedup_over"] = prev["title"]
        source = next((ctx.benchmarks[v["id"]].code for v in variants
                       if v["id"] in ctx.benchmarks and ctx.benchmarks[v["id"]].code), None)
        # a step of one kernel is named by its title; of several, by its title and its best's label
        name = f"{step.title} ({best['label']})" if len(variants) > 1 else step.title
        steps.append({"index": i, "key": step.key, "title": step.title, "name": name, "slide_title": title,
                      "technique": step.technique, "layout": step.layout, "layout_name": cublas_lib.LAYOUTS[step.layout],
                      "precision": step.precision, "baseline": baseline,
                      "source": source, "code": code_view(source, step.focus), "beyond": step.beyond,
                      "variants": variants, "best": best, "block": block, "diagram": diagram, "draw": step.diagram,
                      "measured": any(v["measured"] for v in variants),
                      "skip_reason": "; ".join(dict.fromkeys(v["reason"] for v in variants if v["status"] == "skipped"))})
        if usable:
            prev = steps[-1]
    measured_steps = [s for s in steps if s["best"]["tflops"] and not s["best"]["failed"]]
    headline = None
    if len(measured_steps) >= 2:
        first, top = measured_steps[0], max(measured_steps, key=lambda s: s["best"]["tflops"])
        last = top["best"]
        headline = {"from": first["best"], "to": last, "to_title": top["title"], "to_name": top["name"],
                    "speedup": last["tflops"] / first["best"]["tflops"]}
    # What the reference deck left on the table, as built here: its last step, then each step past it.
    reference_last = [s for s in measured_steps if not s["beyond"]][-1:]
    story = reference_last + [s for s in measured_steps if s["beyond"]]
    story = story if len(story) >= 2 else []
    top_waves = waves(headline["to"]["resources"], headline["to"]["occupancy"], device) if headline else None
    staged_epilogue = any("EPILOGUE_N" in ((s["best"]["resources"] or {}).get("tile") or {}) for s in story)
    return {"shape": {"m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "flops": SHAPE.flops,
                      "intensity_fp32": SHAPE.flops / (4 * (SHAPE.m * SHAPE.k + SHAPE.k * SHAPE.n + SHAPE.m * SHAPE.n))},
            "cublas": cublas, "cublas_rows": list(cublas.values()), "best_tf32": best_tf32,
            "steps": steps, "headline": headline, "balance": None, "story": story, "waves": top_waves,
            "staged_epilogue": staged_epilogue}


def _size_label(shape: list[int]) -> str:
    return str(shape[0]) if len(set(shape)) == 1 else "×".join(map(str, shape))


def sweep_context(ctx: Context, gemm: dict, device: dict) -> dict:
    """Each step's best kernel across sizes (bench/sweep.py), cuBLAS TF32 timed in turns beside it,
    and how close the best kernel stays to cuBLAS from WITHIN_FROM up."""
    recs = ctx.need("GEMM Across Sizes", *(f"sweep.{s['key']}" for s in gemm["steps"]))
    steps = [{"title": s["title"], "key": s["key"], "step": s, "summary": r, "record": r["record"]}
             for s, r in zip(gemm["steps"], recs) if r["measured"] and "rows" in r["record"]]
    if not steps:
        return {"steps": [], "sizes": [], "best": None, "top": None, "correct_everywhere": []}
    sizes = [_size_label(row["shape"]) for row in steps[0]["record"]["rows"]]
    for s in steps:
        s["cells"] = {_size_label(row["shape"]): row for row in s["record"]["rows"]}
    top = gemm["headline"] and next((s for s in steps if s["title"] == gemm["headline"]["to_title"]), None)
    best = None
    if top:
        rows = [r for r in top["record"]["rows"] if r["outcome"] == "correct"]
        large = [r for r in rows if min(r["shape"]) >= SWEEP_WITHIN_FROM]
        worst = min(large, key=lambda r: r["ratio_same_layout"]) if large else None
        best = {"title": top["title"], "within_from": SWEEP_WITHIN_FROM,
                "worst": worst and {"size": _size_label(worst["shape"]), "pct": 100 * worst["ratio_same_layout"]},
                "above": [_size_label(r["shape"]) for r in rows if r["ratio_same_layout"] >= 1],
                "refused": [_size_label(r["shape"]) for r in top["record"]["rows"] if r["outcome"] == "refused"],
                "wrong": [_size_label(r["shape"]) for r in top["record"]["rows"] if r["outcome"] == "wrong"],
                "small": None}
        at_reference = next((r for r in rows if r["shape"] == SHAPE.dims), None)
        best["at_reference"] = at_reference and {"tflops": at_reference["tflops"]["kernel"],
                                                 "pct": 100 * at_reference["ratio_same_layout"]}
        tile = (top["step"]["best"]["resources"] or {}).get("tile")
        if tile and rows:
            n = rows[0]["shape"]
            tiles = (n[0] // tile["BM"]) * (n[1] // tile["BN"])
            if tiles < device["sm_count"]:
                best["small"] = {"size": _size_label(n), "tiles": tiles, "sms": device["sm_count"],
                                 "tile": f"{tile['BM']}×{tile['BN']}"}
    correct_everywhere = [s["title"] for s in steps if all(r["outcome"] == "correct" for r in s["record"]["rows"])]
    return {"steps": steps, "sizes": sizes, "best": best, "top": top, "correct_everywhere": correct_everywhere}


def tune_context(ctx: Context) -> dict:
    """The tuner's space, its trials ranked by their ratio to cuBLAS (timed in turns), and the
    winner against the hand-picked configuration, head to head (bench/tune.py)."""
    (r,) = ctx.need("Tuning the Persistent Kernel", "tune.persistent")
    if "trials" not in r["record"]:
        return {**r, "trials": None}
    rec = r["record"]
    deepest = rec["params"]["stages_max"]          # by tile width: what STAGES DEEPEST came to

    def stages(config: dict) -> int | None:
        return deepest.get(str(config["BN"])) if config["STAGES"] == catalogue.DEEPEST else config["STAGES"]

    trials = [{**t, "stages": stages(t["config"]), "winner": i == rec["winner"], "hand_picked": i == rec["hand_picked"]}
              for i, t in enumerate(rec["trials"])]
    ranked = sorted((t for t in trials if "ratio" in t), key=lambda t: -t["ratio"])
    final = {name: {**f, "stages": stages(f["config"])} if "config" in f else f for name, f in rec["final"].items()}
    gain = (final["winner"]["ratio"] / final["hand_picked"]["ratio"] - 1) * 100 if "hand_picked" in final else None
    versus = ctx.record(rec["params"]["kernel"])["record"].get("cublas")   # the hand-picked kernel on the GEMM slides
    return {**r, "trials": trials, "ranked": ranked, "space": rec["params"]["space"], "bm": rec["params"]["bm"],
            "table_pct": 100 * versus["ratio"] if versus else None,
            "stages_max": deepest, "deepest": catalogue.DEEPEST, "final": final, "gain_pct": gain,
            "same_as_hand_picked": rec["winner"] == rec["hand_picked"],
            "errors": [t for t in trials if t["outcome"] == "error"],
            "wrong": [t for t in trials if t["outcome"] == "wrong"]}


def settle_context(ctx: Context, gemm: dict) -> dict:
    """The headline kernel and cuBLAS from a rest to a steady state (bench/settle.py): the spread of
    the GEMM harness's settling window of consecutive samples by when its last sample ends, when the
    harness's rule would start timing, when the spread stays under SETTLE_SPREAD, how far the clock
    fell, and the spread of the headline's own GEMM timing beside it."""
    (r,) = ctx.need("Timing Under the Power Cap", "settle.headline")
    if "series" not in r["record"]:
        return _absent(r, runs=None)
    rec = r["record"]
    rule = rec["params"]["gemm_settle_rule"]
    width = rule["window"]
    runs = []
    for name, series in rec["series"].items():
        rows = series["rows"]
        ms = [row["ms"] for row in rows]
        windows = [{"t_s": rows[i + width - 1]["t_s"], "spread": spread(summarize(ms[i:i + width]))}
                   for i in range(len(rows) - width + 1)]
        calm = [w["spread"] < SETTLE_SPREAD for w in windows]
        settled = next((w["t_s"] for i, w in enumerate(windows) if all(calm[i:])), None) if windows else None
        rule_s = next((w["t_s"] for w in windows if w["spread"] < rule["spread"] and w["t_s"] >= rule["min_s"]), None)
        first, last = rows[:width], rows[-width:]
        mid = lambda part, key: summarize([row[key] for row in part])["median"]
        runs.append({"name": name, "batch": series["batch"], "samples": len(rows), "windows": windows,
                     "settled_s": settled, "rule_s": rule_s, "first_spread": windows[0]["spread"] if windows else None,
                     "last_spread": windows[-1]["spread"] if windows else None,
                     "clock_first": mid(first, "sm_clock_mhz"), "clock_last": mid(last, "sm_clock_mhz"),
                     "temp_first": rows[0]["temperature_c"], "temp_last": rows[-1]["temperature_c"],
                     "slowdown": mid(last, "ms") / mid(first, "ms") - 1})
    by = {run["name"]: run for run in runs}
    kernel_id = rec["params"]["kernel"]
    kernel = ctx.record(kernel_id)
    measured = kernel["record"] if kernel["measured"] else {}
    title = next((s["title"] for s in gemm["steps"] if any(v["id"] == kernel_id for v in s["variants"])), kernel_id)
    return {**r, "runs": runs, "by": by, "params": rec["params"], "rule": rule, "title": title, "window": width,
            "target_pct": 100 * SETTLE_SPREAD, "gemm_settle": measured.get("settle"),
            "gemm_spread": measured.get("time_ms") and spread(measured["time_ms"])}


def hbm_context(ctx: Context, device: dict) -> dict:
    (r,) = ctx.need("HBM Bandwidth Scaling", "hbm.copy_scaling")
    if "rows" not in r["record"]:
        return {**r, "rows": None, "memcpy": None, "best": None, "params": None, "per_sm": None}
    rec = r["record"]
    memcpy = rec["memcpy"]
    rows = [{**row, "pct_memcpy": 100 * row["gbps"] / memcpy["gbps"],
             "pct_peak": 100 * row["gbps"] / device["hbm_peak_gbps"]} for row in rec["rows"]]
    best = max(rows, key=lambda row: row["gbps"])
    return {**r, "rows": rows, "memcpy": {**memcpy, "pct_peak": 100 * memcpy["gbps"] / device["hbm_peak_gbps"]},
            "best": best, "params": rec["params"],
            "per_sm": next((row for row in rows if row["threads"] > 32 and row["blocks"] == 1), None)}


def _absent(r: dict, **empty) -> dict:
    return {**r, **empty}


def instruction_context(ctx: Context) -> dict:
    (r,) = ctx.need("Instruction Latency — Results", "latency.instruction")
    if "rows" not in r["record"]:
        return _absent(r, rows=None)
    rec = r["record"]
    ilps = rec["params"]["ilps"]
    rows = []
    for row in rec["rows"]:
        cycles = [(int(ilp), c) for ilp, c in sorted(row["cycles"].items(), key=lambda kv: int(kv[0]))]
        best = min(c for _, c in cycles)
        issue = row["issue_cycles_per_subpartition"]
        sass1 = row["sass"][str(ilps[0])]      # the worker hands records over as JSON: string keys
        rows.append({
            "op": row["op"], "name": row["name"], "cycles": cycles, "latency": cycles[0][1],
            "single_warp_best": best, "at_highest_ilp": cycles[-1][1], "issue": issue,
            # the fewest chains whose cycles/instruction come within 10% of the best one warp reaches
            "ilp_to_best": next(i for i, c in cycles if c <= 1.1 * best),
            "vs_issue_pct": 100 * (cycles[-1][1] / issue - 1),
            "sass_per_op": sass1["per_op"], "mix": sass1["mix_per_op"],
            "multi": sass1["per_op"] >= 1.5, "warps_per_sm": row["warps_per_sm"],
            "no_overlap": cycles[-1][1] >= 0.8 * cycles[0][1],
        })
    by_op = {row["op"]: row for row in rows}
    simple = [by_op[o] for o in ("FADD", "FMUL", "FFMA") if o in by_op]
    return {**r, "rows": rows, "ilps": [int(i) for i in ilps], "params": rec["params"], "by_op": by_op,
            "simple_latency": max(x["latency"] for x in simple) if simple else None,
            "multi": [x for x in rows if x["multi"]], "no_overlap": [x for x in rows if x["no_overlap"]]}


def memory_context(ctx: Context, device: dict) -> dict:
    (r,) = ctx.need("Memory Latency", "latency.memory")
    if "levels" not in r["record"]:
        return _absent(r, levels=None, sweep=None, hbm_step_bytes=None)
    rec = r["record"]
    levels = [{**lv, "ratio": lv["cycles"] / rec["levels"][0]["cycles"]} for lv in rec["levels"]]
    by = {lv["level"]: lv for lv in levels}
    sweep = rec["sweep"]
    # Where the sweep reaches HBM latency: the first size within 10% of the largest sizes' plateau;
    # the step is put halfway (geometrically) between it and the size before.
    hbm_plateau = sorted(s["cycles"] for s in sweep[-3:])[1]
    first = next(i for i, s in enumerate(sweep) if s["cycles"] >= 0.9 * hbm_plateau)
    step = math.sqrt(sweep[first]["bytes"] * sweep[first - 1]["bytes"]) if first else None
    # and where it first leaves the L2 plateau
    l2 = by.get("L2", {}).get("cycles")
    leave = next((s["bytes"] for s in sweep if l2 and s["bytes"] > 1 << 20 and s["cycles"] > 1.2 * l2), None)
    middle = [s for s in sweep if leave and leave <= s["bytes"] < sweep[first]["bytes"]]
    return {**r, "levels": levels, "by": by, "sweep": sweep, "params": rec["params"],
            "hbm_step_bytes": step, "hbm_step_vs_l2_pct": 100 * (step / device["l2_bytes"] - 1) if step else None,
            "l2_leave_bytes": leave, "middle_cycles": sorted(s["cycles"] for s in middle)[len(middle) // 2] if middle else None,
            "clock_mhz": 1000 * levels[0]["cycles"] / levels[0]["ns"]}


def little_context(hbm: dict, mem: dict) -> dict | None:
    """Little's law: bytes in flight = bandwidth x latency, for the loads (half the copy's bytes)."""
    if not (hbm["rows"] and mem["levels"] and hbm["per_sm"] and "HBM" in mem["by"]):
        return None
    latency_ns = mem["by"]["HBM"]["ns"]
    need = hbm["best"]["gbps"] / 2 * latency_ns                 # GB/s x ns = bytes
    per_sm = hbm["per_sm"]["gbps"] / 2 * latency_ns
    return {"latency_ns": latency_ns, "bytes_needed": need, "bytes_per_sm": per_sm, "sms_needed": need / per_sm,
            "per_sm_gbps": hbm["per_sm"]["gbps"]}


def l2_context(ctx: Context, hbm: dict) -> dict:
    (r,) = ctx.need("L2 Bandwidth Scaling", "l2.bandwidth_scaling")
    if "rows" not in r["record"]:
        return _absent(r, rows=None)
    rec = r["record"]
    best_read = max(rec["rows"], key=lambda x: x["read"]["gbps"])
    best_copy = max(rec["rows"], key=lambda x: x["copy"]["gbps"])
    return {**r, "rows": rec["rows"], "params": rec["params"], "best_read": best_read, "best_copy": best_copy,
            "read_vs_hbm": best_read["read"]["gbps"] / hbm["best"]["gbps"] if hbm["rows"] else None}


def transpose_context(ctx: Context) -> dict:
    (r,) = ctx.need("Matrix Transpose", "transpose.all")
    if "rows" not in r["record"]:
        return _absent(r, rows=None)
    rec = r["record"]
    by = {row["key"]: row for row in rec["rows"]}
    best = max(rec["rows"], key=lambda x: x["gbps"])
    padding_gain = by["smem_padded"]["gbps"] / by["smem"]["gbps"] if {"smem", "smem_padded"} <= by.keys() else None
    return {**r, "rows": rec["rows"], "copy": rec["copy"], "params": rec["params"], "best": best, "by": by,
            "padding_gain": padding_gain}


def build_context(doc: dict, benchmarks: dict) -> tuple[dict, Context]:
    ctx = Context(doc, benchmarks)
    device = device_context(doc)
    gemm = gemm_context(ctx, device)
    gemm["sweep"] = sweep_context(ctx, gemm, device)
    gemm["tune"] = tune_context(ctx)
    gemm["settle"] = settle_context(ctx, gemm)
    hbm = hbm_context(ctx, device)
    peaks = peaks_context(device, gemm)
    tf32_peak = next((p for p in peaks if p["precision"] == "tf32"), None)
    if tf32_peak and hbm["rows"]:
        balance = 1000 * tf32_peak["tflops_max_clock"] / hbm["best"]["gbps"]
        gemm["balance"] = {"tflops": tf32_peak["tflops_max_clock"], "gbps": hbm["best"]["gbps"],
                           "flop_per_byte": balance, "margin": gemm["shape"]["intensity_fp32"] / balance}
    instr = instruction_context(ctx)
    mem = memory_context(ctx, device)
    l2 = l2_context(ctx, hbm)
    transpose = transpose_context(ctx)
    stale = sorted(bid for bid in doc["benchmarks"] if ctx.record(bid)["stale"])
    quick = sorted(bid for bid, rec in doc["benchmarks"].items() if rec.get("quick"))
    failed = [{"id": bid, "reason": rec["reason"]} for bid, rec in doc["benchmarks"].items()
              if rec["status"] == "failed"]
    tf32_clock = tf32_peak["clock_mhz"] if tf32_peak else None
    context = {"device": device, "software": doc["software"], "peaks": peaks, "tf32_clock_mhz": tf32_clock,
               "gemm": gemm, "instr": instr, "mem": mem, "l2": l2, "transpose": transpose,
               "little": little_context(hbm, mem), "hbm": hbm, "stale": stale, "quick": quick,
               "measured_count": len(doc["benchmarks"]), "failed": failed,
               "missing": ctx.missing}
    return context, ctx


def _peak(c: dict, precision: str, key: str):
    row = next((p for p in c["peaks"] if p["precision"] == precision), None)
    value = row and row[key]
    return value["tflops"] if isinstance(value, dict) else value


def _latency_ns(c: dict, level: str):
    return c["mem"]["by"][level]["ns"] if c["mem"]["levels"] and level in c["mem"]["by"] else None


# What the comparison sets side by side: (group, label, unit, digits, value from one GPU's context).
COMPARED = (
    ("chip", "SMs", "", 0, lambda c: c["device"]["sm_count"]),
    ("chip", "SM clock, max", "MHz", 0, lambda c: c["device"]["sm_clock_max_mhz"]),
    ("chip", "L2 cache", "MiB", 0, lambda c: c["device"]["l2_bytes"] / 2**20),
    ("chip", "HBM", "GiB", 0, lambda c: c["device"]["memory_bytes"] / 2**30),
    ("chip", "power limit", "W", 0, lambda c: c["device"]["power_limit_w"]),
    ("peak", "TF32 tensor peak, max clock", "TFLOPS", 1, lambda c: _peak(c, "tf32", "tflops_max_clock")),
    ("peak", "HBM bandwidth, theoretical", "GB/s", 0, lambda c: c["device"]["hbm_peak_gbps"]),
    ("measured", "cuBLAS TF32, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "tf32", "measured")),
    ("measured", "cuBLAS BF16, fastest layout", "TFLOPS", 1, lambda c: _peak(c, "bf16", "measured")),
    ("measured", "SM clock while cuBLAS TF32 ran", "MHz", 0, lambda c: c["tf32_clock_mhz"]),
    ("measured", "HBM copy, best kernel", "GB/s", 0, lambda c: c["hbm"]["best"]["gbps"] if c["hbm"]["rows"] else None),
    ("measured", "cudaMemcpy", "GB/s", 0, lambda c: c["hbm"]["memcpy"]["gbps"] if c["hbm"]["rows"] else None),
    ("measured", "L2 read, best", "GB/s", 0, lambda c: c["l2"]["best_read"]["read"]["gbps"] if c["l2"]["rows"] else None),
    ("measured", "transpose, best kernel", "GB/s", 0, lambda c: c["transpose"]["best"]["gbps"] if c["transpose"]["rows"] else None),
    ("measured", "L2 hit latency", "ns", 0, lambda c: _latency_ns(c, "L2")),
    ("measured", "HBM latency", "ns", 0, lambda c: _latency_ns(c, "HBM")),
)


def _ratio(a, b):
    return a / b if a and b else None


def compare_context(gpus: list[dict]) -> dict | None:
    """The GPUs side by side: this deck's first, each other one as a ratio to it."""
    if len(gpus) < 2:
        return None
    base = gpus[0]
    rows = []
    for group, label, unit, digits, value in COMPARED:
        values = [value(c) for c in gpus]
        rows.append({"group": group, "label": label, "unit": unit, "digits": digits, "per_gpu": values,
                     "ratios": [_ratio(v, values[0]) for v in values[1:]]})
    steps = []
    for i, step in enumerate(base["gemm"]["steps"]):
        bests = [c["gemm"]["steps"][i]["best"] for c in gpus]
        ok = [b if b["tflops"] and not b["failed"] else None for b in bests]
        steps.append({"title": step["title"], "name": step["name"], "beyond": step["beyond"], "gpus": ok,
                      "ratios": [_ratio(b and b["tflops"], ok[0] and ok[0]["tflops"]) for b in ok[1:]]})
    by = {r["label"]: r for r in rows}
    others = []
    for j, c in enumerate(gpus[1:]):
        hand = [(s["ratios"][j], s["title"]) for s in steps if s["ratios"][j]]
        others.append({
            "name": c["device"]["name"],
            "same_sms": c["device"]["sm_count"] == base["device"]["sm_count"],
            "same_clock": c["device"]["sm_clock_max_mhz"] == base["device"]["sm_clock_max_mhz"],
            "compute_ratio": _ratio(c["device"]["sm_count"] * c["device"]["sm_clock_max_mhz"],
                                    base["device"]["sm_count"] * base["device"]["sm_clock_max_mhz"]),
            **{key: by[label]["ratios"][j] for key, label in (
                ("hbm_peak_ratio", "HBM bandwidth, theoretical"), ("copy_ratio", "HBM copy, best kernel"),
                ("memcpy_ratio", "cudaMemcpy"), ("l2_ratio", "L2 read, best"), ("cublas_ratio", "cuBLAS TF32, fastest layout"),
                ("clock_ratio", "SM clock while cuBLAS TF32 ran"), ("hbm_latency_ratio", "HBM latency"),
                ("l2_size_ratio", "L2 cache"), ("memory_ratio", "HBM"))},
            "copy_pct_peak": [100 * _ratio(by["HBM copy, best kernel"]["per_gpu"][k], by["HBM bandwidth, theoretical"]["per_gpu"][k])
                              if by["HBM copy, best kernel"]["per_gpu"][k] else None for k in (j + 1, 0)],
            "steps_lo": min(hand) if hand else None, "steps_hi": max(hand) if hand else None,
        })
        others[-1]["cublas_per_clock"] = _ratio(others[-1]["cublas_ratio"], others[-1]["clock_ratio"])
    differing = ([(r["label"], r["ratios"]) for r in rows if r["group"] == "measured" and any(r["ratios"])]
                 + [(f"GEMM: {s['title']}", s["ratios"]) for s in steps if any(s["ratios"])])
    return {"names": [c["device"]["name"] for c in gpus], "rows": rows, "by": by, "steps": steps, "others": others,
            "differing": differing}


# --- formatting: the templates' only arithmetic -------------------------------

def fmt_num(x, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        raise ValueError(f"no number to format: {x!r}")
    return f"{x:,.{digits}f}"


def fmt_sig(x, sig: int = 3) -> str:
    """Significant figures, never scientific notation: 0.234, 27.9, 2,981."""
    if x == 0:
        return "0"
    digits = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    return fmt_num(x, digits)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (a third of build.py's time), where the checkout is
    writable. Jinja checks a cached template against its source alone, so the folder is named
    for the code that sets up the environment (filters, escaping) and the Jinja release."""
    key = hashlib.sha256(b"".join(p.read_bytes() for p in (Path(__file__), SLIDES_DIR / "escape.py"))
                         + jinja2.__version__.encode()).hexdigest()[:12]
    folder = ROOT / ".cache" / "jinja" / key
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.parent.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder)) if os.access(folder, os.W_OK) else None


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(SLIDES_DIR), bytecode_cache=_bytecode_cache(),
        # Slidev's markdown uses Vue's {{ }}; these delimiters cannot collide with it.
        block_start_string="[%", block_end_string="%]",
        variable_start_string="[[", variable_end_string="]]",
        comment_start_string="[#", comment_end_string="#]",
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True,
        # Every [[ ]] output is data: escaped for Markdown, Vue and HTML unless it is markup the
        # templates made (a macro's output); see slides/escape.py.
        autoescape=True, finalize=escape.finalize)
    env.filters.update(num=fmt_num, sig=fmt_sig, bytes=figures.fmt_bytes, code_block=code_block,
                       count=lambda n, noun: f"{n:,} {noun}{'' if n == 1 else 's'}",
                       yaml_str=escape.yaml_string, join=_join,
                       replace=lambda s, old, new: str(s).replace(old, new))   # plain text, escaped on output
    return env


def code_block(code: str, language: str) -> Markup:
    """A kernel's own lines as a fenced block, verbatim: code is not data to escape, but it must
    not close the fence it is in."""
    if "```" in code:
        raise BuildError("a kernel's code holds a Markdown fence (```)")
    return Markup(f"```{language}\n{code}\n```")


def _join(items, separator: str = "") -> Markup:
    """Jinja's join escapes its items for HTML alone; these are escaped for the slide."""
    return Markup(separator).join(escape.finalize(item if isinstance(item, Markup) else str(item)) for item in items)


FRONTMATTER_START = re.compile(r"^[A-Za-z][\w-]*:")


SVG_SIZE = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)"')


def figure_tag(svgs: dict[str, str]):
    """The templates' ``figure(name, classes)``: the figure shown at the width it was drawn, so
    that the sizes of its text are the sizes a room sees (slides/figures.py draws to the slide)."""
    def figure(name: str, classes: str = "") -> Markup:
        if name not in svgs:
            raise BuildError(f"a slide shows {name}, which no figure function drew")
        width = SVG_SIZE.search(svgs[name]).group(1)
        return Markup(f'<img src="./svgs/{name}" class="{classes}" style="width: {width}px; max-width: none" />')
    return figure


def render(context: dict, svgs: dict[str, str]) -> str:
    """Sections in file-name order, joined by slide separators. A section that
    opens with its own frontmatter (``layout: section``) follows the separator
    directly; any other starts after a blank line, so Slidev does not read its
    first lines as frontmatter."""
    env = environment()
    env.globals["figure"] = figure_tag(svgs)
    sections = sorted(p.name for p in SLIDES_DIR.glob("[0-9]*.md.j2"))
    parts = [env.get_template(name).render(**context).strip() for name in sections]
    parts = [p for p in parts if p]            # a section with nothing to show (no comparison) is left out
    return parts[0] + "".join("\n\n---\n" + ("" if FRONTMATTER_START.match(p) else "\n") + p
                              for p in parts[1:]) + "\n"


NODE_FILE = re.compile(r"-x(\d+)\.yaml$")      # results/<gpu-slug>-x<GPUs>.yaml: a node's file


def comparable_files(results: Path) -> list[Path]:
    """The other GPUs' results files beside ``results``: what the comparison section sets beside it."""
    return sorted(p for p in Path(results).parent.glob("*.yaml")
                  if p.resolve() != Path(results).resolve() and not NODE_FILE.search(p.name))


def node_files(results: Path) -> list[Path]:
    """This GPU's node files beside ``results`` (<slug>-x<N>.yaml), the most GPUs first."""
    found = [p for p in Path(results).parent.glob(f"{Path(results).stem}-x*.yaml") if NODE_FILE.search(p.name)]
    return sorted(found, key=lambda p: -int(NODE_FILE.search(p.name).group(1)))


class BuildError(Exception):
    """The deck cannot be built from these results; the message names the file."""


def comparison(context: dict, others, benchmarks: dict, warn=None) -> dict | None:
    """The comparison section of ``context`` beside ``others`` ((path, document) pairs). A
    document the deck cannot be built from is left out with ``warn(message)`` when a warning
    is asked for, and is an error otherwise."""
    accepted, section = [], None
    for path, other in others:
        try:
            candidate = build_context(other, benchmarks)[0]
            section = compare_context([context, *accepted, candidate])
        except Exception as e:      # a neighbour's fault must not stop this GPU's deck
            message = f"{path}: cannot be compared ({type(e).__name__}: {schema.one_line(e, 200)})"
            if warn is None:
                raise BuildError(message) from e
            warn(message)
            continue
        accepted.append(candidate)
    return section


def write_deck(out_dir: Path, deck: str, svgs: dict[str, str]) -> None:
    """Write slides.md and svgs/ all or nothing: everything is written into a staging folder
    inside ``out_dir`` first, then renamed into place (the files it replaces kept as hard links
    until the last rename, and put back if one fails). A staging folder left by a build that
    was killed is removed first."""
    from bench.results import write_atomic
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for leftover in out_dir.glob(".build-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    stage = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir))
    moves = [(stage / "svgs" / name, out_dir / "svgs" / name) for name in svgs] + [(stage / "slides.md", out_dir / "slides.md")]
    done, kept = [], []
    try:
        for name, svg in svgs.items():
            write_atomic(stage / "svgs" / name, svg)
        write_atomic(stage / "slides.md", deck)
        (out_dir / "svgs").mkdir(exist_ok=True)
        (stage / "old").mkdir()
        for i, (_, target) in enumerate(moves):
            if target.is_dir():
                raise IsADirectoryError(f"{target} is a folder, where the deck writes a file")
            if target.exists():
                os.link(target, stage / "old" / str(i))
                kept.append((stage / "old" / str(i), target))
        for new, target in moves:
            os.replace(new, target)
            done.append(target)
    except BaseException:
        for old, target in kept:                # what was replaced comes back
            if target in done:
                os.replace(old, target)
        replaced = {target for _, target in kept}
        for target in done:
            if target not in replaced:          # new this time: it goes again
                target.unlink(missing_ok=True)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def multigpu(node, benchmarks: dict, ctx: Context) -> dict:
    """The multi-GPU section from ``node`` ((path, document) of a node's file, or None)."""
    path, doc = node or (None, None)
    if doc is None:
        ctx.missing.setdefault("Past One GPU", []).extend(multigpu_section.IDS)
        return multigpu_section.context(None, {})
    if "node" not in doc:
        raise BuildError(f"{path}: not a node's results file (it has no node section)")
    node_ctx = Context(doc, benchmarks)
    records = {bid: node_ctx.record(bid) for bid in multigpu_section.IDS}
    try:
        return multigpu_section.context(doc, records)
    except Exception as e:
        raise BuildError(f"{path}: the multi-GPU section cannot be built from it ({type(e).__name__}: "
                         f"{schema.one_line(e, 200)})") from e


def build(results: Path, out_dir: Path = ROOT, compare=(), warn=None, node=None) -> dict:
    """Render the deck of ``results``, with a comparison section when ``compare`` holds other GPUs'
    results ((path, loaded document) pairs; see ``comparison`` for ``warn``) and a multi-GPU section
    from ``node``, the (path, document) of a node's file (``results`` itself when it is one)."""
    doc = schema.load(results)
    benchmarks = registry.discover()
    try:
        context, ctx = build_context(doc, benchmarks)
    except Exception as e:           # valid by the schema, yet missing what a slide needs
        raise BuildError(f"{results}: the deck cannot be built from it ({type(e).__name__}: "
                         f"{schema.one_line(e, 200)})") from e
    context["multigpu"] = multigpu(node or ((results, doc) if "node" in doc else None), benchmarks, ctx)
    context["compare"] = comparison(context, compare, benchmarks, warn)
    for step in context["gemm"]["steps"]:      # Slidev resolves snippet paths from the deck's folder
        if step["source"]:
            step["source"] = Markup(os.path.relpath(ROOT / step["source"], Path(out_dir).resolve()))   # a path, not data
            step["code"]["snippet"] = step["source"]
    svgs = {**figures.draw_all(context), **multigpu_section.draw(context["multigpu"])}
    deck = render(context, svgs)                 # renders fully before anything is written
    write_deck(out_dir, deck, svgs)
    return context


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help=f"results file (default {DEFAULT_RESULTS.relative_to(ROOT)})")
    ap.add_argument("--out-dir", type=Path, default=ROOT, help="where slides.md and svgs/ go (default: the repository root)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--compare", type=Path, nargs="+", metavar="RESULTS",
                       help="results files of other GPUs for the comparison section (default: every other "
                            "results file beside --results; one that does not validate is left out with a warning)")
    which.add_argument("--no-compare", action="store_true", help="leave the comparison section out")
    ap.add_argument("--node", type=Path, metavar="RESULTS",
                    help="a node's results file (python -m bench on 2+ GPUs) for the multi-GPU section (default: "
                         "<results>-x<N>.yaml beside --results, the most GPUs; one that does not validate is "
                         "left out with a warning)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    compare = []
    left_out = lambda message: print(f"build.py: left out of the comparison: {message}", file=sys.stderr)
    try:
        if args.compare:                # named: each must validate and build
            compare = [(path, schema.load(path)) for path in args.compare]
        elif not args.no_compare:       # found beside --results: a broken one is left out
            for path in comparable_files(args.results):
                try:
                    compare.append((path, schema.load(path)))
                except schema.ResultsError as e:
                    left_out(e)
        node = (args.node, schema.load(args.node)) if args.node else None
        for path in ([] if args.node else node_files(args.results)):
            try:
                node = (path, schema.load(path))
                break
            except schema.ResultsError as e:
                print(f"build.py: left out of the multi-GPU section: {e}", file=sys.stderr)
        context = build(args.results, args.out_dir, compare, warn=None if args.compare else left_out, node=node)
    except (schema.ResultsError, BuildError) as e:
        print(f"build.py: {e}\nNothing was written.", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"build.py: cannot write the deck into {args.out_dir}: {e}\nNothing was written.", file=sys.stderr)
        return 1
    n_missing = sum(len(v) for v in context["missing"].values())
    say = lambda text: print(escape.plain_text(text, 2000))   # names and reasons from the file: no escapes
    say(f"wrote slides.md and svgs/ for {context['device']['name']} in {time.perf_counter() - t0:.2f} s"
        + (f", compared with {', '.join(context['compare']['names'][1:])}" if context["compare"] else ""))
    if context["missing"]:
        say(f"not measured on this GPU ({n_missing} results on {len(context['missing'])} slides):")
        for slide, ids in context["missing"].items():
            say(f"  {slide}: {', '.join(dict.fromkeys(ids))}")
    for bid in context["stale"]:
        say(f"STALE: {bid} was measured with code that has changed since; rerun python -m bench --only {bid}")
    for f in context["failed"]:
        say(f"FAILED: {f['id']}: {f['reason']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
