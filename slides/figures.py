"""The deck's SVG figures, drawn with svgwrite from the build context: what they
show comes from the results, never from numbers written here."""
from __future__ import annotations

import math

import svgwrite

FONT = "font-family:Inter,Helvetica,Arial,sans-serif"
INK, MUTED, ACCENT, REF, GRID = "#1f2937", "#6b7280", "#2563eb", "#dc2626", "#e5e7eb"
MISSING = "#9ca3af"


def _drawing(w: int, h: int) -> svgwrite.Drawing:
    dwg = svgwrite.Drawing(size=(f"{w}px", f"{h}px"), viewBox=f"0 0 {w} {h}", profile="full")
    dwg.add(dwg.rect((0, 0), (w, h), fill="white"))
    return dwg


def _text(dwg, xy, s, size=13, color=INK, anchor="start", weight="normal", **kw):
    dwg.add(dwg.text(s, insert=xy, style=f"{FONT};font-size:{size}px;font-weight:{weight}",
                     fill=color, text_anchor=anchor, **kw))


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi``."""
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == 0 else f"{v:g}"


def sm_hierarchy(device: dict, hbm: dict) -> str:
    """The GPU as the results describe it: SMs with their sub-partitions, L2, HBM."""
    w, h = 900, 430
    dwg = _drawing(w, h)
    n = device["sm_count"]
    _text(dwg, (w / 2, 28), f"{device['name']}: {n} SMs ({device['arch']}, {device['sm_name']})",
          size=18, anchor="middle", weight="bold")
    shown = 6
    box_w, gap, x0, y0 = 112, 14, 40, 55
    for i in range(shown + 1):
        x = x0 + i * (box_w + gap)
        if i == shown - 1:
            _text(dwg, (x + box_w / 2, y0 + 80), "…", size=32, color=MUTED, anchor="middle")
            continue
        label = f"SM {n - 1}" if i == shown else f"SM {i}"
        dwg.add(dwg.rect((x, y0), (box_w, 150), rx=6, fill="#eff6ff", stroke=ACCENT, stroke_width=1.5))
        _text(dwg, (x + box_w / 2, y0 + 18), label, size=13, anchor="middle", weight="bold")
        for s in range(device["subpartitions"]):
            sx, sy = x + 8 + (s % 2) * 50, y0 + 28 + (s // 2) * 58
            dwg.add(dwg.rect((sx, sy), (46, 52), rx=3, fill="white", stroke=MUTED))
            _text(dwg, (sx + 23, sy + 16), "sched", size=10, color=MUTED, anchor="middle")
            if device["fp32_lanes_per_sm"]:
                _text(dwg, (sx + 23, sy + 31), f"{device['fp32_lanes_per_sm'] // device['subpartitions']} FP32",
                      size=10, anchor="middle")
            _text(dwg, (sx + 23, sy + 45), "TC", size=10, color=ACCENT, anchor="middle")
    _text(dwg, (x0, y0 + 170), f"per SM: {device['subpartitions']} sub-partitions, "
          f"{device['regs_per_sm'] // 1024}K registers, {device['smem_per_sm_bytes'] // 1024} KiB shared memory / L1 "
          f"(up to {device['smem_per_block_optin_bytes'] // 1024} KiB per block), "
          f"{device['max_threads_per_sm']} threads", size=12, color=MUTED)
    l2_y = 255
    dwg.add(dwg.rect((x0, l2_y), (w - 2 * x0, 50), rx=6, fill="#fef3c7", stroke="#d97706"))
    _text(dwg, (w / 2, l2_y + 31), f"L2 cache: {device['l2_bytes'] / 2**20:,.0f} MiB", size=15,
          anchor="middle", weight="bold")
    hbm_y = 340
    dwg.add(dwg.rect((x0, hbm_y), (w - 2 * x0, 60), rx=6, fill="#ecfdf5", stroke="#059669"))
    bw = f"{device['hbm_peak_gbps']:,.0f} GB/s theoretical"
    if hbm["rows"]:
        bw += f", {hbm['best']['gbps']:,.0f} GB/s copy measured"
    _text(dwg, (w / 2, hbm_y + 26), f"HBM: {device['memory_bytes'] / 2**30:,.0f} GiB", size=15,
          anchor="middle", weight="bold")
    _text(dwg, (w / 2, hbm_y + 47), bw, size=13, anchor="middle", color=MUTED)
    return dwg.tostring()


def gemm_progression(gemm: dict) -> str:
    """Horizontal bars: each step's TFLOPS beside cuBLAS TF32 on the same layout."""
    bars = [(f"{s['title']} ({v['label']})" if len(s["variants"]) > 1 else s["title"], v)
            for s in gemm["steps"] for v in s["variants"]]
    cublas = [r for r in gemm["cublas_rows"] if r["precision"] == "tf32"]
    bars += [(f"cuBLAS TF32, {r['layout_name']}", r) for r in cublas]
    w, row_h, left, top = 900, 30, 330, 40
    h = top + row_h * len(bars) + 50
    dwg = _drawing(w, h)
    values = [v["tflops"] for _, v in bars if v["tflops"]]
    hi = max(values) if values else 1.0
    ticks = nice_ticks(hi)
    scale = (w - left - 60) / ticks[-1]
    _text(dwg, (left, 22), "TFLOPS at the reference shape", size=13, color=MUTED)
    for t in ticks:
        x = left + t * scale
        dwg.add(dwg.line((x, top - 6), (x, h - 40), stroke=GRID))
        _text(dwg, (x, h - 22), _fmt(t), size=11, color=MUTED, anchor="middle")
    for i, (label, v) in enumerate(bars):
        y = top + i * row_h
        is_ref = v["id"].startswith("gemm.cublas")
        _text(dwg, (left - 10, y + 19), label, size=12, anchor="end", color=INK if v["tflops"] else MISSING)
        if v["tflops"]:
            dwg.add(dwg.rect((left, y + 5), (v["tflops"] * scale, row_h - 10), rx=3,
                             fill=REF if is_ref else (MISSING if v["failed"] else ACCENT)))
            note = f"{v['tflops']:,.1f}" + ("  check failed" if v["failed"] else "")
            _text(dwg, (left + v["tflops"] * scale + 6, y + 19), note, size=11)
        else:
            dwg.add(dwg.rect((left, y + 5), (120, row_h - 10), rx=3, fill="none", stroke=MISSING,
                             stroke_dasharray="4,3"))
            _text(dwg, (left + 60, y + 19), "not measured", size=11, color=MISSING, anchor="middle")
    return dwg.tostring()


