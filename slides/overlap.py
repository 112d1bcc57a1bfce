"""A GEMM overlapped with its communication (multigpu.overlap, bench/multigpu/overlap.py), from this GPU's
node files: each pattern and GEMM against the ideal, at every node size measured, and the
largest node's overlapped runs as timelines. Template: overlap.md.j2."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm.catalogue import KERNELS
from bench.core.schema import one_line
from bench.core.stats import overlap as intervals_overlap
from slides import kit as fig
from slides.records import BuildError, Context, Records

ID = "multigpu.overlap"
PATTERNS = {"all_gather_gemm": "all-gather → GEMM", "gemm_reduce_scatter": "GEMM → reduce-scatter"}
COMM_NAMES = {"all_gather": "all-gather", "reduce_scatter": "reduce-scatter"}
SLOWER_FROM = 1.5      # a GEMM chunk this many times its share of the GEMM alone "waits" in the timeline


def run(label: str, r: dict, target: float) -> dict:
    """One GEMM's four ways, what overlap bought, and the calls the slides make of them."""
    t = r["times_ms"]
    count = 1 + max(s["chunk"] for s in r["timeline"])
    # each stream's slowest chunk in the overlapped run against its share of that work alone
    worst = {stream: max(s["end_ms"] - s["start_ms"] for s in r["timeline"] if s["stream"] == stream)
             / (t[stream]["median"] / count) for stream in ("gemm", "comm")}
    return {"label": label, "kernel": r["kernel"], "ours": r["kernel"] in KERNELS, "tile": r["tile"],
            "times": {w: v["median"] for w, v in t.items()},
            "of_ideal": r["efficiency"]["of_ideal"], "speedup": r["efficiency"]["speedup_over_serial"],
            "of_ideal_by_sample": r["efficiency_by_sample"]["of_ideal"],
            "met": r["efficiency"]["of_ideal"] >= target, "check": r["check"],
            "check_said": "" if r["check"]["passed"] else f"; its check FAILED (relative error {r['check']['rel_error']:.1e})",
            # overlapped against one after the other, in turns: a call only where their intervals part
            "verdict": ("a tie" if intervals_overlap(t["overlapped"], t["sequential"])
                        else "faster" if t["overlapped"]["median"] < t["sequential"]["median"] else "slower"),
            "worst_chunk": worst["gemm"], "worst_comm_chunk": worst["comm"], "timeline": r["timeline"]}


def node_overlap(doc: dict, rec: dict) -> dict:
    """One node's overlap record, by pattern, each GEMM a ``run``."""
    r = rec["record"]
    p = r["params"]
    target = p["target_of_ideal"]
    patterns = []
    for key, name in PATTERNS.items():
        pat = r["patterns"][key]
        runs = [{**run(label, k, target), "pattern": name, "named": f"{name}, {label}"} for label, k in pat["kernels"].items()]
        patterns.append({"key": key, "name": name, "gemm": pat["gemm"], "comm": COMM_NAMES[pat["comm"]],
                         "comm_bytes": pat["comm_bytes"], "runs": runs, "chunks": pat["chunks"]})
    return {"n": doc["node"]["gpu_count"], "rec": rec, "params": p, "target": target, "patterns": patterns}


@dataclass(frozen=True)
class Overlap(Context):
    """The overlap slides: each GEMM of the node of most GPUs overlapped with its communication,
    against the ideal and, in the table, on the other node sizes; our best against cuBLAS's
    overlap; where the chunks wait; the checks (measured False: no node measured it)."""
    measured: bool
    id: str = ID
    largest: dict | None = None             # the node of most GPUs (node_overlap), each run with its share elsewhere
    sizes: list[int] | None = None          # the node sizes measured, fewest GPUs first
    met_on: list[dict] | None = None        # by node size: whether every GEMM of ours met the target
    met_everywhere: bool = False
    target_said: str = ""
    best: dict | None = None                # by pattern: our run nearest the ideal
    best_range: list[float] | None = None   # their shares of the ideal, lowest first
    against_cublas: dict | None = None      # by pattern: our best against cuBLAS's overlap, in points and words
    waits: list[dict] | None = None         # our runs whose GEMM chunks waited, slowest first
    slowest_said: str = ""
    slowed_comm: dict | None = None         # the run beside which NCCL's chunks waited most, where they did
    slowed_by_overlap: list[dict] | None = None
    checked_said: str = ""


