"""The deck's chart kit: one palette, one font, and the charts every section draws with (lines,
bars, grouped bars), each drawn at the size the slide shows it so that its text sizes are what a
room sees (at least 10 px; slides/deck.py's figure() shows a figure at its drawn width). What a
figure shows comes from the results, never from numbers written here."""
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


def drawing(w: int, h: int, background: bool = True) -> svgwrite.Drawing:
    """A figure of w x h px; without its white background, a layer shown over another (layers)."""
    # debug=False: no attribute validation on every element (a fifth of build.py's time)
    dwg = svgwrite.Drawing(size=(f"{w}px", f"{h}px"), viewBox=f"0 0 {w} {h}", profile="full", debug=False)
    if background:
        dwg.add(dwg.rect((0, 0), (w, h), fill="white"))
    return dwg


def layers(w: int, h: int, count: int) -> list[svgwrite.Drawing]:
    """A figure revealed a layer a click: the first drawn on white, each next one over it, transparent."""
    return [drawing(w, h, background=not i) for i in range(count)]


def layer_name(name: str, i: int) -> str:
    """The file of layer i (1, 2, ...) of figure ``name``: gemm_cluster.svg -> gemm_cluster.1.svg."""
    return name.replace(".svg", f".{i}.svg")


# a white outline under a label's glyphs: a grid or data line that passes under it stops at its letters
HALO = ";paint-order:stroke;stroke:white;stroke-width:3px;stroke-linejoin:round"


def text(dwg, xy, s, size=13, color=INK, anchor="start", weight="normal", halo=False, **kw):
    dwg.add(dwg.text(plain_text(s), insert=xy, style=f"{FONT};font-size:{size}px;font-weight:{weight}" + HALO * halo,
                     fill=color, text_anchor=anchor, **kw))


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least ``hi`` (0 and 1 where there is nothing above 0)."""
    if hi <= 0:
        return [0.0, 1.0]
    raw = hi / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    return [i * step for i in range(int(math.ceil(hi / step)) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of two (for sizes and counts) covering [lo, hi]."""
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
    y_from: float = 0.0           # the y axis's first tick: above 0 where a small gap between lines is the point
    x_to: float | None = None     # a linear x axis's end where it is a count (132 SMs), not the next round tick
    x_ticks: tuple = ()           # a log axis's ticks where they are the sizes measured (a sweep's), not powers of two


def text_width(s: str, size: float) -> float:
    """About how wide a label is set: for keeping it inside its figure."""
    return 0.58 * size * len(s)


TICK_LABEL_GAP = 8     # px between two tick labels of an axis


def label_every(labels, spacing: float, size: float = 11) -> int:
    """Label every n-th tick of an axis whose ticks are ``spacing`` px apart: the smallest n that
    leaves TICK_LABEL_GAP between the widest of ``labels``; the ticks between go unlabelled."""
    return max(1, math.ceil((max(text_width(s, size) for s in labels) + TICK_LABEL_GAP) / spacing))


def wrap(s: str, size: float, width: float, max_lines: int) -> list[str]:
    """``s`` in lines of at most ``width`` at ``size`` (as text_width measures them), broken between
    words, at most ``max_lines`` of them: what does not fit is cut, an ellipsis marking the cut."""
    fits = lambda line: text_width(line, size) <= width
    lines = []
    for word in s.split():
        if lines and fits(f"{lines[-1]} {word}"):
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    if len(lines) > max_lines:
        lines = lines[:max_lines - 1] + [" ".join(lines[max_lines - 1:])]
    cut = lambda line: line if fits(line) else next(line[:k].rstrip() + "…" for k in range(len(line), -1, -1)
                                                   if fits(line[:k].rstrip() + "…"))
    return [cut(line) for line in lines] or [""]


def _traced(pts, step: float = 3.0) -> list[tuple[float, float]]:
    """Points every ``step`` px along a polyline: where its line is drawn, for keeping labels off it."""
    out = list(pts[:1])
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        n = max(1, int(math.hypot(x1 - x0, y1 - y0) / step))
        out += [(x0 + (x1 - x0) * k / n, y0 + (y1 - y0) * k / n) for k in range(1, n + 1)]
    return out


