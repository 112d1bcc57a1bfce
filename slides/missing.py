"""The closing slides, from the sections they read: the steps past the reference deck (gemm's
story), what is still on the table (each track's share of its library, of its peak and of DeepGEMM,
and the clock the power cap leaves), and the takeaways, each lesson with the one number that proves
it. Template: missing.md.j2."""
from __future__ import annotations

from bench.gemm import catalogue
from slides.device import pct_of_peak
from slides.kit import (ACCENT, GRID, GROUP, INK, MUTED, PALETTE, Bar, Line, bar_chart, drawing, text,
                        text_width)
import slides.atlas
import slides.device
import slides.fp8
import slides.gemm
import slides.precision

TENSOR_CORES = ("HMMA", "HGMMA")        # SASS of the tensor cores' instructions: a step that runs on them


# --- Past the Reference Deck ------------------------------------------------------------------------

def verdict(best: dict) -> str | None:
    """A step's change against the step before, as the table says it: "tie" where its interval (or, timed
    apart, the two timings' spread) holds no change, "slower", else "gained"; None without a change."""
    change = best.get("change")
    if not change or not best.get("speedup"):
        return None
    if change["tie"] or change["within_noise"]:
        return "tie"
    return "slower" if change["slower"] or best["speedup"] < 1 else "gained"


def story(gemm: dict) -> dict | None:
    """The reference deck's last step and each step built past it, each its share of the cuBLAS it
    took turns with and its change against the step before; how many gained, tied and slowed."""
    rows = [{"name": s["name"], "beyond": s["beyond"], "pct": s["best"]["pct_cublas"], "tflops": s["best"]["tflops"],
             "speedup": s["best"].get("speedup"), "verdict": verdict(s["best"]) if s["beyond"] else None}
            for s in gemm["story"]]
    rows = [r for r in rows if r["pct"]]
    if len(rows) < 2 or rows[0]["beyond"]:
        return None
    beyond = rows[1:]
    counts = {v: sum(1 for r in beyond if r["verdict"] == v) for v in ("gained", "tie", "slower")}
    return {"rows": rows, "first": rows[0], "last": rows[-1], "steps": len(beyond), "counts": counts,
            "baseline": gemm["story"][-1]["best"]["baseline"]["precision"]}


