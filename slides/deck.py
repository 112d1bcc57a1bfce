"""The deck as one context: every section's data gathered and every derived number computed first,
then each template in the outline rendered; the templates only format. Nothing is written unless
everything renders (write_deck).

A section module (slides/<name>.py) holds ``context(deck)``, what its template sees as ``<name>``,
and may hold ``draw(deck)``, the figures it shows by file name. A section reads another's data as
``deck["<other>"]``: each is computed once, when first asked for."""
from __future__ import annotations

import hashlib
import importlib
import math
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path

import jinja2
import jinja2.ext
from markupsafe import Markup

from bench.core import provenance, schema
from bench.core.stats import overlap
from bench.gemm import catalogue
from slides import escape
from slides.kit import fmt_bytes, layer_name
from slides.outline import SECTIONS

SLIDES_DIR = Path(__file__).resolve().parent
ROOT = SLIDES_DIR.parent


class BuildError(Exception):
    """The deck cannot be built from these results; the message names the file."""


class Deck:
    """One results file's sections, computed on demand, and what the results lack, by slide."""

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

    def __getitem__(self, name: str) -> dict:
        if name not in self._sections:
            if name in self._asked:
                raise BuildError(f"sections that need each other: {' -> '.join(self._asked + [name])}")
            self._asked.append(name)
            self._sections[name] = importlib.import_module(f"slides.{name}").context(self)
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

    def sections(self) -> dict:
        """What every template sees: each section module's context, then the run's own facts."""
        for name in SECTIONS:
            if hasattr(section_module(name), "context"):
                self[name]
        benchmarks = self.doc["benchmarks"]
        elsewhere, beside = [], []          # every stale id of each other file (build.py prints them), its line
        for path, doc in self.beside:
            other = Deck(doc)
            why = other.stale()
            if why:
                elsewhere.append({"file": Path(path).name, "ids": list(why), "why": why})
                beside.append({"file": Path(path).name, **stale_line(list(why), doc)})
        why_stale = self.stale()
        stale = list(why_stale)
        here = stale_line(stale, self.doc)
        # past LISTED in all, the backup divider counts them by file (its notes name them)
        if len(stale) + sum(b["count"] for b in beside) > LISTED:
            here, beside = {**here, "ids": [], "more": here["count"]}, [{**b, "ids": [], "more": b["count"]} for b in beside]
        return {**self._sections, "software": self.doc["software"], "measured_count": len(benchmarks),
                "stale": stale, "stale_why": why_stale, "stale_listed": here, "stale_beside": beside, "stale_elsewhere": elsewhere,
                # the notes name a few; build.py prints them all
                "stale_named": listed([*stale, *(f"{bid} ({e['file']})" for e in elsewhere for bid in e["ids"])]),
                "quick": quick_line(self.doc),
                "failed": [{"id": bid, "reason": rec["reason"]} for bid, rec in benchmarks.items()
                           if rec["status"] == "failed"],
                "kept": [{"id": bid, **rec["last_attempt"], "measured_at": rec["measured_at"]}
                         for bid, rec in benchmarks.items() if "last_attempt" in rec],
                "gpu_tests": self.gpu_tests(),
                # the records each slide lacks (not "missing": that is the closing section's own context)
                "lacking": self.missing, "missing_others": section_module("backup").others(self["backup"]["gaps"], self.missing)}

    def gpu_tests(self) -> dict:
        """The GPU tests' outcome on the machine that measured (bench/checks.py), for the backup divider (provenance stays off the main path)."""
        r = self.record(schema.GPU_TESTS)
        tests = r["record"].get("tests") if r["measured"] else None
        return {**r, "tests": tests, "total": sum(tests[k] for k in ("passed", "failed", "skipped")) if tests else 0,
                "all_passed": bool(tests) and tests["failed"] == 0 and tests["passed"] > 0}

    def figures(self) -> dict[str, str]:
        """Every figure, by file name: those of the modules computed so far (the outline's and the
        data they read), and of the outline's sections with figures and no data of their own."""
        svgs = {}
        for name in dict.fromkeys([*self._sections, *SECTIONS]):
            draw = getattr(section_module(name), "draw", None)
            if draw:
                svgs.update(draw(self))
        return svgs


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


