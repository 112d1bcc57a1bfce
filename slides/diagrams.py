"""Each GEMM step's diagram, drawn from the constants its measured kernel was compiled with (its
resources in the results), never from numbers written here: the naive launch, a CuTe CTA's warps
and MMA atoms, a Hopper CTA's warpgroups, swizzle and stage ring; the steps past the reference
deck draw their own idea (slides/step_diagrams.py). Every figure is drawn at the width the slide
shows it, its text 11 px and up. The step catalogue names each step's kind (Step.diagram)."""
from __future__ import annotations

import math

from slides import step_diagrams
from slides.kit import ACCENT, MUTED, PALETTE, arrow, drawing, text


def naive_diagram(step, shape: dict) -> str:
    """One thread block of the naive kernel: its tile of C, and the rows of A and
    columns of B that each of its threads reads whole. K is drawn short."""
    bx, by = step.block
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


def cute_diagram(step, shape: dict) -> str:
    """One CTA of a CuTe step, from the constants its kernel was compiled with: the
    BM x BN tile of C split over the warps, one warp's MMA atoms, the BM x BK and
    BN x BK panels of A and B per K-step, and (with shared memory) where they are staged."""
    res = step.best["resources"]
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
    notes = [f"grid: {res['grid'][0]} × {res['grid'][1]} CTAs of {res['threads_per_block']} threads; "
             f"K loop: {-(-shape['k'] // bk)} steps of {bk}; {t['MMA_ATOM']}",
             (f"A and B tiles staged in {smem / 1024:.1f} KiB of shared memory by cp.async, then read by every warp"
              if smem else "each warp loads its own A and B fragments straight from global memory")]
    for i, line in enumerate(notes):
        text(dwg, (80, cy + bm * px + 48 + 22 * i), line, size=13)
    return dwg.tostring()


def wgmma_diagram(step, shape: dict) -> str:
    """One CTA of a Hopper step before warp specialization, from the constants its kernel was
    compiled with: the BM x BN tile of C split over warpgroups with their wgmma atoms, the
    128-byte swizzle of the shared tiles, the ring of STAGES shared buffers and who fills it
    (every thread with cp.async, or one thread with TMA and the full mbarriers), the
    load/wgmma timeline and the grid. Later steps draw their own idea (below)."""
    res = step.best["resources"]
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
    text(dwg, (sx, sy - 8), "128-byte swizzle", size=12, weight="bold")
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
    tiles = math.prod(res["grid"])          # a CTA a tile, as the run launched it
    order = (f"bands of {group} tile rows, walked along N (CTA swizzle)" if group
             else "down M first, then along N")
    notes = [f"grid: {tiles:,} CTAs of {res['threads_per_block']} threads; tile order: {order}",
             f"K loop: {-(-shape['k'] // bk):,} steps of {bk}; "
             f"{(res['smem_static_bytes'] + res['smem_dynamic_bytes']) / 1024:.1f} KiB of shared memory; wgmma {am}×{an}×{ak}"]
    for i, line in enumerate(notes):
        text(dwg, (40, ty + 86 + 20 * i), line, size=12)
    return dwg.tostring()


# The steps past the reference deck draw one idea each (slides/step_diagrams.py).
DIAGRAMS = {"naive": naive_diagram, "cute": cute_diagram, "wgmma": wgmma_diagram, **step_diagrams.IDEAS}
