"""HBM bandwidth as SMs are added (bench/micro/hbm.py), and Little's law from it and the memory latency."""
from __future__ import annotations

from dataclasses import dataclass

from slides.kit import Chart, Line, PALETTE, REF, Series, line_chart
from slides.records import Context
import slides.device
import slides.memory_latency


FLAT_PCT = 90


@dataclass(frozen=True)
class Hbm(Context):
    """The HBM slides: the copy's rows (None: not measured), cudaMemcpy and the best row, each with its
    share of cudaMemcpy and of the theoretical peak; Little's law from the memory latency."""
    result: dict                        # the record as a slide shows it (Records.record)
    rows: list[dict] | None = None
    memcpy: dict | None = None
    best: dict | None = None
    params: dict | None = None
    per_sm: dict | None = None          # one block of more than a warp on one SM
    little: dict | None = None
    flat_from: str = ""                 # the fewest SMs that copy at FLAT_PCT of cudaMemcpy, as a clause ("": none do)


def context(deck) -> Hbm:
    device = deck.of(slides.device)
    (r,) = deck.need("HBM Bandwidth Scaling", "hbm.copy_scaling")
    if "rows" not in r["record"]:
        return Hbm(result=r)
    rec = r["record"]
    memcpy = rec["memcpy"]
    rows = [{**row, "pct_memcpy": 100 * row["gbps"] / memcpy["gbps"],
             "pct_peak": 100 * row["gbps"] / device.hbm_peak_gbps} for row in rec["rows"]]
    best = max(rows, key=lambda row: row["gbps"])
    # where the curve flattens: the fewest SMs that copy at FLAT_PCT of cudaMemcpy or more
    flat = [row["sms_used"] for row in rows if row["pct_memcpy"] >= FLAT_PCT]
    per_sm = next((row for row in rows if row["threads"] > 32 and row["blocks"] == 1), None)
    return Hbm(result=r, rows=rows, memcpy={**memcpy, "pct_peak": 100 * memcpy["gbps"] / device.hbm_peak_gbps},
               best=best, params=rec["params"], per_sm=per_sm,
               flat_from=f"; the curve reaches {FLAT_PCT}% of cudaMemcpy only at {min(flat)} SMs" if flat else "",
               little=little(best, per_sm, deck.of(slides.memory_latency)))


def little(best: dict, per_sm: dict | None, mem: slides.memory_latency.MemoryLatency) -> dict | None:
    """Little's law: bytes in flight = bandwidth x latency, for the loads (half the copy's bytes)."""
    if not (per_sm and "HBM" in mem.by):
        return None
    latency_ns, read_gbps = mem.by["HBM"]["ns"], best["gbps"] / 2
    need = read_gbps * latency_ns                               # GB/s x ns = bytes
    in_flight_per_sm = per_sm["gbps"] / 2 * latency_ns
    return {"latency_ns": latency_ns, "bytes_needed": need, "bytes_per_sm": in_flight_per_sm,
            "sms_needed": need / in_flight_per_sm, "per_sm_gbps": per_sm["gbps"], "read_gbps": read_gbps}


# --- figures --------------------------------------------------------------------------------------

def hbm_scaling(hbm: Hbm, device: slides.device.Device) -> str:
    """Copy bandwidth against the SMs used, one block per SM, beside cudaMemcpy and the peak."""
    curve = [r for r in hbm.rows if r["blocks"] == r["sms_used"] and r["threads"] > 32]
    full = [r for r in hbm.rows if r["blocks"] > r["sms_used"]]
    series = [Series("1 block of threads per SM", [(r["sms_used"], r["gbps"]) for r in curve])]
    series += [Series(r["label"], [(r["sms_used"], r["gbps"])], PALETTE[4 + i]) for i, r in enumerate(full)]
    return line_chart(Chart("SMs used (log scale)", "GB/s (read + written)", series, [
        Line("y", device.hbm_peak_gbps, f"theoretical peak {device.hbm_peak_gbps:,.0f}"),
        Line("y", hbm.memcpy["gbps"], f"cudaMemcpy {hbm.memcpy['gbps']:,.0f}", REF)], height=280))


def draw(own: Hbm, deck) -> dict[str, str]:
    return {"hbm_scaling.svg": hbm_scaling(own, deck.of(slides.device))} if own.rows else {}
