"""FP8, the third track (bench/gemm/catalogue.py's FP8_STEPS): e4m3 operands with per-tensor scales,
beside the TF32 and BF16 headlines, each against the cuBLAS of its precision timed in turns with it
(cuBLASLt for FP8) and against its precision's peak at the clock its SMs ran at; what step 13,
the tensor cores' sums promoted into FP32 every K-tile, costs and buys; and step 14, DeepSeek-V3's
block scales applied as the sums are promoted, against cuBLASLt given the same scales."""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.gemm import catalogue
from slides.device import pct_of_peak
from slides.fmt import fmt_range
from slides.gemm import MOVED_POINTS, TENSOR_PIPE, gain_in_turns, in_turns, pair_with_cublas
from slides.kit import ACCENT, INK, MUTED, PALETTE, REF, Bar, Line, Point, arrow, bar_chart, drawing, grouped_bars, scatter, text
from slides.records import Context
import slides.device
import slides.gemm

SLIDE = "FP8: Three Precisions Side by Side"
# the first step with DeepSeek-V3's block scales, and the first that writes C in BF16 after it
BLOCKS_STEP = next(s for s in catalogue.FP8_STEPS if s.scaling == "blocks")
BF16_C_STEP = next(s for s in catalogue.FP8_STEPS if s.scaling == "blocks" and catalogue.output_of(s.best.tile) == "bf16")
PEER_SLIDE = "FP8 Beside DeepGEMM"
PEER = "peers.deepgemm"
KNOBS_SLIDE = "Block Scales: The Constants Tried"
KNOBS = "tune.fp8_blocks"
# The FP8 track's targets: at least cuBLASLt's speed (the low end of the in-turns interval) ...
HELD = 1.0
# ... with an error within this many times cuBLASLt's on the same operands.
ERROR_WITHIN = 1.25
# A BF16 value's significand, the implicit bit included: C rounded to the nearest BF16 is off by up to
# 2^-BITS of itself (half a unit in the last place, at the bottom of a binade)
BF16_BITS = 8


@dataclass(frozen=True)
class Peer(Context):
    """DeepGEMM on its own shapes (bench/peers/deepgemm.py): against cuBLASLt given the same block scales
    and BF16 C, and this project's kernel against it, each a pair from the same turns."""
    result: dict                            # the record as a slide shows it (Records.record)
    shapes: list[dict] | None = None        # None: not measured (skipped, failed or absent)
    ours_range: tuple[float, float] | None = None   # this project's kernel over DeepGEMM, lowest and highest
    ours_own: dict | None = None            # its figure at a shape of these beside its own slide's, another run
    ours_name: str = ""
    ours_output: str = ""
    ours_scaling: str = ""                  # what ran as "ours": the FP8 headline (a scale a tensor) or step 14
    ours_in_fp32: bool = False
    fp32_said: str = ""                     # the notes' sentence where it does, on what that costs its figure
    c_said: str = "C in BF16"               # the type of C each row writes, as the method note says it
    errors_alike: str | None = None         # the one error all three print, where they print alike
    commit: str = ""
    version: str = ""
    block: dict | None = None
    standing: str = ""                      # where DeepGEMM is ahead of cuBLASLt, level, behind (_standing)
    wrong: list[str] = field(default_factory=list)      # the kernels whose check failed
    bf16_bits: int = BF16_BITS
    bf16_roundoff: float = 2.0 ** -BF16_BITS
    spoken: list[str] = field(default_factory=list)     # the notes' lines on this project's kernel
    ours_own_said: str = ""                 # the notes' sentence on its two figures
    profiled: bool = False                  # some shape has both kernels' counters: the table's column
    busy_said: str = ""                     # the notes' sentence on how busy each one's tensor cores were
    copies_said: str = ""                   # the notes' sentence on the shapes timed over copies of their operands
    tiled: bool = False                     # the records name each one's tile at each shape (from 2026-11-30)