def _place_by_line(x: float, label: str, first_y: float, left: float, right: float, bottom: float, traced,
                   size: float = 11, pad: float = 4) -> tuple[float, float, str]:
    """Where a vertical reference line's label goes: beside the line (left of it where it fits, else
    right), at the first height from ``first_y`` down where no drawn data comes within ``pad`` of it."""
    width = text_width(label, size)
    sides = [(x - 6, "end", x - 6 - width), (x + 6, "start", x + 6)] if x - 6 - width > left else [(x + 6, "start", x + 6)]
    sides = [side for side in sides if side[2] + width <= right] or sides
    y = first_y
    while y <= bottom - 4:
        for lx, anchor, x0 in sides:
            if not any(x0 - pad <= px <= x0 + width + pad and y - size - pad <= py <= y + pad for px, py in traced):
                return lx, y, anchor
        y += size + 5
    return sides[0][0], first_y, sides[0][1]


def line_chart(c: Chart) -> str:
    w, h = c.width, c.height
    named = [s for s in c.series if s.legend] if c.legend and len(c.series) > 1 else []
    legend_w = max((text_width(s.label, 12) for s in named), default=0) + 50
    per_row = max(1, int((w - 60) // legend_w)) if c.legend == "below" else 0
    below = 20 * math.ceil(len(named) / per_row) if per_row and named else 0
    left, right, top = 72, 24 + (legend_w if named and c.legend == "right" else 0), 24
    bottom = 56 + below
    dwg = drawing(w, h)
    xs = [x for s in c.series for x, _ in s.points] + [l.value for l in c.lines if l.axis == "x"]
    ys = [y for s in c.series for _, y in s.points] + [l.value for l in c.lines if l.axis == "y"]
    if c.x_log:
        xt = sorted(c.x_ticks) or log_ticks(min(xs), max(xs))
        if len(xt) > 12:
            xt = xt[:: math.ceil(len(xt) / 12)]
        x0, x1 = math.log2(xt[0]), math.log2(max(xt[-1], max(xs)))
        x_of = lambda x: left + (w - left - right) * (math.log2(x) - x0) / ((x1 - x0) or 1)
    else:
        xt = nice_ticks(max(xs))
        if c.x_to is not None:
            xt = [t for t in xt if t <= c.x_to]
        end = c.x_to if c.x_to is not None else xt[-1]
        x_of = lambda x: left + (w - left - right) * x / end
    if c.y_log:
        yt = [10.0 ** e for e in range(math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys))) + 1)]
        y0, y1 = math.log10(yt[0]), math.log10(yt[-1])
        y_of = lambda y: h - bottom - (h - top - bottom) * (math.log10(y) - y0) / ((y1 - y0) or 1)
    else:
        yt = [c.y_from + t for t in nice_ticks(max(ys) - c.y_from)]
        y_of = lambda y: h - bottom - (h - top - bottom) * (y - yt[0]) / ((yt[-1] - yt[0]) or 1)
    for t in yt:
        dwg.add(dwg.line((left, y_of(t)), (w - right, y_of(t)), stroke=GRID))
        text(dwg, (left - 8, y_of(t) + 4), _fmt(t), size=11, color=MUTED, anchor="end")
    every = label_every([c.x_format(t) for t in xt], min((x_of(b) - x_of(a) for a, b in zip(xt, xt[1:])), default=w))
    for i, t in enumerate(xt):
        if i % every == 0:
            text(dwg, (x_of(t), h - bottom + 18), c.x_format(t), size=11, color=MUTED, anchor="middle")
    text(dwg, ((w + left - right) / 2, h - bottom + 40), c.x_label, size=12, color=MUTED, anchor="middle")
    text(dwg, (18, (h - bottom + top) / 2), c.y_label, size=12, color=MUTED, anchor="middle",
          transform=f"rotate(-90 18 {(h - bottom + top) / 2})")
    pixels = [[(x_of(x), y_of(y)) for x, y in s.points] for s in c.series]
    traced = [p for pts in pixels for p in _traced(pts)]
    for i, l in enumerate(c.lines):
        if l.axis == "y":
            dwg.add(dwg.line((left, y_of(l.value)), (w - right, y_of(l.value)), stroke=l.color, stroke_dasharray="6,4"))
            text(dwg, (left + 8, y_of(l.value) - 6), l.label, size=11, color=l.color, halo=True)
        else:
            x = x_of(l.value)
            dwg.add(dwg.line((x, top), (x, h - bottom), stroke=l.color, stroke_dasharray="6,4"))
            lx, ly, anchor = _place_by_line(x, l.label, top + 12 + 16 * i, left, w - right, h - bottom, traced)
            text(dwg, (lx, ly), l.label, size=11, color=l.color, anchor=anchor, halo=True)
    for s, pts in sorted(zip(c.series, pixels), key=lambda sp: sp[0].legend):   # a group behind, the named lines over it
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
        text(dwg, (lx + 25, ly + 4), s.label, size=12)
    return dwg.tostring()


