"""build.py on fixture results: outline, traceable numbers, markers, flags, figures."""
import contextlib
import copy
import dataclasses
import io
import math
import re
from types import SimpleNamespace

import pytest

import build
from bench.gemm import catalogue
from slides import atlas as slides_atlas, diagrams, gemm, kit, l2, memory_latency, regimes, settle, sweep
from slides.deck import code_block
from slides.fmt import fmt_range, fmt_sig
from slides.records import ROOT, SLIDES_DIR, BuildError, clock_during
from slides.outline import SECTIONS
from slides.device import occupancy
from slides.deck import figures_dir
from tests.conftest import _fixture_results, dump_results
import slides.device
import slides.gemm
import slides.precision



def code_pages(titled) -> list[str]:
    """The backup pages of the kernels too long for their code slide, each region whole, a page at a
    time: (slide title, step) of each kernel in the deck's order."""
    return [f"{title} — Code ({j}/{len(pages)})" for title, step in titled
            for pages in [gemm.code_view(step.code, step.focus)["pages"]] for j in range(1, len(pages) + 1)]


# the talk's steps; the shapes' kernels (stream-K, ping-pong) follow them where the deck shows the atlas
CODE_PAGES = code_pages((f"Kernel {i}: {step.title}", step) for i, step in enumerate(catalogue.STEPS, 1))
SHAPE_PAGES = code_pages((step.title, step) for step in (catalogue.STREAM_K, *catalogue.TURN_STEPS))


def headings(markdown: str) -> list[str]:
    """H1 titles outside code fences: one per slide."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("# "):
            out.append(line[2:].strip())
    return out


def template_titles(name: str) -> list[str]:
    """The slide titles a section's template writes, in order (outside code fences and notes)."""
    return headings(re.sub(r"<!--.*?-->", "", (SLIDES_DIR / f"{name}.md.j2").read_text(), flags=re.S))


def _fixture_measures(section: str, held=None) -> bool:
    """Whether the fixture (or the ids ``held``) holds a record of the section: its module's one id, or its family."""
    from slides.deck import section_module
    bid = getattr(section_module(section), "ID", None)
    held = _fixture_results()["benchmarks"] if held is None else held
    return bid in held if bid else any(b.startswith(f"{section}.") for b in held)


def beside_steps(held=None) -> dict[str, list[str]]:
    """The talk's slides of a mechanism measured alone, by the step each follows, where the fixture
    (or the ids ``held``) holds its record: the machinery's wgmma and TMA slides, the clusters' slide."""
    from slides import clusters, machinery, tma
    held = _fixture_results()["benchmarks"] if held is None else held
    out = {}
    for module, beside in ((machinery, machinery._beside()), (tma, tma._beside()), (clusters, clusters._beside().key)):
        if module.ID in held:
            out.setdefault(beside, []).append(module.SLIDE)
    return out


def fixture_outline(held=None) -> list[str]:
    """The fixture deck's slides, in order, from the outline's sections and the catalogue: each
    section's titles as its template writes them, those made from data expanded as the fixture makes
    them (a slide per step, a backup page per page of code), and the sections the fixture has no
    file for (the node's, other GPUs') as their templates show that. ``held``: the ids of a results
    file made from the fixture, where it holds others (default: the fixture's)."""
    held = _fixture_results()["benchmarks"] if held is None else held
    titles = []
    for name in SECTIONS:
        written = template_titles(name)
        if name == "gemm":
            for i, step in enumerate(catalogue.STEPS, 1):
                measured = any(v.id in held for v in step.variants)      # its table: a backup slide
                titles += [f"Kernel {i}: {step.title} — {part}" for part in ("Code", "Diagram", "Performance",
                                                                            *(("Results",) if measured else ()))]
                titles += beside_steps(held).get(step.key, [])
        elif name == "kernel_pages":
            titles += written[:1] + CODE_PAGES + (SHAPE_PAGES if _fixture_measures("atlas", held) else [])
        elif name in ("atlas", "machinery", "clusters", "tma") and not _fixture_measures(name, held):
            continue                                 # not measured: one line on the backup divider
        elif name == "atlas":                        # the atlases stream-K may run in, its two slides, the others
            names = [n for n in catalogue.ATLASES if catalogue.atlas_id(n) in held]
            streamed = [n for n in names if catalogue.streamed_for(catalogue.resolve(catalogue.ATLASES[n][0]))]
            stream_k = [t.replace("[[ sk.title ]]", catalogue.STREAM_K.title) for t in written if "[[ sk.title ]]" in t]
            pingpong = [t.replace("[[ pp.title ]]", catalogue.PINGPONG_BF16.title) for t in written if "[[ pp.title ]]" in t]
            turned = any(catalogue.turns_for(catalogue.resolve(catalogue.ATLASES[n][0])) for n in names)
            titles += [slides_atlas.SLIDES[n] for n in streamed] + (stream_k if streamed else []) + \
                      (pingpong if turned else []) + [slides_atlas.SLIDES[n] for n in names if n not in streamed]
        elif name == "l2" and l2.MAP_ID not in held:
            titles += [t for t in written if t != l2.MAP_SLIDE]
        elif name not in ("multigpu", "overlap", "compare"):   # no node's or other GPU's file beside the fixture
            titles += [t.replace("[[ device.arch ]]", "Hopper") for t in written]
    assert not [t for t in titles if "[[" in t], "a title made from data that fixture_outline does not expand"
    return titles


OUTLINE = fixture_outline()
MICRO = ("latency.instruction", "latency.memory", "l2.bandwidth_scaling", "transpose.all")


NEXT_FRONTMATTER = re.compile(r"\n---\n(?:[A-Za-z][\w-]*:[^\n]*\n)+---\s*$")   # the next slide's class: ...


def untagged(markdown: str) -> str:
    """A slide's text without its HTML tags (a table cell's spans that keep a figure on one line)."""
    return re.sub(r"<[^>]+>", "", markdown)


def slides_of(markdown: str) -> dict[str, str]:
    """Slide text by title (without the frontmatter of the slide after it)."""
    parts = re.split(r"^# ", markdown, flags=re.M)[1:]
    return {p.splitlines()[0].strip(): NEXT_FRONTMATTER.sub("\n", p) for p in parts}


@pytest.fixture(scope="session")
def deck(tmp_path_factory):
    """The deck built once from the fixture, the whole study in order, for the tests that only read it."""
    out = tmp_path_factory.mktemp("deck")
    doc = copy.deepcopy(_fixture_results())
    path = out / "results.yaml"
    path.write_text(dump_results(doc))
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert build.main(["--results", str(path), "--out-dir", str(out), "--talk", build.FULL]) == 0
    return {"md": (out / "slides.md").read_text(), "out": printed.getvalue(), "dir": out, "doc": doc}


def test_every_slide_in_order(deck):
    assert headings(deck["md"]) == OUTLINE


def test_results_tables_split_at_the_reference_decks_last_step(deck):
    """The reference deck's steps in one table, those beyond it in the next (one table of all runs
    off the slide), each kernel a row."""
    s = slides_of(deck["md"])
    tables = {False: s["GEMM — Results Table"], True: s["GEMM — Results Table, Beyond the Reference"]}
    for step in catalogue.STEPS:
        for variant in step.variants:
            row = f"| {step.title} ({variant.label}) " if len(step.variants) > 1 else f"| {step.title} "
            assert row in tables[step.beyond] and row not in tables[not step.beyond]
    assert "Headline kernel" in tables[True]


def test_measured_numbers_come_from_the_fixture(deck):
    b = deck["doc"]["benchmarks"]
    s = slides_of(deck["md"])
    tf32_row = b["gemm.cublas_tf32_b_row"]["tflops"]
    assert f"**{tf32_row:,.1f}**" in s["GEMM — Results Table"]
    hbm = b["hbm.copy_scaling"]
    assert f"**{hbm['memcpy']['gbps']:,.0f}**".replace(",", "") in s["HBM Bandwidth Scaling"].replace(",", "")
    for row in hbm["rows"]:
        assert f"| {row['label']} | {row['blocks']} × {row['threads']} | {row['sms_used']} |" in s["HBM Bandwidth Scaling"]
    assert f"**{b['gemm.wgmma_tma_128x256']['tflops']:,.1f}**" in s["Kernel 6: WGMMA + TMA — Results"]
    assert str(deck["doc"]["device"]["sm_count"]) in s["Hopper SM Architecture"]
    # the derived numbers: % of cuBLAS of the same precision and layout, timed in turns with the
    # kernel, beside the cuBLAS figure it divides by; the title's headline
    tma = b["gemm.wgmma_tma_128x256"]
    pct = 100 * tma["tflops"] / tma["cublas"]["tflops"]
    assert f"| TF32 {tma['cublas']['tflops']:,.1f} | {pct:.1f}% |" in s["GEMM — Results Table"]
    naive = b["gemm.naive_fp32"]
    assert naive["cublas"]["id"] == "gemm.cublas_fp32_b_row"
    assert f"| FP32 {naive['cublas']['tflops']:,.1f} | {100 * naive['tflops'] / naive['cublas']['tflops']:.1f}% |" in s["GEMM — Results Table"]
    top = catalogue.HEADLINE
    top_pct = 100 * b[top]["tflops"] / b[top]["cublas"]["tflops"]
    assert (f"**{b[top]['tflops']:,.1f} TFLOPS**, {top_pct:.1f}% of cuBLAS TF32 on the same operands and layout "
            f"({b[top]['cublas']['tflops']:,.1f} TFLOPS)") in s["CUDA Performance Study"]
    staged = b["gemm.tma_store"]
    assert (f"| {staged['cublas']['tflops']:,.1f} | {100 * staged['tflops'] / staged['cublas']['tflops']:.1f}% | "
            f"{staged['check']['rel_error']:.1e} ({staged['cublas']['check']['rel_error']:.1e}) |") in untagged(s["Kernel 11: TMA-Store Epilogue — Results"])
    # a step's gain over the one before: the pair timed in turns, the median of its sample-by-sample
    # ratio with that ratio's interval (the one lies inside the other), in percent when under a tenth,
    # else as a ratio
    pair = b["gemm.tma_store"]["before"]
    gain, (lo, hi) = pair["gain_by_sample"]["median"], pair["gain_by_sample"]["ci"]
    assert lo <= gain <= hi
    assert pair["id"] == "gemm.split_wave" and 0.9 < gain < 1.1
    assert (f"**{100 * (gain - 1):+.1f}%** against Split Last Wave in turns "
            f"(interval {100 * (lo - 1):+.1f} to {100 * (hi - 1):+.1f}%)") in s["Kernel 11: TMA-Store Epilogue — Performance"]
    # the two's figures in those turns and the clock they ran at, on the table one click on (each
    # record's own is from its turns with cuBLAS, at the clock of those)
    assert (f"Against Split Last Wave, in the same turns: {pair['tflops'] * pair['gain']:,.1f} vs {pair['tflops']:,.1f} "
            f"TFLOPS, SMs at {clock_during(b['gemm.tma_store']):,.0f} MHz.") in s["Kernel 11: TMA-Store Epilogue — Results"]
    assert f"**{b['gemm.cute_mma_tf32']['before']['gain_by_sample']['median']:.1f}×** over Naive FP32" in s["Kernel 2: CuTe Simple MMA — Performance"]
    # the shape no tile divides: its outcome, and why where the kernel refused it
    for step, kernel in (("Kernel 1: Naive FP32", "gemm.naive_fp32"), ("Kernel 11: TMA-Store Epilogue", "gemm.tma_store")):
        odd = b[kernel]["odd_shape"]
        said = f"At {'×'.join(map(str, odd['shape']))}, a shape no tile divides: {odd['outcome']}"
        assert said + (f", as {odd['reason']}." if odd.get("reason") else ".") in s[f"{step} — Performance"]


def test_a_step_below_an_earlier_one_on_its_climb_says_why_in_its_notes(fixture_doc, write_results, tmp_path):
    """Each bar of a climb is its own record at its own clock: where an earlier step's stands higher, the
    notes name the highest and send the listener to the pair in turns; where none does, they say nothing."""
    steps = [s for s in catalogue.STEPS if s.best.id in fixture_doc["benchmarks"]]
    b = fixture_doc["benchmarks"]
    early, late = steps[-3], steps[-1]
    b[early.best.id]["tflops"] = 1.05 * max(b[s.best.id]["tflops"] for s in steps)
    ctx = build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())
    names = {step.key: step.name for step in ctx["gemm"].steps}
    notes = lambda step: s[f"Kernel {catalogue.STEPS.index(step) + 1}: {step.title} — Performance"].split("<!--")[1]
    assert f"On the climb, {names[early.key]} stands higher, {b[early.best.id]['tflops']:,.1f} TFLOPS" in notes(late)
    assert "each bar is its own run and clock; the pair in turns is the comparison." in notes(late).split("For questions.")[0]
    assert "On the climb" not in notes(early)


def test_the_title_slide_carries_the_headline_climb(deck):
    title = slides_of(deck["md"])["CUDA Performance Study"]
    assert gemm.TITLE_CLIMB in title
    # the headline's climb, drawn shorter than on its performance slide, where it is the slide's picture
    def svg_height(name):
        svg = next(deck["dir"].glob(f"svgs/*/{name}")).read_text()
        return float(re.search(r'<svg[^>]* height="([\d.]+)', svg).group(1))
    step_climb = f"climb_{catalogue.step_of(catalogue.HEADLINE).key}.svg"
    assert svg_height(gemm.TITLE_CLIMB) == gemm.TITLE_CLIMB_HEIGHT < svg_height(step_climb) == gemm.CLIMB_HEIGHT
    # the clock beside the headline's figure is the one its turns with cuBLAS ran at
    clock = clock_during(deck["doc"]["benchmarks"][catalogue.HEADLINE])
    assert f"its SMs at {clock:,.0f} of {deck['doc']['device']['sm_clock_max_mhz']:,.0f} MHz" in title
    notes = title.split("<!--")[1]
    assert f"{clock:,.0f} MHz measured" in notes


