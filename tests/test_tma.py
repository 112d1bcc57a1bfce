"""TMA alone and L2's two halves without a GPU: the host's side of the checks (the words the device
writes, the rows each CTA's last box starts at), every build's SASS holding the load its path claims,
and the deck's slides on records in the benchmarks' shape, both ways each judgment can fall."""
import numpy as np
import pytest

from bench.gemm import catalogue
from bench.micro import l2_map
from bench.core import sass
from bench.machinery import tma
from tests.conftest import builds
from tests.test_atlas import built


def test_every_word_of_the_source_is_distinct_and_a_box_is_its_rows_words():
    w = tma.words(0, 1 << 16)
    assert len(np.unique(w)) == w.size                     # a misplaced row cannot match by chance
    assert int(tma.words(3, 1)[0]) == 3 * tma.WORD_STEP % 2**32
    assert np.array_equal(tma.box(5, 2, row_words=32), w[5 * 32:7 * 32])


def test_each_ctas_last_box_follows_the_kernels_walk():
    # from memory each cluster's run follows the one before; a CTA's cluster is its index // cluster
    gap = tma.spacing("hbm", units=3, boxes=4, box_rows=64, region_rows=10_000)
    assert gap == 4 * 64
    assert tma.stream_rows(100, ctas=6, cluster=2, gap=gap, boxes=4, box_rows=64, region_rows=10_000) == \
        [100 + u * 256 + 3 * 64 for u in (0, 0, 1, 1, 2, 2)]
    # in L2 the units spread over the region, in whole boxes, and the walk wraps at its end
    gap = tma.spacing("l2", units=3, boxes=4, box_rows=64, region_rows=1000)
    assert gap == 320 and gap % 64 == 0
    assert tma.stream_rows(0, ctas=3, cluster=1, gap=gap, boxes=4, box_rows=64, region_rows=1000)[2] == (640 + 192) % 1000


def test_a_walk_from_memory_rotates_and_one_in_l2_stays():
    walk = tma._Walk(region_rows=1000, rotate=True)
    assert [walk.next(300) for _ in range(4)] == [0, 300, 600, 900]
    assert walk.next(300) == 200
    # streams in turns share the walk: each launch starts where the last one ended, whichever it was
    assert [walk.next(100), walk.next(250), walk.next(100)] == [500, 600, 850]
    still = tma._Walk(region_rows=1000, rotate=False)
    assert {still.next(300) for _ in range(3)} == {0}


@pytest.mark.parametrize("cluster", [pytest.param(c, marks=builds((tma.SOURCE, "90a", {"CLUSTER": c})))
                                     for c in (1, *tma.CLUSTERS)])
def test_each_path_holds_the_load_it_claims(cluster, compile_cu):
    functions = sass.disassemble(compile_cu(tma.SOURCE, "90a", {"CLUSTER": cluster}))
    loads = lambda name: {i.opcode for i in functions[name] if i.mnemonic in ("UTMALDG", "LDGSTS")}
    assert loads("stream_separate") == {"UTMALDG.2D"}
    if cluster == 1:
        assert loads("load_latency") == {"UTMALDG.2D"}
        assert all(op.startswith("LDGSTS.") for name in functions if name.startswith("cp_async_") for op in loads(name))
        assert {n for n in functions if n.startswith("cp_async_")} == {"cp_async_1", "cp_async_2", "cp_async_4",
                                                                        "cp_async_8", "cp_async_16"}
    else:
        assert loads("stream_multicast") == {"UTMALDG.2D.MULTICAST"}
        assert any(i.opcode.startswith("SYNCS.ARRIVE") and "RED" in i.opcode for i in functions["stream_multicast"]), \
            "each CTA signals its peers' barriers"


@builds((l2_map.SOURCE, "90a", None))
def test_the_map_chases_through_loads_that_bypass_l1(compile_cu):
    functions = sass.disassemble(compile_cu(l2_map.SOURCE, "90a"))
    body = sass.histogram(sass.timed_loop(functions["latency_map"]))     # the unrolled chase
    assert body["LDG"] == 8 and sum(body.values()) - body["LDG"] <= 3, body
    loads = {i.opcode for i in sass.timed_loop(functions["latency_map"]) if i.mnemonic == "LDG"}
    assert loads == {"LDG.E.64.STRONG.GPU"}, "ld.global.cg: L2, not L1"


def test_the_lines_are_distinct_and_spread_over_the_buffer():
    offsets = l2_map.line_offsets()
    assert len(set(offsets.tolist())) == l2_map.LINES and all(o % 128 == 0 for o in offsets)
    assert offsets.max() < l2_map.BUFFER_BYTES and offsets.max() - offsets.min() > l2_map.BUFFER_BYTES // 2


