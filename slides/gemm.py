"""The GEMM steps as measured: each step of the catalogue (bench/gemm/catalogue.py) with its kernels'
results, its baseline cuBLAS (timed in turns with it), occupancy, waves and profile, its code as
the code slides show it, and the headline. Read by the setup, kernels, results, missing and backup
sections; draws the progression and each step's diagram."""
from __future__ import annotations

import difflib
import math
import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from markupsafe import Markup

from bench.gemm import catalogue, plan
from bench.core.stats import spread
from slides.diagrams import DIAGRAMS
from slides.fmt import fmt_change, fmt_count, fmt_num
from slides.kit import layer_name
from slides.step_diagrams import REVEALS
from slides.kit import ACCENT, Bar, Line, MISSING, REF, bar_chart, climb
from slides.records import ROOT, BuildError, Context
from slides.device import occupancy
import slides.device


def block_shape(resources: dict, shape: dict) -> tuple[int, int] | None:
    """The launch's block (x over columns of C, y over rows), from the recorded grid."""
    grid = resources.get("grid")
    if not grid or len(grid) != 2:
        return None
    bx, by = math.ceil(shape["n"] / grid[0]), math.ceil(shape["m"] / grid[1])
    return (bx, by) if bx * by == resources["threads_per_block"] else None


# The profile counters that say how busy a unit is, and the unit's name on the slide.
UTILIZATION = {"dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM",
               "l1tex__throughput.avg.pct_of_peak_sustained_active": "L1 / shared memory",
               "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor cores",
               "sm__instruction_throughput.avg.pct_of_peak_sustained_active": "SM instruction issue"}
# (a tensor-core kernel's SM busy is its tensor pipe's: on a tie the tensor cores are named)
TF32_TENSOR_MAP = "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32"     # a TMA copy that rounds FP32 to TF32
TENSOR_PIPE = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"


def reference_shape(doc: dict) -> dict | None:
    """The M x N x K the GEMM records were measured at, from their own params (cuBLAS's first: it runs
    on every GPU); None when no GEMM record holds one."""
    ids = [bid for bid in doc["benchmarks"] if bid.startswith("gemm.cublas_")] + list(catalogue.KERNELS)
    for bid in ids:
        params = (doc["benchmarks"].get(bid) or {}).get("params") or {}
        if all(isinstance(params.get(d), int) and params[d] > 0 for d in "mnk"):
            m, n, k = params["m"], params["n"], params["k"]
            return {"m": m, "n": n, "k": k, "dims": [m, n, k], "flops": 2 * m * n * k,
                    "intensity_fp32": 2 * m * n * k / (4 * (m * k + k * n + m * n))}
    return None


def waves(resources: dict, occupancy_: dict | None, device: dict, shape: dict) -> dict | None:
    """How the output tiles fall on the CTAs that run at once: a persistent kernel's grid, or
    every SM's resident blocks. The last wave's idle CTAs are time no tile order wins back."""
    tile = resources.get("tile") if resources else None
    if not tile or not occupancy_:
        return None
    tiles = plan.ctas(tile, shape["m"], shape["n"])      # as the kernel launches them: ragged edges, whole clusters
    at_once = resources.get("resident_ctas") or device.sm_count * occupancy_["blocks_per_sm"]
    n = tiles / at_once
    out = {"tiles": tiles, "at_once": at_once, "waves": n, "full_waves": math.ceil(n),
           "last_wave_ctas": tiles - (math.ceil(n) - 1) * at_once, "idle_pct": 100 * (1 - n / math.ceil(n)),
           "split": None}
    split = resources.get("split_wave")
    if split and plan.splits(split):       # a plan may leave it whole
        k = split["k_tiles"]
        last = plan.last_wave_k_tiles(split) / k
        out["split"] = {**split, "last_wave": last, "split_pct": 100 * split["split"] / k,
                        "idle_pct": 100 * (1 - n / (split["full_waves"] + last))}
    return out


def busiest_unit(profile: dict) -> dict:
    """The unit closest to its peak: where a kernel's time goes."""
    name = max(UTILIZATION, key=lambda m: profile["metrics"].get(m, -1))
    return {"unit": UTILIZATION[name], "pct": profile["metrics"][name]}


def moved_most(profile: dict, before: dict) -> dict:
    """Of the percentages both profiles hold (a share of a peak, a hit rate, occupancy), the one that
    moved furthest from the step before, in points; no name where none moved by MOVED_POINTS."""
    both = [m for m in profile["metrics"] if m in before["metrics"] and ", %" in profile["names"][m]]
    name = max(both, key=lambda m: abs(profile["metrics"][m] - before["metrics"][m]), default=None)
    if name is None or abs(profile["metrics"][name] - before["metrics"][name]) < MOVED_POINTS:
        return {"name": None, "within": MOVED_POINTS}
    return {"name": profile["names"][name].split(", %")[0], "before": before["metrics"][name], "after": profile["metrics"][name]}


PERCENT_BELOW = 0.1      # a step's change under a tenth is said in percent, else as a ratio
MOVED_POINTS = 5         # a counter that moved less than this many points against the step before is not news
ERROR_MOVED = 1.5        # an error 1.5x the step before's, or two thirds of it: a change the slide explains


# Code on a slide is set at 11 px (line height 1.4) below the title and a line of prose: this many
# lines fit. A longer kernel region shows its step's focus, and the whole region goes to backup slides.
MAX_CODE_LINES = 22
CODE_COLUMNS = 129       # and this many characters fit across it (131 ran 13 px past the canvas in Chromium)


