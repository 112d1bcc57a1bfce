"""The closing slides, from the sections they read: the steps past the reference deck (gemm's
story), what is still on the table (each track's share of its library, of its peak and of DeepGEMM,
and the clock the power cap leaves), and the takeaways, each lesson with the one number that proves
it. Template: missing.md.j2."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm import catalogue
from slides.device import pct_of_peak
from slides.kit import (ACCENT, GRID, GROUP, INK, MUTED, PALETTE, Bar, Line, bar_chart, drawing, text,
                        text_width)
from slides.records import Context
import slides.atlas
import slides.device
import slides.fp8
import slides.gemm
import slides.l2
import slides.memory_latency
import slides.multigpu
import slides.overlap
import slides.precision
import slides.tune

TENSOR_CORES = ("HMMA", "HGMMA")        # SASS of the tensor cores' instructions: a step that runs on them


# --- Past the Reference Deck ------------------------------------------------------------------------

def verdict(best: dict) -> str | None:
    """A step's change against the step before, as the table says it: "tie" where its interval (or, timed
    apart, the two timings' spread) holds no change, "slower", else "gained"; None without a change."""
    change = best.get("change")
    if not change or not best.get("speedup"):
        return None
    if change["tie"] or change["within_noise"]:
        return "tie"
    return "slower" if change["slower"] or best["speedup"] < 1 else "gained"


def story(gemm: dict) -> dict | None:
    """The reference deck's last step and each step built past it, each its share of the cuBLAS it
    took turns with and its change against the step before; how many gained, tied and slowed."""
    rows = [{"name": s.name, "beyond": s.beyond, "pct": s.best["pct_cublas"], "tflops": s.best["tflops"],
             "speedup": s.best.get("speedup"), "verdict": verdict(s.best) if s.beyond else None}
            for s in gemm.story]
    rows = [r for r in rows if r["pct"]]
    if len(rows) < 2 or rows[0]["beyond"]:
        return None
    beyond = rows[1:]
    counts = {v: sum(1 for r in beyond if r["verdict"] == v) for v in ("gained", "tie", "slower")}
    return {"rows": rows, "first": rows[0], "last": rows[-1], "steps": len(beyond), "counts": counts,
            "baseline": gemm.story[-1].best["baseline"]["precision"]}


