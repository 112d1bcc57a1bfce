"""Memory latency by level (bench/micro/latency.py): a pointer chase through L1, L2 and HBM, and the
working-set sweep that shows where each level ends."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from slides.kit import Chart, Line, REF, Series, fmt_bytes, line_chart
from slides.l2_map import MAP_ID, map_halves
from slides.records import Context
import slides.device


# Past L2's plateau, loads that take more than this many times a far-half hit cannot all be hits.
FAR_MARGIN = 1.25
# What the loads between L2's plateau and HBM's are, against a hit in L2's far half (its cycles on the
# L2 map filled in), by whether they take more than FAR_MARGIN times it.
FAR_HALF = {True: ": more than a hit in L2's far half ({far:,.0f} on the L2 map), so some of them go to memory",
            False: ", about a hit in L2's far half ({far:,.0f} on the L2 map): lines past the near half come from the far one"}


@dataclass(frozen=True)
class MemoryLatency(Context):
    """The memory-latency slides: the pointer chase's latency at each level (None: not measured), and
    the working-set sweep, where it leaves L2's plateau and where it steps up to HBM's latency."""
    result: dict                            # the record as a slide shows it (Records.record)
    levels: list[dict] | None = None        # each level's chase, with its ratio to the first
    by: dict[str, dict] = field(default_factory=dict)      # the levels by name
    sweep: list[dict] | None = None
    params: dict | None = None
    hbm_step_bytes: float | None = None     # where the sweep steps up to HBM's latency
    hbm_step_vs_l2_pct: float | None = None
    # where the sweep leaves L2's plateau, and its loads' median cycles from there to the step (None: it
    # does not leave it before the step)
    l2_leave_bytes: int | None = None
    l2_leave_pct: float | None = None
    middle_cycles: float | None = None
    clock_mhz: float | None = None          # cycles over nanoseconds of every chase
    # where that clock passes the card's maximum, by how much, as a clause ("": it does not): the
    # cycle counter against the global timer can read past it, said, not hidden
    clock_over_max: str = ""
    middle_said: str = ""                   # the slide's sentence on the middle, against a hit in L2's far half ("": no middle)
    middle_notes_said: str = ""             # the notes' one


def context(deck) -> MemoryLatency:
    (r,) = deck.need("Memory Latency", "latency.memory")
    if "levels" not in r["record"]:
        return MemoryLatency(result=r)
    device = deck.of(slides.device)
    measured = read(r["record"], device.l2_bytes)
    # what a hit in L2's far half costs, from the L2 map (its own slide: slides/l2.py), where it found two halves
    mapped = map_halves(deck.record(MAP_ID))
    far = mapped[1]["far"] if mapped and mapped[1]["split"] else None
    middle = measured["middle_cycles"]
    # the middle's loads against a hit in L2's far half, in FAR_HALF's words ("": no halves on the L2 map)
    far_half = FAR_HALF[middle > FAR_MARGIN * far].format(far=far) if far and middle else ""
    leave = measured["l2_leave_bytes"]
    return MemoryLatency(result=r, **measured,
                         middle_said=f"From {fmt_bytes(leave)}, {measured['l2_leave_pct']:,.0f}% of it, loads take {middle:,.0f} "
                                     f"cycles instead of {measured['by']['L2']['cycles']:,.0f}{far_half}." if middle else "",
                         middle_notes_said=f"From {fmt_bytes(leave)} loads take about {middle:,.0f} cycles, between L2's and "
                                           f"HBM's, until the step up to HBM latency at {fmt_bytes(measured['hbm_step_bytes'])}."
                                           if middle else "",
                         clock_over_max=clock_over_max(measured["clock_mhz"], device.sm_clock_max_mhz))


def clock_over_max(clock: float, top: float) -> str:
    """How far the chase's clock passes the card's maximum, as a clause; empty where it does not."""
    if clock <= top:
        return ""
    return f", {100 * (clock / top - 1):,.1f}% past the card's {top:,.0f} MHz maximum: how far the two counters disagree here"


def read(rec: dict, l2_bytes: int) -> dict:
    """The levels, and where the working-set sweep leaves L2 and reaches HBM."""
    levels = [{**lv, "ratio": lv["cycles"] / rec["levels"][0]["cycles"]} for lv in rec["levels"]]
    by = {lv["level"]: lv for lv in levels}
    sweep = rec["sweep"]
    # Where the sweep reaches HBM latency: the first size within 10% of the largest sizes' plateau;
    # the step is put halfway (geometrically) between it and the size before.
    hbm_plateau = sorted(s["cycles"] for s in sweep[-3:])[1]
    first = next(i for i, s in enumerate(sweep) if s["cycles"] >= 0.9 * hbm_plateau)
    step = math.sqrt(sweep[first]["bytes"] * sweep[first - 1]["bytes"]) if first else None
    # and where it first leaves the L2 plateau
    l2 = by.get("L2", {}).get("cycles")
    leave = next((s["bytes"] for s in sweep if l2 and s["bytes"] > 1 << 20 and s["cycles"] > 1.2 * l2), None)
    middle = [s for s in sweep if leave and leave <= s["bytes"] < sweep[first]["bytes"]]
    chases = [*levels, *sweep]
    middle_cycles = sorted(s["cycles"] for s in middle)[len(middle) // 2] if middle else None
    return {"levels": levels, "by": by, "sweep": sweep, "params": rec["params"],
            "l2_leave_pct": 100 * leave / l2_bytes if leave else None,
            "hbm_step_bytes": step, "hbm_step_vs_l2_pct": 100 * (step / l2_bytes - 1) if step else None,
            "l2_leave_bytes": leave, "middle_cycles": middle_cycles,
            # cycles over ns of every chase: the long ones weigh most, where the global timer's
            # granularity is least of the span (the shared-memory chase alone lasts a third of a ms)
            "clock_mhz": 1000 * sum(c["cycles"] for c in chases) / sum(c["ns"] for c in chases)}


# --- figures --------------------------------------------------------------------------------------

def memory_sweep(mem: MemoryLatency, device: slides.device.Device) -> str:
    series = [Series("pointer chase (ld.ca)", [(s["bytes"], s["cycles"]) for s in mem.sweep])]
    lines = [Line("x", device.l2_bytes, f"L2 as reported: {fmt_bytes(device.l2_bytes)}", REF)]
    if mem.hbm_step_bytes:
        lines.append(Line("x", mem.hbm_step_bytes, f"step read off the sweep: {fmt_bytes(mem.hbm_step_bytes)}", "#059669"))
    return line_chart(Chart("working set (log scale)", "cycles per load", series, lines, x_format=fmt_bytes, legend=None, height=330))


def draw(own: MemoryLatency, deck) -> dict[str, str]:
    return {"memory_sweep.svg": memory_sweep(own, deck.of(slides.device))} if own.sweep else {}
