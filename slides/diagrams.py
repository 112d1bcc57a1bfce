"""Each GEMM step's diagram, drawn from the constants its measured kernel was compiled with and the
plan it ran (its resources in the results), never from numbers written here: the naive launch, a
CuTe CTA's warps and MMA atoms, a Hopper CTA's warpgroups, swizzle and stage ring; then, past the
reference deck, one idea a step: the producer warpgroup and the ring over time, a cluster's CTAs
sharing B by multicast, the persistent schedule over the SMs, the split last wave, and the
epilogue through shared memory. Every figure is drawn at the width the slide shows it, its text
11 px and up. The step catalogue names each step's kind (bench/catalogue.py, Step.diagram)."""
from __future__ import annotations

import math

from slides.kit import ACCENT, GROUP, INK, MISSING, MUTED, PALETTE, REF, arrow, drawing, text


def naive_diagram(step: dict, shape: dict) -> str:
    """One thread block of the naive kernel: its tile of C, and the rows of A and
    columns of B that each of its threads reads whole. K is drawn short."""
    bx, by = step["block"]
    w, h = 860, 400
    dwg = drawing(w, h)
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
        text(dwg, (x + 4, y + 14), label, size=12, color=MUTED)
    # the block's tile of C, magnified so that it stays visible, and what it reads
    tw, th = max(bx * c_w / shape["n"], 16), max(by * c_h / shape["m"], 16)
    tx, ty = cx + c_w * 0.45, cy + c_h * 0.45
    dwg.add(dwg.rect((ax, ty), (a_w, th), fill=ACCENT, opacity=0.3))
    dwg.add(dwg.rect((tx, by0), (tw, k_len), fill=ACCENT, opacity=0.3))
    dwg.add(dwg.rect((tx, ty), (tw, th), fill=ACCENT))
    text(dwg, (cx + c_w + 12, ty + th / 2 + 4), f"one block: {bx} × {by} threads,", size=13, color=ACCENT)
    text(dwg, (cx + c_w + 12, ty + th / 2 + 22), "one element of C each", size=13, color=ACCENT)
    text(dwg, (ax, ty - 6), f"its {by} rows of A", size=12, color=ACCENT)
    text(dwg, (tx + tw + 6, by0 + k_len - 8), f"its {bx} columns of B", size=12, color=ACCENT)
    notes = [f"grid: {math.ceil(shape['n'] / bx)} × {math.ceil(shape['m'] / by)} blocks of {bx * by} threads",
             f"each thread: {shape['k']:,} loads of A, {shape['k']:,} loads of B, {shape['k']:,} FMAs",
             "no reuse: every block reads whole rows of A and columns of B from memory"]
    for i, line in enumerate(notes):
        text(dwg, (60, cy + c_h + 30 + 20 * i), line, size=14)
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
    dwg = drawing(w, h)
    px = 1.5                                              # pixels per element of the tile
    kx = max(px * bk, 10)                                 # K panels, at least visible
    cx, cy = 80 + kx + 30, 40 + kx + 24
    dwg.add(dwg.rect((cx - kx - 30, cy), (kx, bm * px), fill="#dbeafe", stroke=ACCENT))          # A panel
    dwg.add(dwg.rect((cx, cy - kx - 30), (bn * px, kx), fill="#dbeafe", stroke=ACCENT))          # B panel
    text(dwg, (cx - kx - 30, cy - 8), f"A: {bm}×{bk}", size=12, color=ACCENT)
    text(dwg, (cx + bn * px + 8, cy - kx / 2 - 26), f"B: {bk}×{bn} per K-step", size=12, color=ACCENT)
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
        text(dwg, (lx + 20, cy + 12 + 20 * warp), f"warp {warp}", size=12)
    text(dwg, (cx, cy + bm * px + 18), f"C tile {bm}×{bn}: {bm // am}×{bn // an} MMA atoms of {am}×{an}×{ak}, "
          f"{wm}×{wn} warps, each warp's atoms spread over the tile", size=12, color=MUTED)
    notes = [f"grid: {shape['m'] // bm} × {shape['n'] // bn} CTAs of {res['threads_per_block']} threads; "
             f"K loop: {shape['k'] // bk} steps of {bk}; {t['MMA_ATOM']}",
             (f"A and B tiles staged in {smem / 1024:.1f} KiB of shared memory by cp.async, then read by every warp"
              if smem else "each warp loads its own A and B fragments straight from global memory")]
    for i, line in enumerate(notes):
        text(dwg, (80, cy + bm * px + 48 + 22 * i), line, size=13)
    return dwg.tostring()


