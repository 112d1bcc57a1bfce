"""The SM architecture slide: the chip's SMs, their sub-partitions and per-SM resources, L2 and HBM,
and what the architecture adds."""
from __future__ import annotations

from dataclasses import dataclass

from slides.kit import ACCENT, MUTED, drawing, text
from slides.records import Context
import slides.device
import slides.hbm


@dataclass(frozen=True)
class Architecture(Context):
    """The SM as the slide and its figure describe it beyond what the device reports: each
    sub-partition's FP32 lanes (None where the architecture's rates are not known), and whether it
    is Hopper, whose wgmma, TMA and clusters the GEMM's later steps are built with."""
    lanes_per_subpartition: int | None
    hopper: bool
    hopper_said: str        # the notes' sentence on what Hopper adds ("" on another architecture)


def context(deck) -> Architecture:
    device = deck.of(slides.device)
    lanes = device.fp32_lanes_per_sm
    hopper = device.arch == "Hopper"
    return Architecture(lanes_per_subpartition=lanes and lanes // device.subpartitions, hopper=hopper,
                        hopper_said="Hopper's wgmma, TMA and clusters are what the Hopper steps of the GEMM are built with."
                        if hopper else "")


# --- figures --------------------------------------------------------------------------------------

SM_FIGURE_WIDTH = 460      # the architecture slide shows it at this width (w-115): drawn 1:1, its text is its size


def sm_hierarchy(own: Architecture, device: dict, hbm: slides.hbm.Hbm) -> str:
    """The GPU as the results describe it: SMs with their sub-partitions, L2, HBM."""
    w, h, pad = SM_FIGURE_WIDTH, 296, 8
    dwg = drawing(w, h)
    n = device.sm_count
    text(dwg, (w / 2, 18), f"{device.name}: {n} SMs ({device.arch}, {device.sm_name})",
          size=13, anchor="middle", weight="bold")
    slots, gap, y0, sub_h = 5, 6, 30, 40          # SM 0, 1, 2, …, the last SM
    box_w = (w - 2 * pad - (slots - 1) * gap) / slots
    sub_w = (box_w - 12) / 2
    for i in range(slots):
        x = pad + i * (box_w + gap)
        if i == slots - 2:
            text(dwg, (x + box_w / 2, y0 + 62), "…", size=24, color=MUTED, anchor="middle")
            continue
        dwg.add(dwg.rect((x, y0), (box_w, 24 + 2 * sub_h + 8), rx=5, fill="#eff6ff", stroke=ACCENT, stroke_width=1.5))
        text(dwg, (x + box_w / 2, y0 + 16), f"SM {n - 1 if i == slots - 1 else i}", size=12, anchor="middle", weight="bold")
        for sp in range(device.subpartitions):
            sx, sy = x + 4 + (sp % 2) * (sub_w + 4), y0 + 22 + (sp // 2) * (sub_h + 4)
            dwg.add(dwg.rect((sx, sy), (sub_w, sub_h), rx=3, fill="white", stroke=MUTED))
            text(dwg, (sx + sub_w / 2, sy + 16), "sched", size=10, color=MUTED, anchor="middle")
            text(dwg, (sx + sub_w / 2, sy + 32), "TC", size=10, color=ACCENT, anchor="middle")
    lanes = own.lanes_per_subpartition
    notes = ["each sub-partition: a scheduler" + (f", {lanes} FP32 lanes" if lanes else "") + " and tensor cores (TC)",
             f"per SM: {device.regs_per_sm // 1024}K registers, {device.max_threads_per_sm:,} threads, "
             f"{device.smem_per_sm_bytes // 1024} KiB shared memory",
             f"(carved from L1; up to {device.smem_per_block_optin_bytes // 1024} KiB of it for one block)"]
    for k, line in enumerate(notes):
        text(dwg, (pad, y0 + 134 + 14 * k), line, size=11, color=MUTED)
    l2_y = 206
    dwg.add(dwg.rect((pad, l2_y), (w - 2 * pad, 32), rx=5, fill="#fef3c7", stroke="#d97706"))
    text(dwg, (w / 2, l2_y + 21), f"L2 cache: {device.l2_bytes / 2**20:,.0f} MiB", size=13,
          anchor="middle", weight="bold")
    hbm_y = 246
    dwg.add(dwg.rect((pad, hbm_y), (w - 2 * pad, 44), rx=5, fill="#ecfdf5", stroke="#059669"))
    bw = f"{device.hbm_peak_gbps:,.0f} GB/s theoretical"
    if hbm.rows:
        bw += f", {hbm.best['gbps']:,.0f} GB/s copy measured"
    text(dwg, (w / 2, hbm_y + 18), f"HBM: {device.memory_bytes / 2**30:,.0f} GiB", size=13,
          anchor="middle", weight="bold")
    text(dwg, (w / 2, hbm_y + 35), bw, size=11, anchor="middle", color=MUTED)
    return dwg.tostring()


def draw(own: Architecture, deck) -> dict[str, str]:
    return {"sm_hierarchy.svg": sm_hierarchy(own, deck.of(slides.device), deck.of(slides.hbm))}
