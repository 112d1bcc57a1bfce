"""A deck from any run. For every registered benchmark, generated from the registry, the deck
builds when its record is skipped, failed or absent, in the single-GPU fixture or, for a node's
benchmarks, in the node fixtures; and so it does for the runs a real machine makes: no peer
checkout, one GPU, a GPU older than Hopper, a quick run. What is missing is said where it would
have been shown and listed in the appendix: never a traceback, never an unfilled sentence."""
import copy
import re
import time
from pathlib import Path

import pytest

import build
from bench.core import registry, runner, schema
from slides.deck import Deck, render
from tests.conftest import NODE_FIXTURES, _fixture_results, fixture_doc_copy
from tests.test_build import prose_words, slides_of
from tests.test_other_gpus import OTHER_GPUS, on_gpu

BENCHMARKS = registry.discover()
MODES = ("skipped", "failed", "absent")
ONE_GPU = sorted(bid for bid, b in BENCHMARKS.items() if b.gpus == 1)
NODE = sorted(bid for bid, b in BENCHMARKS.items() if b.gpus > 1)
NODE_SIZES = (min(NODE_FIXTURES), max(NODE_FIXTURES))       # the node fixture, and the largest one simulated from it
# what a value the templates could not fill prints as, in Python or in Jinja
UNFILLED = re.compile(r"\b(None|nan|inf|Undefined)\b|\[\[|\]\]|\[%|%\]")


def left_as(doc: dict, bid: str, mode: str) -> dict:
    """``doc`` with ``bid``'s record as the runner leaves it when skipped or failed, or without it."""
    doc["benchmarks"].pop(bid, None)
    bench = BENCHMARKS[bid]
    if mode == "skipped":
        doc["benchmarks"][bid] = runner.skipped(bench, "no checkout of the peer: set X to one")
    elif mode == "failed":
        doc["benchmarks"][bid] = runner.failed(bench, "process killed by SIGSEGV", time.monotonic())
    return doc


def node_pair(n: int) -> tuple[dict, list]:
    """The H100 fixture named for the node fixture's GPU, and the node fixture of ``n`` GPUs beside it."""
    node = copy.deepcopy(_fixture_results(NODE_FIXTURES[n]))
    doc = fixture_doc_copy()
    doc["device"].update(name=node["device"]["name"], slug=node["device"]["slug"])
    return doc, [(NODE_FIXTURES[n], node)]


def deck_text(doc: dict, nodes=()) -> tuple[Deck, str]:
    """The deck's slides.md as build.py would write it (nothing is written)."""
    deck = Deck(doc, nodes=nodes)
    return deck, render(deck.sections(), deck.figures())


def assert_whole(deck: Deck, text: str, bid: str | None = None, mode: str | None = None) -> None:
    spoken = re.sub(r"```.*?```", "", text, flags=re.S)        # code may say None
    assert not UNFILLED.search(spoken), UNFILLED.search(spoken).group(0) + ": " + \
        spoken[max(0, UNFILLED.search(spoken).start() - 200):UNFILLED.search(spoken).end() + 100]
    if bid and mode != "failed" and deck.missing:
        # a record the deck reads and lacks is listed against the slide that would show it
        read = any(bid in ids for ids in deck.missing.values())
        assert read or bid not in text


@pytest.mark.parametrize("bid", ONE_GPU)
def test_the_deck_builds_without_any_one_record(bid):
    for mode in MODES:
        deck, text = deck_text(left_as(fixture_doc_copy(), bid, mode))
        assert_whole(deck, text, bid, mode)


@pytest.mark.parametrize("bid", NODE)
@pytest.mark.parametrize("n", NODE_SIZES)
def test_the_deck_builds_without_any_one_record_of_a_node(bid, n):
    for mode in MODES:
        doc, [(path, node)] = node_pair(n)
        deck, text = deck_text(doc, [(path, left_as(node, bid, mode))])
        assert_whole(deck, text, bid, mode)


def without_peers(doc: dict) -> dict:
    """A run on a machine with no peer's checkout: every peer-building benchmark skipped as the runner says."""
    for bid, bench in BENCHMARKS.items():
        if bench.peer and bid in doc["benchmarks"]:
            doc["benchmarks"][bid] = runner.skipped(bench, runner.skip_reason(bench, {**doc["device"], "gpu_count": 8}) or "")
    return doc


def test_a_run_without_any_peer_builds_its_deck():
    deck, text = deck_text(without_peers(fixture_doc_copy()))
    assert_whole(deck, text)
    listed = {bid for ids in deck.missing.values() for bid in ids}
    assert {bid for bid, b in BENCHMARKS.items() if b.peer and b.gpus == 1} <= listed


def test_a_node_run_without_any_peer_builds_its_deck():
    doc, [(path, node)] = node_pair(max(NODE_FIXTURES))
    deck, text = deck_text(without_peers(doc), [(path, without_peers(node))])
    assert_whole(deck, text)


def test_a_machine_of_one_gpu_builds_its_deck_without_a_node_section():
    deck, text = deck_text(fixture_doc_copy())
    assert_whole(deck, text)
    assert "\n# Past One GPU" not in text