def hbm_scaling(hbm: dict, device: dict) -> str:
    """Copy bandwidth against the number of SMs used (log scale), with cudaMemcpy
    and the theoretical peak as reference lines."""
    w, h, left, right, top, bottom = 900, 420, 80, 40, 30, 60
    dwg = _drawing(w, h)
    rows = [r for r in hbm["rows"] if r["threads"] >= 32 or r["blocks"] > 1]
    sms = sorted({r["sms_used"] for r in rows})
    xmax = max(sms)
    hi = max(device["hbm_peak_gbps"], max(r["gbps"] for r in rows), hbm["memcpy"]["gbps"])
    ticks = nice_ticks(hi)
    x_of = lambda n: left + (w - left - right) * math.log2(n) / math.log2(xmax)
    y_of = lambda g: h - bottom - (h - top - bottom) * g / ticks[-1]
    for t in ticks:
        dwg.add(dwg.line((left, y_of(t)), (w - right, y_of(t)), stroke=GRID))
        _text(dwg, (left - 8, y_of(t) + 4), _fmt(t), size=11, color=MUTED, anchor="end")
    for n in sms:
        _text(dwg, (x_of(n), h - bottom + 18), str(n), size=11, color=MUTED, anchor="middle")
    _text(dwg, ((w + left) / 2, h - 18), "SMs used (log scale)", size=12, color=MUTED, anchor="middle")
    _text(dwg, (18, (h - bottom + top) / 2), "GB/s (read + written)", size=12, color=MUTED, anchor="middle",
          transform=f"rotate(-90 18 {(h - bottom + top) / 2})")
    for value, label, color in ((device["hbm_peak_gbps"], "theoretical peak", MUTED),
                                (hbm["memcpy"]["gbps"], "cudaMemcpy", REF)):
        dwg.add(dwg.line((left, y_of(value)), (w - right, y_of(value)), stroke=color, stroke_dasharray="6,4"))
        _text(dwg, (left + 8, y_of(value) - 6), f"{label} {value:,.0f}", size=11, color=color)
    curve = [r for r in rows if r["blocks"] == r["sms_used"] and r["threads"] > 32]
    dwg.add(dwg.polyline([(x_of(r["sms_used"]), y_of(r["gbps"])) for r in curve], fill="none",
                         stroke=ACCENT, stroke_width=2))
    for r in rows:
        x, y = x_of(r["sms_used"]), y_of(r["gbps"])
        dwg.add(dwg.circle((x, y), 4.5, fill=ACCENT if r in curve else "#7c3aed"))
        if r not in curve:
            _text(dwg, (x - 8, y - 8), f"{r['label']}: {r['gbps']:,.0f}", size=11, color="#7c3aed", anchor="end")
    return dwg.tostring()


def draw_all(context: dict) -> dict[str, str]:
    """Every figure the deck shows, by file name; a figure whose data is missing is not drawn."""
    svgs = {"sm_hierarchy.svg": sm_hierarchy(context["device"], context["hbm"]),
            "gemm_progression.svg": gemm_progression(context["gemm"])}
    if context["hbm"]["rows"]:
        svgs["hbm_scaling.svg"] = hbm_scaling(context["hbm"], context["device"])
    return svgs