@dataclass
class Bar:
    label: str
    value: float | None          # None: not measured
    color: str = ACCENT
    note: str = ""


def bar_chart(bars: list[Bar], title: str, lines: list[Line] = (), width: int = 860, height: int | None = None) -> str:
    """Horizontal bars, one per row, in ``height`` (or 30 px a row); missing values drawn as dashed
    'not measured' boxes. A bar's value label that a reference line would cross starts past the line."""
    top, bottom = 40, 46
    h = height or top + 30 * len(bars) + bottom
    row_h = (h - top - bottom) / len(bars)
    size = 12 if row_h >= 18 else 11 if row_h >= 14 else 10
    w = width
    dwg = drawing(w, h)
    left = min(max(text_width(b.label, size) for b in bars) + 16, 0.5 * w)
    values = [b.value for b in bars if b.value] + [l.value for l in lines]
    ticks = nice_ticks(max(values) if values else 1.0)
    labels = {i: f"{b.value:,.1f}" + (f"  {b.note}" if b.note else "") for i, b in enumerate(bars) if b.value}

    def label_x(value: float, label: str, scale: float) -> float:
        x = left + value * scale + 5
        for l in lines:             # past each line it would cross, in order
            at = left + l.value * scale
            if x - 2 <= at <= x + text_width(label, size) + 2:
                x = at + 5
        return x
    # the widest scale that keeps every label, moved past the lines, within the drawing
    widest = scale = (w - left - 30) / ticks[-1]
    while scale > widest / 4 and any(label_x(bars[i].value, s, scale) + text_width(s, size) > w - 4
                                     for i, s in labels.items()):
        scale *= 0.97
    text(dwg, (left, 20), title, size=12, color=MUTED)
    every = label_every([_fmt(t) for t in ticks], scale * (ticks[1] - ticks[0]))
    for i, t in enumerate(ticks):
        x = left + t * scale
        dwg.add(dwg.line((x, top - 6), (x, h - bottom + 6), stroke=GRID))
        if i % every == 0:
            text(dwg, (x, h - bottom + 22), _fmt(t), size=11, color=MUTED, anchor="middle")
    for l in lines:
        x = left + l.value * scale
        dwg.add(dwg.line((x, top - 6), (x, h - bottom + 6), stroke=l.color, stroke_dasharray="6,4"))
        fits = x + 4 + text_width(l.label, 11) <= w        # else set to the line's left
        text(dwg, (x + 4 if fits else x - 4, top - 8), l.label, size=11, color=l.color, anchor="start" if fits else "end")
    for i, b in enumerate(bars):
        y, mid = top + i * row_h, top + (i + 0.5) * row_h + size * 0.35
        text(dwg, (left - 8, mid), b.label, size=size, anchor="end", color=INK if b.value else MISSING)
        bar_h = max(row_h - 6, row_h * 0.7)
        if b.value:
            dwg.add(dwg.rect((left, y + (row_h - bar_h) / 2), (b.value * scale, bar_h), rx=2, fill=b.color))
            text(dwg, (label_x(b.value, labels[i], scale), mid), labels[i], size=size, halo=True)
        else:
            dwg.add(dwg.rect((left, y + (row_h - bar_h) / 2), (120, bar_h), rx=2, fill="none", stroke=MISSING,
                             stroke_dasharray="4,3"))
            text(dwg, (left + 60, mid), "not measured", size=size, color=MISSING, anchor="middle")
    return dwg.tostring()