def _within_columns(lines: list[str]) -> str:
    """A page of code moved left by as few columns of its common indentation as bring its longest
    line within CODE_COLUMNS (all of it at most): the less it moves, the better its nesting still
    lines up with the page before. A line still past them has its trailing comment set above it."""
    over = max(map(len, lines)) - CODE_COLUMNS
    indent = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
    cut = max(0, min(over, indent))
    return "\n".join(_comment_above(line[cut:]) if line.strip() else "" for line in lines)


_TRAILING_COMMENT = re.compile(r"^(\s*)(\S.*?)\s+(//.*)$")


def _comment_above(line: str) -> str:
    """A line of C++ past CODE_COLUMNS as two: its trailing comment, then its code, both at its indentation."""
    parts = _TRAILING_COMMENT.match(line) if len(line) > CODE_COLUMNS else None
    return f"{parts[1]}{parts[3]}\n{parts[1]}{parts[2]}" if parts else line


def code_view(source: str | None, focus: tuple[str, str] | None, out_dir: Path = ROOT) -> dict | None:
    """What a step's code slide shows of its kernel file: the lines between its #region kernel
    markers when they fit, else the focus the catalogue names (first and last line, by a text each
    holds); then the whole region in pages of MAX_CODE_LINES for the backup slides, each with the
    region's lines it holds. ``snippet`` is
    the file's path from ``out_dir``, the deck's folder, where Slidev resolves it."""
    if not source:
        return None
    lines = (ROOT / source).read_text().splitlines()
    marks = [i for i, line in enumerate(lines) if "#region kernel" in line or "#endregion kernel" in line]
    region = lines[marks[0] + 1:marks[1]] if len(marks) == 2 else lines
    view = {"source": source, "snippet": Markup(os.path.relpath(ROOT / source, out_dir.resolve())), "language": "python" if source.endswith(".py") else "cpp", "lines": len(region),
            "shown": None, "first": 1, "pages": [], "text": textwrap.dedent("\n".join(region)),
            # what a code walk turns into, as its note names it, and what the notes add on the lines shown
            "part": source, "part_note": ""}
    if len(region) <= MAX_CODE_LINES:
        return view
    if not focus:
        raise BuildError(f"{source}: {len(region)} lines of kernel do not fit on a slide ({MAX_CODE_LINES}); "
                         f"name the step's focus in bench/gemm/catalogue.py")
    start = next((i for i, line in enumerate(region) if focus[0] in line), None)
    end = next((i for i, line in enumerate(region) if i >= (start or 0) and focus[1] in line), None)
    if start is None or end is None or end - start + 1 > MAX_CODE_LINES:
        raise BuildError(f"{source}: the focus {focus} is not a run of at most {MAX_CODE_LINES} lines of its kernel region")
    # the pages keep the region's indentation, one for all, so that a page continues the nesting of
    # the one before; a page that would run past CODE_COLUMNS so moves left by no more than it must
    pages, first = [], 1
    for page in code_pages(view["text"].split("\n"), MAX_CODE_LINES):
        text = _within_columns(page)
        if text.count("\n") >= MAX_CODE_LINES:
            raise BuildError(f"{source}: lines {first}-{first + len(page) - 1} of its kernel region make more than "
                             f"{MAX_CODE_LINES} lines on a page once their comments past {CODE_COLUMNS} columns go above them; shorten them")
        pages.append({"text": text, "first": first, "last": first + len(page) - 1})
        first += len(page)
    shown = textwrap.dedent("\n".join(region[start:end + 1]))
    return {**view, "shown": shown, "text": shown, "first": start + 1, "last": end + 1, "pages": pages,
            "part": f"lines {start + 1}–{end + 1} of the kernel's {len(region)} in {source} (all on the backup slides)",
            "part_note": f". This slide shows lines {start + 1} to {end + 1}, where the step's idea is; the backup slides show the rest"}


# A code slide lights the lines its step adds in at most this many clicks, the closest runs together.
MAX_LIT_CLICKS = 3
# What a click's note quotes of its lines: their first comment, cut at a word past this many characters.
SAYS_CHARS = 100


def added_runs(before: str, after: str) -> list[list[int]]:
    """The runs of lines of ``after`` (1-based, first and last) that ``before`` does not hold, blank
    lines and indentation aside."""
    a, b = [line.strip() for line in before.splitlines()], [line.strip() for line in after.splitlines()]
    new = [j + 1 for tag, _, _, j0, j1 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
           if tag in ("insert", "replace") for j in range(j0, j1) if b[j]]
    runs: list[list[int]] = []
    for n in new:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return runs


def _comment(line: str) -> str:
    """A line's comment, the author's words for what the code does; CuTe's shape comments
    ("(BM,BK,PIPE)") name no action and count as none."""
    for mark in ("//", "#"):
        if mark in line and not line.lstrip().startswith("#include"):
            text = line.split(mark, 1)[1].strip().rstrip(".")
            if text and not text.startswith("("):
                return text
    return ""


def _sentence(text: str) -> str:
    """A comment as a note says it: cut at a word past SAYS_CHARS, its first word capitalized where
    it is a plain word (not code such as cp.async), ending in a period."""
    if len(text) > SAYS_CHARS:
        text = text[:text.rfind(" ", 0, SAYS_CHARS)] + " …"
    return (text[0].upper() + text[1:] if text.split(" ", 1)[0].isalpha() else text) + "."


