"""The deck's SVG figures, drawn with svgwrite from the build context: what they
show comes from the results, never from numbers written here."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import svgwrite

from slides.escape import plain_text

FONT = "font-family:Inter,Helvetica,Arial,sans-serif"
INK, MUTED, ACCENT, REF, GRID = "#1f2937", "#6b7280", "#2563eb", "#dc2626", "#e5e7eb"
MISSING = "#9ca3af"
GROUP = "#d1d5db"            # lines drawn as a group, behind the ones the figure is about
PALETTE = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#475569", "#ea580c")


def _drawing(w: int, h: int) -> svgwrite.Drawing:
    # debug=False: no attribute validation on every element (a fifth of build.py's time)
    dwg = svgwrite.Drawing(size=(f"{w}px", f"{h}px"), viewBox=f"0 0 {w} {h}", profile="full", debug=False)
    dwg.add(dwg.rect((0, 0), (w, h), fill="white"))
    return dwg


def _text(dwg, xy, s, size=13, color=INK, anchor="start", weight="normal", **kw):
    dwg.add(dwg.text(plain_text(s), insert=xy, style=f"{FONT};font-size:{size}px;font-weight:{weight}",
                     fill=color, text_anchor=anchor, **kw))


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi``."""
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of two (for sizes and counts) or of ten covering [lo, hi]."""
    return [2.0 ** e for e in range(math.floor(math.log2(lo)), math.ceil(math.log2(hi)) + 1)]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if v >= 10 or v == 0 else f"{v:g}"


def fmt_bytes(n: float) -> str:
    """Three significant figures in binary units: 4 KiB, 22.6 MiB, 79.2 GiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n:.3g} B"


@dataclass
class Series:
    label: str
    points: list[tuple[float, float]]
    color: str = ACCENT
    marks: bool = True
    dash: str | None = None       # an SVG stroke-dasharray: a peer or a model drawn beside a measurement
    legend: bool = True           # False: drawn, but one of a group the legend names once


@dataclass
class Line:
    """A horizontal (axis 'y') or vertical (axis 'x') reference line."""
    axis: str
    value: float
    label: str
    color: str = MUTED


@dataclass
class Chart:
    x_label: str
    y_label: str
    series: list[Series]
    lines: list[Line] = field(default_factory=list)
    x_log: bool = True
    y_log: bool = False
    x_format: callable = _fmt
    width: int = 860             # the size the slide shows it at: its text sizes are what a room sees
    height: int = 400
    legend: str | None = "right"  # "right", "below" (a narrow chart) or None


def _text_width(s: str, size: float) -> float:
    """About how wide a label is set: for keeping it inside its figure."""
    return 0.58 * size * len(s)