def story_figure(st: dict, width: int = 860) -> str:
    """Each step's share of the cuBLAS it took turns with, a bar from 100% (left: behind it, right:
    ahead); the reference deck's last step muted, the steps past it lit; its change beside each."""
    rows = st["rows"]
    top, row_h, bottom, size = 44, 30, 30, 12
    h = top + row_h * len(rows) + bottom
    dwg = drawing(width, h)
    change_w = 118                                      # the column of changes, at the right
    left = max(text_width(r["name"], size) for r in rows) + 20
    pcts = [r["pct"] for r in rows]
    lo, hi = min(pcts + [100.0]), max(pcts + [100.0])
    pad = 46                                            # room for a bar's value past its end
    plot = (left + pad, width - change_w - pad)
    span = (hi - lo) or 1.0
    x_of = lambda v: plot[0] + (plot[1] - plot[0]) * (v - lo) / span
    text(dwg, (left, 16), f"% of cuBLAS {st['baseline']} in the same turns, each step's best", size=12, color=MUTED)
    text(dwg, (width - 4, 16), "against the step before,", size=11, color=MUTED, anchor="end")
    text(dwg, (width - 4, 30), "in turns", size=11, color=MUTED, anchor="end")
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50) if span / s <= 8)
    t = step * int(lo // step)
    while t <= hi + 1e-9:
        if t >= lo - 1e-9:
            dwg.add(dwg.line((x_of(t), top - 4), (x_of(t), h - bottom), stroke=GRID))
            text(dwg, (x_of(t), h - bottom + 18), f"{t:g}%", size=11, color=MUTED, anchor="middle")
        t += step
    for i, r in enumerate(rows):
        y = top + i * row_h
        mid = y + row_h / 2 + 4
        text(dwg, (left - 10, mid), r["name"], size=size, anchor="end", color=INK if r["beyond"] else MUTED)
        a, b = sorted((x_of(100.0), x_of(r["pct"])))
        dwg.add(dwg.rect((a, y + 5), (max(b - a, 1), row_h - 10), rx=2, fill=ACCENT if r["beyond"] else GROUP))
        value = f"{r['pct']:.1f}%"
        if r["pct"] >= 100:
            text(dwg, (b + 5, mid), value, size=11, weight="bold" if r is rows[-1] else "normal")
        else:
            text(dwg, (a - 5, mid), value, size=11, anchor="end", weight="bold" if r is rows[-1] else "normal")
        if r["verdict"]:
            pct = f"{100 * (r['speedup'] - 1):+.1f}%"
            change = {"gained": pct, "tie": "a tie", "slower": f"{pct}, slower"}[r["verdict"]]
            text(dwg, (width - 4, mid), change, size=11, anchor="end", color=INK if r["verdict"] == "gained" else MUTED)
        elif not r["beyond"]:
            text(dwg, (width - 4, mid), "the reference deck's last", size=11, anchor="end", color=MUTED)
    dwg.add(dwg.line((x_of(100.0), top - 4), (x_of(100.0), h - bottom), stroke=INK, stroke_width=1.5))
    text(dwg, (x_of(100.0) - 6, top - 6), "← behind it", size=11, color=MUTED, anchor="end")
    text(dwg, (x_of(100.0) + 6, top - 6), "ahead of it →", size=11, color=MUTED)
    return dwg.tostring()


# --- Past the Reference Deck — Table ---------------------------------------------------------------

COLUMNS = ("Step", "TFLOPS", "vs the step before, in turns (one clock)", "cuBLAS TF32, same layout, in turns (TFLOPS)", "% of it")
PROFILED = "tensor pipe busy (ncu)"     # a column only where Nsight Compute profiled the steps
CLOCK = "SM clock, timed loop"


def table(gemm: dict) -> dict | None:
    """The reference deck's last step and each step built past it, a row each (their best kernel);
    the tensor pipe's column where the steps were profiled; None without steps."""
    if not gemm.story:
        return None
    rows = [{"name": s.name, "title": s.title, "tflops": s.best["tflops"], **change_cell(s.best, i == 0),
             "baseline_tflops": s.best["baseline_tflops"], "pct_cublas": s.best["pct_cublas"],
             "tensor_pct": s.best.get("tensor_pct"), "clock_mhz": s.best["clock_mhz"] or None}
            for i, s in enumerate(gemm.story)]
    return {"rows": rows, "profiled": gemm.profiled,
            "columns": [*COLUMNS, *([PROFILED] if gemm.profiled else []), CLOCK]}


def change_cell(best: dict, first: bool) -> dict:
    """A step against the step before as its cell says it: the change (speedup, None where the cell
    has no number) and the words with it."""
    if first or not best["speedup"]:
        return {"speedup": None, "change": "—"}
    if best["change"]["tie"]:
        return {"speedup": None, "change": "a tie"}
    return {"speedup": best["speedup"],
            "change": ", a tie" if best["change"]["within_noise"] else ", slower" if best["change"]["slower"] else ""}


# --- Still on the Table -----------------------------------------------------------------------------

def usable(fp8: dict, key: str) -> dict | None:
    """One of the FP8 section's kernels (fp8, promoted) where it ran and passed its check."""
    kernel = getattr(fp8, key) if fp8.measured else None
    return kernel if kernel and kernel.get("usable") else None


def tracks(deck) -> list[dict]:
    """Each precision's headline kernel: its share of its library in turns and of its peak at the
    clock its SMs ran at; FP8's is the kernel that sums in FP32 where it ran."""
    gemm, precision, fp8 = deck.of(slides.gemm), deck.of(slides.precision), deck.of(slides.fp8)
    kernels = [("TF32", "tf32", gemm.headline["to"] if gemm.headline else None),
               ("BF16", "bf16", precision.headline), ("FP8", "fp8", usable(fp8, "promoted") or usable(fp8, "fp8"))]
    out = []
    for name, key, k in kernels:
        if not k or not k.get("baseline") or not k.get("pct_cublas"):
            continue
        out.append({"precision": name, "name": k["name"], "tflops": k["tflops"], "pct_cublas": k["pct_cublas"],
                    "library": "cuBLASLt" if key == "fp8" else f"cuBLAS {name}", "baseline_tflops": k["baseline_tflops"],
                    "clock_mhz": k["clock_mhz"], "pct_peak": pct_of_peak(deck.of(slides.device), key, k["tflops"], k["clock_mhz"])})
    return out


def gaps(deck) -> dict:
    """What the measured kernels leave on the table, each as a share of what it is held to: each
    track's library in turns and its peak at its clock, DeepGEMM (the block-scaled kernel's worst
    shape), and the SMs' clock against its maximum while the headline ran."""
    fp8, device, gemm = deck.of(slides.fp8), deck.of(slides.device), deck.of(slides.gemm)
    peer = fp8.peer if fp8.measured else None
    deepgemm = peer.ours_range if peer else None
    best = gemm.headline["to"] if gemm.headline else None
    clock = {"mhz": best["clock_mhz"], "max_mhz": device.sm_clock_max_mhz,
             "pct": 100 * best["clock_mhz"] / device.sm_clock_max_mhz, "capped": gemm.headline["power_capped"]} \
        if best and best["clock_mhz"] and device.sm_clock_max_mhz else None
    return {"tracks": tracks(deck), "clock": clock,
            "deepgemm": {"lo_pct": 100 * deepgemm[0], "hi_pct": 100 * deepgemm[1], "shapes": len(peer.shapes or []),
                         "name": fp8.blocks_name} if deepgemm else None}


def gaps_figure(g: dict) -> str:
    """A bar for each share, 100% across: a library's in turns, a peak's at the kernel's own clock,
    DeepGEMM's, the clock's maximum."""
    bars = []
    for t in g["tracks"]:
        bars.append(Bar(f"{t['precision']}: of {t['library']}, in turns", t["pct_cublas"], ACCENT,
                        f"({t['tflops']:,.1f} vs {t['baseline_tflops']:,.1f} TFLOPS)"))
        if t["pct_peak"]:
            bars.append(Bar(f"{t['precision']}: of its peak at its clock", t["pct_peak"], PALETTE[2],
                            f"(at {t['clock_mhz']:,.0f} MHz)"))
    if g["deepgemm"]:
        d = g["deepgemm"]
        bars.append(Bar("FP8 block scales: of DeepGEMM", d["lo_pct"], PALETTE[4],
                        f"(the worst of {d['shapes']} shapes; {d['lo_pct']:.0f}–{d['hi_pct']:.0f}%)"))
    if g["clock"]:
        c = g["clock"]
        bars.append(Bar("SM clock: of its maximum", c["pct"], PALETTE[3],
                        f"({c['mhz']:,.0f} of {c['max_mhz']:,.0f} MHz, the headline's turns)"))
    return bar_chart(bars, "% of what each is held to", [Line("x", 100.0, "100%", MUTED)],
                     height=40 + 24 * len(bars) + 46)


def still(deck, gaps: dict) -> dict:
    """Still on the Table's words, each where its data is (else None): the last wave's idle time, what
    held the clock, the tuner's verdict, the kernels behind the bars; and, with no step built, what
    cuBLAS reaches."""
    gemm = deck.of(slides.gemm)
    return {"waves": last_wave(gemm.waves) if gemm.waves else None,
            "clock": clock_words(gemm.headline, deck.of(slides.device).power_limit_w) if gaps["clock"] else None,
            "tuning": tuning(deck.of(slides.tune)), "kernels": [f"{t['precision']} {t['name']}" for t in gaps["tracks"]],
            "unbuilt": unbuilt(gemm)}


def last_wave(waves: dict) -> dict:
    """The last wave's idle share of the SM time, unsplit and, where the headline splits it along K, split."""
    split = waves["split"]
    if not split:
        return {"idle": f"it leaves {waves['idle_pct']:,.1f}% of the SM time idle",
                "said": f"The last wave leaves {waves['idle_pct']:,.1f}% of the SM time idle.",
                "split": "Splitting the last tiles along K spreads it (the split-wave step)."}
    # a plan that charges each tail for its partial sums counts them in the last wave; an older one did not
    fixup = split.get("fixup_k_tiles")
    cost = "counting what its partial sums cost" if fixup else "not counting what its partial sums cost"
    return {"idle": f"it leaves {waves['idle_pct']:,.1f}% of the SM time idle; split along K, {split['idle_pct']:,.1f}%, {cost}",
            "said": f"Split along K as the headline does, the last wave leaves {split['idle_pct']:,.1f}% of the SM time "
                    f"idle, {cost}.",
            "split": f"Split along K (owners compute {split['split_pct']:,.0f}% of each, {split['helpers']} helper clusters "
                     f"the rest), the last wave lasts {split['last_wave']:,.2f} of a tile's time and {split['idle_pct']:,.1f}% "
                     + (f"is idle, each tail charged {fixup} K-tiles for its partial sums, as its plan counts them." if fixup
                        else "is idle, counting K-tiles alone: leaving and adding the partial sums comes on top.")}


def clock_words(headline: dict, power_limit_w: float) -> dict:
    """What held the headline's clock down as it ran, as NVML names it; how its clock was read."""
    if headline["power_capped"]:
        held = f", held down by the {power_limit_w:,.0f} W power cap: a GEMM that spends fewer joules runs faster"
    elif headline["throttle_reasons"]:
        held = f", held down by {', '.join(headline['throttle_reasons'])} (NVML)"
    else:
        held = ", with no throttle reason from NVML as it ran"
    return {"held_by": held, "how": "measured" if headline["to"]["clock_measured"] else "NVML's median",
            "capped": ": a tensor-core GEMM is paid for in joules. NVML's throttle reason as it ran was the power cap"
            if headline["power_capped"] else ""}


def tuning(tune: dict) -> str | None:
    """The tuner's best against the hand-picked configuration, and what that says; None without trials."""
    if not tune.trials:
        return None
    gain = f"{tune.gain_pct:+.1f}%" if tune.head_to_head != "same" else ""
    verdict = {"same": "is the hand-picked one", "tie": f"ties with the hand-picked one ({gain})",
               "faster": f"beats the hand-picked one by {gain}", "slower": f"loses to the hand-picked one ({gain})"}
    meaning = "worth searching" if tune.head_to_head == "faster" else "what is left is not in these constants"
    return f"{verdict[tune.head_to_head]}: {meaning}"


def unbuilt(gemm: dict) -> str:
    """With no step built past the reference deck, what cuBLAS and the headline reach, before the techniques it lists."""
    cublas, headline = gemm.best_tf32, gemm.headline
    if cublas and headline:
        return (f"cuBLAS reaches {cublas['tflops']:,.1f} TFLOPS; the headline kernel here, {headline['to']['tflops']:,.1f}. "
                "What is left on the table:")
    if cublas:
        return f"cuBLAS reaches {cublas['tflops']:,.1f} TFLOPS on this GPU. Techniques a hand-written kernel needs to get there:"
    return "Techniques a hand-written kernel needs to reach a vendor library:"


# --- Takeaways --------------------------------------------------------------------------------------

def tensor_core_steps(gemm: dict) -> list[dict]:
    """The measured steps that run on the tensor cores (their SASS holds a tensor-core instruction)."""
    on = {s.key for s in catalogue.STEPS if any(op in s.sass for op in TENSOR_CORES)}
    return [s for s in gemm.steps if s.key in on]


def feeding(gemm: dict) -> dict | None:
    """Once the tensor cores are in (the first step on them), the step that moved most in turns with
    the step before: its gain, and whether its interval lies above no change."""
    on = tensor_core_steps(gemm)
    if not on:
        return None
    after = [s for s in gemm.steps if s.index > on[0].index and s.best.get("speedup")
             and (s.best.get("change") or {}).get("in_turns")]
    top = max(after, key=lambda s: s.best["speedup"], default=None)
    if not top:
        return None
    change = top.best["change"]
    gained = change["ci"][0] > 1
    # the lesson's words around its gain: "<lead>: <said> **1.52×** <tail>"
    words = {"lead": "Feeding the tensor cores is the work", "said": f"after {on[0].title}, {top.title} gained most:",
             "tail": "in turns"} if gained else \
        {"lead": "After the tensor cores", "said": f"no step gained in turns; the biggest, {top['title']},", "tail": ""}
    return {"name": top.name, "title": top.title, "gain": top.best["speedup"], "ci": change["ci"],
            "gained": gained, "first": on[0].title, **words}


def first_per_precision(summary: list[dict]) -> list[dict]:
    """Of a precision with two atlases (FP8's block scales and its scale a tensor), the first: the one
    the talk shows."""
    first = {}
    for at in summary:
        first.setdefault(at["params"]["precision"], at)
    return list(first.values())


def small_m(atlas) -> dict | None:
    """The atlas's worst cell at small M, over the precisions measured (each its first atlas), and
    whether it is below the worst from the larger sizes up in its precision (small M is where the
    GEMM loses)."""
    cells = [(at, at["small"], at["large"]) for at in first_per_precision(atlas.summary or [])
             if at.get("small") and at.get("large")]
    if not cells:
        return None
    at, small, large = min(cells, key=lambda c: c[1]["pct"])
    loses = small["pct"] < large["pct"]
    return {"precision": at["precision"], "versus": at["versus"], "pct": small["pct"], "where": small["where"], "to": small["to"],
            "large_pct": large["pct"], "large_from": large["from"], "loses": loses,
            "lead": "Small M is where a GEMM loses" if loses else "Small M holds up",
            "tail": "" if loses else f", no lower than at M ≥ {large['from']}"}


def promotion(fp8: dict) -> dict | None:
    """FP8's sums promoted to FP32: how many times smaller the error, what it costs in turns, and
    whether the kernel without it misses cuBLASLt's error (FP8 needs it)."""
    p = fp8.promotion if fp8.measured else None
    if not p or not p.get("error_drop") or not fp8.fp8:
        return None
    needs = not fp8.fp8["error_held"]
    return {"error_drop": p["error_drop"], "needs": needs,
            "lead": "FP8 needs its sums promoted" if needs else "FP8's sums promoted", "cost": promotion_cost(p.get("cost"))}


def promotion_cost(cost: dict | None) -> str:
    """What promoting FP8's sums costs in turns, as the lesson says it; empty where it was not timed."""
    if not cost:
        return ""
    pct = 100 * abs(1 - cost["gain"])
    return f", for {pct:,.1f}% of the speed in turns" if cost["slower"] else f", running {pct:,.1f}% faster in turns" \
        if cost["faster"] else ", at no measured cost"


def lessons(deck, gaps: dict) -> dict:
    """The takeaways, each with the number that proves it and its words; each None where its data is
    absent; and what the notes open with, the climb or what is missing."""
    gemm = deck.of(slides.gemm)
    taken = {"clock": gaps["clock"] and clock_lesson(gaps["clock"], gemm.headline["throttle_reasons"],
                                                     deck.of(slides.device).power_limit_w),
             "feeding": feeding(gemm), "small_m": small_m(deck.of(slides.atlas)), "promotion": promotion(deck.of(slides.fp8))}
    climbed = gemm.headline and gemm.headline["climb"]
    return {**taken, "any": any(taken.values()),
            "opening": "The climb, once more: each step's best, the headline at the top beside the cuBLAS it took turns with. "
                       "Then the lessons, each with the number that proves it." if climbed else
                       "The lessons of this study come from its measurements, and this GPU's results do not hold them all yet."}


def clock_lesson(clock: dict, reasons: list[str], power_limit_w: float) -> dict:
    """The clock the headline ran at (gaps' clock), and what held it down, as the lesson and its note say it."""
    if clock["capped"]:
        return {**clock, "lead": "The power cap sets the clock", "held_by": "",
                "note": f"; NVML named the power cap ({power_limit_w:,.0f} W) as the throttle reason"}
    return {**clock, "lead": "The clock", "note": "",
            "held_by": f", held down by {', '.join(reasons)}" if reasons else ", with no throttle reason"}


# --- Takeaways — The Figures ------------------------------------------------------------------------

def recap(deck, gaps: dict) -> dict:
    """Each track's figure behind the takeaways, each None where its data is absent: the headline,
    BF16, FP8, the model shapes, memory, the node's GPUs; and what the notes add for questions."""
    headline = deck.of(slides.gemm).headline
    best = headline and headline["to"]
    bf16 = deck.of(slides.precision).headline
    hbm_latency = (deck.of(slides.memory_latency).by or {}).get("HBM")
    atlas = deck.of(slides.atlas).summary
    fp8 = fp8_line(deck.of(slides.fp8), gaps["deepgemm"])
    l2 = deck.of(slides.l2)
    headline = best if best and best["baseline"] else None
    unpromoted = fp8["unpromoted"] if fp8 else ""
    worst = [at for at in atlas if at["worst"]]       # each precision's worst model shape, for questions
    return {"headline": headline,
            "error_said": ": larger, and why (how each rounds the operands to TF32, or the order it accumulates in) is not "
                          "measured here" if headline and headline["check"]["rel_error"] > headline["baseline"]["error"] else "",
            "bf16": bf16 if bf16 and bf16["baseline"] else None, "fp8": fp8, "shapes": shapes(atlas),
            "l2_said": f"; L2 reads {l2.read_vs_hbm:,.1f}× that" if l2.rows and l2.read_vs_hbm else "",
            "nvlink": nvlink(deck.of(slides.multigpu), deck.of(slides.overlap)),
            "unpromoted": unpromoted, "worst": worst,
            "hbm_wait": f"A load from HBM waits {hbm_latency['ns']:,.0f} ns." if hbm_latency else "",
            "for_questions": bool(unpromoted or worst or hbm_latency)}


def fp8_line(fp8: dict, deepgemm: dict | None) -> dict | None:
    """FP8's figure: the kernel that sums in FP32 where it ran, else the plain FP8 kernel, against
    cuBLASLt's speed and error (and DeepGEMM's, block scaled); the plain one's miss where the promoted
    one stands in for it."""
    plain, promoted = usable(fp8, "fp8"), usable(fp8, "promoted")
    missed = plain and not plain["error_held"] and plain["error_ratio"] is not None
    if promoted:
        error = " at its error" if promoted["error_held"] else \
            f" with {promoted['error_ratio']:,.0f}× its error" if promoted["error_ratio"] is not None else ""
        scales = f"; block scales {deepgemm['lo_pct']:,.0f}–{deepgemm['hi_pct']:,.0f}% of DeepGEMM" if deepgemm else ""
        return {"label": "FP8 summed in FP32", "kernel": promoted, "versus": f"cuBLASLt{error}{scales}",
                "unpromoted": f"FP8's line is the kernel that sums in FP32; without that step it runs at {plain['pct_cublas']:,.1f}% "
                              f"of cuBLASLt with {plain['error_ratio']:,.0f} times its error." if missed else ""}
    if plain:
        error = f" with {plain['error_ratio']:,.0f}× cuBLASLt's error" if missed else ""
        return {"label": "FP8", "kernel": plain, "versus": f"cuBLASLt{error}, in turns", "unpromoted": ""}
    return None


def shapes(summary: list[dict]) -> dict | None:
    """The model shapes' line: each precision's median share of cuBLAS (its worst), over how many
    shapes; each precision's first atlas."""
    if not summary:
        return None
    summary = first_per_precision(summary)
    counts = {at["correct"] for at in summary}
    return {"lead": f"{summary[0]['correct']} model shapes" if len(counts) == 1 else "Model shapes",
            "each": [f"{at['precision']} {at['median_pct']:,.1f}%" + (f" ({at['worst']['pct']:,.0f}%)" if at["worst"] else "")
                     + (f" of {at['correct']}" if len(counts) > 1 else "") for at in summary]}


def nvlink(multigpu: dict, overlap: dict) -> dict | None:
    """The node's line: NVLink's copy bandwidth (its share of the link), and the GEMMs' share of the
    ideal overlapped with NCCL; None where no copy engine copy was measured."""
    first = multigpu.p2p["first"] if multigpu.measured else None
    if not (first and "copy_engine" in first["kinds"]):
        return None
    return {"n": multigpu.n, "gbps": first["kinds"]["copy_engine"],
            "of_link": f"({first['pct_link']['copy_engine']:,.0f}% of the link)" if first["pct_link"] else "",
            "overlapped": f"; overlapped with NCCL, our best GEMMs keep {100 * overlap.best_range[0]:,.0f}–"
                          f"{100 * overlap.best_range[-1]:,.0f}% of the ideal" if overlap.measured else ""}


# --- the section ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Missing(Context):
    """The closing slides: the steps built past the reference deck (story, None with fewer than two)
    and their table (None without steps); what is still on the table (gaps, drawn where on_the_table,
    and the words beside it: still); the takeaways, each with the number that proves it (lessons), and
    each track's figure behind them (recap)."""
    story: dict | None
    table: dict | None
    gaps: dict
    on_the_table: bool
    still: dict
    lessons: dict
    recap: dict


def context(deck) -> Missing:
    gemm = deck.of(slides.gemm)
    g = gaps(deck)
    return Missing(story=story(gemm), table=table(gemm), gaps=g, on_the_table=bool(g["tracks"] or g["deepgemm"] or g["clock"]),
                   still=still(deck, g), lessons=lessons(deck, g), recap=recap(deck, g))


def draw(own: Missing, deck) -> dict[str, str]:
    return {**({"past_reference.svg": story_figure(own.story)} if own.story else {}),
            **({"on_the_table.svg": gaps_figure(own.gaps)} if own.on_the_table else {})}