@dataclass(frozen=True)
class Fp8(Context):
    """The FP8 slides: each precision's headline and the FP8 kernels after it, each against the cuBLAS it
    took turns with and its precision's peak at its clock; FP8 over its BF16 self in turns; what sums
    promoted into FP32 cost and buy; the block scales; DeepGEMM beside them; and the lines the notes
    and the table's targets say, as the results fill them."""
    measured: bool                  # an FP8 kernel ran beside its cuBLASLt: without one the section shows nothing
    ids: list[str]                  # the records the first slide shows
    rows: list[dict]                # the TF32 and BF16 headlines, then each FP8 step's best (_row)
    fp8: dict                       # the FP8 headline's row: a scale a tensor, its sums kept by the tensor cores
    bf16: dict
    promoted: dict                  # the fastest measured kernel with its sums promoted (else the first such step's row)
    promotion: dict | None          # what promoting the sums costs, in turns with the headline, and buys
    over_bf16: dict | None          # the FP8 headline over its BF16 self, in turns (in_turns)
    pairs: list[dict]               # each FP8 kernel of the table against the step before, in their own turns (_pairs)
    pictured: list[dict]            # the picture's kernels; none without an FP8 kernel among them
    rate_said: str                  # the notes' sentence on FP8's FLOP a clock over BF16's ("": FP8's rate not known)
    headline_tile: str
    held_pct: float                 # the FP8 track's target: at least this share of cuBLASLt's speed ...
    error_within: float             # ... at most this many times its error
    blocks: dict | None             # the block-scaled kernel (_blocks)
    blocks_name: str
    block: int                      # DeepSeek-V3's scale block
    peer: Peer
    knobs: dict | None              # the block-scaled kernel's constants, each changed, against its pick (_knobs)
    spoken: list[str]               # the first slide's notes: FP8 over BF16, and with its sums promoted
    table_spoken: list[str]         # the table's notes
    targets: list[str]              # the table's bullets on the targets, without promotion and with it
    cost_said: str                  # the first slide's clause on what promotion costs, in turns
    peak_said: str                  # the table's notes on the peak each kernel is set against


def _row(deck, r: dict, bench_id: str) -> dict:
    """A kernel of the first slide's table: its result beside the cuBLAS it took turns with, its share of
    its precision's peak, and where it stands against the FP8 track's targets (None where it did not run)."""
    step = catalogue.step_of(bench_id)
    r = pair_with_cublas(r, deck.of(slides.gemm).cublas_by_id)
    usable = bool(r["tflops"] and not r["failed"] and r["baseline"])
    pct_peak = pct_of_peak(deck.of(slides.device), step.precision, r["tflops"], r["clock_mhz"]) if usable else None
    row = {**r, "name": step.title, "precision": step.precision.upper(), "usable": usable, "pct_peak": pct_peak,
           # the table's cell: its share of its precision's peak at its clock, a dash where the device has no peak for it
           "at_peak": f"{pct_peak:,.0f}% at {r['clock_mhz']:,.0f} MHz" if pct_peak else "—",
           "error": None, "error_ratio": None, "ratio": None, "standing": None, "error_held": None, "held": None, "met": None}
    if not usable:
        return row
    # the interval of the ratio where the record has one, else the ratio alone
    versus = r["record"]["cublas"]
    ratio = versus.get("ratio_by_sample") or {"median": versus["ratio"], "ci": [versus["ratio"]] * 2}
    error, theirs = r["check"]["rel_error"], r["baseline"]["error"]
    error_ratio = error / theirs if theirs else None          # cuBLAS exact: no ratio, held only by an exact result
    # where it stands, from the interval: all of it at or past the target, all below, or holding it
    standing = "reaching" if ratio["ci"][0] >= HELD else "short of" if ratio["ci"][1] < HELD else "level with"
    error_held = error_ratio <= ERROR_WITHIN if error_ratio is not None else error == 0
    return {**row, "error": error, "error_ratio": error_ratio, "ratio": ratio, "standing": standing, "error_held": error_held,
            "held": standing == "reaching",                       # the speed target: even the interval's low end
            "met": standing == "reaching" and error_held}         # the target: the speed and the error both