def section_module(name: str):
    """slides/<name>.py, or None when the section is its template alone."""
    if not (SLIDES_DIR / f"{name}.py").exists():
        return None
    return importlib.import_module(f"slides.{name}")


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


# --- formatting: the templates' only arithmetic -------------------------------

def fmt_num(x, digits: int = 1) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        raise ValueError(f"no number to format: {x!r}")
    return f"{x:,.{digits}f}"


def fmt_bound(x, digits: int = 0) -> str:
    """A bound as a sentence says it ("within 8%"): rounded up at ``digits``, so that 7.08 reads 8, not
    a 7 the figure passes."""
    step = 10 ** digits
    return fmt_num(math.ceil(x * step - 1e-9) / step, digits)


def span(values) -> dict | None:
    """The lowest and highest of ``values`` ({"low", "high"}, as fmt_range prints them); None where
    there are none."""
    values = list(values)
    return {"low": min(values), "high": max(values)} if values else None


def fmt_range(lowest_highest: dict, digits: int = 1) -> str:
    """A lowest and highest (span) as "a–b", or one number where they print alike."""
    low, high = fmt_num(lowest_highest["low"], digits), fmt_num(lowest_highest["high"], digits)
    return low if low == high else f"{low}–{high}"


def fmt_change(ratio: float) -> str:
    """A ratio as a signed change in percent, one decimal, more where one would round a change to
    +0.0 or -0.0 and hide the side of no change it lies on (an interval's bound): +3.2, -0.04, 0.0."""
    pct = 100 * (ratio - 1)
    for digits in (1, 2, 3):
        text = f"{pct:+.{digits}f}"
        if text.strip("+-0."):           # a digit that is not zero: the sign is shown
            return text
    return f"{0:.1f}"


def fmt_sig(x, sig: int = 3) -> str:
    """Significant figures, never scientific notation: 0.234, 27.9, 2,981."""
    if x == 0:
        return "0"
    digits = max(0, sig - 1 - int(math.floor(math.log10(abs(x)))))
    return fmt_num(x, digits)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between runs (a third of build.py's time), where the checkout is
    writable. Jinja checks a cached template against its source alone, so the folder is named
    for the code that sets up the environment (filters, escaping) and the Jinja release."""
    key = hashlib.sha256(b"".join(p.read_bytes() for p in (Path(__file__), SLIDES_DIR / "escape.py"))
                         + jinja2.__version__.encode()).hexdigest()[:12]
    folder = ROOT / ".cache" / "jinja" / key
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.parent.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return None
    return jinja2.FileSystemBytecodeCache(str(folder)) if os.access(folder, os.W_OK) else None


class LineContinuation(jinja2.ext.Extension):
    """A template line that ends in a backslash goes on in the next one: a long sentence wraps in the
    source and renders as the one line it is."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return source.replace("\\\n", "")


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        extensions=[LineContinuation],
        loader=jinja2.FileSystemLoader(SLIDES_DIR), bytecode_cache=_bytecode_cache(),
        # Slidev's markdown uses Vue's {{ }}; these delimiters cannot collide with it.
        block_start_string="[%", block_end_string="%]",
        variable_start_string="[[", variable_end_string="]]",
        comment_start_string="[#", comment_end_string="#]",
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True,
        # Every [[ ]] output is data: escaped for Markdown, Vue and HTML unless it is markup the
        # templates made (a macro's output); see slides/escape.py.
        autoescape=True, finalize=escape.finalize)
    env.filters.update(num=fmt_num, bound=fmt_bound, range_of=fmt_range, sig=fmt_sig, change=fmt_change, bytes=fmt_bytes, code_block=code_block, magic_move=magic_move,
                       count=lambda n, noun: f"{n:,} {noun}{'' if n == 1 else 's'}",
                       yaml_str=escape.yaml_string, yaml_plain=escape.yaml_plain, join=_join,
                       replace=lambda s, old, new: str(s).replace(old, new))   # plain text, escaped on output
    return env


