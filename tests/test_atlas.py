"""The shape atlas's slides (slides/atlas.py) on a record made from the fixture's own sweep rows:
the heatmap's cells, the small tile's outline, and each judgment with its other outcome."""
import contextlib
import copy
import io
import re

import pytest

import build
from bench.gemm import atlas, catalogue
from bench.core import registry
from tests.test_build import deck, slides_of  # noqa: F401 (deck: the fixture deck)


def atlas_record(doc: dict, bench_id: str, ratio) -> dict:
    """An atlas record for ``bench_id`` in the shape bench/gemm/atlas.py writes, its cells copied from the
    fixture's sweep row at the reference shape, each with the ratio ``ratio(m, n, k)``."""
    step = catalogue.step_of(bench_id)
    sweep = doc["benchmarks"][step.sweep_id]
    template = next(r for r in sweep["rows"] if r["outcome"] == "correct")
    rows = []
    for model, projection, n, k in atlas.PROJECTIONS:
        for m in atlas.MS:
            row = {**copy.deepcopy(template), "model": model, "projection": projection, "shape": [m, n, k],
                   "ratio_same_layout": ratio(m, n, k)}
            tile = step.tiles[1] if m <= 128 and step.small_tile else step.best.tile
            row["tile"] = {key: tile[key] for key in ("BM", "BN", "CLUSTER_M")}
            rows.append(row)
    bid = atlas.atlas_id(bench_id)
    return {**copy.deepcopy(sweep), "family": "atlas", "title": bid,
            **registry.discover()[bid].provenance(),
            "params": {**sweep["params"], "ms": list(atlas.MS),
                       "projections": [{"model": m, "projection": p, "n": n, "k": k} for m, p, n, k in atlas.PROJECTIONS]},
            "rows": rows}


def built(doc, write_results, tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(write_results(doc)), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    md = (tmp_path / "slides.md").read_text()
    return slides_of(md), tmp_path


def svg_of(slide: str, out) -> str:
    src = re.search(r'<img src="\./(svgs/[^"]+)"', slide).group(1)
    return (out / src).read_text()


def test_each_cell_is_its_ratio_and_the_small_tile_is_outlined(fixture_doc, write_results, tmp_path):
    ratio = lambda m, n, k: 0.5 + m / 16384          # 0.5 at the smallest M, 1.5 at the largest
    for bid in (catalogue.HEADLINE, catalogue.HEADLINE_BF16):
        fixture_doc["benchmarks"][atlas.atlas_id(bid)] = atlas_record(fixture_doc, bid, ratio)
    s, out = built(fixture_doc, write_results, tmp_path)
    for title in ("Shape Atlas — TF32", "Shape Atlas — BF16"):
        svg = svg_of(s[title], out)
        for m in atlas.MS:
            assert f">{100 * ratio(m, 1, 1):.0f}<" in svg
        # the small tile's cells, M up to 128 in every projection, and the legend's swatch
        assert svg.count('stroke="#1f2937"') == 2 * len(atlas.PROJECTIONS) + 1
        assert "outlined: the 128×64 tile ran" in svg
        small = min(m for m in atlas.MS)
        assert f"down to {100 * ratio(small, 1, 1):.1f}% at" in s[title]
        assert re.search(r"only \d+ tiles for \d+ SMs", s[title]), "M = 64 leaves SMs without a tile"
        large = min(m for m in atlas.MS if m >= 512)
        assert f"down to {100 * ratio(large, 1, 1):.1f}% of cuBLAS" in s[title]


def test_the_takeaways_give_the_atlas_median_and_worst(fixture_doc, write_results, tmp_path):
    ratio = lambda m, n, k: 0.5 + m / 16384
    fixture_doc["benchmarks"][atlas.atlas_id(catalogue.HEADLINE)] = atlas_record(fixture_doc, catalogue.HEADLINE, ratio)
    s, _ = built(fixture_doc, write_results, tmp_path)
    cells = len(atlas.PROJECTIONS) * len(atlas.MS)
    ratios = sorted(ratio(m, 1, 1) for _ in atlas.PROJECTIONS for m in atlas.MS)
    median = (ratios[(cells - 1) // 2] + ratios[cells // 2]) / 2
    assert (f"- {cells} model shapes in TF32: median {100 * median:.1f}% of cuBLAS, worst "
            f"{100 * ratio(min(atlas.MS), 1, 1):.0f}%.") in s["Takeaways"]


def test_a_small_shape_that_fills_the_sms_is_not_blamed_on_idle_sms(fixture_doc, write_results, tmp_path):
    bid = catalogue.HEADLINE
    fixture_doc["benchmarks"][atlas.atlas_id(bid)] = atlas_record(fixture_doc, bid, lambda m, n, k: 0.5 if (m, n) == (256, 28672) else 1.0)
    s, _ = built(fixture_doc, write_results, tmp_path)
    slide = s["Shape Atlas — TF32"]
    assert re.search(r"M = 256: \d+ tiles for \d+ SMs, enough to fill them", slide)
    assert "its loss is the kernel's, not the grid's" in slide and "leave SMs idle" not in slide


def test_a_kernel_that_holds_cuBLAS_everywhere_is_said_to(fixture_doc, write_results, tmp_path):
    bid = catalogue.HEADLINE
    fixture_doc["benchmarks"][atlas.atlas_id(bid)] = atlas_record(fixture_doc, bid, lambda m, n, k: 1.01)
    s, _ = built(fixture_doc, write_results, tmp_path)
    slide = s["Shape Atlas — TF32"]
    assert "at least 95% of cuBLAS everywhere" in slide and "Up to M = 256: at least 90% everywhere" in slide
    assert f"median over all {len(atlas.MS) * len(atlas.PROJECTIONS)} cells 101.0%" in slide
    assert "Not measured on this GPU: atlas.bf16" in s["Shape Atlas — BF16"]


@pytest.mark.parametrize("outcome", ["refused", "wrong"])
def test_a_cell_without_a_figure_says_why(fixture_doc, write_results, tmp_path, outcome):
    bid = catalogue.HEADLINE
    rec = atlas_record(fixture_doc, bid, lambda m, n, k: 1.0)
    rec["rows"][0] = {k: v for k, v in rec["rows"][0].items() if k not in ("ratio_same_layout", "tflops")}
    rec["rows"][0].update(outcome=outcome, reason="whole tiles only",
                          check={"passed": False, "rel_error": 1.0, "detail": "relative error 1.0e+00"})
    if outcome == "wrong":
        rec["status"], rec["reason"] = "failed", "check failed"
        rec["check"] = {"passed": False, "detail": "wrong at one cell"}
    fixture_doc["benchmarks"][atlas.atlas_id(bid)] = rec
    s, out = built(fixture_doc, write_results, tmp_path)
    assert f">{outcome}<" in svg_of(s["Shape Atlas — TF32"], out)
    if outcome == "wrong":
        first = atlas.PROJECTIONS[0]
        assert f"Wrong results at {first[0]} {first[1]}, M = {atlas.MS[0]}" in s["Shape Atlas — TF32"]


def test_without_an_atlas_the_talk_shows_no_slide_of_it_and_the_backup_says_so(deck):
    from tests.test_build import headings
    assert not [t for t in headings(deck["md"]) if t.startswith("Shape Atlas")]
    assert "the shape atlas (atlas.tf32, atlas.bf16)" in slides_of(deck["md"])["Backup Slides"]