def context(deck) -> Fp8:
    ids = (catalogue.HEADLINE, catalogue.HEADLINE_BF16, *(s.best.id for s in catalogue.FP8_STEPS))
    rows = [_row(deck, r, bid) for bid, r in zip(ids, deck.need(SLIDE, *ids))]
    by = {r["id"]: r for r in rows}
    fp8, bf16 = by[catalogue.HEADLINE_FP8], by[catalogue.HEADLINE_BF16]
    over_bf16 = in_turns(fp8["record"]["before"]) if fp8["usable"] and fp8["record"].get("before") else None
    # the steps after the headline with a scale a tensor promote their sums into FP32: the fastest of
    # them measured speaks for them
    after = [s for s in catalogue.FP8_STEPS[[s.best.id for s in catalogue.FP8_STEPS].index(catalogue.HEADLINE_FP8) + 1:]
             if s.scaling == "tensor"]
    promoted_rows = [by[s.best.id] for s in after if by[s.best.id]["usable"]]
    promoted = max(promoted_rows, key=lambda r: r["tflops"]) if promoted_rows else by[after[0].best.id]
    promotion = _promotion(fp8, promoted)
    rates = deck.of(slides.device).rates or {}
    # the picture: each precision's headline and the FP8 kernels after it that write C in FP32, each
    # where it was measured with its cuBLAS's error to divide by (none where cuBLAS's is exact)
    shown = ((catalogue.HEADLINE, "TF32"), (catalogue.HEADLINE_BF16, "BF16"), (catalogue.HEADLINE_FP8, "FP8, sums not promoted"),
             (promoted["id"], "FP8, sums promoted"), (BLOCKS_STEP.best.id, "FP8, block scales"))
    pictured = [{**by[i], "label": label} for i, label in shown if by[i]["usable"] and by[i]["error_ratio"]]
    headline_tile = catalogue.KERNELS[catalogue.HEADLINE_FP8][1].tile
    cost = promotion and promotion["cost"]
    return Fp8(measured=any(r["usable"] for r in rows if r["precision"] == "FP8"), ids=list(ids), rows=rows,
               fp8=fp8, bf16=bf16, promoted=promoted, promotion=promotion, over_bf16=over_bf16, pairs=_pairs(rows),
               pictured=pictured if any(r["precision"] == "FP8" for r in pictured) else [],
               rate_said=f"Hopper's FP8 tensor cores do {rates['fp8'] / rates['bf16']:,.0f}× BF16's work per clock."
                         if "fp8" in rates else "",
               headline_tile=f"{headline_tile['BM']}×{headline_tile['BN']}", held_pct=100 * HELD, error_within=ERROR_WITHIN,
               blocks=_blocks(by[BLOCKS_STEP.best.id], by.get(BF16_C_STEP.best.id), by.get(catalogue.before(BLOCKS_STEP.best.id))),
               blocks_name=BLOCKS_STEP.title,
               block=catalogue.SCALE_BLOCK, peer=_peer(deck), knobs=_knobs(deck),
               spoken=_spoken(fp8, promoted, over_bf16), table_spoken=_table_spoken(promoted, over_bf16),
               targets=_targets(fp8, promoted),
               cost_said=f"; against the kernel without, in the same turns, {cost['said']}" if cost else "",
               peak_said=(f"Peak: {deck.of(slides.device).sm_count} SMs × FP8's {rates['fp8']:,.0f} FLOP a clock, "
                          "at each kernel's measured clock.") if rates.get("fp8") else "")


def _pairs(rows: list[dict]) -> list[dict]:
    """Each FP8 kernel of the table against the kernel of the step before it, the two timed in turns:
    the gain and its interval, and both TFLOPS in those turns. A kernel's own figure is from its turns
    with cuBLASLt, so these differ from the table's: the main slides give the gain alone."""
    pairs = []
    for r in rows:
        pair = _pair(r) if r["usable"] and r["precision"] == "FP8" else None
        if pair:
            before = catalogue.step_of(catalogue.before(r["id"]))
            pairs.append({**pair, "name": r["name"], "against": before.title + (" (BF16)" if before.precision == "bf16" else "")})
    return pairs


def _promotion(fp8: dict, promoted: dict) -> dict | None:
    """What promoting the sums into FP32 costs (the pair timed in turns with the headline, where it is the
    step before) and buys (the error), on the tile it takes; None where either kernel did not run."""
    tile = (promoted["record"].get("resources") or {}).get("tile")
    if not (promoted["usable"] and fp8["usable"] and tile):
        return None
    cost = gain_in_turns(promoted, catalogue.HEADLINE_FP8)
    return {"cost": cost and _cost(cost), "tile": tile, "name": promoted["name"],
            # each set of sums a consumer thread holds: its share of the tile (a warpgroup is 128 threads)
            "sums_per_thread": tile["BM"] * tile["BN"] // (128 * tile["WARPGROUPS_M"]),
            "k": promoted["record"]["params"]["k"], "error_before": fp8["error"], "error_after": promoted["error"],
            "error_drop": fp8["error"] / promoted["error"] if promoted["error"] else None,
            "label": catalogue.variant(promoted["id"]).label}


def _cost(pair: dict) -> dict:
    """A pair in turns as a cost: slower or faster where its interval says so, and how it is said."""
    verdict = _called(pair)
    slower, faster = verdict == "behind", verdict == "ahead"
    return {**pair, "slower": slower, "faster": faster,
            "said": f"{100 * abs(1 - pair['gain']):,.1f}% {'slower' if slower else 'faster'}" if slower or faster else "a tie"}


def _share(p: dict) -> str:
    """A promoted kernel's speed against cuBLASLt, at its error where cuBLASLt's is not exact."""
    at_error = f" at {p['error_ratio']:,.2f}× its error" if p["error_ratio"] is not None else ""
    return f"{p['pct_cublas']:,.1f}% of cuBLASLt{at_error}"