@pytest.mark.parametrize("ci, words", [((1.01, 1.02), "is ahead of cuBLAS"), ((0.99, 1.01), "is level with cuBLAS"),
                                       ((0.90, 0.95), "comes within")])
def test_the_title_states_the_thesis_as_the_headlines_pair_with_cublas_calls_it(fixture_doc, write_results, tmp_path,
                                                                               ci, words):
    """The thesis on the title slide: where the headline stands against cuBLAS is called from the
    interval of their ratio in turns, not typed in."""
    versus = fixture_doc["benchmarks"][catalogue.HEADLINE]["cublas"]
    versus["ratio_by_sample"]["ci"] = list(ci)
    path = write_results(fixture_doc)
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(path), "--out-dir", str(tmp_path)]) == 0
    title = slides_of((tmp_path / "slides.md").read_text())["CUDA Performance Study"]
    thesis = next(line for line in title.splitlines() if line.startswith("**A GEMM written by hand"))
    assert words in thesis and "tensor cores fed" in thesis, thesis


def test_numbers_follow_the_results(fixture_doc, write_results, tmp_path):
    """Change a measurement and the deck changes with it: nothing was typed in."""
    fixture_doc["benchmarks"]["gemm.cublas_tf32_b_row"]["tflops"] = 123.45
    fixture_doc["device"]["sm_count"] = 77
    path = write_results(fixture_doc)
    build.main(["--results", str(path), "--out-dir", str(tmp_path)])
    md = (tmp_path / "slides.md").read_text()
    assert "**123.5**" in md and "77 SMs" in md and "132 SMs" not in md


# Digits a template may hold: names (FP32, SM90, L2, 16-byte, 32-bit), list numbering,
# the constants of a formula (2·M·N·K, 4 bytes a float, × 2 for double data rate) and
# a baseline's 100% of itself.
ALLOWED_IN_TEMPLATES = re.compile(
    r"(FP|TF|BF)(8|16|32|64)|e4m3|SM\d\d|sm_\d+|L[12]\b|\d+-(byte|bit)|float4|im2col|"
    r"^\*\*\d\. |\b\d·|× \d ×|\b100%")


def test_every_template_is_a_section_of_the_outline_and_every_section_has_one():
    from slides.outline import SECTIONS
    templates = {p.name.removesuffix(".md.j2") for p in SLIDES_DIR.glob("*.md.j2") if not p.name.startswith("_")}
    assert templates == set(SECTIONS) and len(SECTIONS) == len(set(SECTIONS))


def test_templates_hold_no_measured_values():
    """Outside Jinja tags, styles, classes (a slide's too) and file names, templates hold no digits but names like FP32."""
    for path in sorted(SLIDES_DIR.glob("*.md.j2")):
        source = re.sub(r"<style.*?</style>", "", path.read_text(), flags=re.S)
        for n, line in enumerate(source.splitlines(), 1):
            text = re.sub(r"\[\[.*?\]\]|\[%.*?%\]|\[#.*?#\]|(class|src)=\"[^\"]*\"|^class: .*", "", line)
            text = ALLOWED_IN_TEMPLATES.sub("", text)
            assert not re.search(r"\d", text), f"{path.name}:{n}: a number in a template: {line.strip()}"


def test_missing_results_get_markers_and_are_listed(fixture_doc, write_results, tmp_path, capsys):
    for bid in (*MICRO, "gemm.wgmma"):
        del fixture_doc["benchmarks"][bid]
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    md = (tmp_path / "slides.md").read_text()
    s = slides_of(md)
    marker = "Not measured on this GPU"
    for title in ("Instruction Latency — Results", "Memory Latency", "L2 Bandwidth Scaling", "Matrix Transpose",
                  "Kernel 4: CuTe WGMMA — Performance"):
        assert marker in s[title], title
    assert marker not in s["HBM Bandwidth Scaling"]
    assert "Memory Latency — Working-Set Sweep" not in headings(md)
    assert "Kernel 4: CuTe WGMMA — Performance: gemm.wgmma" in out
    assert "L2 Bandwidth Scaling: l2.bandwidth_scaling" in out and "Matrix Transpose: transpose.all" in out


def test_failed_check_is_shown(deck):
    s = slides_of(deck["md"])
    assert "FAILED: check failed" in s["Kernel 3: CuTe SMEM — Performance"]
    assert "FAILED: gemm.cute_smem_k8" in deck["out"]


def test_stale_source_is_flagged(fixture_doc, write_results, tmp_path, capsys):
    fixture_doc["benchmarks"]["hbm.copy_scaling"]["source_hash"] = "0000000000000000"
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "STALE: hbm.copy_scaling: code changed; rerun" in out and "STALE: gemm.cublas" not in out
    assert f"(python -m bench --stale on the {fixture_doc['device']['name']} reruns it)" in out
    s = slides_of((tmp_path / "slides.md").read_text())
    assert 'title="code changed">stale</span>' in s["HBM Bandwidth Scaling"]
    assert "Measured with older code: hbm.copy_scaling" in s["Backup Slides"]          # off the talk's main path



def test_a_record_is_stale_by_its_own_sources_and_the_catalogue(fixture_doc, monkeypatch):
    """The deck tells a stale record from the files it names and the catalogue alone."""
    from dataclasses import replace
    from slides.records import stale_why
    recs = fixture_doc["benchmarks"]
    assert stale_why(recs["gemm.persistent"]) == "" and stale_why(recs["sweep.lean_loop"]) == ""
    assert stale_why({k: v for k, v in recs["hbm.copy_scaling"].items() if k != "sources"}).startswith("measured before")
    assert stale_why({**recs["hbm.copy_scaling"], "sources": [*recs["hbm.copy_scaling"]["sources"], "bench/gone.py"]}) \
        == "code changed"
    assert stale_why({**recs["gemm.persistent"], "kernels": ["gemm.gone"]}) == "its kernel is no longer in the catalogue"
    # another tile in the catalogue stales the kernel, the one timed in turns with it and its step's sweep
    step, variant = catalogue.KERNELS[catalogue.TUNED]
    retiled = replace(variant, tile={**variant.tile, "GROUP_M": 4})
    monkeypatch.setitem(catalogue.KERNELS, catalogue.TUNED, (step, retiled))
    partner = next(v for v in catalogue.KERNELS if catalogue.before(v) == catalogue.TUNED)
    assert stale_why(recs[catalogue.TUNED]) == stale_why(recs[partner]) == "code changed"
    assert stale_why(recs["gemm.cublas_tf32_b_row"]) == ""


