"""The shape atlas's slides (slides/atlas.py) on records made from the fixture's own sweep rows, in the
shape bench/gemm/atlas.py writes them: the heatmap's cells, stream-K's outline, each judgment with its
other outcome, and stream-K's code and diagram slides."""
import contextlib
import copy
from dataclasses import replace
import io
import re

import pytest

import build
from bench.gemm import atlas, catalogue, plan
from bench.core import registry
from slides import atlas as slides_atlas, gemm, kit
from slides.atlas import SLIDES
from slides.sweep import tile_label
from tests.test_build import (assert_spoken_first, deck, fixture_outline, headings, prose_words,  # noqa: F401 (deck: the fixture deck)
                              slides_of)

STREAMED = {s.precision: s.best.id for s in catalogue.SHAPE_STEPS}
KERNEL = {name: catalogue.resolve(role) for name, (role, _) in catalogue.ATLASES.items()}    # each atlas's own kernel
# the atlases stream-K stands in for at small M (their kernel is a headline), and the others (FP8's)
WITH_STREAM_K = [name for name, kernel in KERNEL.items() if catalogue.streamed_for(kernel)]
VERSUS = {name: "cuBLASLt" if catalogue.step_of(kernel).precision == "fp8" else "cuBLAS" for name, kernel in KERNEL.items()}
OUTLINED = f'stroke="{kit.INK}"'          # a cell the heatmap outlines, and the legend's swatch


def faster(m, n, k):
    """Stream-K's speed over the headline's in their turns, (ratio, interval): faster in every cell."""
    return 1.2, [1.1, 1.3]


def planned(kernel: str, m: int, n: int, k: int, sm_count: int) -> tuple[dict, dict]:
    """The tile the catalogue picks for a kernel at an M x N x K cell, as a row records it, and the plan
    the launcher gives it there (bench/gemm/launch.py): stream-K's runs over its persistent clusters,
    or the headline's split last wave, whose plan says how many of the resident clusters launch."""
    tile = catalogue.tile_for(catalogue.step_of(kernel), m, n, k, sm_count)
    cluster = tile["CLUSTER_M"]
    units, k_tiles = plan.ctas(tile, m, n) // cluster, -(-k // tile["BK"])
    at_once = catalogue.clusters_at_once(tile, sm_count)
    if tile.get("STREAM_K"):
        kind, made = "stream_k", plan.stream_k(units, at_once, k_tiles)
    else:
        kind, made = "split_wave", plan.split_wave(units, at_once, k_tiles)
    return ({key: tile[key] for key in ("BM", "BN", "CLUSTER_M")},
            {"kind": kind, **{key: made[key] for key in ("units", "clusters", "k_tiles")}})


def atlas_record(doc: dict, name: str, ratio, versus=faster, rule=catalogue.kernel_for) -> dict:
    """The atlas ``name``'s record in the shape bench/gemm/atlas.py writes: each cell run by the
    kernel ``rule`` picks (the catalogue's), with its tile and plan, at ``ratio(m, n, k)`` of cuBLAS;
    where that was stream-K, the atlas's own kernel beside it in the same turns, stream-K's speed over
    it ``versus(m, n, k)``. The rest of each row is the fixture's sweep row of the kernel (else of
    another kernel of its precision) at its first correct size."""
    sms = doc["device"]["sm_count"]
    headline = KERNEL[name]
    step = catalogue.step_of(headline)
    precision = step.precision
    sweep = doc["benchmarks"][next(sid for sid in (step.sweep_id, *(s.sweep_id for s in catalogue.SWEPT if s.precision == precision))
                                   if sid in doc["benchmarks"])]
    template = next(r for r in sweep["rows"] if r["outcome"] == "correct")
    error = {"passed": True, "rel_error": template["check"]["rel_error"]}
    rows = []
    for model, projection, n, k in atlas.PROJECTIONS:
        for m in atlas.MS:
            kernel = rule(headline, m, n, k, sms)
            tile, launched = planned(kernel, m, n, k, sms)
            row = {**copy.deepcopy(template), "model": model, "projection": projection, "shape": [m, n, k],
                   "kernel": kernel, "tile": tile, "plan": launched, "cublas_check": dict(error),
                   "ratio_same_layout": ratio(m, n, k)}
            if kernel != headline:
                speed, ci = versus(m, n, k)
                row["headline"] = {"kernel": headline, "tile": planned(headline, m, n, k, sms)[0],
                                   "check": dict(error), "ratio": speed, "ci": ci}
                row["tflops"]["headline"] = row["tflops"]["kernel"] / speed
            rows.append(row)
    bid = catalogue.atlas_id(name)
    bench = registry.discover()[bid]
    turns = catalogue.turns_for(headline)
    kernels = (headline, *([STREAMED[precision]] if name in WITH_STREAM_K else []), *([turns.best.id] if turns else []))
    return {**copy.deepcopy(sweep), "family": "atlas", "title": bench.title, **bench.provenance(),
            "params": {"kernels": list(kernels), "rule": "catalogue.kernel_for", "layout": "b_kmajor",
                       "precision": precision, "ms": list(atlas.MS),
                       **({"scaling": step.scaling, "output": catalogue.output_of(step.best.tile)} if precision == "fp8" else {}),
                       "projections": [{"model": m, "projection": p, "n": n, "k": k} for m, p, n, k in atlas.PROJECTIONS],
                       "tiles": {kid: list(catalogue.step_of(kid).tiles) for kid in kernels},
                       "small_tile_below_sms": catalogue.SMALL_TILE_BELOW, "cublas": sweep["params"]["cublas"],
                       **({"sharers": catalogue.STREAM_K_SHARERS} if name in WITH_STREAM_K else
                          {"sharers": step.sharers} if step.sharers else {}),
                       **({"one_wave": catalogue.rule_params(step)["one_wave"]} if step.one_wave_width else {}),
                       **({"pingpong": {"max_k": catalogue.PINGPONG_MAX_K, "min_waves": catalogue.PINGPONG_MIN_WAVES}}
                          if turns else {}),
                       "warm_s": sweep["params"]["warm_s"], "timed_s": sweep["params"]["timed_s"]},
            "rows": rows}


