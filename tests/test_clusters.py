"""The clusters benchmark without a GPU: the host's side of its checks (the ring the chase follows,
the sums the streams must reach), and every build compiled for sm_90a with each path's own load."""
import pytest

from bench.gemm import catalogue
from bench.machinery import clusters
from bench.core import sass
from tests.conftest import builds


def test_the_ring_is_one_cycle_and_the_host_follows_it_as_the_kernel_does():
    nxt = clusters.ring(4096)
    j, seen = 0, set()
    for _ in range(4096):
        seen.add(j)
        j = int(nxt[j])
    assert len(seen) == 4096 and j == 0
    j = 0
    for _ in range(5000):
        j = int(nxt[j])
    assert clusters.chase_end(nxt, 5000) == j


def test_stream_sums_are_each_threads_vectors_summed_and_wrapped():
    import numpy as np
    words = np.arange(64, dtype=np.uint32) * np.uint32(2**27)        # sums that wrap past 2^32
    sums = clusters.stream_sums(words, threads=4, passes=3)
    for t in range(4):
        mine = [int(w) for v in range(t, 16, 4) for w in words[4 * v:4 * v + 4]]
        assert int(sums[t]) == 3 * sum(mine) % 2**32


@pytest.mark.parametrize("size", [pytest.param(c, marks=builds((clusters.SOURCE, "90a", {"CLUSTER": c})))
                                  for c in clusters.CLUSTERS])
def test_each_cluster_build_reads_a_peer_through_the_cluster_window_and_its_own_through_shared(size, compile_cu):
    functions = sass.disassemble(compile_cu(clusters.SOURCE, "90a", {"CLUSTER": size}))
    loads = lambda name: {i.opcode for i in functions[name] if i.mnemonic in ("LD", "LDS")}
    assert loads("chase_own") == {"LDS"} and loads("stream_own") == {"LDS.128"}
    assert loads("chase_peer") == {"LD.E"} and loads("stream_peer") == {"LD.E.128"}
    assert any(i.mnemonic == "UCGABAR_ARV" for i in functions["meet_cluster_relaxed"])
    assert any(i.opcode.startswith("SYNCS.ARRIVE") for i in functions["signal_peer"]), "a remote mbarrier arrive"


@builds((clusters.TRADE_SOURCE, "90a", clusters.TRADE_TILE))
def test_the_register_trade_holds_both_setmaxnreg_forms_at_the_headline_kernels_counts(compile_cu):
    functions = sass.disassemble(compile_cu(clusters.TRADE_SOURCE, "90a", clusters.TRADE_TILE))
    for name in ("hand_over", "round_trip"):
        found = {i.opcode for i in functions[name] if i.mnemonic == "USETMAXREG"}
        assert all(any(op.startswith(form) for op in found) for form in clusters.SETMAXNREG_SASS), (name, found)


# --- the deck's cluster slides, on a record in the benchmark's shape ------------------------------

def cluster_record(doc: dict, ctas_of=lambda size, sms: sms, trade: bool = True) -> dict:
    """A machinery.cluster record for the fixture's GPU: a peer's load 200 cycles against 30, its
    stream 16 B/SM/clock against 128, barriers 45 (CTA), 90 (relaxed), 1,260 (ordered)."""
    from bench.core import registry
    sms = doc["device"]["sm_count"]
    timed = {"median": 1.0, "p10": 1.0, "p90": 1.0, "n": 10, "ci": [1.0, 1.0]}
    rows = [{"cluster": c, "ctas": ctas_of(c, sms), "chase_cycles": {"own": 30.0, "peer": 200.0 + c},
             "stream": {"own": {"bytes_per_sm_clock": 128.0, "time_ms": timed, "tbps": 30.0},
                        "peer": {"bytes_per_sm_clock": 16.0, "time_ms": timed, "tbps": 4.0}},
             "barrier_cycles": {"cta": 45.0, "cluster": 1260.0, "cluster_relaxed": 90.0},
             "signal_round_trip_cycles": 440.0} for c in clusters.CLUSTERS]
    bid = "machinery.cluster"
    return {"family": "machinery", "title": bid, **registry.discover()[bid].provenance(),
            "measured_at": "2026-11-26T00:00:00+00:00", "git_commit": "0" * 40, "status": "ok",
            "telemetry": doc["benchmarks"]["hbm.copy_scaling"]["telemetry"], "duration_s": 1.0,
            "params": {"clusters": list(clusters.CLUSTERS), "hops": 16384, "passes": 1024, "meetings": 4096, "reps": 10,
                       "buffer_bytes": 131072, "threads": 512, "ring_seed": 2026},
            "check": {"passed": True}, "rows": rows, **({"setmaxnreg": TRADE} if trade else {})}


