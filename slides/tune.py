"""The tuner (bench/gemm/tune.py): its space, its trials ranked by their ratio to cuBLAS (timed in
turns), and the winner against the hand-picked configuration, head to head."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm import catalogue
from bench.core.stats import overlap
from slides.device import tflops_of
from slides.kit import Cell, heatmap
from slides.records import Context


TIE_PCT = 1.0      # without intervals (older records), a winner within 1% of the hand-picked one ties it


@dataclass(frozen=True)
class Tune(Context):
    """The tuner's slide: every configuration it tried, ranked by its share of cuBLAS timed in turns,
    the winner and the hand-picked configuration timed again head to head, and the hand-picked one's
    figure here beside the results table's (trials None: not measured)."""
    result: dict                        # the record as a slide shows it (Records.record)
    trials: list[dict] | None = None    # each with its stages and whether it won or was hand-picked
    ranked: list[dict] | None = None    # the timed trials, best first
    params: dict | None = None
    stages_space: list[str] | None = None    # each STAGES of the space as the notes say it
    final: dict | None = None           # the winner and the hand-picked one, timed again head to head
    cublas_tflops: float | None = None  # cuBLAS in those final turns
    table: dict | None = None           # the hand-picked one in the results table, beside its figure here
    error: str | None = None            # the trials' error against double precision, beside cuBLAS's
    gain_pct: float | None = None       # the winner over the hand-picked one, head to head
    head_to_head: str = ""              # "same", "tie", "faster" or "slower"
    gain_said: str = ""                 # the gain, with what the intervals say of it
    winner_said: str = ""               # the winner against the hand-picked one, as the notes end on it
    hand_pct_said: str = ""             # the hand-picked one's share of cuBLAS, where no table gives it
    round_said: str = ""                # how long each trial's sample is, where the record says
    errors: list[dict] | None = None    # configurations that did not build or run
    wrong: list[dict] | None = None


def context(deck) -> Tune:
    (r,) = deck.need("Tuning the Persistent Kernel", "tune.persistent")
    if "trials" not in r["record"]:
        return Tune(result=r)
    rec = r["record"]
    stages = lambda config: ring_depth(rec["params"], config["BN"], config["STAGES"])
    trials = [{**t, "stages": stages(t["config"]), "winner": i == rec["winner"], "hand_picked": i == rec["hand_picked"]}
              for i, t in enumerate(rec["trials"])]
    final = {name: {**f, "stages": stages(f["config"])} if "config" in f else f for name, f in rec["final"].items()}
    gain = (final["winner"]["ratio"] / final["hand_picked"]["ratio"] - 1) * 100 if "hand_picked" in final else None
    intervals = all("ci" in final.get(k, {}).get("ratio_by_sample", {}) for k in ("winner", "hand_picked"))
    versus = deck.record(rec["params"]["kernel"])["record"].get("cublas")   # the hand-picked kernel on the GEMM slides
    head_to_head = judge(rec, final, gain, intervals)
    table = table_figure(final, versus)
    checked = [t["check"]["rel_error"] for t in trials if t.get("check")]
    return Tune(result=r, trials=trials, ranked=sorted((t for t in trials if "ratio" in t), key=lambda t: -t["ratio"]),
                params=rec["params"], stages_space=stages_space(rec["params"]),
                final=final, cublas_tflops=tflops_of(rec["params"], rec["final"]["cublas_time_ms"]),
                table=table,
                # cuBLAS on the same operands: the reference shape's, seeded alike
                error=error_said(checked, versus["check"]["rel_error"] if versus else None) if checked else None,
                gain_pct=gain, head_to_head=head_to_head, gain_said=gain_said(gain, head_to_head, intervals),
                winner_said=winner_said(gain, head_to_head),
                hand_pct_said=f": {100 * final['hand_picked']['ratio']:,.1f}%" if "hand_picked" in final and not table else "",
                round_said=f"of {rec['params']['trial_round_s']} s" if "trial_round_s" in rec["params"] else "",
                errors=[t for t in trials if t["outcome"] == "error"], wrong=[t for t in trials if t["outcome"] == "wrong"])


def judge(rec: dict, final: dict, gain: float | None, intervals: bool) -> str:
    """The tuner's best against the hand-picked configuration, head to head: the same, a tie, faster
    or slower. A tie: their intervals against cuBLAS overlap (records without intervals: the winner
    within TIE_PCT of it)."""
    if rec["winner"] == rec["hand_picked"]:
        return "same"
    tie = overlap(*(final[k]["ratio_by_sample"] for k in ("winner", "hand_picked"))) if intervals \
        else gain is not None and abs(gain) < TIE_PCT
    return "tie" if tie else "faster" if (gain or 0) > 0 else "slower"