@pytest.mark.parametrize("cc", OTHER_GPUS)
def test_a_gpu_older_than_hopper_builds_its_deck_without_any_peer(cc):
    deck, text = deck_text(without_peers(on_gpu(fixture_doc_copy(), cc)))
    assert_whole(deck, text)
    # every Hopper step's slides lack their results: the backup's one line counts them, in a slide's words
    divider = slides_of(text)["Backup Slides"]
    assert " more slides, " in divider and prose_words(divider) <= 80


def quick_run(doc: dict) -> dict:
    """The fixture as a quick run marks it: every measured record says quick."""
    for rec in doc["benchmarks"].values():
        if rec["status"] != "skipped":
            rec["quick"] = True
    return doc


def test_a_quick_run_builds_its_deck_and_says_quick_on_the_title_and_the_backup_divider(monkeypatch):
    deck, text = deck_text(quick_run(fixture_doc_copy()))
    assert_whole(deck, text)
    assert "Every result measured comes from it." in slides_of(text)["Backup Slides"]
    assert "A quick refresh" in slides_of(text)["CUDA Performance Study"]
    _, full = deck_text(fixture_doc_copy())
    assert "A quick refresh" not in slides_of(full)["CUDA Performance Study"]


def test_a_quick_rerun_of_some_records_is_named_on_the_backup_divider_in_a_line():
    doc = fixture_doc_copy()
    some = sorted(bid for bid, rec in doc["benchmarks"].items() if rec["status"] != "skipped")[:10]
    for bid in some:
        doc["benchmarks"][bid]["quick"] = True
    measured = sum(rec["status"] != "skipped" for rec in doc["benchmarks"].values())
    deck, text = deck_text(doc)
    assert f"10 of {measured} results measured come from it: {', '.join(some[:3])} and 7 more." in slides_of(text)["Backup Slides"]


QUICK_RUN = Path(__file__).parent / "fixtures" / "h200-quick.yaml"    # python -m bench --quick on an H200, no peers


def test_a_real_quick_run_builds_its_deck_and_says_quick_on_the_backup_divider(tmp_path, capsys):
    """The file a quick run wrote (2026-11-29, every benchmark, no peer checkout, one GPU), as it came."""
    assert build.main(["--results", str(QUICK_RUN), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    text = (tmp_path / "slides.md").read_text()
    deck, _ = deck_text(schema.load(QUICK_RUN))
    assert_whole(deck, text)
    assert "quick" in slides_of(text)["Backup Slides"].lower() and "A quick refresh" in slides_of(text)["CUDA Performance Study"]
    assert "Traceback" not in capsys.readouterr().err


def test_build_py_writes_the_deck_of_a_run_without_peers(write_results, tmp_path, capsys):
    results = write_results(without_peers(fixture_doc_copy()))
    assert build.main(["--results", str(results), "--out-dir", str(tmp_path / "deck")]) == 0
    out = capsys.readouterr()
    assert "Traceback" not in out.err and "peers.deepgemm" in out.out


# Files the schema once accepted and the deck could not be built from (a Python error, not the field):
# each is now refused in one line that names the field, or builds.
HOSTILE = [("gemm.fp8_promote", ("resources", "tile", "WARPGROUPS_M"), "drop"),
           ("gemm.fp8_blocks", ("resources", "tile", "SCALE_BLOCK"), "drop"),
           ("gemm.fp8_blocks_bf16_out", ("cublas", "ratio_by_sample", "ci"), "empty"),
           ("gemm.fp8_promote", ("before", "gain_by_sample", "ci"), "empty"),
           ("gemm.fp8_promote", ("check",), "drop"),
           ("gemm.fp8_blocks_bf16_out", ("params", "k"), "drop"),
           ("peers.deepgemm", ("params", "block", "a"), "empty"),
           ("peers.deepgemm", ("shapes", 0, "deepgemm_over_cublaslt_by_sample", "ci"), "empty"),
           ("peers.deepgemm", ("shapes", 0, "ours_over_deepgemm_by_sample"), "drop"),
           ("peers.deepgemm", ("params", "commit"), "drop"),
           ("machinery.tma", ("params", "issuer_slots"), "drop"),
           ("machinery.tma", ("multicast", 0, "multicast", "time_ms", "ci"), "drop"),
           ("machinery.cluster", ("params", "passes"), "drop"),
           ("machinery.wgmma", ("params", "warpgroups"), "drop")]


@pytest.mark.parametrize("bid,path,how", HOSTILE, ids=[f"{b}:{'.'.join(map(str, p))}:{h}" for b, p, h in HOSTILE])
def test_a_file_the_deck_cannot_show_is_refused_naming_the_field(bid, path, how):
    doc = fixture_doc_copy()
    parent = doc["benchmarks"][bid]
    for key in path[:-1]:
        parent = parent[key]
    if how == "drop":
        del parent[path[-1]]
    else:
        parent[path[-1]] = []
    field = f"benchmarks.{bid}." + ".".join(str(k) for k in path).replace(".0.", "[0].")
    try:
        schema.validate(doc)
    except schema.ResultsError as e:
        assert field.rsplit(".", 1)[0] in str(e) and "\n" not in str(e), str(e)
        return
    deck, text = deck_text(doc)        # accepted: then the deck builds, whole
    assert_whole(deck, text)
