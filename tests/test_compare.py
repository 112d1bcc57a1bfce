"""The comparison section: other GPUs' results set beside the deck's, as tables, ratios and plots."""
import copy

import build
from slides.deck import figures_dir
from tests.test_build import assert_every_slide_has_notes, headings, slides_of

MEMORY_GAIN = 1.4


def other_gpu(doc: dict) -> dict:
    """The fixture as a run on a GPU with the same SMs and a faster, larger memory would leave it."""
    doc = copy.deepcopy(doc)
    doc["device"].update(name="NVIDIA H200", slug="nvidia-h200", memory_bytes=150_000_000_000,
                         mem_clock_max_mhz=round(doc["device"]["mem_clock_max_mhz"] * MEMORY_GAIN))
    hbm = doc["benchmarks"]["hbm.copy_scaling"]
    for row in hbm["rows"] + [hbm["memcpy"]]:
        row["gbps"] *= MEMORY_GAIN
    doc["benchmarks"]["gemm.wgmma"]["tflops"] *= 0.9
    return doc


def test_comparison_sets_the_gpus_side_by_side(fixture_doc, write_results, tmp_path, capsys):
    mine = write_results(fixture_doc, "h100.yaml")
    write_results(other_gpu(fixture_doc), "h200.yaml")
    out = tmp_path / "deck"
    assert build.main(["--results", str(mine), "--out-dir", str(out)]) == 0    # the other file is found beside it
    assert "compared with NVIDIA H200" in capsys.readouterr().out
    md = (out / "slides.md").read_text()
    assert_every_slide_has_notes(md)
    name = fixture_doc["device"]["name"]
    titles = headings(md)
    appendix = titles.index("Appendix: Other GPUs")                 # before the kernels' counters and code
    assert titles[appendix + 7:appendix + 10] == ["GEMM Kernels — Resources", "GEMM Kernels — Counters", "Full Kernel Code"]
    assert titles[appendix:appendix + 7] == ["Appendix: Other GPUs", "The GPUs Side by Side", "The GPUs Side by Side — Measured",
                           "GEMM Steps on Each GPU", "GEMM Steps on Each GPU — Plot", "How Far Apart", "What Differs, and Why"]
    assert f"{name} beside NVIDIA H200: the same code" in slides_of(md)["Appendix: Other GPUs"]
    side, measured = slides_of(md)["The GPUs Side by Side"], slides_of(md)["The GPUs Side by Side — Measured"]
    assert f"| cudaMemcpy (GB/s) | {fixture_doc['benchmarks']['hbm.copy_scaling']['memcpy']['gbps']:,.0f} |" in measured
    assert "| SMs | 132 | 132 | 1.00× |" in side and f"{MEMORY_GAIN:.2f}×" in measured and "cudaMemcpy" not in side
    gemm = slides_of(md)["GEMM Steps on Each GPU"]
    assert "| CuTe WGMMA |" in gemm and "| 0.90× |" in gemm   # one kernel: its title alone
    # the same records but one kernel's speed: there its share of its own cuBLAS differs most
    assert "Each step's share of its own GPU's cuBLAS lies furthest apart at CuTe WGMMA: " in gemm
    why = slides_of(md)["What Differs, and Why"]
    assert f"Our best copy kernel moves {MEMORY_GAIN:.2f}× the bytes per second" in why
    assert "memory-bound work gains what the memory gives" in why
    assert "The same 132 SMs at the same maximum clock" in why and "0.90× (CuTe WGMMA)" in why
    for svg in ("compare_gemm.svg", "compare_ratios.svg"):
        assert "NVIDIA H200" in (figures_dir(out) / svg).read_text()


def test_no_comparison_without_other_results(fixture_doc, write_results, tmp_path):
    mine = write_results(fixture_doc, "h100.yaml")
    write_results(other_gpu(fixture_doc), "h200.yaml")
    out = tmp_path / "deck"
    assert build.main(["--results", str(mine), "--out-dir", str(out), "--no-compare"]) == 0
    assert "Appendix" not in (out / "slides.md").read_text() and not (figures_dir(out) / "compare_gemm.svg").exists()


def test_a_broken_results_file_is_left_out_of_the_comparison_by_name(fixture_doc, write_results, tmp_path, capsys):
    mine = write_results(fixture_doc, "h100.yaml")
    broken = write_results("device: [unterminated\n", "broken.yaml")
    out = tmp_path / "deck"
    assert build.main(["--results", str(mine), "--out-dir", str(out)]) == 0
    err = capsys.readouterr().err
    assert "left out of the comparison" in err and str(broken) in err
    assert "Appendix" not in (out / "slides.md").read_text()
    # named on the command line, a broken file stops the build and nothing is written
    assert build.main(["--results", str(mine), "--out-dir", str(tmp_path / "again"), "--compare", str(broken)]) == 1
    assert not (tmp_path / "again" / "slides.md").exists()


def test_cublas_doing_less_work_per_clock_on_the_same_sms_is_called_unexplained(fixture_doc, write_results, tmp_path):
    other = other_gpu(fixture_doc)
    for layout in ("b_row", "b_kmajor"):
        rec = other["benchmarks"][f"gemm.cublas_tf32_{layout}"]
        rec["telemetry"]["during"]["sm_clock_mhz"]["median"] *= 1.1     # a higher clock, the same TFLOPS
        rec["telemetry"]["sm_clock"]["mean"] *= 1.1                     # (measured, and NVML's sample)
    mine = write_results(fixture_doc, "h100.yaml")
    write_results(other, "h200.yaml")
    assert build.main(["--results", str(mine), "--out-dir", str(tmp_path / "deck")]) == 0
    why = slides_of((tmp_path / "deck" / "slides.md").read_text())["What Differs, and Why"]
    assert "Per MHz of that clock cuBLAS did 0.91× the work" in why and "nothing measured here explains" in why
    assert "work per cycle on the same SMs: unexplained." in why and "the same work per cycle" not in why
    # the same work per clock: no such sentence
    write_results(other_gpu(fixture_doc), "h200.yaml")
    assert build.main(["--results", str(mine), "--out-dir", str(tmp_path / "same")]) == 0
    assert "Per MHz of that clock" not in (tmp_path / "same" / "slides.md").read_text()
    why = slides_of((tmp_path / "same" / "slides.md").read_text())["What Differs, and Why"]
    assert "the same work per cycle, so cuBLAS moves with the clock it runs at, not with memory" in why


def test_shares_of_cublas_alike_on_every_gpu_are_called_the_same(fixture_doc, write_results, tmp_path):
    other = other_gpu(fixture_doc)
    other["benchmarks"]["gemm.wgmma"]["tflops"] = fixture_doc["benchmarks"]["gemm.wgmma"]["tflops"]
    mine = write_results(fixture_doc, "h100.yaml")
    write_results(other, "h200.yaml")
    assert build.main(["--results", str(mine), "--out-dir", str(tmp_path / "deck")]) == 0
    gemm = slides_of((tmp_path / "deck" / "slides.md").read_text())["GEMM Steps on Each GPU"]
    assert "Each step's share of its own GPU's cuBLAS lies within 0.0 points on every GPU" in gemm