def lit_clicks(before: str, after: str) -> list[dict]:
    """The clicks that light, in turn, the lines ``after`` adds to ``before``, each with its lines as
    Slidev highlights them ("3-5,9"), their numbers in words, and what its first comment says. A run of
    added lines without a comment is lit with the run before it (the first, with the one after); at
    most MAX_LIT_CLICKS remain (the two with the fewest lines between them lit together until they
    fit); where no added line has a comment, one click lights them all."""
    lines = after.splitlines()

    def says(runs):
        return next((c for lo, hi in runs for c in map(_comment, lines[lo - 1:hi]) if c), "")
    clicks = [[run] for run in added_runs(before, after)]
    if not any(says(c) for c in clicks):
        clicks = [[run for c in clicks for run in c]] if clicks else []
    while len(clicks) > 1 and (bare := next((i for i, c in enumerate(clicks) if not says(c)), None)) is not None:
        lo = bare - 1 if bare else 0
        clicks[lo:lo + 2] = [clicks[lo] + clicks[lo + 1]]
    while len(clicks) > MAX_LIT_CLICKS:
        i = min(range(len(clicks) - 1), key=lambda k: clicks[k + 1][0][0] - clicks[k][-1][1])
        clicks[i:i + 2] = [clicks[i] + clicks[i + 1]]
    out = []
    for runs in clicks:
        first, last, comment = runs[0][0], runs[-1][1], says(runs)
        out.append({"lines": ",".join(f"{lo}-{hi}" if hi > lo else str(lo) for lo, hi in runs),
                    "words": f"Line {first}" if first == last else f"Lines {first}–{last}",
                    "says": _sentence(comment) if comment else "The lines this step adds."})
    return out


# The lines a step's main slide quotes of what it adds: its idea, beside the climb; all of them are
# on its code slide, one click away.
CHANGED_LINES = 4


def changed_lines(before: str, after: str) -> dict | None:
    """What a step adds, as its main slide quotes it: the longest run of added lines that holds a
    comment (the author's words for the idea), else the longest run, at most CHANGED_LINES of it, from
    its first line of code (not a brace the diff counts as added) to the last line that ends a
    statement or closes a block (not one that opens one); and how many of the lines the step adds in
    all that is. None where it adds none."""
    runs = added_runs(before, after)
    if not runs:
        return None
    lines = after.splitlines()
    commented = [(lo, hi) for lo, hi in runs if any(_comment(line) for line in lines[lo - 1:hi])]
    lo, hi = max(commented or runs, key=lambda run: run[1] - run[0])
    run = lines[lo - 1:hi]
    first = next((i for i, line in enumerate(run) if line.strip() not in ("", "}", "};")), 0)
    shown = run[first:first + CHANGED_LINES]
    ends = [i for i, line in enumerate(shown, 1) if _code_of(line).endswith((";", "}"))]     # not on an open brace
    shown = shown[:ends[-1]] if ends else shown
    added = sum(hi - lo + 1 for lo, hi in runs)
    # how the slide says what it quotes, before the step it is new since: "2 of 10 lines new since"
    said = (f"{len(shown)} of {added} lines" if len(shown) < added else
            "The line" if added == 1 else f"The {added} lines") + " new since"
    return {"text": textwrap.dedent("\n".join(shown)), "said": said}


def highlight_of(clicks: list[dict]) -> str:
    """Slidev's highlight for a code block whose clicks light ``clicks`` in turn, all lines first and
    last: the last click shows the whole step again, and so does a PDF (a page a slide, at its last click)."""
    return "|".join(["*", *(c["lines"] for c in clicks), "*"]) if clicks else ""


CUT_SLACK = 4          # lines a backup code page may end before or after the even split, for a shallower cut


def _code_of(line: str) -> str:
    return line.split("//")[0].split("#")[0].rstrip()


def _ends_statement(line: str) -> bool:
    """A line a page may end after: its code (comments aside) closes a statement or a block, or is blank."""
    code = _code_of(line)
    return not code or code.endswith((";", "{", "}"))


def code_pages(region: list[str], most: int) -> list[list[str]]:
    """``region`` in pages of at most ``most`` lines, as even as its statements allow: a page ends
    only after a line that ends a statement, within CUT_SLACK lines of the even split of what is
    left where the fewest blocks are open (between loops rather than inside one), the nearest of those."""
    depth, open_after = 0, []
    for line in region:
        code = _code_of(line)
        depth += code.count("{") - code.count("}")
        open_after.append(depth)
    pages, start = [], 0
    while len(region) - start > most:
        left = len(region) - start
        even = start + math.ceil(left / math.ceil(left / most))
        ends = [i for i in range(start + 1, start + most + 1) if _ends_statement(region[i - 1])]
        near = [i for i in ends if abs(i - even) <= CUT_SLACK] or ends
        cut = min(near, key=lambda i: (open_after[i - 1], abs(i - even))) if ends else start + most
        pages.append(region[start:cut])
        start = cut
    return pages + [region[start:]]


def pair_with_cublas(r: dict, by_id: dict) -> dict:
    """A kernel's result (a deck.record) with its baseline, as a new dict: cuBLAS of the kernel's
    precision and layout, on the same operands, timed in turns with it (bench/gemm/harness.py); its
    figures are that timing's. ``by_id``: the cuBLAS records by benchmark id."""
    versus = r["record"].get("cublas")
    if not (versus and r["tflops"]):
        return {**r, "baseline": None, "ratio_spread": None}
    base = by_id[versus["id"]]
    return {**r, "baseline": {"id": versus["id"], "precision": base["precision"].upper(),
                              "layout_name": base["layout_name"], "timing": "in turns",
                              "tflops": versus["tflops"], "time_ms": versus["time_ms"],
                              "error": versus["check"]["rel_error"], "check": versus["check"]},
            "baseline_tflops": versus["tflops"], "pct_cublas": 100 * r["tflops"] / versus["tflops"],
            # sample by sample: what is left of the spread once both meet the same clock
            "ratio_spread": spread(versus["ratio_by_sample"]) if "ratio_by_sample" in versus else None}


