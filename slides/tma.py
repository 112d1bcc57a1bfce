"""TMA measured alone (bench/machinery/tma.py): one box's round trip against its size, the rate one CTA an SM
reaches against the boxes it keeps in flight (beside cp.async of the same bytes), against the box's
size and against the CTAs issuing on each SM, and multicast into a cluster against each CTA loading
the box itself. The in-talk slide sits beside the step that brings in TMA (gemm.md.j2); this
section's own slides are the backup tables."""
from __future__ import annotations

from bench.gemm import catalogue
from slides.records import measured_pair
from slides.kit import MUTED, PALETTE, Chart, Line, Series, fmt_bytes, line_chart
import slides.device

ID = "machinery.tma"
SLIDE = "TMA Alone: What One Thread Can Issue"
# Boxes in flight past which a stream gains less than this share: where it stops growing.
FLAT_WITHIN = 0.03
SOURCES = {"l2": "L2", "hbm": "memory"}


def _beside() -> str:
    """The step the TMA slide follows: the first whose SASS must hold a TMA load."""
    return next(s.key for s in catalogue.STEPS if "UTMALDG" in s.sass)


def _flat_from(points: list[tuple[int, float]]) -> dict:
    """Where a rate against some count stops growing: the smallest count within FLAT_WITHIN of the best."""
    best = max(v for _, v in points)
    count, value = next((c, v) for c, v in sorted(points) if v >= (1 - FLAT_WITHIN) * best)
    return {"count": count, "tbps": value}


def context(deck) -> dict:
    (r,) = deck.need(SLIDE, ID)
    if not r["measured"] or r["failed"] and "latency" not in r["record"]:
        return {"id": ID, "tma": None}
    rec = r["record"]
    by = lambda rows, source: [x for x in rows if x["source"] == source]
    latency = {s: {x["box_bytes"]: x["cycles"] for x in by(rec["latency"], s)} for s in SOURCES}
    smallest, largest = min(latency["l2"]), max(latency["l2"])
    # the boxes, from the smallest up, whose round trip from L2 costs what the smallest box's does (within a tenth)
    sizes_up = sorted(latency["l2"])
    flat_latency = next((b for b, nxt in zip(sizes_up, sizes_up[1:]) if latency["l2"][nxt] > 1.1 * latency["l2"][smallest]),
                        largest)
    depth = {s: by(rec["depth"], s) for s in SOURCES}
    tma_flat = _flat_from([(x["slots"], x["tma"]["tbps"]) for x in depth["l2"]])     # one CTA's ceiling from L2
    best = {s: {engine: max((x[engine] for x in depth[s]), key=lambda v: v["tbps"]) for engine in ("tma", "cp_async")}
            for s in SOURCES}
    issuers = {s: by(rec["issuers"], s) for s in SOURCES}
    one, most = (min(issuers["l2"], key=lambda x: x["ctas_per_sm"]), max(issuers["l2"], key=lambda x: x["tma"]["tbps"]))
    sizes = by(rec["sizes"], "l2")
    stream_box = next(x for x in sizes if x["box_bytes"] == rec["params"]["stream_box_bytes"])
    bigger = measured_pair(sizes[-1]["tma"], stream_box["tma"])     # the largest box against the stream's
    more = measured_pair(most["tma"], one["tma"])
    multicast = [{**x, "vs": measured_pair(x["multicast"], x["separate"])} for x in rec["multicast"] if x["source"] == "l2"]
    return {"id": ID, "tma": {
        "beside": _beside(), "params": rec["params"], "latency": latency, "smallest": smallest, "largest": largest, "flat_latency": flat_latency,
        "depth": depth, "tma_flat": tma_flat,
        # one thread's TMA against every thread's cp.async, each at its best depth
        "best": best, "memory_vs": measured_pair(best["hbm"]["tma"], best["hbm"]["cp_async"]),
        "issuers": issuers, "most_issuers": most,
        # more CTAs an SM, and the largest box against the stream's own: above it and told apart
        "issuers_raise": more["faster"] and not more["tie"],
        "sizes": sizes, "small_box": sizes[0], "big_box": sizes[-1],
        "sizes_raise": bigger["faster"] and not bigger["tie"],
        "multicast": multicast, "all_rows": rec["multicast"],
        # from memory, the CTAs of a cluster that load separately ask for the same boxes: past HBM's
        # theoretical peak, some of those bytes came from L2
        "past_peak": _past_peak(rec["multicast"], deck.of(slides.device)["hbm_peak_gbps"] / 1e3)}}


def _past_peak(rows: list[dict], peak_tbps: float) -> dict | None:
    """The fastest separate load from memory, where it passes HBM's theoretical peak."""
    fastest = max((x["separate"]["tbps"] for x in rows if x["source"] == "hbm"), default=None)
    return {"tbps": fastest, "peak_tbps": peak_tbps} if fastest is not None and fastest > peak_tbps else None


def depth_chart(t: dict) -> str:
    """TB/s against boxes in flight a CTA, one CTA an SM: TMA by one thread, cp.async by all,
    from L2 and from memory; the best of several CTAs an SM issuing TMA, as a line."""
    series = []
    for i, (source, name) in enumerate(SOURCES.items()):
        rows = t["depth"][source]
        series += [Series(f"TMA, from {name}", [(x["slots"], x["tma"]["tbps"]) for x in rows], PALETTE[2 * i]),
                   Series(f"cp.async, from {name}", [(x["slots"], x["cp_async"]["tbps"]) for x in rows], PALETTE[2 * i + 1],
                          dash="6 4")]
    m = t["most_issuers"]
    lines = [Line("y", m["tma"]["tbps"], f"TMA from L2, {m['ctas_per_sm']} CTAs an SM", MUTED)]
    return line_chart(Chart(f"boxes in flight a CTA ({fmt_bytes(t['params']['stream_box_bytes'])} each, one CTA an SM)",
                            "TB/s", series, lines, x_log=True,
                            width=620, height=290, legend="below"))


def draw(own, deck) -> dict[str, str]:
    t = own["tma"]
    return {"tma_depth.svg": depth_chart(t)} if t else {}
