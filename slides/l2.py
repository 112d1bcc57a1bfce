"""L2 bandwidth as SMs are added (bench/micro/l2.py), read-only and copy, beside the HBM copy; and L2's
latency from every SM to each of a set of lines (bench/micro/l2_map.py), split into the partition beside
an SM and the one across the chip."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from slides.l2_map import MAP_ID, map_halves
from slides.records import Context, measured_pair, span
from slides.kit import ACCENT, Chart, Line, PALETTE, REF, Series, fmt_bytes, line_chart
import slides.device
import slides.hbm

MAP_SLIDE = "L2's Two Halves, Seen From Every SM"
# What the fastest read took: every SM (as HBM's best copy does, or not) or fewer, and several
# blocks' loads in flight on each or one block each.
READ_PEAKS = {"every": "it needs every SM", "every_as_hbm": "like HBM, it needs every SM",
              "fewer": "it peaks on {sms} of the {of} SMs"}
IN_FLIGHT = {True: " and several blocks' loads in flight on each", False: ", one block each"}
# What the map's two lines are, by whether it found two halves.
MAP_READING = {True: "The two lines are L2's two halves: a line answers sooner to the SMs on its side.",
               False: "The map shows how latency varies by SM, not by half."}


def latency_map(deck) -> dict | None:
    (r,) = deck.need(MAP_SLIDE, MAP_ID)
    mapped = map_halves(r)
    if not mapped:
        return None
    rows = r["record"]["rows"]
    cycles, h = mapped
    out = {"sms": [x["sm"] for x in rows], "cycles": cycles.tolist(), "params": r["record"]["params"],
           "low": float(cycles.min()), "high": float(cycles.max()),
           "sm_count": len(rows), "line_count": cycles.shape[1], "split": bool(h["split"]),
           "line_group": h["line_group"].tolist(), "reading": MAP_READING[bool(h["split"])]}
    if h["split"]:
        out.update(near=h["near"], far=h["far"], gap=h["far"] - h["near"], gap_pct=100 * (h["far"] / h["near"] - 1),
                   group_sms=h["sms"], group_lines=h["lines"],
                   near_line_of_sm=[h["near_line"][g] for g in h["sm_group"]])   # each SM's near line group, its group's
    return out


PLACE_ID = "l2.placement"
PLACE_SLIDE = "L2 Bandwidth: Place and Working Set"
PLACE_MATTERS = 0.10
# The working set's rate falls off L2 where it drops by more than this from one size to the next.
FALLS = 0.75
# Where the place matters, the words around the factor by which spreading the SMs apart changes the
# read, by whether it is the faster: the count and the SMs a grid of that many blocks lands on filled in.
PLACE_SAID = {True: ("Spread over the chip, {sms} SMs read", "what they read where {sms} blocks land (SMs {where})"),
              False: ("Where {sms} blocks land (SMs {where}), they read", "what as many SMs spread over the chip read")}


def ranges(numbers: list[int]) -> str:
    """SM numbers as runs: 124–131; 0, 2, 4 where they step by more than one (at most six shown)."""
    runs, start = [], numbers[0]
    for a, b in zip(numbers, numbers[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}–{a}" if a > start else f"{a}")
            start = b
    return ", ".join(runs[:6]) + (", …" if len(runs) > 6 else "")


def placement(deck) -> dict | None:
    (r,) = deck.need(PLACE_SLIDE, PLACE_ID)
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return None
    rec = r["record"]
    per_pass = lambda run: {"time_ms": {"median": run["time_ms"]["median"] / run["passes"],
                                        "ci": [c / run["passes"] for c in run["time_ms"]["ci"]]}}
    rows = []
    for x in rec["rows"]:
        pair = measured_pair(per_pass(x["spread"]), per_pass(x["scheduled"]))    # spread apart over where they land
        rows.append({**x, "ratio": pair["ratio"], "tie": pair["tie"], "scheduled_ranges": ranges(x["scheduled_sms"])})
    most = max(rows, key=lambda x: abs(math.log(x["ratio"])))
    sweep = rec["sweep"]
    l2_bytes = deck.of(slides.device).l2_bytes
    inside = [x for x in sweep if x["bytes"] <= l2_bytes]
    past = [x for x in sweep if x["bytes"] > l2_bytes]
    fall = next(((a, b) for a, b in zip(sweep, sweep[1:]) if b["gbps"] < FALLS * a["gbps"]), None)
    # told apart by the intervals, and by more than PLACE_MATTERS: a step in the scaling, not a ripple
    matters = not most["tie"] and abs(most["ratio"] - 1) > PLACE_MATTERS
    return {"rows": rows, "most": most, "place": place_said(most) if matters else None,
            "most_pct": 100 * abs(most["ratio"] - 1),
            "sweep": sweep,
            "in_l2": max(x["gbps"] for x in inside) if inside else None,
            # the smallest set, where it reads markedly slower than the best inside L2: the best is not every size's
            "smallest_said": f"({inside[0]['gbps']:,.0f} at {fmt_bytes(inside[0]['bytes'])})"
                             if inside and inside[0]["gbps"] < FALLS * max(x["gbps"] for x in inside) else "",
            "past_l2": span(x["gbps"] for x in past),
            # where the rate falls off L2, as a clause ("": it does not)
            "fall": f"; it falls between {fmt_bytes(fall[0]['bytes'])} and {fmt_bytes(fall[1]['bytes'])}" if fall else "",
            "l2_bytes": l2_bytes, "params": rec["params"]}


def place_said(most: dict) -> dict:
    """The placement's finding where the place matters: the factor (at least one) and PLACE_SAID's words."""
    faster = most["ratio"] > 1
    lead, then = (words.format(sms=most["sms"], where=most["scheduled_ranges"]) for words in PLACE_SAID[faster])
    return {"lead": lead, "times": most["ratio"] if faster else 1 / most["ratio"], "then": then}


def _resident(row: dict, device: slides.device.Device) -> str:
    """A configuration's label, and where it launches more blocks on an SM than the SM's threads can
    hold, how many run at a time (the rest wait for them)."""
    per = row["blocks"] // row["sms"]
    fit = device.max_threads_per_sm // row["threads"]
    return f"{row['label']} (at most {fit} at a time)" if per > fit else row["label"]


@dataclass(frozen=True)
class L2(Context):
    """The L2 slides: the read and the copy as SMs are added (None: not measured), the best read
    beside the HBM copy and what it took; where the blocks run and how large a set L2 holds
    (placed); and the latency map's two halves (partitions)."""
    result: dict                        # the bandwidth scaling's record as a slide shows it (Records.record)
    partitions: dict | None             # the latency map, split into halves where it found them (None: not measured)
    placed: dict | None                 # the placement and the working-set sweep (None: not measured)
    rows: list[dict] | None = None
    params: dict | None = None
    best_read: dict | None = None
    best_copy: dict | None = None
    read_vs_hbm: float | None = None    # the best read over the best HBM copy (None: HBM not measured)
    read_peaks: str | None = None       # what the best read took, in READ_PEAKS' words