def line_chart(c: Chart) -> str:
    w, h = c.width, c.height
    named = [s for s in c.series if s.legend] if c.legend and len(c.series) > 1 else []
    legend_w = max((_text_width(s.label, 12) for s in named), default=0) + 50
    per_row = max(1, int((w - 60) // legend_w)) if c.legend == "below" else 0
    below = 20 * math.ceil(len(named) / per_row) if per_row and named else 0
    left, right, top = 72, 24 + (legend_w if named and c.legend == "right" else 0), 24
    bottom = 56 + below
    dwg = _drawing(w, h)
    xs = [x for s in c.series for x, _ in s.points] + [l.value for l in c.lines if l.axis == "x"]
    ys = [y for s in c.series for _, y in s.points] + [l.value for l in c.lines if l.axis == "y"]
    if c.x_log:
        xt = log_ticks(min(xs), max(xs))
        if len(xt) > 12:
            xt = xt[:: math.ceil(len(xt) / 12)]
        x0, x1 = math.log2(xt[0]), math.log2(max(xt[-1], max(xs)))
        x_of = lambda x: left + (w - left - right) * (math.log2(x) - x0) / ((x1 - x0) or 1)
    else:
        xt = nice_ticks(max(xs))
        x_of = lambda x: left + (w - left - right) * x / xt[-1]
    if c.y_log:
        yt = [10.0 ** e for e in range(math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys))) + 1)]
        y0, y1 = math.log10(yt[0]), math.log10(yt[-1])
        y_of = lambda y: h - bottom - (h - top - bottom) * (math.log10(y) - y0) / ((y1 - y0) or 1)
    else:
        yt = nice_ticks(max(ys))
        y_of = lambda y: h - bottom - (h - top - bottom) * y / yt[-1]
    for t in yt:
        dwg.add(dwg.line((left, y_of(t)), (w - right, y_of(t)), stroke=GRID))
        _text(dwg, (left - 8, y_of(t) + 4), _fmt(t), size=11, color=MUTED, anchor="end")
    for t in xt:
        _text(dwg, (x_of(t), h - bottom + 18), c.x_format(t), size=11, color=MUTED, anchor="middle")
    _text(dwg, ((w + left - right) / 2, h - bottom + 40), c.x_label, size=12, color=MUTED, anchor="middle")
    _text(dwg, (18, (h - bottom + top) / 2), c.y_label, size=12, color=MUTED, anchor="middle",
          transform=f"rotate(-90 18 {(h - bottom + top) / 2})")
    for i, l in enumerate(c.lines):
        if l.axis == "y":
            dwg.add(dwg.line((left, y_of(l.value)), (w - right, y_of(l.value)), stroke=l.color, stroke_dasharray="6,4"))
            _text(dwg, (left + 8, y_of(l.value) - 6), l.label, size=11, color=l.color)
        else:
            dwg.add(dwg.line((x_of(l.value), top), (x_of(l.value), h - bottom), stroke=l.color, stroke_dasharray="6,4"))
            _text(dwg, (x_of(l.value) - 6, top + 12 + 16 * i), l.label, size=11, color=l.color, anchor="end")
    for s in sorted(c.series, key=lambda s: s.legend):       # a group in the background, the named lines over it
        pts = [(x_of(x), y_of(y)) for x, y in s.points]
        dwg.add(dwg.polyline(pts, fill="none", stroke=s.color, stroke_width=2,
                             **({"stroke_dasharray": s.dash} if s.dash else {})))
        if s.marks:
            for p in pts:
                dwg.add(dwg.circle(p, 3.5, fill=s.color))
    for i, s in enumerate(named):
        if per_row:
            lx, ly = left + (i % per_row) * legend_w, h - below + 20 * (i // per_row) + 4
        else:
            lx, ly = w - right + 12, top + 8 + 20 * i
        dwg.add(dwg.line((lx, ly), (lx + 20, ly), stroke=s.color, stroke_width=3,
                         **({"stroke_dasharray": s.dash} if s.dash else {})))
        _text(dwg, (lx + 25, ly + 4), s.label, size=12)
    return dwg.tostring()


@dataclass
class Bar:
    label: str
    value: float | None          # None: not measured
    color: str = ACCENT
    note: str = ""


def bar_chart(bars: list[Bar], title: str, lines: list[Line] = (), width: int = 860, height: int | None = None) -> str:
    """Horizontal bars, one per row, in ``height`` (or 30 px a row); missing values drawn as dashed
    'not measured' boxes."""
    top, bottom = 40, 46
    h = height or top + 30 * len(bars) + bottom
    row_h = (h - top - bottom) / len(bars)
    size = 12 if row_h >= 18 else 11 if row_h >= 14 else 10
    w = width
    dwg = _drawing(w, h)
    left = min(max(_text_width(b.label, size) for b in bars) + 16, 0.5 * w)
    values = [b.value for b in bars if b.value] + [l.value for l in lines]
    ticks = nice_ticks(max(values) if values else 1.0)
    notes = max((_text_width(f"{b.value:,.1f}  {b.note}", size) for b in bars if b.value), default=0)
    scale = (w - left - max(notes + 10, 30)) / ticks[-1]
    _text(dwg, (left, 20), title, size=12, color=MUTED)
    for t in ticks:
        x = left + t * scale
        dwg.add(dwg.line((x, top - 6), (x, h - bottom + 6), stroke=GRID))
        _text(dwg, (x, h - bottom + 22), _fmt(t), size=11, color=MUTED, anchor="middle")
    for l in lines:
        x = left + l.value * scale
        dwg.add(dwg.line((x, top - 6), (x, h - bottom + 6), stroke=l.color, stroke_dasharray="6,4"))
        _text(dwg, (x + 4, top - 8), l.label, size=11, color=l.color)
    for i, b in enumerate(bars):
        y, mid = top + i * row_h, top + (i + 0.5) * row_h + size * 0.35
        _text(dwg, (left - 8, mid), b.label, size=size, anchor="end", color=INK if b.value else MISSING)
        bar_h = max(row_h - 6, row_h * 0.7)
        if b.value:
            dwg.add(dwg.rect((left, y + (row_h - bar_h) / 2), (b.value * scale, bar_h), rx=2, fill=b.color))
            _text(dwg, (left + b.value * scale + 5, mid), f"{b.value:,.1f}" + (f"  {b.note}" if b.note else ""), size=size)
        else:
            dwg.add(dwg.rect((left, y + (row_h - bar_h) / 2), (120, bar_h), rx=2, fill="none", stroke=MISSING,
                             stroke_dasharray="4,3"))
            _text(dwg, (left + 60, mid), "not measured", size=size, color=MISSING, anchor="middle")
    return dwg.tostring()


def grouped_bars(groups: list[str], series: list[tuple[str, list[float | None]]], title: str,
                 digits: int = 1, origin: float = 0.0, width: int = 860, height: int = 420) -> str:
    """Horizontal bars in groups, one bar per series in each group, a legend on top. Bars
    start at ``origin`` (a ratio chart's 1: longer to the right is more, to the left less);
    a missing value leaves its bar out with a 'not measured' note."""
    n = len(series)
    w, h, right, top, bottom = width, height, 50, 34 + 18 * n, 36
    gap = 4
    bar_h = (h - top - bottom) / len(groups) / n - gap / n
    size = 12 if n * bar_h >= 18 else 11
    left = min(max(_text_width(g, size) for g in groups) + 16, 0.5 * w)
    dwg = _drawing(w, h)
    values = [v for _, vs in series for v in vs if v]
    if origin:      # the axis spans the data and the origin, in tenths
        lo = math.floor(10 * min(values + [origin]) - 0.5) / 10
        ticks = [lo + i / 10 for i in range(round(10 * (math.ceil(10 * max(values + [origin]) + 0.5) / 10 - lo)) + 1)]
        ticks = ticks[:: math.ceil(len(ticks) / 10)]
    else:
        lo, ticks = 0.0, nice_ticks(max(values) if values else 1.0)
    x_of = lambda v: left + (w - left - right) * (v - lo) / (ticks[-1] - lo)
    _text(dwg, (left, 16), title, size=12, color=MUTED)
    for k, (label, _) in enumerate(series):
        dwg.add(dwg.rect((left, 24 + 18 * k), (14, 10), fill=PALETTE[k % len(PALETTE)]))
        _text(dwg, (left + 20, 33 + 18 * k), label, size=12)
    for t in ticks:
        dwg.add(dwg.line((x_of(t), top - 4), (x_of(t), h - bottom + 4), stroke=INK if t == origin and origin else GRID))
        _text(dwg, (x_of(t), h - bottom + 20), _fmt(round(t, 2)), size=11, color=MUTED, anchor="middle")
    value_size = 10 if bar_h < 12 else 11
    for i, group in enumerate(groups):
        y = top + i * (n * bar_h + gap)
        _text(dwg, (left - 8, y + n * bar_h / 2 + size * 0.35), group, size=size, anchor="end")
        for k, (_, vs) in enumerate(series):
            v, by = vs[i], y + k * bar_h
            mid = by + bar_h / 2 + value_size * 0.35
            if v:
                a, b = sorted((x_of(origin), x_of(v)))
                dwg.add(dwg.rect((a, by + 0.5), (max(b - a, 1), bar_h - 1), rx=2, fill=PALETTE[k % len(PALETTE)]))
                _text(dwg, (b + 4, mid), f"{v:,.{digits}f}", size=value_size)
            else:
                _text(dwg, (x_of(origin) + 4, mid), "not measured", size=value_size, color=MISSING)
    return dwg.tostring()


def compare_gemm(compare: dict) -> str:
    """Each step's best kernel and cuBLAS on every GPU compared."""
    groups = [s["title"] for s in compare["steps"]] + ["cuBLAS TF32, fastest layout"]
    cublas = compare["by"]["cuBLAS TF32, fastest layout"]["per_gpu"]
    series = [(name, [s["gpus"][k] and s["gpus"][k]["tflops"] for s in compare["steps"]] + [cublas[k]])
              for k, name in enumerate(compare["names"])]
    return grouped_bars(groups, series, "TFLOPS at the reference shape")


def compare_ratios(compare: dict) -> str:
    """Each other GPU's measurements divided by this deck's GPU's: where they differ, and by how much."""
    groups = [label for label, _ in compare["differing"]]
    series = [(f"{name} ÷ {compare['names'][0]}", [ratios[j] for _, ratios in compare["differing"]])
              for j, name in enumerate(compare["names"][1:])]
    return grouped_bars(groups, series, "ratio: right of 1 is more, left is less", digits=2, origin=1.0)


SM_FIGURE_WIDTH = 460      # the architecture slide shows it at this width (w-115): drawn 1:1, its text is its size


def sm_hierarchy(device: dict, hbm: dict) -> str:
    """The GPU as the results describe it: SMs with their sub-partitions, L2, HBM."""
    w, h, pad = SM_FIGURE_WIDTH, 296, 8
    dwg = _drawing(w, h)
    n = device["sm_count"]
    _text(dwg, (w / 2, 18), f"{device['name']}: {n} SMs ({device['arch']}, {device['sm_name']})",
          size=13, anchor="middle", weight="bold")
    slots, gap, y0, sub_h = 5, 6, 30, 40          # SM 0, 1, 2, …, the last SM
    box_w = (w - 2 * pad - (slots - 1) * gap) / slots
    sub_w = (box_w - 12) / 2
    for i in range(slots):
        x = pad + i * (box_w + gap)
        if i == slots - 2:
            _text(dwg, (x + box_w / 2, y0 + 62), "…", size=24, color=MUTED, anchor="middle")
            continue
        dwg.add(dwg.rect((x, y0), (box_w, 24 + 2 * sub_h + 8), rx=5, fill="#eff6ff", stroke=ACCENT, stroke_width=1.5))
        _text(dwg, (x + box_w / 2, y0 + 16), f"SM {n - 1 if i == slots - 1 else i}", size=12, anchor="middle", weight="bold")
        for sp in range(device["subpartitions"]):
            sx, sy = x + 4 + (sp % 2) * (sub_w + 4), y0 + 22 + (sp // 2) * (sub_h + 4)
            dwg.add(dwg.rect((sx, sy), (sub_w, sub_h), rx=3, fill="white", stroke=MUTED))
            _text(dwg, (sx + sub_w / 2, sy + 16), "sched", size=10, color=MUTED, anchor="middle")
            _text(dwg, (sx + sub_w / 2, sy + 32), "TC", size=10, color=ACCENT, anchor="middle")
    lanes = device["fp32_lanes_per_sm"] and device["fp32_lanes_per_sm"] // device["subpartitions"]
    notes = [f"{device['subpartitions']} sub-partitions an SM, each a warp scheduler"
             + (f", {lanes} FP32 lanes" if lanes else "") + " and tensor cores (TC)",
             f"per SM: {device['regs_per_sm'] // 1024}K registers, {device['max_threads_per_sm']:,} threads, "
             f"{device['smem_per_sm_bytes'] // 1024} KiB shared memory / L1",
             f"(up to {device['smem_per_block_optin_bytes'] // 1024} KiB of it for one block)"]
    for k, line in enumerate(notes):
        _text(dwg, (pad, y0 + 134 + 14 * k), line, size=11, color=MUTED)
    l2_y = 206
    dwg.add(dwg.rect((pad, l2_y), (w - 2 * pad, 32), rx=5, fill="#fef3c7", stroke="#d97706"))
    _text(dwg, (w / 2, l2_y + 21), f"L2 cache: {device['l2_bytes'] / 2**20:,.0f} MiB", size=13,
          anchor="middle", weight="bold")
    hbm_y = 246
    dwg.add(dwg.rect((pad, hbm_y), (w - 2 * pad, 44), rx=5, fill="#ecfdf5", stroke="#059669"))
    bw = f"{device['hbm_peak_gbps']:,.0f} GB/s theoretical"
    if hbm["rows"]:
        bw += f", {hbm['best']['gbps']:,.0f} GB/s copy measured"
    _text(dwg, (w / 2, hbm_y + 18), f"HBM: {device['memory_bytes'] / 2**30:,.0f} GiB", size=13,
          anchor="middle", weight="bold")
    _text(dwg, (w / 2, hbm_y + 35), bw, size=11, anchor="middle", color=MUTED)
    return dwg.tostring()


def gemm_progression(gemm: dict) -> str:
    """Each step's TFLOPS beside cuBLAS TF32 on both layouts."""
    bars = [Bar(f"{s['title']} ({v['label']})" if len(s["variants"]) > 1 else s["title"], v["tflops"],
                MISSING if v["failed"] else ACCENT, "check failed" if v["failed"] else "")
            for s in gemm["steps"] for v in s["variants"]]
    bars += [Bar(f"cuBLAS TF32, {r['layout_name']}", r["tflops"], REF)
             for r in gemm["cublas_rows"] if r["precision"] == "tf32"]
    return bar_chart(bars, "TFLOPS at the reference shape", height=380)


def gemm_sweep(sweep: dict) -> str:
    """TFLOPS against the size of square GEMMs: the headline kernel's step in colour, cuBLAS of its
    precision on both layouts (timed in turns with it) in black, every other step in grey (the
    table beside gives their figures); refused sizes leave gaps."""
    def square(rows, key):
        return [(r["shape"][0], r["tflops"][key]) for r in rows
                if r["outcome"] == "correct" and len(set(r["shape"])) == 1]
    top = sweep["top"]
    others = [Series("the other steps", square(s["record"]["rows"], "kernel"), GROUP, marks=False, legend=False)
              for s in sweep["steps"] if s is not top]
    others = [s for s in others if s.points]
    if others:
        others[0].legend = True
    series = others
    if top:
        rows, precision = top["record"]["rows"], top["step"]["precision"].upper()
        series += [Series(top["title"], square(rows, "kernel"), ACCENT),
                   Series(f"cuBLAS {precision}, B K-major", square(rows, "cublas_b_kmajor"), INK, marks=False),
                   Series(f"cuBLAS {precision}, B row-major", square(rows, "cublas_b_row"), INK, marks=False, dash="6,4")]
    return line_chart(Chart("M = N = K (log scale)", "TFLOPS", [s for s in series if s.points], height=300))


def settle_spread(settle: dict) -> str:
    """The p10-p90 spread of each run's consecutive samples against when they start, from a rest,
    with the spread the GEMM timings are held to."""
    look = {"kernel": (settle["title"], ACCENT), "cublas": ("cuBLAS", INK)}
    series = []
    for run in settle["runs"]:
        label, color = look.get(run["name"], (run["name"], MUTED))
        series.append(Series(label, [(w["t_s"], 100 * w["spread"]) for w in run["windows"]], color, marks=False))
    lines = [Line("y", settle["target_pct"], f"{settle['target_pct']:g}%", REF)]
    kernel = settle["by"].get("kernel")
    if kernel and kernel["rule_s"] is not None:
        lines.append(Line("x", kernel["rule_s"], "kernel steady: timing would start", MUTED))
    return line_chart(Chart(f"s after the rest, at the last of {settle['window']} consecutive samples",
                            f"p10–p90 spread of {settle['window']} samples, %", series, lines, x_log=False, height=290))


def tune_label(trial: dict, bm: int) -> str:
    config = trial["config"]
    return f"{bm}×{config['BN']}, {trial['stages']} stages, cluster {config['CLUSTER_M']}, band {config['GROUP_M']}"


def tuner_bars(tune: dict) -> str:
    """Every configuration the tuner timed, best first, as % of cuBLAS timed in turns with it."""
    bars = [Bar(tune_label(t, tune["bm"]), 100 * t["ratio"],
                REF if t["winner"] else (ACCENT if not t["hand_picked"] else "#059669"),
                "winner" if t["winner"] else ("hand-picked" if t["hand_picked"] else ""))
            for t in tune["ranked"]]
    return bar_chart(bars, "% of cuBLAS TF32, timed in turns with it", [Line("x", 100, "cuBLAS", INK)],
                     width=440, height=430)


def hbm_scaling(hbm: dict, device: dict) -> str:
    """Copy bandwidth against the SMs used, one block per SM, beside cudaMemcpy and the peak."""
    curve = [r for r in hbm["rows"] if r["blocks"] == r["sms_used"] and r["threads"] > 32]
    full = [r for r in hbm["rows"] if r["blocks"] > r["sms_used"]]
    series = [Series("1 block of threads per SM", [(r["sms_used"], r["gbps"]) for r in curve])]
    series += [Series(r["label"], [(r["sms_used"], r["gbps"])], PALETTE[4 + i]) for i, r in enumerate(full)]
    return line_chart(Chart("SMs used (log scale)", "GB/s (read + written)", series, [
        Line("y", device["hbm_peak_gbps"], f"theoretical peak {device['hbm_peak_gbps']:,.0f}"),
        Line("y", hbm["memcpy"]["gbps"], f"cudaMemcpy {hbm['memcpy']['gbps']:,.0f}", REF)], height=280))


def instruction_latency(instr: dict) -> str:
    series = [Series(r["name"], [(ilp, c) for ilp, c in r["cycles"]], PALETTE[i % len(PALETTE)])
              for i, r in enumerate(instr["rows"])]
    return line_chart(Chart("independent chains per thread (ILP, log scale)", "cycles per warp-instruction (log)",
                            series, y_log=True, height=400))


def memory_sweep(mem: dict, device: dict) -> str:
    series = [Series("pointer chase (ld.ca)", [(s["bytes"], s["cycles"]) for s in mem["sweep"]])]
    lines = [Line("x", device["l2_bytes"], f"L2 as reported: {fmt_bytes(device['l2_bytes'])}", REF)]
    if mem["hbm_step_bytes"]:
        lines.append(Line("x", mem["hbm_step_bytes"], f"step read off the sweep: {fmt_bytes(mem['hbm_step_bytes'])}", "#059669"))
    return line_chart(Chart("working set (log scale)", "cycles per load", series, lines, x_format=fmt_bytes, legend=None, height=330))


def l2_scaling(l2: dict, hbm: dict) -> str:
    curve = [r for r in l2["rows"] if r["blocks"] == r["sms"]]
    extra = [r for r in l2["rows"] if r["blocks"] > r["sms"]]
    series = [Series("read, 1 block per SM", [(r["sms"], r["read"]["gbps"]) for r in curve]),
              Series("copy, 1 block per SM", [(r["sms"], r["copy"]["gbps"]) for r in curve], PALETTE[2])]
    series += [Series(f"read, {r['label'].split(', ')[-1]}", [(r["sms"], r["read"]["gbps"])], PALETTE[4 + i])
               for i, r in enumerate(extra)]
    lines = [Line("y", hbm["best"]["gbps"], f"HBM copy {hbm['best']['gbps']:,.0f}", REF)] if hbm["rows"] else []
    return line_chart(Chart("SMs (log scale)", "GB/s", series, lines, width=440, height=320, legend="below"))


def transpose_bars(tr: dict) -> str:
    bars = [Bar(r["label"], r["gbps"], MISSING if not r["check_passed"] else ACCENT,
                f"{r['pct_of_copy']:.1f}% of copy") for r in tr["rows"]]
    return bar_chart(bars, "GB/s (read + written)", [Line("x", tr["copy"]["gbps"], "copy of the same bytes", REF)])


def naive_diagram(step: dict, shape: dict) -> str:
    """One thread block of the naive kernel: its tile of C, and the rows of A and
    columns of B that each of its threads reads whole. K is drawn short."""
    bx, by = step["block"]
    w, h = 860, 400
    dwg = _drawing(w, h)
    c_w = min(300, 150 * shape["n"] / shape["m"])
    c_h = c_w * shape["m"] / shape["n"]                 # C to scale
    k_len = 90                                            # K, drawn short
    ax, ay = 60, 40 + k_len + 30                          # A left of C, B above it
    cx, cy = ax + k_len * 1.6 + 40, ay
    bx0, by0 = cx, 40
    a_w = k_len * 1.6
    for (x, y, rw, rh, label) in ((ax, ay, a_w, c_h, f"A  {shape['m']} × {shape['k']}"),
                                  (bx0, by0, c_w, k_len, f"B  {shape['k']} × {shape['n']}"),
                                  (cx, cy, c_w, c_h, f"C  {shape['m']} × {shape['n']}")):
        dwg.add(dwg.rect((x, y), (rw, rh), fill="#f3f4f6", stroke=MUTED))
        _text(dwg, (x + 4, y + 14), label, size=12, color=MUTED)
    # the block's tile of C, magnified so that it stays visible, and what it reads
    tw, th = max(bx * c_w / shape["n"], 16), max(by * c_h / shape["m"], 16)
    tx, ty = cx + c_w * 0.45, cy + c_h * 0.45
    dwg.add(dwg.rect((ax, ty), (a_w, th), fill=ACCENT, opacity=0.3))
    dwg.add(dwg.rect((tx, by0), (tw, k_len), fill=ACCENT, opacity=0.3))
    dwg.add(dwg.rect((tx, ty), (tw, th), fill=ACCENT))
    _text(dwg, (cx + c_w + 12, ty + th / 2 + 4), f"one block: {bx} × {by} threads,", size=13, color=ACCENT)
    _text(dwg, (cx + c_w + 12, ty + th / 2 + 22), "one element of C each", size=13, color=ACCENT)
    _text(dwg, (ax, ty - 6), f"its {by} rows of A", size=12, color=ACCENT)
    _text(dwg, (tx + tw + 6, by0 + k_len - 8), f"its {bx} columns of B", size=12, color=ACCENT)
    notes = [f"grid: {math.ceil(shape['n'] / bx)} × {math.ceil(shape['m'] / by)} blocks of {bx * by} threads",
             f"each thread: {shape['k']:,} loads of A, {shape['k']:,} loads of B, {shape['k']:,} FMAs",
             "no reuse: every block reads whole rows of A and columns of B from memory"]
    for i, line in enumerate(notes):
        _text(dwg, (60, cy + c_h + 30 + 20 * i), line, size=14)
    return dwg.tostring()


def cute_diagram(step: dict, shape: dict) -> str:
    """One CTA of a CuTe step, from the constants its kernel was compiled with: the
    BM x BN tile of C split over the warps, one warp's MMA atoms, the BM x BK and
    BN x BK panels of A and B per K-step, and (with shared memory) where they are staged."""
    res = step["best"]["resources"]
    t = res["tile"]
    bm, bn, bk, wm, wn = t["BM"], t["BN"], t["BK"], t["WARPS_M"], t["WARPS_N"]
    am, an, ak = t["atom_mnk"]
    smem = res["smem_static_bytes"] + res["smem_dynamic_bytes"]
    w, h = 860, 400
    dwg = _drawing(w, h)
    px = 1.5                                              # pixels per element of the tile
    kx = max(px * bk, 10)                                 # K panels, at least visible
    cx, cy = 80 + kx + 30, 40 + kx + 24
    dwg.add(dwg.rect((cx - kx - 30, cy), (kx, bm * px), fill="#dbeafe", stroke=ACCENT))          # A panel
    dwg.add(dwg.rect((cx, cy - kx - 30), (bn * px, kx), fill="#dbeafe", stroke=ACCENT))          # B panel
    _text(dwg, (cx - kx - 30, cy - 8), f"A: {bm}×{bk}", size=12, color=ACCENT)
    _text(dwg, (cx + bn * px + 8, cy - kx / 2 - 26), f"B: {bk}×{bn} per K-step", size=12, color=ACCENT)
    # TiledMMA repeats the wm x wn group of atoms over the tile: atom (i, j) belongs to
    # warp (i mod wm) + wm (j mod wn), so each warp's atoms are spread over the whole tile
    for i in range(bm // am):
        for j in range(bn // an):
            warp = (i % wm) + wm * (j % wn)
            dwg.add(dwg.rect((cx + j * an * px, cy + i * am * px), (an * px, am * px),
                             fill=PALETTE[warp % len(PALETTE)], opacity=0.35, stroke="white", stroke_width=0.5))
    for warp in range(wm * wn):
        lx = cx + bn * px + 30
        dwg.add(dwg.rect((lx, cy + 20 * warp), (14, 14), fill=PALETTE[warp % len(PALETTE)], opacity=0.35))
        _text(dwg, (lx + 20, cy + 12 + 20 * warp), f"warp {warp}", size=12)
    _text(dwg, (cx, cy + bm * px + 18), f"C tile {bm}×{bn}: {bm // am}×{bn // an} MMA atoms of {am}×{an}×{ak}, "
          f"{wm}×{wn} warps, each warp's atoms spread over the tile", size=12, color=MUTED)
    notes = [f"grid: {shape['m'] // bm} × {shape['n'] // bn} CTAs of {res['threads_per_block']} threads; "
             f"K loop: {shape['k'] // bk} steps of {bk}; {t['MMA_ATOM']}",
             (f"A and B tiles staged in {smem / 1024:.1f} KiB of shared memory by cp.async, then read by every warp"
              if smem else "each warp loads its own A and B fragments straight from global memory")]
    for i, line in enumerate(notes):
        _text(dwg, (80, cy + bm * px + 48 + 22 * i), line, size=13)
    return dwg.tostring()


def _arrow(dwg, a, b, color=INK, width=1.5):
    dwg.add(dwg.line(a, b, stroke=color, stroke_width=width))
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    tip = [(b[0] - 7 * math.cos(ang + d), b[1] - 7 * math.sin(ang + d)) for d in (-0.4, 0.4)]
    dwg.add(dwg.polygon([b, *tip], fill=color))


def wgmma_diagram(step: dict, shape: dict) -> str:
    """One CTA of a Hopper step before warp specialization, from the constants its kernel was
    compiled with: the BM x BN tile of C split over warpgroups with their wgmma atoms, the
    128-byte swizzle of the shared tiles, the ring of STAGES shared buffers and who fills it
    (every thread with cp.async, or one thread with TMA and the full mbarriers), the
    load/wgmma timeline and the grid. Later steps draw their own idea (slides/step_diagrams.py)."""
    res = step["best"]["resources"]
    t = res["tile"]
    bm, bn, bk, stages, wgs, group = t["BM"], t["BN"], t["BK"], t["STAGES"], t["WARPGROUPS_M"], t["GROUP_M"]
    am, an, ak = t["atom_mnk"]
    tma = "tma" in res
    w, h = 860, 400
    dwg = _drawing(w, h)

    # left: the C tile over warpgroups, A and B panels of one K-step
    px = min(220 / bn, 150 / bm)
    kx = bk * px
    cx, cy = 40 + kx + 12, 40 + kx + 12
    dwg.add(dwg.rect((cx - kx - 12, cy), (kx, bm * px), fill="#dbeafe", stroke=ACCENT))
    dwg.add(dwg.rect((cx, cy - kx - 12), (bn * px, kx), fill="#dbeafe", stroke=ACCENT))
    _text(dwg, (cx, cy - kx - 18), f"B {bn}×{bk}", size=11, color=ACCENT)
    _text(dwg, (cx - kx - 12, cy + bm * px + 14), f"A {bm}×{bk}", size=11, color=ACCENT)
    for g in range(wgs):
        for j in range(bn // an):
            dwg.add(dwg.rect((cx + j * an * px, cy + g * am * px), (an * px, am * px),
                             fill=PALETTE[g % len(PALETTE)], opacity=0.35, stroke="white", stroke_width=1))
        _text(dwg, (cx + 6, cy + (g + 0.5) * am * px + 4), f"warpgroup {g}: {am}×{bn}", size=11)
    _text(dwg, (cx, cy + bm * px + 30), f"C {bm}×{bn}: {wgs} warpgroups × {bn // an} wgmma "
          f"{am}×{an}×{ak} per 8 of K", size=11, color=MUTED)

    # middle: the 128-byte swizzle of one 8-row atom (16-byte chunks; chunk c of row r at c xor r)
    sx, sy, cell = 350, 40, 13
    _text(dwg, (sx, sy - 8), "shared tile: 128-byte swizzle", size=12, weight="bold")
    for r in range(8):
        for c in range(8):
            dwg.add(dwg.rect((sx + (c ^ r) * cell, sy + r * cell), (cell, cell), fill=PALETTE[c], opacity=0.55,
                             stroke="white", stroke_width=0.5))
    notes = [f"row = {bk} floats of K = 128 B", "chunk c of row r at c ⊕ r:", "a column of 16-byte chunks",
             "spans all 32 banks"]
    for i, line in enumerate(notes):
        _text(dwg, (sx, sy + 8 * cell + 16 + 15 * i), line, size=11, color=MUTED)

    # right: the ring of shared stages and who fills it
    rx, ry = 530, 40
    stage_kib = (bm + bn) * bk * 4 / 1024
    _text(dwg, (rx, ry - 8), f"{stages} shared stage{'s' if stages > 1 else ''} × {stage_kib:g} KiB", size=12, weight="bold")
    box_w = min(80, (310 - 10 * (stages - 1)) / stages)
    for s_ in range(stages):
        x = rx + s_ * (box_w + 10)
        dwg.add(dwg.rect((x, ry + 40), (box_w, 50), fill="#dbeafe", stroke=ACCENT))
        _text(dwg, (x + box_w / 2, ry + 70), f"stage {s_}", size=11, anchor="middle")
        if tma:
            _text(dwg, (x + box_w / 2, ry + 106), f"full[{s_}]", size=11, color=PALETTE[2], anchor="middle")
    ring_w = stages * (box_w + 10) - 10
    if tma:
        warps = res["threads_per_block"] // 32
        _text(dwg, (rx, ry + 14), "one thread → TMA: one tensor-map copy per tile", size=11)
        flow = ["TMA lands the bytes → full[s] completes", "warpgroups wait full[s], issue wgmma",
                "each warp done reading → counts itself on stage s",
                f"the {warps}th to count refills stage s: no one waits"]
    else:
        _text(dwg, (rx, ry + 14), f"all {res['threads_per_block']} threads: cp.async, 16 B each", size=11)
        flow = ["cp.async → wait → barrier", "warpgroups issue wgmma on the stage",
                "wait for the wgmmas → barrier → refill" if stages > 1 else "wait for the wgmmas → barrier → next load"]
    _arrow(dwg, (rx + ring_w / 2, ry + 20), (rx + ring_w / 2, ry + 38), color=ACCENT)
    for i, line in enumerate(flow):
        _text(dwg, (rx, ry + 134 + 15 * i), f"{i + 1}. {line}", size=11, color=MUTED)

    # bottom: timeline of K-tiles, loads running STAGES-1 ahead of the wgmmas
    ty, unit, n = 262, 62, 7
    lead = stages - 1
    _text(dwg, (40, ty - 10), "K-loop timeline", size=12, weight="bold")
    for row, label in enumerate(("load", "wgmma")):
        _text(dwg, (40, ty + 17 + row * 26), label, size=11)
    slot = unit if lead else unit / 2                      # one stage: load and multiply take turns
    for k in range(n):
        load_at, mma_at = (k, k + lead) if lead else (2 * k, 2 * k + 1)
        for at, y, color in ((load_at, ty + 4, ACCENT), (mma_at, ty + 30, PALETTE[2])):
            x = 100 + at * slot
            if x + slot < w - 20:
                dwg.add(dwg.rect((x, y), (slot - 4, 20), fill=color, opacity=0.3))
                _text(dwg, (x + slot / 2 - 2, y + 15), f"k{k}", size=11, anchor="middle")
    tiles = (shape["m"] // bm) * (shape["n"] // bn)
    order = (f"bands of {group} tile rows, walked along N (CTA swizzle)" if group
             else "down M first, then along N")
    notes = [f"grid: {tiles:,} CTAs of {res['threads_per_block']} threads; tile order: {order}",
             f"K loop: {shape['k'] // bk:,} steps of {bk}; "
             f"{(res['smem_static_bytes'] + res['smem_dynamic_bytes']) / 1024:.1f} KiB of shared memory; {t['MMA_ATOM']}"]
    for i, line in enumerate(notes):
        _text(dwg, (40, ty + 86 + 20 * i), line, size=12)
    return dwg.tostring()


# How each step's diagram is drawn: the step catalogue names the kind (bench/catalogue.py, Step.diagram).
DIAGRAMS = {"naive": naive_diagram, "cute": cute_diagram, "wgmma": wgmma_diagram}


def draw_all(context: dict) -> dict[str, str]:
    """Every figure the deck shows, by file name; a figure whose data is missing is not drawn."""
    svgs = {"sm_hierarchy.svg": sm_hierarchy(context["device"], context["hbm"]),
            "gemm_progression.svg": gemm_progression(context["gemm"])}
    if context["gemm"]["sweep"]["steps"]:
        svgs["gemm_sweep.svg"] = gemm_sweep(context["gemm"]["sweep"])
    if context["gemm"]["tune"]["trials"]:
        svgs["tuner.svg"] = tuner_bars(context["gemm"]["tune"])
    if context["gemm"]["settle"]["runs"]:
        svgs["settle.svg"] = settle_spread(context["gemm"]["settle"])
    if context["hbm"]["rows"]:
        svgs["hbm_scaling.svg"] = hbm_scaling(context["hbm"], context["device"])
    if context["instr"]["rows"]:
        svgs["instruction_latency.svg"] = instruction_latency(context["instr"])
    if context["mem"]["sweep"]:
        svgs["memory_sweep.svg"] = memory_sweep(context["mem"], context["device"])
    if context["l2"]["rows"]:
        svgs["l2_scaling.svg"] = l2_scaling(context["l2"], context["hbm"])
    if context["transpose"]["rows"]:
        svgs["transpose.svg"] = transpose_bars(context["transpose"])
    if context.get("compare"):
        svgs["compare_gemm.svg"] = compare_gemm(context["compare"])
        if context["compare"]["differing"]:
            svgs["compare_ratios.svg"] = compare_ratios(context["compare"])
    for step in context["gemm"]["steps"]:
        if step["diagram"]:
            svgs[step["diagram"]] = DIAGRAMS[step["draw"]](step, context["gemm"]["shape"])
    return svgs