def test_the_deck_reads_the_results_contract_only():
    """build.py imports no benchmark module, nothing that measures and no GPU library: the schema,
    the statistics, the provenance, the results file and the catalogue."""
    import subprocess
    import sys
    code = ("import contextlib, io, json, sys, build\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    build.main(['--results', 'tests/fixtures/h100.yaml', '--no-compare', '--out-dir', sys.argv[1]])\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('bench', 'cupy', 'numba', 'cuda'))))")
    import json
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run([sys.executable, "-c", code, out], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert set(json.loads(proc.stdout)) == {"bench", "bench.core", "bench.core.toolkit", "bench.core.schema", "bench.core.stats",
                                            "bench.core.provenance", "bench.core.results", "bench.gemm", "bench.gemm.catalogue",
                                            "bench.gemm.plan"}



def test_a_record_kept_over_a_rerun_that_measured_nothing_is_said(fixture_doc, write_results, tmp_path, capsys):
    rec = fixture_doc["benchmarks"]["peers.gpu_benches"]
    rec["last_attempt"] = {"status": "skipped", "reason": "no checkout of the peer", "measured_at": "later"}
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    assert (f"KEPT: peers.gpu_benches: the last run skipped (no checkout of the peer); the deck shows its record of "
            f"{rec['measured_at']}") in capsys.readouterr().out

def test_deck_without_any_gemm_or_hbm(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"] = {}
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--talk", build.FULL])
    md = (tmp_path / "slides.md").read_text()
    assert headings(md)[:2] == OUTLINE[:2]
    assert "Nothing of the GEMM family is measured" in md
    assert "HBM Bandwidth Scaling — Little's Law" not in headings(md)
    # the peaks are the GPU model's (SMs x rate x clock), drawn without a measurement beside them
    assert sorted(p.name for p in figures_dir(tmp_path).iterdir()) == ["gemm_progression.svg", "peaks.svg", "sm_hierarchy.svg"]
    assert "No roofline here: it needs the reference shape" in md and "these results lack the shape" in md


def test_gpu_without_rate_table(fixture_doc, write_results, tmp_path):
    fixture_doc["device"]["compute_capability"] = "12.0"
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    s = slides_of((tmp_path / "slides.md").read_text())
    assert "no per-SM rate table for compute capability 12.0" in s["Theoretical Peak Performance"]
    assert "these results lack the rate" in s["Why Matrix Multiply?"]
    assert not {"peaks.svg", "roofline.svg"} & {p.name for p in figures_dir(tmp_path).iterdir()}


def test_the_peaks_and_the_roofline_come_from_the_gpu_model_and_the_records(fixture_doc, write_results, tmp_path, monkeypatch):
    """The peaks' ladder: each precision's dense peak (SMs × rate × maximum clock) beside cuBLAS's fastest
    alone, the table on its backup slide. The roofline: the reference shape's intensity against TF32's
    ridge over the measured copy (over the memory's spec, said so, without one), a GEMV of the same A
    beside it; each judgment with its other outcome."""
    from slides.device import PER_SM_FLOP_PER_CLK
    dev, b = fixture_doc["device"], fixture_doc["benchmarks"]
    rates = PER_SM_FLOP_PER_CLK[dev["compute_capability"]]
    peak = lambda p: dev["sm_count"] * rates[p] * dev["sm_clock_max_mhz"] / 1e6

    def built(name: str) -> tuple[dict, str, str]:
        out = tmp_path / name
        out.mkdir()
        build.build(write_results(fixture_doc, f"{name}.yaml"), out)
        svgs = figures_dir(out)
        read = lambda f: (svgs / f).read_text() if (svgs / f).exists() else ""
        return slides_of((out / "slides.md").read_text()), read("peaks.svg"), read("roofline.svg")

    s, bars, roof = built("all")
    main, table = s["Theoretical Peak Performance"], s["Theoretical Peak Performance — Table"]
    for p in rates:
        best = max(r["tflops"] for bid, r in b.items() if bid.startswith(f"gemm.cublas_{p}_"))
        assert f"{peak(p):,.0f}" in bars and f"{best:,.0f}" in bars, p
        assert f"**{peak(p):,.1f} TFLOPS**" in table, p
    assert 'peaks.svg"' in main and "| Resource |" not in main
    assert f"The tensor cores' TF32 peak is {rates['tf32'] // rates['fp32']}× the CUDA cores' FP32, doubling with each narrower precision" in main
    m, n, k = (b["gemm.cublas_tf32_b_kmajor"]["params"][d] for d in "mnk")
    intensity, gemv = 2 * m * n * k / (4 * (m * k + k * n + m * n)), 2 * m * k / (4 * (m * k + m + k))
    gbps = max(r["gbps"] for r in b["hbm.copy_scaling"]["rows"])
    ridge = 1000 * peak("tf32") / gbps
    why = s["Why Matrix Multiply?"]
    assert f"does **{intensity:,.0f} FLOP per byte**" in why and "(measured copy)" in why
    assert f"is **{ridge:,.0f}**: compute-bound by {intensity / ridge:.1f}×" in why
    assert f"A GEMV of the same A does {gemv:.2f}: memory-bound, at most {gbps * gemv / 1000:,.1f} TFLOPS" in why
    assert (f"ridge {ridge:,.0f}" in roof and f"HBM, copy measured: {gbps:,.0f} GB/s" in roof
            and f"FP32 operands: {intensity:,.0f}" in roof and "GEMV of the same A" in roof)
    assert "```" in s["Why Matrix Multiply? — The Count"] and "```" not in why
    # without the copy: the memory's spec, said so; a shape too small to pass the ridge; a ladder that does not double
    del b["hbm.copy_scaling"]
    for bid in b:
        if bid.startswith("gemm.cublas_"):
            b[bid]["params"].update(m=64, n=64, k=64)
    monkeypatch.setitem(rates, "fp8", 3 * rates["bf16"])
    s, bars, roof = built("spec")
    spec = dev["mem_clock_max_mhz"] * 2 * dev["mem_bus_width_bits"] / 8 / 1e3
    small, ridge = 2 * 64 ** 3 / (4 * 3 * 64 ** 2), 1000 * peak("tf32") / spec
    assert f"HBM spec, copy not measured), is **{ridge:,.0f}**: memory-bound even at best, its intensity {small / ridge:.2f}× the balance" in s["Why Matrix Multiply?"]
    assert f"HBM, spec (copy not measured): {spec:,.0f} GB/s" in roof
    assert f"{rates['fp8'] // rates['tf32']}× from TF32 to FP8" in s["Theoretical Peak Performance"]


def test_micro_benchmark_slides_follow_the_data(deck):
    b = deck["doc"]["benchmarks"]
    s = slides_of(deck["md"])
    fadd = next(r for r in b["latency.instruction"]["rows"] if r["op"] == "FADD")
    assert f"| **FADD** | {float(fadd['cycles']['1']):.3g} |" in s["Instruction Latency — Results"]
    assert f"FADD, FMUL and FFMA take {max(float(r['cycles']['1']) for r in b['latency.instruction']['rows'] if r['op'] in ('FADD', 'FMUL', 'FFMA')):.3g} cycles" in s["Instruction Latency — Key Observations"]
    # the chains it takes, and the figure at that many chains (the table's column), not the best of any
    by_ilp = sorted((int(i), float(c)) for i, c in fadd["cycles"].items())
    best = min(c for _, c in by_ilp)
    chains, cycles = next((i, c) for i, c in by_ilp if c <= 1.1 * best)
    assert f"{chains} chains bring one warp to {cycles:.3g} cycles per FADD" in s["Instruction Latency — Key Observations"]
    hbm_level = next(l for l in b["latency.memory"]["levels"] if l["level"] == "HBM")
    assert f"{hbm_level['ns']:,.1f}" in s["Memory Latency"]
    assert "The step up to HBM latency lies at" in s["Memory Latency — Working-Set Sweep"]
    best = max(r["gbps"] for r in b["transpose.all"]["rows"])
    assert f"{best:,.4g}".replace(",", "") in s["Matrix Transpose"].replace(",", "")
    assert "Bytes in flight = bandwidth × latency" in s["HBM Bandwidth Scaling — Little's Law"]


def test_sweep_step_is_read_off_the_data():
    """The HBM step sits where latency first reaches the large-set plateau."""
    sweep = [{"bytes": 1 << e, "cycles": c, "ns": c / 2} for e, c in zip(range(20, 30), (300, 300, 300, 300, 300, 520, 690, 700, 700, 700))]
    mem = memory_latency.read({"params": {}, "sweep": sweep,
                               "levels": [{"level": "shared", "label": "s", "bytes": 1, "cycles": 20, "ns": 10},
                                          {"level": "L2", "label": "l2", "bytes": 1, "cycles": 300, "ns": 150}]},
                              1 << 26)
    assert mem["hbm_step_bytes"] == pytest.approx(2 ** 25.5)      # between 32 MiB (520) and 64 MiB (690)
    assert mem["clock_mhz"] == pytest.approx(2000)                  # cycles over ns of every chase
    assert mem["l2_leave_bytes"] == 1 << 25 and mem["middle_cycles"] == 520


@pytest.mark.parametrize("past_far", [True, False])
def test_the_latency_past_half_of_l2_is_weighed_against_a_far_half_hit(fixture_doc, write_results, tmp_path, past_far):
    """From where the sweep leaves L2's plateau, its loads are weighed against what a hit in L2's far
    half costs on the L2 map: well above it, some must go to memory; about it, they come from the far half."""
    from slides import l2
    from slides.deck import Deck
    b = fixture_doc["benchmarks"]
    deck_of = Deck(fixture_doc)
    cycles, h = l2.map_halves(deck_of.record(l2.MAP_ID))
    assert h["split"], "the fixture's map has two halves"
    mem = memory_latency.read(b["latency.memory"], fixture_doc["device"]["l2_bytes"])
    for s in b["latency.memory"]["sweep"]:                 # the sweep between leaving L2 and reaching HBM
        if mem["l2_leave_bytes"] <= s["bytes"] < mem["hbm_step_bytes"]:
            s["cycles"] = 2 * h["far"] if past_far else 1.15 * h["far"]     # past L2's plateau (1.2x its level) either way
    build.build(write_results(fixture_doc), tmp_path)
    slide = slides_of((tmp_path / "slides.md").read_text())["Memory Latency — Working-Set Sweep"]
    said = (f"more than a hit in L2's far half ({h['far']:,.0f} on the L2 map), so some of them go to memory" if past_far
            else f"about a hit in L2's far half ({h['far']:,.0f} on the L2 map): lines past the near half come from the far one")
    assert said in slide


def test_figures_drawn_from_the_data(deck):
    svgs = figures_dir(deck["dir"])
    instr = (svgs / "instruction_latency.svg").read_text()
    assert all(r["name"] in instr for r in deck["doc"]["benchmarks"]["latency.instruction"]["rows"])
    assert "L2 as reported: 50 MiB" in (svgs / "memory_sweep.svg").read_text()
    assert "HBM copy" in (svgs / "l2_scaling.svg").read_text()
    assert "copy of the same bytes" in (svgs / "transpose.svg").read_text()
    progression = (svgs / "gemm_progression.svg").read_text()
    best = deck["doc"]["benchmarks"]["gemm.wgmma_tma_128x256"]["tflops"]
    assert "Naive FP32" in progression and f"{best:.1f}" in progression
    scaling = (svgs / "hbm_scaling.svg").read_text()
    rows = [r for r in deck["doc"]["benchmarks"]["hbm.copy_scaling"]["rows"]
            if (r["blocks"] == r["sms_used"] and r["threads"] > 32) or r["blocks"] > r["sms_used"]]
    assert scaling.count("<circle") == len(rows)
    hierarchy = (svgs / "sm_hierarchy.svg").read_text()
    assert f"{deck['doc']['device']['sm_count']} SMs" in hierarchy and "50 MiB" in hierarchy


def test_every_figure_is_shown_at_the_width_it_was_drawn_with_legible_text(deck):
    """Figures are drawn to the slide: shown at their drawn width (no scaling), inside the slide's
    content width, so each text's font size is what a room sees, and none is under 10 px."""
    md = deck["md"]
    for svg in figures_dir(deck["dir"]).glob("*.svg"):
        text = svg.read_text()
        width = float(re.search(r'viewBox="0 0 ([\d.]+) ', text).group(1))
        assert width <= 868, (svg.name, width)        # 980 px less Slidev's padding
        shown = rf'<img src="\./svgs/{svg.parent.name}/{re.escape(svg.name)}" class="[^"]*" style="width: {width:g}px; max-width: none" />'
        assert re.search(shown, md), svg.name
        sizes = [float(x) for x in re.findall(r"font-size:([\d.]+)px", text)]
        layer = re.search(r"\.\d+\.svg$", svg.name)          # a layer over a figure may hold lines alone
        assert (sizes or layer) and min(sizes, default=10) >= 10, (svg.name, min(sizes, default=None))


def prose_words(slide: str) -> int:
    """Words a room reads on a slide: not its title, notes, code, styles, markup, table rows or a
    talk's link to its backup slides."""
    for pattern in (r"<!--.*?-->", r"````.*?````", r"```.*?```", r"<style.*?</style>", r'<div class="backup-link">.*?</div>',
                    r"<[^>]+>"):
        slide = re.sub(pattern, " ", slide, flags=re.S)
    lines = [line for line in slide.splitlines()[1:] if not line.lstrip().startswith("|")]
    return sum(1 for token in " ".join(lines).split() if re.search(r"[A-Za-z]", token))


@pytest.mark.parametrize("results", [None, "nvidia-h100-80gb-hbm3.yaml", "nvidia-h200.yaml"])
def test_slides_hold_at_most_eighty_words_the_rest_is_in_the_notes(deck, results, tmp_path):
    """The claim, the number and the picture: prose past ~80 words goes to the presenter notes."""
    if results:
        from tests.conftest import ROOT
        with contextlib.redirect_stdout(io.StringIO()):
            assert build.main(["--results", str(ROOT / "results" / results), "--out-dir", str(tmp_path)]) == 0
    md = (tmp_path / "slides.md").read_text() if results else deck["md"]
    wordy = {title: n for title, slide in slides_of(md).items() if (n := prose_words(slide)) > 80}
    assert not wordy, wordy


def test_nice_ticks():
    assert kit.nice_ticks(390) == [0, 100, 200, 300, 400]
    assert kit.nice_ticks(3352)[-1] >= 3352


@pytest.mark.timed
def test_build_is_fast(tmp_path, builds_done):
    """python build.py on the committed results files (the deck, its comparison and its node): about
    1.35 s of CPU (1.0 s wall) on a quiet 2-core machine. Timed last, once CI's kernel compiles are
    done, and counted in the child's CPU seconds, which a fresh clone's busy machine has nearly doubled:
    the bound catches a build that grows slower, not a busy machine."""
    import resource
    import statistics
    import subprocess
    import sys
    cpu = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    times = []
    for _ in range(3):
        before = cpu()
        subprocess.run([sys.executable, "build.py", "--out-dir", str(tmp_path)], cwd=ROOT, check=True,
                       capture_output=True)
        times.append(cpu() - before)
    assert statistics.median(times) < 3.0, times


def test_results_are_parsed_by_libyaml():
    """PyYAML's pure-Python parser alone takes about a second for the two committed files."""
    import yaml
    from bench.core import schema
    assert not yaml.__with_libyaml__ or schema.YAML_LOADER is yaml.CSafeLoader


def test_occupancy_names_the_binding_limit(fixture_doc):
    from slides.deck import Deck
    device = dataclasses.replace(Deck(fixture_doc).of(slides.device), warp_size=32, max_threads_per_sm=2048,
                                 regs_per_sm=65536, smem_per_sm_bytes=233472)
    naive = occupancy({"threads_per_block": 256, "regs_per_thread": 32, "smem_static_bytes": 0,
                             "smem_dynamic_bytes": 0}, device)
    assert naive == {"blocks_per_sm": 8, "warps_per_sm": 64, "occupancy_pct": 100.0, "limited_by": "threads",
                     "limits": {"threads": 8, "registers": 8, "shared memory": 32, "blocks": 32}}
    heavy = occupancy({"threads_per_block": 128, "regs_per_thread": 168, "smem_static_bytes": 0,
                             "smem_dynamic_bytes": 100 * 1024}, device)
    assert heavy["limited_by"] == "shared memory" and heavy["blocks_per_sm"] == 2


def test_naive_diagram_follows_the_recorded_launch(fixture_doc, write_results, tmp_path):
    """The diagram is drawn from the block the measured run launched: change it and the figure changes."""
    naive = fixture_doc["benchmarks"]["gemm.naive_fp32"]
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    assert "one block: 16 × 16 threads" in (figures_dir(tmp_path) / "gemm_naive.svg").read_text()
    naive["resources"]["grid"] = [256, 512]                # a 32 x 8 block over the same C
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    svg = (figures_dir(tmp_path) / "gemm_naive.svg").read_text()
    assert "one block: 32 × 8 threads" in svg and "grid: 256 × 512 blocks" in svg
    s = slides_of((tmp_path / "slides.md").read_text())
    assert "gemm_naive.svg" in s["Kernel 1: Naive FP32 — Diagram"]
    assert "limited by threads" in s["Kernel 1: Naive FP32 — Performance"]
    assert "#kernel python" in s["Kernel 1: Naive FP32 — Code"]


def test_cute_diagram_follows_the_compiled_tile():
    """Drawn from the tile constants a CuTe kernel was compiled with: other constants, other figure."""
    def draw(bm, bk, smem):
        step = SimpleNamespace(best={"resources": {"threads_per_block": 128, "smem_static_bytes": smem, "smem_dynamic_bytes": 0,
                "grid": [4096 // bm, 8192 // 128], "tile": {"BM": bm, "BN": 128, "BK": bk, "MMA_ATOM": "SM80_16x8x8_F32TF32TF32F32_TN",
                         "WARPS_M": 2, "WARPS_N": 2, "atom_mnk": [16, 8, 8]}}})
        return diagrams.cute_diagram(step, {"m": 4096, "n": 8192, "k": 16384})
    small, big = draw(64, 8, 0), draw(128, 32, 36832)
    assert "C tile 64×128: 4×16 MMA atoms" in small and "512 steps" not in small and "2048 steps of 8" in small
    assert "C tile 128×128: 8×16 MMA atoms" in big and "512 steps of 32" in big and "36.0 KiB of shared memory" in big
    assert "grid: 64 × 64 CTAs" in small and "grid: 32 × 64 CTAs" in big          # the grid the run launched
    assert small.count("<rect") < big.count("<rect")


def test_gemm_performance_slides_quote_resources_and_profile(deck):
    s = slides_of(deck["md"])
    smem = s["Kernel 3: CuTe SMEM — Performance"]
    prof = deck["doc"]["benchmarks"]["gemm.cute_smem_k32"]["profile"]["metrics"]
    busiest = max(("dram__throughput.avg.pct_of_peak_sustained_elapsed", "l1tex__throughput.avg.pct_of_peak_sustained_active",
                   "sm__instruction_throughput.avg.pct_of_peak_sustained_active"), key=prof.get)
    assert f"busiest, {prof[busiest]:,.0f}% of peak" in smem and "GEMM Kernels — Resources" in smem
    assert "limited by registers" in smem and "refused" in smem
    assert "FAILED: check failed" in smem                       # the fixture's K-tile 8
    assert "gemm_cute_smem.svg" in s["Kernel 3: CuTe SMEM — Diagram"]


def test_wgmma_diagram_follows_the_compiled_tile(fixture_doc):
    """Warpgroups, stages, the fill path and the tile order come from the recorded constants."""
    shape = {"m": 4096, "n": 8192, "k": 16384}
    tma = fixture_doc["benchmarks"]["gemm.wgmma_tma_128x256"]["resources"]
    pipe = copy.deepcopy(fixture_doc["benchmarks"]["gemm.wgmma_pipe"]["resources"])
    draw = lambda res: diagrams.wgmma_diagram(SimpleNamespace(best={"resources": res}), shape)
    t = draw(tma)
    assert "3 shared stages × 48 KiB" in t and "full[2]" in t and "one thread → TMA" in t
    assert "empty[" not in t and "the 8th to count refills stage s" in t     # no empty barriers: the last reader refills
    assert "warpgroup 1: 64×256" in t and "1,024 CTAs" in t and f"bands of {tma['tile']['GROUP_M']} tile rows" in t
    p = draw(pipe)
    assert "2 shared stages × 32 KiB" in p and "full[" not in p and "cp.async" in p and "down M first" in p
    pipe["tile"].update(STAGES=1)
    assert "1 shared stage × 32 KiB" in draw(pipe)


def test_clock_bullet_quotes_the_clock_the_best_kernel_held(fixture_doc, write_results, tmp_path):
    """The clock the power cap left while the headline kernel and cuBLAS took turns, from its telemetry."""
    bench = fixture_doc["benchmarks"]
    top = catalogue.HEADLINE
    bench[top]["telemetry"]["sm_clock"]["mean"] = 1234.0           # measured: NVML's sample is not read
    bench[top]["telemetry"]["during"]["sm_clock_mhz"]["median"] = 1500.0
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    s = slides_of((tmp_path / "slides.md").read_text())["Still on the Table"]
    limit = fixture_doc["device"]["power_limit_w"]
    assert f"Under the {limit:,.0f} W cap the SMs ran at 1,234 MHz (measured) of their" in s
    del bench[top]["telemetry"]["sm_clock"]                          # a record from before the probe
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    s = slides_of((tmp_path / "slides.md").read_text())["Still on the Table"]
    assert "the SMs ran at 1,500 MHz (NVML's median) of their" in s


def test_a_step_whose_error_moves_says_how_its_operands_become_tf32(fixture_doc, write_results, tmp_path):
    """Error beside error: where a step's error differs from the step before's by half again, its
    performance slide says so, and why when the run recorded it (precision, TMA rounding, wgmma
    truncating FP32 read from shared memory)."""
    b = fixture_doc["benchmarks"]
    tma = b["gemm.wgmma_tma_128x256"]
    tma["resources"]["tma"]["a"]["data_type"] = "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32"
    tma["check"]["rel_error"] = 3.0e-4
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())
    perf = lambda i: s[f"Kernel {i}: {catalogue.STEPS[i - 1].title} — Performance"]
    assert "from 2.3e-06 the step before: TF32 operands in place of FP32" in perf(2)
    assert ("**Error 8.0e-04**, from 3.0e-04 the step before: wgmma keeps only the TF32 bits of the FP32 operands "
            "in shared memory, truncating") in perf(4)
    assert ("**Error 3.0e-04**, from 8.0e-04 the step before: the TMA copy rounds each FP32 operand to the "
            "nearest TF32") in perf(6)
    assert "**Error" not in perf(5)                        # the same error as the step before


def test_a_step_slower_than_the_one_before_says_whether_its_interval_holds_no_change(fixture_doc, write_results, tmp_path):
    """A step's gain is its best kernel timed in turns with the step before's best: a tie where the
    interval holds no change, slower where it lies below, a gain where above; a bound near no change
    keeps the decimals that show its side."""
    b = fixture_doc["benchmarks"]
    deep = b["gemm.warp_specialized_deep"]
    assert deep["before"]["id"] == "gemm.wgmma_tma_128x256" == b["gemm.warp_specialized"]["before"]["id"]
    title = "Kernel 7: Warp Specialization — Performance"
    pair = deep["before"]
    # the point is the ratio of the two medians, printed beside it; the interval is the samples' ratio's
    # the turns' one clock: the record's, over all their samples
    clock = lambda: f", SMs at {clock_during(deep):,.0f} MHz" if clock_during(deep) else ""
    there = lambda: ")"
    # the two in those turns, on the table one click on
    two = lambda: f"in the same turns: {pair['tflops'] * pair['gain']:,.1f} vs {pair['tflops']:,.1f} TFLOPS{clock()}."
    # a tie shows no point figure: its interval holds no change, whichever way the medians lean
    for (gain, lo, hi), said in (((0.995, 0.99, 1.002), lambda: "**A tie** with WGMMA + TMA in turns: the interval of "
                                                                "their sample-by-sample ratio, -1.0 to +0.2%, holds no change."),
                                 ((0.9996, 0.99, 0.9999), lambda: "**-0.04%** against WGMMA + TMA in turns "
                                                                  f"(interval -1.0 to -0.01%{there()}: slower"),
                                 ((1.02, 1.0001, 1.03), lambda: "**+2.0%** against WGMMA + TMA in turns "
                                                                f"(interval +0.01 to +3.0%{there()}: a gain"),
                                 ((0.8, 0.79, 0.81), lambda: "**0.8×** over WGMMA + TMA in turns "
                                                             f"(interval 0.79× to 0.81×{there()}: slower, the whole interval below no change")):
        pair["gain"] = gain
        pair["gain_by_sample"].update(median=gain, ci=[lo, hi])
        build.build(write_results(fixture_doc), tmp_path)
        built = slides_of((tmp_path / "slides.md").read_text())
        assert said() in built[title] and two() in built[title.replace("Performance", "Results")]
    # records timed apart (before the pairs): the two figures and their spreads
    del deep["before"]
    deep["tflops"] = b["gemm.wgmma_tma_128x256"]["tflops"] * 0.995
    build.build(write_results(fixture_doc), tmp_path)
    assert ("**-0.5%** against WGMMA + TMA, the previous step measured apart: less than the two timings spread"
            in slides_of((tmp_path / "slides.md").read_text())[title])


def test_missing_slide_tells_what_each_step_past_the_reference_added(deck):
    """From the reference deck's last step on: each step's TFLOPS, gain and ratio, then the last
    wave computed from the best kernel's tiles and grid; the closing slide gives the final ratio."""
    b = deck["doc"]["benchmarks"]
    s = slides_of(deck["md"])
    missing, still, closing = s["Past the Reference Deck — Table"], s["Still on the Table"], s["Takeaways — The Figures"]
    for bid in ("gemm.warp_specialized_deep", "gemm.cluster_multicast"):
        paired = b[bid]["before"]                            # in turns with the step before's best
        lo, hi = paired["gain_by_sample"]["ci"]
        gain = "a tie" if lo <= 1 <= hi else f"{100 * (paired['gain_by_sample']['median'] - 1):+.1f}%"
        cublas = b[bid]["cublas"]["tflops"]          # timed in turns with this kernel
        row = next(line for line in missing.splitlines() if f"**{b[bid]['tflops']:,.1f}** |" in line)
        assert f"| {gain}" in row and f"| {cublas:,.1f} | {100 * b[bid]['tflops'] / cublas:.1f}% |" in row
    top = catalogue.HEADLINE
    res = b[top]["resources"]
    at_once = res.get("resident_ctas") or deck["doc"]["device"]["sm_count"]
    tiles = (4096 // 128) * (8192 // 256)
    assert f"{tiles:,} tiles on {at_once} CTAs at a time make {tiles / at_once:.2f} waves" in still
    cublas = b[top]["cublas"]
    assert (f"**{b[top]['tflops']:,.1f} TFLOPS**, **{100 * b[top]['tflops'] / cublas['tflops']:.1f}%** of cuBLAS TF32, "
            f"same operands and layout ({cublas['tflops']:,.1f} TFLOPS, in turns); error against FP64 "
            f"{b[top]['check']['rel_error']:.1e}, cuBLAS's {cublas['check']['rel_error']:.1e}.") in closing
    # past the GEMM: the BF16 headline and the memory, each from its own record
    bf16 = b[catalogue.HEADLINE_BF16]
    assert f"BF16: **{bf16['tflops']:,.1f} TFLOPS**, {100 * bf16['tflops'] / bf16['cublas']['tflops']:.1f}% of cuBLAS BF16" in closing
    copy = max(r["gbps"] for r in b["hbm.copy_scaling"]["rows"])
    assert f"Memory: copies at **{copy:,.0f} GB/s**" in closing
    split = b[top]["resources"].get("split_wave")
    # split along K: the last wave lasts an owner's part (or a helper's run of tails) of a tile
    if split and split["left"] and split["split"] < split["k_tiles"]:
        k, fixup = split["k_tiles"], split.get("fixup_k_tiles", 0)
        last = max(split["split"], split["rounds"] * (k - split["split"] + fixup)) / k
        idle = 100 * (1 - (tiles / at_once) / (split["full_waves"] + last))
        assert f"the last wave lasts {last:.2f} of a tile's time and {idle:.1f}% is idle" in still
        assert f"{split['helpers']} helper clusters the rest" in still


def test_steps_are_named_by_their_label_only_when_they_have_several_kernels(deck):
    """Past the Reference Deck names a step of one kernel by its title alone ("Split Last Wave", not "Split
    Last Wave (split last wave)"), and a step of several by its title and its best kernel's label."""
    missing = slides_of(deck["md"])["Past the Reference Deck — Table"]
    measured = deck["doc"]["benchmarks"]
    for step in (s for s in catalogue.STEPS if s.beyond and measured.get(s.best.id, {}).get("status") == "ok"):
        label = step.best.label
        assert (f"| {step.title} ({label}) |" in missing) == (len(step.variants) > 1)
        assert f"| {step.title}{f' ({label})' if len(step.variants) > 1 else ''} |" in missing


def test_the_steps_past_the_reference_deck_are_pictured_against_their_cublas(deck):
    """Past the Reference Deck: each step's share of the cuBLAS it took turns with, drawn from 100%, and
    in words where the reference deck stopped, where the steps built here end, and how many of them
    gained, tied and slowed against the step before, in turns."""
    from slides import missing as closing
    s = slides_of(deck["md"])
    main = s["Past the Reference Deck"]
    story = [st for st in slides_gemm_context(deck).story]
    first, last = story[0].best, story[-1].best
    said = [closing.verdict(st.best) for st in story[1:]]
    assert "past_reference.svg" in main and "|" not in main.split("<!--")[0] and prose_words(main) <= 60
    assert (f"The reference deck stopped at **{story[0].name}**, {first['pct_cublas']:.1f}% of cuBLAS TF32. Built here one on top "
            f"of the other, {len(story) - 1} steps take it to **{last['pct_cublas']:.1f}%**: {said.count('gained')} gained in turns "
            f"with the step before, {said.count('tie')} tied, {said.count('slower')} slower.") in main
    svg = (figures_dir(deck["dir"]) / "past_reference.svg").read_text()
    assert all(f">{st.best['pct_cublas']:.1f}%<" in svg for st in story)


def slides_gemm_context(deck) -> dict:
    from slides.deck import Deck
    return Deck(copy.deepcopy(deck["doc"])).of(slides.gemm)


def test_still_on_the_table_draws_each_tracks_share_of_its_library_and_its_peak(deck):
    from slides.deck import Deck
    from slides.device import pct_of_peak
    b, device = deck["doc"]["benchmarks"], Deck(copy.deepcopy(deck["doc"])).of(slides.device)
    s = slides_of(deck["md"])["Still on the Table"]
    assert "on_the_table.svg" in s and prose_words(s) <= 60
    svg = (figures_dir(deck["dir"]) / "on_the_table.svg").read_text()
    for precision, bid in (("TF32", catalogue.HEADLINE), ("BF16", catalogue.HEADLINE_BF16)):
        r = b[bid]
        assert f">{100 * r['tflops'] / r['cublas']['tflops']:,.1f}  ({r['tflops']:,.1f} vs {r['cublas']['tflops']:,.1f} TFLOPS)<" in svg
        peak = pct_of_peak(device, precision.lower(), r["tflops"], clock_during(r))
        assert f">{peak:,.1f}  (at {clock_during(r):,.0f} MHz)<" in svg
    clock = clock_during(b[catalogue.HEADLINE])
    assert f">{100 * clock / device.sm_clock_max_mhz:,.1f}  ({clock:,.0f} of {device.sm_clock_max_mhz:,.0f} MHz" in svg


def test_the_takeaways_are_lessons_each_with_its_number(deck):
    """Each lesson is a short sentence with the number that proves it: the clock under the power cap,
    the biggest step once the tensor cores are in, FP8's error with its sums promoted; with the
    headline's climb as the picture, and every figure on the slide behind it."""
    from slides import missing as closing
    b, device = deck["doc"]["benchmarks"], deck["doc"]["device"]
    s = slides_of(deck["md"])
    main = s["Takeaways"]
    assert "climb_title.svg" in main and prose_words(main) <= 60 and "Takeaways — The Figures" in s
    clock = clock_during(b[catalogue.HEADLINE])
    assert f"**The power cap sets the clock:** the headline ran at **{clock:,.0f} of {device['sm_clock_max_mhz']:,.0f} MHz**." in main
    fed = closing.feeding(slides_gemm_context(deck))
    assert fed["gained"] and (f"after {fed['first']}, {fed['title']} gained most: **{fed['gain']:.2f}×** in turns."
                              in main)
    drop = b[catalogue.HEADLINE_FP8]["check"]["rel_error"] / b["gemm.fp8_promote"]["check"]["rel_error"]
    assert f"**FP8 needs its sums promoted:** FP32 sums cut the error **{drop:.0f}×**" in main
    assert "Small M" not in main                     # the fixture has no atlas: that lesson drops out


def test_each_lesson_takes_its_other_wording_or_drops_out(fixture_doc, write_results, tmp_path):
    from slides import missing as closing
    b = fixture_doc["benchmarks"]
    top = b[catalogue.HEADLINE]
    top["telemetry"]["during"]["throttle_reasons"] = []                # nothing held the clock down
    del b["gemm.fp8_promote"]
    build.build(write_results(fixture_doc), tmp_path)
    main = slides_of((tmp_path / "slides.md").read_text())["Takeaways"]
    assert "The power cap" not in main and "with no throttle reason." in main and "FP8" not in main
    # small M: its worst cell below the larger sizes' worst, or not
    summary = [{"precision": "TF32", "versus": "cuBLAS", "params": {"precision": "tf32"},
                "small": {"pct": 60.0, "where": "X, M = 64", "to": 256}, "large": {"pct": 90.0, "from": 512}}]
    assert closing.small_m(SimpleNamespace(summary=summary))["loses"]
    summary[0]["large"]["pct"] = 50.0
    assert not closing.small_m(SimpleNamespace(summary=summary))["loses"] and closing.small_m(SimpleNamespace(summary=[])) is None
    # of a precision's two atlases, the lesson reads the first, the one the talk shows
    fp8 = [{**summary[0], "precision": "FP8", "params": {"precision": "fp8"}, "small": {**summary[0]["small"], "pct": pct}}
           for pct in (55.0, 40.0)]
    assert closing.small_m(SimpleNamespace(summary=[*summary, *fp8]))["pct"] == 55.0


def test_split_wave_schedule_gives_every_cluster_one_piece_of_the_last_wave():
    """bench.gemm.plan.split_wave, the plan the kernel's Schedule follows: owners' parts and helpers'
    runs of tails cover each last-wave tile's K exactly once; a helper's run, each tail charged its
    fix-up, ends no later than its owner's part, which is shorter than a whole tile; and where no such
    split exists the last wave stays whole."""
    from bench.gemm.plan import TAIL_FIXUP_K_TILES as fixup, split_wave
    for units, clusters, k in ((512, 66, 512), (1024, 66, 256), (64, 66, 64), (128, 66, 128), (66, 66, 32),
                               (128, 66, 32), (384, 132, 12), (88, 66, 8), (88, 66, 9), (22, 66, 56), (64, 66, 224)):
        s = split_wave(units, clusters, k)
        clusters = s["clusters"]        # a lone wave left whole launches only its units' clusters
        assert clusters == units or s["full_waves"] or s["split"] < k
        assert s["full_waves"] * clusters + s["left"] == units
        if s["left"]:
            tails = [len(range(h, s["left"], s["helpers"])) for h in range(s["helpers"])]
            assert sum(tails) == s["left"] and max(tails) == s["rounds"]
            if s["split"] < k:
                assert s["rounds"] * (k - s["split"] + fixup) <= s["split"]
            else:               # not even a one-K-tile tail ends before its owner's part
                assert s["rounds"] * (1 + fixup) > k - 1
        else:
            assert s["split"] == k


def test_stream_k_plan_gives_every_cluster_one_run_of_k_tiles_within_one_of_the_others():
    """bench.gemm.plan.stream_k, the runs the kernel follows: together they cover every unit's every
    K-tile once, each is within one K-tile of the others and none is empty (no more clusters than
    K-tiles); its helpers are the runs that start inside a unit, counted here by the clusters each
    unit's K-tiles fall to."""
    from bench.gemm.plan import stream_k
    for units, clusters, k in ((96, 132, 64), (24, 33, 128), (1, 66, 16), (264, 132, 48), (100, 66, 7), (5, 3, 1)):
        s = stream_k(units, clusters, k)
        runs, total = s["runs"], units * k
        assert s["clusters"] == min(clusters, total) == len(runs) - 1
        assert runs[0] == 0 and runs[-1] == total                      # every K-tile, each in one run
        lengths = [b - a for a, b in zip(runs, runs[1:])]
        assert min(lengths) >= 1 and max(lengths) - min(lengths) <= 1
        assert s["run_k_tiles"] == [min(lengths), max(lengths)]
        # K-tile t (unit t // k) falls to the cluster whose run holds it; a unit's clusters past its first help it
        holder = [c for c, n in enumerate(lengths) for _ in range(n)]
        shared = [len({holder[t] for t in range(u * k, (u + 1) * k)}) - 1 for u in range(units)]
        assert s["helpers"] == sum(shared) == sum(r % k != 0 for r in runs[1:-1])
        assert s["split_units"] == sum(h > 0 for h in shared)


def test_sweep_slides_follow_the_data(fixture_doc, write_results, tmp_path):
    ctx = build.build(write_results(fixture_doc), tmp_path)
    step = ctx["sweep"].top          # the headline kernel's step
    top = fixture_doc["benchmarks"][step["sweep_id"]]
    rows = [r for r in top["rows"] if r["outcome"] == "correct" and min(r["shape"]) >= sweep.WITHIN_FROM]
    worst = min(rows, key=lambda r: r["ratio_same_layout"])
    md = slides_of((tmp_path / "slides.md").read_text())
    assert f"**{step['title']}**, from {sweep.WITHIN_FROM} up" in md["GEMM Across Sizes"]
    size = sweep.size_label(worst["shape"])
    pct = 100 * worst["ratio_same_layout"]
    assert ("at or above cuBLAS (same layout) at every size" if pct >= 100
            else f"within {math.ceil(round(100 - pct, 6))}% of cuBLAS at every size" if pct >= 90
            else f"down to {pct:.0f}% of cuBLAS at {size}") in md["GEMM Across Sizes"]
    # the headline takes ragged sizes, and runs its small tile where the catalogue picks it
    everywhere = [s["title"] for s in ctx["sweep"].steps if all(r["outcome"] == "correct" for r in s["record"]["rows"])]
    assert step["title"] in everywhere and f"Correct at every size, ragged ones included: {', '.join(everywhere)}" in md["GEMM Across Sizes"]
    small = [sweep.size_label(r["shape"]) for r in top["rows"] if r["tile"]["BN"] != top["params"]["tiles"][0]["BN"]]
    assert small and f"At {', '.join(small)} it runs" in md["GEMM Across Sizes"]
    at = next(r for r in top["rows"] if r["shape"] == [4096, 8192, 16384])   # the reference shape: not the headline's timing
    assert f"this sweep times it at {at['tflops']['kernel']:,.1f} TFLOPS, {100 * at['ratio_same_layout']:.1f}% of cuBLAS" in md["GEMM Across Sizes"]
    assert "is the results table's" in md["GEMM Across Sizes"]
    cell = next(r for r in top["rows"] if r["shape"] == [16384] * 3)
    row = next(line for line in md["GEMM Across Sizes — Table"].splitlines() if line.startswith(f"| {step['title']}"))
    assert f"| {cell['tflops']['kernel']:,.0f} |" in row                     # the share of cuBLAS goes to the notes
    notes = (tmp_path / "slides.md").read_text().split("# GEMM Across Sizes — Table")[1].split("-->")[0]
    ran = [r for r in top["rows"] if r["outcome"] == "correct"]
    low, high = (f(ran, key=lambda r: r["ratio_same_layout"]) for f in (min, max))
    assert (f"{step['title']}: {100 * low['ratio_same_layout']:.0f}% at {sweep.size_label(low['shape'])} to "
            f"{100 * high['ratio_same_layout']:.0f}% at {sweep.size_label(high['shape'])}.") in notes
    svg = (figures_dir(tmp_path) / "gemm_sweep.svg").read_text()
    assert step["title"] in svg and "cuBLAS TF32, B K-major" in svg and "cuBLAS TF32, B row-major" in svg
    # every other step a grey line, and one legend entry for all of them
    swept = [s for s in catalogue.STEPS if fixture_doc["benchmarks"].get(s.sweep_id, {}).get("status") == "ok"]
    assert svg.count("the other steps") == 1 and svg.count(kit.GROUP) == (len(swept) - 1) + 1

    # held within 10% everywhere from 2048 up, the slide says so; a wrong size is shown in red
    for r in top["rows"]:
        if r["outcome"] == "correct":
            r["ratio_same_layout"] = max(r["ratio_same_layout"], 0.96)
    top["rows"][1] = {**top["rows"][1], "outcome": "wrong"}
    build.build(write_results(fixture_doc), tmp_path)
    md = slides_of((tmp_path / "slides.md").read_text())
    assert f"from {sweep.WITHIN_FROM} up: within 4% of cuBLAS at every size" in md["GEMM Across Sizes"]
    assert "Wrong results at 2048" in md["GEMM Across Sizes"]

    # at or above cuBLAS at every size from WITHIN_FROM up: said so, not "within 0%"
    for r in top["rows"]:
        r["ratio_same_layout"] = max(r["ratio_same_layout"], 1.0)
    build.build(write_results(fixture_doc), tmp_path)
    text = (tmp_path / "slides.md").read_text()
    md = slides_of(text)
    assert f"from {sweep.WITHIN_FROM} up: at or above cuBLAS (same layout) at every size." in md["GEMM Across Sizes"]
    assert f"From size {sweep.WITHIN_FROM} up, {step['title']} is at or above cuBLAS at every size." in text
    assert "within 0%" not in text


def test_the_appendix_says_how_the_tuners_best_fares_against_the_hand_picked_kernel(fixture_doc, write_results, tmp_path):
    """The same kernel, a tie, faster or slower, head to head: judged in tune.py, worded in the template."""
    rec = fixture_doc["benchmarks"]["tune.persistent"]
    hand = rec["final"]["hand_picked"]
    said = {}
    for case, scale in (("same", 1.0), ("faster", 1.05), ("slower", 0.95)):
        r = copy.deepcopy(rec)
        r["winner"] = r["hand_picked"] if case == "same" else (r["hand_picked"] + 1) % len(r["trials"])
        ratio = hand["ratio"] * scale
        r["final"]["winner"] = {**r["final"]["winner"], "ratio": ratio,
                                "ratio_by_sample": {**hand["ratio_by_sample"], "median": ratio, "ci": [ratio * 0.999, ratio * 1.001]}}
        r["final"]["hand_picked"] = {**hand, "ratio_by_sample": {**hand["ratio_by_sample"], "ci": [hand["ratio"] * 0.999,
                                                                                                 hand["ratio"] * 1.001]}}
        fixture_doc["benchmarks"]["tune.persistent"] = r
        out = tmp_path / case
        build.build(write_results(fixture_doc, f"{case}.yaml"), out)
        said[case] = next(line for line in (out / "slides.md").read_text().splitlines() if line.startswith("- **Tuning:**"))
    assert "the best is the hand-picked one: what is left is not in these constants" in said["same"]
    assert "beats the hand-picked one by +5.0%: worth searching" in said["faster"]
    assert "loses to the hand-picked one (-5.0%): what is left is not in these constants" in said["slower"]


def test_tuner_slide_ranks_every_trial_and_names_the_winner(fixture_doc, write_results, tmp_path):
    rec = fixture_doc["benchmarks"]["tune.persistent"]
    build.build(write_results(fixture_doc), tmp_path)
    slide = slides_of((tmp_path / "slides.md").read_text())["Tuning the Persistent Kernel"]
    win = rec["final"]["winner"]
    stages = win["config"]["STAGES"] or rec["params"]["stages_max"][str(win["config"]["BN"])]   # 0: as many as fit
    assert f"**Winner:** {win['config']['BN']}-wide tile, {stages} stages" in slide
    assert f"{100 * win['ratio']:.1f}% of cuBLAS" in slide and f"{len(rec['trials'])} configurations" in slide
    # the hand-picked configuration's two figures, each beside the cuBLAS it divides by, and
    # whether their intervals agree (the tuner times as the GEMM family does)
    table = fixture_doc["benchmarks"][rec["params"]["kernel"]]["cublas"]
    hand = rec["final"]["hand_picked"]
    cublas_here = 2 * 4096 * 8192 * 16384 / (rec["final"]["cublas_time_ms"]["median"] * 1e-3) / 1e12
    assert (f"{100 * hand['ratio']:.1f}% of cuBLAS's {cublas_here:,.1f} TFLOPS here, {100 * table['ratio']:.1f}% of "
            f"{table['tflops']:,.1f} in the results table: one figure, the intervals overlap") in slide
    hand["ratio_by_sample"]["ci"] = [table["ratio_by_sample"]["ci"][1] + 0.01, table["ratio_by_sample"]["ci"][1] + 0.02]
    build.build(write_results(fixture_doc), tmp_path)
    assert "intervals apart: the two timings disagree" in slides_of((tmp_path / "slides.md").read_text())["Tuning the Persistent Kernel"]
    svg = (figures_dir(tmp_path) / "tuner.svg").read_text()
    timed = [t for t in rec["trials"] if "ratio" in t]
    assert all(f">{100 * t['ratio']:.1f}" in svg for t in timed) and "the winner" in svg   # a cell each
    # a configuration that did not build is named with its reason
    rec["trials"][0] = {"config": rec["trials"][0]["config"], "outcome": "error", "reason": "RuntimeError: ptxas C7515"}
    build.build(write_results(fixture_doc), tmp_path)
    slide = slides_of((tmp_path / "slides.md").read_text())["Tuning the Persistent Kernel"]
    assert "Did not run:" in slide and "ptxas C7515" in slide


def test_settle_slide_says_when_the_spread_stays_under_the_target(fixture_doc, write_results, tmp_path):
    """When each GEMM's spread over the harness's settling window stays under 3%, and when the
    harness's rule would start timing, computed here from the raw samples; the GEMM timing's own
    spread beside it; a run that never settles is said so."""
    import numpy as np
    rec = fixture_doc["benchmarks"]["settle.headline"]
    rule = rec["params"]["gemm_settle_rule"]
    rounds = round(1e3 * rule["round_s"] / rec["params"]["sample_ms"])     # a harness round, in this run's samples
    n = max(settle.SPREAD_SAMPLES, rounds)                                 # a spread: at least that many

    def spreads(rows):                                 # (time of a window's last sample, its spread)
        ms = [r["ms"] for r in rows]
        out = []
        for i in range(len(rows) - n + 1):
            p10, m, p90 = np.percentile(ms[i:i + n], [10, 50, 90])
            out.append((rows[i + n - 1]["t_s"], (p90 - p10) / m))
        return out

    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())["Timing Under the Power Cap"]
    for name in ("kernel", "cublas"):
        w = spreads(rec["series"][name]["rows"])
        settled = next((t for i, (t, _) in enumerate(w) if all(x < 0.03 for _, x in w[i:])), None)
        duration = rec["params"]["duration_s"]
        assert (f"under 3% from {settled:.1f} s (" if settled is not None
                else f"never under 3% for good in {duration:.0f} s") in s
    ms, rows = [r["ms"] for r in rec["series"]["kernel"]["rows"]], rec["series"]["kernel"]["rows"]
    starts = next(rows[i - 1]["t_s"] for i in range(2 * rounds, len(rows) + 1)
                  if abs(np.mean(ms[i - rounds:i]) / np.mean(ms[i - 2 * rounds:i - rounds]) - 1) < rule["drift"])
    assert f"that rule starts timing at {starts:.0f} s" in s
    kernel = fixture_doc["benchmarks"][rec["params"]["kernel"]]
    t = kernel["time_ms"]
    assert f"its timing's spread is {100 * (t['p90'] - t['p10']) / t['median']:.1f}%" in s
    assert f"steady after {kernel['settle']['seconds']:.0f} s" in s
    svg = (figures_dir(tmp_path) / "settle.svg").read_text()
    assert "cuBLAS" in svg and "timing starts" in svg and "two rounds' means within 1%" in svg

    rows = rec["series"]["cublas"]["rows"]
    for i, row in enumerate(rows):                     # a clock that never settles
        row["ms"] *= 1.1 if i % 2 else 1.0
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())["Timing Under the Power Cap"]
    assert f"never under 3% for good in {rec['params']['duration_s']:.0f} s" in s

    del fixture_doc["benchmarks"]["settle.headline"]
    build.build(write_results(fixture_doc), tmp_path / "without")
    s = slides_of((tmp_path / "without" / "slides.md").read_text())["Timing Under the Power Cap"]
    assert "Not measured on this GPU: settle.headline" in s and not (figures_dir(tmp_path / "without") / "settle.svg").exists()