def climb(values: list[float | None], current: int, line: Line, title: str, width: int = 560, height: int = 100) -> str:
    """Columns, one per step (numbered from 1), the steps before ``current`` (0-based) muted, it in the
    accent with its value, those after it as empty outlines: where a step stands on the climb, with
    ``line`` (its baseline) across."""
    top, bottom, left, right = 30, 22, 8, 8
    dwg = drawing(width, height)
    hi = max([v for v in values if v] + [line.value])
    scale = (height - top - bottom - 14) / hi       # room above the tallest column for its value
    slot = (width - left - right) / len(values)
    base = height - bottom
    text(dwg, (left, 14), title, size=11, color=MUTED)
    y = base - line.value * scale
    for i, v in enumerate(values):
        x = left + i * slot + 0.15 * slot
        w = 0.7 * slot
        if i <= current and v:
            dwg.add(dwg.rect((x, base - v * scale), (w, v * scale), rx=2, fill=ACCENT if i == current else GROUP))
        else:
            dwg.add(dwg.rect((x, base - 6), (w, 6), rx=1, fill="none", stroke=GROUP, stroke_dasharray="3,2"))
        text(dwg, (x + w / 2, height - 6), str(i + 1), size=11, color=INK if i == current else MUTED, anchor="middle")
        if i == current and v:
            label_y = base - v * scale - 4
            if label_y - 11 < y < label_y + 3:          # the line would cross it: above both
                label_y = min(base - v * scale, y) - 4
            text(dwg, (x + w / 2, label_y), f"{v:,.1f}", size=11, anchor="middle", weight="bold")
    dwg.add(dwg.line((left, y), (width - right, y), stroke=line.color, stroke_dasharray="6,4"))
    # on the side away from the current column, clear of its value
    if current < len(values) / 2:
        text(dwg, (width - right, y - 4), line.label, size=11, color=line.color, anchor="end")
    else:
        text(dwg, (left, y - 4), line.label, size=11, color=line.color)
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
    left = min(max(text_width(g, size) for g in groups) + 16, 0.5 * w)
    dwg = drawing(w, h)
    values = [v for _, vs in series for v in vs if v]
    if origin:      # the axis spans the data and the origin, in tenths
        lo = math.floor(10 * min(values + [origin]) - 0.5) / 10
        ticks = [lo + i / 10 for i in range(round(10 * (math.ceil(10 * max(values + [origin]) + 0.5) / 10 - lo)) + 1)]
        ticks = ticks[:: math.ceil(len(ticks) / 10)]
    else:
        lo, ticks = 0.0, nice_ticks(max(values) if values else 1.0)
    x_of = lambda v: left + (w - left - right) * (v - lo) / (ticks[-1] - lo)
    text(dwg, (left, 16), title, size=12, color=MUTED)
    for k, (label, _) in enumerate(series):
        dwg.add(dwg.rect((left, 24 + 18 * k), (14, 10), fill=PALETTE[k % len(PALETTE)]))
        text(dwg, (left + 20, 33 + 18 * k), label, size=12)
    for t in ticks:
        dwg.add(dwg.line((x_of(t), top - 4), (x_of(t), h - bottom + 4), stroke=INK if t == origin and origin else GRID))
        text(dwg, (x_of(t), h - bottom + 20), _fmt(round(t, 2)), size=11, color=MUTED, anchor="middle")
    value_size = 10 if bar_h < 12 else 11
    for i, group in enumerate(groups):
        y = top + i * (n * bar_h + gap)
        text(dwg, (left - 8, y + n * bar_h / 2 + size * 0.35), group, size=size, anchor="end")
        for k, (_, vs) in enumerate(series):
            v, by = vs[i], y + k * bar_h
            mid = by + bar_h / 2 + value_size * 0.35
            if v:
                a, b = sorted((x_of(origin), x_of(v)))
                dwg.add(dwg.rect((a, by + 0.5), (max(b - a, 1), bar_h - 1), rx=2, fill=PALETTE[k % len(PALETTE)]))
                text(dwg, (b + 4, mid), f"{v:,.{digits}f}", size=value_size, halo=True)
            else:
                text(dwg, (x_of(origin) + 4, mid), "not measured", size=value_size, color=MISSING)
    return dwg.tostring()


def _blend(a: str, b: str, t: float) -> str:
    """Colour ``a`` moved toward ``b`` by ``t`` (0 to 1)."""
    pa, pb = (tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in (a, b))
    return "#" + "".join(f"{round(x + (y - x) * t):02x}" for x, y in zip(pa, pb))