def with_atlases(doc: dict, ratio, **kw) -> dict:
    for name in catalogue.ATLASES:
        doc["benchmarks"][catalogue.atlas_id(name)] = atlas_record(doc, name, ratio, **kw)
    return doc


def built(doc, write_results, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(write_results(doc)), "--out-dir", str(tmp_path), "--no-compare",
                           "--talk", build.FULL]) == 0
    md = (tmp_path / "slides.md").read_text()
    return slides_of(md), tmp_path


def svg_of(slide: str, out) -> str:
    src = re.search(r'<img src="\./(svgs/[^"]+)"', slide).group(1)
    return (out / src).read_text()


def bullet(slide: str, start: str) -> str:
    return next(line for line in slide.splitlines() if line.startswith(start))


def test_each_cell_is_its_ratio_and_stream_k_is_outlined(fixture_doc, write_results, tmp_path):
    ratio = lambda m, n, k: 0.5 + m / 16384          # 0.5 at the smallest M, 1.5 at the largest
    s, out = built(with_atlases(fixture_doc, ratio), write_results, tmp_path)
    sms = fixture_doc["device"]["sm_count"]
    for name, title in SLIDES.items():
        svg = svg_of(s[title], out)
        for m in atlas.MS:
            assert f">{100 * ratio(m, 1, 1):.0f}<" in svg
        large = min(m for m in atlas.MS if m >= 512)
        assert f"down to {100 * ratio(large, 1, 1):.1f}% of {VERSUS[name]}" in s[title]
        if name not in WITH_STREAM_K:      # FP8's: its own kernel in every cell, nothing outlined
            assert svg.count(OUTLINED) == 0 and "outlined" not in svg
            continue
        precision = catalogue.step_of(KERNEL[name]).precision
        # stream-K's cells, as far as its tiles by M go: every projection up to the most rows they take
        streamed = [(n, m) for _, _, n, k in atlas.PROJECTIONS for m in atlas.MS
                    if catalogue.kernel_for(KERNEL[name], m, n, k, sms) == STREAMED[precision]]
        step = catalogue.step_of(STREAMED[precision])
        assert {m for _, m in streamed} == {m for m in atlas.MS if m <= catalogue.streamed_rows(step)}
        headline = catalogue.step_of(KERNEL[name])
        assert len(streamed) == sum(m <= catalogue.streamed_rows(step, k) and not catalogue.one_row_fills(headline, m, n, k, sms)
                                    for _, _, n, k in atlas.PROJECTIONS for m in atlas.MS)
        assert svg.count(OUTLINED) == len(streamed) + 1 and "outlined: stream-K ran" in svg
        # the worst of the small shapes ran stream-K: its few tiles left no SM idle
        m, (model, projection, n, k) = min(atlas.MS), atlas.PROJECTIONS[0]
        tile, launched = planned(STREAMED[precision], m, n, k, sms)
        tiles = plan.ctas({**tile, "CLUSTER_M": 1}, m, n)
        assert tiles < sms
        assert (f"- Up to M = 256: down to {100 * ratio(m, 1, 1):.1f}% at {model} {projection}, M = {m}: {tiles} "
                f"tiles for {sms} SMs, their K-tiles shared by {launched['clusters']} clusters.") in s[title]
        assert f"where stream-K dealt its {tiles} tiles' K-tiles evenly to {launched['clusters']} clusters" in s[title]


CIS = {"faster everywhere": lambda m, n, k: (1.2, [1.1, 1.3]),
       # faster at the fewest rows, a tie at 128, slower from 256 on (and the range's ends in other projections)
       "each outcome": lambda m, n, k: ((1.15, [1.05, 1.25]) if m <= 64 else (1.0, [0.97, 1.03]) if m <= 128
                                        else (0.9 - n / 1e6, [0.85 - n / 1e6, 0.95 - n / 1e6]))}