def wgmma_diagram(step: dict, shape: dict) -> str:
    """One CTA of a Hopper step before warp specialization, from the constants its kernel was
    compiled with: the BM x BN tile of C split over warpgroups with their wgmma atoms, the
    128-byte swizzle of the shared tiles, the ring of STAGES shared buffers and who fills it
    (every thread with cp.async, or one thread with TMA and the full mbarriers), the
    load/wgmma timeline and the grid. Later steps draw their own idea (below)."""
    res = step["best"]["resources"]
    t = res["tile"]
    bm, bn, bk, stages, wgs, group = t["BM"], t["BN"], t["BK"], t["STAGES"], t["WARPGROUPS_M"], t["GROUP_M"]
    am, an, ak = t["atom_mnk"]
    tma = "tma" in res
    w, h = 860, 400
    dwg = drawing(w, h)

    # left: the C tile over warpgroups, A and B panels of one K-step
    px = min(220 / bn, 120 / bm)
    kx = bk * px
    cx, cy = 40 + kx + 12, 40 + kx + 12
    dwg.add(dwg.rect((cx - kx - 12, cy), (kx, bm * px), fill="#dbeafe", stroke=ACCENT))
    dwg.add(dwg.rect((cx, cy - kx - 12), (bn * px, kx), fill="#dbeafe", stroke=ACCENT))
    text(dwg, (cx, cy - kx - 18), f"B {bn}×{bk}", size=11, color=ACCENT)
    text(dwg, (cx - kx - 12, cy + bm * px + 14), f"A {bm}×{bk}", size=11, color=ACCENT)
    for g in range(wgs):
        for j in range(bn // an):
            dwg.add(dwg.rect((cx + j * an * px, cy + g * am * px), (an * px, am * px),
                             fill=PALETTE[g % len(PALETTE)], opacity=0.35, stroke="white", stroke_width=1))
        text(dwg, (cx + 6, cy + (g + 0.5) * am * px + 4), f"warpgroup {g}: {am}×{bn}", size=11)
    text(dwg, (cx, cy + bm * px + 30), f"C {bm}×{bn}: {wgs} warpgroups × {bn // an} wgmma "
          f"{am}×{an}×{ak} per 8 of K", size=11, color=MUTED)

    # middle: the 128-byte swizzle of one 8-row atom (16-byte chunks; chunk c of row r at c xor r)
    sx, sy, cell = 350, 40, 13
    text(dwg, (sx, sy - 8), "shared tile: 128-byte swizzle", size=12, weight="bold")
    for r in range(8):
        for c in range(8):
            dwg.add(dwg.rect((sx + (c ^ r) * cell, sy + r * cell), (cell, cell), fill=PALETTE[c], opacity=0.55,
                             stroke="white", stroke_width=0.5))
    notes = [f"row = {bk} floats of K = 128 B", "chunk c of row r at c ⊕ r:", "a column of 16-byte chunks",
             "spans all 32 banks"]
    for i, line in enumerate(notes):
        text(dwg, (sx, sy + 8 * cell + 16 + 15 * i), line, size=11, color=MUTED)

    # right: the ring of shared stages and who fills it
    rx, ry = 530, 40
    stage_kib = (bm + bn) * bk * 4 / 1024
    text(dwg, (rx, ry - 8), f"{stages} shared stage{'s' if stages > 1 else ''} × {stage_kib:g} KiB", size=12, weight="bold")
    box_w = min(80, (310 - 10 * (stages - 1)) / stages)
    for s_ in range(stages):
        x = rx + s_ * (box_w + 10)
        dwg.add(dwg.rect((x, ry + 40), (box_w, 50), fill="#dbeafe", stroke=ACCENT))
        text(dwg, (x + box_w / 2, ry + 70), f"stage {s_}", size=11, anchor="middle")
        if tma:
            text(dwg, (x + box_w / 2, ry + 106), f"full[{s_}]", size=11, color=PALETTE[2], anchor="middle")
    ring_w = stages * (box_w + 10) - 10
    if tma:
        warps = res["threads_per_block"] // 32
        text(dwg, (rx, ry + 14), "one thread → TMA: one tensor-map copy per tile", size=11)
        flow = ["TMA lands the bytes → full[s] completes", "warpgroups wait full[s], issue wgmma",
                "each warp done reading → counts itself on stage s",
                f"the {warps}th to count refills stage s: no one waits"]
    else:
        text(dwg, (rx, ry + 14), f"all {res['threads_per_block']} threads: cp.async, 16 B each", size=11)
        flow = ["cp.async → wait → barrier", "warpgroups issue wgmma on the stage",
                "wait for the wgmmas → barrier → refill" if stages > 1 else "wait for the wgmmas → barrier → next load"]
    arrow(dwg, (rx + ring_w / 2, ry + 20), (rx + ring_w / 2, ry + 38), color=ACCENT)
    for i, line in enumerate(flow):
        text(dwg, (rx, ry + 134 + 15 * i), f"{i + 1}. {line}", size=11, color=MUTED)

    # bottom: timeline of K-tiles, loads running STAGES-1 ahead of the wgmmas
    ty, unit, n = 262, 62, 7
    lead = stages - 1
    text(dwg, (40, ty - 10), "K-loop timeline", size=12, weight="bold")
    for row, label in enumerate(("load", "wgmma")):
        text(dwg, (40, ty + 17 + row * 26), label, size=11)
    slot = unit if lead else unit / 2                      # one stage: load and multiply take turns
    for k in range(n):
        load_at, mma_at = (k, k + lead) if lead else (2 * k, 2 * k + 1)
        for at, y, color in ((load_at, ty + 4, ACCENT), (mma_at, ty + 30, PALETTE[2])):
            x = 100 + at * slot
            if x + slot < w - 20:
                dwg.add(dwg.rect((x, y), (slot - 4, 20), fill=color, opacity=0.3))
                text(dwg, (x + slot / 2 - 2, y + 15), f"k{k}", size=11, anchor="middle")
    tiles = (shape["m"] // bm) * (shape["n"] // bn)
    order = (f"bands of {group} tile rows, walked along N (CTA swizzle)" if group
             else "down M first, then along N")
    notes = [f"grid: {tiles:,} CTAs of {res['threads_per_block']} threads; tile order: {order}",
             f"K loop: {shape['k'] // bk:,} steps of {bk}; "
             f"{(res['smem_static_bytes'] + res['smem_dynamic_bytes']) / 1024:.1f} KiB of shared memory; {t['MMA_ATOM']}"]
    for i, line in enumerate(notes):
        text(dwg, (40, ty + 86 + 20 * i), line, size=12)
    return dwg.tostring()


W, H = 860, 400
LOAD, MMA = ACCENT, PALETTE[2]          # a TMA load, a wgmma: the same colours in every figure


def _box(dwg, x, y, w, h, fill, label="", size=11, color=INK, opacity=0.35, **kw):
    dwg.add(dwg.rect((x, y), (w, h), fill=fill, fill_opacity=opacity, stroke=fill, stroke_width=1, **kw))
    if label:
        text(dwg, (x + w / 2, y + h / 2 + size * 0.35), label, size=size, color=color, anchor="middle")


def _caption(dwg, lines: list[str], y: float = H - 14 - 20 * 2):
    for i, line in enumerate(lines):
        text(dwg, (30, y + 20 * i), line, size=12, color=INK if i == 0 else MUTED)


def producer_ring(step: dict, shape: dict) -> str:
    """The CTA's warpgroups by role, and the ring of STAGES shared stages over time: the producer's
    TMA loads run STAGES ahead of the consumers' wgmmas, each stage handed over by its full barrier
    and handed back by its empty one."""
    res = step["best"]["resources"]
    t = res["tile"]
    stages, producers, consumers = t["STAGES"], t["PRODUCER_WARPGROUPS"], t["WARPGROUPS_M"]
    kib = (t["BM"] + t["BN"]) * t["BK"] * 4 / 1024
    dwg = drawing(W, H)
    text(dwg, (30, 26), f"One CTA, {res['threads_per_block']} threads: "
         f"{producers} producer and {consumers} consumer warpgroups", size=14, weight="bold")
    roles = [(f"warpgroup {g}: producer", "one thread issues every TMA load", LOAD) for g in range(producers)]
    roles += [(f"warpgroup {producers + g}: consumer", f"wgmma on {t['BM'] // consumers}×{t['BN']} of C", MMA)
              for g in range(consumers)]
    for i, (name, job, color) in enumerate(roles):
        y = 44 + 44 * i
        _box(dwg, 30, y, 250, 36, color)
        text(dwg, (40, y + 15), name, size=12, weight="bold")
        text(dwg, (40, y + 30), job, size=11, color=MUTED)
    # the ring: stage s, its full and empty barriers
    rx = 330
    text(dwg, (rx, 56), f"{stages} stages × {kib:g} KiB of shared memory, a ring", size=12, weight="bold")
    sw = min(110, (W - 30 - rx - 8 * (stages - 1)) / stages)
    for s in range(stages):
        x = rx + s * (sw + 8)
        _box(dwg, x, 68, sw, 40, PALETTE[4 + s % 6], f"stage {s}", opacity=0.25)
        text(dwg, (x + sw / 2, 124), f"full[{s}] empty[{s}]", size=11, color=MUTED, anchor="middle")
    text(dwg, (rx, 152), "full[s]: the TMA bytes landed → consumers may read stage s", size=11, color=MUTED)
    text(dwg, (rx, 168), "empty[s]: every consumer warp done → the producer may refill it", size=11, color=MUTED)

    # over time: load k fills stage k mod STAGES once the wgmma of k - STAGES has released it
    top, row_h, gap, u = 212, 34, 24, 50
    load_t, mma_t = 0.6, 1.5                      # compute-bound: a K-tile's wgmma outlasts its load
    loads, mmas = [], []
    for k in range(14):
        start = max(k * load_t, mmas[k - stages][1] if k >= stages else 0.0)
        loads.append((start, start + load_t))
        begin = max(loads[k][1], mmas[k - 1][1] if k else 0.0)
        mmas.append((begin, begin + mma_t))
    text(dwg, (30, top - 12), "Over time (one K-tile a box, coloured by its stage)", size=12, weight="bold")
    x0 = 150
    for row, (label, spans) in enumerate((("producer: TMA", loads), ("consumers: wgmma", mmas))):
        y = top + row * (row_h + gap)
        text(dwg, (30, y + 22), label, size=12)
        for k, (a, b) in enumerate(spans):
            x, w = x0 + a * u, (b - a) * u - 3
            if x + w > W - 20:
                break
            _box(dwg, x, y, w, row_h, PALETTE[4 + (k % stages) % 6], f"k{k}", opacity=0.3)
    # the first refill that waits for its stage's release
    k = next((k for k in range(stages, len(loads)) if loads[k][0] > k * load_t), None)
    if k is not None:
        release = x0 + mmas[k - stages][1] * u
        arrow(dwg, (release - 2, top + row_h + gap), (x0 + loads[k][0] * u + 3, top + row_h + 1), color=REF, width=1.2)
        text(dwg, (release + 8, top + row_h + gap - 7), f"empty[{k % stages}] → k{k} refills stage {k % stages}",
             size=11, color=REF)
    _caption(dwg, [f"The producer runs up to {stages} K-tiles ahead; the consumers never wait for a load they "
                   f"could have had.",
                   "setmaxnreg moves registers from the producer to the consumers, which hold the accumulators."])
    return dwg.tostring()


def multicast(step: dict, shape: dict) -> str:
    """Two CTAs of a cluster on vertically adjacent tiles of C: each loads its own A and one slice of
    their common B tile, and multicasts the slice into both CTAs' shared memory."""
    res = step["best"]["resources"]
    t = res["tile"]
    n, bm, bn, bk = t["CLUSTER_M"], t["BM"], t["BN"], t["BK"]
    slice_rows = res["tma"]["b"]["box"][1] if "tma" in res else bn // n
    dwg = drawing(W, H)
    text(dwg, (30, 26), f"A cluster of {n} CTAs on {n} tiles of C one above the other: one B tile between them",
         size=14, weight="bold")
    px = min(1.1, 215 / (n * bm))                 # C to scale
    cw, ch, kx = bn * px, bm * px, 46
    cx, cy = 200, 120
    # B above, in n slices, each loaded by one CTA and multicast to all
    for i in range(n):
        x = cx + i * cw / n
        _box(dwg, x, cy - kx - 26, cw / n - 2, kx, PALETTE[4 + i], f"B slice {i}: {bk}×{slice_rows}", opacity=0.3)
    text(dwg, (cx + cw + 12, cy - 46), f"B: {bk}×{bn} per K-step", size=12, color=MUTED)
    for r in range(n):
        y = cy + r * (ch + 10)
        _box(dwg, cx, y, cw, ch, GROUP, "", opacity=0.4)
        text(dwg, (cx + cw / 2, y + ch / 2 - 4), f"CTA {r}: C tile {bm}×{bn}", size=12, anchor="middle")
        text(dwg, (cx + cw / 2, y + ch / 2 + 12), f"its own A {bm}×{bk}", size=11, color=MUTED, anchor="middle")
        _box(dwg, cx - kx - 14, y, kx, ch, ACCENT, f"A{r}", opacity=0.25)
        for i in range(n):                          # every slice lands in every CTA
            sx = cx + (i + 0.5) * cw / n
            arrow(dwg, (sx, cy - 24), (sx + (r - (n - 1) / 2) * 14, y + 8), color=PALETTE[4 + i], width=1.4)
    # what it saves: bytes each CTA pulls through L2 per K-step
    a_kib, b_kib = bm * bk * 4 / 1024, bn * bk * 4 / 1024
    alone, shared = a_kib + b_kib, a_kib + b_kib / n
    lx = cx + cw + 40
    text(dwg, (lx, 130), "Per CTA and K-step, from L2:", size=12, weight="bold")
    text(dwg, (lx, 152), f"alone: A {a_kib:g} KiB + B {b_kib:g} KiB = {alone:g} KiB", size=12)
    text(dwg, (lx, 172), f"in the cluster: A {a_kib:g} + B {b_kib / n:g} = {shared:g} KiB", size=12)
    text(dwg, (lx, 196), f"{100 * (1 - shared / alone):.0f}% fewer bytes for the same work", size=12, color=ACCENT)
    text(dwg, (lx, 226), "A slice leaves L2 once, into both CTAs:", size=11, color=MUTED)
    text(dwg, (lx, 242), "each CTA's full barrier counts both halves,", size=11, color=MUTED)
    text(dwg, (lx, 258), "and a stage is refilled only when the", size=11, color=MUTED)
    text(dwg, (lx, 274), "consumers of every CTA released it.", size=11, color=MUTED)
    _caption(dwg, [f"{res['tma']['b']['box'][1] if 'tma' in res else bn // n} rows of B per CTA's TMA box: "
                   f"1/{n} of the tile, multicast to the {n} CTAs of the cluster."], y=H - 22)
    return dwg.tostring()


def _schedule_axes(dwg, top, height, x0, x1, waves, label):
    text(dwg, (x0, top + height + 20), label, size=12, color=MUTED)
    for wave in range(math.ceil(waves) + 1):
        x = x0 + (x1 - x0) * wave / math.ceil(waves)
        dwg.add(dwg.line((x, top - 4), (x, top + height + 4), stroke=GROUP, stroke_width=1))
        text(dwg, (x, top - 8), str(wave), size=11, color=MUTED, anchor="middle")


def tile_schedule(step: dict, shape: dict) -> str:
    """The persistent schedule: as many CTAs as fit, one row each, walking the output tiles (tile
    i, i + grid, ...) until none is left; the last wave leaves SMs idle."""
    res = step["best"]["resources"]
    t = res["tile"]
    ctas = res.get("resident_ctas") or res["grid"][0]
    tiles = (shape["m"] // t["BM"]) * (shape["n"] // t["BN"])
    waves = tiles / ctas
    full = math.ceil(waves)
    dwg = drawing(W, H)
    pairs = t.get("CLUSTER_M", 1)
    text(dwg, (30, 26), f"{ctas} CTAs, one per SM, walk the {tiles:,} tiles of {t['BM']}×{t['BN']}, {ctas} at a time"
         + (f", in clusters of {pairs}" if pairs > 1 else ""), size=14, weight="bold")
    top, x0, x1 = 60, 80, 610
    row = min(2.0, 250 / ctas)
    height = row * ctas
    _schedule_axes(dwg, top, height, x0, x1, waves, "time, in tiles")
    unit = (x1 - x0) / full
    for cta in range(ctas):
        count = len(range(cta, tiles, ctas))
        y = top + cta * row
        for j in range(count):
            dwg.add(dwg.rect((x0 + j * unit, y), (unit - 1, max(row - 0.4, 0.6)), fill=PALETTE[j % 2 * 2 + 0],
                             fill_opacity=0.55))
        if count < full:
            dwg.add(dwg.rect((x0 + count * unit, y), (unit - 1, max(row - 0.4, 0.6)), fill=MISSING, fill_opacity=0.25))
    text(dwg, (x0 - 8, top + 10), "CTA 0", size=11, anchor="end", color=MUTED)
    text(dwg, (x0 - 8, top + height), f"CTA {ctas - 1}", size=11, anchor="end", color=MUTED)
    last = tiles - (full - 1) * ctas
    lx = 630
    text(dwg, (lx, 80), f"{tiles:,} ÷ {ctas} = {waves:.2f} waves", size=13, weight="bold")
    text(dwg, (lx, 102), f"the last runs {last} of {ctas} CTAs:", size=12)
    text(dwg, (lx, 120), f"{100 * (1 - waves / full):.1f}% of SM time idle", size=12, color=REF)
    # the overlap at a tile boundary: the producer starts tile t + 1 during tile t's epilogue
    iy = 170
    text(dwg, (lx, iy), "At each tile boundary:", size=12, weight="bold")
    _box(dwg, lx, iy + 12, 110, 24, MMA, "wgmma, tile t", opacity=0.3)
    _box(dwg, lx + 112, iy + 12, 80, 24, PALETTE[3], "epilogue t", opacity=0.35)
    _box(dwg, lx + 60, iy + 42, 150, 24, LOAD, "TMA loads, tile t + 1", opacity=0.3)
    text(dwg, (lx, iy + 88), "the producer fills the ring for", size=11, color=MUTED)
    text(dwg, (lx, iy + 104), "the next tile while the consumers", size=11, color=MUTED)
    text(dwg, (lx, iy + 120), "store this one", size=11, color=MUTED)
    _caption(dwg, ["One launch: no tail of CTAs starting and ending, and each CTA's shared memory and barriers "
                   "set up once."], y=H - 22)
    return dwg.tostring()


def split_tail(step: dict, shape: dict) -> str:
    """The last wave split along K: the clusters with a tile pair left compute its first K-tiles,
    the clusters that would idle compute the rest in a few rounds and leave partial sums."""
    res = step["best"]["resources"]
    plan = res.get("split_wave")
    t = res["tile"]
    dwg = drawing(W, H)
    if not plan or not plan["left"]:
        text(dwg, (30, 40), "No last wave to split: the tile pairs fill whole waves at this shape.", size=14)
        return dwg.tostring()
    clusters, k, split = plan["clusters"], plan["k_tiles"], plan["split"]
    owner_part, helper_part = split / k, plan["rounds"] * (k - split) / k
    text(dwg, (30, 26), f"{plan['units']} tile pairs on {clusters} clusters: {plan['full_waves']} full waves, "
         f"then {plan['left']} pairs split at K-tile {split} of {k}", size=14, weight="bold")
    top, x0, x1 = 64, 80, 600
    row = min(3.6, 250 / clusters)
    height = row * clusters
    span = plan["full_waves"] + 1                   # in pair-times: the unsplit last wave ends here
    unit = (x1 - x0) / span
    _schedule_axes(dwg, top, height, x0, x1, span, "time, in tile pairs (each a cluster's work on one pair)")
    h = max(row - 0.5, 0.8)
    for c in range(clusters):
        y = top + c * row
        for j in range(plan["full_waves"]):
            dwg.add(dwg.rect((x0 + j * unit, y), (unit - 1, h), fill=PALETTE[j % 2 * 2], fill_opacity=0.45))
        x = x0 + plan["full_waves"] * unit
        if c < plan["left"]:                        # an owner: K-tiles [0, split) of its pair
            dwg.add(dwg.rect((x, y), (unit - 1, h), fill=MISSING, fill_opacity=0.3))
            dwg.add(dwg.rect((x, y), (owner_part * unit, h), fill=PALETTE[4], fill_opacity=0.7))
        else:                                       # a helper: the tails, one round after another
            dwg.add(dwg.rect((x, y), (helper_part * unit, h), fill=PALETTE[1], fill_opacity=0.55))
    lx = 620
    text(dwg, (lx, 76), "The last wave", size=13, weight="bold")
    legend = [(PALETTE[4], f"{plan['left']} owners: K-tiles 0–{split - 1}"),
              (PALETTE[1], f"{plan['helpers']} helpers: K-tiles {split}–{k - 1}"),
              (None, f"of up to {plan['rounds']} pairs each, in turn"),
              (MISSING, "unsplit: one whole pair")]
    for i, (color, line) in enumerate(legend):
        y = 98 + 20 * i
        if color:
            dwg.add(dwg.rect((lx, y - 10), (12, 12), fill=color, fill_opacity=0.7 if color != MISSING else 0.25))
        text(dwg, (lx + 18, y), line, size=11, color=INK if color else MUTED)
    tiles = plan["units"] * t.get("CLUSTER_M", 1)
    text(dwg, (lx, 200), f"last wave: {max(owner_part, helper_part):.2f} of a pair's time", size=12)
    text(dwg, (lx, 218), "instead of 1.00", size=12, color=MUTED)
    text(dwg, (lx, 246), "Owners add the helpers' partial", size=11, color=MUTED)
    text(dwg, (lx, 262), "sums, from global memory, before", size=11, color=MUTED)
    text(dwg, (lx, 278), f"storing C ({tiles:,} tiles in all).", size=11, color=MUTED)
    _caption(dwg, ["The split point balances an owner's part against a helper's run of tails."], y=H - 22)
    return dwg.tostring()


def staged_store(step: dict, shape: dict) -> str:
    """One consumer warpgroup's epilogue: its accumulators leave in chunks of EPILOGUE_N columns, each
    written to one of EPILOGUE_BUFFERS shared buffers and stored by TMA while the next is written;
    the warpgroup is back at wgmma for the next tile as soon as its last chunk is in shared memory."""
    res = step["best"]["resources"]
    t = res["tile"]
    rows, bn, cn, buffers = t["BM"] // t["WARPGROUPS_M"], t["BN"], t["EPILOGUE_N"], t["EPILOGUE_BUFFERS"]
    chunks = bn // cn
    dwg = drawing(W, H)
    text(dwg, (30, 26), f"The epilogue of one consumer warpgroup: {rows}×{bn} accumulators leave in {chunks} "
         f"chunks of {rows}×{cn}", size=14, weight="bold")
    # the accumulator slice, cut into chunks, each coloured by the buffer it passes through
    cw = min(600 / chunks, 70)
    for j in range(chunks):
        _box(dwg, 30 + j * cw, 44, cw - 2, 40, PALETTE[4 + j % buffers], f"{j}", opacity=0.35)
    text(dwg, (30 + chunks * cw + 12, 60), f"{rows}×{bn} in registers", size=12)
    text(dwg, (30 + chunks * cw + 12, 78), f"{buffers} staging buffers, in turn", size=11, color=MUTED)
    # over time: write chunk j to buffer j mod B (registers → shared), TMA-store it while j + 1 is written;
    # buffer b is written again once the store that last read it is done
    top, x0 = 120, 170
    write_t, store_t, mma_t = 1.0, 1.6, 3.0
    scale = 34
    writes, stores = [], []
    for j in range(chunks):
        start = max(writes[-1][1] if writes else mma_t, stores[j - buffers][1] if j >= buffers else 0.0)
        writes.append((start, start + write_t))
        stores.append((start + write_t, start + write_t + store_t))
    next_mma = writes[-1][1]
    text(dwg, (30, top + 20), "warpgroup", size=12)
    for b in range(buffers):                        # stores in flight at once: one lane per buffer
        text(dwg, (30, top + 60 + 32 * b), f"TMA store, buffer {b}", size=12)
    _box(dwg, x0, top, mma_t * scale - 2, 28, MMA, "wgmma, tile t", opacity=0.3)
    for j, ((a, b), (c, d)) in enumerate(zip(writes, stores)):
        color = PALETTE[4 + j % buffers]
        _box(dwg, x0 + a * scale, top, (b - a) * scale - 2, 28, color, f"{j}", opacity=0.35)
        _box(dwg, x0 + c * scale, top + 40 + 32 * (j % buffers), (d - c) * scale - 2, 26, color, f"{j}", opacity=0.2)
    end = x0 + next_mma * scale
    if end + 160 < W:
        _box(dwg, end, top, 150, 28, MMA, "wgmma, tile t + 1", opacity=0.3)
    notes_y = top + 40 + 32 * buffers + 24
    text(dwg, (x0, notes_y), "registers → shared buffer, a fence, then one thread issues the chunk's TMA store",
         size=11, color=MUTED)
    text(dwg, (x0, notes_y + 18), f"a chunk reuses its buffer once the store of the chunk {buffers} before has "
         "read it", size=11, color=MUTED)
    staging = t["BM"] * cn * 4 * buffers / 1024
    _caption(dwg, [f"The last stores drain while the next tile's wgmmas run: {staging:g} KiB of shared memory "
                   f"buys the overlap.",
                   "Registers to global memory directly would hold the warpgroup until every store is issued."])
    return dwg.tostring()


DIAGRAMS = {"naive": naive_diagram, "cute": cute_diagram, "wgmma": wgmma_diagram,
            "producer_ring": producer_ring, "multicast": multicast, "tile_schedule": tile_schedule,
            "split_tail": split_tail, "staged_store": staged_store}