def test_each_percentage_names_and_shows_the_cublas_it_divides_by(deck):
    """The naive FP32 kernel against cuBLAS FP32, every other step against cuBLAS TF32 of its layout;
    the figure divided by stands in the same row, so that the percentage can be recomputed."""
    s = slides_of(deck["md"])
    naive = s["Kernel 1: Naive FP32 — Results"]
    assert "cuBLAS FP32, B row-major" in naive and "cuBLAS TF32, same layout" not in naive
    # on the main slide the climb is the comparison: its line names the cuBLAS it stands against
    climb = next(deck["dir"].glob(f"svgs/*/climb_{catalogue.STEPS[0].key}.svg")).read_text()
    assert "cuBLAS FP32, B row-major, in turns" in climb
    rows = [[c.strip() for c in line.strip(" |").split(" | ")]
            for line in s["GEMM — Results Table"].splitlines() if line.startswith("| ") and line.endswith("% |")]
    assert rows[0][0].startswith("Naive FP32") and rows[0][-2].startswith("FP32 ")
    for *_, tflops, base, pct in rows:
        if base != "—":
            assert abs(100 * float(tflops.replace(",", "")) / float(base.split()[1].replace(",", ""))
                       - float(pct.rstrip("%"))) < 0.15, (tflops, base, pct)


