"""build.py on unlucky input and an unlucky disk: one clear message, exit 1, and the previous
deck untouched; a broken neighbour left out of the comparison instead of stopping the build."""
import copy
import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import build
from bench.core import schema
from tests.test_compare import other_gpu


PREVIOUS = "a" * 12          # the folder of the previous build's figures


def _previous_deck(out):
    (out / "svgs" / PREVIOUS).mkdir(parents=True)
    (out / "svgs" / PREVIOUS / "gemm_naive.svg").write_text("<svg>previous</svg>")
    (out / "slides.md").write_text(f'previous deck <img src="./svgs/{PREVIOUS}/gemm_naive.svg">\n')


def _unchanged(out) -> bool:
    return ((out / "slides.md").read_text() == f'previous deck <img src="./svgs/{PREVIOUS}/gemm_naive.svg">\n'
            and sorted(p.name for p in (out / "svgs").iterdir()) == [PREVIOUS]
            and (out / "svgs" / PREVIOUS / "gemm_naive.svg").read_text() == "<svg>previous</svg>"
            and not list(out.glob(".build-*")) and not list(out.glob("svgs/.build-*")))


def _whole(out) -> bool:
    """Every figure the folder's slides.md shows is there: a reader never sees two builds mixed."""
    shown = re.findall(r'src="\./(svgs/[^"]+)"', (out / "slides.md").read_text())
    return bool(shown) and all((out / path).is_file() and (out / path).read_text().startswith(("<svg", "<?xml"))
                               for path in shown)


def _drop(doc, bid, *keys):
    node = doc["benchmarks"][bid]
    for key in keys[:-1]:
        node = node[key]
    del node[keys[-1]]
    return doc


# Records whose every number is fine, yet that lack what a slide is drawn from: the schema names
# the field and what it expected.
HOLLOW = {
    "HBM without its memcpy": (lambda d: _drop(d, "hbm.copy_scaling", "memcpy"),
                               "benchmarks.hbm.copy_scaling.memcpy: expected a mapping (the field is missing)"),
    "HBM with no rows": (lambda d: d["benchmarks"]["hbm.copy_scaling"].update(rows=[]) or d,
                         "benchmarks.hbm.copy_scaling.rows: expected a list of at least one entry, each a mapping, got list"),
    "GEMM resources without registers": (lambda d: _drop(d, "gemm.tma_store", "resources", "regs_per_thread"),
                                         "gemm.tma_store.resources.regs_per_thread: expected an integer (the field is missing)"),
    "transpose without params": (lambda d: _drop(d, "transpose.all", "params"),
                                 "benchmarks.transpose.all.params: expected a mapping (the field is missing)"),
    "L2 rows without bandwidths": (lambda d: [r.clear() for r in d["benchmarks"]["l2.bandwidth_scaling"]["rows"]] and d,
                                   "l2.bandwidth_scaling.rows[0].label: expected a string (the field is missing)"),
    "a sweep row's shape as text": (lambda d: d["benchmarks"]["sweep.tma_store"]["rows"][0].update(shape="4096^3") or d,
                                    "sweep.tma_store.rows[0].shape: expected a list"),
    "settle series without rows": (lambda d: _drop(d, "settle.headline", "series", "kernel", "rows"),
                                   "settle.headline.series.kernel.rows: expected a list (the field is missing)"),
    "a clock that is a word": (lambda d: d["benchmarks"]["hbm.copy_scaling"]["telemetry"]["during"]["sm_clock_mhz"]
                               .update(median="fast") or d,
                               "hbm.copy_scaling.telemetry.during.sm_clock_mhz.median: expected a number, got 'fast'"),
}