# the register trade: 168 registers at launch, the producer down to 40, the consumers up to 232
TRADE = {"regs": {"entry": 168, "producer": 40, "consumer": 232}, "warpgroups": 3, "round_trips": 4096,
         "sass": {}, "hand_over_cycles": {"producer": 12.0, "consumers": 61.0, "consumers_slowest": 90.0},
         "round_trip_cycles": 33.0}


def _slides(doc, write_results, tmp_path):
    from tests.test_atlas import built
    return built(doc, write_results, tmp_path)[0]


def test_the_cluster_slide_follows_the_step_that_brings_in_clusters(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.cluster"] = cluster_record(fixture_doc)
    s = _slides(fixture_doc, write_results, tmp_path)
    titles = list(s)
    first = next(step for step in catalogue.STEPS if (step.best.tile or {}).get("CLUSTER_M", 1) > 1)
    performance = next(t for t in titles if t.endswith(f"{first.title} — Performance"))
    # after the step's own slides (its table one click on)
    assert titles[titles.index(performance) + 1:titles.index(performance) + 3] == [performance.replace("Performance", "Results"),
                                                                                  "Clusters Alone: What a Peer Costs"]
    slide = s["Clusters Alone: What a Peer Costs"]
    size = first.best.tile["CLUSTER_M"]
    # at the step's own cluster size: the peer's load 200 + size cycles against 30
    assert (f"A load from the peer's shared memory: {200 + size} cycles, {(200 + size) / 30:.1f}× the CTA's own (30); "
            "streamed, 16 bytes per SM per clock against 128 from its own.") in slide
    assert "Meeting the cluster: 90 cycles relaxed, 1,260 with its memory ordered (14×); the CTA alone, 45." in slide
    assert "SMs idle" not in slide, "every size covers every SM in this record"
    assert "Handing the producer's registers to the consumers (setmaxnreg, 168 to 232 a thread): 61 cycles, once a CTA." in slide
    assert "release 128 registers a thread; giving and taking back in a row costs 33 cycles." in slide
    backup = s["Clusters Alone — Every Size"]
    assert "| 8 |" in backup
    assert "the producer gives up registers to 40 a thread in 12 cycles, the consumers take 232 in 61 (slowest SM 90)" in backup


def test_a_record_from_before_the_register_trade_shows_no_setmaxnreg(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.cluster"] = cluster_record(fixture_doc, trade=False)
    s = _slides(fixture_doc, write_results, tmp_path)
    assert "setmaxnreg" not in s["Clusters Alone: What a Peer Costs"] + s["Clusters Alone — Every Size"]


def test_sizes_that_leave_sms_idle_are_named_together(fixture_doc, write_results, tmp_path):
    fixture_doc["benchmarks"]["machinery.cluster"] = cluster_record(
        fixture_doc, lambda size, sms: sms if size == 2 else sms - 12)
    slide = _slides(fixture_doc, write_results, tmp_path)["Clusters Alone: What a Peer Costs"]
    sms = fixture_doc["device"]["sm_count"]
    assert f"Clusters of 4 and 8 fit {sms - 12} CTAs at once: 12 of {sms} SMs idle." in slide


def test_without_the_record_the_talk_has_no_cluster_slide_and_the_backup_says_so(fixture_doc, write_results, tmp_path):
    del fixture_doc["benchmarks"]["machinery.cluster"]
    s = _slides(fixture_doc, write_results, tmp_path)
    assert "Clusters Alone: What a Peer Costs" not in s and "Clusters Alone — Every Size" not in s
    assert "clusters alone (machinery.cluster)" in s["Backup Slides"]