def presenter_notes(slide: str) -> str | None:
    """A slide's presenter notes: Slidev reads the last HTML comment at the end of a slide."""
    slide = slide.split("\n---\n")[0]          # up to the next slide's separator (or its frontmatter)
    found = re.findall(r"<!--(.*?)-->", slide, flags=re.S)
    return found[-1].strip() if found and slide.rstrip().endswith("-->") else None


def assert_every_slide_has_notes(markdown: str) -> None:
    for title, slide in slides_of(markdown).items():
        notes = presenter_notes(slide)
        assert notes and len(notes.split()) >= 12, f"{title}: no presenter notes a speaker can read from"


SPOKEN_CHARS = 400
# what a speaker reads aloud: a point and the numbers behind it, a click's line counting as one
SPOKEN_SENTENCES = range(2, 6)
# a whole note, the "For questions" part too: what a speaker can find mid-answer without scrolling far;
# a longer list belongs in a backup table
NOTES_CHARS = 1300


def test_every_slide_has_presenter_notes(deck):
    assert_every_slide_has_notes(deck["md"])
    s = slides_of(deck["md"])
    # the notes say the slide's point first, what a speaker reads aloud; then what left the slide
    # (resources, SASS, counters, with their numbers) for questions
    rec = deck["doc"]["benchmarks"]["gemm.tma_store"]
    perf = presenter_notes(s["Kernel 11: TMA-Store Epilogue — Performance"])
    spoken, details = perf.split("For questions.")
    assert spoken.startswith(f"TMA-Store Epilogue: {rec['tflops']:,.1f} TFLOPS, {100 * rec['tflops'] / rec['cublas']['tflops']:.1f}% of cuBLAS TF32")
    assert "GEMM Kernels — Resources" in details and "Nsight Compute (" not in details
    # which holds what left the notes: resources, the main loop's SASS, the counters
    loop, names = rec["resources"]["sass"]["main_loop"], rec["profile"]["names"]
    tensor = rec["profile"]["metrics"][next(m for m, n in names.items() if n.startswith("tensor pipe"))]
    row = next(line for line in s["GEMM Kernels — Resources"].splitlines() if "TMA-Store Epilogue |" in line)
    # its registers as launched, marked: setmaxnreg moves them from the producer warpgroup to the consumers
    assert rec["resources"]["tile"]["PRODUCER_WARPGROUPS"] == 1
    assert (f"| {rec['resources']['threads_per_block']} × {rec['resources']['regs_per_thread']}† |" in row
            and f"| {loop['instructions']} / {loop['mma']} |" in row)
    assert "† As launched: the kernel then moves registers from its producer warpgroup" in s["GEMM Kernels — Resources"]
    row = next(line for line in s["GEMM Kernels — Resources"].splitlines() if "CuTe WGMMA |" in line)
    assert "†" not in row                       # no producer warpgroup: its registers stay as launched
    row = next(line for line in s["GEMM Kernels — Counters"].splitlines() if "TMA-Store Epilogue |" in line)
    assert f"| {fmt_sig(tensor, 3)} |" in row
    assert_spoken_first(deck["md"])


