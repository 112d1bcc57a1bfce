"""L2 bandwidth as SMs are added (bench/l2.py), read-only and copy, beside the HBM copy."""
from __future__ import annotations

from slides.kit import Chart, Line, PALETTE, REF, Series, line_chart


def context(deck) -> dict:
    hbm = deck["hbm"]
    (r,) = deck.need("L2 Bandwidth Scaling", "l2.bandwidth_scaling")
    if "rows" not in r["record"]:
        return {**r, "rows": None}
    rec = r["record"]
    best_read = max(rec["rows"], key=lambda x: x["read"]["gbps"])
    best_copy = max(rec["rows"], key=lambda x: x["copy"]["gbps"])
    sms = deck.doc["device"]["sm_count"]
    return {**r, "rows": rec["rows"], "params": rec["params"], "best_read": best_read, "best_copy": best_copy,
            "read_vs_hbm": best_read["read"]["gbps"] / hbm["best"]["gbps"] if hbm["rows"] else None,
            # what the fastest read took: every SM or fewer, one block each or several loads' worth
            "every_sm": best_read["sms"] == sms, "sms": sms, "many_in_flight": best_read["blocks"] > best_read["sms"],
            "hbm_every_sm": bool(hbm["rows"]) and hbm["best"]["sms_used"] == sms}


# --- figures --------------------------------------------------------------------------------------

def l2_scaling(l2: dict, hbm: dict) -> str:
    curve = [r for r in l2["rows"] if r["blocks"] == r["sms"]]
    extra = [r for r in l2["rows"] if r["blocks"] > r["sms"]]
    series = [Series("read, 1 block per SM", [(r["sms"], r["read"]["gbps"]) for r in curve]),
              Series("copy, 1 block per SM", [(r["sms"], r["copy"]["gbps"]) for r in curve], PALETTE[2])]
    series += [Series(f"read, {r['label'].split(', ')[-1]}", [(r["sms"], r["read"]["gbps"])], PALETTE[4 + i])
               for i, r in enumerate(extra)]
    lines = [Line("y", hbm["best"]["gbps"], f"HBM copy {hbm['best']['gbps']:,.0f}", REF)] if hbm["rows"] else []
    return line_chart(Chart("SMs (log scale)", "GB/s", series, lines, width=440, height=320, legend="below"))


def draw(deck) -> dict[str, str]:
    return {"l2_scaling.svg": l2_scaling(deck["l2"], deck["hbm"])} if deck["l2"]["rows"] else {}
