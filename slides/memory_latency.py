"""Memory latency by level (bench/micro/latency.py): a pointer chase through L1, L2 and HBM, and the
working-set sweep that shows where each level ends."""
from __future__ import annotations

import math

from slides.kit import Chart, Line, REF, Series, fmt_bytes, line_chart
from slides.l2_map import MAP_ID, map_halves
import slides.device


# Past L2's plateau, loads that take more than this many times a far-half hit cannot all be hits.
FAR_MARGIN = 1.25


def context(deck) -> dict:
    (r,) = deck.need("Memory Latency", "latency.memory")
    if "levels" not in r["record"]:
        return {**r, "levels": None, "sweep": None, "hbm_step_bytes": None}
    out = {**r, **read(r["record"], deck.of(slides.device)["l2_bytes"])}
    # what a hit in L2's far half costs, from the L2 map (its own slide: slides/l2.py), where it found two halves
    mapped = map_halves(deck.record(MAP_ID))
    out["far_hit"] = mapped[1]["far"] if mapped and mapped[1]["split"] else None
    out["past_far"] = bool(out["far_hit"] and out["middle_cycles"] and out["middle_cycles"] > FAR_MARGIN * out["far_hit"])
    top = deck.of(slides.device).get("sm_clock_max_mhz")
    # the cycle counter against the global timer can read past the card's maximum: said, not hidden
    out["clock_over_max_pct"] = 100 * (out["clock_mhz"] / top - 1) if top and out["clock_mhz"] > top else None
    return out


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

def memory_sweep(mem: dict, device: dict) -> str:
    series = [Series("pointer chase (ld.ca)", [(s["bytes"], s["cycles"]) for s in mem["sweep"]])]
    lines = [Line("x", device["l2_bytes"], f"L2 as reported: {fmt_bytes(device['l2_bytes'])}", REF)]
    if mem["hbm_step_bytes"]:
        lines.append(Line("x", mem["hbm_step_bytes"], f"step read off the sweep: {fmt_bytes(mem['hbm_step_bytes'])}", "#059669"))
    return line_chart(Chart("working set (log scale)", "cycles per load", series, lines, x_format=fmt_bytes, legend=None, height=330))


def draw(own, deck) -> dict[str, str]:
    mem = own
    return {"memory_sweep.svg": memory_sweep(mem, deck.of(slides.device))} if mem["sweep"] else {}
