"""Matrix transpose (bench/micro/transpose.py): each kernel's bandwidth beside a copy of the same bytes."""
from __future__ import annotations

from slides.kit import ACCENT, Bar, Line, MISSING, REF, bar_chart


def context(deck) -> dict:
    (r,) = deck.need("Matrix Transpose", "transpose.all")
    if "rows" not in r["record"]:
        return {**r, "rows": None}
    rec = r["record"]
    by = {row["key"]: row for row in rec["rows"]}
    best = max(rec["rows"], key=lambda x: x["gbps"])
    padding_gain = by["smem_padded"]["gbps"] / by["smem"]["gbps"] if {"smem", "smem_padded"} <= by.keys() else None
    return {**r, "rows": rec["rows"], "copy": rec["copy"], "params": rec["params"], "best": best, "by": by,
            "padding_gain": padding_gain,
            "padding_effect": None if padding_gain is None else "faster" if padding_gain >= 1 else "slower"}


# --- figures --------------------------------------------------------------------------------------

def transpose_bars(tr: dict) -> str:
    bars = [Bar(r["label"], r["gbps"], MISSING if not r["check_passed"] else ACCENT,
                f"{r['pct_of_copy']:.1f}% of copy") for r in tr["rows"]]
    return bar_chart(bars, "GB/s (read + written)", [Line("x", tr["copy"]["gbps"], "copy of the same bytes", REF)])


def draw(own, deck) -> dict[str, str]:
    tr = own
    return {"transpose.svg": transpose_bars(tr)} if tr["rows"] else {}