HIGHLIGHT = re.compile(r"[*\d,|-]*")     # Slidev's line highlights by click: {*|3-5,9}


def code_block(code: str, language: str, highlight: str = "") -> Markup:
    """A kernel's own lines as a fenced block, verbatim: code is not data to escape, but it must
    not close the fence it is in. ``highlight``: the lines lit at each click ("*|3-5,9")."""
    if "```" in code:
        raise BuildError("a kernel's code holds a Markdown fence (```)")
    if not HIGHLIGHT.fullmatch(highlight):
        raise BuildError(f"not a line highlight: {highlight!r}")
    return Markup(f"```{language}{' {' + highlight + '}' if highlight else ''}\n{code}\n```")


def magic_move(steps: list[str], language: str, highlights: list[str] = ()) -> Markup:
    """Code that morphs from each of ``steps`` to the next, a click each (Slidev's magic-move); each
    step's lines then lit click by click as ``highlights`` says."""
    if any("````" in code for code in steps):
        raise BuildError("a kernel's code holds a Markdown fence (````)")
    lit = [*highlights, *[""] * (len(steps) - len(highlights))]
    return Markup("````md magic-move\n" + "\n".join(code_block(code, language, h) for code, h in zip(steps, lit)) + "\n````")


def _join(items, separator: str = "") -> Markup:
    """Jinja's join escapes its items for HTML alone; these are escaped for the slide."""
    return Markup(separator).join(escape.finalize(item if isinstance(item, Markup) else str(item)) for item in items)


SVG_SIZE = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)"')


def figures_folder(svgs: dict[str, str]) -> str:
    """The folder of svgs/ that holds these figures: named for their content, so that a deck's
    slides.md and the figures it shows are never a mix of two builds (write_deck)."""
    h = hashlib.sha256()
    for name in sorted(svgs):
        h.update(name.encode() + b"\0" + svgs[name].encode() + b"\0")
    return h.hexdigest()[:12]


def figures_dir(out_dir: Path) -> Path:
    """Where the figures of the deck in ``out_dir`` are: the folder its slides.md shows them from."""
    found = re.search(r'src="\./svgs/([0-9a-f]{12})/', (Path(out_dir) / "slides.md").read_text())
    return Path(out_dir) / "svgs" / (found.group(1) if found else figures_folder({}))


def figure_tag(svgs: dict[str, str]):
    """The templates' ``figure(name, classes)``: the figure shown at the width it was drawn, so
    that the sizes of its text are the sizes a room sees (slides/kit.py draws to the slide), with
    the layers drawn over it (kit.layers) revealed a click each; and ``overlays(name)``, their count."""
    folder = figures_folder(svgs)

    def figure(name: str, classes: str = "") -> Markup:
        if name not in svgs:
            raise BuildError(f"a slide shows {name}, which no figure function drew")
        width = SVG_SIZE.search(svgs[name]).group(1)
        img = lambda file, cls: f'<img src="./svgs/{folder}/{file}" class="{cls}" style="width: {width}px; max-width: none" />'
        if not overlays(name):
            return Markup(img(name, classes))
        # its layers over it, each shown by a click
        tops = "".join(f'<div v-click class="absolute left-0 top-0">{img(layer_name(name, i), "")}</div>'
                       for i in range(1, overlays(name) + 1))
        return Markup(f'<div class="relative {classes}" style="width: {width}px">{img(name, "")}{tops}</div>')

    def overlays(name: str) -> int:
        """How many layers a figure draws over its first (kit.layers)."""
        return next(i for i in range(1, len(svgs) + 2) if layer_name(name, i) not in svgs) - 1
    return figure, overlays