@dataclass
class Cell:
    value: float | None           # a ratio (1: even); None where there is no figure
    label: str = ""               # written in the cell (its value, or why there is none)
    marked: bool = False          # drawn with a dark outline (what the legend says it means)
    noted: bool = False           # its label followed by a dagger (what the footnote says it means)
    dotted: bool = False          # a dot in its corner (what the legend's dot says it means)
    barred: bool = False          # a bar under its label (what the legend's bar says it means)


def heatmap(rows: list[str], columns: list[str], cells: list[list[Cell]], title: str, column_title: str,
            marked: str = "", span: float = 0.25, width: int = 860, footnote: str = "", dotted: str = "",
            barred: str = "") -> str:
    """A grid of ratios around 1: white at 1, the accent deeper above it, the reference colour
    deeper below, full at ``span`` away; each cell's label written in it, missing cells grey; below
    it, what an outline means (``marked``), a dagger (``footnote``), a dot (``dotted``) and a bar
    under a label (``barred``)."""
    size, row_h, legend_h, line_h = 11, 24, 20, 16
    left = max(text_width(r, size) for r in rows) + 16
    titles = wrap(title, 12, width - 14, 2)                # over the whole figure; a finding may take two lines
    top = 56 + line_h * (len(titles) - 1)
    col_w = (width - left - 10) / len(columns)
    legends = [line for line in (marked, footnote, dotted, barred) if line]
    h = top + row_h * len(rows) + 14 + legend_h * max(1, len(legends))
    dwg = drawing(width, h)
    for i, line in enumerate(titles):
        text(dwg, (4, 16 + line_h * i), line, size=12, color=MUTED)
    text(dwg, (left, top - 22), column_title, size=11, color=MUTED)
    for j, c in enumerate(columns):
        text(dwg, (left + (j + 0.5) * col_w, top - 6), c, size=size, anchor="middle")
    for i, (r, line) in enumerate(zip(rows, cells)):
        y = top + i * row_h
        text(dwg, (left - 8, y + row_h / 2 + size * 0.35), r, size=size, anchor="end")
        for j, cell in enumerate(line):
            x = left + j * col_w
            if cell.value is None:
                fill = GRID
            else:
                t = min(1.0, abs(cell.value - 1) / span)
                fill = _blend("#ffffff", ACCENT if cell.value >= 1 else REF, 0.75 * t)
            dwg.add(dwg.rect((x + 1, y + 1), (col_w - 2, row_h - 2), fill=fill,
                             **({"stroke": INK, "stroke_width": 1.5} if cell.marked else {})))
            dark = cell.value is not None and abs(cell.value - 1) > 0.6 * span
            text(dwg, (x + col_w / 2, y + row_h / 2 + size * 0.35), cell.label + ("†" if cell.noted else ""),
                 size=size, color="#ffffff" if dark else INK, anchor="middle")
            if cell.dotted:
                dwg.add(dwg.circle((x + col_w - 7, y + 7), 2.5, fill="#ffffff" if dark else INK))
            if cell.barred:
                _bar(dwg, x + col_w / 2, y + row_h - 4, "#ffffff" if dark else INK)
    ly = top + row_h * len(rows) + 22
    if marked:
        dwg.add(dwg.rect((left, ly - 10), (12, 12), fill="none", stroke=INK, stroke_width=1.5))
        text(dwg, (left + 18, ly), marked, size=11, color=MUTED)
        ly += legend_h
    if footnote:
        text(dwg, (left + 6, ly), "†", size=11, color=MUTED, anchor="middle")
        text(dwg, (left + 18, ly), footnote, size=11, color=MUTED)
        ly += legend_h
    if dotted:
        dwg.add(dwg.circle((left + 6, ly - 4), 2.5, fill=INK))
        text(dwg, (left + 18, ly), dotted, size=11, color=MUTED)
        ly += legend_h
    if barred:
        _bar(dwg, left + 6, ly - 2, INK)
        text(dwg, (left + 18, ly), barred, size=11, color=MUTED)
    return dwg.tostring()


def _bar(dwg, x: float, y: float, color: str):
    """A heatmap cell's bar under its label, centred on x (class "bar", so that it can be counted)."""
    dwg.add(dwg.rect((x - 9, y - 1), (18, 2), fill=color, class_="bar"))


