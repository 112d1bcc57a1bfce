"""The FP8 track's arithmetic without a GPU: e4m3's values, the rounding into them, the catalogue's
FP8 kernels and cuBLAS's FP8 layout."""
import numpy as np
import pytest

from bench.gemm import catalogue
from bench.gemm.harness import E4M3_MAX, TOLERANCE, e4m3_values, to_e4m3_bits
from tests.test_build import deck  # noqa: F401 (the fixture deck)
import slides.fp8

FINITE = [c for c in range(256) if c not in (0x7F, 0xFF)]


def test_e4m3_has_the_formats_range_and_steps():
    v = e4m3_values()
    positive = v[:0x7F]
    assert np.all(np.diff(positive) > 0), "codes 0 to 0x7E increase"
    assert positive[-1] == E4M3_MAX == 448.0
    assert positive[1] == 2.0**-9, "the smallest subnormal"
    assert positive[8] == 2.0**-6, "the smallest normal"
    assert v[0x38] == 1.0 and v[0xB8] == -1.0
    assert np.isnan(v[0x7F]) and np.isnan(v[0xFF])
    # three mantissa bits: eight values an octave
    assert np.count_nonzero((positive >= 1) & (positive < 2)) == 8


def test_every_finite_e4m3_value_rounds_to_itself():
    v = e4m3_values()
    x = v[FINITE].astype(np.float32)
    back = v[to_e4m3_bits(x, np)]
    assert np.array_equal(back, x)


def test_rounding_picks_the_nearest_e4m3_value():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(20000) * 40).clip(-E4M3_MAX, E4M3_MAX).astype(np.float32)
    v = e4m3_values()
    got = v[to_e4m3_bits(x, np)]
    finite = v[FINITE]
    nearest = np.abs(finite[None, :] - x[:, None].astype(np.float64)).min(axis=1)
    assert np.allclose(np.abs(got - x), nearest, rtol=0, atol=0)
    assert np.all(np.sign(got) == np.sign(x)) or np.all((got == 0) | (np.sign(got) == np.sign(x)))


def test_the_fp8_track_is_the_headline_built_for_e4m3_k_major():
    step, variant = catalogue.KERNELS[catalogue.HEADLINE_FP8]
    assert step.precision == "fp8" and step.layout == "b_kmajor"
    assert variant.tile["ELEMENT"] == "float_e4m3_t" and variant.tile["BK"] == 128   # 128 bytes of K
    # its gain is the narrower type's: timed in turns with the same kernel in BF16
    assert catalogue.before(catalogue.HEADLINE_FP8) == catalogue.HEADLINE_BF16
    assert catalogue.SASS_TYPES["fp8"] == "E4M3"
    assert "fp8" in TOLERANCE


def test_cublas_fp8_is_measured_k_major_only():
    assert catalogue.cublas_layouts("fp8") == ("b_kmajor",)
    assert catalogue.cublas_layouts("bf16") == tuple(catalogue.LAYOUTS)


@pytest.mark.parametrize("precision", ["tf32", "bf16", "fp8"])
def test_a_k_tile_is_one_128_byte_swizzle_row(precision):
    assert catalogue.ELEMENTS[precision]["BK"] * catalogue.ELEMENT_BYTES[precision] == 128


# --- the deck's FP8 section, on the fixture's FP8 records ----------------------------------------

def _fp8_slides(doc, write_results, tmp_path):
    from tests.test_atlas import built
    s, _ = built(doc, write_results, tmp_path)
    return s


