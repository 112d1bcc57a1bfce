"""Strings from a results file are data: whatever a device name, a failure reason or a row label
holds, the deck keeps its slides, its headmatter and its tables, and shows the string literally."""
import re
import xml.etree.ElementTree as ET

import pytest
import yaml

import build
from bench.core import schema
from slides import escape
from slides.deck import figures_dir
from tests.test_build import OUTLINE, headings

HOSTILE = {
    "vue": "{{ 7*7 }}",
    "html": '<img src=x onerror="document.title=\'pwned\'">',
    "headmatter": 'H100"\nlayout: cover\nx: "',
    "slide": "line one\n---\n# Injected slide",
    "table": "a | b | c",
    "markdown": "**bold** _em_ `code` [link](http://x) $x^2$ :icon{name=x}",
    "controls": "bell\x07 escape\x1b[31m nul\x00 sep\u2028 end",
    # MDC's attribute syntax: a class, a handler, a style on the element before the braces
    "mdc": "x{.animate-spin onanimationstart=document.title='PWNED'} boom{onclick=alert(9) style=color:red} ${1+1}$",
}


def hostile_doc(doc: dict, text: str) -> dict:
    doc["device"]["name"] = f"GPU {text}"
    b = doc["benchmarks"]
    b["gemm.cute_smem_k8"]["reason"] = f"check failed: {text}"
    b["hbm.copy_scaling"]["rows"][0]["label"] = f"row {text}"
    b["latency.instruction"]["rows"][0]["name"] = f"op {text}"
    return doc


def _table_rows(markdown: str):
    """Each Markdown table's rows, grouped by table, outside code fences."""
    table, fenced = [], False
    for line in markdown.splitlines() + [""]:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("|"):
            table.append(line)
        elif table:
            yield table
            table = []


@pytest.mark.parametrize("case", HOSTILE)
def test_hostile_strings_stay_data(case, fixture_doc, write_results, tmp_path):
    text = HOSTILE[case]
    build.build(write_results(hostile_doc(fixture_doc, text)), tmp_path)
    deck = (tmp_path / "slides.md").read_text()
    assert sorted(headings(deck)) == sorted(OUTLINE)                    # no slide added or lost by the talk's cut
    head = yaml.safe_load(deck.split("---\n")[1])
    assert set(head) == {"theme", "title", "seoMeta", "class", "drawings", "transition", "exportFilename", "routerMode",
                         "fonts"}
    assert head["seoMeta"]["ogDescription"] == f"Micro-benchmarks and a GEMM built step by step, measured on " \
                                                f"GPU {schema.one_line(text, escape.MAX_CHARS)}."    # plain text
    assert "CUDA Performance Study — GPU " in head["title"]
    for table in _table_rows(deck):                                     # every row keeps its cells
        cells = {len(re.findall(r"(?<!\\)\|", row)) for row in table}
        assert len(cells) == 1, table
    body = re.sub(r"<span v-pre>.*?</span>", "", deck.split("---\n", 2)[2])   # v-pre: Vue leaves it as text
    for brace in re.findall(r"\S*[{}]\S*", text):                      # no brace of the data reaches MDC or Vue
        assert brace not in deck.split("---\n", 2)[2]
    assert "{{ 7" not in body and "<img src=x" not in body and "\x1b" not in deck and "\x00" not in deck
    for svg in figures_dir(tmp_path).glob("*.svg"):
        ET.fromstring(svg.read_text())                                 # well-formed XML


def test_a_long_reason_is_cut_on_the_slide(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["gemm.cute_smem_k8"]["reason"] = "check failed: " + "x" * 50_000
    build.build(write_results(fixture_doc), tmp_path)
    deck = (tmp_path / "slides.md").read_text()
    runs = [len(run) for run in re.findall(r"x{100,}…", deck)]
    assert runs and all(900 < n <= escape.MAX_CHARS for n in runs)
