"""TMA measured alone (bench/machinery/tma.py): one box's round trip against its size, the rate one CTA an SM
reaches against the boxes it keeps in flight (beside cp.async of the same bytes), against the box's
size and against the CTAs issuing on each SM, and multicast into a cluster against each CTA loading
the box itself. The in-talk slide sits beside the step that brings in TMA (gemm.md.j2); this
section's own slides are the backup tables."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm import catalogue
from slides.kit import fmt_bytes
from slides.records import Context, measured_pair
from slides.kit import MUTED, PALETTE, Chart, Line, Series, line_chart
import slides.device

ID = "machinery.tma"
SLIDE = "TMA Alone: What One Thread Can Issue"
# Boxes in flight past which a stream gains less than this share: where it stops growing.
FLAT_WITHIN = 0.03
SOURCES = {"l2": "L2", "hbm": "memory"}
# What raising the boxes' size or the CTAs issuing on each SM did to one CTA's ceiling: above it and told apart, or not.
RAISE = {True: "raise", False: "do not raise"}
DO = {True: "do", False: "do not"}
# What a raise from bigger boxes says about a GEMM's producer.
BIG_BOXES = {True: ": a GEMM's producer wants big boxes", False: ""}


def _beside() -> str:
    """The step the TMA slide follows: the first whose SASS must hold a TMA load."""
    return next(s.key for s in catalogue.STEPS if "UTMALDG" in s.sass)


def _flat_from(points: list[tuple[int, float]]) -> dict:
    """Where a rate against some count stops growing: the smallest count within FLAT_WITHIN of the best."""
    best = max(v for _, v in points)
    count, value = next((c, v) for c, v in sorted(points) if v >= (1 - FLAT_WITHIN) * best)
    return {"count": count, "tbps": value}


@dataclass(frozen=True)
class TmaAlone:
    """TMA measured alone: a box's round trip, the rate one CTA an SM reaches against the boxes in
    flight (beside cp.async), against the box's size and the CTAs issuing on each SM, and multicast."""
    beside: str                         # the step the talk's slide follows
    params: dict
    latency: dict[str, dict[int, float]]     # a box's round trip in cycles, by source and box bytes
    smallest: int                       # the smallest and the largest box measured
    largest: int
    flat_latency: int                   # the largest box whose round trip from L2 costs the smallest's
    past_flat: str                      # the largest box's round trip from L2, where it costs more, as a clause
    depth: dict[str, list[dict]]        # by source: TMA and cp.async against the boxes in flight
    tma_flat: dict                      # where one CTA's TMA from L2 stops growing
    best: dict[str, dict]               # by source: TMA's and cp.async's best rates
    memory_vs: str                      # one thread's TMA from memory against every thread's cp.async, said
    issuers: dict[str, list[dict]]      # by source: TMA against the CTAs issuing on each SM
    most_issuers: dict
    issuers_raise: str                  # whether more CTAs an SM raise one CTA's ceiling, in DO's words
    sizes: list[dict]                   # TMA from L2 against the box's size
    small_box: dict
    big_box: dict
    sizes_raise: str                    # whether bigger boxes raise it, in RAISE's words
    big_boxes: str                      # and what that says of a GEMM's producer (BIG_BOXES)
    multicast: list[dict]               # from L2: multicast against each CTA loading the box, with their pair
    all_rows: list[dict]                # multicast against separate loads, from both sources
    # from memory, the fastest separate load where it passes HBM's theoretical peak: the CTAs of a
    # cluster ask for the same boxes, so some of those bytes came from L2
    past_peak: dict | None


@dataclass(frozen=True)
class Tma(Context):
    """TMA measured alone (None: not measured)."""
    tma: TmaAlone | None = None
    id: str = ID