def test_the_fp8_slide_sets_the_three_precisions_side_by_side(fixture_doc, write_results, tmp_path):
    """The main slide pictures speed against error, each kernel's error over its cuBLAS's; the table,
    with the targets, is its backup slide."""
    s = _fp8_slides(fixture_doc, write_results, tmp_path)
    slide, table = s["FP8: Three Precisions Side by Side"], s["FP8: Three Precisions Side by Side — Table"]
    assert "fp8_precisions.svg" in slide and "| FP8 |" not in slide
    for precision in ("| TF32 |", "| BF16 |", "| FP8 |"):
        assert precision in table
    b = fixture_doc["benchmarks"]
    pair = b[catalogue.HEADLINE_FP8]["before"]          # the ratio of its two medians, printed beside it
    assert f"FP8 runs **{pair['gain_by_sample']['median']:.2f}×** its BF16 run, in turns." in slide
    assert f"**{pair['gain_by_sample']['median']:.2f}×** its BF16 run" in table
    # every FP8 kernel's pair with the step before, in their own turns, is a row of the table's second
    # table (both TFLOPS from those turns); the main slides give the gain alone
    for bid in (step.best.id for step in catalogue.FP8_STEPS):
        before = b[bid].get("before")
        if before and b[bid]["status"] == "ok":
            assert (f"| {catalogue.step_of(bid).title} | {catalogue.step_of(before['id']).title}"
                    in table), bid
            assert f"| {before['tflops'] * before['gain']:,.1f} vs {before['tflops']:,.1f} |" in table, bid
            assert f"{before['tflops'] * before['gain']:,.0f} vs {before['tflops']:,.0f} TFLOPS" not in "".join(
                s[t] for t in ("FP8: Sums Promoted to FP32", "FP8: Block Scales") if t in s)
    # the fixture's unpromoted FP8 errs far more than cuBLASLt, which promotes: the target is not met
    fp8 = b[catalogue.HEADLINE_FP8]
    assert f"Without promotion its error is **{fp8['check']['rel_error'] / fp8['cublas']['check']['rel_error']:.0f}×** cuBLASLt's." in slide
    assert "without promotion" in table.lower() and "not met" in table
    assert "FP8: Sums Promoted to FP32" in s


def test_the_fp8_picture_puts_each_kernel_at_its_error_over_its_cublass(fixture_doc, write_results, tmp_path):
    """Each pictured kernel is a point labelled with its TFLOPS and its share of its cuBLAS; the arrow
    from the unpromoted kernel to its promoted self says how much smaller the error is."""
    from slides.fp8 import precisions_figure
    from slides.deck import Deck
    b = fixture_doc["benchmarks"]
    fp8 = Deck(fixture_doc).of(slides.fp8)
    svg = precisions_figure(fp8)
    for bid in (catalogue.HEADLINE, catalogue.HEADLINE_BF16, catalogue.HEADLINE_FP8):
        r = b[bid]
        assert f"{r['tflops']:,.0f} TFLOPS, {100 * r['tflops'] / r['cublas']['tflops']:.1f}% of cuBLAS" in svg
    promoted = b[fp8.promoted["id"]]
    drop = b[catalogue.HEADLINE_FP8]["check"]["rel_error"] / promoted["check"]["rel_error"]
    assert f"sums promoted: error {drop:.0f}× smaller" in svg
    # no picture without an FP8 kernel to put in it: the slide says so in one line, the table stays
    for bid in [k for k in b if k.startswith("gemm.") and "fp8" in k and "cublas" in b[k]]:
        b[bid]["cublas"]["check"]["rel_error"] = 0.0
    s = _fp8_slides(fixture_doc, write_results, tmp_path / "exact")
    assert "fp8_precisions.svg" not in s["FP8: Three Precisions Side by Side"]
    assert "No FP8 kernel has both a speed and an error beside cuBLASLt's to picture" in s["FP8: Three Precisions Side by Side"]
    assert "| FP8 |" in s["FP8: Three Precisions Side by Side — Table"]


def test_a_promoted_kernel_that_holds_cublaslt_is_said_to(fixture_doc, write_results, tmp_path):
    rec = fixture_doc["benchmarks"][catalogue.FP8_STEPS[1].best.id]
    rec["cublas"]["ratio_by_sample"]["ci"] = [1.001, 1.01]
    rec["check"]["rel_error"] = rec["cublas"]["check"]["rel_error"]
    s = _fp8_slides(fixture_doc, write_results, tmp_path)
    slide = s["FP8: Three Precisions Side by Side — Table"]
    assert "With FP32 promotion, at best (FP32 Promotion):" in slide and "1.00× its error (target: met)" in slide
    assert "With its sums promoted: **1.00×** cuBLASLt's error at" in s["FP8: Three Precisions Side by Side"]
    assert "(reaching it, in turns)" in s["FP8: Three Precisions Side by Side"]


def test_without_fp8_records_the_talk_has_no_fp8_slides_and_the_backup_says_so(fixture_doc, write_results, tmp_path):
    for bid in [k for k in fixture_doc["benchmarks"] if "fp8" in k]:
        del fixture_doc["benchmarks"][bid]
    s = _fp8_slides(fixture_doc, write_results, tmp_path)
    assert "FP8: Three Precisions Side by Side" not in s
    assert "the FP8 track (" in s["Backup Slides"]