def _spoken(fp8: dict, promoted: dict, over_bf16: dict | None) -> list[str]:
    """The first slide's notes: FP8 over its BF16 self (at its error), and the kernel with its sums promoted."""
    lines = []
    if over_bf16:
        at_error = f", at {fp8['error_ratio']:,.0f}× cuBLASLt's error" if fp8["error_ratio"] is not None else ""
        lines.append(f"FP8 ran {over_bf16['gain']:,.2f}× its BF16 run in turns{at_error}.")
    if promoted["usable"]:
        lines.append(f"With its sums promoted into FP32 it runs at {_share(promoted)}.")
    return lines


def _table_spoken(promoted: dict, over_bf16: dict | None) -> list[str]:
    """The table's notes: FP8 over its BF16 self, and with its sums promoted."""
    if not over_bf16:
        return []
    promoted_ = f"; with its sums promoted, {_share(promoted)}" if promoted["usable"] else ""
    return [f"Here FP8 ran {over_bf16['gain']:,.2f}× its BF16 run in turns{promoted_}."]


def _targets(fp8: dict, promoted: dict) -> list[str]:
    """The table's bullets on the FP8 track's target (HELD of cuBLASLt's speed at ERROR_WITHIN its
    error): the kernel without promotion, then the best with it."""
    met = lambda r: "met" if r["met"] else "not met"
    lines = []
    if fp8["usable"]:
        error = (f"{fp8['error_ratio']:,.0f}× cuBLASLt's" if fp8["error_ratio"] is not None
                 else f"{fp8['error']:.1e}, cuBLASLt's none")
        lines.append(f"Without promotion: {fp8['pct_cublas']:,.1f}% of cuBLASLt ({fp8['standing']} it, in turns), its error {error} "
                     f"(target: {100 * HELD:,.0f}% at {ERROR_WITHIN}× the error: {met(fp8)})")
    if promoted["usable"]:
        error = (f"{promoted['error_ratio']:,.2f}× its error" if promoted["error_ratio"] is not None
                 else f"an error of {promoted['error']:.1e}, cuBLASLt's none")
        lines.append(f"With FP32 promotion, at best ({promoted['name']}): {promoted['pct_cublas']:,.1f}% of cuBLASLt at {error} "
                     f"(target: {met(promoted)})")
    return lines


# where a kernel stands against its baseline, by _called's verdict
PLACED = {"ahead": "ahead of", "behind": "behind", "tie": "level with"}


def _pair(r: dict) -> dict | None:
    """A kernel's pair with the step before it, timed in turns, and its wording."""
    pair = gain_in_turns(r, catalogue.before(r["id"]))
    if not pair:
        return None
    verdict = {"ahead": "faster", "behind": "slower", "tie": "a tie"}[_called(pair)]
    return {**pair, "verdict": verdict, "words": "apart: a tie" if verdict == "a tie" else verdict}


def _blocks(r: dict, bf16_c: dict | None, before: dict | None) -> dict | None:
    """The block-scaled kernel against cuBLASLt given the same block scales (in turns); what the
    scales cost, the pair timed in turns with the step before, which takes one scale a tensor, and
    where the counters put it; and what writing C in BF16 then gains (the next step, its own pair)."""
    tile = (r["record"].get("resources") or {}).get("tile")
    if not (r["usable"] and tile):
        return None
    bf16_c = bf16_c if bf16_c and bf16_c["usable"] else None
    return {**r, "tile": tile, "block": tile["SCALE_BLOCK"], "cost": _pair(r),
            "before": catalogue.step_of(catalogue.before(r["id"])).title,
            "versus": PLACED[_called(r["ratio"])], "tensor_busy": _tensor_busy(r, before),
            "label": catalogue.variant(r["id"]).label,
            "error_versus": f", {r['error_ratio']:,.2f}× cuBLASLt's" if r["error_ratio"] is not None else "",
            "bf16_c": bf16_c and {**bf16_c, "gain": _pair(bf16_c),
                                  "versus": PLACED[_called(bf16_c["ratio"])]}}


def _tensor_busy(r: dict, before: dict | None) -> dict | None:
    """How busy Nsight Compute found the tensor cores in the block-scaled kernel and in the step before
    (the same loop with one scale a tensor), where both were profiled, and what the difference says."""
    profiles = [x["record"].get("profile") if x else None for x in (r, before)]
    if not all(p and TENSOR_PIPE in p["metrics"] for p in profiles):
        return None
    pct, was = (p["metrics"][TENSOR_PIPE] for p in profiles)
    said = ("the difference is time the tensor cores wait while each K-tile's sums are scaled" if was - pct >= MOVED_POINTS
            else f"within {MOVED_POINTS} points of it, so the scales' work hides under the tensor cores'")
    return {"pct": pct, "before": was, "said": said}


