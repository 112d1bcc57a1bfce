"""The machinery family without a GPU: every wgmma build compiles for sm_90a and its SASS holds the
wgmma of the precision and N it was built for, in both kernels, each K-tile's four in the rate loop."""
import pytest

from bench.gemm import catalogue
from bench.machinery import wgmma as machinery
from bench.core import registry, sass
from tests.conftest import builds

BUILDS = [(p, n) for p in machinery.PRECISIONS for n in machinery.NS]


def test_the_benchmark_declares_every_build_it_loads():
    declared = registry.discover()["machinery.wgmma"].builds
    assert [d for _, d in declared] == [machinery.defines(p, n) for p, n in BUILDS]


@pytest.mark.parametrize("precision,n", [pytest.param(p, n, id=f"{p}-{n}",
                                                      marks=builds((machinery.SOURCE, "90a", machinery.defines(p, n))))
                                         for p, n in BUILDS])
def test_each_build_holds_the_wgmma_it_measures(precision, n, compile_cu):
    functions = sass.disassemble(compile_cu(machinery.SOURCE, "90a", machinery.defines(precision, n)))
    k = 32 // catalogue.ELEMENT_BYTES[precision]
    for name in ("wgmma_rate", "wgmma_latency"):
        ops = {i.opcode for i in functions[name] if i.mnemonic in sass.MMA}
        assert ops == {f"{catalogue.WGMMA_OPCODES[precision]}.64x{n}x{k}.F32.{'E4M3.E4M3' if precision == 'fp8' else catalogue.SASS_TYPES[precision]}"}, (name, ops)
        assert not sum(i.mnemonic in ("STL", "LDL") for i in functions[name]), "no spills"
    rate = [i for i in functions["wgmma_rate"] if i.mnemonic in sass.WGMMA]
    assert len(rate) % 4 == 0, "a K-tile is four wgmmas"


# --- the deck's wgmma slides, on a record in the benchmark's shape -------------------------------

def wgmma_record(doc: dict, share) -> dict:
    """A machinery.wgmma record for the fixture's GPU whose best rate at N is ``share(precision, n)``
    of the dense peak per clock (slides/device.py's rates), every warpgroup count alike."""
    from slides.device import PER_SM_FLOP_PER_CLK
    rates = PER_SM_FLOP_PER_CLK[doc["device"]["compute_capability"]]
    timed = {"median": 1.0, "p10": 1.0, "p90": 1.0, "n": 10}
    rows = []
    for p in machinery.PRECISIONS:
        k = 32 // catalogue.ELEMENT_BYTES[p]
        for n in machinery.NS:
            most = machinery.defines(p, n)["MAX_WARPGROUPS"]
            rows.append({"precision": p, "n": n, "atom": [64, n, k], "k_tile": 4 * k, "sass": [], "latency_cycles": 100.0 + n,
                         "rates": [{"warpgroups": w, "time_ms": timed, "flop_per_sm_clock": share(p, n) * rates[p], "tflops": 500.0}
                                   for w in machinery.WARPGROUPS if w <= most]})
    bid = "machinery.wgmma"
    return {"family": "machinery", "title": bid, **registry.discover()[bid].provenance(),
            "measured_at": "2026-11-26T00:00:00+00:00", "git_commit": "0" * 40, "status": "ok",
            "telemetry": doc["benchmarks"]["hbm.copy_scaling"]["telemetry"], "duration_s": 1.0,
            "params": {"precisions": list(machinery.PRECISIONS), "ns": list(machinery.NS),
                       "warpgroups": list(machinery.WARPGROUPS), "iters": 4096},
            "check": {"passed": True}, "rows": rows}


def _slides(doc, write_results, tmp_path):
    from tests.test_atlas import built
    return built(doc, write_results, tmp_path)[0]


def test_the_wgmma_slide_follows_the_step_that_brings_in_wgmma(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.wgmma"] = wgmma_record(fixture_doc, lambda p, n: min(0.99, n / 200))
    s = _slides(fixture_doc, write_results, tmp_path)
    titles = list(s)
    first = next(step for step in catalogue.STEPS if set(step.sass) & set(sass.WGMMA))
    performance = next(t for t in titles if t.endswith(f"{first.title} — Performance"))
    # after the step's own slides (its table one click on)
    assert titles[titles.index(performance) + 1:titles.index(performance) + 3] == [performance.replace("Performance", "Results"),
                                                                                  "wgmma Alone: Rate Against N"]
    slide = s["wgmma Alone: Rate Against N"]
    # every precision at the same share: said once, the lines lying on one another
    assert "At N = 256 every precision reaches 99.0% of the dense peak per clock: one line." in slide
    # 95% is first reached at N = 190 in this record: of the measured widths, at 256; at N = 8 a
    # wgmma's 4 cycles of work at the peak run at 4% of it, so it holds the tensor cores 100 cycles
    assert "Every precision reaches 95% from N = 256; at N = 8 a wgmma still holds the tensor cores 100 cycles for 4 " \
           "cycles of work (4% of the peak)." in slide
    assert "in flight keep" not in slide, "the widest N is the first to reach the target: no narrower one to compare"
    assert "| FP8 | 8 | 64×8×32 |" in s["wgmma Alone — Every N"]


def test_a_precision_short_of_the_target_is_named(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.wgmma"] = wgmma_record(fixture_doc, lambda p, n: 0.9 if p == "fp8" else 0.97)
    slide = _slides(fixture_doc, write_results, tmp_path)["wgmma Alone: Rate Against N"]
    assert "At N = 256: TF32 97.0%, BF16 97.0%, FP8 90.0% of the dense peak per clock, under 95% in FP8." in slide
    assert "under 95% in FP8" in slide and "FP8 reaches" not in slide and "one line" not in slide
    assert "TF32 and BF16 reach 95% at every N measured, down to 8." in slide


def test_the_latency_bullet_counts_the_wgmmas_in_flight_that_cover_it(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.wgmma"] = wgmma_record(fixture_doc, lambda p, n: 1.0 if n >= 64 else n / 64)
    slide = _slides(fixture_doc, write_results, tmp_path)["wgmma Alone: Rate Against N"]
    # N = 64: 32 cycles of work, latency 164 (the record's 100 + N): 6 in flight; N = 256: 128 and 356, 3
    assert "Alone, a wgmma finishes after 164 cycles at N = 64 and 356 at N = 256, holding the tensor cores 32 and " \
           "128: 6 and 3 in flight keep them busy." in slide


def test_without_the_record_the_talk_has_no_wgmma_slide_and_the_backup_says_so(fixture_doc, write_results, tmp_path):
    del fixture_doc["benchmarks"]["machinery.wgmma"]
    s = _slides(fixture_doc, write_results, tmp_path)
    assert "wgmma Alone: Rate Against N" not in s and "wgmma Alone — Every N" not in s
    assert "wgmma alone (machinery.wgmma)" in s["Backup Slides"]