def test_the_takeaways_carry_fp8_summed_in_fp32_and_say_the_unpromoted_kernels_error(deck):
    """FP8's takeaway is the kernel whose error holds beside cuBLASLt's (sums promoted to FP32), with the
    block-scaled kernel's range against DeepGEMM; the notes give the unpromoted kernel's speed with its error."""
    from tests.test_build import presenter_notes, slides_of
    b = deck["doc"]["benchmarks"]
    fp8, promoted = b[catalogue.HEADLINE_FP8], b["gemm.fp8_promote"]
    closing = slides_of(deck["md"])["Takeaways — The Figures"]
    error_ratio = fp8["check"]["rel_error"] / fp8["cublas"]["check"]["rel_error"]
    assert error_ratio > 1.25 and promoted["check"]["rel_error"] <= 1.25 * promoted["cublas"]["check"]["rel_error"]
    assert (f"- FP8 summed in FP32: **{promoted['tflops']:,.1f} TFLOPS**, "
            f"{100 * promoted['tflops'] / promoted['cublas']['tflops']:.1f}% of cuBLASLt at its error; block scales ") in closing
    assert "% of DeepGEMM." in closing
    assert (f"without that step it runs at {100 * fp8['tflops'] / fp8['cublas']['tflops']:.1f}% of cuBLASLt "
            f"with {error_ratio:.0f} times its error.") in presenter_notes(closing)


def test_the_tile_picked_by_shape_is_given_the_scales(monkeypatch):
    """An FP8 kernel with a small tile for small shapes: the tile picked for the shape gets alpha."""
    from bench.gemm import launch
    step = catalogue.step_of(catalogue.HEADLINE_FP8)
    assert step.small_tile, "the FP8 headline keeps the small tile of its TF32 step"
    calls = []
    monkeypatch.setattr(launch, "prepare", lambda s, v, device: lambda a, b, c, **kw: calls.append((v.tile, kw)))
    pick = launch.prepare_by_shape(step, {"sm_count": 132})
    small = np.zeros((1024, 1024))
    pick(small, small, small, alpha=0.25)
    assert calls == [(catalogue.tile_for(step, 1024, 1024, 1024, 132), {"alpha": 0.25})]
    assert calls[0][0] == step.tiles[1], "1024 x 1024 leaves most SMs idle with the best tile: the small one runs"


def test_the_deepgemm_slide_sets_our_kernels_figure_beside_its_own_slides(fixture_doc, write_results, tmp_path):
    """Our block-scaled kernel runs on DeepGEMM's slide and on its own, two runs at two clocks: the
    notes give both at the shape they share."""
    peer = fixture_doc["benchmarks"]["peers.deepgemm"]
    ours = fixture_doc["benchmarks"][peer["params"]["ours"]]
    shape = [ours["params"][d] for d in "mnk"]
    here = next(s["ours"]["tflops"] for s in peer["shapes"] if s["shape"] == shape)
    slide = _fp8_slides(fixture_doc, write_results, tmp_path)["FP8 Beside DeepGEMM"]
    assert (f"This project's kernel ran at {here:,.0f} TFLOPS here at {'×'.join(map(str, shape))}, "
            f"{ours['tflops']:,.0f} on its own slide: two runs, each at the clock its partners left.") in slide


def test_the_deepgemm_notes_give_an_error_once_where_every_shape_prints_it_alike(fixture_doc, write_results, tmp_path):
    """DeepGEMM's, cuBLASLt's (same scales) and cuBLASLt's (a scale a tensor) errors: one figure said once
    where all of them print alike at every shape; else each shape's three."""
    peer = fixture_doc["benchmarks"]["peers.deepgemm"]
    for s in peer["shapes"]:
        for name in ("deepgemm", "cublaslt_blocks", "cublaslt_bf16_out"):
            s[name]["check"]["rel_error"] = 1.71e-3
    slide = _fp8_slides(fixture_doc, write_results, tmp_path)["FP8 Beside DeepGEMM"]
    assert ("left. DeepGEMM's error against double precision of the dequantized operands is 1.7e-03 at every "
            "shape, as are cuBLASLt's with the same scales and with a scale a tensor;") in slide
    peer["shapes"][0]["deepgemm"]["check"]["rel_error"] = 2.5e-3
    slide = _fp8_slides(fixture_doc, write_results, tmp_path / "differ")["FP8 Beside DeepGEMM"]
    shape = "×".join(map(str, peer["shapes"][0]["shape"]))
    assert f"DeepGEMM's errors against double precision of the dequantized operands: {shape} 2.5e-03 (cuBLASLt" in slide