def _standing(called: list[str]) -> str:
    """DeepGEMM against cuBLASLt over the shapes, from each shape's verdict (_called): one clause where
    every shape had the same, else each verdict counted where it has some, the most first."""
    if not called:
        return "not timed beside cuBLASLt"
    counts = {verdict: called.count(verdict) for verdict in PLACED}
    if max(counts.values()) == len(called):
        return f"{PLACED[called[0]]} cuBLASLt at all {len(called)} shapes"
    said = sorted((verdict for verdict in counts if counts[verdict]), key=lambda v: -counts[v])
    first, *rest = said
    return ", ".join([f"{PLACED[first]} cuBLASLt at {counts[first]} of {len(called)} shapes",
                      *(f"{PLACED[v]} it at {counts[v]}" for v in rest)])


def _called(pair: dict) -> str:
    """A speed ratio's verdict from its interval: ahead or behind only where all of it lies on one side."""
    low, high = pair["ci"]
    return "ahead" if low > 1 else "behind" if high < 1 else "tie"


def _tiles_said(s: dict) -> str:
    """Each one's tile at a shape of the peer's record, DeepGEMM's then this project's, with the CTAs
    of its cluster ("—" where the record names none)."""
    said = lambda m, n, cluster: f"{m}×{n}" + (f" ×{cluster}" if cluster > 1 else "")
    theirs, ours = s.get("deepgemm_config"), s.get("ours_tile")
    return " / ".join([said(theirs["block_m"], theirs["block_n"], theirs.get("cluster_m", 1) * theirs.get("cluster_n", 1))
                       if theirs else "—", said(ours["BM"], ours["BN"], ours.get("CLUSTER_M", 1)) if ours else "—"])


def _busy(s: dict) -> dict | None:
    """How busy Nsight Compute found DeepGEMM's tensor cores and ours at a shape, where it read both."""
    counters = s.get("profile") or {}
    if not all(TENSOR_PIPE in counters.get(who, {}) for who in ("peer", "ours")):
        return None
    return {"deepgemm": counters["peer"][TENSOR_PIPE], "ours": counters["ours"][TENSOR_PIPE]}


def _busy_said(busy: list[dict]) -> str:
    """The notes' sentence on the tensor cores, over the shapes profiled: each one's range, and by how
    much ours were less busy where they were by MOVED_POINTS or more."""
    if not busy:
        return ""
    span = lambda values, unit: fmt_range({"low": min(values), "high": max(values)}) + unit
    at = lambda gaps: "every shape" if len(gaps) == len(busy) else f"{len(gaps)} of {len(busy)} shapes"
    less = [b["deepgemm"] - b["ours"] for b in busy if b["deepgemm"] - b["ours"] >= MOVED_POINTS]
    more = [b["ours"] - b["deepgemm"] for b in busy if b["ours"] - b["deepgemm"] >= MOVED_POINTS]
    gap = ", ".join([*([f"ours less busy by {span(less, ' points')} at {at(less)}"] if less else []),
                     *([f"ours busier by {span(more, ' points')} at {at(more)}"] if more else [])]) \
        or f"within {MOVED_POINTS} points of each other at every shape"
    return (f"By Nsight Compute DeepGEMM's tensor cores were busy {span([b['deepgemm'] for b in busy], '%')} of the time at "
            f"{'these shapes' if len(busy) > 1 else 'the shape profiled'}, this project's {span([b['ours'] for b in busy], '%')}: {gap}.")


def _copies_said(shapes: list[dict]) -> str:
    """Which shapes' runs took copies of their operands in turn (small beside L2), and how many."""
    cycled = [s for s in shapes if s.get("operand_sets", 1) > 1]
    if not cycled:
        return ""
    sets = fmt_range({"low": min(s["operand_sets"] for s in cycled), "high": max(s["operand_sets"] for s in cycled)}, 0)
    named = ["×".join(str(d) for d in s["shape"]) for s in cycled]
    where = " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)
    return (f"At {where} A, B and C are small beside L2: "
            f"each run took the next of {sets} copies of them, as DeepGEMM's own benchmark empties L2 before each run.")