def standing(ratio: dict | None) -> str | None:
    """A kernel against its baseline from the interval of their ratio in turns: "ahead of" where all
    of it lies above 1, "behind" where all of it lies below, else "level with"; None without one."""
    if not ratio:
        return None
    lo, hi = ratio["ci"]
    return "ahead of" if lo > 1 else "behind" if hi < 1 else "level with"


def in_turns(pair: dict) -> dict:
    """A pair timed in turns as the slides give it: the median of the sample-by-sample ratio and its
    interval, which calls a gain, a loss or a tie (the median lies inside its interval, where the
    ratio of the two median times need not), and both kernels' TFLOPS from their median times in
    those turns (each record's own figure is from its turns with cuBLAS)."""
    by_sample = pair["gain_by_sample"]
    return {"gain": by_sample["median"], "ci": by_sample["ci"], "tflops": pair["tflops"] * pair["gain"],
            "before_tflops": pair["tflops"], "clock_mhz": pair["time_ms"].get("sm_clock_mhz")}


def gain_in_turns(best: dict, before_id: str) -> dict | None:
    """A step's best over ``before_id`` (the best of the step before), the two timed in turns
    (in_turns); None where they were not."""
    pair = best["record"].get("before")
    if not pair or pair["id"] != before_id:
        return None
    return in_turns(pair)


@dataclass(frozen=True)
class Step(Context):
    """A step of the catalogue as its slides show it: its code (the walk from the step before's), its
    diagram, its kernels (variants; the last, its best, against the step before's best and its cuBLAS
    in turns) and the lines its notes choose from the results."""
    index: int                      # from 1, as the slides number the kernels
    key: str
    title: str
    name: str                       # its best kernel's: the title, with the kernel's label where there are several
    slide_title: str                # "Kernel 3: CuTe SMEM"
    technique: str
    layout: str
    layout_name: str
    precision: str
    beyond: bool                    # past the reference deck's last step
    sweep_id: str
    baseline: dict                  # cuBLAS of its precision and layout, its own record
    source: str | None
    code: dict | None               # what its code slide shows (code_view); None: not in the project yet
    walk_from: dict | None          # the step before's code, which the code slide morphs from, and the clicks
    variants: list[dict]
    best: dict                      # the last variant, with its change against the step before's best
    measured: bool                  # any of its variants
    skip_reason: str
    not_measured_said: str          # its performance slide's notes where none of its kernels ran
    ran: str                        # its code slide's line on its best kernel's figure
    on_climb: str                   # its results slide's line on the figure the climb shows
    block: tuple[int, int] | None   # one thread an element of C: the block the diagram draws
    diagram: str | None             # None where the run recorded nothing to draw it from
    draw: str                       # the kind of diagram (slides/diagrams.py)
    drawn_from: str                 # the diagram's notes: the constants it was drawn from
    reveals: list[str]              # what each click of the diagram's layers shows
    loop_before: dict | None        # the step before's best, for a diagram that sets the two side by side
    climb: str | None               # its performance slide's climb: its best against its cuBLAS in turns
    outranked_by: dict | None       # the highest earlier step on its climb, where one stands higher


@dataclass(frozen=True)
class Gemm(Context):
    """The GEMM steps at the reference shape, each against its cuBLAS in turns and the step before,
    cuBLAS's own records, the headline (the talk's answer) and what the reference deck left on the
    table (story, waves); read by the setup, results, missing and backup sections, among others."""
    shape: dict | None              # the reference shape (reference_shape); None: no GEMM record holds one
    reference_last: str             # the title of the reference deck's last step
    cublas_rows: list[dict]         # cuBLAS's own records, each precision and layout
    cublas_tf32: list[dict]         # those of TF32, the steps' common baseline
    cublas_by_id: dict[str, dict]
    best_tf32: dict | None          # the fastest cuBLAS TF32 record that ran
    steps: list[Step]
    headline: dict | None           # the headline kernel against the first step; None below two measured steps
    story: list[Step]               # the reference deck's last measured step, then each measured one past it
    waves: dict | None              # the headline's last wave (waves)
    baseline_range: dict | None     # cuBLAS TF32 in turns, where it moves from row to row
    profiled: bool                  # a kernel of the story was profiled: a counters column
    staged_epilogue: bool           # a step of the story stages its epilogue through shared memory
    reference_errors: list[dict]    # error_groups of the reference deck's steps


def has_figure(v: dict) -> bool:
    """A kernel that ran to a figure: timed, and not failed."""
    return bool(v["tflops"]) and not v["failed"]