def test_the_deepgemm_notes_name_the_shapes_timed_over_copies_of_their_operands(fixture_doc, write_results, tmp_path):
    """Shapes small beside L2, whose runs took copies of their operands in turn, are named with the
    copies; a record with none says nothing of it."""
    peer = fixture_doc["benchmarks"]["peers.deepgemm"]
    slide = _fp8_slides(fixture_doc, write_results, tmp_path)["FP8 Beside DeepGEMM"]
    assert "small beside L2" not in slide
    peer["shapes"][0]["operand_sets"] = 3
    slide = _fp8_slides(fixture_doc, write_results, tmp_path / "copies")["FP8 Beside DeepGEMM"]
    shape = "×".join(map(str, peer["shapes"][0]["shape"]))
    assert (f"At {shape} A, B and C are small beside L2: each run took the next of 3 copies of them, as "
            "DeepGEMM's own benchmark empties L2 before each run.") in slide


def test_the_deepgemm_table_names_each_ones_tile_where_the_record_does(fixture_doc, write_results, tmp_path):
    """Records from 2026-11-30 on name DeepGEMM's tile (as its heuristic printed it) and this project's
    at each shape: the table gives both, a cluster's CTAs beside; older records leave the column out."""
    slide = _fp8_slides(fixture_doc, write_results, tmp_path)["FP8 Beside DeepGEMM — Table"]
    assert "Tiles" not in slide
    peer = fixture_doc["benchmarks"]["peers.deepgemm"]
    for s in peer["shapes"]:
        s["deepgemm_config"] = {"block_m": 128, "block_n": 160, "block_k": 128, "cluster_m": 2, "cluster_n": 1, "num_stages": 5}
        s["ours_tile"] = {"BM": 128, "BN": 192, "CLUSTER_M": 2}
    del peer["shapes"][-1]["ours_tile"]
    slide = _fp8_slides(fixture_doc, write_results, tmp_path / "tiled")["FP8 Beside DeepGEMM — Table"]
    rows = [next(line for line in slide.splitlines() if line.startswith(f"| {'×'.join(map(str, s['shape']))} |"))
            for s in peer["shapes"]]
    assert len(rows) == len(peer["shapes"]) and all(row.count("|") == 9 for row in rows)
    assert all(row.endswith(" 128×160 ×2 / 128×192 ×2 |") for row in rows[:-1]) and rows[-1].endswith(" 128×160 ×2 / — |")
    assert "Tiles: DeepGEMM / it" in slide and "Tiles as each chose them" in slide and "CTAs of its cluster" in slide


@pytest.mark.parametrize("called, said", [
    (["ahead"] * 5, "ahead of cuBLASLt at all 5 shapes"),
    (["tie"] * 2, "level with cuBLASLt at all 2 shapes"),
    (["ahead", "tie", "ahead", "behind", "ahead"], "ahead of cuBLASLt at 3 of 5 shapes, behind it at 1, level with it at 1"),
    (["behind", "behind", "ahead"], "behind cuBLASLt at 2 of 3 shapes, ahead of it at 1"),
    ([], "not timed beside cuBLASLt")])
def test_deepgemms_standing_counts_only_the_verdicts_it_has(called, said):
    """The DeepGEMM slide's answer: one clause where every shape had the same verdict, else each verdict
    counted where some shape had it, the most first; never "behind at 0"."""
    assert slides.fp8._standing(called) == said


def _profiled(tensor_pct):
    return {"record": {"profile": {"metrics": {slides.fp8.TENSOR_PIPE: tensor_pct}}} if tensor_pct is not None else {}}


@pytest.mark.parametrize("pct, before, said", [
    (82.3, 94.7, "the difference is time the tensor cores wait while each K-tile's sums are scaled"),
    (93.0, 94.7, "within 5 points of it, so the scales' work hides under the tensor cores'"),
    (82.3, None, None), (None, 94.7, None)])
def test_the_block_scales_notes_say_what_the_tensor_cores_counters_say(pct, before, said):
    """The block-scaled kernel's tensor cores against the promotion step's, from both profiles: the
    gap said for what it is where it is past MOVED_POINTS, and nothing where either kernel has no profile."""
    busy = slides.fp8._tensor_busy(_profiled(pct), _profiled(before))
    assert (busy and busy["said"]) == said
    assert slides.fp8._tensor_busy(_profiled(pct), None) is None


