"""Each GEMM step's best kernel as it ran: its launch resources, its main loop in SASS and its Nsight
Compute counters, in one backup table (the performance slides' notes leave them out)."""
from __future__ import annotations

from dataclasses import dataclass

from slides.records import Context
import slides.gemm


@dataclass(frozen=True)
class Counters(Context):
    """The backup tables of each step's best kernel (a kernel with neither resources nor a profile
    has no row): threads, registers, shared memory and main loop, then its Nsight Compute counters."""
    rows: list[dict]
    metrics: list[str]     # the counters' names, in the order first profiled: the counters table's columns
    moved: bool            # a kernel moves registers between warpgroups after launch: the table's footnote


def context(deck) -> Counters:
    bests = [(s.index, s.title, s.best) for s in deck.of(slides.gemm).steps
             if s.best["resources"] or s.best["profile"]]
    metrics = list(dict.fromkeys(q["name"] for _, _, v in bests for q in v["profile"] or []))
    rows = [row(index, title, v, metrics) for index, title, v in bests]
    return Counters(rows=rows, metrics=metrics, moved=any(r["moved"] for r in rows))


def row(index: int, title: str, v: dict, metrics: list[str]) -> dict:
    """A step's best kernel as the tables show it; None where the run did not record a figure."""
    res = v["resources"] or {}
    # a producer warpgroup: setmaxnreg moves registers from it to the consumers after launch
    moved = bool((res.get("tile") or {}).get("PRODUCER_WARPGROUPS"))
    profiled = {q["name"]: q["value"] for q in v["profile"] or []}
    return {"index": index, "name": title, "threads": res.get("threads_per_block"),
            "regs": res.get("regs_per_thread"),
            "moved": moved, "moved_mark": "†" if moved else "",
            "smem": (res["smem_static_bytes"] + res["smem_dynamic_bytes"]) if res else None,
            "loop": (res.get("sass") or {}).get("main_loop") or None,
            "readings": [profiled.get(m) for m in metrics]}
