"""The deck as one context: every section's data gathered and every derived number computed first,
then each template in the outline rendered; the templates only format. Nothing is written unless
everything renders (write_deck).

A section module (slides/<name>.py) holds ``context(deck)``, what its template sees as ``<name>``,
and may hold ``draw(own, deck)``, the figures it shows by file name from its own context. A section
reads another's context by importing it, ``deck.of(slides.<other>)`` (slides/records.py); this module
alone knows the outline, and no section imports it."""
from __future__ import annotations

import hashlib
import importlib
import os
import re
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

import jinja2
import jinja2.ext
from markupsafe import Markup

from bench.core import schema
from slides import escape
from slides.fmt import fmt_bound, fmt_change, fmt_count, fmt_num, fmt_range, fmt_sig
from slides.kit import fmt_bytes, layer_name
from slides.outline import SECTIONS
from slides.records import LISTED, ROOT, SLIDES_DIR, BuildError, Records, listed, quick_line, stale_line


@dataclass(frozen=True)
class Listing:
    """Records as a line of the backup divider names them: its words before the ids, the ids (a few,
    LISTED), and its words after them (how many more, where)."""
    head: str = ""
    ids: list[str] = field(default_factory=list)
    tail: str = ""


@dataclass(frozen=True)
class GpuTests:
    """The GPU tests' outcome on the machine that measured (bench/checks.py), as the backup divider says it."""
    said: str
    tone: str = ""          # the colour it warns in where they did not all pass: red, amber
    reason: str = ""        # why they did not run


class Deck(Records):
    """The deck's sections: every section's context and figures, in the outline's order."""

    def sections(self) -> dict:
        """What every template sees: each section module's context, then the run's own facts."""
        for name in SECTIONS:
            if hasattr(section_module(name), "context"):
                self.of(section_module(name))
        benchmarks = self.doc["benchmarks"]
        elsewhere, beside = [], []          # every stale id of each other file (build.py prints them), its line
        for path, doc in self.beside:
            other = Records(doc)
            why = other.stale()
            if why:
                elsewhere.append({"file": Path(path).name, "ids": list(why), "why": why})
                beside.append({"file": Path(path).name, **stale_line(list(why), doc)})
        why_stale = self.stale()
        stale = list(why_stale)
        here = stale_line(stale, self.doc)
        quick = quick_line(self.doc)
        # past LISTED in all, the backup divider counts them by file (its notes name them)
        if len(stale) + sum(b["count"] for b in beside) > LISTED:
            here, beside = {**here, "ids": [], "more": here["count"]}, [{**b, "ids": [], "more": b["count"]} for b in beside]
        named = listed([*stale, *(f"{bid} ({e['file']})" for e in elsewhere for bid in e["ids"])])
        return {**self._sections, "software": self.doc["software"],
                "stale": stale, "stale_why": why_stale, "stale_elsewhere": elsewhere,
                "stale_lines": ([stale_here(here, len(benchmarks))] if stale else []) + [stale_beside(b) for b in beside],
                # the notes name a few; build.py prints them all
                "stale_named": Listing(ids=named["ids"], tail=more(named["more"], " (python build.py names them all)")) if named["ids"] else None,
                "quick": quick_said(quick),
                # every result from a quick refresh: the title says so, as its figures rest on fewer samples
                "quick_run": bool(quick and quick["all"]),
                "failed": [{"id": bid, "reason": rec["reason"]} for bid, rec in benchmarks.items()
                           if rec["status"] == "failed"],
                "kept": [{"id": bid, **rec["last_attempt"], "measured_at": rec["measured_at"]}
                         for bid, rec in benchmarks.items() if "last_attempt" in rec],
                "gpu_tests": self.gpu_tests(),
                # the records each slide lacks (not "missing": that is the closing section's own context)
                "lacking": self.missing, "missing_others": section_module("backup").others(self.of(section_module("backup")).gaps, self.missing)}

    def gpu_tests(self) -> GpuTests:
        """The GPU tests' outcome on the machine that measured (bench/checks.py), for the backup divider (provenance stays off the main path)."""
        r = self.record(schema.GPU_TESTS)
        tests = r["record"].get("tests") if r["measured"] else None
        if tests:
            total = sum(tests[k] for k in ("passed", "failed", "skipped"))
            if tests["failed"] == 0 and tests["passed"] > 0:
                return GpuTests(f"GPU tests here: {tests['passed']} of {total} passed.")
            return GpuTests(f"GPU tests on this machine: {tests['failed']} of {total} failed.", "red")
        if r["failed"]:
            return GpuTests("GPU tests on this machine did not run:", "red", r["reason"])
        return GpuTests("GPU tests: not recorded here.", "amber")

    def figures(self) -> dict[str, str]:
        """Every figure, by file name: those of the modules computed so far (the outline's and the
        data they read), and of the outline's sections with figures and no data of their own."""
        svgs = {}
        for name in dict.fromkeys([*self._sections, *SECTIONS]):
            module = section_module(name)
            if hasattr(module, "draw"):
                svgs.update(module.draw(self.of(module) if hasattr(module, "context") else None, self))
        return svgs


def section_module(name: str):
    """slides/<name>.py, or None when the section is its template alone."""
    if not (SLIDES_DIR / f"{name}.py").exists():
        return None
    return importlib.import_module(f"slides.{name}")


def more(count: int, after: str = "") -> str:
    """How many more ids a line leaves out than it names, in words; empty where it names them all."""
    return f"and {count} more{after}" if count else ""


def stale_here(line: dict, measured: int) -> Listing:
    """This file's stale records (records.stale_line) as the divider's line says them, of the ``measured`` records."""
    if line["all"]:
        return Listing(f"all {line['count']} results here")
    if line["ids"]:
        return Listing(ids=line["ids"], tail=more(line["more"], f", of {measured}"))
    return Listing(f"{line['count']} of {measured} results here")


def stale_beside(line: dict) -> Listing:
    """Another file's stale records (records.stale_line, with its file) as the divider's line says them."""
    where = f"in {line['file']}"
    if line["all"]:
        return Listing(f"all {line['count']} {where}")
    if line["ids"]:
        return Listing(ids=line["ids"], tail=" ".join(filter(None, [more(line["more"]), where])))
    return Listing(f"{line['count']} {where}")


def quick_said(line: dict | None) -> Listing | None:
    """The records a quick refresh measured (records.quick_line) as the divider's line says them."""
    if not line:
        return None
    if line["all"]:
        return Listing("Every result measured comes from it")
    return Listing(f"{line['count']} of {line['of']} results measured come from it:", line["ids"], more(line["more"]))


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
                       count=fmt_count,
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