def context(deck) -> L2:
    hbm = deck.of(slides.hbm)
    partitions = latency_map(deck)
    placed = placement(deck)
    (r,) = deck.need("L2 Bandwidth Scaling", "l2.bandwidth_scaling")
    if "rows" not in r["record"]:
        return L2(result=r, partitions=partitions, placed=placed)
    rec = r["record"]
    device = deck.of(slides.device)
    best_read = max(rec["rows"], key=lambda x: x["read"]["gbps"])
    return L2(result=r, partitions=partitions, placed=placed,
              rows=[{**x, "label": _resident(x, device)} for x in rec["rows"]], params=rec["params"],
              best_read=best_read, best_copy=max(rec["rows"], key=lambda x: x["copy"]["gbps"]),
              read_vs_hbm=best_read["read"]["gbps"] / hbm.best["gbps"] if hbm.rows else None,
              read_peaks=read_peaks(best_read, device.sm_count, hbm))


def read_peaks(best: dict, sms: int, hbm: slides.hbm.Hbm) -> str:
    """What the fastest read took, in READ_PEAKS' and IN_FLIGHT's words."""
    where = ("every_as_hbm" if hbm.rows and hbm.best["sms_used"] == sms else "every") if best["sms"] == sms else "fewer"
    return READ_PEAKS[where].format(sms=best["sms"], of=sms) + IN_FLIGHT[best["blocks"] > best["sms"]]