def _peer(deck) -> Peer:
    """DeepGEMM on its shapes: against cuBLASLt with the same block scales and BF16 C, and this
    project's headline against it, each a pair from the same turns."""
    (r,) = deck.need(PEER_SLIDE, PEER)
    if "shapes" not in r["record"]:        # skipped, failed or absent: the takeaways read its range too
        return Peer(result=r)
    shapes = []
    for s in r["record"]["shapes"]:
        versus = s["deepgemm_over_cublaslt_by_sample"]
        ours = s.get("ours_over_deepgemm_by_sample")      # ours is shown where its pair with DeepGEMM is
        shapes.append({"shape": s["shape"], "deepgemm": s["deepgemm"], "cublaslt": s["cublaslt_blocks"],
                       "per_tensor": s["cublaslt_bf16_out"], "tiles": _tiles_said(s), "busy": _busy(s),
                       "ours": s.get("ours") if ours else None, "versus": versus, "versus_called": _called(versus), "ours_over": ours})
    called = [s["versus_called"] for s in shapes]
    ours = [s["ours_over"]["median"] for s in shapes if s["ours_over"]]
    ours_range = (min(ours), max(ours)) if ours else None
    params = r["record"]["params"]
    # what ran as "ours": the FP8 headline with a scale a tensor (records before step 14) or step 14, block-scaled
    ours_scaling = "the same block scales" if params["scaling"].get("ours") == "block" else "a scale a tensor"
    # the same kernel on its own slide, at a shape of these: another run, at the clock its partners left
    own = deck.record(params["ours"])
    own_shape = [own["record"]["params"][d] for d in "mnk"] if own["measured"] and own["tflops"] else None
    here = next((s for s in shapes if s["shape"] == own_shape and s["ours"]), None)
    ours_own = here and {"shape": own_shape, "here": here["ours"]["tflops"], "own": own["tflops"]}
    # the three errors as the notes print them: one figure, said once, where they all print alike
    printed = {f"{s[name]['check']['rel_error']:.1e}" for s in shapes for name in ("deepgemm", "cublaslt", "per_tensor")}
    busy = [s["busy"] for s in shapes if s["busy"]]
    return Peer(result=r, shapes=shapes, ours_range=ours_range, ours_own=ours_own,
                profiled=bool(busy), busy_said=_busy_said(busy), copies_said=_copies_said(r["record"]["shapes"]),
                tiled=any("deepgemm_config" in s for s in r["record"]["shapes"]),
                ours_name=catalogue.step_of(params["ours"]).title, ours_output=params["outputs"]["ours"].upper(),
                ours_scaling=ours_scaling, ours_in_fp32=params["outputs"]["ours"] == "fp32",
                fp32_said="The headline writes FP32, so its figure carries twice the bytes of C."
                          if params["outputs"]["ours"] == "fp32" else "",
                c_said="C in BF16" + (" but this project's, FP32" if params["outputs"]["ours"] == "fp32" else ""),
                errors_alike=printed.pop() if len(printed) == 1 else None, commit=params["commit"], version=params["version"],
                block=params["block"], standing=_standing(called),
                wrong=[name for s in r["record"]["shapes"] for name in ("deepgemm", "cublaslt_blocks", "cublaslt_bf16_out", "ours")
                       if name in s and not s[name]["check"]["passed"]],
                spoken=[f"This project's kernel with {ours_scaling} runs at {100 * ours_range[0]:,.0f} to "
                        f"{100 * ours_range[1]:,.0f}% of DeepGEMM on its shapes."] if ours_range else [],
                ours_own_said=(f"This project's kernel ran at {ours_own['here']:,.0f} TFLOPS here at {'×'.join(map(str, own_shape))}, "
                               f"{ours_own['own']:,.0f} on its own slide: two runs, each at the clock its partners left.") if ours_own else "")


def _knobs(deck) -> dict | None:
    """Each of the block-scaled kernel's constants changed (bench/gemm/tune_blocks.py), timed in turns
    with the catalogue's pick, a pair at a time, at one shape: its share of the pick's speed with the
    interval, and whether it was slower, faster or level (_called); None where the record holds no pairs."""
    (r,) = deck.need(KNOBS_SLIDE, KNOBS)
    rec = r["record"]
    if "pairs" not in rec:
        return None
    # a knob's time over the pick's: ahead of the pick in time is behind it in speed
    verdict = {"ahead": "slower", "behind": "faster", "tie": "level"}
    rows = [{"name": name, "pct": 100 / over["median"], "ci": (100 / over["ci"][1], 100 / over["ci"][0]),
             "called": verdict[_called(over)]}
            for name, pair in rec["pairs"].items() for over in [pair["knob"]["over_base"]]]
    counts = {word: sum(k["called"] == word for k in rows) for word in ("slower", "level", "faster")}
    (tile,) = [t for name, t in rec["tiles"].items() if name not in rec["pairs"]]     # the pick's: no pair names it
    return {"rows": rows, "shape": "×".join(map(str, rec["shape"])),
            "pick": f"{tile['BM']}×{tile['BN']}, {rec['params']['pick_stages']} stages",
            "said": ", ".join(f"{n} of {len(rows)} {word}" if i == 0 else f"{n} {word}"
                              for i, (word, n) in enumerate((w, n) for w, n in counts.items() if n)),
            "none_faster": not counts["faster"], "worst": min(rows, key=lambda k: k["pct"]),
            "wrong": [name for name, pair in rec["pairs"].items() if not pair["knob"]["check"]["passed"]]}


