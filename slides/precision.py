"""Beyond TF32: the BF16 track (bench/gemm/catalogue.py's BF16_STEPS: each Hopper step's best kernel with
BF16 operands), each against cuBLAS BF16 timed in turns with it and beside its TF32 twin, and the
peer fast.cu (bench/peers/fastcu.py) in turns with cuBLAS BF16 and the BF16 headline. Errors stand
beside cuBLAS's on the same operands."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from bench.gemm import catalogue
from slides.records import Context, measured_pair, span
from slides.device import pct_of_peak
from slides.gemm import pair_with_cublas
from slides.kit import ACCENT, GRID, INK, MUTED, PALETTE, Bar, REF, bar_chart, drawing, nice_ticks, text, text_width
import slides.device
import slides.gemm

STEPS_SLIDE = "BF16: Each Step Against cuBLAS BF16"
PEER_SLIDE = "BF16 Beside fast.cu"
PEER = "peers.fastcu"
# Who the peer slide shows, in its order, what each writes, and the cuBLAS of the same output it divides by.
PEER_KERNEL = "kernel 12"
PEER_ROWS = (("fastcu", f"fast.cu {PEER_KERNEL}", "BF16", "cublas_bf16_out"),
             ("ours_bf16_out", "this project's BF16 C", "BF16", "cublas_bf16_out"),
             ("cublas_bf16_out", "cuBLAS BF16", "BF16", None),
             ("ours", "this project's headline", "FP32", "cublas"),
             ("cublas", "cuBLAS BF16", "FP32", None))


@dataclass(frozen=True)
class Peer:
    """fast.cu beside this project's kernels (peers.fastcu): at each shape the runs timed in turns,
    ours over fast.cu and whether their intervals tell the two apart (shapes None: not measured)."""
    result: dict                        # the record as a slide shows it (Records.record)
    shapes: list[dict] | None = None
    commit: str = ""                    # fast.cu's checkout
    ours_writes: str = ""               # the C this project's kernels beside fast.cu write, as the notes say it
    why_absent: str = ""                # a skipped record's reason


@dataclass(frozen=True)
class Precision(Context):
    """The BF16 slides: each step's best kernel with BF16 operands against cuBLAS BF16 timed in turns
    with it and beside its TF32 twin, their errors beside cuBLAS's, and fast.cu beside the BF16
    headline."""
    steps: list[dict]                   # each step's record with its cuBLAS (empty: none measured)
    headline: dict | None               # the BF16 headline, with its share of the BF16 peak at its clock
    headline_beside: str                # its TF32 twin and the BF16 peak beside it, where known
    shares: dict | None                 # the steps' lowest and highest share of cuBLAS BF16 (low, high)
    over_tf32: str                      # the range of the steps' speed over their TF32 twins', where known
    tolerances: str                     # each output type's tolerance: a BF16 C carries BF16's own rounding
    bf16_out_said: str                  # the note on the steps that write C in BF16, each against cuBLAS writing BF16
    peer: Peer
    peer_kernel: str = PEER_KERNEL
    k_tile: dict = field(default_factory=lambda: {p: e["BK"] for p, e in catalogue.ELEMENTS.items()})
    k_tile_bytes: int = catalogue.ELEMENT_BYTES["tf32"] * catalogue.ELEMENTS["tf32"]["BK"]


def context(deck) -> Precision:
    gemm = deck.of(slides.gemm)
    tf32 = {s.key: s for s in gemm.steps}
    steps = []
    records = deck.need(STEPS_SLIDE, *(s.best.id for s in catalogue.BF16_STEPS))
    for step, r in zip(catalogue.BF16_STEPS, records):
        twin = tf32[step.key].best if step.key in tf32 else None       # a BF16-only step has no TF32 twin
        steps.append({**pair_with_cublas(r, gemm.cublas_by_id), "name": step.title,
                      "output": catalogue.output_of(step.best.tile).upper(),
                      "error": r["check"]["rel_error"] if r["check"] else None,
                      "over_tf32": r["tflops"] / twin["tflops"] if twin and r["tflops"] and twin["tflops"] else None})
    usable = [s for s in steps if s["tflops"] and not s["failed"] and s["baseline"]]
    headline = next((s for s in usable if s["id"] == catalogue.HEADLINE_BF16), None)
    if headline:     # its share of the BF16 peak at the clock its own SMs ran at
        headline = {**headline, "pct_peak": pct_of_peak(deck.of(slides.device), "bf16", headline["tflops"], headline["clock_mhz"])}
    shares = sorted(usable, key=lambda s: s["pct_cublas"])
    over_tf32 = span(s["over_tf32"] for s in usable if s["over_tf32"])
    tolerances = {s["output"]: s["check"]["tolerance"] for s in usable if s["check"] and "tolerance" in s["check"]}
    return Precision(steps=steps if any(s["measured"] for s in steps) else [], headline=headline,
                     headline_beside=beside_said(headline) if headline else "",
                     shares={"low": shares[0], "high": shares[-1]} if shares else None,
                     over_tf32=f", each {over_tf32['low']:,.2f} to {over_tf32['high']:,.2f} times its TF32 twin's TFLOPS" if over_tf32 else "",
                     tolerances=", ".join(f"{tol:.0e} for {output} C" for output, tol in tolerances.items()) or "—",
                     bf16_out_said=bf16_out_said([s["name"] for s in steps if s["output"] == "BF16"]), peer=peer(deck, headline))


def bf16_out_said(names: list[str]) -> str:
    """The method note's sentence on the steps that write C in BF16 ("" where none does)."""
    return f"{', '.join(names)}: C written in BF16, against cuBLAS writing BF16." if names else ""