def assert_spoken_first(markdown: str) -> None:
    """What a speaker reads aloud, every slide's notes up to "For questions.", fits the presenter
    view's few lines (1600×900: about seven) and ends a sentence; the whole note stays short enough
    to find an answer in."""
    for title, slide in slides_of(markdown).items():
        assert len(presenter_notes(slide)) <= NOTES_CHARS, (title, len(presenter_notes(slide)))
        spoken = presenter_notes(slide).split("For questions.")[0].strip()
        assert len(spoken) <= SPOKEN_CHARS, (title, len(spoken))
        assert re.search(r"[.?!:]$", spoken), (title, spoken[-60:])
        assert len(sentences(spoken)) in SPOKEN_SENTENCES, (title, sentences(spoken))


def sentences(text: str) -> list[str]:
    """A note's sentences: each ends in . ? or ! before the capital, figure or [click] that opens the
    next, or at the end of its line."""
    return re.split(r"(?<=[.?!])(?:\s*\n\s*|\s+(?=[A-Z0-9\[]))", text.strip())


def test_notes_of_a_gpu_without_results_say_so(fixture_doc, write_results, tmp_path):
    for bid in list(fixture_doc["benchmarks"]):
        if not bid.startswith("gemm.cublas_"):
            del fixture_doc["benchmarks"][bid]
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    md = (tmp_path / "slides.md").read_text()
    assert_every_slide_has_notes(md)
    assert "not measured on this GPU" in presenter_notes(slides_of(md)["L2 Bandwidth Scaling"])


def test_code_slides_never_shrink_a_long_kernel_they_show_its_focus(deck):
    """Code is set at 11 px; a kernel region longer than a slide holds shows the lines the catalogue
    names as its focus, and the backup slides hold the whole region, in order."""
    assert CODE_PAGES                                        # the long kernels of the catalogue
    sheet = (ROOT / "styles" / "index.css").read_text()
    assert {int(px) for px in re.findall(r"\.code-page \.slidev-code code \{ font-size: (\d+)px", sheet)} == {11}
    s = slides_of(deck["md"])
    for i, step in enumerate(catalogue.STEPS, 1):
        view = gemm.code_view(step.code, step.focus)
        code = s[f"Kernel {i}: {step.title} — Code"]
        assert re.search(rf"\n---\nclass: code-page\n---\s*\n# Kernel {i}: ", deck["md"]), "the code slide at 11 px"
        if not view["pages"]:
            # the file's region itself, or its text in the code walk (test_each_code_slide_walks_...)
            assert (re.search(rf"<<< \S*{re.escape(step.code)}#kernel", code) or view["text"] in code)
            assert view["lines"] <= gemm.MAX_CODE_LINES
            continue
        shown = view["shown"].splitlines()
        assert len(shown) <= gemm.MAX_CODE_LINES and step.focus[0] in shown[0] and step.focus[1] in shown[-1]
        assert view["shown"] in code and f"lines {view['first']}–{view['last']} of the kernel's {view['lines']}" in code.lower()
        lines = (ROOT / step.code).read_text().splitlines()
        marks = [k for k, line in enumerate(lines) if "#region kernel" in line or "#endregion kernel" in line]
        # (a page that ends on a blank line drops it)
        region = [line.strip() for line in lines[marks[0] + 1:marks[1]] if line.strip()]
        pages = [page["text"] for page in view["pages"]]
        backup = [line.strip() for page in pages for line in page.splitlines() if line.strip()]
        assert backup == region and all(len(page.splitlines()) <= gemm.MAX_CODE_LINES for page in pages)
        # each page's notes give the lines of the region it holds, one after the other
        assert [p["first"] for p in view["pages"]] == [1] + [p["last"] + 1 for p in view["pages"][:-1]]
        for j, page in enumerate(view["pages"], 1):
            slide = s[f"Kernel {i}: {step.title} — Code ({j}/{len(view['pages'])})"]
            assert page["text"] in slide and f"lines {page['first']} to {page['last']} of its {view['lines']}" in slide


def test_a_long_kernel_without_a_focus_is_a_build_error():
    step = next(s for s in catalogue.STEPS if s.focus)
    with pytest.raises(build.BuildError, match="do not fit on a slide"):
        gemm.code_view(step.code, None)
    with pytest.raises(build.BuildError, match="is not a run of at most"):
        gemm.code_view(step.code, (step.focus[0], "no such line"))


def test_the_bf16_track_stands_beside_cublas_bf16_and_the_peer(deck):
    """Each BF16 step against the cuBLAS BF16 it took turns with, its error beside cuBLAS's; fast.cu
    divided by cuBLAS of its own output type, every figure from the fixture."""
    s = slides_of(deck["md"])
    b = deck["doc"]["benchmarks"]
    top = b[catalogue.HEADLINE_BF16]
    pct = 100 * top["tflops"] / top["cublas"]["tflops"]
    assert (f"**{top['tflops']:,.1f} TFLOPS**, {pct:.1f}% of cuBLAS BF16 ({top['cublas']['tflops']:,.1f} TFLOPS, "
            f"in turns, FP32 out)") in s["BF16: Each Step Against cuBLAS BF16"]
    rows = s["BF16: Error Beside cuBLAS's"]
    for step in catalogue.BF16_STEPS:
        if step.best.id not in b:           # a step added since the fixture was measured
            assert f'| {step.title}  | <span class="text-red-600">not measured</span>' in rows
            continue
        r = b[step.best.id]
        assert (f"| {step.title}  | {r['tflops']:,.1f} | {r['cublas']['tflops']:,.1f} | "
                f"{100 * r['tflops'] / r['cublas']['tflops']:.1f}% | {r['check']['rel_error']:.1e} "
                f"({r['cublas']['check']['rel_error']:.1e}) |") in untagged(rows)
    peer, table = s["BF16 Beside fast.cu"], s["BF16 Beside fast.cu — Table"]
    assert "precision_fastcu.svg" in peer and "| fast.cu kernel 12 |" not in peer
    for shape in b["peers.fastcu"]["shapes"]:
        fast, own = shape["fastcu"], shape["cublas_bf16_out"]
        assert (f"| fast.cu kernel 12 | BF16 | {fast['tflops']:,.1f} | {own['tflops']:,.1f} | "
                f"{100 * fast['tflops'] / own['tflops']:.1f}% | {fast['check']['rel_error']:.1e} |") in table
        both = "ours_bf16_out" in shape        # both write C in BF16: the pair's times in the same turns
        ours = shape["ours_bf16_out" if both else "ours"]
        assert (f"this project's {'' if both else 'headline '}at **{100 * fast['time_ms']['median'] / ours['time_ms']['median']:.1f}%** "
                "of fast.cu") in peer


def test_the_peer_slide_names_the_headlines_own_figure_where_its_run_differs(fixture_doc, write_results, tmp_path):
    """The peer slide's rows are a run of their own: where the headline's shape is one of its shapes and
    the headline's figure there differs from its own record's, the method note gives that one too."""
    b = fixture_doc["benchmarks"]
    own = b[catalogue.HEADLINE_BF16]
    shape = next(sh for sh in b["peers.fastcu"]["shapes"] if sh["shape"] == [own["params"][d] for d in "mnk"])
    shape["ours"]["tflops"] = own["tflops"] - 3.0
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())["BF16 Beside fast.cu — Table"]
    assert (f"The headline's own record at {'×'.join(map(str, shape['shape']))}, another run, reads "
            f"{own['tflops']:,.1f} TFLOPS.") in s
    shape["ours"]["tflops"] = own["tflops"]
    build.build(write_results(fixture_doc), tmp_path / "alike")
    assert "another run" not in slides_of((tmp_path / "alike" / "slides.md").read_text())["BF16 Beside fast.cu — Table"]