def story_figure(st: dict, width: int = 860) -> str:
    """Each step's share of the cuBLAS it took turns with, a bar from 100% (left: behind it, right:
    ahead); the reference deck's last step muted, the steps past it lit; its change beside each."""
    rows = st["rows"]
    top, row_h, bottom, size = 44, 30, 30, 12
    h = top + row_h * len(rows) + bottom
    dwg = drawing(width, h)
    change_w = 118                                      # the column of changes, at the right
    left = max(text_width(r["name"], size) for r in rows) + 20
    pcts = [r["pct"] for r in rows]
    lo, hi = min(pcts + [100.0]), max(pcts + [100.0])
    pad = 46                                            # room for a bar's value past its end
    plot = (left + pad, width - change_w - pad)
    span = (hi - lo) or 1.0
    x_of = lambda v: plot[0] + (plot[1] - plot[0]) * (v - lo) / span
    text(dwg, (left, 16), f"% of cuBLAS {st['baseline']} in the same turns, each step's best", size=12, color=MUTED)
    text(dwg, (width - 4, 16), "against the step before,", size=11, color=MUTED, anchor="end")
    text(dwg, (width - 4, 30), "in turns", size=11, color=MUTED, anchor="end")
    step = next(s for s in (0.5, 1, 2, 5, 10, 20, 50) if span / s <= 8)
    t = step * int(lo // step)
    while t <= hi + 1e-9:
        if t >= lo - 1e-9:
            dwg.add(dwg.line((x_of(t), top - 4), (x_of(t), h - bottom), stroke=GRID))
            text(dwg, (x_of(t), h - bottom + 18), f"{t:g}%", size=11, color=MUTED, anchor="middle")
        t += step
    for i, r in enumerate(rows):
        y = top + i * row_h
        mid = y + row_h / 2 + 4
        text(dwg, (left - 10, mid), r["name"], size=size, anchor="end", color=INK if r["beyond"] else MUTED)
        a, b = sorted((x_of(100.0), x_of(r["pct"])))
        dwg.add(dwg.rect((a, y + 5), (max(b - a, 1), row_h - 10), rx=2, fill=ACCENT if r["beyond"] else GROUP))
        value = f"{r['pct']:.1f}%"
        if r["pct"] >= 100:
            text(dwg, (b + 5, mid), value, size=11, weight="bold" if r is rows[-1] else "normal")
        else:
            text(dwg, (a - 5, mid), value, size=11, anchor="end", weight="bold" if r is rows[-1] else "normal")
        if r["verdict"]:
            pct = f"{100 * (r['speedup'] - 1):+.1f}%"
            change = {"gained": pct, "tie": "a tie", "slower": f"{pct}, slower"}[r["verdict"]]
            text(dwg, (width - 4, mid), change, size=11, anchor="end", color=INK if r["verdict"] == "gained" else MUTED)
        elif not r["beyond"]:
            text(dwg, (width - 4, mid), "the reference deck's last", size=11, anchor="end", color=MUTED)
    dwg.add(dwg.line((x_of(100.0), top - 4), (x_of(100.0), h - bottom), stroke=INK, stroke_width=1.5))
    text(dwg, (x_of(100.0) - 6, top - 6), "← behind it", size=11, color=MUTED, anchor="end")
    text(dwg, (x_of(100.0) + 6, top - 6), "ahead of it →", size=11, color=MUTED)
    return dwg.tostring()


# --- Still on the Table -----------------------------------------------------------------------------

def tracks(deck) -> list[dict]:
    """Each precision's headline kernel: its share of its library in turns and of its peak at the
    clock its SMs ran at; FP8's is the kernel that sums in FP32 where it ran."""
    gemm, precision, fp8 = deck.of(slides.gemm), deck.of(slides.precision), deck.of(slides.fp8)
    f8 = fp8["promoted"] if fp8["measured"] and fp8.get("promoted") and fp8["promoted"].get("usable") else \
        fp8["fp8"] if fp8["measured"] and fp8.get("fp8") and fp8["fp8"].get("usable") else None
    kernels = [("TF32", "tf32", gemm["headline"]["to"] if gemm["headline"] else None),
               ("BF16", "bf16", precision["headline"]), ("FP8", "fp8", f8)]
    out = []
    for name, key, k in kernels:
        if not k or not k.get("baseline") or not k.get("pct_cublas"):
            continue
        out.append({"precision": name, "name": k["name"], "tflops": k["tflops"], "pct_cublas": k["pct_cublas"],
                    "library": "cuBLASLt" if key == "fp8" else f"cuBLAS {name}", "baseline_tflops": k["baseline_tflops"],
                    "clock_mhz": k["clock_mhz"], "pct_peak": pct_of_peak(deck.of(slides.device), key, k["tflops"], k["clock_mhz"])})
    return out


def gaps(deck) -> dict:
    """What the measured kernels leave on the table, each as a share of what it is held to: each
    track's library in turns and its peak at its clock, DeepGEMM (the block-scaled kernel's worst
    shape), and the SMs' clock against its maximum while the headline ran."""
    fp8, device, gemm = deck.of(slides.fp8), deck.of(slides.device), deck.of(slides.gemm)
    peer = fp8.get("peer") if fp8["measured"] else None
    deepgemm = peer.get("ours_range") if peer else None
    best = gemm["headline"]["to"] if gemm["headline"] else None
    clock = {"mhz": best["clock_mhz"], "max_mhz": device["sm_clock_max_mhz"],
             "pct": 100 * best["clock_mhz"] / device["sm_clock_max_mhz"], "capped": gemm["headline"]["power_capped"]} \
        if best and best["clock_mhz"] and device.get("sm_clock_max_mhz") else None
    return {"tracks": tracks(deck), "clock": clock,
            "deepgemm": {"lo_pct": 100 * deepgemm[0], "hi_pct": 100 * deepgemm[1], "shapes": len(peer["shapes"] or []),
                         "name": fp8.get("blocks_name")} if deepgemm else None}


def gaps_figure(g: dict) -> str:
    """A bar for each share, 100% across: a library's in turns, a peak's at the kernel's own clock,
    DeepGEMM's, the clock's maximum."""
    bars = []
    for t in g["tracks"]:
        bars.append(Bar(f"{t['precision']}: of {t['library']}, in turns", t["pct_cublas"], ACCENT,
                        f"({t['tflops']:,.1f} vs {t['baseline_tflops']:,.1f} TFLOPS)"))
        if t["pct_peak"]:
            bars.append(Bar(f"{t['precision']}: of its peak at its clock", t["pct_peak"], PALETTE[2],
                            f"(at {t['clock_mhz']:,.0f} MHz)"))
    if g["deepgemm"]:
        d = g["deepgemm"]
        bars.append(Bar("FP8 block scales: of DeepGEMM", d["lo_pct"], PALETTE[4],
                        f"(the worst of {d['shapes']} shapes; {d['lo_pct']:.0f}–{d['hi_pct']:.0f}%)"))
    if g["clock"]:
        c = g["clock"]
        bars.append(Bar("SM clock: of its maximum", c["pct"], PALETTE[3],
                        f"({c['mhz']:,.0f} of {c['max_mhz']:,.0f} MHz, the headline's turns)"))
    return bar_chart(bars, "% of what each is held to", [Line("x", 100.0, "100%", MUTED)],
                     height=40 + 24 * len(bars) + 46)


# --- Takeaways --------------------------------------------------------------------------------------

def tensor_core_steps(gemm: dict) -> list[dict]:
    """The measured steps that run on the tensor cores (their SASS holds a tensor-core instruction)."""
    on = {s.key for s in catalogue.STEPS if any(op in s.sass for op in TENSOR_CORES)}
    return [s for s in gemm["steps"] if s["key"] in on]


def feeding(gemm: dict) -> dict | None:
    """Once the tensor cores are in (the first step on them), the step that moved most in turns with
    the step before: its gain, and whether its interval lies above no change."""
    on = tensor_core_steps(gemm)
    if not on:
        return None
    after = [s for s in gemm["steps"] if s["index"] > on[0]["index"] and s["best"].get("speedup")
             and (s["best"].get("change") or {}).get("in_turns")]
    top = max(after, key=lambda s: s["best"]["speedup"], default=None)
    if not top:
        return None
    change = top["best"]["change"]
    return {"name": top["name"], "title": top["title"], "gain": top["best"]["speedup"], "ci": change["ci"],
            "gained": change["ci"][0] > 1, "first": on[0]["title"]}


def small_m(atlas: dict) -> dict | None:
    """The atlas's worst cell at small M, over the precisions measured, and whether it is below the
    worst from the larger sizes up in its precision (small M is where the GEMM loses)."""
    cells = [(at, at["small"], at["large"]) for at in atlas.get("summary") or [] if at.get("small") and at.get("large")]
    if not cells:
        return None
    at, small, large = min(cells, key=lambda c: c[1]["pct"])
    return {"precision": at["precision"], "pct": small["pct"], "where": small["where"], "to": small["to"],
            "large_pct": large["pct"], "large_from": large["from"], "loses": small["pct"] < large["pct"]}


def promotion(fp8: dict) -> dict | None:
    """FP8's sums promoted to FP32: how many times smaller the error, what it costs in turns, and
    whether the kernel without it misses cuBLASLt's error (FP8 needs it)."""
    p = fp8.get("promotion") if fp8["measured"] else None
    if not p or not p.get("error_drop") or not fp8.get("fp8"):
        return None
    cost = p.get("cost")
    return {"error_drop": p["error_drop"], "needs": not fp8["fp8"]["error_held"],
            "cost": cost and {"slower": cost["slower"], "faster": cost["faster"], "pct": 100 * abs(1 - cost["gain"])}}


def lessons(deck) -> dict:
    """The takeaways, each with the number that proves it; each None where its data is absent."""
    gemm = deck.of(slides.gemm)
    g = gaps(deck)
    clock = g["clock"] and {**g["clock"], "reasons": gemm["headline"]["throttle_reasons"],
                            "power_limit_w": deck.of(slides.device)["power_limit_w"]}
    return {"clock": clock, "feeding": feeding(gemm), "small_m": small_m(deck.of(slides.atlas)), "promotion": promotion(deck.of(slides.fp8))}


def context(deck) -> dict:
    return {"story": story(deck.of(slides.gemm)), "gaps": gaps(deck), "lessons": lessons(deck)}


def draw(own, deck) -> dict[str, str]:
    c = own
    g = c["gaps"]
    return {**({"past_reference.svg": story_figure(c["story"])} if c["story"] else {}),
            **({"on_the_table.svg": gaps_figure(g)} if g["tracks"] or g["deepgemm"] or g["clock"] else {})}
