"""TMA measured alone (bench/tma.py): one box's round trip against its size, the rate one CTA an SM
reaches against the boxes it keeps in flight (beside cp.async of the same bytes), against the box's
size and against the CTAs issuing on each SM, and multicast into a cluster against each CTA loading
the box itself. The in-talk slide sits beside the step that brings in TMA (gemm.md.j2); this
section's own slides are the backup tables."""
from __future__ import annotations

from bench import catalogue
from bench.timing import overlap
from slides.kit import MUTED, PALETTE, Chart, Line, Series, line_chart

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
    return {"count": count, "tbps": value, "best": best}


def _versus(a: dict, b: dict) -> dict:
    """Stream a against stream b (the same bytes): a's rate over b's, and whether their intervals
    of the median time tell them apart."""
    return {"ratio": a["tbps"] / b["tbps"], "pct": 100 * (a["tbps"] / b["tbps"] - 1), "tie": overlap(a["time_ms"], b["time_ms"]),
            "faster": a["tbps"] > b["tbps"]}


def context(deck) -> dict:
    (r,) = deck.need(SLIDE, ID)
    if not r["measured"] or r["failed"] and "latency" not in r["record"]:
        return {"id": ID, "tma": None}
    rec = r["record"]
    by = lambda rows, source: [x for x in rows if x["source"] == source]
    latency = {s: {x["box_bytes"]: x["cycles"] for x in by(rec["latency"], s)} for s in SOURCES}
    smallest, largest = min(latency["l2"]), max(latency["l2"])
    # the box sizes whose round trip from L2 costs what the smallest box's does (within a tenth)
    flat_latency = max(b for b, c in latency["l2"].items() if c <= 1.1 * latency["l2"][smallest])
    depth = {s: by(rec["depth"], s) for s in SOURCES}
    tma_flat = {s: _flat_from([(x["slots"], x["tma"]["tbps"]) for x in depth[s]]) for s in SOURCES}
    cp_flat = {s: _flat_from([(x["slots"], x["cp_async"]["tbps"]) for x in depth[s]]) for s in SOURCES}
    best = {s: {engine: max((x[engine] for x in depth[s]), key=lambda v: v["tbps"]) for engine in ("tma", "cp_async")}
            for s in SOURCES}
    issuers = {s: by(rec["issuers"], s) for s in SOURCES}
    one, most = (min(issuers["l2"], key=lambda x: x["ctas_per_sm"]), max(issuers["l2"], key=lambda x: x["tma"]["tbps"]))
    sizes = by(rec["sizes"], "l2")
    multicast = [{**x, "vs": _versus(x["multicast"], x["separate"])} for x in rec["multicast"] if x["source"] == "l2"]
    hbm = deck["hbm"]
    return {"id": ID, "tma": {
        "beside": _beside(), "params": rec["params"], "latency": latency, "smallest": smallest, "largest": largest, "flat_latency": flat_latency,
        "depth": depth, "tma_flat": tma_flat, "cp_flat": cp_flat,
        # one thread's TMA against every thread's cp.async, each at its best depth
        "best": best, "memory_vs": _versus(best["hbm"]["tma"], best["hbm"]["cp_async"]),
        "issuers": issuers, "one_issuer": one, "most_issuers": most,
        "issuers_raise": most["tma"]["tbps"] > (1 + FLAT_WITHIN) * one["tma"]["tbps"],
        "sizes": sizes, "small_box": sizes[0], "big_box": sizes[-1],
        "sizes_raise": sizes[-1]["tma"]["tbps"] > (1 + FLAT_WITHIN) * sizes[0]["tma"]["tbps"],
        "multicast": multicast, "all_rows": rec["multicast"],
        "hbm_copy_tbps": hbm["best"]["gbps"] / 1e3 if hbm.get("rows") else None}}


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
    return line_chart(Chart("boxes in flight a CTA (8 KiB each, one CTA an SM)", "TB/s", series, lines, x_log=True,
                            width=620, height=290, legend="below"))


def draw(deck) -> dict[str, str]:
    t = deck["tma"]["tma"]
    return {"tma_depth.svg": depth_chart(t)} if t else {}
