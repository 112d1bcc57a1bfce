"""The GEMM steps as measured: each step of the catalogue (bench/gemm/catalogue.py) with its kernels'
results, its baseline cuBLAS (timed in turns with it), occupancy, waves and profile, its code as
the code slides show it, and the headline. Read by the setup, kernels, results, missing and backup
sections; draws the progression and each step's diagram."""
from __future__ import annotations

import difflib
import math
import os
import textwrap
from pathlib import Path

from markupsafe import Markup

from bench.gemm import catalogue, plan
from bench.core.stats import spread
from slides.diagrams import DIAGRAMS
from slides.kit import layer_name
from slides.step_diagrams import REVEALS
from slides.kit import ACCENT, Bar, Line, MISSING, REF, bar_chart, climb
from slides.records import ROOT, BuildError
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
    at_once = resources.get("resident_ctas") or device["sm_count"] * occupancy_["blocks_per_sm"]
    n = tiles / at_once
    out = {"tiles": tiles, "at_once": at_once, "waves": n, "full_waves": math.ceil(n),
           "last_wave_ctas": tiles - (math.ceil(n) - 1) * at_once, "idle_pct": 100 * (1 - n / math.ceil(n)),
           "split": None}
    split = resources.get("split_wave")
    if split and split["left"]:
        # the last wave lasts as long as an owner's part or a helper's run of tails, whichever is longer
        k = split["k_tiles"]
        last = max(split["split"], split["rounds"] * (k - split["split"])) / k
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
    lines up with the page before."""
    over = max(map(len, lines)) - CODE_COLUMNS
    indent = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
    cut = max(0, min(over, indent))
    return "\n".join(line[cut:] if line.strip() else line.strip() for line in lines)


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
            "shown": None, "first": 1, "pages": [], "text": textwrap.dedent("\n".join(region))}
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
        pages.append({"text": _within_columns(page), "first": first, "last": first + len(page) - 1})
        first += len(page)
    shown = textwrap.dedent("\n".join(region[start:end + 1]))
    return {**view, "shown": shown, "text": shown, "first": start + 1, "last": end + 1, "pages": pages}


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
    comment (the author's words for the idea), else the longest run, at most CHANGED_LINES of it, and
    how many lines the step adds in all; None where it adds none."""
    runs = added_runs(before, after)
    if not runs:
        return None
    lines = after.splitlines()
    commented = [(lo, hi) for lo, hi in runs if any(_comment(line) for line in lines[lo - 1:hi])]
    lo, hi = max(commented or runs, key=lambda run: run[1] - run[0])
    shown = lines[lo - 1:min(hi, lo + CHANGED_LINES - 1)]
    return {"text": textwrap.dedent("\n".join(shown)), "first": lo, "last": lo + len(shown) - 1,
            "added": sum(hi - lo + 1 for lo, hi in runs)}


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
    """A kernel's result (a deck.record) with its baseline: cuBLAS of the kernel's precision and
    layout, on the same operands, timed in turns with it (bench/gemm/harness.py); its
    figures are that timing's. ``by_id``: the cuBLAS records by benchmark id."""
    versus = r["record"].get("cublas")
    r["baseline"], r["ratio_spread"] = None, None
    if versus and r["tflops"]:
        base = by_id[versus["id"]]
        r["baseline"] = {"id": versus["id"], "precision": base["precision"].upper(),
                         "layout_name": base["layout_name"], "timing": "in turns",
                         "tflops": versus["tflops"], "time_ms": versus["time_ms"],
                         "error": versus["check"]["rel_error"], "check": versus["check"]}
        r["baseline_tflops"] = versus["tflops"]
        r["pct_cublas"] = 100 * r["tflops"] / versus["tflops"]
        # sample by sample: what is left of the spread once both meet the same clock
        r["ratio_spread"] = spread(versus["ratio_by_sample"]) if "ratio_by_sample" in versus else None
    return r


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