def context(deck) -> Gemm:
    device = deck.of(slides.device)
    cublas = {(precision, layout): {**deck.record(catalogue.cublas_id(precision, layout)),
                                    "precision": precision, "layout": layout, "layout_name": catalogue.LAYOUTS[layout]}
              for precision in catalogue.CUBLAS_PRECISIONS for layout in catalogue.cublas_layouts(precision)}
    tf32 = [r for (precision, _), r in cublas.items() if precision == "tf32"]
    best_tf32 = max((r for r in tf32 if r["measured"] and not r["failed"]), key=lambda r: r["tflops"], default=None)
    shape = reference_shape(deck.doc)
    by_id = {r["id"]: r for r in cublas.values()}
    steps: list[Step] = []
    for i, step in enumerate(catalogue.STEPS, 1):
        # the naive FP32 kernel against cuBLAS FP32, every other against cuBLAS of its precision and layout
        steps.append(step_shown(deck, i, step, cublas[(step.precision, step.layout)], by_id, device, shape, steps))
    measured_steps = [s for s in steps if has_figure(s.best)]
    headline = headline_of(steps, measured_steps)
    # What the reference deck left on the table, as built here: its last step, then each step past it.
    reference_last = [s for s in measured_steps if not s.beyond][-1:]
    story = reference_last + [s for s in measured_steps if s.beyond]
    story = story if len(story) >= 2 else []
    return Gemm(shape=shape, reference_last=[s.title for s in catalogue.STEPS if not s.beyond][-1],
                cublas_rows=list(cublas.values()), cublas_tf32=tf32, cublas_by_id=by_id, best_tf32=best_tf32,
                steps=steps, headline=headline, story=story,
                waves=waves(headline["to"]["resources"], headline["to"]["occupancy"], device, shape) if headline and shape else None,
                baseline_range=baseline_range(steps, device),
                profiled=any(s.best["tensor_pct"] is not None for s in story),
                staged_epilogue=any("EPILOGUE_N" in ((s.best["resources"] or {}).get("tile") or {}) for s in story),
                reference_errors=error_groups([s for s in steps if not s.beyond]))


def step_shown(deck, i: int, step: catalogue.Step, baseline: dict, by_id: dict, device: dict, shape: dict | None,
            before: list[Step]) -> Step:
    """Step ``i`` of the catalogue, after the steps ``before`` it: its kernels' results, the best's
    against the best of the last step before that ran to a figure, its code walk from the step just before."""
    title = f"Kernel {i}: {step.title}"
    variants = [variant_of(pair_with_cublas(deck.record(v.id), by_id), v.label,
                           f"{step.title} ({v.label})" if len(step.variants) > 1 else step.title, step, device)
                for v in step.variants]
    for slide in ("Code", "Diagram", "Performance"):
        deck.need(f"{title} — {slide}", *(v["id"] for v in variants))
    measured_before = [s for s in before if has_figure(s.best)]
    prev = measured_before[-1] if measured_before else None
    usable = has_figure(variants[-1])
    best = {**variants[-1], **against_before(variants[-1], prev, step.precision)} if usable and prev else variants[-1]
    # the diagram is drawn from the launch configuration the measured run recorded
    res = best["resources"] or {}
    block = block_shape(res, shape) if "tile" not in res and res and shape else None
    code = code_view(step.code, step.focus, deck.out_dir)
    climb_svg = f"climb_{step.key}.svg" if usable and best["baseline"] else None
    skip_reason = "; ".join(dict.fromkeys(v["reason"] for v in variants if v["status"] == "skipped"))
    return Step(index=i, key=step.key, title=step.title, name=best["name"], slide_title=title,
                technique=step.technique, layout=step.layout, layout_name=catalogue.LAYOUTS[step.layout],
                precision=step.precision, beyond=step.beyond, sweep_id=step.sweep_id, baseline=baseline,
                source=step.code, code=code, walk_from=walk_from(before[-1] if before else None, code),
                variants=[*variants[:-1], best], best=best,
                measured=any(v["measured"] for v in variants),
                skip_reason=skip_reason, not_measured_said=not_measured_said(skip_reason),
                ran=ran(best), on_climb=on_climb(best), block=block, diagram=f"gemm_{step.key}.svg" if block or "tile" in res else None,
                draw=step.diagram, drawn_from=drawn_from(res, block), reveals=REVEALS.get(step.diagram, []),
                loop_before={"title": prev.title, "variant": prev.best} if prev else None,
                climb=climb_svg, outranked_by=outranked(best, measured_before) if climb_svg else None)


def variant_of(r: dict, label: str, name: str, step: catalogue.Step, device: dict) -> dict:
    """A kernel of a step as its rows show it (``r``: its result beside its cuBLAS): its launch, its
    occupancy and profile; how its operands became TF32; and, empty until against_before fills them
    for a step's best, its change against the step before."""
    res = r["record"].get("resources")
    prof = r["record"].get("profile")
    # how FP32 operands become TF32: rounded by the TMA copy, or cut to their top bits by a
    # wgmma that reads them from shared memory as they are
    rounded = ((res or {}).get("tma") or {}).get("a", {}).get("data_type") == TF32_TENSOR_MAP
    held = occupancy(res, device) if res else None
    return {**r, "label": label, "name": name, "resources": res,
            "occupancy": held, "occupancy_said": occupancy_said(held),
            "odd_shape": odd_shape(r["record"].get("odd_shape")),
            "profile": [{"name": prof["names"][m], "value": v} for m, v in prof["metrics"].items()] if prof else None,
            "busiest": busiest_unit(prof) if prof else None,
            "tensor_pct": prof["metrics"].get(TENSOR_PIPE) if prof else None,
            "tf32_operands": (None if step.precision != "tf32" or "HGMMA" not in step.sass
                              else "rounded" if rounded else "truncated"),
            # the row of a kernel that did not run: why, where the runner skipped it
            "skipped": f"skipped: {r['reason']}" if r["status"] == "skipped" else None,
            **cublas_clauses(r),
            "speedup_over": None, "change": None, "against_said": "", "error_before": None, "precision_before": None,
            "error_moved": False, "error_why": "", "moved": None, "moved_said": ""}


def occupancy_said(o: dict | None) -> str:
    """The notes' sentence on what each SM holds of the kernel and what limits it (``o``: its occupancy,
    None where it has no resources)."""
    if not o:
        return ""
    return (f"Each SM holds {fmt_count(o['blocks_per_sm'], 'block')}, "
            f"{o['warps_per_sm']} warps in all, limited by {o['limited_by']}.")