# --- figures --------------------------------------------------------------------------------------

# each pictured kernel's colour, by its label: the unpromoted FP8 in the reference red, its promoted self in the accent
COLORS = {"TF32": PALETTE[2], "BF16": PALETTE[3], "FP8, sums not promoted": REF, "FP8, sums promoted": ACCENT,
          "FP8, block scales": PALETTE[4]}


def precisions_figure(fp8: Fp8) -> str:
    """Each pictured kernel's TFLOPS against its error over its cuBLAS's on the same operands, labelled
    with its share of that cuBLAS in turns; an arrow from the unpromoted FP8 kernel to its promoted self,
    labelled with the error it loses."""
    rows = fp8.pictured
    points = [Point(r["error_ratio"], r["tflops"], r["label"],
                    f"{r['tflops']:,.0f} TFLOPS, {r['pct_cublas']:.1f}% of {'cuBLASLt' if r['precision'] == 'FP8' else 'cuBLAS'}",
                    COLORS[r["label"]]) for r in rows]
    ids = [r["id"] for r in rows]
    p = fp8.promotion
    arrows = []
    if p and p["error_drop"] and catalogue.HEADLINE_FP8 in ids and fp8.promoted["id"] in ids:
        # the arrow claims the error alone: each point's height is its own run beside its cuBLAS, at that run's
        # clock, while promotion's cost is the two kernels' pair in turns, which the slide's text gives
        arrows.append((ids.index(catalogue.HEADLINE_FP8), ids.index(fp8.promoted["id"]),
                       f"sums promoted: error {p['error_drop']:.0f}× smaller"))
    return scatter(points, "error ÷ its cuBLAS's error on the same operands (log scale)", "TFLOPS in its own run, C in FP32",
                   [Line("x", 1.0, "its cuBLAS's error")], arrows, height=330)


def promotion_figure(fp8: Fp8) -> str:
    """One consumer thread's sums over K: per K-tile, the tensor cores' own accumulator (drawn from
    the recorded tile: BK, BN / 2 values a thread) started from zero, then added into FP32 registers."""
    p = fp8.promotion
    tile = p["tile"]
    per_thread = tile["BN"] // 2
    w, h = 860, 230
    dwg = drawing(w, h)
    text(dwg, (20, 26), f"K in tiles of {tile['BK']} e4m3 values ({tile['BK'] * catalogue.ELEMENT_BYTES['fp8']} bytes); {p['k']:,} of K is "
         f"{-(-p['k'] // tile['BK'])} K-tiles", size=13, color=INK)
    x0, box, gap, shown = 20, 120, 24, 4
    for i in range(shown):
        x = x0 + i * (box + gap)
        dwg.add(dwg.rect((x, 46), (box, 40), fill="#e5e7eb", stroke=MUTED))
        text(dwg, (x + box / 2, 71), f"K-tile {i}", size=12, anchor="middle")
        dwg.add(dwg.rect((x, 110), (box, 36), fill="#fde68a", stroke=MUTED))
        text(dwg, (x + box / 2, 133), "wgmma sums", size=12, anchor="middle")
        arrow(dwg, (x + box / 2, 86), (x + box / 2, 108))
        arrow(dwg, (x + box / 2, 146), (x + box / 2, 178), color=ACCENT)
    text(dwg, (x0 + shown * (box + gap), 71), "…", size=16)
    dwg.add(dwg.rect((x0, 180), (shown * (box + gap) - gap, 36), fill="#dbeafe", stroke=ACCENT))
    text(dwg, (x0 + (shown * (box + gap) - gap) / 2, 203), f"FP32 sums: {per_thread} registers a thread, added every K-tile",
         size=12, anchor="middle", color=INK)
    side = x0 + shown * (box + gap) + 20
    text(dwg, (side, 122), "the tensor cores' accumulator,", size=12, color=MUTED)
    text(dwg, (side, 138), f"{per_thread} registers, zeroed each K-tile", size=12, color=MUTED)
    text(dwg, (side, 194), f"error {p['error_before']:.1e} → {p['error_after']:.1e}", size=13, color=REF)
    if p["error_drop"]:
        text(dwg, (side, 212), f"({p['error_drop']:.0f}× smaller)", size=12, color=REF)
    return dwg.tostring()