def context(deck) -> dict:
    device = deck.of(slides.device)
    cublas = {}
    for precision in catalogue.CUBLAS_PRECISIONS:
        for layout in catalogue.cublas_layouts(precision):
            r = deck.record(catalogue.cublas_id(precision, layout))
            r.update(precision=precision, layout=layout, layout_name=catalogue.LAYOUTS[layout])
            cublas[(precision, layout)] = r
    tf32 = [r for (precision, _), r in cublas.items() if precision == "tf32" and r["measured"] and not r["failed"]]
    best_tf32 = max(tf32, key=lambda r: r["tflops"]) if tf32 else None

    shape = reference_shape(deck.doc)
    by_id = {r["id"]: r for r in cublas.values()}
    steps, prev = [], None
    for i, step in enumerate(catalogue.STEPS, 1):
        baseline = cublas[(step.precision, step.layout)]     # the naive FP32 kernel against cuBLAS FP32
        title = f"Kernel {i}: {step.title}"
        variants = []
        for variant in step.variants:
            r = deck.record(variant.id)
            r["label"] = variant.label
            pair_with_cublas(r, by_id)
            res = r["record"].get("resources")
            r["resources"] = res
            r["occupancy"] = occupancy(res, device) if res else None
            r["odd_shape"] = r["record"].get("odd_shape")
            prof = r["record"].get("profile")
            r["profile"] = [{"name": prof["names"][m], "value": v} for m, v in prof["metrics"].items()] if prof else None
            r["busiest"] = busiest_unit(prof) if prof else None
            r["tensor_pct"] = prof["metrics"].get(TENSOR_PIPE) if prof else None
            # how FP32 operands become TF32: rounded by the TMA copy, or cut to their top bits by a
            # wgmma that reads them from shared memory as they are
            rounded = ((res or {}).get("tma") or {}).get("a", {}).get("data_type") == TF32_TENSOR_MAP
            r["error_before"] = r["precision_before"] = r["change"] = None   # the best's, against the step before's best
            r["error_moved"] = False
            r["moved"] = None        # the counter that moved most against the step before's best
            r["tf32_operands"] = (None if step.precision != "tf32" or "HGMMA" not in step.sass
                                  else "rounded" if rounded else "truncated")
            variants.append(r)
        for slide in ("Code", "Diagram", "Performance"):
            deck.need(f"{title} — {slide}", *(v["id"] for v in variants))
        best = variants[-1]
        usable = best["tflops"] and not best["failed"]
        # the diagram is drawn from the launch configuration the measured run recorded
        res = best["resources"] or {}
        block = block_shape(res, shape) if "tile" not in res and res and shape else None
        drawable = block or "tile" in res
        diagram = f"gemm_{step.key}.svg" if drawable else None
        if usable and prev:
            best["speedup_over"] = prev["title"]
            paired = gain_in_turns(best, prev["best"]["id"])
            if paired:       # timed in turns with the step before: a change is one its interval excludes
                best["speedup"] = paired["gain"]
                tie = paired["ci"][0] <= 1 <= paired["ci"][1]     # a measured pair whose interval holds no change
                best["change"] = {"in_turns": True, "ci": paired["ci"], "within_noise": tie, "tie": tie,
                                  "slower": paired["ci"][1] < 1, "tflops": paired["tflops"], "before_tflops": paired["before_tflops"],
                                  # one clock for these turns, the record's (over all their samples), as
                                  # the title and the climb give it; each kernel's own differs by a MHz or so
                                  "clock_mhz": best["clock_mhz"]}
            else:            # records timed apart (older runs): a change within their spread is a tie
                best["speedup"] = best["tflops"] / prev["best"]["tflops"]
                noise = max(spread(best["time_ms"]), spread(prev["best"]["time_ms"]))
                best["change"] = {"in_turns": False, "noise_pct": 100 * noise, "tie": False,   # no pair to call one from
                                  "within_noise": abs(best["speedup"] - 1) < noise, "slower": best["speedup"] < 1}
            # under a tenth, a ratio to one decimal reads 1.0x: the change is said in percent
            best["change"]["in_percent"] = abs(best["speedup"] - 1) < PERCENT_BELOW
            before = prev["best"]["check"]
            best["error_before"] = before["rel_error"] if before and best["check"] else None
            # the error moved with the step where it changed by more than ERROR_MOVED either way
            best["error_moved"] = bool(best["error_before"] and best["check"]["rel_error"]
                                       and max(best["error_before"] / best["check"]["rel_error"],
                                               best["check"]["rel_error"] / best["error_before"]) > ERROR_MOVED)
            best["precision_before"] = prev["precision"]
            profiled = best["record"].get("profile"), prev["best"]["record"].get("profile")
            best["moved"] = moved_most(*profiled) if all(profiled) else None
        # a step of one kernel is named by its title; of several, each kernel by its title and label
        for v in variants:
            v["name"] = f"{step.title} ({v['label']})" if len(variants) > 1 else step.title
        code = code_view(step.code, step.focus, deck.out_dir)
        before_code = steps[-1]["code"] if steps else None
        # the code walk: the slide morphs from the step before's lines to this one's, where both are
        # of one language and differ
        walk_from = None
        if before_code and code and before_code["language"] == code["language"] and before_code["text"] != code["text"]:
            clicks = lit_clicks(before_code["text"], code["text"])
            walk_from = {"text": before_code["text"], "index": steps[-1]["index"], "title": steps[-1]["title"],
                         "clicks": clicks, "highlight": highlight_of(clicks),
                         "changed": changed_lines(before_code["text"], code["text"])}
        steps.append({"index": i, "key": step.key, "walk_from": walk_from,
                      # the step before's best, for a diagram that sets the two side by side
                      "loop_before": {"title": prev["title"], "variant": prev["best"]} if prev else None,
                      # the climb on its performance slide: its best against its cuBLAS in turns
                      "climb": f"climb_{step.key}.svg" if usable and best["baseline"] else None, "sweep_id": step.sweep_id, "title": step.title, "name": best["name"], "slide_title": title,
                      "technique": step.technique, "layout": step.layout, "layout_name": catalogue.LAYOUTS[step.layout],
                      "precision": step.precision, "baseline": baseline,
                      "source": step.code, "code": code, "beyond": step.beyond,
                      "variants": variants, "best": best, "block": block, "diagram": diagram, "draw": step.diagram,
                      "reveals": REVEALS.get(step.diagram, []), "outranked_by": None,
                      "measured": any(v["measured"] for v in variants),
                      "skip_reason": "; ".join(dict.fromkeys(v["reason"] for v in variants if v["status"] == "skipped"))})
        if usable:
            prev = steps[-1]
    measured_steps = [s for s in steps if s["best"]["tflops"] and not s["best"]["failed"]]
    # On a step's climb each bar is its own record, timed at the clock its own turns left it: an
    # earlier step can stand higher than a step that beat it in turns. The highest such, for the notes.
    for at, s in enumerate(measured_steps):
        higher = [e for e in measured_steps[:at] if e["best"]["tflops"] > s["best"]["tflops"]]
        top = max(higher, key=lambda e: e["best"]["tflops"], default=None)
        s["outranked_by"] = top and {"name": top["name"], "tflops": top["best"]["tflops"],
                                     "clock_mhz": top["best"]["clock_mhz"]}
    headline = None
    if len(measured_steps) >= 2:
        # the talk's headline is a role (catalogue.HEADLINE), not the fastest record: steps timed
        # apart tie within their spreads; the fastest stands in only where the headline did not run
        first = measured_steps[0]
        top = next((s for s in measured_steps if s["best"]["id"] == catalogue.HEADLINE),
                   max(measured_steps, key=lambda s: s["best"]["tflops"]))
        last = top["best"]
        during = last["record"]["telemetry"].get("during") or {}
        headline = {"from": first["best"], "to": last, "to_title": top["title"], "to_name": top["name"],
                    "speedup": last["tflops"] / first["best"]["tflops"],
                    "climb": TITLE_CLIMB if top["climb"] else None, "climb_at": steps.index(top),
                    # what held the clock down while it ran, as NVML names it
                    "power_capped": "sw_power_cap" in (during.get("throttle_reasons") or []),
                    "throttle_reasons": during.get("throttle_reasons") or [],
                    # the talk's thesis: where the headline stands against cuBLAS, by the interval of
                    # their sample-by-sample ratio in turns
                    "standing": standing((last["record"].get("cublas") or {}).get("ratio_by_sample"))}
    # What the reference deck left on the table, as built here: its last step, then each step past it.
    reference_last = [s for s in measured_steps if not s["beyond"]][-1:]
    story = reference_last + [s for s in measured_steps if s["beyond"]]
    story = story if len(story) >= 2 else []
    top_waves = waves(headline["to"]["resources"], headline["to"]["occupancy"], device, shape) if headline and shape else None
    # cuBLAS in turns beside each kernel: its figure moves with the clock the pair leaves it
    paired = [v for s in steps for v in s["variants"] if v["baseline"] and v["baseline"]["precision"] == "TF32"]
    lo, hi = (min(paired, key=lambda v: v["baseline_tflops"], default=None),
              max(paired, key=lambda v: v["baseline_tflops"], default=None))
    baseline_range = None
    if lo and hi["baseline_tflops"] > 1.05 * lo["baseline_tflops"]:
        side = lambda v: {"tflops": v["baseline_tflops"], "beside": v["name"], "partner_tflops": v["tflops"],
                          "clock_mhz": v["clock_mhz"], "power_w": v["record"]["telemetry"]["during"]["power_w"]["median"]}
        baseline_range = {"lo": side(lo), "hi": side(hi), "power_limit_w": device["power_limit_w"],
                          # the clock explains the spread where cuBLAS ran faster at the higher clock; and the
                          # partner does, where the faster cuBLAS took turns with the slower kernel
                          "clock_follows": (hi["clock_mhz"] or 0) > (lo["clock_mhz"] or 0),
                          "slower_partner": hi["tflops"] < lo["tflops"]}
    staged_epilogue = any("EPILOGUE_N" in ((s["best"]["resources"] or {}).get("tile") or {}) for s in story)
    return {"shape": shape, "reference_last": [s.title for s in catalogue.STEPS if not s.beyond][-1],
            "cublas": cublas, "cublas_rows": list(cublas.values()), "cublas_by_id": by_id, "best_tf32": best_tf32,
            "steps": steps, "headline": headline, "story": story, "waves": top_waves, "baseline_range": baseline_range,
            # a counters column only where a kernel of the story was profiled
            "profiled": any(s["best"].get("tensor_pct") is not None for s in story),
            "staged_epilogue": staged_epilogue, "reference_errors": error_groups([s for s in steps if not s["beyond"]])}