@pytest.mark.parametrize("case", CIS)
def test_stream_k_is_weighed_against_the_headline_in_the_same_turns(fixture_doc, write_results, tmp_path, case):
    """The outlined cells' bullet: stream-K's speed over the headline's, and how many cells its
    interval calls faster, slower or a tie, each clause only where it counts some."""
    ratio = lambda m, n, k: 0.8 if m <= 256 else 0.9        # neither held: every bullet at its longest
    doc = with_atlases(fixture_doc, ratio, versus=CIS[case])
    s, _ = built(doc, write_results, tmp_path)
    for name in WITH_STREAM_K:
        title = SLIDES[name]
        pairs = [r["headline"] for r in doc["benchmarks"][catalogue.atlas_id(name)]["rows"]
                 if "headline" in r and r["kernel"] in STREAMED.values()]
        ratios = sorted(p["ratio"] for p in pairs)
        median = (ratios[(len(ratios) - 1) // 2] + ratios[len(ratios) // 2]) / 2
        up, down = sum(p["ci"][0] > 1 for p in pairs), sum(p["ci"][1] < 1 for p in pairs)
        tie = len(pairs) - up - down
        # for questions: the notes hold the pairs of the outlined cells
        assert (f"beside the headline in the same turns: stream-K at "
                f"{100 * median:.0f}% of its speed (median; {100 * ratios[0]:.0f}–"
                f"{100 * ratios[-1]:.0f}%), faster in {up} of {len(pairs)} cells"
                f"{f', slower in {down}' if down else ''}{f', a tie in {tie}' if tie else ''}.") in s[title].split("<!--")[1]
        assert (down, tie) != (0, 0) or case == "faster everywhere"
        assert prose_words(s[title]) <= 80, prose_words(s[title])


@pytest.mark.parametrize("worse", [1.0, 2.0])
def test_each_cells_error_is_held_against_cublas_on_its_operands(fixture_doc, write_results, tmp_path, worse):
    """The error bullet: every cell within ERROR_HELD of cuBLAS's error, or how many are, the worst
    and where; a cell whose error is ``worse`` times cuBLAS's at M = 64 of the first projection."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    for name in catalogue.ATLASES:
        row = doc["benchmarks"][catalogue.atlas_id(name)]["rows"][0]
        row["check"] = {**row["check"], "rel_error": worse * row["cublas_check"]["rel_error"]}
    s, _ = built(doc, write_results, tmp_path)
    model, projection, _, _ = atlas.PROJECTIONS[0]
    cells = len(atlas.PROJECTIONS) * len(atlas.MS)
    for name, title in SLIDES.items():
        assert bullet(s[title], "- Error") == (
            f"- Error within 1.25× {VERSUS[name]}'s in every cell." if worse <= slides_atlas.ERROR_HELD else
            f"- Error within 1.25× {VERSUS[name]}'s in {cells - 1} of {cells} cells; worst {worse:.1f}×, "
            f"{model} {projection}, M = {min(atlas.MS)}.")
        assert prose_words(s[title]) <= 80, prose_words(s[title])


@pytest.mark.parametrize("names", [("tf32",), ("tf32", "bf16"), tuple(catalogue.ATLASES)])
def test_the_takeaways_give_each_atlas_median_and_worst(fixture_doc, write_results, tmp_path, names):
    """One line for the atlases measured, each precision's median and worst (its first atlas's): not
    only the better one; the notes name each atlas's worst shape."""
    ratio_of = lambda at: lambda m, n, k: 0.5 - at / 10 + m / 16384 / (1 + at)
    for at, name in enumerate(names):
        fixture_doc["benchmarks"][catalogue.atlas_id(name)] = atlas_record(fixture_doc, name, ratio_of(at))
    s, _ = built(fixture_doc, write_results, tmp_path)
    cells = len(atlas.PROJECTIONS) * len(atlas.MS)
    parts, precisions = [], set()
    for at, name in enumerate(names):
        precision = catalogue.step_of(KERNEL[name]).precision
        if precision in precisions:          # a precision's first atlas speaks for it
            continue
        precisions.add(precision)
        ratio = ratio_of(at)
        ratios = sorted(ratio(m, 1, 1) for _ in atlas.PROJECTIONS for m in atlas.MS)
        median = (ratios[(cells - 1) // 2] + ratios[cells // 2]) / 2
        parts.append(f"{catalogue.ATLASES[name][1]} {100 * median:.1f}% ({100 * ratio(min(atlas.MS), 1, 1):.0f}%)")
    assert f"- {cells} model shapes, median (worst) of cuBLAS: {', '.join(parts)}." in s["Takeaways — The Figures"]
    for name in names:
        model, projection, _, _ = atlas.PROJECTIONS[0]
        assert (f"The worst model shape in {catalogue.ATLASES[name][1]}: {model} {projection}, M = {min(atlas.MS)}."
                in s["Takeaways — The Figures"])


def test_a_small_shape_that_fills_the_sms_is_not_blamed_on_idle_sms(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"][catalogue.atlas_id("tf32")] = atlas_record(
        fixture_doc, "tf32", lambda m, n, k: 0.5 if (m, n) == (256, 28672) else 1.0)
    s, _ = built(fixture_doc, write_results, tmp_path)
    slide = s["Shape Atlas — TF32"]
    assert re.search(r"M = 256: \d+ tiles for \d+ SMs, enough to fill them", slide)
    assert "the kernel's loss, not the grid's" in slide and "leave SMs idle" not in slide


def test_a_kernel_that_holds_cuBLAS_everywhere_is_said_to(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"][catalogue.atlas_id("tf32")] = atlas_record(fixture_doc, "tf32", lambda m, n, k: 1.01)
    s, _ = built(fixture_doc, write_results, tmp_path)
    slide = s["Shape Atlas — TF32"]
    assert "at least 95% of cuBLAS everywhere" in slide and "Up to M = 256: at least 90% everywhere" in slide
    assert f"median over all {len(atlas.MS) * len(atlas.PROJECTIONS)} cells 101.0%" in slide
    # the others have no slide: the backup divider names them
    assert "Shape Atlas — BF16" not in s
    assert ("the shape atlas in BF16, FP8 block-scaled, FP8 (atlas.bf16, atlas.fp8_blocks, atlas.fp8)"
            in s["Backup Slides"])


@pytest.mark.parametrize("outcome", ["refused", "wrong"])
def test_a_cell_without_a_figure_says_why(fixture_doc, write_results, tmp_path, outcome):
    rec = atlas_record(fixture_doc, "tf32", lambda m, n, k: 1.0)
    first = rec["rows"][0]
    # as sweep.measure writes them: a refusal before the launch, a wrong result with what it ran
    kept = ("model", "projection", "shape", "kernel", *(("tile", "plan") if outcome == "wrong" else ()))
    rec["rows"][0] = {**{key: first[key] for key in kept}, "outcome": outcome,
                      **({"reason": "whole tiles only"} if outcome == "refused" else
                         {"check": {"passed": False, "rel_error": 1.0, "detail": "relative error 1.0e+00"}})}
    if outcome == "wrong":
        rec["status"], rec["reason"] = "failed", "check failed"
        rec["check"] = {"passed": False, "detail": "wrong at one cell"}
    fixture_doc["benchmarks"][catalogue.atlas_id("tf32")] = rec
    s, out = built(fixture_doc, write_results, tmp_path)
    assert f">{outcome}<" in svg_of(s["Shape Atlas — TF32"], out)
    if outcome == "wrong":
        model, projection, *_ = atlas.PROJECTIONS[0]
        assert f"Wrong results at {model} {projection}, M = {atlas.MS[0]}" in s["Shape Atlas — TF32"]


def test_stream_k_shows_its_code_beside_the_atlas_and_the_whole_of_it_in_the_backup(fixture_doc, write_results, tmp_path):
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    s, out = built(doc, write_results, tmp_path)
    assert headings((out / "slides.md").read_text()) == fixture_outline(doc["benchmarks"])
    step = catalogue.STREAM_K
    view = gemm.code_view(step.code, step.focus)
    slide = s[f"{step.title} — Code"]
    assert view["shown"].splitlines()[0] in slide and view["shown"].splitlines()[-1] in slide
    assert f"Lines {view['first']}–{view['last']} of the kernel's {view['lines']} in {step.code}" in slide
    # the notes: the tiles the atlas runs it with, by M, each up to the rows its cluster's column spans
    for _, change in step.rows_tiles:
        tile = {**step.best.tile, **change}
        assert f"{tile['BM']}×{tile['BN']}" in slide and f"up to {tile['BM'] * tile['CLUSTER_M']} rows" in slide
    pages = [f"{step.title} — Code ({j}/{len(view['pages'])})" for j in range(1, len(view["pages"]) + 1)]
    turns = gemm.code_view(catalogue.PINGPONG_BF16.code, catalogue.PINGPONG_BF16.focus)
    pages += [f"{catalogue.PINGPONG_BF16.title} — Code ({j}/{len(turns['pages'])})" for j in range(1, len(turns["pages"]) + 1)]
    assert view["pages"] and headings((out / "slides.md").read_text())[-len(pages):] == pages


def test_stream_k_says_where_its_tiles_promoted_their_sums_as_the_records_name_them(fixture_doc, write_results, tmp_path):
    """The code slide's notes: a precision whose atlas ran stream-K's tiles by M with PROMOTE_EVERY says
    every how many K-tiles; one whose record names no such tile says nothing of it."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    every = {s.precision: max(change.get("PROMOTE_EVERY", 0) for _, change in s.rows_tiles) for s in catalogue.SHAPE_STEPS}
    assert every["bf16"] > 0 and every["tf32"] == 0
    s, _ = built(doc, write_results, tmp_path)
    slide = s[f"{catalogue.STREAM_K.title} — Code"]
    assert f"In BF16 those tiles add their sums into FP32 registers every {every['bf16']} K-tiles" in slide
    assert "In TF32 those tiles" not in slide
    for tiles in doc["benchmarks"][catalogue.atlas_id("bf16")]["params"]["tiles"].values():
        for tile in tiles:
            tile.pop("PROMOTE_EVERY", None)
    s, _ = built(doc, write_results, tmp_path)
    assert "FP32 registers every" not in s[f"{catalogue.STREAM_K.title} — Code"]


def test_stream_k_says_where_it_ran_half_as_wide_and_the_bound_its_records_name(fixture_doc, write_results, tmp_path):
    """The code slide's notes: the cells whose stream-K tile by M ran at half its width, where more
    clusters than the records' bound (sharers) would share a tile, counted with one of them named;
    records that name no such bound (before 2026-11-30) say nothing of it."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    sms, halved = fixture_doc["device"]["sm_count"], []
    for name in WITH_STREAM_K:
        for row in doc["benchmarks"][catalogue.atlas_id(name)]["rows"]:
            step, m = catalogue.step_of(row["kernel"]), row["shape"][0]
            by_rows = next(({**step.best.tile, **change} for rows, change in step.rows_tiles if m <= rows), None)
            if row["kernel"] in STREAMED.values() and row["tile"]["BN"] < by_rows["BN"]:
                halved.append(row)
    assert halved and all(row["shape"][1] == 2112 for row in halved)      # 17 tiles of 128 columns for 132 clusters
    s, _ = built(doc, write_results, tmp_path)
    slide = s[f"{catalogue.STREAM_K.title} — Code"]
    assert (f"Where the clusters would outnumber those tiles more than {catalogue.STREAM_K_SHARERS:.1f} to one, it runs half as wide"
            in slide and f"{len(halved)} cells of the atlases, {slides_atlas._where(halved[0])} among them" in slide)
    for name in WITH_STREAM_K:
        doc["benchmarks"][catalogue.atlas_id(name)]["params"].pop("sharers")
    s, _ = built(doc, write_results, tmp_path)
    assert "half as wide" not in s[f"{catalogue.STREAM_K.title} — Code"]


def test_an_atlas_says_where_its_kernel_ran_its_tiles_by_m_narrower_and_the_bound_its_record_names(
        fixture_doc, write_results, tmp_path):
    """The notes of an atlas whose own kernel narrows its tiles by M (catalogue.fewer_sharers): the cells
    that ran narrower than the tile they would otherwise have run, counted, the first named with both
    tiles, and the record's bound; a record naming no bound says nothing of it."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    sms = fixture_doc["device"]["sm_count"]
    narrowing = [name for name, kernel in KERNEL.items() if catalogue.step_of(kernel).sharers]
    assert narrowing
    s, _ = built(doc, write_results, tmp_path)
    for name in narrowing:
        step = catalogue.step_of(KERNEL[name])
        rows = [r for r in doc["benchmarks"][catalogue.atlas_id(name)]["rows"] if r["kernel"] == KERNEL[name]]
        narrowed = [r for r in rows
                    if r["tile"]["BN"] < catalogue.tile_for(replace(step, sharers=0), *r["shape"], sms)["BN"]]
        assert narrowed and all(r["shape"][0] <= max(rows_ for rows_, _ in step.rows_tiles) for r in narrowed)
        notes = s[SLIDES[name]].split("<!--")[1]
        assert (f"Where more than {step.sharers:.1f} clusters would have shared each of its tiles by M, the kernel ran "
                f"them narrower, {catalogue.NARROWEST} columns at a time: {len(narrowed)} cells, among them "
                f"{slides_atlas._where(narrowed[0])}, which ran {tile_label(narrowed[0]['tile'])} instead of ") in " ".join(notes.split())
        doc["benchmarks"][catalogue.atlas_id(name)]["params"].pop("sharers")
    s, _ = built(doc, write_results, tmp_path)
    assert not any("clusters would have shared" in s[SLIDES[name]] for name in narrowing)


def test_stream_k_draws_its_plan_for_the_first_cell_it_ran(fixture_doc, write_results, tmp_path):
    """The diagram: the plan of BF16's smallest M on the first projection, as the cell recorded it."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    s, out = built(doc, write_results, tmp_path)
    slide = s["Stream-K — Diagram"]
    svg = svg_of(slide, out)
    m, (model, projection, n, k) = min(atlas.MS), atlas.PROJECTIONS[0]
    row = next(r for r in doc["benchmarks"][catalogue.atlas_id("bf16")]["rows"] if r["shape"] == [m, n, k])
    assert row["kernel"] == STREAMED["bf16"]
    runs = plan.stream_k(row["plan"]["units"], row["plan"]["clusters"], row["plan"]["k_tiles"])
    lo, hi = runs["run_k_tiles"]
    assert (f"Stream-K, BF16 {m}×{n}×{k}: {runs['units']} tiles of {row['tile']['BM']}×{row['tile']['BN']}, "
            f"{runs['k_tiles']} K-tiles each, on {runs['clusters']} clusters") in svg
    assert f"every run: {lo}–{hi} K-tiles" in svg and f"{runs['split_units']} of {runs['units']} tiles cut between runs" in svg
    assert f"The plan for {model} {projection}, M = {m}, BF16" in slide
    assert_spoken_first((out / "slides.md").read_text())


@pytest.mark.parametrize("ci", [[0.9, 0.95], [1.02, 1.05], [0.98, 1.02]], ids=["slower", "faster", "tie"])
def test_stream_k_at_the_reference_shape_is_told_from_its_turns_with_the_headline(fixture_doc, write_results, tmp_path, ci):
    """Its record at the reference shape: both TFLOPS from their turns together, and what the interval calls."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    bid = STREAMED["tf32"]
    rec = copy.deepcopy(doc["benchmarks"][catalogue.HEADLINE])
    gain = sum(ci) / 2
    rec.update(registry.discover()[bid].provenance(), title=registry.discover()[bid].title,
               before={**rec["before"], "id": catalogue.before(bid), "gain": gain,
                       "gain_by_sample": {**rec["before"]["gain_by_sample"], "median": gain, "ci": ci}})
    doc["benchmarks"][bid] = rec
    s, _ = built(doc, write_results, tmp_path)
    said = {"slower": "slower, so stream-K runs only where", "faster": "faster even there", "tie": "a tie"}
    verdict = "slower" if ci[1] < 1 else "faster" if ci[0] > 1 else "tie"
    assert (f"At the reference shape, where every SM has whole tiles, TF32 stream-K ran at "
            f"{rec['before']['tflops'] * gain:,.1f} TFLOPS and the headline at {rec['before']['tflops']:,.1f} in the "
            f"same turns: {said[verdict]}") in s["Stream-K — Diagram"]


def launching_only_the_units(doc: dict) -> dict:
    """The atlases as measured before a lone last wave was split with the idle clusters: each plan
    launched only its units' clusters."""
    for name in catalogue.ATLASES:
        for row in doc["benchmarks"][catalogue.atlas_id(name)]["rows"]:
            if row["plan"]["kind"] == "split_wave":
                row["plan"]["clusters"] = min(row["plan"]["clusters"], row["plan"]["units"])
    return doc


def test_without_a_stream_k_cell_the_grid_is_blamed_and_no_plan_is_drawn(fixture_doc, write_results, tmp_path):
    """An atlas whose every cell the headline ran, each lone wave on its units' clusters only
    (measured before stream-K joined it and before such a wave was split): nothing outlined, the
    small shapes' few tiles leave SMs idle, and the diagram slide says there is none."""
    ratio = lambda m, n, k: 0.5 + m / 16384
    rule = lambda kernel, m, n, k, sms: kernel
    s, out = built(launching_only_the_units(with_atlases(fixture_doc, ratio, rule=rule)), write_results, tmp_path)
    sms = fixture_doc["device"]["sm_count"]
    for name, title in SLIDES.items():
        svg = svg_of(s[title], out)
        assert svg.count(OUTLINED) == 0 and "outlined" not in svg and "- Outlined" not in s[title]
        m, (_, _, n, k) = min(atlas.MS), atlas.PROJECTIONS[0]
        tiles = plan.ctas({**catalogue.tile_for(catalogue.step_of(KERNEL[name]), m, n, k, sms), "CLUSTER_M": 1}, m, n)
        if tiles < sms:
            assert f"M = {m}: only {tiles} tiles for {sms} SMs." in s[title]
            assert f"where its {tiles} tiles leave SMs idle" in s[title]
    slide = s["Stream-K — Diagram"]
    ids = ", ".join(catalogue.atlas_id(name) for name in WITH_STREAM_K)
    assert f"Not measured on this GPU: {ids} (no atlas cell ran stream-K)" in slide
    assert "<img" not in slide and not list(out.glob("svgs/**/stream_k.svg"))
    assert_spoken_first((out / "slides.md").read_text())


def test_without_an_atlas_the_talk_shows_no_slide_of_it_and_the_backup_says_so(deck):
    assert not [t for t in headings(deck["md"]) if t.startswith(("Shape Atlas", catalogue.STREAM_K.title))]
    assert f"the shape atlas ({', '.join(map(catalogue.atlas_id, catalogue.ATLASES))})" in slides_of(deck["md"])["Backup Slides"]


def test_a_cell_the_headline_ran_at_a_narrower_width_has_a_dagger_and_the_notes_count_them(fixture_doc, write_results, tmp_path):
    """Where tile_for gave the headline one of its other widths (its waves end first), the cell's label
    has a dagger and a footnote says why; the notes count those cells and give the waves of each width.
    Without such a cell: no dagger, no footnote, no sentence."""
    sms = fixture_doc["device"]["sm_count"]
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    widened = [name for name in SLIDES if catalogue.step_of(KERNEL[name]).widths]
    assert widened, "an atlas whose kernel has other widths"
    s, out = built(doc, write_results, tmp_path)       # records that name no widths' speeds: no cell ran narrow
    assert not any("†" in svg_of(s[SLIDES[name]], out) for name in widened)
    for name in widened:
        doc["benchmarks"][catalogue.atlas_id(name)]["params"].update(catalogue.rule_params(catalogue.step_of(KERNEL[name])))
    s, out = built(doc, write_results, tmp_path)
    for name in widened:
        title, step = SLIDES[name], catalogue.step_of(KERNEL[name])
        # the best tile at another width: not a tile by M, which changes its rows or its cluster too
        widened_only = lambda t: t["BN"] in step.widths and all(t[key] == step.best.tile[key] for key in ("BM", "CLUSTER_M"))
        narrow = [(model, projection, (m, n, k)) for model, projection, n, k in atlas.PROJECTIONS for m in atlas.MS
                  if catalogue.kernel_for(KERNEL[name], m, n, k, sms) == step.best.id and widened_only(catalogue.tile_for(step, m, n, k, sms))]
        assert narrow, "an atlas cell whose waves a narrower width ends first"
        model, projection, shape = narrow[0]
        tile = catalogue.tile_for(step, *shape, sms)
        waves = {t["BN"]: catalogue.waves(t, *shape, sms) for t in (tile, step.best.tile)}
        speed = catalogue.width_speeds(step)[tile["BN"]]
        assert waves[tile["BN"]] * tile["BN"] / speed < waves[step.best.tile["BN"]] * step.best.tile["BN"]
        svg = svg_of(s[title], out)
        assert svg.count("†") == len(narrow) + 1 and "its waves end first" in svg      # the cells and the footnote
        wide = f"{step.best.tile['BM']}×{step.best.tile['BN']}"
        # every narrower width that ran, widest first, in the footnote and the notes
        ran = " or ".join(f"{step.best.tile['BM']}×{w}" for w in sorted(
            {catalogue.tile_for(step, *cell, sms)["BN"] for _, _, cell in narrow}, reverse=True))
        assert f"the {ran} tile ran, not {wide}" in svg
        assert (f"The {len(narrow)} cells with a dagger ran {ran}: at {model} {projection}, "
                f"M = {shape[0]:,}, {tile['BM']}×{tile['BN']}'s {waves[tile['BN']]:.2f} waves") in s[title]
        assert f"of a {wide} wave; {wide} needs {waves[step.best.tile['BN']]:.2f}." in s[title]
    for name in catalogue.ATLASES:          # the other outcome: every cell at the best's width
        for row in doc["benchmarks"][catalogue.atlas_id(name)]["rows"]:
            if row["kernel"] == KERNEL[name]:
                row["tile"]["BN"] = catalogue.step_of(row["kernel"]).best.tile["BN"]
    s, out = built(doc, write_results, tmp_path)
    for title in SLIDES.values():
        assert "†" not in svg_of(s[title], out) and "dagger" not in s[title]


def test_cells_bound_by_memory_carry_a_dot_and_their_share_of_the_hbm_roofline(fixture_doc, write_results, tmp_path):
    """A cell whose least bytes (A and B read once, C written once) at the measured copy's rate take
    longer than its FLOPs at the tensor cores' peak is dotted, and the legend and the notes give the
    kernel's share of that floor; a cell bound by compute is not dotted."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    gbps = max(row["gbps"] for row in doc["benchmarks"]["hbm.copy_scaling"]["rows"])
    rec = doc["benchmarks"][catalogue.atlas_id("tf32")]
    for row in rec["rows"]:       # every cell at its floor's pace divided by 0.4: those bound by memory at 40% of it
        m, n, k = row["shape"]
        floor_ms = ((m + n) * k * 4 + m * n * 4) / gbps / 1e6
        row["time_ms"]["kernel"] = {**row["time_ms"]["kernel"], "median": floor_ms / 0.4, "sm_clock_mhz": 1500.0}
    s, out = built(doc, write_results, tmp_path)
    svg = svg_of(s[SLIDES["tf32"]], out)
    dots = svg.count("<circle") - 1                      # the legend's dot
    assert 0 < dots < len(rec["rows"])                   # the small M are bound by memory, the large not
    assert f"bound by memory: 40% of the HBM roofline ({gbps:,.0f} GB/s, the measured copy)" in svg
    notes = s[SLIDES["tf32"]].split("<!--")[1]
    assert f"The {dots} dotted cells" in notes and "reaches 40% of that floor, median 40%." in notes


def test_a_lone_wave_split_with_the_idle_clusters_is_not_blamed_on_idle_sms(fixture_doc, write_results, tmp_path):
    """The headline in every cell, a lone last wave split with the idle clusters as the launcher plans
    it: the worst cell's few tiles had their K shared by every cluster, the kernel's loss."""
    ratio = lambda m, n, k: 0.5 + m / 16384
    s, _ = built(with_atlases(fixture_doc, ratio, rule=lambda kernel, m, n, k, sms: kernel), write_results, tmp_path)
    sms = fixture_doc["device"]["sm_count"]
    m, (model, projection, n, k) = min(atlas.MS), atlas.PROJECTIONS[0]
    tile, launched = planned(KERNEL["tf32"], m, n, k, sms)
    tiles = plan.ctas({**tile, "CLUSTER_M": 1}, m, n)
    assert tiles < sms and launched["clusters"] > launched["units"]
    slide = s[SLIDES["tf32"]]
    assert f"M = {m}: {tiles} tiles for {sms} SMs, their K-tiles shared by {launched['clusters']} clusters." in slide
    assert (f"where {launched['clusters']} clusters, the idle ones helping, shared its {tiles} tiles' K: "
            "the kernel's loss, not the grid's") in slide
    assert "leave SMs idle" not in slide


def test_cells_whose_tile_runs_two_ctas_an_sm_say_so(fixture_doc, write_results, tmp_path):
    """An atlas whose tile at the fewest rows runs more than one CTA an SM (CTAS_PER_SM): its launch
    holds that many more clusters, and the worst cell's sentence says how many CTAs each SM held."""
    ratio = lambda m, n, k: 0.5 + m / 16384
    s, _ = built(with_atlases(fixture_doc, ratio), write_results, tmp_path)
    sms = fixture_doc["device"]["sm_count"]
    m, (model, projection, n, k) = min(atlas.MS), atlas.PROJECTIONS[0]
    ctas_per_sm = {name: catalogue.tile_for(catalogue.step_of(KERNEL[name]), m, n, k, sms).get("CTAS_PER_SM", 1)
                   for name in KERNEL if name not in WITH_STREAM_K}
    shared = {name: per_sm for name, per_sm in ctas_per_sm.items() if per_sm > 1}
    assert shared, "an atlas whose kernel runs its 64-row tile more than one CTA an SM"
    for name, per_sm in shared.items():
        tile, launched = planned(KERNEL[name], m, n, k, sms)
        tiles = plan.ctas({**tile, "CLUSTER_M": 1}, m, n)
        assert launched["clusters"] * tile["CLUSTER_M"] == per_sm * sms > launched["units"]
        assert (f"M = {m}: {tiles} tiles for {sms} SMs, their K-tiles shared by {launched['clusters']} clusters "
                f"({per_sm} CTAs an SM).") in s[SLIDES[name]]
    for name in WITH_STREAM_K:        # one CTA an SM: nothing said
        assert "CTAs an SM" not in s[SLIDES[name]]


def test_a_few_idle_sms_are_not_blamed_for_a_larger_loss(fixture_doc, write_results, tmp_path):
    """A worst cell whose tiles leave a few SMs idle, far fewer than its loss would need: the slide
    counts them and calls the loss the kernel's."""
    sms = fixture_doc["device"]["sm_count"]
    n, k = 2112, 7168
    doc = launching_only_the_units(with_atlases(fixture_doc, lambda m_, n_, k_: 0.6 if (m_, n_) in ((1024, n), (256, n)) else 1.0))
    rows = {r["shape"][0]: r for r in doc["benchmarks"][catalogue.atlas_id("tf32")]["rows"] if r["shape"][1:] == [n, k]}
    for m in (1024, 256):       # tiles enough for all but a few SMs, each on its own cluster
        rows[m]["tile"] = {**rows[m]["tile"], "BN": n * -(-m // 128) // (sms - 4), "CLUSTER_M": 1}
        rows[m]["plan"]["clusters"] = rows[m]["plan"]["units"]
    tiles = {m: plan.ctas(rows[m]["tile"], m, n) for m in rows}
    assert all(sms - 10 < tiles[m] < sms for m in (1024, 256))
    s, _ = built(doc, write_results, tmp_path)
    slide = s[SLIDES["tf32"]]
    assert f"with {tiles[1024]} tiles for {sms} SMs, {sms - tiles[1024]} idle: mostly the kernel's loss" in slide
    assert f"M = 256: {tiles[256]} tiles for {sms} SMs, the {sms - tiles[256]} idle too few to explain it." in slide
    assert "leave SMs idle" not in slide and f"only {tiles[256]} tiles" not in slide


def test_the_notes_give_the_rule_that_picked_the_headlines_tile(fixture_doc, write_results, tmp_path):
    """An atlas record that names its constants (the small tile's share of the SMs, a narrower width's
    speed) has the rule said in its notes, with them; a record without them, no such sentence."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    s, _ = built(doc, write_results, tmp_path)
    assert not any("whichever's waves end first" in s[title] for title in SLIDES.values())
    widened = [name for name in SLIDES if catalogue.step_of(KERNEL[name]).widths]
    speeds = {}
    for name in widened:       # one speed for every width (a record before 2026-11-30), or each its own
        params, widths = doc["benchmarks"][catalogue.atlas_id(name)]["params"], catalogue.step_of(KERNEL[name]).widths
        if catalogue.step_of(KERNEL[name]).small_tile:
            params["narrow_speed"] = 0.9
            speeds[name] = dict.fromkeys(widths, 0.9)
        else:
            speeds[name] = {w: 0.8 - 0.1 * i for i, w in enumerate(widths)}
            params["narrow_speeds"] = {str(w): v for w, v in speeds[name].items()}
    assert len({len(set(v.values())) for v in speeds.values()}) == 2, "both forms"
    s, _ = built(doc, write_results, tmp_path)
    for name in widened:
        step, params = catalogue.step_of(KERNEL[name]), doc["benchmarks"][catalogue.atlas_id(name)]["params"]
        best = f"{step.best.tile['BM']}×{step.best.tile['BN']}"
        label = lambda w: f"{step.best.tile['BM']}×{w}"
        if step.small_tile:
            assert (f"the headline ran {step.tiles[1]['BM']}×{step.tiles[1]['BN']} where {best} would make "
                    f"fewer CTAs than {100 * params['small_tile_below_sms']:.0f}% of the SMs, else {best} or ") in s[SLIDES[name]]
            assert "whichever's waves end first (a narrower one at 90% of the speed)" in s[SLIDES[name]]
        else:
            most = max(rows for rows, change in step.rows_tiles if "BN" in change)
            first, *rest = step.widths
            assert (f"Past M = {most:,} the kernel ran {' or '.join(map(label, (step.best.tile['BN'], *step.widths)))}, "
                    f"whichever's waves end first ({label(first)} counted at {100 * speeds[name][first]:.0f}% of the speed"
                    + "".join(f", {label(w)} at {100 * speeds[name][w]:.0f}%" for w in rest) + ")") in s[SLIDES[name]]
        # the dagger's example counts the narrower width at the same speed the rule states
        narrow = next(int(w) for w in re.findall(rf" {step.best.tile['BM']}×(\d+)'s [\d.]+ waves", s[SLIDES[name]]))
        assert f"each {100 * narrow / step.best.tile['BN'] / speeds[name][narrow]:.0f}% as long, end at" in s[SLIDES[name]]


def test_the_notes_say_which_cells_ran_over_copies_of_operands_small_beside_l2(fixture_doc, write_results, tmp_path):
    """Cells whose runs cycled through copies of their operands (sweep.operand_sets) are counted in the
    notes, with the copies; an atlas with none says nothing of it."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    rec = doc["benchmarks"][catalogue.atlas_id("bf16")]
    cycled = [row for row in rec["rows"] if row["shape"][1] == 2112 and row["shape"][0] <= 1024]
    for i, row in enumerate(cycled):
        row["operand_sets"] = 2 + i % 3
    s, _ = built(doc, write_results, tmp_path)
    notes = s[SLIDES["bf16"]].split("<!--")[1]
    assert f"double precision first; the {len(cycled)} small beside L2 ran over 2–4 copies of their operands." in notes
    assert "small beside L2" not in s[SLIDES["tf32"]]


def test_the_notes_say_where_stream_k_stopped_short_of_its_rows_for_a_short_k(fixture_doc, write_results, tmp_path):
    """BF16 runs stream-K at 256 rows only where K passes its bound (catalogue.STREAM_K_BF16's
    short_k_rows): the notes say so, with the longest K the headline took there, from the cells."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 1.0)
    s, out = built(doc, write_results, tmp_path)
    bound, rows = catalogue.streamed_for(catalogue.HEADLINE_BF16).short_k_rows
    longest = max(k for _, _, _, k in atlas.PROJECTIONS if k <= bound)
    assert (f"The outlined cells ran stream-K, up to M = 256 ({rows} where K ≤ {longest:,}), "
            "beside the headline") in s[SLIDES["bf16"]]
    assert f"outlined: stream-K ran (up to M = 256; {rows} where K ≤ {longest:,})" in svg_of(s[SLIDES["bf16"]], out)
    assert "where K ≤" not in s[SLIDES["tf32"]]


def test_the_rule_names_the_one_wave_width_and_the_cells_that_ran_it(fixture_doc, write_results, tmp_path):
    """catalogue.one_wave in the atlas's notes: the rule's sentence ends with the one-wave tile and how
    many cells ran it, where any did."""
    doc = with_atlases(fixture_doc, lambda m, n, k: 0.9, rule=lambda kernel, m, n, k, sms: kernel)
    sms, step = fixture_doc["device"]["sm_count"], catalogue.step_of(KERNEL["tf32"])
    doc["benchmarks"][catalogue.atlas_id("tf32")]["params"]["narrow_speeds"] = {str(w): 0.9 for w in step.widths}
    s, _ = built(doc, write_results, tmp_path)
    one_row = [m for _, _, n, k in atlas.PROJECTIONS for m in atlas.MS if catalogue.one_row(step, m, n, k, sms)]
    cells = [1 for _, _, n, k in atlas.PROJECTIONS for m in atlas.MS
             if not catalogue.one_row(step, m, n, k, sms) and catalogue.tile_for(step, m, n, k, sms)["BN"] == step.one_wave_width]
    assert cells, "the fixture's device has a cell that runs the one-wave width"
    notes = " ".join(s[SLIDES["tf32"]].split("<!--")[1].split())
    said = f"or {step.best.tile['BM']}×{step.one_wave_width} where only it fills one wave ({len(cells)} cell{'s' if len(cells) > 1 else ''})."
    assert said in notes
    # the cells of one tile row, each run alone (catalogue.one_row), counted after it
    assert len(one_row) == len(atlas.PROJECTIONS) and set(one_row) == {step.best.tile["BM"]}
    assert f"{said} {len(one_row)} cells of M = {one_row[0]} ran one tile row alone, no cluster." in notes


def test_the_cells_that_ran_ping_pong_consumers_are_barred_with_the_rule_in_the_legend(fixture_doc, write_results, tmp_path):
    """BF16's heatmap bars each cell the rule ran ping-pong consumers in (catalogue.kernel_for) and its
    legend gives the rule's bounds as the record names them; an atlas without them has no bar."""
    s, out = built(with_atlases(fixture_doc, lambda m, n, k: 1.0), write_results, tmp_path)
    sms = fixture_doc["device"]["sm_count"]
    for name, title in SLIDES.items():
        svg = svg_of(s[title], out)
        turns = catalogue.turns_for(KERNEL[name])
        if not turns:
            assert 'class="bar"' not in svg and "barred" not in svg
            continue
        cells = [(n, m) for _, _, n, k in atlas.PROJECTIONS for m in atlas.MS
                 if catalogue.kernel_for(KERNEL[name], m, n, k, sms) == turns.best.id]
        assert cells and svg.count('class="bar"') == len(cells) + 1          # the cells and the legend's bar
        assert (f"barred: ping-pong consumers ran (K ≤ {catalogue.PINGPONG_MAX_K:,}, their tiles "
                f"{catalogue.PINGPONG_MIN_WAVES} waves or more)") in svg
        assert f" Ping-pong ran {len(cells)} cells (K ≤ {catalogue.PINGPONG_MAX_K:,})." in s[title]
    # a record from before it named the rule's bounds: the cells barred all the same, the bounds unsaid
    del fixture_doc["benchmarks"][catalogue.atlas_id("bf16")]["params"]["pingpong"]
    s, out = built(fixture_doc, write_results, tmp_path)
    svg = svg_of(s[SLIDES["bf16"]], out)
    assert "barred: ping-pong consumers ran<" in svg and svg.count('class="bar"') == len(cells) + 1
    assert f" Ping-pong ran {len(cells)} cells." in s[SLIDES["bf16"]]