# --- the deck, on records in the benchmarks' shape --------------------------------------------------

def _stream(tbps: float) -> dict:
    """A stream's figures: its time for the same bytes goes as 1 / rate, with a 1% interval."""
    ms = 1 / tbps
    ci = [ms * 0.99, ms * 1.01]
    return {"time_ms": {"median": ms, "p10": ci[0], "p90": ci[1], "n": 10, "ci": ci}, "tbps": tbps,
            "bytes_per_sm_clock": tbps * 3.8}


def tma_record(doc: dict, multicast_tbps: float = 2.5, memory_cp: float = 3.1) -> dict:
    """A machinery.tma record: one CTA's TMA from L2 flat at 3.6 TB/s from 2 boxes in flight,
    cp.async to 7.7; from memory TMA 3.1 against ``memory_cp``; multicast ``multicast_tbps`` against 3.6."""
    from bench.core import registry
    sources = ("l2", "hbm")
    latency = [{"source": s, "box_bytes": 128 << i, "cycles": (640.0 if i < 6 else 640.0 + 100 * (i - 5)) + (420 if s == "hbm" else 0)}
               for s in sources for i in range(9)]
    depth = [{"source": s, "slots": n,
              "tma": _stream(min(3.6, 2.5 * n) if s == "l2" else min(3.1, 1.5 * n)),
              "cp_async": _stream(min(7.7, 4 * n) if s == "l2" else min(memory_cp, 1.7 * n))}
             for s in sources for n in (1, 2, 4, 8, 16)]
    sizes = [{"source": s, "box_bytes": b, "slots": 4, "tma": _stream(3.6 * b / 8192 if b <= 8192 else 3.6 + b / 16384)}
             for s in sources for b in (2048, 4096, 8192, 16384, 32768)]
    issuers = [{"source": s, "ctas_per_sm": c, "slots": 4, "tma": _stream(3.6 * min(c, 2) if s == "l2" else 3.1)}
               for s in sources for c in (1, 2, 4)]
    multicast = [{"source": s, "cluster": c, "ctas": 132 if c == 2 else 120, "separate": _stream(3.6),
                  "multicast": _stream(multicast_tbps)} for c in (2, 4) for s in sources]
    return {"family": "machinery", "title": "machinery.tma", **registry.discover()["machinery.tma"].provenance(),
            "measured_at": "2026-11-26T00:00:00+00:00", "git_commit": "0" * 40, "status": "ok",
            "telemetry": doc["benchmarks"]["hbm.copy_scaling"]["telemetry"], "duration_s": 1.0,
            "params": {"matrix_bytes": 2 << 30, "l2_region_bytes": 16 << 20, "row_bytes": 128, "latency_iters": 1024,
                       "latency_stride_bytes": 65536, "stream_box_bytes": 8192, "stream_boxes": 1024, "batch": 4,
                       "max_slots": 16, "multicast_slots": 8, "issuers": [1, 2, 4], "issuer_slots": 4,
                       "box_rows": [16, 32, 64, 128, 256], "clusters": [2, 4], "threads": 128, "ctas": 132, "reps": 10},
            "check": {"passed": True}, "sass": {}, "latency": latency, "depth": depth, "sizes": sizes,
            "issuers": issuers, "multicast": multicast}


