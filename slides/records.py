"""One results file as the slide sections read it: each record summarized for a slide, what the
slides lack, and the sections' contexts, each computed once. A section (slides/<name>.py) reads
another's context by importing its module: ``deck.of(slides.gemm)``. Nothing here knows the outline:
slides/deck.py assembles the deck from it."""
from __future__ import annotations

from pathlib import Path
from types import ModuleType

from bench.core import provenance
from bench.core.stats import overlap
from bench.gemm import catalogue

SLIDES_DIR = Path(__file__).resolve().parent
ROOT = SLIDES_DIR.parent


class BuildError(Exception):
    """The deck cannot be built from these results; the message names the file."""


class Context:
    """The base of a section's context: a frozen dataclass whose fields its template reads
    (``hbm.rows``), and other sections' modules too (``deck.of(slides.hbm).rows``)."""


class Records:
    """One results file as the sections read it: its records summarized (record, need), what the
    slides lack by slide, and each section's context, computed once when first asked for (of)."""

    def __init__(self, doc: dict, nodes=(), others=(), warn=None, out_dir: Path = ROOT):
        self.doc = doc
        self.out_dir = Path(out_dir)      # where slides.md goes: Slidev resolves a code snippet's path from there
        # (path, document) of each of this GPU's node files, by GPU count; the multi-GPU section details
        # the one of the most GPUs (self.node, or None) and sets the sizes side by side
        self.nodes = sorted(nodes, key=lambda item: item[1]["node"]["gpu_count"])
        self.node = self.nodes[-1] if self.nodes else None
        self.others = others          # (path, document) of other GPUs' results files, to compare with
        self.warn = warn              # how a comparison reports a file it leaves out (None: an error)
        self.missing: dict[str, list[str]] = {}
        self.beside: list[tuple[Path, dict]] = []   # other files whose records the slides show (node, comparison)
        self._sections: dict[str, dict] = {}
        self._asked: list[str] = []

    def of(self, section: ModuleType):
        """The context of ``section`` (a module of slides/ with ``context(records)``), computed once."""
        name = section.__name__.rpartition(".")[2]
        if name not in self._sections:
            if name in self._asked:
                raise BuildError(f"sections that need each other: {' -> '.join(self._asked + [name])}")
            self._asked.append(name)
            self._sections[name] = section.context(self)
            self._asked.pop()
        return self._sections[name]

    def record(self, bid: str) -> dict:
        """A result, summarized for the slides; ``measured`` is False when absent or skipped."""
        rec = self.doc["benchmarks"].get(bid)
        out = {"id": bid, "measured": False, "status": "absent", "reason": "not in the results",
               "stale": False, "stale_why": "", "failed": False, "record": {},
               "tflops": None, "time_ms": None, "check": None, "clock_mhz": None, "clock_measured": False,
               "pct_cublas": None, "baseline_tflops": None, "speedup": None}
        if rec is None:
            return out
        out.update(status=rec["status"], reason=rec.get("reason", ""), record=rec,
                   measured=rec["status"] != "skipped", failed=rec["status"] == "failed",
                   tflops=rec.get("tflops"), time_ms=rec.get("time_ms"), check=rec.get("check"),
                   clock_mhz=clock_during(rec), clock_measured=clock_measured(rec))
        # stale: measured with code that has changed since (a skipped record measured nothing: its
        # reason is the runner's, such as a GPU too old or too few)
        if rec["status"] != "skipped":
            out["stale_why"] = stale_why(rec)      # the stale badge's tooltip
            out["stale"] = bool(out["stale_why"])
        return out

    def stale(self) -> dict[str, str]:
        """This file's records measured with code that has changed since: {id: why}, by id."""
        return {bid: why for bid in sorted(self.doc["benchmarks"]) if (why := self.record(bid)["stale_why"])}

    def need(self, slide: str, *bids: str) -> list[dict]:
        """The results a slide shows; those not measured are listed against it."""
        recs = [self.record(b) for b in bids]
        lacking = [r["id"] for r in recs if not r["measured"]]
        if lacking:
            self.missing.setdefault(slide, []).extend(lacking)
        return recs


def stale_why(rec: dict) -> str:
    """Why a record was measured with code other than today's, from the files and the catalogue
    alone (bench/core/provenance.py); empty when it was not."""
    if "sources" not in rec:
        return "measured before records named their sources"
    try:
        kernels = catalogue.definitions(rec.get("kernels", ()))
    except KeyError:
        return "its kernel is no longer in the catalogue"
    return "" if provenance.source_hash(rec["sources"], kernels) == rec["source_hash"] else "code changed"


LISTED = 4       # ids a line of the backup divider names in full; of more, the first LISTED - 1 and a count


def listed(ids: list[str]) -> dict:
    """``ids`` as a line shows them: all of up to LISTED, else the first few and how many more."""
    shown = ids if len(ids) <= LISTED else ids[:LISTED - 1]
    return {"ids": shown, "more": len(ids) - len(shown)}


def stale_line(stale: list[str], doc: dict) -> dict:
    """A file's stale records (``stale``) as a line lists them, and whether they are all it measured."""
    measured = [bid for bid, rec in doc["benchmarks"].items() if rec["status"] != "skipped"]
    return {**listed(stale), "count": len(stale), "all": bool(stale) and len(stale) == len(measured)}


def quick_line(doc: dict) -> dict | None:
    """The records a quick refresh measured (python -m bench --quick), as the backup divider lists them:
    every one, or a few and how many more; None where none did."""
    measured = [bid for bid, rec in doc["benchmarks"].items() if rec["status"] != "skipped"]
    quick = sorted(bid for bid in measured if doc["benchmarks"][bid].get("quick"))
    return {**listed(quick), "count": len(quick), "of": len(measured), "all": len(quick) == len(measured)} if quick else None


def clock_during(rec: dict) -> float | None:
    """The SMs' clock over the timed samples: measured (cycles against the global timer) where the
    record has it, else NVML's median sample."""
    telemetry = rec.get("telemetry") or {}
    if telemetry.get("sm_clock"):
        return telemetry["sm_clock"]["mean"]
    during = telemetry.get("during")
    return during["sm_clock_mhz"]["median"] if during else None


def measured_pair(a: dict, b: dict) -> dict:
    """Two runs of the same work timed in the same run (each with ``time_ms``, an interval of its
    median): a's speed over b's, and whether their intervals tell them apart."""
    ratio = b["time_ms"]["median"] / a["time_ms"]["median"]
    return {"ratio": ratio, "pct": 100 * (ratio - 1), "tie": overlap(a["time_ms"], b["time_ms"]), "faster": ratio > 1}


def clock_measured(rec: dict) -> bool:
    return bool((rec.get("telemetry") or {}).get("sm_clock"))


def span(values) -> dict | None:
    """The lowest and highest of ``values`` ({"low", "high"}, as fmt_range prints them); None where
    there are none."""
    values = list(values)
    return {"low": min(values), "high": max(values)} if values else None
