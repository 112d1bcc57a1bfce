"""Matrix transpose (bench/micro/transpose.py): each kernel's bandwidth beside a copy of the same bytes."""
from __future__ import annotations

from dataclasses import dataclass

from slides.kit import ACCENT, Bar, Line, MISSING, REF, bar_chart
from slides.records import Context

# What padding the shared-memory tile did, by whether the padded kernel is the faster: the words after its factor.
PADDING_EFFECT = {True: "faster", False: "slower, which the conflicts alone do not explain"}


@dataclass(frozen=True)
class Transpose(Context):
    """The transpose slides: each kernel's bandwidth and time beside a copy of the same bytes (None:
    not measured), the best of them, and what padding the shared-memory tile changed."""
    result: dict                        # the record as a slide shows it (Records.record)
    rows: list[dict] | None = None
    copy: dict | None = None            # the plain copy of the same bytes
    params: dict | None = None
    best: dict | None = None
    by: dict[str, dict] | None = None   # the rows by kernel key
    # the padded tile against the unpadded: the factor (at least one) and PADDING_EFFECT's words;
    # None without both kernels
    padding: dict | None = None


def context(deck) -> Transpose:
    (r,) = deck.need("Matrix Transpose", "transpose.all")
    if "rows" not in r["record"]:
        return Transpose(result=r)
    rec = r["record"]
    by = {row["key"]: row for row in rec["rows"]}
    return Transpose(result=r, rows=rec["rows"], copy=rec["copy"], params=rec["params"],
                     best=max(rec["rows"], key=lambda x: x["gbps"]), by=by, padding=padding(by))


def padding(by: dict[str, dict]) -> dict | None:
    """How the padded tile's kernel compares with the unpadded one's, as the slide says it."""
    if not {"smem", "smem_padded"} <= by.keys():
        return None
    gain = by["smem_padded"]["gbps"] / by["smem"]["gbps"]
    return {"times": gain if gain >= 1 else 1 / gain, "effect": PADDING_EFFECT[gain >= 1]}


# --- figures --------------------------------------------------------------------------------------

def transpose_bars(tr: Transpose) -> str:
    bars = [Bar(r["label"], r["gbps"], MISSING if not r["check_passed"] else ACCENT,
                f"{r['pct_of_copy']:.1f}% of copy") for r in tr.rows]
    return bar_chart(bars, "GB/s (read + written)", [Line("x", tr.copy["gbps"], "copy of the same bytes", REF)])


def draw(own: Transpose, deck) -> dict[str, str]:
    return {"transpose.svg": transpose_bars(own)} if own.rows else {}
