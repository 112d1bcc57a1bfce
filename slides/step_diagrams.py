"""One diagram for each GEMM step past the reference deck (Kernels 7-12), each drawing its step's
idea from the constants its kernel was compiled with and the plan it ran, as the results record
them (step["best"]["resources"]): the producer warpgroup and the stage ring over time, a cluster
sharing B's tile by multicast, the persistent schedule over the SMs, the split last wave, the
epilogue through shared memory, and the main loop's instructions. Each is drawn at 860 x 400, the width the slide shows it, so its
text sizes (11 px and up) are what the room sees. Durations in the timelines are illustrative;
every number written comes from the results or the GEMM's shape."""
from __future__ import annotations

import math

from bench.gemm.plan import ctas as ctas_of, last_wave_k_tiles, splits
from slides.fmt import fmt_count
from slides.kit import GROUP, INK, MUTED, PALETTE, REF, arrow, drawing, layers, text, text_width

W, H = 860, 400
# One meaning per colour across the figures.
LOAD, MMA, STORE, HELP = PALETTE[0], PALETTE[2], PALETTE[3], PALETTE[4]
RANKS = (PALETTE[0], PALETTE[3], PALETTE[4], PALETTE[5])      # a cluster's CTAs, by rank
BUFFERS = (PALETTE[4], PALETTE[5], PALETTE[6], PALETTE[7])    # the epilogue's staging buffers
HALO = {"stroke": "white", "stroke_width": 3, "paint_order": "stroke"}   # a label over lines stays legible


def _resources(step) -> tuple[dict, dict]:
    res = step.best["resources"]
    return res, res["tile"]


def _kib(n: float) -> str:
    return f"{n / 1024:g} KiB"


def _title(dwg, s: str):
    text(dwg, (20, 28), s, size=14, weight="bold")


def _caption(dwg, lines: list[str]):
    """At most a few lines at the foot: the first is the point, the rest in grey."""
    for i, line in enumerate(lines):
        text(dwg, (20, H - 16 - 18 * (len(lines) - 1 - i)), line, size=12, color=INK if i == 0 else MUTED)


def _box(dwg, x, y, w, h, color, labels=(), size=11, opacity=0.3, **kw):
    """A tinted box with the first of ``labels`` that fits inside it (none if none does)."""
    dwg.add(dwg.rect((x, y), (max(w, 0.5), h), fill=color, fill_opacity=opacity, stroke=color, **kw))
    for s in [labels] if isinstance(labels, str) else labels:
        if text_width(s, size) <= w - 8 and h >= size + 2:
            text(dwg, (x + w / 2, y + h / 2 + size * 0.35), s, size=size, anchor="middle")
            break


def _legend(dwg, x, y, items: list[tuple[str | None, str, bool]], dy=20):
    """A swatch (filled, or a dashed outline) and a line for each item; a None colour continues the
    item above it in grey."""
    for i, (color, line, filled) in enumerate(items):
        if color:
            dwg.add(dwg.rect((x, y + dy * i - 10), (12, 12), fill=color if filled else "none", fill_opacity=0.55,
                             stroke=color, **({} if filled else {"stroke_dasharray": "3,2"})))
        text(dwg, (x + 18, y + dy * i), line, size=12 if color else 11, color=INK if color else MUTED)


def _row_labels(dwg, x, top, row_h, rows: list[tuple[int, str]]):
    """Labels for a few of many thin rows, right-aligned at ``x``; one too close to the last is left out."""
    last = -math.inf
    for row, label in rows:
        y = top + (row + 0.5) * row_h + 4
        if y - last >= 14:
            text(dwg, (x, y), label, size=11, color=MUTED, anchor="end")
            last = y


def _waves(dwg, x0, unit, top, row_h, counts: list[int], waves: int):
    """Rows of whole work items (tiles, tile pairs) over time, one row per CTA or cluster: row r busy
    for counts[r] items, each ``unit`` wide; white lines mark where each wave ends."""
    for r, count in enumerate(counts):
        dwg.add(dwg.rect((x0, top + r * row_h), (count * unit, max(row_h - 0.5, 0.6)), fill=MMA,
                         fill_opacity=0.55))
    for j in range(1, waves if unit >= 4 else 0):       # too many to mark: the bars stay whole
        dwg.add(dwg.line((x0 + j * unit, top), (x0 + j * unit, top + row_h * len(counts)), stroke="white",
                         stroke_width=1.5))


