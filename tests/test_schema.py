"""The results file is validated on load; bad files are rejected with a message
naming the file and the field, and build.py writes nothing."""
import math
import time

import pytest
import yaml

import build
from bench.core import schema
from tests.conftest import dump_results


def test_fixture_and_committed_results_validate(fixture_doc):
    schema.validate(fixture_doc, "fixture")
    for path in (build.ROOT / "results").glob("*.yaml"):
        schema.load(path)


def _without(doc, *path):
    *parents, last = path
    node = doc
    for p in parents:
        node = node[p]
    del node[last]
    return doc


def _set(doc, value, *path):
    *parents, last = path
    node = doc
    for p in parents:
        node = node[p]
    node[last] = value
    return doc


TF32 = ("benchmarks", "gemm.cublas_tf32_b_row")
BAD = {
    "not YAML": (lambda d: "benchmarks: [unclosed\n  - {\n", "not valid YAML"),
    "not a mapping": (lambda d: "- just\n- a list\n", "top level: expected a mapping"),
    "wrong schema_version": (lambda d: _set(d, 99, "schema_version"), "schema_version: expected 1"),
    "missing device": (lambda d: _without(d, "device"), "device: expected a mapping (the field is missing)"),
    "device field of the wrong type": (lambda d: _set(d, "lots", "device", "sm_count"), "device.sm_count: expected an integer"),
    "benchmark without status": (lambda d: _without(d, *TF32, "status"), "gemm.cublas_tf32_b_row.status: expected a string (the field is missing)"),
    "unknown status": (lambda d: _set(d, "great", *TF32, "status"), "status: expected one of ok, failed, skipped"),
    "failed without reason": (lambda d: _set(d, "failed", *TF32, "status"), "gemm.cublas_tf32_b_row.reason: expected a string"),
    "negative figure": (lambda d: _set(d, -3.0, *TF32, "tflops"), "gemm.cublas_tf32_b_row.tflops: expected a finite number >= 0, got -3.0"),
    "NaN figure": (lambda d: _set(d, math.nan, *TF32, "time_ms", "median"), "time_ms.median: expected a finite number >= 0, got nan"),
    "string where a number belongs": (lambda d: _set(d, "fast", *TF32, "tflops"), "tflops: expected a number, got 'fast'"),
    # an unquoted timestamp loads as a datetime, which the schema has no use for
    "unknown field type (a timestamp)": (lambda d: yaml.safe_dump(d).replace("measured_at: '", "measured_at: ")
                                         .replace("+00:00'", "+00:00"), "(not a datetime)"),
    "time percentiles out of order": (lambda d: _set(d, 1e6, *TF32, "time_ms", "p10"), "time_ms: expected p10 <= median <= p90"),
    "check without passed": (lambda d: _without(d, *TF32, "check", "passed"), "check.passed: expected true/false"),
    "unknown top-level field": (lambda d: _set(d, 1, "extras"), "extras: expected no such top-level field"),
    # what a broken disk, a hostile hand or a bad merge leaves
    "binary file": (lambda d: b"\x89PNG\r\n\x1a\n\x00\xff\xfe" * 100, "not a results file: byte 0 is not UTF-8 text"),
    "Latin-1 text": (lambda d: dump_results(d).replace("NVIDIA", "NVIDI\u00c4").encode("latin-1"), "is not UTF-8 text"),
    "duplicate key": (lambda d: dump_results(d).replace("schema_version: 1\n", "schema_version: 1\nschema_version: 1\n"),
                      "duplicate key 'schema_version'"),
    "alias bomb": (lambda d: "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(9)),
        "holds a YAML anchor or alias (at line 1)"),
    "recursive alias": (lambda d: "a: &a [*a]\n", "holds a YAML anchor or alias"),
    "truncated mid-line": (lambda d: dump_results(d)[:-20], "ends in the middle of a line: the file looks truncated"),
    "deep nesting": (lambda d: "a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 32 levels"),
    "a number past any measurement": (lambda d: _set(d, 1e308, *TF32, "tflops"), "tflops: expected a number up to 1e+15"),
    "an integer float() overflows": (lambda d: _set(d, 10**400, *TF32, "time_ms", "n"),
                                     "time_ms.n: expected a number up to 1e+15, got 'an integer of 401 digits'"),
    "zero SMs": (lambda d: _set(d, 0, "device", "sm_count"), "device.sm_count: expected a number > 0, got 0"),
    "zero bus width": (lambda d: _set(d, 0, "device", "mem_bus_width_bits"), "device.mem_bus_width_bits: expected a number > 0"),
    "zero L2": (lambda d: _set(d, 0, "device", "l2_bytes"), "device.l2_bytes: expected a number > 0"),
    "device field build.py needs": (lambda d: _without(d, "device", "regs_per_sm"),
                                    "device.regs_per_sm: expected an integer (the field is missing)"),
    "capability that is no version": (lambda d: _set(d, "nine", "device", "compute_capability"),
                                      "device.compute_capability: expected major.minor"),
}