@pytest.mark.parametrize("profiled", [True, False])
def test_the_block_scales_notes_read_the_profiles_where_both_kernels_have_one(fixture_doc, write_results, tmp_path, profiled):
    for bench_id, pct in ((BLOCKS_ID, 82.3), (catalogue.before(BLOCKS_ID), 94.7)):
        if profiled:     # a profile as --profile writes it, the tensor cores at pct
            rec = fixture_doc["benchmarks"][bench_id]
            rec["profile"] = {"metrics": {slides.fp8.TENSOR_PIPE: pct}, "names": {slides.fp8.TENSOR_PIPE: "tensor pipe active, %"},
                              "tool": "ncu --clock-control none", "of": rec["source_hash"],
                              "measured_at": rec["measured_at"], "git_commit": rec["git_commit"]}
        else:
            fixture_doc["benchmarks"][bench_id].pop("profile", None)
    notes = _fp8_slides(fixture_doc, write_results, tmp_path)["FP8: Block Scales"]
    assert ("By Nsight Compute its tensor cores were busy 82.3% of the time, the promotion step's 94.7%: the difference"
            in notes) == profiled
    assert ("What still holds the kernel behind the promotion step is not in the results yet." in notes) != profiled


BLOCKS_ID = slides.fp8.BLOCKS_STEP.best.id


def test_the_deepgemm_slides_set_each_ones_tensor_cores_side_by_side_where_profiled(fixture_doc, write_results, tmp_path):
    """python -m bench --profile reads DeepGEMM's kernel and ours at each shape: the table gives both
    tensor cores' busy share, a dash where a shape has no counters; the notes give each one's range and
    the gap. Without counters, neither."""
    s = _fp8_slides(fixture_doc, write_results, tmp_path)
    assert "Tensor cores busy" not in s["FP8 Beside DeepGEMM — Table"] and "Nsight" not in s["FP8 Beside DeepGEMM"]
    peer = fixture_doc["benchmarks"]["peers.deepgemm"]
    for i, shape in enumerate(peer["shapes"][:-1]):
        shape["profile"] = {"peer": {slides.fp8.TENSOR_PIPE: 90.0 + i}, "ours": {slides.fp8.TENSOR_PIPE: 80.0 + i}}
    peer["profile"] = {"names": {slides.fp8.TENSOR_PIPE: "tensor pipe active, %"}, "of": peer["source_hash"]}
    s = _fp8_slides(fixture_doc, write_results, tmp_path / "profiled")
    rows = [line for line in s["FP8 Beside DeepGEMM — Table"].splitlines() if line.startswith("| 4096")]
    assert [row.rsplit("|", 2)[1].strip() for row in rows] == [f"{90 + i:.1f}% / {80 + i:.1f}%" for i in range(len(rows) - 1)] + ["—"]
    assert "The tensor cores' busy share is Nsight Compute's tensor pipe active" in s["FP8 Beside DeepGEMM — Table"]
    last = len(peer["shapes"]) - 2
    assert (f"By Nsight Compute DeepGEMM's tensor cores were busy 90.0–{90 + last:.1f}% of the time at these shapes, "
            f"this project's 80.0–{80 + last:.1f}%: ours less busy by 10.0 points at every shape.") in s["FP8 Beside DeepGEMM"]


@pytest.mark.parametrize("busy, said", [
    ([{"deepgemm": 93.5, "ours": 83.0}, {"deepgemm": 80.2, "ours": 69.0}],
     "DeepGEMM's tensor cores were busy 80.2–93.5% of the time at these shapes, this project's 69.0–83.0%: "
     "ours less busy by 10.5–11.2 points at every shape."),
    ([{"deepgemm": 93.5, "ours": 83.0}, {"deepgemm": 80.2, "ours": 79.0}],
     "this project's 79.0–83.0%: ours less busy by 10.5 points at 1 of 2 shapes."),
    ([{"deepgemm": 93.5, "ours": 92.0}], "DeepGEMM's tensor cores were busy 93.5% of the time at the shape profiled, "
     "this project's 92.0%: within 5 points of each other at every shape."),
    ([{"deepgemm": 93.5, "ours": 83.0}, {"deepgemm": 70.0, "ours": 80.0}, {"deepgemm": 80.0, "ours": 81.0}],
     "ours less busy by 10.5 points at 1 of 3 shapes, ours busier by 10.0 points at 1 of 3 shapes."),
    ([], None)])