@pytest.mark.parametrize("case", HOLLOW)
def test_a_hollow_record_is_named_by_its_field(case, fixture_doc, write_results, tmp_path, capsys):
    make, expected = HOLLOW[case]
    out = tmp_path / "deck"
    _previous_deck(out)
    path = write_results(make(fixture_doc))
    assert build.main(["--results", str(path), "--out-dir", str(out), "--no-compare"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"build.py: {path}: ") and expected in err, err
    assert err.count("\n") == 2 and "Nothing was written." in err and _unchanged(out)


def test_what_the_schema_lets_through_and_a_slide_cannot_use_is_a_message(fixture_doc, write_results, tmp_path,
                                                                           capsys, monkeypatch):
    """The last guard: a context that fails for a reason no schema rule names is one line too."""
    out = tmp_path / "deck"
    _previous_deck(out)
    from slides import hbm
    monkeypatch.setattr(hbm, "context", lambda deck: {}["best"])
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    err = capsys.readouterr().err
    assert "the deck cannot be built from it (KeyError: 'best')" in err and _unchanged(out)


@pytest.mark.parametrize("neighbour", ["garbage", "zero SMs", "hollow"])
def test_a_broken_neighbour_is_left_out_by_name(neighbour, fixture_doc, write_results, tmp_path, capsys):
    mine = write_results(fixture_doc, "mine.yaml")
    other = other_gpu(fixture_doc)
    if neighbour == "zero SMs":
        other["device"]["sm_count"] = 0
    if neighbour == "hollow":
        _drop(other, "hbm.copy_scaling", "memcpy")
    broken = write_results("\x00\x01 not yaml [" if neighbour == "garbage" else other, "broken.yaml")
    assert build.main(["--results", str(mine), "--out-dir", str(tmp_path / "deck")]) == 0
    err = capsys.readouterr().err
    assert f"left out of the comparison: {broken}" in err and "Traceback" not in err
    assert (tmp_path / "deck" / "slides.md").exists()


def test_a_leftover_staging_folder_is_cleaned(fixture_doc, write_results, tmp_path):
    out = tmp_path / "deck"
    for killed in (out / ".build-killed", out / "svgs" / ".build-killed"):
        killed.mkdir(parents=True)
        (killed / "slides.md").write_text("half")
    build.build(write_results(fixture_doc), out)
    assert not list(out.glob(".build-*")) and not list(out.glob("svgs/.build-*"))
    assert (out / "slides.md").read_text().startswith("---") and _whole(out)


def test_slides_md_being_a_folder_changes_nothing(fixture_doc, write_results, tmp_path, capsys):
    out = tmp_path / "deck"
    (out / "svgs").mkdir(parents=True)
    (out / "svgs" / "gemm_naive.svg").write_text("<svg>previous</svg>")
    (out / "slides.md").mkdir()
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    assert "cannot write the deck" in capsys.readouterr().err
    assert [p.name for p in (out / "svgs").iterdir()] == ["gemm_naive.svg"]
    assert (out / "svgs" / "gemm_naive.svg").read_text() == "<svg>previous</svg>"
    assert not list(out.glob(".build-*"))


def test_a_full_disk_while_staging_changes_nothing(fixture_doc, write_results, tmp_path, monkeypatch, capsys):
    from bench.core import results
    out = tmp_path / "deck"
    _previous_deck(out)
    real, calls = results.write_atomic, []

    def fills_up(path, text):
        calls.append(path)
        if len(calls) == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)
    monkeypatch.setattr(results, "write_atomic", fills_up)
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    assert "No space left on device" in capsys.readouterr().err and _unchanged(out)


def test_a_failed_last_rename_puts_the_figures_back(fixture_doc, write_results, tmp_path, monkeypatch, capsys):
    out = tmp_path / "deck"
    _previous_deck(out)
    real = os.replace

    def refuses_the_deck(src, dst):
        if str(dst).endswith("slides.md"):
            raise OSError(errno.EIO, "Input/output error")
        real(src, dst)
    monkeypatch.setattr(os, "replace", refuses_the_deck)
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    assert "Input/output error" in capsys.readouterr().err and _unchanged(out)


@pytest.mark.parametrize("where", ["a file", "inside a file"])
def test_an_output_folder_that_cannot_be_made_is_a_message(where, fixture_doc, write_results, tmp_path, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    out = blocker if where == "a file" else blocker / "deck"
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"build.py: cannot write the deck into {out}: ") and "Nothing was written." in err
    assert blocker.read_text() == "x"


# --- every field the deck reads: required by the schema, or shown without it -----------------------

def _spec_paths(spec, want, path=()):
    """The paths of a RECORDS/NODE spec's leaves that ``want(key, spec)`` picks ("[]": every item of a list)."""
    if isinstance(spec, dict):
        for key, sub in spec.items():
            if want(key, sub):
                yield path + (key.rstrip("?"),)
            yield from _spec_paths(sub, want, path + (key.rstrip("?"),))
    elif isinstance(spec, list):
        yield from _spec_paths(spec[0], want, path + ("[]",))


def _apply(value, path, change) -> int:
    """``change(mapping, key)`` at every place ``path`` reaches in ``value``; how many it reached."""
    key, rest = path[0], path[1:]
    if key == "[]":
        return sum(_apply(item, rest, change) for item in value) if isinstance(value, list) else 0
    if not isinstance(value, dict) or key not in value:
        return 0
    if not rest:
        change(value, key)
        return 1
    return _apply(value[key], rest, change)