def error_groups(steps: list[dict]) -> list[dict]:
    """The steps' errors as a speaker says them: one group per (kernel's, cuBLAS's) pair as the slides
    print them, with the steps whose kernels erred so (and how many kernels, where a step had several),
    and whether the two are alike."""
    groups: dict[tuple[str, str], list[str]] = {}
    for step in steps:
        for v in step["variants"]:
            if v["baseline"] and v.get("check"):
                pair = (f"{v['check']['rel_error']:.1e}", f"{v['baseline']['error']:.1e}")
                groups.setdefault(pair, []).append(step["title"])
    return [{"error": error, "cublas": cublas, "alike": error == cublas, "steps": list(dict.fromkeys(titles)),
             "kernels": len(titles) if len(set(titles)) < len(titles) else None} for (error, cublas), titles in groups.items()]


# --- figures --------------------------------------------------------------------------------------

def gemm_progression(gemm: dict) -> str:
    """Each step's TFLOPS beside cuBLAS TF32 on both layouts."""
    bars = [Bar(v["name"], v["tflops"],
                MISSING if v["failed"] else ACCENT, "check failed" if v["failed"] else "")
            for s in gemm["steps"] for v in s["variants"]]
    bars += [Bar(f"cuBLAS TF32, {r['layout_name']}, alone", r["tflops"], REF)
             for r in gemm["cublas_rows"] if r["precision"] == "tf32"]
    return bar_chart(bars, "TFLOPS at the reference shape", height=330)