def context(deck) -> Overlap:
    measured = []
    for path, doc in deck.nodes:
        rec = Records(doc).record(ID)
        if not rec["measured"] or rec["failed"]:
            continue
        try:
            measured.append(node_overlap(doc, rec))
        except Exception as e:
            raise BuildError(f"{path}: the overlap slides cannot be built from it ({type(e).__name__}: "
                             f"{one_line(e, 200)})") from e
    if not measured:
        deck.missing.setdefault("Overlapping a GEMM With Its Communication", []).append(ID)
        return Overlap(measured=False)
    largest = with_elsewhere(measured[-1], measured[:-1])
    runs = [r for p in largest["patterns"] for r in p["runs"]]
    ours = [r for r in runs if r["ours"]]
    cublas = {p["key"]: next(r for r in p["runs"] if not r["ours"]) for p in largest["patterns"]}
    best = {p["key"]: max((r for r in p["runs"] if r["ours"]), key=lambda r: r["of_ideal"]) for p in largest["patterns"]}
    met_on = [{"n": m["n"], "all": all(r["met"] for p in m["patterns"] for r in p["runs"] if r["ours"])} for m in measured]
    waits = sorted((r for r in ours if r["worst_chunk"] >= SLOWER_FROM), key=lambda r: -r["worst_chunk"])     # slowest first
    slowed_comm = max(ours, key=lambda r: r["worst_comm_chunk"])
    return Overlap(
        measured=True, largest=largest, sizes=[m["n"] for m in measured], met_on=met_on,
        met_everywhere=all(s["all"] for s in met_on), target_said=target_said(largest["target"], met_on),
        best=best, best_range=sorted(r["of_ideal"] for r in best.values()),
        against_cublas={k: against(best[k], cublas[k]) for k in best},
        waits=waits, slowest_said=slowest_said(waits),
        slowed_comm=slowed_comm if slowed_comm["worst_comm_chunk"] >= SLOWER_FROM else None,
        slowed_by_overlap=[r for r in ours if r["verdict"] == "slower"], checked_said=checks_said(runs))


def with_elsewhere(largest: dict, others: list[dict]) -> dict:
    """The node of most GPUs, each of its runs with its share of the ideal on the ``others``."""
    def share(m: dict, key: str, label: str) -> float:
        return next(o["of_ideal"] for q in m["patterns"] if q["key"] == key for o in q["runs"] if o["label"] == label)
    patterns = [{**p, "runs": [{**r, "elsewhere": [{"n": m["n"], "of_ideal": share(m, p["key"], r["label"])} for m in others]}
                               for r in p["runs"]]} for p in largest["patterns"]]
    return {**largest, "patterns": patterns}


def against(best: dict, cublas: dict) -> dict:
    """Our best against cuBLAS's overlap: the points between their shares of the ideal, and level where
    their intervals meet, else ahead or behind."""
    points = f"{100 * (best['of_ideal'] - cublas['of_ideal']):+.1f}"      # to the figure's tenth of a point
    return {"points": f"{points} point{'' if points[1:] == '1.0' else 's'}".replace("-", "−"),
            "call": ("level with" if intervals_overlap(best["of_ideal_by_sample"], cublas["of_ideal_by_sample"])
                     else "ahead of" if best["of_ideal"] > cublas["of_ideal"] else "behind")}


def checks_said(runs: list[dict]) -> str:
    """Every overlapped GEMM's check on the largest node, cuBLAS's too, with the worst error, where all
    passed (empty: each failed one is said beside its run)."""
    if not all(r["check"]["passed"] for r in runs):
        return ""
    return f"Every GEMM passed its check (relative error at most {max(r['check']['rel_error'] for r in runs):.1e})."