def _cases(want):
    """(file, id prefix, path) for each leaf ``want`` picks that the fixtures hold."""
    from tests.conftest import _fixture_results, NODE_FIXTURE
    from bench.core.schema import NODE, RECORDS
    cases = []
    for file, doc in (("gpu", _fixture_results()), ("node", _fixture_results(NODE_FIXTURE))):
        for prefix, spec in [*RECORDS.items(), *([("node", NODE)] if file == "node" else [])]:
            recs = [doc["node"]] if prefix == "node" else [
                rec for bid, rec in doc["benchmarks"].items()
                if next((p for p in RECORDS if bid.startswith(p)), None) == prefix and rec["status"] == "ok"]
            for path in dict.fromkeys(_spec_paths(spec, want)):
                if any(_apply(copy.deepcopy(rec), path, lambda m, k: None) for rec in recs):
                    cases.append(pytest.param(file, prefix, path, id=f"{file}:{prefix}{'.'.join(path)}"))
    return cases


def _deck_from(file, prefix, path, change, fixture_doc, node_doc):
    """Apply ``change`` at ``path`` of every record ``prefix`` picks, then validate and build both
    files' deck in memory: the schema's refusal (a ResultsError) or nothing."""
    doc = node_doc if file == "node" else fixture_doc
    from bench.core.schema import RECORDS
    targets = [doc["node"]] if prefix == "node" else [
        rec for bid, rec in doc["benchmarks"].items() if next((p for p in RECORDS if bid.startswith(p)), None) == prefix]
    for rec in targets:
        _apply(rec, path, change)
    schema.validate(fixture_doc, "gpu.yaml")
    schema.validate(node_doc, "node.yaml")
    node_doc["device"]["name"] = fixture_doc["device"]["name"]
    build._assemble(Path("gpu.yaml"), fixture_doc, build.ROOT, [], None, [(Path("node.yaml"), node_doc)])


def _zero(mapping, key):
    mapping[key] = 0


@pytest.mark.parametrize("file, prefix, path", _cases(lambda key, sub: sub in (schema.NUM, int, float)
                                                       or isinstance(sub, schema.Positive)))
def test_a_number_the_deck_reads_at_zero_is_shown_or_refused_by_name(file, prefix, path, fixture_doc, node_doc):
    """Zero where the deck divides or takes a logarithm is the schema's to refuse, naming the field:
    never a bare ZeroDivisionError out of a slide."""
    try:
        _deck_from(file, prefix, path, _zero, fixture_doc, node_doc)
    except schema.ResultsError as e:
        assert f".{path[-1]}: expected " in str(e), e


@pytest.mark.parametrize("file, prefix, path", _cases(lambda key, sub: key.endswith("?")))
def test_a_field_the_schema_lets_be_absent_is_shown_without_it(file, prefix, path, fixture_doc, node_doc):
    try:
        _deck_from(file, prefix, path, lambda mapping, key: mapping.pop(key), fixture_doc, node_doc)
    except schema.ResultsError as e:      # absent only where the record allows it (a sweep's refused size)
        assert f".{path[-1]}: expected " in str(e) and "the field is missing" in str(e), e


@pytest.mark.parametrize("field", [*schema.POSITIVE_DEVICE_FIELDS])
def test_a_device_without_a_field_the_deck_reads_is_refused_by_name(field, fixture_doc, write_results, tmp_path, capsys):
    del fixture_doc["device"][field]
    out = tmp_path / "deck"
    _previous_deck(out)
    assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(out), "--no-compare"]) == 1
    assert f"device.{field}: expected " in capsys.readouterr().err and _unchanged(out)


@pytest.mark.parametrize("named", [True, False])
def test_a_neighbour_whose_figure_fails_is_left_out_or_named(named, fixture_doc, write_results, tmp_path, capsys,
                                                               monkeypatch):
    """The same rule as for a node's file: any part of the build, not only the section's context."""
    from slides import compare
    monkeypatch.setattr(compare, "compare_gemm", lambda c: 1 / 0)
    mine = write_results(fixture_doc, "mine.yaml")
    other = write_results(other_gpu(fixture_doc), "other.yaml")
    code = build.main(["--results", str(mine), "--out-dir", str(tmp_path / "deck"), *(["--compare", str(other)] if named else [])])
    err = capsys.readouterr().err
    assert f"{other}: the deck cannot be built with it (ZeroDivisionError: division by zero)" in err and "Traceback" not in err
    assert code == (1 if named else 0) and (tmp_path / "deck" / "slides.md").exists() == (not named)


@pytest.mark.parametrize("source", ["/dev/zero", "a FIFO"])
def test_a_results_path_that_is_not_a_file_is_refused_without_reading_it(source, tmp_path, capsys):
    """stat() says 0 bytes for a device or a FIFO: neither is read (/dev/zero would never end)."""
    path = Path(source)
    if source == "a FIFO":
        path = tmp_path / "fifo.yaml"
        os.mkfifo(path)
    assert build.main(["--results", str(path), "--out-dir", str(tmp_path / "deck"), "--no-compare"]) == 1
    assert capsys.readouterr().err == f"build.py: {path}: not a regular file; a results file is one\nNothing was written.\n"