def beside_said(headline: dict) -> str:
    """The BF16 headline beside its TF32 twin and the BF16 peak at its clock, each where known."""
    twin = f", {headline['over_tf32']:,.2f}× its TF32 twin" if headline["over_tf32"] else ""
    peak = f"; {headline['pct_peak']:,.0f}% of the BF16 peak at the {headline['clock_mhz']:,.0f} MHz its SMs ran at" \
        if headline["pct_peak"] is not None else ""
    return twin + peak


def peer(deck, headline: dict | None) -> Peer:
    """The peer slide's shapes; where one is the headline's own shape and its figure there differs from
    the headline's record (another run), that figure too, so that the two are not taken for one."""
    (r,) = deck.need(PEER_SLIDE, PEER)
    if "shapes" not in r["record"]:
        return Peer(result=r, why_absent=r["reason"] if r["status"] == "skipped" else "")
    shapes = [peer_shape(s, headline) for s in r["record"]["shapes"]]
    return Peer(result=r, shapes=shapes, commit=r["record"]["params"]["commit"],
                ours_writes="and so does this project's kernel beside it" if all(s["both_bf16"] for s in shapes)
                            else "this project's kernel beside it BF16 where the record has that run, else FP32")


def peer_shape(s: dict, headline: dict | None) -> dict:
    """One shape's runs, each divided by the cuBLAS that writes what it writes, and ours beside fast.cu
    from their times in the same turns: the BF16-C kernel, which writes what fast.cu writes, where the
    record holds it, else the headline (FP32 C)."""
    rows = []
    for who, name, output, base in (row for row in PEER_ROWS if row[0] in s):   # a record may lack the BF16-C run
        run = s[who]
        rows.append({"who": who, "name": name, "output": output, "tflops": run["tflops"], "time_ms": run["time_ms"],
                     "base_tflops": s[base]["tflops"] if base else None,
                     "pct": 100 * run["tflops"] / s[base]["tflops"] if base else None, "check": run["check"]})
    both_bf16 = "ours_bf16_out" in s
    pair = measured_pair(s["ours_bf16_out" if both_bf16 else "ours"], s["fastcu"])
    own = headline and [headline["record"]["params"][d] for d in "mnk"] == list(s["shape"]) \
        and f"{headline['tflops']:.1f}" != f"{s['ours']['tflops']:.1f}"
    return {"shape": s["shape"], "rows": rows, "ours_over_peer": pair["ratio"], "tie": pair["tie"],
            "faster": pair["ratio"] > 1, "both_bf16": both_bf16, "ours_who": "ours_bf16_out" if both_bf16 else "ours",
            "ours_named": "this project's" if both_bf16 else "this project's headline",
            "ours_kernel": "BF16-C kernel" if both_bf16 else "headline",
            "call": "a tie: their medians' intervals overlap" if pair["tie"] else
                    f"{'faster' if pair['ratio'] > 1 else 'slower'}: their medians' intervals apart",
            "headline_elsewhere": headline["tflops"] if own else None}


# --- figures --------------------------------------------------------------------------------------

def bf16_steps_chart(precision: Precision) -> str:
    """Each BF16 step's TFLOPS, noted with its share of cuBLAS BF16 (of its own output type) timed in
    turns with it and that cuBLAS's own figure (each step's partner is its own), and the headline's
    cuBLAS as a bar."""
    bars = [Bar(s["name"], s["tflops"] if not s["failed"] else None, ACCENT,
                f"({s['pct_cublas']:.1f}% of cuBLAS's {s['baseline_tflops']:,.0f}"
                + (f", C in {s['output']}" if s["output"] != "FP32" else "") + ")" if s["baseline"] else "")
            for s in precision.steps]
    if precision.headline:
        bars.append(Bar("cuBLAS BF16", precision.headline["baseline_tflops"], REF, f"in turns with {precision.headline['name']}"))
    return bar_chart(bars, "TFLOPS, BF16 in, FP32 accumulated, C in FP32 unless noted", height=300)