def odd_shape(odd: dict | None) -> dict | None:
    """What the kernel did at a shape no tile divides, with the notes' clause on why (``because``)."""
    return odd and {**odd, "because": f", as {odd['reason']}" if odd.get("reason") else ""}


def cublas_clauses(r: dict) -> dict:
    """What a kernel's notes and results slide add where its record holds the figure: its share of its
    cuBLAS in turns, the spread of their ratio sample by sample."""
    return {"beside_cublas": (f", {r['pct_cublas']:,.1f}% of cuBLAS {r['baseline']['precision']}, "
                              f"which ran {r['baseline_tflops']:,.1f} in the same turns") if r["baseline"] else "",
            "spread_said": (f"; each sample's ratio spreads {100 * r['ratio_spread']:,.1f}% (tenth to ninetieth percentile)"
                            if r["ratio_spread"] is not None else "")}



def ratio_said(ratio: float, in_percent: bool, digits: int = 1) -> str:
    """A ratio as a change says it: a signed percentage where it is small (+3.2%), else a multiple (2.1×)."""
    return f"{fmt_change(ratio)}%" if in_percent else f"{fmt_num(ratio, digits)}×"


def interval_said(ci: list[float], in_percent: bool) -> str:
    """An interval of a ratio, as ratio_said says its point: -0.4 to +1.2%, or 1.95× to 2.03×, a
    multiple's bounds to as many decimals (up to four) as keep them apart: 2.917× to 2.923×."""
    low, high = ci
    if in_percent:
        return f"{fmt_change(low)} to {fmt_change(high)}%"
    digits = next((d for d in (2, 3) if fmt_num(low, d) != fmt_num(high, d)), 4)
    return f"{fmt_num(low, digits)}× to {fmt_num(high, digits)}×"

def against_before(best: dict, prev: Step, precision: str) -> dict:
    """A step's best against ``prev``'s best, the step before that ran to a figure: its speedup (timed in
    turns with it where the record holds the pair), whether its error moved with the step and why,
    and the counter that moved most."""
    paired = gain_in_turns(best, prev.best["id"])
    if paired:       # timed in turns with the step before: a change is one its interval excludes
        speedup = paired["gain"]
        tie = paired["ci"][0] <= 1 <= paired["ci"][1]     # a measured pair whose interval holds no change
        change = {"in_turns": True, "ci": paired["ci"], "within_noise": tie, "tie": tie,
                  "slower": paired["ci"][1] < 1, "tflops": paired["tflops"], "before_tflops": paired["before_tflops"],
                  # one clock for these turns, the record's (over all their samples), as
                  # the title and the climb give it; each kernel's own differs by a MHz or so
                  "clock_mhz": best["clock_mhz"],
                  "at_clock": f", SMs at {best['clock_mhz']:,.0f} MHz" if best["clock_mhz"] else ""}
    else:            # records timed apart (older runs): a change within their spread is a tie
        speedup = best["tflops"] / prev.best["tflops"]
        noise = max(spread(best["time_ms"]), spread(prev.best["time_ms"]))
        change = {"in_turns": False, "noise_pct": 100 * noise, "tie": False,   # no pair to call one from
                  "within_noise": abs(speedup - 1) < noise, "slower": speedup < 1}
    # under a tenth, a ratio to one decimal reads 1.0x: the change is said in percent
    in_percent = abs(speedup - 1) < PERCENT_BELOW
    point, interval = ratio_said(speedup, in_percent), interval_said(change["ci"], in_percent) if change["in_turns"] else None
    change = {**change, "in_percent": in_percent, "versus": "against" if in_percent else "over",
              **change_said(change, point, interval, prev.title), "point": point, "interval": interval}
    before = prev.best["check"]
    error_before = before["rel_error"] if before and best["check"] else None
    # the error moved with the step where it changed by more than ERROR_MOVED either way
    error_moved = bool(error_before and best["check"]["rel_error"]
                       and max(error_before / best["check"]["rel_error"], best["check"]["rel_error"] / error_before) > ERROR_MOVED)
    profiled = best["record"].get("profile"), prev.best["record"].get("profile")
    moved = moved_most(*profiled) if all(profiled) else None
    return {"speedup_over": prev.title, "speedup": speedup, "change": change,
            "against_said": f"Against {prev.title}: {change['noted']}.",
            "error_before": error_before, "error_moved": error_moved, "precision_before": prev.precision,
            "error_why": error_why(precision, prev.precision, best["tf32_operands"]),
            "moved": moved, "moved_said": moved_said(moved)}


def change_said(change: dict, point: str, interval: str | None, before: str) -> dict:
    """What the performance slide says after a change's figure: the step it is against and how the two
    were timed (against), then the verdict; and what its notes say of it (noted). A tie in turns is
    said in words of its own."""
    if change["in_turns"]:
        return {"against": f"{before} in turns (interval {interval})",
                "verdict": ": slower, the whole interval below no change" if change["slower"] else ": a gain",
                "noted": "a tie, timed in turns" if change["tie"] else
                         f"{point}, timed in turns, {'slower' if change['slower'] else 'a gain'}"}
    spread_ = f"the two timings spread ({change['noise_pct']:,.1f}%)"
    return {"against": f"{before}, the previous step measured apart",
            "verdict": f": less than {spread_}, a tie as far as this run can tell" if change["within_noise"]
            else f": slower by more than {spread_}" if change["slower"] else "", "noted": point}


def error_why(precision: str, before: str, tf32_operands: str | None) -> str:
    """Why a step's error moved from the step before's, as its performance slide says it: other
    operands, or how FP32 operands became TF32; nothing where neither explains it."""
    if precision != before:
        return f": {precision.upper()} operands in place of {before.upper()}"
    return {"rounded": ": the TMA copy rounds each FP32 operand to the nearest TF32",
            "truncated": ": wgmma keeps only the TF32 bits of the FP32 operands in shared memory, truncating"}.get(tf32_operands, "")