def test_a_results_file_past_the_limit_is_refused_having_read_no_more_than_it(tmp_path, capsys, monkeypatch):
    path = tmp_path / "big.yaml"
    path.write_bytes(b"#" * (schema.MAX_BYTES + 10) + b"\n")
    assert build.main(["--results", str(path), "--out-dir", str(tmp_path / "deck"), "--no-compare"]) == 1
    assert "more than the 16 MiB a results file may hold" in capsys.readouterr().err


# --- builds all or nothing: beside each other, and stopped at any moment -----------------------------

def _build_cmd(results, out):
    return [sys.executable, str(build.ROOT / "build.py"), "--results", str(results), "--out-dir", str(out), "--no-compare"]


def _two_decks(fixture_doc, write_results):
    first = write_results(fixture_doc, "first.yaml")
    fixture_doc["device"]["name"] = "Second GPU"
    return first, write_results(fixture_doc, "second.yaml")


def test_two_builds_into_one_folder_both_succeed_and_leave_a_whole_deck(fixture_doc, write_results, tmp_path):
    out = tmp_path / "deck"
    decks = _two_decks(fixture_doc, write_results)
    for _ in range(4):
        procs = [subprocess.Popen(_build_cmd(results, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for results in decks]
        for proc in procs:
            assert proc.wait(timeout=120) == 0, proc.stderr.read()
        assert _whole(out) and not list(out.glob("svgs/.build-*"))
        assert len([p for p in (out / "svgs").iterdir() if p.is_dir()]) == 1      # the older build's figures went


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_build_stopped_at_any_moment_leaves_a_whole_deck(signum, fixture_doc, write_results, tmp_path):
    """Stopped anywhere from start-up to the last rename: the folder holds the previous deck or the
    new one, each with its own figures; SIGTERM and SIGINT say so in one line."""
    out = tmp_path / "deck"
    first, second = _two_decks(fixture_doc, write_results)
    assert subprocess.run(_build_cmd(first, out), capture_output=True).returncode == 0
    for i, delay in enumerate((0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4, 0.6)):      # from build.py's first lines on
        argv = _build_cmd((second, first)[i % 2], out)
        # the interpreter's own start-up is not build.py's to handle: the clock starts once it is done
        proc = subprocess.Popen([sys.executable, "-c", "import runpy, sys; print(flush=True); sys.argv = sys.argv[1:]; "
                                 "runpy.run_path(sys.argv[0], run_name='__main__')", *argv[1:]],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        proc.stdout.readline()
        time.sleep(delay)
        proc.send_signal(signum)
        code, err = proc.wait(timeout=120), proc.stderr.read()
        assert _whole(out), (delay, err)
        if signum == signal.SIGKILL or code == 0:
            continue
        if code == -signum:           # in the interpreter's shutdown, after the build: Python's handlers are gone
            assert err == "", (delay, err)
        else:
            said = {f"build.py: stopped by {signal.Signals(signum).name}; {deck}\n"
                    for deck in ("the previous deck is as it was.", "the new deck was written whole.")}
            assert code == 128 + signum and err in said, (delay, err)


def test_a_stop_while_the_deck_is_written_waits_for_it_and_says_the_new_deck_is_whole(fixture_doc, tmp_path, monkeypatch):
    """SIGTERM the moment slides.md is renamed into place: the new figures stay, and the stop says
    the new deck is whole (it had removed them and said the previous deck was as it was)."""
    import build as build_py
    from bench.core import results
    from slides import deck as deck_module
    write = results.write_atomic

    def write_then_stop(path, text):
        write(path, text)
        if path.name == "slides.md":
            signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)     # build.py has no other thread
    monkeypatch.setattr(results, "write_atomic", write_then_stop)
    previous = signal.signal(signal.SIGTERM, build_py._stop)
    try:
        with pytest.raises(deck_module.StoppedAfterWriting) as stop:
            deck_module.write_deck(tmp_path, '<img src="./svgs/x/a.svg">', {"a.svg": "<svg/>"})
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert build_py._stopped(stop.value) == 128 + signal.SIGTERM
    figures = tmp_path / "svgs" / deck_module.figures_folder({"a.svg": "<svg/>"})
    assert (figures / "a.svg").read_text() == "<svg/>"
    assert figures.stat().st_mode & 0o777 == 0o777 & ~results.umask()       # as readable as slides.md