def target_said(target: float, met_on: list[dict]) -> str:
    """Whether every GEMM of ours reached the target share of the ideal, on every node size or by size."""
    if all(s["all"] for s in met_on):
        return f"Every GEMM of ours reaches {100 * target:,.0f}% of the ideal on {' and '.join(str(s['n']) for s in met_on)} GPUs"
    by_size = ", ".join(f"{'met' if s['all'] else 'not met'} on {s['n']} GPUs" for s in met_on)
    return f"Target, {100 * target:,.0f}% of the ideal for each GEMM of ours: {by_size}"


def slowest_said(waits: list[dict]) -> str:
    """The GEMM chunk of ours that waited most while NCCL ran, or that none waited SLOWER_FROM times its share."""
    if not waits:
        return f"No GEMM chunk of ours took {SLOWER_FROM:,.1f}× its share of the GEMM alone while NCCL ran"
    return (f"The slowest GEMM chunk of ours, {waits[0]['pattern']} with {waits[0]['label']}, took "
            f"{waits[0]['worst_chunk']:,.1f}× its share of the GEMM alone while NCCL ran")


# --- figures -----------------------------------------------------------------------------------

def timeline(c: Overlap) -> str:
    """The largest node's overlapped runs, one block per pattern: for each GEMM two lanes (its
    chunks on the GEMM stream, NCCL's on the other), drawn from the recorded events."""
    m = c.largest
    lanes = [(p, r) for p in m["patterns"] for r in p["runs"] if r["ours"]]
    end = max(s["end_ms"] for _, r in lanes for s in r["timeline"])
    left, right, lane_h, gap, top = 250, 20, 20, 6, 28
    width = 860
    scale = (width - left - right) / end
    bottom = top + (2 * len(lanes) + len(m["patterns"])) * (lane_h + gap)
    dwg = fig.drawing(width, bottom + 40)
    for t in fig.nice_ticks(end):             # the grid first, under the bars
        x = left + t * scale
        dwg.add(dwg.line((x, top - 6), (x, bottom), stroke=fig.GROUP, stroke_width=0.8))
        fig.text(dwg, (x, bottom + 16), f"{t:g}", size=11, color=fig.MUTED, anchor="middle")
    fig.text(dwg, (left + (width - left - right) / 2, bottom + 32), "ms from the start of the overlapped run", size=12,
             color=fig.MUTED, anchor="middle")
    y = top
    for p in m["patterns"]:
        fig.text(dwg, (10, y + 14), f"{p['name']}, {m['n']} GPUs", size=13, weight="bold")
        y += lane_h + gap
        for r in (r for pp, r in lanes if pp is p):
            for stream, color, name in (("gemm", fig.ACCENT, f"{r['label']}: GEMM"), ("comm", fig.PALETTE[3], "NCCL")):
                fig.text(dwg, (left - 8, y + 14), name, size=12, color=fig.MUTED, anchor="end")
                for s in (s for s in r["timeline"] if s["stream"] == stream):
                    x0, x1 = left + s["start_ms"] * scale, left + s["end_ms"] * scale
                    dwg.add(dwg.rect((x0, y), (max(1.0, x1 - x0 - 1), lane_h), fill=color, rx=2))
                    if x1 - x0 > 16:
                        fig.text(dwg, ((x0 + x1) / 2, y + 14), str(s["chunk"]), size=11, color="#ffffff", anchor="middle")
                y += lane_h + gap
    return dwg.tostring()


def share_of_ideal(c: Overlap) -> str:
    """The largest node's overlapped runs as bars: each GEMM's share of the ideal (the longer of the
    GEMM and NCCL alone over the overlapped time), ours in the accent, cuBLAS beside them, the target across."""
    m = c.largest
    bars = [fig.Bar(f"{p['name']}, {r['label']}", 100 * r["of_ideal"], fig.ACCENT if r["ours"] else fig.GROUP)
            for p in m["patterns"] for r in p["runs"]]
    return fig.bar_chart(bars, f"% of the ideal, max(GEMM alone, NCCL alone), overlapped on {m['n']} GPUs",
                         [fig.Line("x", 100 * m["target"], f"target {100 * m['target']:.0f}%", fig.REF)])


def draw(own: Overlap, deck) -> dict[str, str]:
    return {"overlap_timeline.svg": timeline(own), "overlap_share.svg": share_of_ideal(own)} if own.measured else {}
