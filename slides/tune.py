"""The tuner (bench/gemm/tune.py): its space, its trials ranked by their ratio to cuBLAS (timed in
turns), and the winner against the hand-picked configuration, head to head."""
from __future__ import annotations

from bench.gemm import catalogue
from bench.core.stats import overlap
from slides.device import tflops_of
from slides.kit import ACCENT, Bar, INK, Line, REF, bar_chart


TIE_PCT = 1.0      # without intervals (older records), a winner within 1% of the hand-picked one ties it


def context(deck) -> dict:
    """The tuner's space, its trials ranked by their ratio to cuBLAS (timed in turns), and the
    winner against the hand-picked configuration, head to head (bench/gemm/tune.py)."""
    (r,) = deck.need("Tuning the Persistent Kernel", "tune.persistent")
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
    intervals = all("ci" in final.get(k, {}).get("ratio_by_sample", {}) for k in ("winner", "hand_picked"))
    versus = deck.record(rec["params"]["kernel"])["record"].get("cublas")   # the hand-picked kernel on the GEMM slides
    table = None
    # records from before the tuner timed as the table does have no intervals to compare
    if versus and "ci" in versus.get("ratio_by_sample", {}) and "ratio_by_sample" in final.get("hand_picked", {}):
        agree = overlap(final["hand_picked"]["ratio_by_sample"], versus["ratio_by_sample"])
        table = {"pct": 100 * versus["ratio"], "cublas_tflops": versus["tflops"], "agree": agree,
                 "verdict": "one figure, the intervals overlap" if agree else
                            "their intervals do not overlap: the two timings disagree"}
    checked = [t["check"]["rel_error"] for t in trials if t.get("check")]
    # nothing left in these constants: the hand-picked one won, or the two tie: their intervals
    # against cuBLAS overlap (records without intervals: the winner within TIE_PCT of it)
    nothing_left = rec["winner"] == rec["hand_picked"] or (
        overlap(*(final[k]["ratio_by_sample"] for k in ("winner", "hand_picked"))) if intervals
        else gain is not None and abs(gain) < TIE_PCT)
    return {**r, "error": checked and {"lo": min(checked), "hi": max(checked),
                                       # cuBLAS on the same operands: the reference shape's, seeded alike
                                       "cublas": versus["check"]["rel_error"] if versus else None}, "trials": trials, "ranked": ranked, "space": rec["params"]["space"], "bm": rec["params"]["bm"],
            "table": table, "cublas_tflops": tflops_of(rec["params"], rec["final"]["cublas_time_ms"]),
            "stages_max": deepest, "deepest": catalogue.DEEPEST, "final": final, "gain_pct": gain,
            "same_as_hand_picked": rec["winner"] == rec["hand_picked"],
            "intervals": intervals, "nothing_left": nothing_left,
            # the tuner's best against the hand-picked one, head to head: the same, a tie, faster or slower
            "head_to_head": "same" if rec["winner"] == rec["hand_picked"] else "tie" if nothing_left
                            else "faster" if (gain or 0) > 0 else "slower",
            "errors": [t for t in trials if t["outcome"] == "error"],
            "wrong": [t for t in trials if t["outcome"] == "wrong"]}


# --- figures --------------------------------------------------------------------------------------

def tune_label(trial: dict, bm: int) -> str:
    config = trial["config"]
    return f"{bm}×{config['BN']}, {trial['stages']} stages, cluster {config['CLUSTER_M']}, band {config['GROUP_M']}"


def tuner_bars(tune: dict) -> str:
    """Every configuration the tuner timed, best first, as % of cuBLAS timed in turns with it."""
    bars = [Bar(tune_label(t, tune["bm"]), 100 * t["ratio"],
                REF if t["winner"] else (ACCENT if not t["hand_picked"] else "#059669"),
                "winner" if t["winner"] else ("hand-picked" if t["hand_picked"] else ""))
            for t in tune["ranked"]]
    return bar_chart(bars, "% of cuBLAS TF32, each trial in turns", [Line("x", 100, "cuBLAS", INK)],
                     width=440, height=430)


def draw(own, deck) -> dict[str, str]:
    return {"tuner.svg": tuner_bars(own)} if own["trials"] else {}
