"""The backup divider: what the backup slides after it hold, in their order, and what this GPU's
results leave out, in one line, and how to measure it."""
from __future__ import annotations

from dataclasses import dataclass

from slides.l2 import PLACE_ID
from slides.l2_map import MAP_ID
from slides.records import Context
import slides.atlas
import slides.clusters
import slides.compare
import slides.counters
import slides.fp8
import slides.gemm
import slides.gpu_benches
import slides.l2
import slides.machinery
import slides.multigpu
import slides.overlap
import slides.tma


# The machinery measured alone: its section, the context key that holds it, and what it is.
MACHINERY = ((slides.machinery, "wgmma", "wgmma"), (slides.clusters, "clusters", "clusters"), (slides.tma, "tma", "TMA"))


@dataclass(frozen=True)
class Backup(Context):
    """The backup divider: what the slides after it hold, each section this GPU's results lack (what it
    shows and its benchmark ids), and what measures them."""
    gaps: list[dict]
    contents: list[str]     # the parts that follow the divider, where their slides are shown
    only: list[str]         # the families and ids python -m bench --only measures the gaps with
    only_said: str          # the notes' sentence on that command ("": no gap it measures)
    from_node_said: str     # the notes' sentence where a gap is filled from a node's results file, not this GPU's run


def context(deck) -> Backup:
    """Each section without its results: what it shows, its benchmark ids, and what to run for it
    (a family or an id for --only; None: it comes from a node's results file, not this GPU's run)."""
    gaps = []
    if not deck.of(slides.multigpu).measured:
        gaps.append(("the multi-GPU sections", [*deck.of(slides.multigpu).ids, deck.of(slides.overlap).id], None))
    if not deck.of(slides.fp8).measured:
        gaps.append(("the FP8 track", deck.of(slides.fp8).ids, "gemm"))
    for section, key, what in MACHINERY:
        if not getattr(deck.of(section), key):
            gaps.append((f"{what} alone", [deck.of(section).id], "machinery"))
    if not deck.of(slides.l2).partitions:
        gaps.append(("L2's two halves", [MAP_ID], "l2"))
    if not deck.of(slides.l2).placed:
        gaps.append(("L2's placement and working set", [PLACE_ID], "l2"))
    if not deck.of(slides.gpu_benches).peer:
        gaps.append(("gpu-benches beside the memory slides", [deck.of(slides.gpu_benches).id], deck.of(slides.gpu_benches).id))
    atlases = deck.of(slides.atlas)
    absent = [a for a in atlases.maps.values() if not a["rows"]]
    if absent:      # an atlas without figures has no slide
        gaps.append(("the shape atlas" if not atlases.measured else
                     "the shape atlas in " + ", ".join(a["precision"] for a in absent),
                     [a["result"]["id"] for a in absent], "atlas"))
    only = sorted({only for _, _, only in gaps if only})
    return Backup(gaps=[gap(what, ids) for what, ids, _ in gaps], contents=contents(deck), only=only,
                  only_said=f"What is not measured here, python -m bench measures on a Hopper GPU: --only {' '.join(only)}, "
                            "then python build.py." if only else "",
                  from_node_said="The multi-GPU sections come from a node's results file beside this GPU's."
                                 if any(only is None for _, _, only in gaps) else "")


def gap(what: str, ids: list[str]) -> dict:
    """What the results leave out, with the ids of its records, as the divider's line names it."""
    return {"what": what, "ids": ids, "said": f"{what} ({', '.join(ids)})"}


OTHERS_NAMED = 3     # slides past the gaps named one by one; of more, a count and the first results


def others(gaps: list[dict], missing: dict[str, list[str]]) -> list[dict]:
    """The slides whose results are missing past the ``gaps`` named above (a peer skipped, one
    kernel failed to build), known once every section is computed: each slide and its ids, or, past
    OTHERS_NAMED slides (a GPU below Hopper lacks every Hopper step's three), how many slides and results."""
    named = {bid for gap in gaps for bid in gap["ids"]}
    rest = {slide: list(dict.fromkeys(b for b in ids if b not in named)) for slide, ids in missing.items()
            if not set(ids) <= named}
    if len(rest) <= OTHERS_NAMED:
        return [gap(slide, ids) for slide, ids in rest.items()]
    ids = list(dict.fromkeys(b for slide_ids in rest.values() for b in slide_ids))
    shown = ids[:OTHERS_NAMED]
    return [gap(f"{len(rest)} more slides, {len(ids)} results",
                [*shown, *([f"and {len(ids) - len(shown)} more"] if len(ids) > len(shown) else [])])]


def contents(deck) -> list[str]:
    """What follows the divider, in the outline's order, each part only where its slides are shown."""
    memory = "the memory hierarchy" + (" beside gpu-benches" if deck.of(slides.gpu_benches).peer else "")
    parts = [f"Micro-benchmarks: instruction latency, {memory}, matrix transpose"]
    alone = [what for section, key, what in MACHINERY if getattr(deck.of(section), key)]
    if alone:
        parts.append(f"{_series(alone)} alone, every figure")
    if deck.of(slides.compare):
        parts.append("the other GPUs side by side")
    counters = deck.of(slides.counters)
    if counters.rows:
        parts.append("the GEMM kernels' resources" + (" and counters" if counters.metrics else ""))
    if any(step.code and step.code["pages"] for step in deck.of(slides.gemm).steps):
        parts.append("each long kernel's code in full")
    return parts


def _series(words: list[str]) -> str:
    """Words as a series: a; a and b; a, b and c."""
    return " and ".join(filter(None, [", ".join(words[:-1]), words[-1]]))