def test_the_tma_slide_follows_the_first_tma_step_and_says_what_the_record_holds(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.tma"] = tma_record(fixture_doc)
    s, _ = built(fixture_doc, write_results, tmp_path)
    titles = list(s)
    first = next(step for step in catalogue.STEPS if "UTMALDG" in step.sass)
    performance = next(t for t in titles if t.endswith(f"{first.title} — Performance"))
    # after the step's own slides (its table one click on)
    assert titles[titles.index(performance) + 1:titles.index(performance) + 3] == [performance.replace("Performance", "Results"),
                                                                                  "TMA Alone: What One Thread Can Issue"]
    slide = s["TMA Alone: What One Thread Can Issue"]
    # the round trip is for questions: the notes hold it
    shown, notes = slide.split("<!--")
    assert "round trip" not in shown
    assert "A box's round trip: 640 cycles from L2 up to 4 KiB, 940 at 32 KiB; from memory 1,060 to 1,360." in notes
    assert "From memory, one thread's TMA matches every thread's cp.async: 3.10 against 3.10 TB/s." in slide
    assert ("One CTA an SM, its 8 KiB boxes from L2 stop at 3.60 TB/s from 2 in flight; bigger boxes raise it (2 KiB 0.90, "
            "32 KiB 5.60), 2 CTAs an SM reach 7.20; cp.async 7.70.") in slide
    assert "Multicast into clusters of 2: 2.50 TB/s delivered against 3.60 with each CTA loading the box (31% less)." in slide
    assert "bigger boxes raise that ceiling and more CTAs an SM do: a GEMM's producer wants big boxes." in slide
    assert "| 32 KiB | 940 | 1,360 |" in s["TMA Alone — Every Figure"]
    assert "| 4 | L2 | 120 | 3.60 | 2.50 |" in s["TMA Alone — Box Size and Multicast"]


def test_the_tma_slide_words_the_other_outcomes(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.tma"] = tma_record(fixture_doc, multicast_tbps=4.5, memory_cp=3.5)
    slide = built(fixture_doc, write_results, tmp_path)[0]["TMA Alone: What One Thread Can Issue"]
    assert "From memory, one thread's TMA trails every thread's cp.async by 11%: 3.10 against 3.50 TB/s." in slide
    assert "4.50 TB/s delivered against 3.60 with each CTA loading the box (25% more)." in slide


@pytest.mark.parametrize("separate", [3.0, 3.6])
def test_separate_loads_from_memory_past_hbms_peak_are_said_to_come_partly_from_l2(fixture_doc, write_results, tmp_path, separate):
    """From memory, the CTAs of a cluster loading the same boxes separately can pass HBM's theoretical
    peak (the fixture's 3.35 TB/s): the notes say some of those bytes come from L2, and say nothing under it."""
    rec = tma_record(fixture_doc)
    for row in rec["multicast"]:
        row["separate"] = _stream(separate)
    fixture_doc["benchmarks"]["machinery.tma"] = rec
    slide = built(fixture_doc, write_results, tmp_path)[0]["TMA Alone — Box Size and Multicast"]
    device = fixture_doc["device"]
    peak = device["mem_clock_max_mhz"] * 2e6 * device["mem_bus_width_bits"] / 8 / 1e12
    said = f"From memory, loading separately reaches {separate:.2f} TB/s, past HBM's theoretical {peak:.2f}"
    assert 3.0 < peak < 3.6
    if separate > peak:
        assert said in slide and "so some of those bytes must come from L2" in slide
    else:
        assert said not in slide


def test_what_does_not_raise_the_ceiling_is_said_not_to(fixture_doc, write_results, tmp_path):
    rec = tma_record(fixture_doc)
    for row in rec["sizes"] + rec["issuers"]:
        row["tma"] = _stream(3.6)                          # every box size and CTA count: the same rate
    for row in rec["latency"]:
        row["cycles"] = 640.0                              # every box: the same round trip
    fixture_doc["benchmarks"]["machinery.tma"] = rec
    slide = built(fixture_doc, write_results, tmp_path)[0]["TMA Alone: What One Thread Can Issue"]
    assert "640 cycles from L2 up to 32 KiB; from memory" in slide
    assert "bigger boxes do not raise it" in slide
    assert "bigger boxes do not raise that ceiling and more CTAs an SM do not." in slide


def test_without_the_tma_record_the_talk_has_no_tma_slide_and_the_backup_says_so(fixture_doc, write_results, tmp_path):
    for bid in ("machinery.tma", "l2.latency_map", "peers.gpu_benches"):
        del fixture_doc["benchmarks"][bid]
    s, _ = built(fixture_doc, write_results, tmp_path)
    assert not any(t.startswith("TMA Alone") for t in s)
    divider = s["Backup Slides"]
    assert "TMA alone (machinery.tma)" in divider and "L2's two halves (l2.latency_map)" in divider
    assert divider.count("Not measured on this GPU") == 1, "what is missing is one line"
    assert "--only atlas l2 machinery peers" in divider


def latency_map_record(doc: dict, cycles: np.ndarray) -> dict:
    from bench.core import registry
    return {"family": "l2", "title": "l2.latency_map", **registry.discover()["l2.latency_map"].provenance(),
            "measured_at": "2026-11-26T00:00:00+00:00", "git_commit": "0" * 40, "status": "ok",
            "telemetry": doc["benchmarks"]["hbm.copy_scaling"]["telemetry"], "duration_s": 1.0,
            "params": {"buffer_bytes": 256 << 20, "lines": cycles.shape[1], "hops": 256, "line_seed": 2027},
            "check": {"passed": True},
            "rows": [{"sm": i, "cycles": [float(v) for v in row]} for i, row in enumerate(cycles)]}


def split_cycles(sms: int = 132, lines: int = 64, near: float = 265.0, far: float = 295.0) -> np.ndarray:
    """SMs 0..sms/2-1 near lines of even index, the rest near the odd ones; each SM a few cycles off."""
    rng = np.random.default_rng(1)
    sm_half = np.arange(sms) < sms // 2
    line_half = np.arange(lines) % 2 == 0
    base = np.where(sm_half[:, None] == line_half[None, :], near, far)
    return base + rng.normal(0, 1.5, (sms, lines)) + np.arange(sms)[:, None] % 8


def test_the_halves_are_found_from_the_data():
    from slides.l2_map import halves
    h = halves(split_cycles())
    assert h["split"] and sorted(h["sms"]) == [66, 66] and sorted(h["lines"]) == [32, 32]
    assert h["near"] == pytest.approx(268.5, abs=1.5) and h["far"] == pytest.approx(298.5, abs=1.5)
    noise = np.random.default_rng(2).normal(280, 5, (132, 64))
    assert not halves(noise)["split"]


def test_the_l2_map_slide_says_near_and_far_or_that_there_are_no_halves(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["l2.latency_map"] = latency_map_record(fixture_doc, split_cycles())
    slide = built(fixture_doc, write_results, tmp_path)[0]["L2's Two Halves, Seen From Every SM"]
    assert "from the SMs beside the line's half of L2 and" in slide and "more." in slide
    assert "The SMs fall into two groups of 66 and 66; of 64 lines, 32 lie near one and 32 near the other." in slide
    fixture_doc["benchmarks"]["l2.latency_map"] = latency_map_record(
        fixture_doc, np.random.default_rng(2).normal(280, 5, (132, 64)))
    slide = built(fixture_doc, write_results, tmp_path / "noise")[0]["L2's Two Halves, Seen From Every SM"]
    assert "No two halves: from 132 SMs to 64 lines a load takes" in slide


# --- L2's placement and working set ----------------------------------------------------------------

def test_sm_numbers_read_as_runs():
    from slides import l2
    assert l2.ranges([124, 125, 126, 127, 128, 129, 130, 131]) == "124–131"
    assert l2.ranges([0, 2, 4, 6, 8, 10, 12, 14]) == "0, 2, 4, 6, 8, 10, …"
    assert l2.ranges([3, 5, 6, 7]) == "3, 5–7"


def _rate(gbps: float, passes: int = 100) -> dict:
    """A rate() of the L2 benchmarks: 16 MiB a pass, a 1% interval on the time."""
    ms = (16 << 20) * passes / gbps / 1e6
    return {"passes": passes, "gbps": gbps, "time_ms": {"median": ms, "p10": ms, "p90": ms, "n": 10,
                                                       "ci": [0.99 * ms, 1.01 * ms]}}


def test_the_placement_slide_says_whether_the_place_shapes_the_scaling(fixture_doc, write_results, tmp_path):
    from slides import l2
    rec = fixture_doc["benchmarks"]["l2.placement"]
    rec["rows"] = [{"sms": n, "scheduled_sms": list(range(124, 124 + n)), "spread_sms": list(range(0, 132, 132 // n))[:n],
                    "scheduled": _rate(130.0 * n), "spread": _rate((180.0 if n == 8 else 130.0) * n)}
                   for n in (4, 8, 16)]
    rec["sweep"] = [{"bytes": b << 20, "gbps": 7000.0 if b <= 16 else 7200.0 if b == 32 else 3000.0 + b}
                    for b in (1, 2, 4, 8, 16, 32, 64, 128, 256)]
    slide = built(fixture_doc, write_results, tmp_path)[0][l2.PLACE_SLIDE]
    assert "Spread over the chip, 8 SMs read 1.38× what they read where 8 blocks land (SMs 124–131)" in slide
    # the best of every set that fits (32 MiB's, past half of L2), and the range of those past it
    assert "Up to 7,200 GB/s while the set fits in L2, 3,064–3,256 past it; it falls between 32 MiB and 64 MiB." in slide
    # a smallest set that reads markedly slower than the best inside L2 is said beside the best
    rec["sweep"][0]["gbps"] = 3500.0
    slide = built(fixture_doc, write_results, tmp_path / "slow_start")[0][l2.PLACE_SLIDE]
    assert "Up to 7,200 GB/s while the set fits in L2 (3,500 at 1 MiB), 3,064–3,256 past it;" in slide
    for row in rec["rows"]:
        row["spread"] = dict(row["scheduled"])
    slide = built(fixture_doc, write_results, tmp_path / "same")[0][l2.PLACE_SLIDE]
    assert "each count reads within 0%: the place does not shape the scaling." in slide
    for row in rec["rows"]:                                # the scheduler's SMs the faster ones
        row["spread"] = _rate(row["scheduled"]["gbps"] / 2)
    slide = built(fixture_doc, write_results, tmp_path / "slower")[0][l2.PLACE_SLIDE]
    assert "Where 4 blocks land (SMs 124–127), they read 2.00× what as many SMs spread over the chip read" in slide