def moved_said(moved: dict | None) -> str:
    """The counter that moved most against the step before, as the performance slide adds it."""
    if moved is None:
        return ""
    if moved["name"] is None:
        return f"; no counter moved {moved['within']} points from the step before"
    return f"; moved most from the step before: {moved['name']}, {moved['before']:,.0f}% → {moved['after']:,.0f}%"


def walk_from(before: Step | None, code: dict | None) -> dict | None:
    """The code walk: the slide morphs from the step before's lines to this one's, where both are of
    one language and differ; the clicks that light what this step adds."""
    if not (before and before.code and code and before.code["language"] == code["language"]
            and before.code["text"] != code["text"]):
        return None
    clicks = lit_clicks(before.code["text"], code["text"])
    return {"text": before.code["text"], "index": before.index, "title": before.title,
            "clicks": clicks, "highlight": highlight_of(clicks), "changed": changed_lines(before.code["text"], code["text"])}


def not_measured_said(skip_reason: str) -> str:
    """The performance slide's notes where none of a step's kernels ran: why, where the runner said."""
    why = f" ({skip_reason})" if skip_reason else ""
    return f"The kernels of this step are not measured on this GPU{why}: python -m bench measures them, python build.py fills this slide."


def ran(best: dict) -> str:
    """The code slide's line on the figure its step's best kernel ran to."""
    if not best["tflops"]:
        return "It is not measured on this GPU; its performance slide says why."
    return f"It ran at {best['tflops']:,.1f} TFLOPS ({best['label']}); the performance slide sets that beside cuBLAS."


def on_climb(best: dict) -> str:
    """The results slide's line on the figure a step stands at on the climb."""
    return f"The step's figure on the climb is its best, {best['label']}." if best["tflops"] else "No variant ran to a figure here."


def drawn_from(res: dict, block: tuple[int, int] | None) -> str:
    """What a step's diagram was drawn from, as its notes say it: the constants the kernel was
    compiled with, or the launch the run recorded."""
    if "tile" in res:
        tile = res["tile"]
        stages = ("" if "STAGES" not in tile else ", one shared stage" if tile["STAGES"] == 1
                  else f", a ring of {tile['STAGES']} shared stages")
        cluster = f", clusters of {tile['CLUSTER_M']} CTAs" if tile.get("CLUSTER_M", 1) > 1 else ""
        return (f"Drawn from the constants the measured run compiled: a {tile['BM']} × {tile['BN']} tile of C per CTA, "
                f"K in steps of {tile['BK']}{stages}{cluster}; {res['threads_per_block']} threads a CTA.")
    if block:
        return f"Drawn from the launch the measured run recorded: blocks of {block[0]} × {block[1]} threads, one element of C each."
    return "Not measured on this GPU: nothing to draw the diagram from."


def outranked(best: dict, earlier: list[Step]) -> dict | None:
    """On a step's climb each bar is its own record, timed at the clock its own turns left it: an
    earlier step can stand higher than a step that beat it in turns. The highest such, for the notes."""
    top = max((e for e in earlier if e.best["tflops"] > best["tflops"]), key=lambda e: e.best["tflops"], default=None)
    return top and {"name": top.name, "tflops": top.best["tflops"], "clock_mhz": top.best["clock_mhz"],
                    # the two figures as the notes set them side by side, each at its clock where its record has one
                    "figure": f"{top.best['tflops']:,.1f} TFLOPS{at_clock(top.best['clock_mhz'])}",
                    "against": f"{best['tflops']:,.1f}{at_clock(best['clock_mhz'])}"}


def at_clock(mhz: float | None) -> str:
    return f" at {mhz:,.0f} MHz" if mhz else ""


def headline_of(steps: list[Step], measured_steps: list[Step]) -> dict | None:
    """The talk's headline, a role (catalogue.HEADLINE) rather than the fastest record: steps timed apart
    tie within their spreads, so the fastest stands in only where the headline did not run. None below
    two measured steps."""
    if len(measured_steps) < 2:
        return None
    first = measured_steps[0]
    top = next((s for s in measured_steps if s.best["id"] == catalogue.HEADLINE),
               max(measured_steps, key=lambda s: s.best["tflops"]))
    last = top.best
    during = last["record"]["telemetry"].get("during") or {}
    return {"from": first.best, "to": last, "to_title": top.title, "to_name": top.name,
            "speedup": last["tflops"] / first.best["tflops"],
            "climb": TITLE_CLIMB if top.climb else None, "climb_at": top.index - 1,
            # what held the clock down while it ran, as NVML names it
            "power_capped": "sw_power_cap" in (during.get("throttle_reasons") or []),
            "throttle_reasons": during.get("throttle_reasons") or [],
            # the talk's thesis: where the headline stands against cuBLAS, by the interval of
            # their sample-by-sample ratio in turns
            "standing": standing((last["record"].get("cublas") or {}).get("ratio_by_sample"))}


