"""The slides that set a GEMM's figures side by side by how they were timed (slides/regimes.py and slides/bursts.py):
bursts from a rest against the same GEMM sustained, and energy per GEMM, each traced to its
record, each judgment with its other outcome."""
import contextlib
import io

import build
from slides.deck import figures_dir
from tests.test_build import prose_words, slides_of


def built(doc, write_results, tmp_path) -> dict[str, str]:
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(write_results(doc)), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    return slides_of((tmp_path / "slides.md").read_text())


def test_each_burst_stands_beside_the_same_gemm_sustained(fixture_doc, write_results, tmp_path):
    """The main slide: each GEMM's burst and sustained TFLOPS with their clocks, drawn, and the gains'
    range in words; the table behind it: every figure."""
    rows = fixture_doc["benchmarks"]["burst.gemm"]["rows"]
    slides = built(fixture_doc, write_results, tmp_path)
    s, table = slides["Bursts From a Rest"], slides["Bursts From a Rest — Table"]
    svg = (figures_dir(tmp_path) / "bursts.svg").read_text()
    for row in rows:
        sustained = row["sustained"]
        gain = 100 * (row["tflops"] / sustained["tflops"] - 1)
        assert (f"| {row['title']} | {'×'.join(map(str, row['shape']))} | **{row['tflops']:,.1f}** (" in table
                and f"| **{sustained['tflops']:,.1f}** | {sustained['sm_clock_mhz']:,.0f} | {sustained['watts']:,.0f} "
                    f"| {gain:+.1f}% |" in table), row["title"]
        assert f">{row['title']}, {'×'.join(map(str, row['shape']))}<" in svg
        assert f">{sustained['tflops']:,.1f} at {sustained['sm_clock_mhz']:,.0f} MHz<" in svg
        assert f">{row['tflops']:,.1f} at " in svg and f" MHz, {gain:+.1f}%<" in svg
    gains = [r["tflops"] / r["sustained"]["tflops"] for r in rows]
    assert min(gains) > 1
    assert f"A burst from a rest runs **{100 * (min(gains) - 1):.1f}–{100 * (max(gains) - 1):.1f}% faster**" in s
    assert "|" not in s and prose_words(s) <= 60


def test_bursts_no_faster_than_sustained_are_not_called_faster(fixture_doc, write_results, tmp_path):
    for row in fixture_doc["benchmarks"]["burst.gemm"]["rows"]:
        row["sustained"]["time_ms"] = row["time_ms"]["median"] * 1.01       # the steady state a little faster
        row["sustained"]["tflops"] = row["tflops"] * 1.01
    s = built(fixture_doc, write_results, tmp_path)["Bursts From a Rest"]
    assert "Bursts are not all faster than the steady state here" in s and "faster**" not in s


def test_a_burst_is_said_to_run_at_a_higher_clock_only_where_every_one_did(fixture_doc, write_results, tmp_path):
    rows = fixture_doc["benchmarks"]["burst.gemm"]["rows"]
    assert all(max(x["sm_clock_mhz"] for x in r["samples"]) > r["sustained"]["sm_clock_mhz"] for r in rows)
    assert "faster** than the same GEMM sustained, at a higher clock:" in built(fixture_doc, write_results, tmp_path / "a")["Bursts From a Rest"]
    rows[0]["sustained"]["sm_clock_mhz"] = 10 * max(x["sm_clock_mhz"] for x in rows[0]["samples"])
    (tmp_path / "b").mkdir()
    assert "faster** than the same GEMM sustained: public" in built(fixture_doc, write_results, tmp_path / "b")["Bursts From a Rest"]


def test_energy_names_the_kernels_under_the_cap_or_says_all_draw_it(fixture_doc, write_results, tmp_path):
    b = fixture_doc["benchmarks"]
    limit = fixture_doc["device"]["power_limit_w"]
    s = built(fixture_doc, write_results, tmp_path / "a")["Energy per GEMM"]
    under = [bid for bid, r in b.items() if bid.startswith("gemm.") and "energy" in r and "before" in r
             and r["energy"]["watts"] < 0.95 * limit]
    assert under and f"Under 95% of the {limit:,.0f} W cap:" in s
    for r in b.values():
        if "energy" in r:
            r["energy"]["watts"] = limit
            r.get("cublas", {}).get("energy", {})["watts"] = limit
    (tmp_path / "b").mkdir()
    s = built(fixture_doc, write_results, tmp_path / "b")["Energy per GEMM"]
    assert f"Every GEMM alone draws {limit:,.0f}–{limit:,.0f} W" in s and "the joules follow the time" in s


def test_records_without_bursts_or_energy_say_so(fixture_doc, write_results, tmp_path):
    del fixture_doc["benchmarks"]["burst.gemm"]
    for r in fixture_doc["benchmarks"].values():
        r.pop("energy", None)
        r.get("cublas", {}).pop("energy", None)
    s = built(fixture_doc, write_results, tmp_path)
    assert "burst.gemm" in s["Bursts From a Rest"]
    assert "Energy per GEMM is not in these records" in s["Energy per GEMM"]


def test_the_table_says_how_each_gemm_reached_its_sustained_state(fixture_doc, write_results, tmp_path):
    """A record whose sustained runs follow one another (sustain_settle_rule): the first after its
    seconds of runs, each next once its rounds settle; an older record: every one after those seconds."""
    params = fixture_doc["benchmarks"]["burst.gemm"]["params"]
    seconds = f"{params['sustain_s']:,.0f}"
    table = built(fixture_doc, write_results, tmp_path)["Bursts From a Rest — Table"]
    assert f"sustained, alone, after {seconds} s of runs." in table and "settle" not in table
    params["sustain_settle_rule"] = {"round_s": 0.4, "drift": 0.01, "max_s": params["sustain_s"]}
    table = built(fixture_doc, write_results, tmp_path)["Bursts From a Rest — Table"]
    assert (f"sustained, alone, at its steady state: the first after {seconds} s of runs, each next once its "
            "rounds settle.") in table
