"""The backup table of each step's resources, main loop and counters (slides/counters.py)."""
import contextlib
import io

import build
from tests.test_build import deck, slides_of  # noqa: F401 (deck: the fixture deck)

TITLE = "GEMM Kernels — Resources"


def test_without_a_profile_there_is_no_counters_slide(fixture_doc, write_results, tmp_path):
    for r in fixture_doc["benchmarks"].values():
        r.pop("profile", None)
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(write_results(fixture_doc)), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    table = slides_of((tmp_path / "slides.md").read_text())[TITLE]
    lean = fixture_doc["benchmarks"]["gemm.lean_loop"]["resources"]["sass"]["main_loop"]
    assert f"| {lean['instructions']} / {lean['mma']} |" in table
    md = (tmp_path / "slides.md").read_text()
    assert "GEMM Kernels — Counters" not in slides_of(md)
    assert "— Counters" not in md, "no kernel's notes point to the slide that is not there"


def test_with_a_profile_the_kernels_notes_point_to_the_counters(deck):
    assert 'backup tables, "GEMM Kernels — Resources" and "— Counters"' in deck["md"]


def test_a_performance_slide_names_the_counter_that_moved_most_against_the_step_before(deck):
    """From the two profiles: of the percentages both hold, the one furthest from the step before's."""
    from bench.gemm import catalogue
    b, s = deck["doc"]["benchmarks"], slides_of(deck["md"])
    named = 0
    for i, (before, step) in enumerate(zip(catalogue.STEPS, catalogue.STEPS[1:]), 2):
        now, then = (b.get(x.best.id, {}).get("profile") for x in (step, before))
        slide = s[f"Kernel {i}: {step.title} — Performance"]
        if not (now and then):
            assert "moved most" not in slide
            continue
        pct = [m for m in now["metrics"] if "%" in now["names"][m] and m in then["metrics"]]
        top = max(pct, key=lambda m: abs(now["metrics"][m] - then["metrics"][m]))
        if abs(now["metrics"][top] - then["metrics"][top]) < 5:
            assert "no counter moved 5 points from the step before." in slide
            continue
        named += 1
        name = now["names"][top].split(", %")[0]
        assert f"moved most from the step before: {name}, {then['metrics'][top]:.0f}% → {now['metrics'][top]:.0f}%" in slide, slide
    assert named >= 5