# the peer figure's rows at each shape: who, how it is named, its colour
PEER_PICTURED = (("fastcu", f"fast.cu {PEER_KERNEL}, C in BF16", PALETTE[3]), ("ours_bf16_out", "this project's, C in BF16", ACCENT),
                 ("ours", "this project's headline, C in FP32", ACCENT), ("cublas_bf16_out", "cuBLAS BF16, C in BF16", MUTED))


def peer_figure(peer: Peer) -> str:
    """At each shape, fast.cu and this project's kernel (the BF16-C one where the record has it), with
    cuBLAS writing BF16 under them: each run's TFLOPS at its median time and the interval of that
    median as a bar, all timed in turns, so that the pair's intervals show the call; the call beside
    the shape."""
    groups = []
    for s in peer.shapes:
        by = {r["who"]: r for r in s["rows"]}
        runs = []
        for who, name, color in PEER_PICTURED:
            if who in by and (who != "ours" or s["ours_who"] == "ours"):
                r, t = by[who], by[who]["time_ms"]
                quick, slow = t.get("ci") or (t["median"], t["median"])
                # the median's interval in time, as TFLOPS (the longer time the lower figure)
                runs.append((name + ("" if r["check"]["passed"] else ", check FAILED"), r["tflops"],
                             r["tflops"] * t["median"] / slow, r["tflops"] * t["median"] / quick, color))
        call = "a tie, the intervals overlap" if s["tie"] else f"{'faster' if s['faster'] else 'slower'}, the intervals apart"
        groups.append(("×".join(map(str, s["shape"])), f"this project's at {100 * s['ours_over_peer']:.1f}% of fast.cu: {call}", runs))
    lows, highs = [lo for *_, runs in groups for _, _, lo, _, _ in runs], [hi for *_, runs in groups for _, _, _, hi, _ in runs]
    step = nice_ticks(max(highs) - min(lows), 4)[1]
    x_lo, x_hi = step * math.floor(min(lows) / step), step * math.ceil(max(highs) / step)
    left = max(200, 20 + max(text_width(name, 12) for *_, runs in groups for name, *_ in runs))
    right, top, row_h, head_h = 70, 40, 22, 24
    w = 860
    h = top + sum(head_h + row_h * len(runs) for *_, runs in groups) + 46
    dwg = drawing(w, h)
    x_of = lambda v: left + (w - left - right) * (v - x_lo) / (x_hi - x_lo)
    text(dwg, (8, 18), "TFLOPS at each run's median time, its interval as a bar; the runs of a shape timed in turns",
         size=12, color=MUTED)
    bottom = h - 46
    ticks = [x_lo + i * step for i in range(round((x_hi - x_lo) / step) + 1)]
    for t in ticks:
        dwg.add(dwg.line((x_of(t), top - 6), (x_of(t), bottom), stroke=GRID))
        text(dwg, (x_of(t), bottom + 18), f"{t:,.0f}", size=11, color=MUTED, anchor="middle")
    text(dwg, ((w + left - right) / 2, bottom + 38), f"TFLOPS (the axis starts at {x_lo:,.0f})", size=12, color=MUTED, anchor="middle")
    y = top
    for shape, call, runs in groups:
        text(dwg, (8, y + 15), shape, size=12, weight="bold")
        text(dwg, (left, y + 15), call, size=12, color=INK, halo=True)
        y += head_h
        for name, median, lo, hi, color in runs:
            mid = y + row_h / 2
            text(dwg, (left - 10, mid + 4), name, size=12, color=INK, anchor="end")
            dwg.add(dwg.rect((x_of(lo), mid - 4), (max(x_of(hi) - x_of(lo), 2), 8), rx=3, fill=color, opacity=0.35))
            dwg.add(dwg.line((x_of(median), mid - 7), (x_of(median), mid + 7), stroke=color, stroke_width=3))
            text(dwg, (x_of(hi) + 6, mid + 4), f"{median:,.1f}", size=11, color=INK, halo=True)
            y += row_h
    return dwg.tostring()


def draw(own: Precision, deck) -> dict[str, str]:
    return {**({"precision_bf16_steps.svg": bf16_steps_chart(own)} if own.steps else {}),
            **({"precision_fastcu.svg": peer_figure(own.peer)} if own.peer.shapes else {})}