@pytest.mark.parametrize("apart, called", [(False, "a tie, the intervals overlap"), (True, "faster, the intervals apart")])
def test_the_peer_figure_draws_each_runs_interval_and_the_call_from_them(fixture_doc, apart, called):
    """fast.cu and this project's BF16-C kernel at each shape, each run's median time's interval drawn
    as TFLOPS; the call beside the shape is the intervals': a tie where they overlap."""
    from slides.deck import Deck
    from slides.precision import peer_figure
    shape = fixture_doc["benchmarks"]["peers.fastcu"]["shapes"][0]
    if apart:          # this project's run's interval wholly below (faster than) fast.cu's
        t = shape["fastcu"]["time_ms"]
        shape["ours_bf16_out"]["time_ms"] = {**t, "median": 0.9 * t["ci"][0], "ci": [0.85 * t["ci"][0], 0.95 * t["ci"][0]]}
    svg = peer_figure(Deck(fixture_doc).of(slides.precision).peer)
    t, tflops = shape["fastcu"]["time_ms"], shape["fastcu"]["tflops"]
    assert "fast.cu kernel 12, C in BF16" in svg and "this project's, C in BF16" in svg
    assert f"{tflops:,.1f}<" in svg
    ratio = t["median"] / shape["ours_bf16_out"]["time_ms"]["median"]
    assert f"this project's at {100 * ratio:.1f}% of fast.cu: {called}" in svg


def test_without_a_checkout_the_peer_slide_says_why(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["peers.fastcu"] = {**fixture_doc["benchmarks"]["peers.fastcu"], "status": "skipped",
                                                  "reason": "no checkout of the peer: set FASTCU_DIR to one"}
    for key in ("shapes", "params", "check", "telemetry"):
        fixture_doc["benchmarks"]["peers.fastcu"].pop(key, None)
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path)])
    s = slides_of((tmp_path / "slides.md").read_text())["BF16 Beside fast.cu"]
    assert "Not measured on this GPU: peers.fastcu (no checkout of the peer: set FASTCU_DIR to one)" in s


# A comparison inside a template's tag or expression against a number other than 0 or 1: a judgment (faster, held,
# a tie, needs every SM) made in the template instead of the section's module.
JUDGED_IN_TEMPLATE = re.compile(r"(?:<|>|<=|>=|==|!=)\s*-?(?![01](?![\d.]))\d[\d.]*|-?(?![01](?![\d.]))\d[\d.]*\s*(?:<|>|<=|>=)(?!-)")


def test_templates_hold_no_judgment_against_a_literal():
    """Every threshold a slide's wording turns on lives in the section's module, named, beside the
    wording for the other outcome (templates may still ask "more than one?")."""
    found = []
    for template in sorted(SLIDES_DIR.glob("*.md.j2")):
        for number, line in enumerate(template.read_text().splitlines(), 1):
            for tag in re.findall(r"\[%.*?%\]|\[\[.*?\]\]", line):
                if JUDGED_IN_TEMPLATE.search(tag):
                    found.append(f"{template.name}:{number}: {tag}")
    assert not found, "\n".join(found)


def test_judgments_take_the_other_wording_when_the_data_turn(fixture_doc, write_results, tmp_path):
    """The sentences that judge (padding helps, L2 needs every SM) follow the records either way."""
    rows = {r["key"]: r for r in fixture_doc["benchmarks"]["transpose.all"]["rows"]}
    rows["smem_padded"]["gbps"] = rows["smem"]["gbps"] / 2            # padding made it slower
    l2 = fixture_doc["benchmarks"]["l2.bandwidth_scaling"]["rows"]
    half = next(r for r in l2 if r["sms"] == 64)
    half["read"]["gbps"] = 2 * max(r["read"]["gbps"] for r in l2)    # 64 SMs, one block each, beat all
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())
    assert "2.00× slower, which the conflicts alone do not explain" in s["Matrix Transpose"]
    sms = fixture_doc["device"]["sm_count"]
    assert f"it peaks on 64 of the {sms} SMs, one block each." in s["L2 Bandwidth Scaling"]


def test_a_configuration_of_more_blocks_than_an_sm_holds_says_how_many_run_at_once(deck):
    """L2's oversubscribed rows launch more blocks on an SM than its threads hold: the table says how
    many run at a time; a row whose blocks all fit says nothing more."""
    device, rows = deck["doc"]["device"], deck["doc"]["benchmarks"]["l2.bandwidth_scaling"]["rows"]
    table = slides_of(deck["md"])["L2 Bandwidth Scaling"]
    for r in rows:
        fit = device["max_threads_per_sm"] // r["threads"]
        said = f"| {r['label']} (at most {fit} at a time) |"
        assert (said in table) == (r["blocks"] // r["sms"] > fit), r["label"]
    assert any(r["blocks"] // r["sms"] > device["max_threads_per_sm"] // r["threads"] for r in rows)


def test_a_skipped_record_is_never_stale(fixture_doc, write_results, tmp_path, capsys):
    """A record the runner skipped (too few GPUs, a GPU too old) measured nothing: the code it names
    changing since makes no result out of date."""
    rec = fixture_doc["benchmarks"]["multigpu.nccl"]
    assert rec["status"] == "skipped"
    rec["source_hash"] = "0" * 16
    build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare"])
    assert "STALE" not in capsys.readouterr().out and "Measured with older code" not in (tmp_path / "slides.md").read_text()


def test_the_backup_divider_says_whether_the_gpu_tests_passed_on_the_machine_that_measured(fixture_doc, write_results, tmp_path):
    rec = fixture_doc["benchmarks"]["checks.gpu_tests"]
    title = lambda: slides_of((tmp_path / "slides.md").read_text())["Backup Slides"]
    build.build(write_results(fixture_doc), tmp_path)
    assert f"GPU tests here: {rec['tests']['passed']} of {rec['tests']['passed']} passed." in title()
    rec["tests"].update(passed=19, failed=3, failures=["test_x"])
    rec.update(status="failed", reason="check failed: 3 of 22 GPU tests failed: test_x")
    build.build(write_results(fixture_doc), tmp_path)
    assert "GPU tests on this machine: 3 of 22 failed." in title()
    del fixture_doc["benchmarks"]["checks.gpu_tests"]
    build.build(write_results(fixture_doc), tmp_path)
    assert "GPU tests: not recorded here." in title()


def test_one_slide_puts_every_cublas_figure_of_the_reference_shape_side_by_side(fixture_doc, write_results, tmp_path):
    """cuBLAS TF32 (K-major) as each part of the run timed it, from the records: alone, in turns with
    the kernels (their range), the tuner's, drawn as bars (a range's two ends, each at its clock) with
    the table behind them; and whether the SMs' clock accounts for the spread."""
    b = fixture_doc["benchmarks"]
    build.build(write_results(fixture_doc), tmp_path)
    slides = slides_of((tmp_path / "slides.md").read_text())
    s, table = slides["One cuBLAS, Several Figures"], slides["One cuBLAS, Several Figures — Table"]
    alone = b["gemm.cublas_tf32_b_kmajor"]
    assert f"| **alone** | nothing: its own record | {alone['tflops']:,.1f} | {alone['telemetry']['sm_clock']['mean']:,.0f} |" in table
    paired = [r for bid, r in b.items() if r.get("cublas", {}).get("id") == "gemm.cublas_tf32_b_kmajor"]
    lo, hi = (f(paired, key=lambda r: r["cublas"]["tflops"]) for f in (min, max))
    assert f"| {lo['cublas']['tflops']:,.1f}–{hi['cublas']['tflops']:,.1f} |" in table
    assert 'regimes.svg"' in s and "| **alone** |" not in s
    bars = (figures_dir(tmp_path) / "regimes.svg").read_text()
    assert f"{alone['tflops']:,.1f}  at {alone['telemetry']['sm_clock']['mean']:,.0f} MHz" in bars
    for end, r in (("slowest of", lo), ("fastest", hi)):
        assert f"in turns: {end}" in bars and f"{r['cublas']['tflops']:,.1f}  at {r['telemetry']['sm_clock']['mean']:,.0f} MHz" in bars
    # every figure at the same work per MHz: the clock accounts for the spread
    for bid, r in b.items():
        if r.get("cublas", {}).get("id") == "gemm.cublas_tf32_b_kmajor":
            r["telemetry"]["sm_clock"]["mean"] = r["cublas"]["tflops"] * 4
    alone["telemetry"]["sm_clock"]["mean"] = alone["tflops"] * 4
    for bid in [bid for bid in b if bid.startswith("sweep.")] + ["tune.persistent", "settle.headline"]:
        del b[bid]
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())["One cuBLAS, Several Figures"]
    assert "per MHz of the SMs' clock 0.0% apart: the clock the power cap left accounts for most of it" in s


def test_the_clock_is_said_to_set_the_figures_order_only_where_their_ranks_agree():
    """The figures drawn, (TFLOPS, MHz): level per MHz, the clock accounts for most of the spread;
    the faster at the higher clocks, it sets their order though not in proportion; else it does not
    explain them."""
    level = [(300.0, 1200.0), (330.0, 1320.0)]
    assert regimes.clock_said(level) == "per MHz of the SMs' clock 0.0% apart: the clock the power cap left accounts for most of it"
    ordered = [(342.4, 1332.0), (346.1, 1333.0), (418.1, 1963.0)]
    assert regimes.clock_said(ordered).startswith("the faster ran at the higher clocks (1,332 to 1,963 MHz, 47% apart), "
                                                 "though not in proportion: per MHz 2")
    crossed = [(342.4, 1900.0), (418.1, 1332.0), (380.0, 1600.0)]
    assert regimes.clock_said(crossed).endswith(": the clock does not explain it")


def test_a_tight_interval_of_a_multiple_keeps_its_bounds_apart():
    assert gemm.interval_said([1.95, 2.03], False) == "1.95× to 2.03×"
    assert gemm.interval_said([2.9171, 2.9234], False) == "2.917× to 2.923×"     # not "2.92× to 2.92×"


def test_each_code_slide_walks_from_the_step_befores_code(deck):
    """The code walk: a step's code slide opens on the step before's lines and morphs (a click, Slidev's
    magic-move) into its own, where both are of one language; the first step and a change of
    language show their code as it is."""
    s = slides_of(deck["md"])
    views = [gemm.code_view(step.code, step.focus) for step in catalogue.STEPS]
    for i, (step, view) in enumerate(zip(catalogue.STEPS, views), 1):
        slide = s[f"Kernel {i}: {step.title} — Code"]
        before = views[i - 2] if i > 1 else None
        if before and before["language"] == view["language"] and before["text"] != view["text"]:
            # then clicks light the lines the step before did not have, a note for each
            clicks = gemm.lit_clicks(before["text"], view["text"])
            lit = gemm.highlight_of(clicks)
            fence = lambda code, lit="": f"```{view['language']}{' {' + lit + '}' if lit else ''}\n{code}\n```"
            assert f"````md magic-move\n{fence(before['text'])}\n{fence(view['text'], lit)}\n````" in slide
            assert f"Opens on kernel {i - 1}'s code ({catalogue.STEPS[i - 2].title})" in slide
            notes = presenter_notes(slide)
            assert "[click] This step's code." in notes
            assert re.findall(r"\[click\] (Lines? [\d–]+):", notes) == [c["words"] for c in clicks]
            # the morph, then each run; the last click (all lines again) keeps the last run's note lit
            assert notes.count("[click]") == 1 + len(clicks)
        else:
            assert "magic-move" not in slide


def test_the_lines_a_step_adds_are_the_ones_its_clicks_light():
    before = "a = 1;\nb = 2;\n\nc = 3;"
    assert gemm.added_runs(before, "a = 1;\nx = 9;\nb = 2;\n\nc = 3;\ny = 8;\nz = 7;") == [[2, 2], [6, 7]]
    assert gemm.added_runs(before, "  a = 1;\nb = 2;") == []            # indentation and removals add nothing
    assert gemm.added_runs(before, "a = 1;\nb = 5;\n\nc = 3;") == [[2, 2]]  # a changed line is new
    # a click a commented run, saying its comment; a run without one is lit with the run before it
    after = "a = 1;\nx = 9;  // the first idea\nb = 2;\ny = 8;\n\nc = 3;\nz = 7;  // cp.async waits here"
    clicks = gemm.lit_clicks(before, after)
    assert [(c["lines"], c["words"], c["says"]) for c in clicks] == [
        ("2,4", "Lines 2–4", "The first idea."), ("7", "Line 7", "cp.async waits here.")]
    assert gemm.highlight_of(clicks) == "*|2,4|7|*"          # ends on every line: a PDF shows that
    # shape comments say nothing; with no comment at all, one click lights every added line
    bare = gemm.lit_clicks(before, "a = 1;\nx = 9;  // (BM,BK)\nb = 2;\n\nc = 3;\nz = 7;")
    assert [(c["lines"], c["says"]) for c in bare] == [("2,6", "The lines this step adds.")]
    # at most MAX_LIT_CLICKS, the closest runs together
    many = "\n".join(f"v{i} = {i};  // idea {i}" if i % 2 else "" for i in range(12))
    assert len(gemm.lit_clicks("", many)) == gemm.MAX_LIT_CLICKS
    assert gemm.lit_clicks("x", "x") == [] and gemm.highlight_of([]) == ""
    with pytest.raises(BuildError, match="not a line highlight"):
        code_block("x", "cpp", "1}{onclick")


def test_each_performance_slide_shows_where_its_step_stands_on_the_climb(deck):
    """A column per step, this one's best in the accent with its value, its cuBLAS in turns across
    with the clock the SMs ran at in those turns."""
    from slides.records import clock_during
    b = deck["doc"]["benchmarks"]
    s = slides_of(deck["md"])
    for i, step in enumerate(catalogue.STEPS, 1):
        rec = b.get(step.best.id)
        if rec is None or rec["status"] != "ok":
            assert f"climb_{step.key}.svg" not in s[f"Kernel {i}: {step.title} — Performance"]
            continue
        assert f"climb_{step.key}.svg" in s[f"Kernel {i}: {step.title} — Performance"]
        svg = (figures_dir(deck["dir"]) / f"climb_{step.key}.svg").read_text()
        clock = clock_during(rec)
        assert f">{rec['tflops']:,.1f}<" in svg and f"in turns: {rec['cublas']['tflops']:,.1f}<" in svg
        assert f"gains: pairs in turns; this step with cuBLAS at {clock:,.0f} MHz<" in svg


def svg_text_boxes(svg: str) -> list[tuple]:
    """Each unrotated <text> of an SVG as (x0, y0, x1, y1, text), its width as the chart kit
    measures text, its height the font's from a little above the cap height to the descender."""
    import xml.etree.ElementTree as ET
    boxes = []
    for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        words = "".join(t.itertext())
        if t.get("transform") or not words.strip():
            continue
        size = float(re.search(r"font-size:([\d.]+)px", t.get("style", "font-size:13px")).group(1))
        x, y, w = float(t.get("x", 0)), float(t.get("y", 0)), kit.text_width(words, size)
        x0 = {"end": x - w, "middle": x - w / 2}.get(t.get("text-anchor"), x)
        boxes.append((x0, y - 0.75 * size, x0 + w, y + 0.2 * size, words))
    return boxes


OVERPRINT_PX = 3        # text boxes may touch by this much (the width is the kit's estimate)


@pytest.fixture(scope="module", params=[None, "nvidia-h100-80gb-hbm3.yaml", "nvidia-h200.yaml"])
def built_deck(request, deck, tmp_path_factory):
    """The folder of a deck the figure tests read, each built once: the fixture's, and the committed
    ones, each with the node's section beside it."""
    if request.param is None:
        return deck["dir"]
    out = tmp_path_factory.mktemp("built")
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(ROOT / "results" / request.param), "--out-dir", str(out)]) == 0
    return out