def arrow(dwg, a, b, color=INK, width=1.5):
    dwg.add(dwg.line(a, b, stroke=color, stroke_width=width))
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    tip = [(b[0] - 7 * math.cos(ang + d), b[1] - 7 * math.sin(ang + d)) for d in (-0.4, 0.4)]
    dwg.add(dwg.polygon([b, *tip], fill=color))


@dataclass
class Point:
    x: float
    y: float
    label: str
    note: str = ""               # a second, muted line under the label
    color: str = ACCENT


def _ratio_tick(t: float) -> str:
    return f"{t:g}×" if t >= 1 else f"1/{1 / t:g}×"


def scatter(points: list[Point], x_label: str, y_label: str, lines: list[Line] = (),
            arrows: list[tuple[int, int, str]] = (), x_format=_ratio_tick, width: int = 860, height: int = 320) -> str:
    """Labelled points: x a ratio on a log2 axis that reaches as far below 1 as above it (so that
    left of 1 reads as less, right of it as more), y linear from 0. Each point's label, its note under
    it, is set beside it where it crosses no other label, point, arrow or line label and stays inside
    the plot; ``arrows`` (i, j, label) join point i to point j, the label (its lines split at newlines)
    over the arrow's middle or under it; ``lines`` are reference lines (axis "x": vertical, at a ratio)."""
    left, right, top, bottom = 72, 16, 16, 50
    dwg = drawing(width, height)
    xs = [p.x for p in points] + [l.value for l in lines if l.axis == "x"]
    reach = max(1.0, *(abs(math.log2(x)) for x in xs)) + 0.4
    x_of = lambda x: left + (width - left - right) * (math.log2(x) + reach) / (2 * reach)
    yt = nice_ticks(1.15 * max([p.y for p in points] + [l.value for l in lines if l.axis == "y"]))
    y_of = lambda y: height - bottom - (height - top - bottom) * y / yt[-1]
    for t in yt:
        dwg.add(dwg.line((left, y_of(t)), (width - right, y_of(t)), stroke=GRID))
        text(dwg, (left - 8, y_of(t) + 4), _fmt(t), size=11, color=MUTED, anchor="end")
    xt = [2.0 ** e for e in range(-math.floor(reach), math.floor(reach) + 1)]
    every = label_every([x_format(t) for t in xt], x_of(2.0) - x_of(1.0))
    for t in xt:
        if round(math.log2(t)) % every == 0:
            dwg.add(dwg.line((x_of(t), height - bottom), (x_of(t), height - bottom + 4), stroke=MUTED))
            text(dwg, (x_of(t), height - bottom + 18), x_format(t), size=11, color=MUTED, anchor="middle")
    dwg.add(dwg.line((left, height - bottom), (width - right, height - bottom), stroke=MUTED))
    text(dwg, ((width + left - right) / 2, height - bottom + 38), x_label, size=12, color=MUTED, anchor="middle")
    text(dwg, (18, (height - bottom + top) / 2), y_label, size=12, color=MUTED, anchor="middle",
         transform=f"rotate(-90 18 {(height - bottom + top) / 2})")
    pts = [(x_of(p.x), y_of(p.y)) for p in points]
    taken = [(x - 6, y - 6, x + 6, y + 6) for x, y in pts]          # boxes a label may not cross
    crosses = lambda box: any(box[0] < t[2] + 3 and t[0] < box[2] + 3 and box[1] < t[3] + 2 and t[1] < box[3] + 2
                              for t in taken)
    for l in lines:
        at = x_of(l.value) if l.axis == "x" else y_of(l.value)
        if l.axis == "x":
            dwg.add(dwg.line((at, top), (at, height - bottom), stroke=l.color, stroke_dasharray="6,4"))
            text(dwg, (at - 6, top + 12), l.label, size=11, color=l.color, anchor="end", halo=True)
            taken += [(at - 8 - text_width(l.label, 11), top, at - 4, top + 15), (at - 1, top, at + 1, height - bottom)]
        else:
            dwg.add(dwg.line((left, at), (width - right, at), stroke=l.color, stroke_dasharray="6,4"))
            text(dwg, (left + 8, at - 6), l.label, size=11, color=l.color, halo=True)
            taken += [(left + 6, at - 18, left + 10 + text_width(l.label, 11), at - 3), (left, at - 1, width - right, at + 1)]
    for i, j, label in arrows:
        (ax, ay), (bx, by) = pts[i], pts[j]
        d = math.hypot(bx - ax, by - ay) or 1
        a, b = (ax + 9 * (bx - ax) / d, ay + 9 * (by - ay) / d), (bx - 9 * (bx - ax) / d, by - 9 * (by - ay) / d)
        arrow(dwg, a, b, color=REF)
        taken += [(x - 2, y - 2, x + 2, y + 2) for x, y in _traced([a, b], 4.0)]
        said = label.split("\n")
        half, tall = max(text_width(line, 12) for line in said) / 2, 15 * len(said)
        mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
        # over the arrow's middle, else under it: the box's top
        spots = [my - 6 - tall, my + 6]
        ty = next((y for y in spots if top <= y and not crosses((mx - half, y, mx + half, y + tall))), spots[0])
        for k, line in enumerate(said):
            text(dwg, (mx, ty + 12 + 15 * k), line, size=12, color=REF, anchor="middle", halo=True)
        taken.append((mx - half, ty, mx + half, ty + tall))
    for p, (x, y) in zip(points, pts):
        dwg.add(dwg.circle((x, y), 5, fill=p.color, stroke="white", stroke_width=1.5))
    for p, (x, y) in zip(points, pts):
        w = max(text_width(p.label, 12), text_width(p.note, 11) if p.note else 0)
        h = 14 + (14 if p.note else 0)
        # right, left, then under and over it (starting at it, or ending at it), then a line further off
        spots = [(x + 10, y - h / 2), (x - 10 - w, y - h / 2)] + [
            spot for off in (9, 24) for spot in ((x - 4, y + off), (x + 4 - w, y + off), (x - 4, y - off - h), (x + 4 - w, y - off - h))]
        inside = [(bx, by) for bx, by in spots if left <= bx and bx + w <= width - right and top <= by and by + h <= height - bottom]
        bx, by = next(((bx, by) for bx, by in inside if not crosses((bx, by, bx + w, by + h))), (inside or spots)[0])
        text(dwg, (bx, by + 11), p.label, size=12, color=INK, halo=True)
        if p.note:
            text(dwg, (bx, by + 25), p.note, size=11, color=MUTED, halo=True)
        taken.append((bx, by, bx + w, by + h))
    return dwg.tostring()