# The climb's size on a step's performance slide, where it is the slide's picture, and on the
# title slide, which shares the canvas with the thesis and the headline's words
(CLIMB_WIDTH, CLIMB_HEIGHT), (TITLE_CLIMB_WIDTH, TITLE_CLIMB_HEIGHT) = (760, 180), (560, 100)
TITLE_CLIMB = "climb_title.svg"


def climb_of(gemm: dict, at: int, width: int = CLIMB_WIDTH, height: int = CLIMB_HEIGHT) -> str:
    """Where step ``at`` (0-based) stands on the climb: every step's best TFLOPS, this one's partner
    cuBLAS (in turns with it) across, with the clock the SMs ran at in those turns."""
    step = gemm["steps"][at]
    best = step["best"]
    values = [s["best"]["tflops"] if s["best"]["tflops"] and not s["best"]["failed"] else None for s in gemm["steps"]]
    clock = f"; this step's turns with cuBLAS at {best['clock_mhz']:,.0f} MHz" if best["clock_mhz"] else ""
    # the baseline named whole (precision and layout): on a main slide the climb is the comparison's table
    layout = best['baseline']['layout_name'].split(" (")[0]          # B K-major, B row-major: its short name
    label = f"cuBLAS {best['baseline']['precision']}, {layout}, in turns: {best['baseline_tflops']:,.1f}"
    return climb(values, at, Line("y", best["baseline_tflops"], label, REF), f"TFLOPS, each step's best at its own run's clock{clock}", width=width, height=height)


def draw(own, deck) -> dict[str, str]:
    gemm = own
    svgs = {"gemm_progression.svg": gemm_progression(gemm)}
    for at, step in enumerate(gemm["steps"]):
        if step["climb"]:
            svgs[step["climb"]] = climb_of(gemm, at)
    if (headline := gemm["headline"]) and headline["climb"]:
        svgs[headline["climb"]] = climb_of(gemm, headline["climb_at"], TITLE_CLIMB_WIDTH, TITLE_CLIMB_HEIGHT)
    for step in gemm["steps"]:
        if step["diagram"]:
            drawn = DIAGRAMS[step["draw"]](step, gemm["shape"])
            base, *over = drawn if isinstance(drawn, list) else [drawn]     # a figure in layers: one a click
            svgs[step["diagram"]] = base
            svgs.update({layer_name(step["diagram"], i): svg for i, svg in enumerate(over, 1)})
    return svgs