FRONTMATTER_START = re.compile(r"^[A-Za-z][\w-]*:")


def render(context: dict, svgs: dict[str, str]) -> str:
    """The outline's templates in order, joined by slide separators. A section that opens with its
    own frontmatter (``layout: section``) follows the separator directly; any other starts after a
    blank line, so Slidev does not read its first lines as frontmatter."""
    env = environment()
    env.globals["figure"], env.globals["overlays"] = figure_tag(svgs)
    parts = [env.get_template(f"{name}.md.j2").render(**context).strip() for name in SECTIONS]
    parts = [p for p in parts if p]            # a section with nothing to show (no comparison) is left out
    return parts[0] + "".join("\n\n---\n" + ("" if FRONTMATTER_START.match(p) else "\n") + p
                              for p in parts[1:]) + "\n"


FIGURES = re.compile(r"[0-9a-f]{12}")      # svgs/<figures_folder>/: one build's figures
PROJECT_FOLDERS = ("styles", "components", "layouts")  # Slidev reads them beside slides.md: shared styles, recurring pieces, slide shapes


class StoppedAfterWriting(KeyboardInterrupt):
    """A stop (Ctrl-C, SIGTERM) that came while the deck was being written: it waited, and the new deck is whole."""


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def write_deck(out_dir: Path, deck: str, svgs: dict[str, str]) -> None:
    """Write slides.md and its figures all or nothing, under a lock that builds into the same folder
    take in turns. The figures go into a staging folder renamed to svgs/<figures_folder>/ (a name
    of their content), then slides.md, which shows them from there, replaces the old one in one
    rename; only then are the older builds' figures removed. A stop signal waits until all of it is
    done (StoppedAfterWriting then says so); killed outright at any moment, the folder holds a whole
    deck: the old slides.md with its figures, or the new one with its own. A staging folder found
    under the lock is a killed build's, and is removed."""
    from bench.core.results import locked, umask, write_atomic
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if (out_dir / "slides.md").is_dir():
        raise IsADirectoryError(f"{out_dir / 'slides.md'} is a folder, where the deck writes a file")
    figures = out_dir / "svgs" / figures_folder(svgs)
    with locked(out_dir / "slides.md"):
        for leftover in [*out_dir.glob(".build-*"), *out_dir.glob("svgs/.build-*")]:
            shutil.rmtree(leftover, ignore_errors=True)
        made = not figures.is_dir()
        if made:
            figures.parent.mkdir(exist_ok=True)
            stage = Path(tempfile.mkdtemp(prefix=".build-", dir=figures.parent))
            try:
                stage.chmod(0o777 & ~umask())        # as a plain mkdir leaves it (mkdtemp's 0700 hides it from a web server)
                for name, svg in svgs.items():
                    write_atomic(stage / name, svg)
                os.replace(stage, figures)
            finally:
                shutil.rmtree(stage, ignore_errors=True)
        if out_dir.resolve() != ROOT.resolve():                 # a deck elsewhere takes the project's styles along
            for folder in PROJECT_FOLDERS:
                shutil.copytree(ROOT / folder, out_dir / folder, dirs_exist_ok=True)
        held = threading.current_thread() is threading.main_thread()
        if held:
            signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            try:
                write_atomic(out_dir / "slides.md", deck)      # the deck changes here, in one rename
            except OSError:
                if made:                                       # figures no slides.md shows
                    shutil.rmtree(figures, ignore_errors=True)
                raise
            for old in (out_dir / "svgs").iterdir():
                if old != figures and (FIGURES.fullmatch(old.name) and old.is_dir() or old.suffix == ".svg"):
                    shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
        finally:
            if held:
                try:
                    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)   # a stop that came meanwhile lands here
                except KeyboardInterrupt as stop:
                    raise StoppedAfterWriting(*stop.args) from None