def baseline_range(steps: list[Step], device: dict) -> dict | None:
    """cuBLAS TF32 in turns beside each kernel: its figure moves with the clock the pair leaves it.
    Its lowest and highest, where they lie more than 5% apart, and why, as the results table says it."""
    paired = [v for s in steps for v in s.variants if v["baseline"] and v["baseline"]["precision"] == "TF32"]
    if not paired:
        return None
    lo, hi = (min(paired, key=lambda v: v["baseline_tflops"]), max(paired, key=lambda v: v["baseline_tflops"]))
    if hi["baseline_tflops"] <= 1.05 * lo["baseline_tflops"]:
        return None
    side = lambda v: {"tflops": v["baseline_tflops"], "beside": v["name"], "partner_tflops": v["tflops"],
                      "clock_mhz": v["clock_mhz"], "power_w": v["record"]["telemetry"]["during"]["power_w"]["median"]}
    # the clock explains the spread where cuBLAS ran faster at the higher clock; and the partner
    # does, where the faster cuBLAS took turns with the slower kernel
    clock_follows, slower_partner = (hi["clock_mhz"] or 0) > (lo["clock_mhz"] or 0), hi["tflops"] < lo["tflops"]
    return {"lo": side(lo), "hi": side(hi), "power_limit_w": device.power_limit_w,
            "clock_follows": clock_follows, "slower_partner": slower_partner,
            "why": spread_why(clock_follows, slower_partner, device.power_limit_w)}


def spread_why(clock_follows: bool, slower_partner: bool, cap_w: float) -> str:
    """Why cuBLAS TF32 in turns moved from row to row, as the results table says it."""
    if clock_follows and slower_partner:
        return f"a slower partner leaves the pair under the {cap_w:,.0f} W cap at a higher clock"
    if clock_follows:
        return (f"cuBLAS follows the clock the pair held under the {cap_w:,.0f} W cap, "
                "though its faster figure sat beside the faster kernel")
    return "not the clock, which was higher beside the slower figure"


def error_groups(steps: list[Step]) -> list[dict]:
    """The steps' errors as a speaker says them: one group per (kernel's, cuBLAS's) pair as the slides
    print them, with the steps whose kernels erred so (and how many kernels, where a step had several),
    and whether the two are alike; ``said``, the group as the results table's notes say it."""
    groups: dict[tuple[str, str], list[str]] = {}
    for step in steps:
        for v in step.variants:
            if v["baseline"] and v.get("check"):
                pair = (f"{v['check']['rel_error']:.1e}", f"{v['baseline']['error']:.1e}")
                groups.setdefault(pair, []).append(step.title)
    out = []
    for (error, cublas), titles in groups.items():
        kernels = len(titles) if len(set(titles)) < len(titles) else None
        steps_ = list(dict.fromkeys(titles))
        out.append({"error": error, "cublas": cublas, "alike": error == cublas, "steps": steps_, "kernels": kernels,
                    "said": f"{', '.join(steps_)}{f' ({kernels} kernels)' if kernels else ''} erred by {error}, "
                            + ("as cuBLAS did" if error == cublas else f"where cuBLAS erred by {cublas}")})
    return out


# --- figures --------------------------------------------------------------------------------------

def gemm_progression(gemm: Gemm) -> str:
    """Each step's TFLOPS beside cuBLAS TF32 on both layouts."""
    bars = [Bar(v["name"], v["tflops"],
                MISSING if v["failed"] else ACCENT, "check failed" if v["failed"] else "")
            for s in gemm.steps for v in s.variants]
    bars += [Bar(f"cuBLAS TF32, {r['layout_name']}, alone", r["tflops"], REF) for r in gemm.cublas_tf32]
    return bar_chart(bars, "TFLOPS at the reference shape", height=318)


# The climb's size on a step's performance slide, where it is the slide's picture, and on the
# title slide, which shares the canvas with the thesis and the headline's words
(CLIMB_WIDTH, CLIMB_HEIGHT), (TITLE_CLIMB_WIDTH, TITLE_CLIMB_HEIGHT) = (760, 180), (560, 100)
TITLE_CLIMB = "climb_title.svg"


def climb_of(gemm: Gemm, at: int, width: int = CLIMB_WIDTH, height: int = CLIMB_HEIGHT, detail: bool = True) -> str:
    """Where step ``at`` (0-based) stands on the climb: every step's best TFLOPS, this one's partner
    cuBLAS (in turns with it) across; with ``detail``, its caption says that a gain is a pair in turns
    and the clock the SMs ran at in this step's."""
    best = gemm.steps[at].best
    values = [s.best["tflops"] if has_figure(s.best) else None for s in gemm.steps]
    clock = f"; this step with cuBLAS at {best['clock_mhz']:,.0f} MHz" if best["clock_mhz"] else ""
    caption = "TFLOPS, each bar its own run and clock" + (f"; gains: pairs in turns{clock}" if detail else "")
    # the baseline named whole (precision and layout): on a main slide the climb is the comparison's table
    layout = best['baseline']['layout_name'].split(" (")[0]          # B K-major, B row-major: its short name
    label = f"cuBLAS {best['baseline']['precision']}, {layout}, in turns: {best['baseline_tflops']:,.1f}"
    return climb(values, at, Line("y", best["baseline_tflops"], label, REF), caption, width=width, height=height)


def draw(own: Gemm, deck) -> dict[str, str]:
    svgs = {"gemm_progression.svg": gemm_progression(own)}
    for at, step in enumerate(own.steps):
        if step.climb:
            svgs[step.climb] = climb_of(own, at)
    if (headline := own.headline) and headline["climb"]:
        svgs[headline["climb"]] = climb_of(own, headline["climb_at"], TITLE_CLIMB_WIDTH, TITLE_CLIMB_HEIGHT, detail=False)
    for step in own.steps:
        if step.diagram:
            drawn = DIAGRAMS[step.draw](step, own.shape)
            base, *over = drawn if isinstance(drawn, list) else [drawn]     # a figure in layers: one a click
            svgs[step.diagram] = base
            svgs.update({layer_name(step.diagram, i): svg for i, svg in enumerate(over, 1)})
    return svgs
