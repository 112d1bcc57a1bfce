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