# --- figures --------------------------------------------------------------------------------------

def l2_scaling(l2: L2, hbm: slides.hbm.Hbm) -> str:
    curve = [r for r in l2.rows if r["blocks"] == r["sms"]]
    extra = [r for r in l2.rows if r["blocks"] > r["sms"]]
    series = [Series("read, 1 block per SM", [(r["sms"], r["read"]["gbps"]) for r in curve]),
              Series("copy, 1 block per SM", [(r["sms"], r["copy"]["gbps"]) for r in curve], PALETTE[2])]
    series += [Series(f"read, {r['label'].split(', ')[-1]}", [(r["sms"], r["read"]["gbps"])], PALETTE[4 + i])
               for i, r in enumerate(extra)]
    lines = [Line("y", hbm.best["gbps"], f"HBM copy {hbm.best['gbps']:,.0f}", REF)] if hbm.rows else []
    return line_chart(Chart("SMs (log scale)", "GB/s", series, lines, width=440, height=320, legend="below"))


def partition_map(m: dict) -> str:
    """Where halves() found two: each SM's latency to the lines of each half of L2 (the median over
    them), the SMs near the first half first, then those near the second, each group by number, so
    that the two groups show as two blocks whose lines cross; else each SM's median over every line.
    The x axis ends at the SM count, the y axis just under the lowest median."""
    cycles = np.array(m["cycles"])
    groups = np.array(m["line_group"])
    if m["split"]:
        first = groups[0]            # the half the first line lies in is "half 1"
        order = sorted(range(len(m["sms"])), key=lambda i: (m["near_line_of_sm"][i] != first, m["sms"][i]))
        halves = [(first, ACCENT), (not first, REF)]
        series = [Series(f"lines in half {n} of L2 ({int((groups == half).sum())} lines)",
                         [(x, float(np.median(cycles[i][groups == half]))) for x, i in enumerate(order)], color)
                  for n, (half, color) in enumerate(halves, 1)]
        near_first = sum(near == first for near in m["near_line_of_sm"])
        lines = [Line("x", near_first - 0.5, f"{near_first} SMs near half 1 | {len(order) - near_first} near half 2")]
        x_label = f"the {len(order)} SMs, those near half 1 of L2 first (each group in SM order)"
    else:
        series = [Series("median over the lines", [(sm, float(np.median(row))) for sm, row in zip(m["sms"], cycles)])]
        lines, x_label = [], "SM (by number)"
    low = min(y for x in series for _, y in x.points)
    return line_chart(Chart(x_label, "cycles a load (median over the lines)", series, lines, x_log=False,
                            width=760, height=280, legend="below", y_from=10 * math.floor((low - 5) / 10),
                            x_to=len(m["sms"])))


def working_set_chart(p: dict) -> str:
    """The read's rate against its working set, every SM busy, with L2's size marked."""
    series = [Series("read, L1 bypassed", [(x["bytes"], x["gbps"]) for x in p["sweep"]])]
    lines = [Line("x", p["l2_bytes"], f"L2 {fmt_bytes(p['l2_bytes'])}", REF)]
    return line_chart(Chart("working set (bytes, log scale)", "GB/s", series, lines, x_format=fmt_bytes, width=440,
                            height=280, legend=None))


def draw(own: L2, deck) -> dict[str, str]:
    svgs = {"l2_scaling.svg": l2_scaling(own, deck.of(slides.hbm))} if own.rows else {}
    if own.placed:
        svgs["l2_working_set.svg"] = working_set_chart(own.placed)
    if own.partitions:
        svgs["l2_partitions.svg"] = partition_map(own.partitions)
    return svgs