@pytest.mark.parametrize("case", BAD, ids=list(BAD))
def test_bad_results_rejected_and_nothing_written(case, fixture_doc, write_results, tmp_path, capsys):
    make, expected = BAD[case]
    path = write_results(make(fixture_doc), "bad.yaml")
    out = tmp_path / "deck"
    (out / "svgs").mkdir(parents=True)
    (out / "slides.md").write_text("previous deck\n")
    assert build.main(["--results", str(path), "--out-dir", str(out)]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and expected in err, err
    assert (out / "slides.md").read_text() == "previous deck\n"
    assert list((out / "svgs").iterdir()) == []


def test_a_huge_file_is_refused_before_it_is_read(write_results, tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(schema.MAX_BYTES + 1)
    t0 = time.perf_counter()
    assert build.main(["--results", str(path), "--out-dir", str(tmp_path / "deck")]) == 1
    assert time.perf_counter() - t0 < 1.0
    assert "more than the 16 MiB a results file may hold" in capsys.readouterr().err


def test_missing_file_is_named(tmp_path, capsys):
    assert build.main(["--results", str(tmp_path / "nope.yaml"), "--out-dir", str(tmp_path)]) == 1
    assert "nope.yaml: cannot read the results file" in capsys.readouterr().err


# Scalars and shapes where YAML 1.1's resolution surprises: each loads as PyYAML's SafeLoader builds it.
TRICKY = [
    "a: 012\nb: 0x1F\nc: 1_000\nd: 1e5\ne: 1.5e+3\nf: .inf\ng: -.Inf\nh: .nan\ni: -0.0\nj: +7\nk: 0\n",
    "a: yes\nb: No\nc: ~\nd:\ne: null\nf: 'true'\ng: \"12\"\nh: 1:30\ni: 2026-11-29\nj: 2026-11-29T09:00:00+00:00\n",
    "a: [1, -2, 3.0, '4', x, '', \"\"]\nb: {c: {d: [[], {}]}}\n1: one\n1.0: float one\ntrue: t\n~: n\n",
    "k: !!str 5\nv: !!float 3\n",                   # explicit tags: PyYAML's own constructor
    "base: {a: 1}\nm: {<<: {b: 2}}\n",                # a merge key
    "x: =\n",                                         # the value tag, which SafeLoader cannot construct
    "",                                               # an empty file
    "- a\n- b\n",
    "a: 1\n---\nb: 2\n",                              # two documents
    "? [a, b]\n: 1\n",                                # a key that is a list
    "a: 1\na: 2\n",
    "a: 1\n'a': 2\n",
    "a: |\n  two\n  lines\nb: >\n  folded\n  text\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_one_pass_loader_builds_what_pyyaml_builds(text, tmp_path, monkeypatch):
    """load's one pass over libyaml's events gives SafeLoader's document, or refuses what it refuses;
    what the pass leaves to PyYAML (_Unusual) is read PyYAML's way."""
    def outcome(read):
        try:
            return repr(read())
        except (yaml.YAMLError, schema.ResultsError, schema._Unusual) as e:
            return type(e).__name__
    pyyaml = outcome(lambda: (schema._check_shape(text, "f"), yaml.load(text, Loader=schema._UniqueKeyLoader))[1])
    assert outcome(lambda: schema._compose(text, "f")) in (pyyaml, "_Unusual")
    path = tmp_path / "f.yaml"
    path.write_text(text)
    monkeypatch.setattr(schema, "validate", lambda doc, source: doc)
    assert outcome(lambda: schema.load(path)) == ("ResultsError" if pyyaml.endswith("Error")
                                                  else pyyaml)


def test_one_pass_loader_builds_the_committed_files_as_pyyaml_does():
    for path in sorted((build.ROOT / "results").glob("*.yaml")):
        text = path.read_text()
        assert repr(schema._compose(text, path)) == repr(yaml.load(text, Loader=schema._UniqueKeyLoader)), path