def blocks_figure(blocks: dict) -> str:
    """Where a K-tile's scales come from, drawn from the recorded tile: A's strip of SCALE_BLOCK values
    a row, B's SCALE_BLOCK x SCALE_BLOCK blocks, and the CTA tile of C whose sums take them."""
    tile, block = blocks["tile"], blocks["block"]
    unit = 0.8                                    # pixels per element
    bk, bm, bn = block * unit, tile["BM"] * unit, tile["BN"] * unit
    w, h = 860, round(60 + max(bm, bk) + 48)      # as tall as the blocks and the two lines under them
    dwg = drawing(w, h)
    # A: a CTA's BM rows by one K-tile; one row's strip of SCALE_BLOCK values shares a scale
    ax, ay = 40, 60
    text(dwg, (ax, ay - 14), f"A: {tile['BM']} rows × K-tile {tile['BK']}", size=12, color=INK)
    dwg.add(dwg.rect((ax, ay), (bk, bm), fill="#e5e7eb", stroke=MUTED))
    dwg.add(dwg.rect((ax, ay + 20), (bk, 4), fill=ACCENT))
    text(dwg, (ax, ay + bm + 18), f"a scale a row: 1×{block}", size=12, color=ACCENT)
    # B: the tile's BN columns by one K-tile, in blocks of SCALE_BLOCK x SCALE_BLOCK
    bx, by_ = ax + bk + 70, 60
    text(dwg, (bx, by_ - 14), f"B: K-tile {tile['BK']} × {tile['BN']} columns", size=12, color=INK)
    for i in range(-(-tile["BN"] // block)):
        width = min(block, tile["BN"] - i * block) * unit
        dwg.add(dwg.rect((bx + i * bk, by_), (width, bk), fill="#fde68a" if i % 2 == 0 else "#fcd34d", stroke=MUTED))
    text(dwg, (bx, by_ + bk + 18), f"a scale a block: {block}×{block}", size=12, color="#b45309")
    # C: the CTA tile; an element takes its row's A scale times its column block's B scale
    cx, cy = bx + bn + 70, 60
    text(dwg, (cx, cy - 14), f"C: {tile['BM']}×{tile['BN']} tile", size=12, color=INK)
    dwg.add(dwg.rect((cx, cy), (bn, bm), fill="#dbeafe", stroke=ACCENT))
    dwg.add(dwg.rect((cx, cy + 20), (bn, 4), fill=ACCENT, opacity=0.6))
    text(dwg, (cx, cy + bm + 18), "sums × a[row] × b[block]", size=12, color=INK)
    text(dwg, (cx, cy + bm + 34), "added into FP32, every K-tile", size=12, color=MUTED)
    arrow(dwg, (ax + bk + 8, ay + bm / 2), (bx - 8, ay + bm / 2), color=MUTED)
    arrow(dwg, (bx + bn + 8, ay + bm / 2), (cx - 8, ay + bm / 2), color=MUTED)
    return dwg.tostring()


def deepgemm_figure(peer: Peer) -> str:
    """TFLOPS at each of DeepGEMM's shapes: DeepGEMM, cuBLASLt given the same block scales and this
    project's kernel, the three timed in turns (ours left out where it refused the shape)."""
    shapes = peer.shapes
    series = [("DeepGEMM", [s["deepgemm"]["tflops"] for s in shapes]),
              ("cuBLASLt, the same block scales", [s["cublaslt"]["tflops"] for s in shapes]),
              (f"this project's {peer.ours_name}, {peer.ours_scaling}", [s["ours"] and s["ours"]["tflops"] for s in shapes])]
    output = "C in BF16" + (f", this project's in {peer.ours_output}" if peer.ours_in_fp32 else "")
    return grouped_bars(["×".join(map(str, s["shape"])) for s in shapes], series,
                        f"TFLOPS at each M×N×K, the three timed in turns; {output}", digits=0, height=330)


def knobs_figure(knobs: dict) -> str:
    """Each constant changed, as a share of the pick's speed in the same turns, its interval and its
    verdict beside it (the colours say the verdict again)."""
    colors = {"slower": MUTED, "level": INK, "faster": ACCENT}
    bars = [Bar(k["name"], k["pct"], colors[k["called"]], f"({k['ci'][0]:,.1f}–{k['ci'][1]:,.1f}) {k['called']}")
            for k in knobs["rows"]]
    return bar_chart(bars, f"% of the pick's speed at {knobs['shape']}, each timed in turns with it (interval)",
                     [Line("x", 100.0, "the pick", REF)], width=860)


def draw(own: Fp8, deck) -> dict[str, str]:
    return {**({"fp8_deepgemm.svg": deepgemm_figure(own.peer)} if own.peer.shapes else {}),
            **({"fp8_precisions.svg": precisions_figure(own)} if own.pictured else {}),
            **({"fp8_promotion.svg": promotion_figure(own)} if own.promotion else {}),
            **({"fp8_blocks.svg": blocks_figure(own.blocks)} if own.blocks else {}),
            **({"fp8_knobs.svg": knobs_figure(own.knobs)} if own.knobs else {})}