def producer_ring(step, shape: dict) -> str:
    """The CTA's warpgroups by role around the ring of STAGES shared stages, then the ring over time,
    a row per stage: the producer's TMA load of K-tile k fills stage k mod STAGES, full[s] hands it to
    the consumers' wgmma, and its end (empty[s]) lets the load of k + STAGES in, STAGES K-tiles ahead."""
    res, t = _resources(step)
    stages, consumers = t["STAGES"], t["WARPGROUPS_M"]
    producers = t.get("PRODUCER_WARPGROUPS", res["threads_per_block"] // 128 - consumers)
    ring, over_time = layers(W, H, 2)
    dwg = ring
    _title(dwg, f"Warp specialization: {res['threads_per_block']} threads, {producers} producer and "
                f"{consumers} consumer warpgroups around a ring")
    # roles and the ring: producer -> ring -> consumers, and back by empty[s]
    y, h = 62, 58
    _box(dwg, 20, y, 210, h, LOAD, opacity=0.2)
    first = "warpgroup 0" if producers == 1 else f"warpgroups 0–{producers - 1}"
    text(dwg, (30, y + 24), f"{first}: producer", size=12, weight="bold")
    text(dwg, (30, y + 42), "one thread issues the TMA loads", size=11, color=MUTED)
    _box(dwg, 630, y, 210, h, MMA, opacity=0.2)
    last = producers + consumers - 1
    text(dwg, (640, y + 24), f"warpgroups {producers}–{last}: consumers", size=12, weight="bold")
    text(dwg, (640, y + 42), f"wgmma, {t['BM'] // consumers}×{t['BN']} of C each", size=11, color=MUTED)
    rx0, rx1 = 300, 560
    text(dwg, ((rx0 + rx1) / 2, y - 8), f"{stages} stages × {_kib((t['BM'] + t['BN']) * t['BK'] * 4)} "
         "shared memory", size=12, anchor="middle", weight="bold")
    sw = (rx1 - rx0 - 6 * (stages - 1)) / stages
    for s in range(stages):
        _box(dwg, rx0 + s * (sw + 6), y + 8, sw, h - 16, GROUP, (f"stage {s}", f"{s}"), opacity=0.35)
    arrow(dwg, (232, y + h / 2), (rx0 - 4, y + h / 2), color=LOAD)
    text(dwg, (265, y + h / 2 - 7), "TMA", size=11, color=LOAD, anchor="middle")
    arrow(dwg, (rx1 + 2, y + h / 2), (628, y + h / 2), color=MMA)
    text(dwg, (595, y + h / 2 - 7), "full[s]", size=11, color=MMA, anchor="middle")
    back = y + h + 14
    dwg.add(dwg.polyline([(735, y + h), (735, back), (125, back)], fill="none", stroke=REF, stroke_width=1.4))
    arrow(dwg, (125, back), (125, y + h + 2), color=REF, width=1.4)
    text(dwg, (430, back + 16), "empty[s]: every consumer warp has read stage s, refill it", size=11, color=REF,
         anchor="middle")

    # over time, a row per stage: load k waits for the release of k - STAGES, wgmma k for load k
    dwg = over_time
    load_t, mma_t = 0.5, 1.0                      # compute-bound: a K-tile's wgmma outlasts its load
    top, x0, unit = 178, 80, 68                   # a wgmma's box holds "wgmma k10" at 11 px
    row_h = min(28, (306 - top - 6 * (stages - 1)) / stages)
    end = (W - 20 - x0) / unit
    loads, mmas = [], []
    for k in range(-(-shape["k"] // t["BK"])):
        start = max(loads[-1][1] if loads else 0.0, mmas[k - stages][1] if k >= stages else 0.0)
        loads.append((start, start + load_t))
        begin = max(start + load_t, mmas[-1][1] if mmas else 0.0)
        mmas.append((begin, begin + mma_t))
        if start >= end:
            break
    for k, ((a, b), (c, d)) in enumerate(zip(loads, mmas)):
        ry = top + (k % stages) * (row_h + 6)
        waiting = ("full, waiting",) if k == stages else ()      # said once, where the wait is long
        for (p, q), color, labels, opacity, dash in (((a, b), LOAD, (f"k{k}",), 0.45, None),
                                                     ((b, c), LOAD, waiting, 0.06, "3,3"),
                                                     ((c, d), MMA, (f"wgmma k{k}",), 0.4, None)):
            # a load or a wgmma is drawn whole or not at all (cut at the edge, wgmma k10 read as load k10);
            # only the wait runs off the edge
            if q > p and p < end and (dash or q <= end):
                _box(dwg, x0 + p * unit, ry, (min(q, end) - p) * unit - 2, row_h, color, labels, opacity=opacity,
                     **({"stroke_dasharray": dash} if dash else {}))
        if d < end:                               # its end releases the stage: empty[s]
            dwg.add(dwg.line((x0 + d * unit - 2, ry), (x0 + d * unit - 2, ry + row_h), stroke=REF,
                             stroke_width=2.5))
    for s in range(stages):
        text(dwg, (x0 - 8, top + s * (row_h + 6) + row_h / 2 + 4), f"stage {s}", size=11, color=MUTED, anchor="end")
    text(dwg, (x0, top - 10), "over time →   (a red edge: the wgmma is done, empty[s] frees its stage)", size=11,
         color=MUTED)
    _caption(dwg, [f"Load k + {stages} starts the moment wgmma k frees its stage: the producer stays {stages} "
                   "K-tiles ahead,",
                   "so a wgmma finds its K-tile landed (full) unless a load takes longer than the ring's K-tiles of wgmmas."])
    return [d.tostring() for d in (ring, over_time)]


def multicast(step, shape: dict) -> str:
    """A cluster's CTAs on vertically adjacent tiles of C, which share B's tile: each CTA loads its own
    A and one slice of B (its TMA box) and multicasts the slice into every CTA of the cluster, so L2
    serves B's tile once per cluster; beside it, the bytes one CTA reads from L2 per K-step."""
    res, t = _resources(step)
    n, bm, bn, bk = t.get("CLUSTER_M", 1), t["BM"], t["BN"], t["BK"]
    piece = res.get("tma", {}).get("b", {}).get("box", [bk, bn // n])[1]      # rows of B a CTA loads
    geometry, landing, l2 = layers(W, H, 3)
    dwg = geometry
    _title(dwg, f"Cluster of {n} CTAs on {n} tiles of C one above the other: one B tile, loaded once")
    # the GEMM's geometry: B's K-step above the cluster's tiles of C, each CTA's A to their left
    gap = 8
    px = min((400 - 130) / (bn + bk), (316 - 74 - gap * n) / (n * bm + bk))
    ax, by = 90, 74
    cx, cw = ax + bk * px + 10, bn * px
    text(dwg, (cx, by - 8), f"B: {bk}×{bn} per K-step, {n} slices of {bk}×{piece}", size=12)
    for i in range(n):
        _box(dwg, cx + i * piece * px, by, piece * px - 2, bk * px, RANKS[i % 4], (f"slice {i}", f"{i}"),
             opacity=0.45)
    ty = by + bk * px + gap + 4
    for r in range(n):
        y = ty + r * (bm * px + gap)
        _box(dwg, ax, y, bk * px, bm * px, RANKS[r % 4], ("A",), opacity=0.45)
        _box(dwg, cx, y, cw, bm * px, RANKS[r % 4], opacity=0.08)
        if r == 0:
            text(dwg, (ax - 6, y + bm * px / 2 + 4), f"A {bm}×{bk}", size=11, color=MUTED, anchor="end")
        text(dwg, (cx + cw / 2, y + bm * px / 2 - 2), f"CTA {r}", size=12, weight="bold", anchor="middle", **HALO)
        text(dwg, (cx + cw / 2, y + bm * px / 2 + 14), f"C tile {bm}×{bn}", size=11, anchor="middle", **HALO)
    dwg = landing
    for i in range(n):                          # slice i lands in every CTA's shared memory
        sx = cx + (i + 0.5) * piece * px
        for r in range(n):
            arrow(dwg, (sx, by + bk * px if r == 0 else ty + r * (bm * px + gap) - gap),
                  (sx, ty + r * (bm * px + gap) + 10), color=RANKS[i % 4], width=1.6)
    # bytes from L2 per CTA and K-step, alone (step 7) and in the cluster; the peers' slices arrive by
    # multicast (dashed), not from L2
    dwg = l2
    a, b, own = bm * bk * 4, bn * bk * 4, piece * bk * 4
    mine = RANKS[0], True
    bars = (("alone", [(a, ("A " + _kib(a), "A"), *mine), (b, ("all of B " + _kib(b), "B"), *mine)]),
            (f"CTA 0 in the cluster of {n}",
             [(a, ("A " + _kib(a), "A"), *mine), (own, (f"slice 0 {_kib(own)}", "own"), *mine)]
             + [(own, (f"from CTA {p}", f"CTA {p}"), RANKS[p % 4], False) for p in range(1, n)]))
    lx, scale = 430, 330 / (a + b)
    text(dwg, (lx, 110), "Read from L2 by one CTA per K-step", size=13, weight="bold")
    for row, (label, parts) in enumerate(bars):
        y, x = 146 + 66 * row, lx
        text(dwg, (lx, y - 8), label, size=12, color=MUTED)
        for size, labels, color, from_l2 in parts:
            _box(dwg, x, y, size * scale, 28, color, labels, opacity=0.45 if from_l2 else 0.06,
                 **({} if from_l2 else {"stroke_dasharray": "4,3"}))
            x += size * scale
        text(dwg, (x + 6, y + 19), _kib(sum(size for size, *_, from_l2 in parts if from_l2)), size=12)
    text(dwg, (lx, 286), f"{100 * (1 - (a + own) / (a + b)):.0f}% fewer L2 bytes for the same wgmma work",
         size=12, color=RANKS[0], weight="bold")
    every = "both" if n == 2 else f"all {n}"
    _caption(dwg, [f"Each CTA loads its own A and 1/{n} of B's tile (TMA box {bk}×{piece}), multicast into the "
                   f"shared memory of {every}.",
                   f"A stage is full when A and {every} slices have landed; it is refilled once the consumers of "
                   f"{every} CTAs released it."])
    return [d.tostring() for d in (geometry, landing, l2)]


def tile_schedule(step, shape: dict) -> str:
    """The persistent schedule: as many CTAs as the GPU holds at once, one thin row each, walking the
    output tiles cta, cta + grid, ... until none is left, so the last wave leaves SMs idle; beside it,
    one CTA's tile boundary, where the producer loads the next tile while the consumers store C."""
    res, t = _resources(step)
    ctas = res.get("resident_ctas") or res["grid"][0]
    tiles = ctas_of(t, shape["m"], shape["n"])
    counts = [len(range(c, tiles, ctas)) for c in range(ctas)]
    waves = math.ceil(tiles / ctas)
    busy = tiles - (waves - 1) * ctas            # CTAs with a tile in the last wave
    pair = t.get("CLUSTER_M", 1)
    dwg = drawing(W, H)
    _title(dwg, f"Persistent: {ctas} CTAs, one per SM{f' (clusters of {pair})' if pair > 1 else ''}, "
                f"walk the {tiles:,} tiles of {t['BM']}×{t['BN']}")
    top, x0, x1 = 62, 80, 540
    row_h = min(3.0, 222 / ctas)
    unit = (x1 - x0) / waves
    _waves(dwg, x0, unit, top, row_h, counts, waves)
    if busy < ctas:
        dwg.add(dwg.rect((x0 + (waves - 1) * unit, top + busy * row_h), (unit - 1, (ctas - busy) * row_h),
                         fill=REF, fill_opacity=0.06, stroke=REF, stroke_dasharray="4,3"))
        text(dwg, (x0 + (waves - 0.5) * unit, top + (busy + ctas) / 2 * row_h + 4), "idle", size=11, color=REF,
             anchor="middle", **HALO)
    bottom = top + ctas * row_h
    _row_labels(dwg, x0 - 6, top, row_h, [(0, "CTA 0"), (busy - 1, f"CTA {busy - 1}"),
                                          (ctas - 1, f"CTA {ctas - 1}")])
    every = math.ceil(waves / 12)               # a label every few waves where there are many
    for j in [*range(0, waves - every // 2, every), waves]:
        text(dwg, (x0 + j * unit, bottom + 16), f"{j}", size=11, color=MUTED, anchor="middle")
    text(dwg, ((x0 + x1) / 2, bottom + 32), "time, in tiles per CTA", size=11, color=MUTED, anchor="middle")

    lx = 580
    text(dwg, (lx, 80), f"{tiles:,} tiles ÷ {ctas} CTAs", size=13)
    text(dwg, (lx, 100), f"= {tiles / ctas:.2f} waves", size=13, weight="bold")
    text(dwg, (lx, 122), f"the last runs {busy} of {ctas} CTAs", size=12, color=REF if busy < ctas else INK)
    # one CTA at a tile boundary: the ring carries over, so tile t + 1's loads overlap t's epilogue
    iy, ix, u = 166, 620, 220 / 7
    text(dwg, (lx, iy - 10), "One CTA at a tile boundary", size=12, weight="bold")
    text(dwg, (lx, iy + 17), "loads", size=11, color=MUTED)
    text(dwg, (lx, iy + 49), "math", size=11, color=MUTED)
    dwg.add(dwg.rect((ix + 3.4 * u - 3, iy - 5), (1.8 * u + 4, 68), fill=REF, fill_opacity=0.1))
    for a, b, row, color, labels in ((0, 3.0, 0, LOAD, ("tile t",)), (3.0, 7, 0, LOAD, ("tile t + 1",)),
                                     (0, 3.4, 1, MMA, ("wgmma t",)), (3.4, 5.2, 1, STORE, ("store C",)),
                                     (5.2, 7, 1, MMA, ("wgmma t + 1", "t + 1"))):
        _box(dwg, ix + a * u, iy + row * 32, (b - a) * u - 2, 26, color, labels, opacity=0.35)
    text(dwg, (lx, iy + 84), "shaded: the next tile's loads overlap", size=11, color=REF)
    text(dwg, (lx, iy + 100), "this tile's store of C", size=11, color=REF)
    _caption(dwg, [f"One launch: CTA c computes tiles c, c + {ctas}, c + {2 * ctas}, … with its shared memory, "
                   "barriers and ring set up once;",
                   f"{tiles:,} tiles are not a multiple of {ctas}, so the last wave leaves {ctas - busy} SMs idle."
                   if busy < ctas else f"{tiles:,} tiles fill {waves} whole waves of {ctas}."])
    return dwg.tostring()


def _last_wave(res: dict, t: dict, shape: dict) -> tuple[dict, bool]:
    """The split-wave plan the run recorded, or (none recorded) the unsplit one its grid implies:
    units of CLUSTER_M tiles on the resident clusters, the leftover units whole (split at k_tiles)."""
    if res.get("split_wave"):
        return res["split_wave"], True
    pair = t.get("CLUSTER_M", 1)
    units = ctas_of(t, shape["m"], shape["n"]) // pair
    clusters = (res.get("resident_ctas") or res["grid"][0]) // pair
    k_tiles = -(-shape["k"] // t["BK"])
    return {"units": units, "clusters": clusters, "k_tiles": k_tiles, "full_waves": units // clusters,
            "left": units % clusters, "helpers": 0, "rounds": 0, "split": k_tiles}, False


def split_tail(step, shape: dict) -> str:
    """The split last wave, a thin row per cluster: the full waves (drawn compressed), then the last
    wave zoomed, in K-tiles: the `left` owner clusters compute K-tiles [0, split) of their unit, the
    helper clusters compute [split, k_tiles) of those units, one after another, and leave partial sums
    for the owners, each tail followed by the K-tiles its plan charged for them; a dashed outline shows
    the unsplit last wave that the split shortens."""
    res, t = _resources(step)
    plan, recorded = _last_wave(res, t, shape)
    clusters, k, split = plan["clusters"], plan["k_tiles"], plan["split"]
    fixup = plan.get("fixup_k_tiles", 0)         # what a tail's partial sums cost, as the plan charged it
    left, full = plan["left"], plan["full_waves"]
    helpers = plan["helpers"] if splits(plan) else 0
    base, share = layers(W, H, 2)               # the waves; then how the last wave's units are shared out
    dwg = base
    _title(dwg, f"Split last wave: {plan['units']} units of {t.get('CLUSTER_M', 1)} tiles on {clusters} clusters, "
                f"{full} full waves + {left} left")
    top, row_h = 70, min(4.0, 250 / clusters)
    fx0, fx1, zx0, zx1 = 80, 230, 262, 600
    unit = (fx1 - fx0) / max(full, 1)
    _waves(dwg, fx0, unit, top, row_h, [full] * clusters, full)
    bottom = top + clusters * row_h
    text(dwg, ((fx0 + fx1) / 2, bottom + 18), f"{full} full waves", size=11, color=MUTED, anchor="middle")
    _row_labels(dwg, fx0 - 6, top, row_h, [(0, "cluster 0")] + [(left - 1, f"cluster {left - 1}")] * (left > 1)
                + [(clusters - 1, f"cluster {clusters - 1}")])
    if not left:
        text(dwg, (zx0, top + 20), f"{plan['units']} units fill {full} whole waves:", size=13)
        text(dwg, (zx0, top + 40), "no last wave to split.", size=13)
        return [dwg.tostring()]
    for y in (top - 6, bottom + 6):             # the axis breaks here: the last wave is drawn larger
        text(dwg, ((fx1 + zx0) / 2, y + 4), "//", size=12, color=MUTED, anchor="middle")
    kx = (zx1 - zx0) / k                        # the last wave, in K-tiles
    if helpers:                                 # the unsplit last wave: owners run all k_tiles, the rest idle
        dwg.add(dwg.rect((zx0, top), (k * kx, left * row_h), fill="none", stroke=INK, stroke_dasharray="5,4"))
    text(dwg, (zx0, top - 10), "0", size=11, color=MUTED)
    text(dwg, ((zx0 + zx1) / 2, bottom + 18), "last wave, in K-tiles (drawn larger)", size=11, color=MUTED,
         anchor="middle")
    dwg = share
    h = max(row_h - 0.5, 0.6)
    for c in range(clusters):
        y = top + c * row_h
        if c < left:                            # an owner: K-tiles [0, split) of its unit
            dwg.add(dwg.rect((zx0, y), (split * kx, h), fill=MMA, fill_opacity=0.55))
        elif helpers:                           # a helper: the tails [split, k) of units c - left, + helpers, ...
            for i in range(len(range(c - left, left, helpers))):
                x = zx0 + i * (k - split + fixup) * kx
                dwg.add(dwg.rect((x, y), ((k - split) * kx, h), fill=HELP, fill_opacity=0.55))
                if fixup:                       # then its partial sums, as the plan charged them
                    dwg.add(dwg.rect((x + (k - split) * kx, y), (fixup * kx - 1.5, h), fill=MUTED, fill_opacity=0.55))
    finish = last_wave_k_tiles(plan)
    for at, color, anchor, dx, on in ((finish, MMA, "end", -4, share), (k, INK, "start", 4, base)):
        on.add(on.line((zx0 + at * kx, top - 4), (zx0 + at * kx, bottom + 4), stroke=color, stroke_dasharray="2,2"))
        if at < k or color == INK:
            text(on, (zx0 + at * kx + dx, top - 10), f"{at}", size=11, color=color, anchor=anchor)

    if helpers:
        items = [(MMA, f"{left} owners: K-tiles 0–{split - 1}", True),
                 (HELP, f"{helpers} helpers: {split}–{k - 1}", True),
                 (None, f"at most {fmt_count(plan['rounds'], 'unit')} each, in turn", True),
                 *([(MUTED, f"+ {fixup} K-tiles a run: its sums", True)] if fixup else []),
                 (INK, "unsplit last wave", False)]
    else:
        items = [(MMA, f"{left} clusters: a whole unit", True), (None, f"{clusters - left} clusters idle", True)]
    _legend(dwg, 640, 90, items)
    y = 110 + 20 * len(items)
    text(dwg, (640, y), f"last wave: {finish} of {k}", size=13, weight="bold")
    text(dwg, (640, y + 18), f"K-tile times ({100 * (1 - finish / k):.0f}% shorter)" if finish < k
         else "K-tile times", size=12, color=MUTED)
    if helpers:
        charged = f" + {fixup} for its sums" if fixup else ""
        _caption(dwg, [f"Split at K-tile {split} of {k}: an owner's {split} K-tiles take at least a helper's "
                       f"{fmt_count(plan['rounds'], 'run')} of {k - split}{charged},",
                       "then each owner adds its helper's partial sums from global memory and stores the unit."])
    else:
        _caption(dwg, ["No split plan recorded for this run: its last wave drawn unsplit." if not recorded
                       else "The last wave is not split: its units run whole."])
    return [d.tostring() for d in (base, share)]


def staged_store(step, shape: dict) -> str:
    """One consumer warpgroup's epilogue: its BM/WARPGROUPS_M x BN accumulators, drawn to scale, leave
    in chunks of EPILOGUE_N columns, each written from registers into one of EPILOGUE_BUFFERS shared
    staging buffers in turn and stored by TMA while the warpgroup writes the next chunk; after the
    last chunk the warpgroup is back at wgmma for the next tile while the last stores drain."""
    res, t = _resources(step)
    rows, bn = t["BM"] // t["WARPGROUPS_M"], t["BN"]
    cn, buffers = t.get("EPILOGUE_N", bn), t.get("EPILOGUE_BUFFERS", 1)
    chunks = bn // cn
    colors = [BUFFERS[b % len(BUFFERS)] for b in range(buffers)]     # a chunk takes its buffer's colour
    dwg = drawing(W, H)
    _title(dwg, f"TMA-store epilogue: one consumer warpgroup's {rows}×{bn} accumulators leave in "
                f"{chunks} chunks of {rows}×{cn}")
    # registers -> staging buffers -> TMA -> C, chunks and buffers to one scale
    y, px = 66, min(400 / bn, 90 / rows)
    cw, ch = cn * px, rows * px
    label = f"registers: {rows}×{bn} of C in {chunks} chunks of {cn} columns"
    text(dwg, (20, y - 10), label, size=12)
    for j in range(chunks):
        _box(dwg, 20 + j * cw, y, cw - 2, ch, colors[j % buffers], (f"{j}",), opacity=0.35)
    sx = max(20 + chunks * cw, text_width(label, 12) + 10) + 48
    arrow(dwg, (sx - 42, y + ch / 2), (sx - 6, y + ch / 2), color=INK)
    staging = res.get("smem_static_bytes") or buffers * t["BM"] * cn * 4
    text(dwg, (sx, y - 10), f"{buffers} staging buffers ({_kib(staging)} a CTA)", size=12)
    bw = min(cw - 2, (W - 190 - sx) / buffers - 8)
    for b in range(buffers):
        _box(dwg, sx + b * (bw + 8), y, bw, ch, colors[b], (f"{b}",), opacity=0.15)
    cx = sx + buffers * (bw + 8) + 44
    arrow(dwg, (cx - 40, y + ch / 2), (cx - 6, y + ch / 2), color=INK)
    text(dwg, (cx - 23, y + ch / 2 - 8), "TMA", size=11, color=MUTED, anchor="middle")
    _box(dwg, cx, y, W - 20 - cx, ch, GROUP, ("C in global memory", "C"), opacity=0.35)

    # over time: chunk j goes to buffer j mod B once TMA has read the chunk B before out of it, and
    # its store runs while the next chunk is written
    write_t, store_t, mma_t = 1.0, 0.9, 2.4
    writes, stores = [], []
    for j in range(chunks):
        start = max(writes[-1][1] if writes else mma_t, stores[j - buffers][1] if j >= buffers else 0.0)
        writes.append((start, start + write_t))
        stores.append((start + write_t, start + write_t + store_t))
    back = writes[-1][1]                        # the warpgroup's registers are free: next tile's wgmma
    top, x0 = 200, 120
    u = (W - 20 - x0) / (back + 2.4)
    text(dwg, (x0 - 8, top + 18), "warpgroup", size=11, color=MUTED, anchor="end")
    _box(dwg, x0, top, mma_t * u - 2, 26, MMA, ("wgmma, tile t", "wgmma"), opacity=0.35)
    for j, ((a, b), (c, d)) in enumerate(zip(writes, stores)):
        _box(dwg, x0 + a * u, top, (b - a) * u - 2, 26, colors[j % buffers], (f"{j}",), opacity=0.45)
        _box(dwg, x0 + c * u, top + 36 + 30 * (j % buffers), (d - c) * u - 2, 24, colors[j % buffers],
             (f"store {j}", f"{j}"), opacity=0.15)
    _box(dwg, x0 + back * u, top, W - 20 - x0 - back * u, 26, MMA, ("wgmma, tile t + 1", "t + 1"), opacity=0.35)
    for b in range(buffers):
        text(dwg, (x0 - 8, top + 36 + 30 * b + 16), f"TMA, buffer {b}", size=11, color=MUTED, anchor="end")
    text(dwg, (x0 + mma_t * u, top - 8), f"epilogue: {chunks} chunks →", size=11, color=MUTED)
    lanes = top + 36 + 30 * buffers
    dwg.add(dwg.line((x0 + back * u, top - 6), (x0 + back * u, lanes), stroke=REF, stroke_dasharray="4,3"))
    text(dwg, (W - 20, lanes + 14), "back to wgmma for tile t + 1 while TMA finishes the stores", size=11,
         color=REF, anchor="end")
    _caption(dwg, [f"Registers → buffer j mod {buffers} → one thread's TMA store; a buffer is reused once TMA "
                   f"has read the chunk {buffers} before.",
                   "The warpgroup's registers are free as soon as its last chunk is in shared memory."])
    return dwg.tostring()


def lean_loop(step, shape: dict) -> str:
    """The main loop's instructions per K-tile, as the compiler built it, for this step and the step
    before (the same kernel but for its loop), split into the wgmmas and everything else; beside each,
    the clock the SMs ran at while it was timed."""
    before = step.loop_before
    rows = [*([(before["title"], before["variant"])] if before else []), (step.title, step.best)]
    loops = []
    for title, variant in rows:
        res = variant["resources"] or {}
        loop = (res.get("sass") or {}).get("main_loop")
        tile = res.get("tile") or {}
        if loop and loop["mma"]:
            # a K-tile is 128 bytes of K: BK of its elements, in wgmmas of the atom's K each
            per_tile = tile["BK"] // tile["atom_mnk"][2]
            k_tiles = loop["mma"] / per_tile
            loops.append((title, loop["instructions"] / k_tiles, per_tile, variant.get("clock_mhz")))
    dwg = drawing(W, H)
    _title(dwg, "The consumers' main loop: instructions issued per K-tile, from the SASS")
    most = max((n for _, n, _, _ in loops), default=1)
    left, right, top, bar_h = 200, W - 200, 90, 56
    scale = (right - left) / most
    for i, (title, n, mma, clock) in enumerate(loops):
        y = top + i * (bar_h + 40)
        text(dwg, (left - 10, y + bar_h / 2 + 5), title, size=12, anchor="end")
        _box(dwg, left, y, mma * scale, bar_h, MMA, (f"{mma} wgmma", "wgmma"), opacity=0.45)
        _box(dwg, left + mma * scale, y, (n - mma) * scale, bar_h, MUTED, (f"{n - mma:g} other instructions",), opacity=0.2)
        text(dwg, (left + n * scale + 10, y + bar_h / 2 - 4), f"{n:g} a K-tile, {mma} wgmma", size=12)
        if clock:
            text(dwg, (left + n * scale + 10, y + bar_h / 2 + 14), f"SMs at {clock:,.0f} MHz", size=11, color=MUTED)
    if len(loops) == 2:
        fewer = 1 - loops[1][1] / loops[0][1]
        _caption(dwg, [f"{100 * abs(fewer):.0f}% {'fewer' if fewer > 0 else 'more'} instructions per K-tile; "
                       "the wgmmas are the same.",
                       "Uniform registers hold the descriptors; the stage and parity are carried, not divided out."])
    elif loops:
        _caption(dwg, ["No step before it was measured to set beside it."])
    else:
        _caption(dwg, ["The records hold no main-loop count for these kernels: measured before it was recorded."])
    return dwg.tostring()


def stream_k_runs(runs: dict) -> dict:
    """What a stream-K plan (plan.stream_k) does to a cell: each unit's pieces (cluster, K-tiles
    [k0, k1)) in K order, the first piece of a split unit its owner's."""
    k_tiles, bounds = runs["k_tiles"], runs["runs"]
    pieces = [[] for _ in range(runs["units"])]
    for c in range(runs["clusters"]):
        at = bounds[c]
        while at < bounds[c + 1]:
            unit, k0 = divmod(at, k_tiles)
            k1 = min(k_tiles, k0 + bounds[c + 1] - at)
            pieces[unit].append((c, k0, k1))
            at += k1 - k0
    return {"pieces": pieces}


def stream_k_diagram(cell: dict) -> str:
    """Stream-K's plan for one atlas cell: the first tiles of C as rows of their K-tiles, each cut where
    a cluster's run starts or ends; the piece at K-tile 0 is its tile's owner (it adds the pieces after
    it and stores C), the others are helpers that leave partial sums."""
    runs, pieces = cell["plan"], cell["pieces"]
    k, units, clusters = runs["k_tiles"], runs["units"], runs["clusters"]
    lo, hi = runs["run_k_tiles"]
    m, n, kk = cell["shape"]
    tile, cluster = cell["tile"], cell["tile"].get("CLUSTER_M", 1)
    dwg = drawing(W, H)
    # a unit of the plan is a cluster's column of tiles: one tile of the cluster's rows
    _title(dwg, f"Stream-K, {cell['precision']} {m}×{n}×{kk}: {units} tiles of {tile['BM'] * cluster}×{tile['BN']}"
                f"{'' if cluster == 1 else f' ({cluster}-CTA clusters)'}, {k} K-tiles each, on {clusters} clusters")
    shown = min(units, 7)
    x0, x1, top, row_h = 90, 600, 64, 34
    kx = (x1 - x0) / k
    for u in range(shown):
        y = top + u * row_h
        text(dwg, (x0 - 8, y + row_h / 2 + 4), f"tile {u}", size=11, color=MUTED, anchor="end")
        for i, (c, k0, k1) in enumerate(pieces[u]):
            whole = k0 == 0 and k1 == k
            color = MMA if k0 == 0 else HELP
            _box(dwg, x0 + k0 * kx, y + 4, (k1 - k0) * kx - 1.5, row_h - 10, color,
                 (f"cluster {c}: {k1 - k0}", f"c{c}"), opacity=0.55 if whole else 0.35)
    bottom = top + shown * row_h
    text(dwg, (x0, bottom + 12), "0", size=11, color=MUTED)
    text(dwg, (x1, bottom + 12), f"{k}", size=11, color=MUTED, anchor="end")
    text(dwg, ((x0 + x1) / 2, bottom + 12), "K-tiles of the tile", size=11, color=MUTED, anchor="middle")
    if units > shown:
        text(dwg, (x0, bottom + 30), f"… and {units - shown} more tiles", size=11, color=MUTED)
    split = [p for p in pieces if len(p) > 1]
    _legend(dwg, 630, 90, [(MMA, "owner: from K-tile 0,", True), (None, "adds the others' sums, stores C", True),
                           (HELP, "helper: its run's first piece,", True), (None, "leaves partial sums", True)])
    text(dwg, (630, 190), f"every run: {lo}–{hi} K-tiles", size=13, weight="bold")
    text(dwg, (630, 208), f"{len(split)} of {units} tiles cut between runs", size=12, color=MUTED)
    _caption(dwg, [f"Each of the {clusters} clusters streams {lo}–{hi} K-tiles, however few the tiles: "
                   f"{units} tiles alone would leave {max(clusters - units, 0)} clusters idle." if units < clusters
                   else f"Each of the {clusters} clusters streams {lo}–{hi} K-tiles: {units} tiles are "
                        f"{units / clusters:.1f} waves, which would end ragged.",
                   "An owner adds its helpers' sums in cluster order: the same bits every run."])
    return dwg.tostring()


def pingpong_diagram(tile: dict) -> str:
    """Ping-pong consumers over time beside the headline's: there both consumer warpgroups hold half of
    one tile and store it at once while the tensor cores wait; here each holds a whole tile (the
    record's BM x BN, its ring STAGES deep) and the two take tiles in turn, one's epilogue beside the
    other's wgmmas."""
    bm, bn, stages, buffers = tile["BM"], tile["BN"], tile["STAGES"], tile["EPILOGUE_BUFFERS"] // 2
    dwg = drawing(W, H)
    _title(dwg, f"Ping-pong consumers: each warpgroup a whole {bm}×{bn} tile, the two in turn")
    x0, lane, mma_t, store_t = 150, 28, 3.0, 1.0
    u = (W - 20 - x0) / (4 * mma_t + store_t)

    def lanes(top: int, label: str, rows: list[list[tuple[float, float, str, str]]], names: list[str]):
        text(dwg, (20, top - 10), label, size=12, weight="bold")
        for i, (row, name) in enumerate(zip(rows, names)):
            y = top + i * (lane + 6)
            text(dwg, (x0 - 8, y + lane / 2 + 4), name, size=11, color=MUTED, anchor="end")
            for start, end, kind, said in row:
                _box(dwg, x0 + start * u, y, (end - start) * u - 2, lane, MMA if kind == "mma" else STORE,
                     (said,), opacity=0.4 if kind == "mma" else 0.3)

    # the headline: wgmma on both halves, then both store, the tensor cores idle meanwhile
    together = [[(t * (mma_t + store_t), t * (mma_t + store_t) + mma_t, "mma", f"wgmma, tile {t} (half)"),
                 (t * (mma_t + store_t) + mma_t, (t + 1) * (mma_t + store_t), "store", "store")] for t in range(3)]
    cooperative = [sum(together, [])] * 2
    lanes(70, "The headline (step 12): two warpgroups, one tile; the tensor cores idle while both store", cooperative,
          ["warpgroup 0", "warpgroup 1"])
    # ping-pong: tile t on warpgroup t mod 2, each's wgmmas as soon as the other's are issued
    rows = [[], []]
    for t in range(4):
        start = t * mma_t
        rows[t % 2] += [(start, start + mma_t, "mma", f"wgmma, tile {t}"), (start + mma_t, start + mma_t + store_t, "store", "store")]
    lanes(190, "Ping-pong: a tile each, in turn", rows, ["warpgroup 0", "warpgroup 1"])
    for t in range(3):
        x = x0 + (t * (mma_t + store_t) + mma_t + store_t / 2) * u
        text(dwg, (x, 150), "idle", size=11, color=REF, anchor="middle")
    text(dwg, (W - 20, 276), "one warpgroup's wgmmas run through the other's epilogue", size=11, color=REF, anchor="end")
    _legend(dwg, 20, 306, [(MMA, "wgmma: the tensor cores busy", True), (STORE, "epilogue: C through shared memory, then TMA", True)])
    _caption(dwg, [f"Each warpgroup stages its chunks in {buffers} buffers of its own; the ring keeps {stages} stages of {bm}×{bn} tiles' K-tiles.",
                   "Each holds a whole tile's sums, twice a cooperative warpgroup's: the tile narrows to fit."])
    return dwg.tostring()


# What the speaker says as each layer after the first appears, by kind of diagram (a [click] each in
# the Diagram slide's notes, as many as the figure drew).
REVEALS = {
    "producer_ring": ["Now the ring over time: each load starts the moment a wgmma frees its stage, so the producer "
                      "stays a ring ahead: a consumer waits only on a load slower than the ring's work."],
    "multicast": ["Each CTA loads one slice of B and multicasts it: every slice lands in the shared memory of "
                  "every CTA of the cluster.",
                  "So one CTA reads its A and only its own slice of B from L2: the bars show the bytes saved."],
    "split_tail": ["Now how the last wave is shared out: owners stop at the split, helpers compute the tails "
                   "and leave partial sums."],
}

# By the kind of diagram a step names in the catalogue (bench/gemm/catalogue.py, Step.diagram).
IDEAS = {"producer_ring": producer_ring, "multicast": multicast, "tile_schedule": tile_schedule,
         "split_tail": split_tail, "staged_store": staged_store, "lean_loop": lean_loop}