def test_the_deepgemm_notes_say_the_tensor_cores_gap_for_what_it_is(busy, said):
    got = slides.fp8._busy_said(busy)
    assert (said in got) if said else got == ""


# --- the block-scaled kernel's constants, each changed beside its pick (bench/gemm/tune_blocks.py) ---

def _over(median: float, low: float, high: float) -> dict:
    return {"median": median, "p10": low, "p90": high, "n": 10, "ci": [low, high], "ci_level": 0.98}


def _knobs_record(over: dict[str, tuple], failed: str = "") -> dict:
    """A tune.fp8_blocks record whose knobs took these times over the pick's (median, interval)."""
    from bench.gemm import tune_blocks
    run = lambda tflops, o, name="": {"tflops": tflops, "check": {"passed": name != failed, "rel_error": 1.7e-3}, "over_base": o}
    return {"family": "tune", "title": "knobs", "status": "ok", "source_hash": "0", "telemetry": {"before": None, "after": None},
            "params": {"kernel": catalogue.BLOCK_SCALED, "shape": [4096, 8192, 16384], "knobs": {n: {} for n in over},
                       "pick_stages": 4, "timing": "in turns, each knob with the pick alone"},
            "check": {"passed": not failed}, "shape": [4096, 8192, 16384],
            "tiles": {tune_blocks.BASE: {"BM": 128, "BN": 192}, **{n: {"BM": 64, "BN": 128} for n in over}},   # unlike the pick's
            "pairs": {n: {"pick": run(1100.0, _over(1.0, 1.0, 1.0)), "knob": run(1100.0 / o[0], _over(*o), n)} for n, o in over.items()}}


def test_each_knob_is_called_slower_level_or_faster_from_its_interval(fixture_doc, write_results, tmp_path):
    """A knob is slower or faster than the pick only where its whole interval says so; the slide counts
    each verdict, the picture gives each share of the pick's speed with its interval, and the notes name
    the costliest knob."""
    from bench.core.schema import validate_record
    from tests.test_atlas import built, svg_of
    rec = _knobs_record({"3 stages": (1.094, 1.091, 1.096), "3 buffers for C": (1.001, 0.9998, 1.002),
                         "bands of 32 tile rows": (0.998, 0.996, 0.999)})
    validate_record("tune.fp8_blocks", rec)
    fixture_doc["benchmarks"]["tune.fp8_blocks"] = rec
    s, out = built(fixture_doc, write_results, tmp_path)
    slide = s[slides.fp8.KNOBS_SLIDE]
    assert "**1 of 3 slower, 1 level, 1 faster**" in slide and "The pick stands" not in slide
    assert "(128×192, 4 stages) at 4096×8192×16384" in slide
    assert "the costliest, 3 stages, ran at 91.4% of its speed" in slide
    svg = svg_of(slide, out)
    assert all(name in svg for name in rec["pairs"]) and "(91.2–91.7) slower" in svg and "the pick" in svg
    assert "(99.8–100.0) level" in svg and "(100.1–100.4) faster" in svg


def test_a_pick_no_knob_beats_is_said_to_stand_and_a_failed_knob_is_named(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["tune.fp8_blocks"] = _knobs_record(
        {"3 stages": (1.094, 1.091, 1.096), "5 stages, 1 buffer for C": (1.062, 1.06, 1.066)}, failed="3 stages")
    slide = _fp8_slides(fixture_doc, write_results, tmp_path)[slides.fp8.KNOBS_SLIDE]
    assert "**2 of 2 slower**. The pick stands. Failed its check: 3 stages." in slide
    assert "None was faster, so what DeepGEMM does beyond them is code." in slide


def test_without_the_knobs_record_the_deck_has_no_knobs_slide(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"].pop("tune.fp8_blocks", None)
    assert slides.fp8.KNOBS_SLIDE not in _fp8_slides(fixture_doc, write_results, tmp_path)


def test_each_knob_changes_the_picks_tile_by_its_own_constants_alone():
    from bench.gemm import tune_blocks
    tiles = tune_blocks.tiles(132)
    pick = tiles.pop(tune_blocks.BASE)
    assert pick == catalogue.tile_for(tune_blocks.STEP, *tune_blocks.SHAPE.dims, 132)
    assert list(tiles) == list(tune_blocks.KNOBS)
    for name, tile in tiles.items():
        assert {k: v for k, v in tile.items() if pick.get(k) != v} == tune_blocks.KNOBS[name]
