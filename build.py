"""Render the Slidev deck (slides.md) and its figures (svgs/) from a results file.

    python build.py [--results results/<gpu>.yaml]

All data is gathered and every derived number computed into one context first (slides/deck.py,
one module per section beside its template); the templates in slides/ only format it. Nothing is
written unless the results file validates and every template renders."""
from __future__ import annotations

import signal
import sys


def _stop(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _stopped(e: KeyboardInterrupt) -> int:
    """A stop (Ctrl-C, SIGTERM) is one line: the deck changes in one rename, so the old one is whole,
    or the new one where the stop came while it was written (it waits for the rename)."""
    name = e.args[0] if e.args else "SIGINT"
    written = type(e).__name__ == "StoppedAfterWriting"
    print(f"build.py: stopped by {name}; " + ("the new deck was written whole." if written else
                                             "the previous deck is as it was."), file=sys.stderr)
    return 128 + signal.Signals[name].value


if __name__ == "__main__":          # from here on, even during the imports
    signal.signal(signal.SIGTERM, _stop)
try:
    import argparse
    import re
    import time
    from pathlib import Path

    from bench.core import schema
    from slides import escape, talk
    from slides.deck import Deck, render, write_deck
    from slides.records import ROOT, BuildError
    from slides.outline import TALKS
except KeyboardInterrupt as stop:
    sys.exit(_stopped(stop))

DEFAULT_RESULTS = ROOT / "results" / "nvidia-h100-80gb-hbm3.yaml"
NODE_FILE = re.compile(r"-x(\d+)\.yaml$")      # results/<gpu-slug>-x<GPUs>.yaml: a node's file
NODE_SECTION, COMPARISON = "multi-GPU section", "comparison"      # where a file beside the results goes
FULL = "full"                       # the whole study in the outline's order, no talk cut from it


def comparable_files(results: Path) -> list[Path]:
    """The other GPUs' results files beside ``results``: what the comparison section sets beside it."""
    return sorted(p for p in Path(results).parent.glob("*.yaml")
                  if p.resolve() != Path(results).resolve() and not NODE_FILE.search(p.name))


def node_files(results: Path) -> list[Path]:
    """This GPU's node files beside ``results`` (<slug>-x<N>.yaml, one per node size), the most GPUs first."""
    found = [p for p in Path(results).parent.glob(f"{Path(results).stem}-x*.yaml") if NODE_FILE.search(p.name)]
    return sorted(found, key=lambda p: -int(NODE_FILE.search(p.name).group(1)))


def _assemble(results: Path, doc: dict, out_dir: Path, compare, warn, nodes):
    """The context, slides.md's text and the figures of one deck, or a BuildError naming ``results``:
    whatever fails in a section's context, a figure or a template is one line."""
    deck = Deck(doc, nodes=nodes, others=compare, warn=warn, out_dir=out_dir)
    try:
        context = deck.sections()
        svgs = deck.figures()
        return context, render(context, svgs), svgs
    except BuildError:
        raise
    except Exception as e:           # valid by the schema, yet missing what a slide needs
        raise BuildError(f"{results}: the deck cannot be built from it ({type(e).__name__}: "
                         f"{schema.one_line(e, 200)})") from e


def build(results: Path, out_dir: Path = ROOT, compare=(), warn=None, nodes=(), node_named: bool = False,
          talk_name: str = "default") -> dict:
    """Render the deck of ``results``, with a comparison section when ``compare`` holds other GPUs'
    results ((path, loaded document) pairs) and a multi-GPU section from ``nodes``, this GPU's node
    files ((path, document) pairs; ``results`` itself when it is one): the section details the one
    of the most GPUs and sets every size side by side. A file beside ``results`` that the deck cannot
    be built with, in any part of the build, is left out with ``warn(message)``; one that was named
    (``warn`` None for the comparison, ``node_named`` for the nodes) is an error. ``talk_name``: the
    talk cut from the study (slides/outline.py TALKS), or FULL; the context's "talk" says what it holds."""
    doc = schema.load(results)
    named = {NODE_SECTION: node_named or warn is None, COMPARISON: warn is None}      # without warn, nowhere to say it

    def leave_out(section: str, message: str) -> None:
        """A file that cannot be used: an error where it was named, else left out with a warning."""
        if named[section]:
            raise BuildError(message)
        warn(f"left out of the {section}: {message}")

    nodes = list(nodes) or ([(results, doc)] if "node" in doc else [])
    nodes = [(path, node) for path, node in nodes if _of_this_gpu(path, node, doc, leave_out)]
    nodes = _one_per_size(sorted(nodes, key=lambda item: item[1]["node"]["gpu_count"]), leave_out)
    not_gpus = [path for path, other in compare if "node" in other]
    for path in not_gpus:
        leave_out(COMPARISON, f"{path}: a node's results file, not a GPU's: pass it as --node")
    compare = [(path, other) for path, other in compare if path not in not_gpus]
    while True:
        try:
            context, text, svgs = _assemble(results, doc, out_dir, compare, warn, nodes)
            break
        except BuildError as failure:
            culprit = _culprit(results, doc, out_dir, compare, warn, nodes)
            if culprit is None:
                raise
            section, (path, _) = culprit
            cause = failure.__cause__ or failure
            leave_out(section, f"{path}: the deck cannot be built with it ({type(cause).__name__}: "
                               f"{schema.one_line(cause, 200)})")
            nodes = [n for n in nodes if n is not culprit[1]]
            compare = [c for c in compare if c is not culprit[1]]
    cut = None if talk_name == FULL else talk.cut(text, TALKS[talk_name])
    write_deck(out_dir, cut.markdown if cut else text, svgs)      # rendered fully before anything is written
    return {**context, "talk": cut}


def _of_this_gpu(path: Path, node: dict, doc: dict, leave_out) -> bool:
    """Whether ``node`` is a node's file of the GPU of ``doc`` (the slug its files are named for);
    if not, it is left out (or refused, where named) saying why."""
    if "node" not in node:
        leave_out(NODE_SECTION, f"{path}: not a node's results file (it has no node section)")
    elif node["device"]["slug"] != doc["device"]["slug"]:
        leave_out(NODE_SECTION, f"{path}: the node file of {node['device']['name']!r}, not of "
                                f"{doc['device']['name']!r}")
    else:
        return True
    return False


def _one_per_size(nodes: list, leave_out) -> list:
    """``nodes`` (by GPU count) with one file of each node size: a second of the same size is left out."""
    kept = {}
    for path, node in nodes:
        n = node["node"]["gpu_count"]
        if n in kept:
            leave_out(NODE_SECTION, f"{path}: a second node file of {n} GPUs, beside {kept[n][0]}")
        else:
            kept[n] = (path, node)
    return list(kept.values())


def _culprit(results, doc, out_dir, compare, warn, nodes):
    """Which file beside ``results`` the deck fails with: (NODE_SECTION or COMPARISON,
    (path, document)), the first whose absence lets the deck build; None when none does. The node
    files go smallest first: leaving out the one the section details (the largest) also changes which
    one it details, so that one is tried last."""
    beside = [(NODE_SECTION, n) for n in nodes if n[0] != results] + [(COMPARISON, c) for c in compare]
    for section, item in beside:
        try:
            _assemble(results, doc, out_dir, [c for c in compare if c is not item], warn,
                      [n for n in nodes if n is not item])
        except BuildError:
            continue
        return section, item
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help=f"results file (default {DEFAULT_RESULTS.relative_to(ROOT)})")
    ap.add_argument("--out-dir", type=Path, default=ROOT, help="where slides.md and svgs/ go (default: the repository root)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--compare", type=Path, nargs="+", metavar="RESULTS",
                       help="results files of other GPUs for the comparison section (default: every other "
                            "results file beside --results; one that does not validate is left out with a warning)")
    which.add_argument("--no-compare", action="store_true", help="leave the comparison section out")
    ap.add_argument("--node", type=Path, nargs="+", metavar="RESULTS",
                    help="node results files of this GPU (python -m bench on 2+ GPUs, one per node size) for the "
                         "multi-GPU section, which details the one of the most GPUs and sets every size side by "
                         "side; only the files named are read, and each must validate and build (default: every "
                         "<results>-x<N>.yaml beside --results; one that does not validate is left out with a "
                         "warning)")
    ap.add_argument("--talk", choices=[*TALKS, FULL], default="default",
                    help="the talk on the main path, every other slide after it as backup (slides/outline.py "
                         "TALKS); full: the whole study in order (default: default)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    compare = []
    warn = lambda message: print(f"build.py: {escape.plain_text(message, 2000)}", file=sys.stderr)
    try:
        if args.compare:                # named: each must validate and build
            compare = [(path, schema.load(path)) for path in args.compare]
        elif not args.no_compare:       # found beside --results: a broken one is left out
            for path in comparable_files(args.results):
                try:
                    compare.append((path, schema.load(path)))
                except schema.ResultsError as e:
                    warn(f"left out of the comparison: {e}")
        nodes = [(path, schema.load(path)) for path in args.node or ()]     # named: each must validate and build
        for path in ([] if args.node else node_files(args.results)):         # found beside: a broken one is left out
            try:
                nodes.append((path, schema.load(path)))
            except schema.ResultsError as e:
                warn(f"left out of the multi-GPU section: {e}")
        context = build(args.results, args.out_dir, compare, warn=None if args.compare else warn, nodes=nodes,
                        node_named=bool(args.node), talk_name=args.talk)
    except (schema.ResultsError, BuildError) as e:
        print(f"build.py: {escape.plain_text(e, 2000)}\nNothing was written.", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"build.py: cannot write the deck into {args.out_dir}: {e}\nNothing was written.", file=sys.stderr)
        return 1
    except KeyboardInterrupt as stop:
        return _stopped(stop)
    n_missing = sum(len(v) for v in context["lacking"].values())
    say = lambda text: print(escape.plain_text(text, 2000))   # names and reasons from the file: no escapes
    say(f"wrote slides.md and svgs/ for {context['device'].name} in {time.perf_counter() - t0:.2f} s"
        + (f", compared with {', '.join(context['compare'].names[1:])}" if context["compare"] else ""))
    if context["talk"]:
        cut = context["talk"]
        say(f"talk {args.talk}: {len(cut.main)} main slides, then {cut.backup} backup; about {cut.minutes:.0f} min "
            f"spoken (the main notes at {talk.WORDS_PER_MINUTE} words a minute, {talk.SECONDS_PER_SLIDE} s a slide); "
            f"--talk {FULL} for the whole study in order")
    if context["lacking"]:
        say(f"not measured on this GPU ({n_missing} results on {len(context['lacking'])} slides):")
        for slide, ids in context["lacking"].items():
            say(f"  {slide}: {', '.join(dict.fromkeys(ids))}")
    for bid in context["stale"]:
        say(f"STALE: {bid}: {context['stale_why'][bid]}; rerun python -m bench --only {bid}")
    if context["stale"]:
        n = len(context["stale"])
        say(f"  (python -m bench --stale on the {context['device'].name} reruns {'it' if n == 1 else f'all {n}'})")
    for beside in context["stale_elsewhere"]:
        for bid in beside["ids"]:
            say(f"STALE: {bid} in {beside['file']}: {beside['why'][bid]}; rerun python -m bench --only {bid} on that machine")
    for f in context["failed"]:
        say(f"FAILED: {f['id']}: {f['reason']}")
    for k in context["kept"]:
        say(f"KEPT: {k['id']}: the last run {k['status']} ({k['reason']}); the deck shows its record of {k['measured_at']}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt as stop:       # in the lines around the build: after it, the new deck is whole
        sys.exit(_stopped(stop))
