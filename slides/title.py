"""The title slide: the talk's thesis in the words the headline kernel's numbers call for (slides/gemm.py)."""
from __future__ import annotations

from dataclasses import dataclass

from slides.records import Context
import slides.device
import slides.gemm


@dataclass(frozen=True)
class Title(Context):
    """The thesis's words where the headline kernel stands against cuBLAS (gemm's headline; all empty
    without one): where it stands, what set its pace, and the clock it ran at."""
    standing: str = ""      # "comes within 1.2% of", "is ahead of", "is at 98.8% of"
    against: str = ""       # cuBLAS, at the reference shape where the records give it
    pace: str = ""          # what held the clock: the power cap, or the clock itself
    clock: str = ""         # the slide's ", its SMs at 1,382 of 1,980 MHz"
    clock_note: str = ""    # the notes' ": 1,382 MHz measured, held there by the power cap"


def context(deck) -> Title:
    gemm = deck.of(slides.gemm)
    headline = gemm.headline
    if not headline:
        return Title()
    to = headline["to"]
    shape = gemm.shape
    return Title(standing=standing(headline["standing"], to["pct_cublas"]),
                 against=f"cuBLAS at {shape['m']}×{shape['n']}×{shape['k']}" if shape else "cuBLAS",
                 pace="the power cap" if headline["power_capped"] else "the clock it holds",
                 clock=f", its SMs at {to['clock_mhz']:,.0f} of {deck.of(slides.device).sm_clock_max_mhz:,.0f} MHz"
                 if to["clock_mhz"] else "",
                 clock_note=clock_note(to, headline["power_capped"]))


def standing(side: str | None, pct_cublas: float) -> str:
    """The thesis's verb: how close behind cuBLAS, or where beside it (gemm.standing's side)."""
    if side == "behind":
        return f"comes within {100 - pct_cublas:,.1f}% of"
    return f"is {side or f'at {pct_cublas:,.1f}% of'}"


def clock_note(to: dict, power_capped: bool) -> str:
    """The clock the headline and cuBLAS shared in their turns, and whether the power cap held it there."""
    how = "measured" if to["clock_measured"] else "NVML's median"
    clock = f": {to['clock_mhz']:,.0f} MHz {how}" if to["clock_mhz"] else ""
    return clock + (", held there by the power cap" if power_capped else "")