def gain_said(gain: float | None, head_to_head: str, intervals: bool) -> str:
    """The winner's gain head to head, and whether the intervals tell the two apart where it has them."""
    if head_to_head == "same":
        return ""
    if not intervals:
        return f"{gain:+.1f}%"
    return f"{gain:+.1f}%, " + ("a tie: the intervals overlap" if head_to_head == "tie" else "the intervals apart")


def winner_said(gain: float | None, head_to_head: str) -> str:
    return {"same": "the configuration the step was built with",
            "tie": "a tie with the hand-picked one, head to head"}.get(head_to_head) \
        or f"{gain:+.1f}% against the hand-picked one, head to head"


def table_figure(final: dict, versus: dict | None) -> dict | None:
    """The hand-picked kernel's figure in the results table, and whether its interval meets the
    tuner's; None for records from before the tuner timed as the table does (no intervals to compare)."""
    if not (versus and "ci" in versus.get("ratio_by_sample", {}) and "ratio_by_sample" in final.get("hand_picked", {})):
        return None
    agree = overlap(final["hand_picked"]["ratio_by_sample"], versus["ratio_by_sample"])
    return {"pct": 100 * versus["ratio"], "cublas_tflops": versus["tflops"],
            "verdict": "one figure, the intervals overlap" if agree else "intervals apart: the two timings disagree"}


def error_said(errors: list[float], cublas: float | None) -> str:
    """The trials' errors as one figure or a range, as printed, and cuBLAS's beside them."""
    lo, hi = f"{min(errors):.1e}", f"{max(errors):.1e}"
    said = f"{lo} in every one" if lo == hi else f"{lo}–{hi}"
    return said if cublas is None else f"{said}, cuBLAS's {cublas:.1e}"


def ring_depth(params: dict, bn: int, stages: int) -> int | None:
    """The stages a configuration's ring held: its STAGES, or for DEEPEST what that came to at its
    tile width (the record's stages_max)."""
    return params["stages_max"].get(str(bn)) if stages == catalogue.DEEPEST else stages


def stages_space(params: dict) -> list[str]:
    """Each STAGES the tuner tried: a count, or as many as fit at each tile width."""
    fit = ", ".join(f"{n} at {bn}" for bn, n in params["stages_max"].items())
    return [f"as many stages as fit ({fit})" if st == catalogue.DEEPEST else f"{st} stages" for st in params["space"]["STAGES"]]


# --- figures --------------------------------------------------------------------------------------

def tuner_grid(tune: Tune) -> str:
    """Every configuration the tuner tried, one cell each: a row per tile and ring depth, a column per
    cluster size and swizzle band, its share of cuBLAS timed in turns with it (what failed says so);
    the winner outlined, the hand-picked one marked."""
    bm, space = tune.params["bm"], tune.params["space"]
    rows = [(bn, st) for bn in space["BN"] for st in space["STAGES"]]
    columns = [(cl, band) for cl in space["CLUSTER_M"] for band in space["GROUP_M"]]
    by = {(t["config"]["BN"], t["config"]["STAGES"], t["config"]["CLUSTER_M"], t["config"]["GROUP_M"]): t
          for t in tune.trials}

    def cell(t: dict | None) -> Cell:
        if t is None:
            return Cell(None, "—")
        if "ratio" not in t:
            return Cell(None, t["outcome"])
        return Cell(t["ratio"], f"{100 * t['ratio']:.1f}", marked=t["winner"], noted=t["hand_picked"])

    def row_label(bn: int, st: int) -> str:
        return f"{bm}×{bn}, {ring_depth(tune.params, bn, st)} stages" + (" (max)" if st == catalogue.DEEPEST else "")
    return heatmap([row_label(*r) for r in rows], [f"{cl} · {band}" for cl, band in columns],
                   [[cell(by.get((*r, *c))) for c in columns] for r in rows],
                   "% of cuBLAS TF32, in turns", "cluster size · swizzle band",
                   marked="the winner", footnote="the hand-picked configuration", span=0.5, width=440)


def draw(own: Tune, deck) -> dict[str, str]:
    return {"tuner.svg": tuner_grid(own)} if own.trials else {}