def context(deck) -> Tma:
    (r,) = deck.need(SLIDE, ID)
    if not r["measured"] or r["failed"] and "latency" not in r["record"]:
        return Tma()
    rec = r["record"]
    by = lambda rows, source: [x for x in rows if x["source"] == source]
    latency = {s: {x["box_bytes"]: x["cycles"] for x in by(rec["latency"], s)} for s in SOURCES}
    smallest, largest = min(latency["l2"]), max(latency["l2"])
    # the boxes, from the smallest up, whose round trip from L2 costs what the smallest box's does (within a tenth)
    sizes_up = sorted(latency["l2"])
    flat_latency = next((b for b, nxt in zip(sizes_up, sizes_up[1:]) if latency["l2"][nxt] > 1.1 * latency["l2"][smallest]),
                        largest)
    depth = {s: by(rec["depth"], s) for s in SOURCES}
    best = {s: {engine: max((x[engine] for x in depth[s]), key=lambda v: v["tbps"]) for engine in ("tma", "cp_async")}
            for s in SOURCES}
    issuers = {s: by(rec["issuers"], s) for s in SOURCES}
    one, most = (min(issuers["l2"], key=lambda x: x["ctas_per_sm"]), max(issuers["l2"], key=lambda x: x["tma"]["tbps"]))
    sizes = by(rec["sizes"], "l2")
    stream_box = next(x for x in sizes if x["box_bytes"] == rec["params"]["stream_box_bytes"])
    # the largest box against the stream's own, and the most CTAs an SM against one: above it and told apart
    bigger = raises(measured_pair(sizes[-1]["tma"], stream_box["tma"]))
    return Tma(tma=TmaAlone(
        beside=_beside(), params=rec["params"], latency=latency, smallest=smallest, largest=largest, flat_latency=flat_latency,
        past_flat=f", {latency['l2'][largest]:,.0f} at {fmt_bytes(largest)}" if flat_latency < largest else "",
        depth=depth, tma_flat=_flat_from([(x["slots"], x["tma"]["tbps"]) for x in depth["l2"]]),     # one CTA's ceiling from L2
        best=best, memory_vs=versus(measured_pair(best["hbm"]["tma"], best["hbm"]["cp_async"]),
                                    "one thread's TMA", "every thread's cp.async"),
        issuers=issuers, most_issuers=most, issuers_raise=DO[raises(measured_pair(most["tma"], one["tma"]))],
        sizes=sizes, small_box=sizes[0], big_box=sizes[-1], sizes_raise=RAISE[bigger], big_boxes=BIG_BOXES[bigger],
        multicast=[{**x, "vs": measured_pair(x["multicast"], x["separate"])} for x in rec["multicast"] if x["source"] == "l2"],
        all_rows=rec["multicast"], past_peak=_past_peak(rec["multicast"], deck.of(slides.device).hbm_peak_gbps / 1e3)))


def raises(pair: dict) -> bool:
    """Whether the first of a measured pair is the faster, told apart by the intervals."""
    return pair["faster"] and not pair["tie"]


def versus(pair: dict, a: str, b: str) -> str:
    """``a`` against ``b`` as a measured pair says it: a match where the intervals overlap, else by how much."""
    if pair["tie"]:
        return f"{a} matches {b}"
    return f"{a} {'beats' if pair['faster'] else 'trails'} {b} by {abs(pair['pct']):,.0f}%"


def _past_peak(rows: list[dict], peak_tbps: float) -> dict | None:
    """The fastest separate load from memory, where it passes HBM's theoretical peak."""
    fastest = max((x["separate"]["tbps"] for x in rows if x["source"] == "hbm"), default=None)
    return {"tbps": fastest, "peak_tbps": peak_tbps} if fastest is not None and fastest > peak_tbps else None


def depth_chart(t: TmaAlone) -> str:
    """TB/s against boxes in flight a CTA, one CTA an SM: TMA by one thread, cp.async by all,
    from L2 and from memory; the best of several CTAs an SM issuing TMA, as a line."""
    series = []
    for i, (source, name) in enumerate(SOURCES.items()):
        rows = t.depth[source]
        series += [Series(f"TMA, from {name}", [(x["slots"], x["tma"]["tbps"]) for x in rows], PALETTE[2 * i]),
                   Series(f"cp.async, from {name}", [(x["slots"], x["cp_async"]["tbps"]) for x in rows], PALETTE[2 * i + 1],
                          dash="6 4")]
    m = t.most_issuers
    lines = [Line("y", m["tma"]["tbps"], f"TMA from L2, {m['ctas_per_sm']} CTAs an SM", MUTED)]
    return line_chart(Chart(f"boxes in flight a CTA ({fmt_bytes(t.params['stream_box_bytes'])} each, one CTA an SM)",
                            "TB/s", series, lines, x_log=True,
                            width=620, height=290, legend="below"))


def draw(own: Tma, deck) -> dict[str, str]:
    return {"tma_depth.svg": depth_chart(own.tma)} if own.tma else {}