@dataclass
class Roof:
    """A roofline's flat roof: a peak rate, flat from its ridge (where the bandwidth's slope meets it) on."""
    label: str                   # written right of the plot, at the roof's height
    tflops: float
    color: str = ACCENT
    ridge_label: str = ""        # written under its knee


@dataclass
class RoofPoint:
    x: float                     # FLOP per byte
    y: float                     # TFLOPS
    label: str = ""              # a bound's, written under it to the right; a measured point's roof names it
    color: str = ACCENT
    bound: bool = False          # worked out, not measured: drawn hollow


def roofline(gbps: float, slope_label: str, roofs: list[Roof], points: list[RoofPoint], marks: list[Line], title: str,
             width: int = 860, height: int = 320) -> str:
    """Attainable TFLOPS against arithmetic intensity (FLOP per byte), both axes log, ticks at powers
    of ten: the bandwidth's slope (``gbps``, labelled along it), each roof flat from its ridge (peak /
    bandwidth) on and labelled right of the plot, ``points`` (filled where measured, hollow where a
    bound) and vertical ``marks`` (Line, axis 'x') at intensities the slide names."""
    size = 11
    left, top, bottom = 72, 34, 48
    right = max(text_width(r.label, size) for r in roofs) + 18
    dwg = drawing(width, height)
    ridge = lambda r: 1e3 * r.tflops / gbps          # TFLOPS over GB/s: 1e3 FLOP per byte
    xs = [p.x for p in points] + [m.value for m in marks] + [ridge(r) for r in roofs]
    ys = [p.y for p in points] + [r.tflops for r in roofs]
    x_lo, x_hi = min(xs) / 2, 2 * max(xs)
    y_lo, y_hi = min(ys) / 3, 3 * max(ys)            # room under the lowest point and over the top roof for labels
    x_of = lambda x: left + (width - left - right) * math.log10(x / x_lo) / math.log10(x_hi / x_lo)
    y_of = lambda y: height - bottom - (height - top - bottom) * math.log10(y / y_lo) / math.log10(y_hi / y_lo)
    text(dwg, (left, 18), title, size=12, color=MUTED)
    for e in range(math.ceil(math.log10(y_lo)), math.floor(math.log10(y_hi)) + 1):
        dwg.add(dwg.line((left, y_of(10.0 ** e)), (width - right, y_of(10.0 ** e)), stroke=GRID))
        text(dwg, (left - 8, y_of(10.0 ** e) + 4), _fmt(10.0 ** e), size=size, color=MUTED, anchor="end")
    for e in range(math.ceil(math.log10(x_lo)), math.floor(math.log10(x_hi)) + 1):
        dwg.add(dwg.line((x_of(10.0 ** e), top), (x_of(10.0 ** e), height - bottom), stroke=GRID))
        text(dwg, (x_of(10.0 ** e), height - bottom + 17), _fmt(10.0 ** e), size=size, color=MUTED, anchor="middle")
    dwg.add(dwg.line((left, height - bottom), (width - right, height - bottom), stroke=MUTED))
    text(dwg, ((width + left - right) / 2, height - bottom + 36), "FLOP per byte of memory traffic (log)", size=12,
         color=MUTED, anchor="middle")
    text(dwg, (18, (height - bottom + top) / 2), "TFLOPS (log)", size=12, color=MUTED, anchor="middle",
         transform=f"rotate(-90 18 {(height - bottom + top) / 2})")
    # the slope, from the plot's floor to the highest roof's ridge; each roof from its ridge on
    top_roof, low_roof = max(roofs, key=lambda r: r.tflops), min(roofs, key=lambda r: r.tflops)
    start = max(x_lo, 1e3 * y_lo / gbps)
    slope = [(x_of(start), y_of(gbps * start / 1e3)), (x_of(ridge(top_roof)), y_of(top_roof.tflops))]
    dwg.add(dwg.line(*slope, stroke=INK, stroke_width=2))
    drawn = [slope]
    label_y = -math.inf
    for r in sorted(roofs, key=lambda r: -r.tflops):          # from the top, each label clear of the one over it
        a, b = (x_of(ridge(r)), y_of(r.tflops)), (width - right, y_of(r.tflops))
        dwg.add(dwg.line(a, b, stroke=r.color, stroke_width=2.5))
        drawn.append([a, b])
        label_y = max(b[1] + 4, label_y + size + 3)
        text(dwg, (width - right + 8, label_y), r.label, size=size, color=r.color)
        if r.ridge_label:
            dwg.add(dwg.circle(a, 3.5, fill=r.color))
            text(dwg, (a[0] + 6, a[1] + 15), r.ridge_label, size=size, color=r.color, halo=True)
    # the slope's label along it, halfway from its start to the lowest roof's ridge, over the line
    (sx, sy), (ex, ey) = slope[0], (x_of(ridge(low_roof)), y_of(low_roof.tflops))
    angle = math.degrees(math.atan2(ey - sy, ex - sx))
    mx, my = (sx + ex) / 2, (sy + ey) / 2 - 6
    text(dwg, (mx, my), slope_label, size=size, anchor="middle", halo=True, transform=f"rotate({angle:.1f} {mx:.1f} {my:.1f})")
    traced = [p for line in drawn for p in _traced(line)]
    for i, m in enumerate(marks):
        x = x_of(m.value)
        dwg.add(dwg.line((x, top), (x, height - bottom), stroke=m.color, stroke_dasharray="6,4"))
        lx, ly, anchor = _place_by_line(x, m.label, top + 12 + 16 * i, left, width - right, height - bottom, traced)
        text(dwg, (lx, ly), m.label, size=size, color=m.color, anchor=anchor, halo=True)
    for p in points:
        x, y = x_of(p.x), y_of(p.y)
        if p.bound:
            dwg.add(dwg.circle((x, y), 4.5, fill="white", stroke=p.color, stroke_width=2))
        else:
            dwg.add(dwg.circle((x, y), 4.5, fill=p.color, stroke="white", stroke_width=1.5))
        if p.label:         # under the point, to its right: below a rising slope, clear of it
            text(dwg, (x + 10, y + 15), p.label, size=size, color=p.color, halo=True)
    return dwg.tostring()