def test_no_figure_prints_text_over_text(built_deck):
    """In every figure of a deck, no two labels overlap by more than OVERPRINT_PX both ways."""
    import itertools
    out = built_deck
    overprinted = []
    for path in sorted(figures_dir(out).glob("*.svg")):
        for a, b in itertools.combinations(svg_text_boxes(path.read_text()), 2):
            if min(a[2], b[2]) - max(a[0], b[0]) > OVERPRINT_PX and min(a[3], b[3]) - max(a[1], b[1]) > OVERPRINT_PX:
                overprinted.append((path.name, a[4], b[4]))
    assert not overprinted, overprinted
    assert_spoken_first((out / "slides.md").read_text())      # and the notes, read aloud first


def svg_dashed_lines(svg: str) -> list[tuple]:
    """Each dashed <line> of an SVG (the charts' reference lines) as (x1, y1, x2, y2)."""
    import xml.etree.ElementTree as ET
    return [tuple(float(line.get(k)) for k in ("x1", "y1", "x2", "y2"))
            for line in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}line") if line.get("stroke-dasharray")]


def test_no_reference_line_runs_through_a_label(built_deck):
    """In every figure of a deck, no dashed reference line, across or down, crosses a label by more
    than OVERPRINT_PX (the tuner's and the transpose chart's values sat under theirs)."""
    crossed = []
    for path in sorted(figures_dir(built_deck).glob("*.svg")):
        svg = path.read_text()
        for x0, y0, x1, y1, words in svg_text_boxes(svg):
            for lx1, ly1, lx2, ly2 in svg_dashed_lines(svg):
                down = abs(lx1 - lx2) < 0.5 and x0 + OVERPRINT_PX < lx1 < x1 - OVERPRINT_PX and min(ly1, ly2) < y1 and max(ly1, ly2) > y0
                across = abs(ly1 - ly2) < 0.5 and y0 + OVERPRINT_PX < ly1 < y1 - OVERPRINT_PX and min(lx1, lx2) < x1 and max(lx1, lx2) > x0
                if down or across:
                    crossed.append((path.name, words))
    assert not crossed, crossed


def test_a_vertical_reference_lines_label_keeps_off_the_data():
    """The label of a line down the chart goes beside it at the first height no plotted line comes
    near: the L2 working-set chart's 'L2 50 MiB' had ended on the 32 MiB point."""
    import xml.etree.ElementTree as ET
    # data high across the top of the chart, up to just before the reference line at x = 50
    series = [kit.Series("read", [(1, 100), (8, 98), (32, 99), (48, 97), (64, 40), (256, 38)])]
    svg = kit.line_chart(kit.Chart("working set", "GB/s", series, [kit.Line("x", 50, "L2 50 MiB", kit.REF)], x_log=True))
    [(x0, y0, x1, y1, _)] = [b for b in svg_text_boxes(svg) if b[4] == "L2 50 MiB"]
    root = ET.fromstring(svg)
    [line] = root.iter("{http://www.w3.org/2000/svg}polyline")
    pts = [tuple(map(float, p.split(","))) for p in line.get("points").split()]
    assert not any(x0 - 2 <= x <= x1 + 2 and y0 - 2 <= y <= y1 + 2 for x, y in kit._traced(pts)), (x0, y0, x1, y1)


def test_every_title_a_section_asks_for_is_a_slide_heading(fixture_doc, node_doc, write_results, monkeypatch, tmp_path):
    """A module names the slide its results go to (Deck.need); a template writes the heading: the two agree."""
    from slides import deck as deck_module
    asked, need = [], deck_module.Deck.need
    def spy(self, slide, *bids):                      # a slide whose results were all measured is shown
        recs = need(self, slide, *bids)
        if all(r["measured"] for r in recs):
            asked.append(slide)
        return recs
    monkeypatch.setattr(deck_module.Deck, "need", spy)
    fixture_doc["device"].update(name=node_doc["device"]["name"], slug=node_doc["device"]["slug"])
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(write_results(fixture_doc)), "--node", str(write_results(node_doc, "node.yaml")),
                           "--no-compare", "--out-dir", str(tmp_path)]) == 0
    assert len(set(asked)) > 20
    assert set(asked) <= set(headings((tmp_path / "slides.md").read_text()))


def test_slides_take_their_styles_from_the_shared_sheet_by_class():
    """No template styles a slide of its own: each names classes in its frontmatter, and every class
    it names is a rule of styles/index.css (a typo would leave a slide unstyled, overflowing)."""
    sheet = (ROOT / "styles" / "index.css").read_text()
    defined = set(re.findall(r"\.slidev-layout\.([\w-]+)", sheet))
    used = set()
    for path in SLIDES_DIR.glob("*.md.j2"):
        text = path.read_text()
        assert "<style" not in text, f"{path.name}: a <style> block; give the slide a class of styles/index.css"
        used |= {c for line in re.findall(r"(?m)^class: (.+)$", text) for c in line.split()}
        # a layout of the project's layouts/ is its own class (<div class="slidev-layout figure">);
        # the others are Slidev's (section), which ships them in its client
        used |= {layout for layout in re.findall(r"(?m)^layout: ([\w-]+)$", text)
                 if (ROOT / "layouts" / f"{layout}.vue").exists()}
    assert {p.stem for p in (ROOT / "layouts").glob("*.vue")} <= used, "a layout no slide uses"
    assert used - {"text-center"} <= defined, sorted(used - defined)
    assert defined <= used, f"rules no slide uses: {sorted(defined - used)}"


def test_the_backup_divider_promises_what_follows_it(deck):
    """Its one line names the parts after it, each only where their slides are in the deck."""
    s = slides_of(deck["md"])
    promise = s["Backup Slides"].split("\n\n")[1]
    titles = list(s)
    after = titles[titles.index("Backup Slides") + 1:]
    assert promise.startswith("Micro-benchmarks: instruction latency")
    assert ("counters" in promise) == ("GEMM Kernels — Counters" in after)
    assert ("side by side" in promise) == ("The GPUs Side by Side" in after)
    assert ("code in full" in promise) == ("Full Kernel Code" in after)
    assert ("TMA alone" in promise) == ("TMA Alone — Every Figure" in after)



def test_a_range_prints_one_number_where_its_ends_print_alike():
    assert fmt_range({"low": 396.2, "high": 396.4}, 0) == "396"
    assert fmt_range({"low": 1285.0, "high": 1347.4}, 0) == "1,285–1,347"


# The longest line a template may hold: a clause or two of a sentence, or one row of a table. A
# sentence wraps with a backslash at the line's end (slides/deck.py, LineContinuation), a branch
# after its tag (trim_blocks drops the newline that follows a block tag): either renders as one line.
TEMPLATE_LINE_CHARS = 300


def test_a_line_ending_in_a_backslash_renders_joined_to_the_next():
    from slides.deck import environment
    template = environment().from_string("one sentence, \\\nwrapped[% if x %] \\\nand more[% endif %].\n| a | b |\n")
    assert template.render(x=True) == "one sentence, wrapped and more.\n| a | b |\n"


def test_template_lines_stay_readable():
    long = [(path.name, n, len(line)) for path in SLIDES_DIR.glob("*.md.j2")
            for n, line in enumerate(path.read_text().splitlines(), 1) if len(line) > TEMPLATE_LINE_CHARS]
    assert not long, long


def test_littles_law_names_the_read_rate_it_uses_and_where_the_curve_flattens(fixture_doc, write_results, tmp_path):
    """The loads' rate is half the best copy's (its bytes read); the curve flattens at the fewest SMs that
    copy at 90% of cudaMemcpy, computed in the module, and without such a row nothing is said of it."""
    rec = fixture_doc["benchmarks"]["hbm.copy_scaling"]
    best = max(rec["rows"], key=lambda r: r["gbps"])
    flat = min(r["sms_used"] for r in rec["rows"] if r["gbps"] >= 0.9 * rec["memcpy"]["gbps"])
    build.build(write_results(fixture_doc), tmp_path)
    s = slides_of((tmp_path / "slides.md").read_text())["HBM Bandwidth Scaling — Little's Law"]
    assert f"Reading at {best['gbps'] / 2:,.0f} GB/s (the best copy's loads, half its bytes)" in s
    assert f"; the curve reaches 90% of cudaMemcpy only at {flat} SMs." in s
    rec["memcpy"]["gbps"] = 2 * best["gbps"]             # no row reaches 90% of it
    build.build(write_results(fixture_doc), tmp_path / "never")
    assert "the curve reaches" not in slides_of((tmp_path / "never" / "slides.md").read_text())["HBM Bandwidth Scaling — Little's Law"]


def test_the_bf16_error_table_says_which_rows_write_bf16(deck):
    """A row that writes C in BF16 divides by cuBLAS writing BF16: the slide says which rows those are."""
    table = slides_of(deck["md"])["BF16: Error Beside cuBLAS's"]
    name = catalogue.step_of(catalogue.BF16_C).title
    assert f"{name}: C written in BF16, against cuBLAS writing BF16." in table


def test_the_results_table_notes_say_each_reference_steps_error(deck):
    """The notes say the errors as a speaker would, steps that erred alike together, each figure
    beside its cuBLAS's: every reference step that took turns with cuBLAS, with its error."""
    said = slides_of(deck["md"])["GEMM — Results Table"].split("Against a double-precision product")[1].split("\n")[0]
    records = deck["doc"]["benchmarks"]
    for step in (s for s in catalogue.STEPS if not s.beyond):
        for v in step.variants:
            rec = records.get(v.id) or {}
            if rec.get("status") == "ok" and rec.get("cublas") and "rel_error" in rec.get("check", {}):
                assert step.title in said and f"erred by {rec['check']['rel_error']:.1e}" in said, (v.id, said)


def test_a_step_quotes_its_new_lines_from_code_to_the_end_of_a_statement():
    """The main slide's quote of a step starts at a line of code, not at a closing brace the diff
    counts as added, and ends where a statement does, not inside a signature."""
    from slides.gemm import changed_lines
    before = "void f() {\n    a();\n}\n"
    closer = changed_lines(before, "void f() {\n    a();\n}\n}\nsync();   // why\n")
    assert closer["text"] == "sync();   // why" and closer["said"] == "1 of 2 lines new since"
    signature = changed_lines(before, before + "struct Ring {\n    int stage = 0;\n    template <class T>\n"
                                                "    void piece(T& a,\n               T& b) {\n")
    assert signature["text"] == "struct Ring {\n    int stage = 0;" and signature["said"] == "2 of 5 lines new since"


def test_a_code_line_past_the_columns_has_its_comment_set_above_it():
    """A backup page's line still past CODE_COLUMNS once the page moves left: its trailing comment on a
    line of its own above it, at its indentation, so that the page does not scroll; shorter lines as
    they are."""
    code = "    Tensor t = f(" + "a, " * 34 + "b);"
    lines = gemm._within_columns(["{", f"{code}   // (MMA,MMA_M,MMA_N)", "    short();   // kept", "}"]).split("\n")
    assert len(code) <= gemm.CODE_COLUMNS < len(code) + 24
    assert lines == ["{", "    // (MMA,MMA_M,MMA_N)", code, "    short();   // kept", "}"]
