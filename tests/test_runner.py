"""The runner, with benchmarks that need no GPU: isolation, time limits, merge
by id, and the command line."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bench.gemm import benchmarks, catalogue
from bench.core import cuda, registry, results, runner, schema, stats, timing
from tests.conftest import ROOT

FAKE_DEVICE = {"name": "Fake GPU", "slug": "fake-gpu", "compute_capability": "9.0", "sm_count": 4,
               "sm_clock_max_mhz": 1000, "sm_clock_mhz": 1000, "mem_clock_max_mhz": 1000,
               "mem_bus_width_bits": 256, "l2_bytes": 1 << 20, "smem_per_block_optin_bytes": 1 << 16,
               "memory_bytes": 1 << 30, "max_threads_per_sm": 2048, "regs_per_sm": 65536,
               "smem_per_sm_bytes": 1 << 17, "power_limit_w": 300}
SOFTWARE = dict.fromkeys(schema.SOFTWARE_FIELDS)


@pytest.fixture(scope="module")
def fakes():
    return registry.discover(modules=("tests.fake_benchmarks",))


def test_faults_and_hangs_are_recorded_and_other_families_survive(fakes, tmp_path):
    out = tmp_path / "r.yaml"
    kept = {"family": "other", "status": "ok", "source_hash": "x", "telemetry": {"before": None, "after": None},
            "gbps": 1.0}
    results.merge(out, FAKE_DEVICE, SOFTWARE, {"other.earlier": kept})
    chosen = registry.select(fakes, ["fake.ok", "fake.raises", "fake.hangs", "fake.dies", "fake.wrong"])
    runner.run_all(chosen, out, FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    doc = schema.load(out)
    b = doc["benchmarks"]
    assert b["other.earlier"] == kept
    assert b["fake.ok"]["status"] == "ok" and b["fake.ok"]["gbps"] == 123.0
    assert b["fake.ok"]["check"]["passed"] is True
    assert b["fake.raises"]["status"] == "failed" and "RuntimeError: kernel exploded" in b["fake.raises"]["reason"]
    assert b["fake.hangs"]["status"] == "failed" and b["fake.hangs"]["reason"].startswith("timeout")
    assert b["fake.hangs"]["duration_s"] < 30
    assert b["fake.dies"]["status"] == "failed" and "exited with code 3" in b["fake.dies"]["reason"]
    assert b["fake.wrong"]["status"] == "failed" and b["fake.wrong"]["reason"].startswith("check failed")
    assert b["fake.wrong"]["time_ms"]["median"] == 1.0        # measured, and shown as failed
    for rec in b.values():
        assert rec["source_hash"]


def test_a_rerun_that_measured_nothing_keeps_the_measured_record(fakes, tmp_path):
    out = tmp_path / "r.yaml"
    runner.run_all(registry.select(fakes, ["fake.ok", "fake.wrong"]), out, FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    measured = schema.load(out)["benchmarks"]["fake.ok"]
    # the same id fails before measuring (a build, a missing peer): the measured record stays, the attempt noted
    attempt = {**measured, "status": "failed", "reason": "building the peer failed", "measured_at": "later"}
    del attempt["check"]
    b = results.merge(out, FAKE_DEVICE, SOFTWARE, {"fake.ok": attempt})["benchmarks"]
    assert {k: v for k, v in b["fake.ok"].items() if k != "last_attempt"} == measured
    assert b["fake.ok"]["last_attempt"] == {"status": "failed", "reason": "building the peer failed", "measured_at": "later",
                                            "git_commit": measured["git_commit"]}
    assert schema.load(out)["benchmarks"]["fake.ok"]["last_attempt"]["status"] == "failed"
    # a skip is kept beside it the same way; a measurement that fails its check replaces it, as does an ok one
    skipped = {"family": "fake", "status": "skipped", "reason": "no checkout of the peer", "source_hash": "x"}
    assert results.merge(out, FAKE_DEVICE, SOFTWARE, {"fake.ok": skipped})["benchmarks"]["fake.ok"]["last_attempt"]["status"] == "skipped"
    wrong = schema.load(out)["benchmarks"]["fake.wrong"]
    assert results.merge(out, FAKE_DEVICE, SOFTWARE, {"fake.ok": wrong})["benchmarks"]["fake.ok"] == wrong
    assert results.merge(out, FAKE_DEVICE, SOFTWARE, {"fake.ok": measured})["benchmarks"]["fake.ok"] == measured
    # nothing measured before: the failure is the record
    assert results.merge(out, FAKE_DEVICE, SOFTWARE, {"fake.new": skipped})["benchmarks"]["fake.new"] == skipped


def test_a_skipped_benchmark_does_not_split_the_worker(fakes, monkeypatch, tmp_path):
    """A benchmark skipped between two that run (a peer not fetched, a node's benchmark on one GPU)
    is said first; the two share one worker, which a fresh one would have to warm up again."""
    batches = []

    def worker(batch, device, workdir, log_dir, starting):
        batches.append([b.id for b in batch])
        for bench in batch:
            starting(bench)
            yield bench, {"status": "ok"}
    monkeypatch.setattr(runner, "_worker", worker)
    monkeypatch.setattr(runner, "skip_reason", lambda bench, device: "no checkout" if bench.id == "fake.raises" else None)
    chosen = registry.select(fakes, ["fake.ok", "fake.raises", "fake.wrong"])
    assert [b.id for b in chosen] == ["fake.ok", "fake.raises", "fake.wrong"]
    begun = []
    ran = [(b.id, r["status"]) for b, r in runner.run_session(chosen, FAKE_DEVICE, tmp_path, starting=lambda b: begun.append(b.id))]
    assert ran == [("fake.raises", "skipped"), ("fake.ok", "ok"), ("fake.wrong", "ok")]
    assert begun == ["fake.raises", "fake.ok", "fake.wrong"] and batches == [["fake.ok", "fake.wrong"]]


def test_skipped_records_are_written_with_the_next_and_kept_when_the_run_stops(fakes, monkeypatch, tmp_path):
    """A merge rewrites the whole results file (about 2 s for a full run's): the skipped records,
    said first, are written in the same merge as the first record measured, not one merge each;
    a run stopped in its first benchmark still writes them."""
    def worker(batch, device, workdir, log_dir, starting):
        for bench in batch:
            starting(bench)
            if stop_in == bench.id:
                raise runner.Interrupted(signal.SIGTERM)
            yield bench, {"family": "fake", "status": "ok", "source_hash": "h", "duration_s": 1.0,
                          "telemetry": {"before": None, "after": None}}
    merges = []
    real_merge = results.merge
    monkeypatch.setattr(results, "merge", lambda out, device, software, records, node=None:
                        merges.append(sorted(records)) or real_merge(out, device, software, records, node))
    monkeypatch.setattr(runner, "_worker", worker)
    monkeypatch.setattr(runner, "skip_reason", lambda bench, device: "no checkout" if bench.id != "fake.ok" else None)
    chosen = registry.select(fakes, ["fake.ok", "fake.raises", "fake.wrong"])
    stop_in = None
    runner.run_all(chosen, tmp_path / "r.yaml", FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    assert merges == [["fake.ok", "fake.raises", "fake.wrong"]]
    merges.clear()
    stop_in = "fake.ok"
    with pytest.raises(runner.Interrupted):
        runner.run_all(chosen, tmp_path / "stopped.yaml", FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    assert merges == [["fake.ok", "fake.raises", "fake.wrong"]]
    b = schema.load(tmp_path / "stopped.yaml")["benchmarks"]
    assert b["fake.raises"]["status"] == b["fake.wrong"]["status"] == "skipped" and b["fake.ok"]["status"] == "failed"


def test_a_remeasured_kernel_keeps_its_profile_while_it_launches_what_was_profiled():
    """python -m bench --profile is a run of its own; a later re-measure of the same kernel (a change
    to the harness, say) keeps its counters, a kernel built or launched otherwise drops them."""
    resources = {"regs_per_thread": 168, "grid": [132], "tile": {"BM": 128, "BN": 256}, "sass": {"instructions": 900}}
    profile = {"metrics": {"m": 1.0}, "names": {"m": "M"}, "of": results.launch_fingerprint(resources)}
    old = {"status": "ok", "resources": resources, "profile": profile, "tflops": 1.0}
    again = {"status": "ok", "resources": {**resources, "tile": {"BN": 256, "BM": 128}}, "tflops": 2.0}
    assert results.kept_or_new(old, again) == {**again, "profile": profile}
    for launched in ({**resources, "regs_per_thread": 154}, {**resources, "grid": [66]}, None):
        rebuilt = {"status": "ok", "resources": launched, "tflops": 2.0}
        assert "profile" not in results.kept_or_new(old, rebuilt)
    assert "profile" not in results.kept_or_new({**old, "resources": None, "profile": {**profile, "of": None}},
                                                {"status": "ok", "tflops": 2.0})


def test_the_profiled_launch_is_the_benchmarks_own(monkeypatch):
    """python -m bench --profile launches each catalogue kernel once for ncu, with its step's scaling and
    its own output type, as its benchmark does: a BF16-C or block-scaled kernel given an FP32 C and no
    scales refuses to launch (three did, 2026-11-30)."""
    from bench.core import device
    from bench.gemm import harness, launch, profile
    calls = []
    monkeypatch.setattr(device, "collect_device", lambda: {"sm_count": 132})
    monkeypatch.setattr(launch, "prepare", lambda step, variant, dev: (step, variant))
    monkeypatch.setattr(harness, "checked_launch", lambda shape, layout, precision, prepared, *rest: calls.append((prepared, rest)))
    for bid, (step, variant) in catalogue.KERNELS.items():
        profile.target(bid)
        assert calls.pop() == ((step, variant), (step.scaling, catalogue.output_of(variant.tile))), bid


def test_each_record_is_written_as_soon_as_it_exists(fakes, tmp_path):
    out = tmp_path / "r.yaml"
    seen = []
    chosen = registry.select(fakes, ["fake.ok", "fake.raises"])
    runner.run_all(chosen, out, FAKE_DEVICE, SOFTWARE,
                   log=lambda msg, **k: seen.append(set(schema.load(out)["benchmarks"]) if out.exists() else set()))
    # before the second benchmark starts, the first is already on disk
    assert {"fake.ok"} in seen


def test_gpu_too_old_is_skipped_with_reason(tmp_path):
    bench = registry.Benchmark(id="fake.hopper_only", run=lambda ctx: {}, sources=(), min_cc=(9, 0))
    _, rec = next(runner.run_session([bench], {**FAKE_DEVICE, "compute_capability": "8.0"}, tmp_path))
    assert rec["status"] == "skipped" and "needs compute capability 9.0+" in rec["reason"]


def test_merge_refuses_invalid_or_foreign_file(tmp_path):
    out = tmp_path / "r.yaml"
    out.write_text("not: [valid\n")
    with pytest.raises(schema.ResultsError, match="not valid YAML"):
        results.merge(out, FAKE_DEVICE, SOFTWARE, {})
    assert out.read_text() == "not: [valid\n"
    results.merge(tmp_path / "other.yaml", {**FAKE_DEVICE, "name": "Other GPU"}, SOFTWARE, {})
    with pytest.raises(schema.ResultsError, match="holds results for 'Other GPU'"):
        results.merge(tmp_path / "other.yaml", FAKE_DEVICE, SOFTWARE, {})


def test_select_by_id_family_and_glob(fakes):
    ids = lambda pats: [b.id for b in registry.select(fakes, pats)]
    assert ids(["fake.ok"]) == ["fake.ok"]
    assert set(ids(["fake"])) >= {"fake.ok", "fake.raises", "fake.hangs"}
    assert ids(["fake.r*"]) == ["fake.raises"]
    with pytest.raises(KeyError, match="no benchmark or family matches nope"):
        registry.select(fakes, ["nope"])


def test_the_run_goes_in_the_order_the_compiles_keep_up_with():
    """Every benchmark runs, once; those that need no build first; and each one next needs no more
    new builds than any that comes after it (the compiles run beside the run, in its order), and of
    as many no more that include CuTe (nvcc's slow builds), but for those that need a worker of
    their own, which come last. The micro-benchmarks run while the first CuTe kernel compiles."""
    from bench.__main__ import build_order
    from bench.core.cuda import build_key
    chosen = list(registry.discover().values())
    ordered = build_order(chosen)
    assert sorted(b.id for b in ordered) == sorted(b.id for b in chosen)
    own = [b for b in ordered if b.env]
    assert own and ordered[-len(own):] == own
    ordered = ordered[:-len(own)]
    cute = lambda source: "<cute/" in "".join((ROOT / p).read_text() for p in (source, *cuda.local_includes(source)))
    built = set()
    for i, bench in enumerate(ordered):
        def new(b):
            fresh = {build_key(*x) for x in b.builds} - built
            return len(fresh), sum(cute(source) for source, _ in fresh)
        assert all(new(bench) <= new(later) for later in ordered[i + 1:]), bench.id
        built |= {build_key(*x) for x in bench.builds}
    assert not ordered[0].builds and ordered[-1].builds
    first_cute = next(i for i, b in enumerate(ordered) if any(cute(source) for source, _ in b.builds))
    assert {"l2.bandwidth_scaling", "latency.memory"} <= {b.id for b in ordered[:first_cute]}


def test_real_registry_has_both_families():
    benches = registry.discover()
    assert {b.family for b in benches.values()} >= {"gemm", "hbm"}
    assert "gemm.cublas_tf32_b_row" in benches and "hbm.copy_scaling" in benches


def test_summarize_percentiles():
    s = stats.summarize([5.0, 1.0, 2.0, 3.0, 4.0])
    # five samples are too few for 95%: the interval is all of them, at the 1 - 2/2^5 they hold
    assert s == {"median": 3.0, "p10": 1.4, "p90": 4.6, "n": 5, "ci": [1.0, 5.0], "ci_level": 0.9375}
    with pytest.raises(ValueError):
        stats.summarize([1.0, float("nan")])


def test_the_interval_of_a_median_holds_it_as_often_as_it_says():
    # ten samples: the 2nd and the 9th (1 - 2 * 11/1024 = 97.9%); the 3rd and 8th would hold it 89%
    assert stats.median_interval(10) == (1, 8, 1 - 2 * 11 / 1024)
    rng = np.random.default_rng(1)
    for n in (6, 10, 25):
        lo, hi, coverage = stats.median_interval(n)
        assert coverage >= stats.CONFIDENCE
        ranked = np.sort(rng.exponential(size=(20000, n)), axis=1)     # a skewed law, median ln 2
        held = np.mean((ranked[:, lo] <= np.log(2)) & (np.log(2) <= ranked[:, hi]))
        assert abs(held - coverage) < 0.01


def test_intervals_that_overlap_are_a_tie():
    a, b, c = (stats.summarize(x) for x in ([1.0] * 3 + [2.0] * 7, [1.9] * 10, [3.0] * 10))
    assert stats.overlap(a, b) and stats.overlap(b, a) and not stats.overlap(a, c)



def test_cli_list():
    proc = subprocess.run([sys.executable, "-m", "bench", "--list"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "hbm.copy_scaling" in proc.stdout and "gemm.cublas_tf32_b_kmajor" in proc.stdout


@pytest.mark.parametrize("target", ["--out", "results/"])
def test_cli_without_gpu_says_so_and_touches_nothing(target, tmp_path):
    out = tmp_path / "never.yaml"
    snapshot = lambda: {p.name: p.read_bytes() for p in (ROOT / "results").iterdir()}
    before = snapshot()
    proc = subprocess.run([sys.executable, "-m", "bench", *(["--out", str(out)] if target == "--out" else [])],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("python -m bench: no GPU") and "results/ is unchanged" in lines[0]
    assert not out.exists() and snapshot() == before


def test_cli_unknown_benchmark():
    proc = subprocess.run([sys.executable, "-m", "bench", "--only", "nope"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and "no benchmark or family matches nope" in proc.stderr


def test_telemetry_summary_keeps_to_the_timed_loops():
    from bench.core.device import TelemetrySampler
    sampler = TelemetrySampler(enabled=False)
    sample = lambda mhz: {"sm_clock_mhz": mhz, "power_w": 100.0, "temperature_c": 40, "throttle_reasons": []}
    sampler.samples = [(1.0, sample(1980)), (2.0, sample(1500)), (3.0, sample(1600)), (4.0, sample(1980))]
    timed = sampler.summary([(1.5, 3.5)])
    assert timed["window"] == "timed loops" and timed["samples"] == 2 and timed["sm_clock_mhz"]["median"] == 1550
    assert sampler.summary()["window"] == "whole benchmark"


def _ncu_csv(launches) -> str:
    """ncu's CSV as --csv --page details writes it: a row a metric of each launch, after its own lines."""
    from bench.gemm.profile import METRICS
    header = '"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"'
    rows = [f'"{i}","{name}","Command line profiler metrics","{m}","","{base + j:,}"'
            for i, (name, base) in enumerate(launches) for j, m in enumerate(METRICS)]
    return "==PROF== Connected to process\n" + "\n".join([header, *rows]) + "\n"


def test_ncu_csv_is_read_by_metric_name_launch_by_launch():
    from bench.gemm.profile import METRICS, first_launches, ncu_command, parse_launches
    found = parse_launches(_ncu_csv([("gemm_cute_mma", 1000), ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<0>()", 2000)]))
    assert found == [("gemm_cute_mma", {m: 1000.0 + i for i, m in enumerate(METRICS)}),
                     ("void deep_gemm::sm90_fp8_gemm_1d2d_impl<0>()", {m: 2000.0 + i for i, m in enumerate(METRICS)})]
    cmd = ncu_command(first_launches("regex:^gemm_cute_mma$", 10), ["--target", "gemm.cute_mma_tf32"], ROOT / "x.csv")
    assert cmd[:3] == ["ncu", "--clock-control", "none"] and "regex:^gemm_cute_mma$" in cmd
    assert cmd[cmd.index("--launch-count") + 1] == "10" and cmd[-2:] == ["--target", "gemm.cute_mma_tf32"]


def test_a_peers_launches_are_paired_shape_by_shape_and_land_in_its_record(monkeypatch):
    """Each shape's launch of the peer's kernel, then ours (none where ours refused the shape), onto the
    record's shapes; a run that lost a peer launch, or a record of other shapes, fails."""
    from bench.gemm import profile
    from bench.peers import deepgemm
    ours = deepgemm.STEP.function
    shapes = deepgemm.SHAPES
    launches = [x for i in range(len(shapes)) for x in ([("deep_gemm::fp8", 90 + i), (ours, 80 + i)] if i != 2 else
                                                         [("deep_gemm::fp8", 90 + i)])]
    monkeypatch.setattr(profile, "run_ncu", lambda *a, **k: profile.parse_launches(_ncu_csv(launches)))
    got = profile.profile_peer("peers.deepgemm", {})
    assert [g["shape"] for g in got] == [s.dims for s in shapes]
    assert [g["peer"] for g in got] == [{m: 90.0 + i + j for j, m in enumerate(profile.METRICS)} for i in range(len(shapes))]
    assert ["ours" in g for g in got] == [i != 2 for i in range(len(shapes))]
    record = {"source_hash": "abc", "shapes": [{"shape": s.dims, "deepgemm": {}} for s in reversed(shapes)]}
    profiled = profile.with_peer_profile(record, got, {"measured_at": "t", "git_commit": "c"})
    assert [s["profile"] for s in profiled["shapes"]] == [{k: v for k, v in g.items() if k != "shape"} for g in reversed(got)]
    assert profiled["profile"]["of"] == "abc" and profiled["profile"]["names"] == profile.METRICS
    with pytest.raises(RuntimeError, match="not the ones profiled"):
        profile.with_peer_profile({**record, "shapes": record["shapes"][1:]}, got, {})
    with pytest.raises(RuntimeError, match="holds no shapes \\(status skipped\\)"):
        profile.with_peer_profile({"source_hash": "abc", "status": "skipped"}, got, {})
    monkeypatch.setattr(profile, "run_ncu", lambda *a, **k: profile.parse_launches(_ncu_csv(launches[1:])))
    with pytest.raises(RuntimeError, match="without the peer's before it"):
        profile.profile_peer("peers.deepgemm", {})
    monkeypatch.setattr(profile, "run_ncu", lambda *a, **k: profile.parse_launches(_ncu_csv(launches[:-2])))
    with pytest.raises(RuntimeError, match="4 launches of the peer's kernel for 5 shapes"):
        profile.profile_peer("peers.deepgemm", {})


def test_gemm_settles_until_two_rounds_agree(monkeypatch):
    """The harness times a GEMM only once its last two rounds are within SETTLED_DRIFT; a GEMM that
    never settles is timed after SETTLE_MAX_S, marked so; the settling rounds leave no timed span
    behind (the telemetry "during" is the timed rounds')."""
    import time
    from bench.gemm import harness
    clock = [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])

    def fake_rounds(values):
        it = iter(values)

        def one_round(runs, *, warmup, reps, batch, turns):
            clock[0] += harness.ROUND_S
            timing.TIMED_SPANS.append((clock[0] - harness.ROUND_S, clock[0]))
            return [{"median": next(it)}]
        monkeypatch.setattr(harness, "time_gpu_alternating", one_round)

    drift = [3.0 * (1 + 0.03 * i) for i in range(3)]        # 3% slower every round
    fake_rounds(drift + [3.3, 3.3 * 1.002, 3.3])      # then two rounds in a row within 0.2%
    spans = len(timing.TIMED_SPANS)
    s = harness.settle([None], batch=1, turns=1)
    assert s["settled"] and s["rounds"] == len(drift) + 2 and s["drift"] < harness.SETTLED_DRIFT
    assert len(timing.TIMED_SPANS) == spans

    fake_rounds([3.0 * (1 + 0.05 * (i % 2)) for i in range(100)])   # 5% apart, round to round
    s = harness.settle([None], batch=1, turns=1)
    assert not s["settled"] and harness.SETTLE_MAX_S <= s["seconds"] < harness.SETTLE_MAX_S + harness.ROUND_S


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting to be reaped."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("bid,why", [("fake.nan", "gbps: expected a finite number >= 0, got nan"),
                                     ("fake.negative_time", "time_ms.median: expected a finite number >= 0"),
                                     ("fake.list_is_a_string", "rows: expected a list")])
def test_a_record_the_file_cannot_hold_is_recorded_as_failed_and_the_run_goes_on(bid, why, fakes, tmp_path):
    out = tmp_path / "r.yaml"
    runner.run_all(registry.select(fakes, [bid, "fake.ok"]), out, FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    b = schema.load(out)["benchmarks"]
    assert b[bid]["status"] == "failed" and "record is not valid" in b[bid]["reason"] and why in b[bid]["reason"]
    assert b["fake.ok"]["status"] == "ok"


def test_undecodable_and_huge_stderr_gives_a_short_reason_and_a_full_log(fakes, tmp_path, capfd):
    out = tmp_path / "r.yaml"
    runner.run_all(registry.select(fakes, ["fake.noisy_death", "fake.ok"]), out, FAKE_DEVICE, SOFTWARE,
                   log=lambda *a, **k: None)
    b = schema.load(out)["benchmarks"]
    reason = b["fake.noisy_death"]["reason"]
    assert reason.startswith("process exited with code 1: ") and "\ufffd" in reason
    assert len(reason) <= runner.REASON_CHARS and "\n" not in reason and b["fake.ok"]["status"] == "ok"
    log = tmp_path / "r.logs" / "fake.noisy_death.stderr"
    assert log.stat().st_size > 2_000_000
    assert len(capfd.readouterr().err) <= runner.ECHO_BYTES + 1000


def test_nothing_a_worker_started_outlives_it(fakes, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_PID_DIR", str(tmp_path))
    out = tmp_path / "r.yaml"
    runner.run_all(registry.select(fakes, ["fake.leaves_grandchildren"]), out, FAKE_DEVICE, SOFTWARE,
                   log=lambda *a, **k: None)
    assert schema.load(out)["benchmarks"]["fake.leaves_grandchildren"]["status"] == "ok"
    for name in ("in_group", "own_session"):
        pid = int((tmp_path / name).read_text())
        assert not _alive(pid), name


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stopped_runner_ends_its_worker_and_keeps_what_it_measured(signum, tmp_path):
    out = tmp_path / "r.yaml"
    env = {**os.environ, "FAKE_PID_DIR": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.run_fakes", str(out), "fake.ok", "fake.outlasts_the_runner",
                             "fake.quick_00"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not (tmp_path / "worker").exists() or not (tmp_path / "hang_child").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)
    proc.send_signal(signum)
    assert proc.wait(timeout=30) == 128 + signum
    for name in ("worker", "hang_child"):
        assert not _alive(int((tmp_path / name).read_text())), name
    b = schema.load(out)["benchmarks"]
    assert b["fake.ok"]["status"] == "ok" and "fake.quick_00" not in b
    assert b["fake.outlasts_the_runner"]["status"] == "failed"
    assert b["fake.outlasts_the_runner"]["reason"] == f"interrupted: the runner got {signal.Signals(signum).name}"


def test_two_runners_on_one_file_lose_nothing(tmp_path):
    out = tmp_path / "r.yaml"
    halves = [[f"fake.quick_{i:02d}" for i in range(first, 12, 2)] for first in (0, 1)]
    procs = [subprocess.Popen([sys.executable, "-m", "tests.run_fakes", str(out), *ids], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for ids in halves]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert set(schema.load(out)["benchmarks"]) == {f"fake.quick_{i:02d}" for i in range(12)}


def test_two_processes_merging_record_by_record_lose_nothing(tmp_path):
    """The read-merge-write of two processes at full speed, 40 records each."""
    out = tmp_path / "r.yaml"
    code = ("import sys; from pathlib import Path; from bench.core import results; "
            "from tests.test_runner import FAKE_DEVICE, SOFTWARE\n"
            "for i in range(40):\n"
            "    rec = {'family': 'fake', 'status': 'skipped', 'reason': 'x', 'source_hash': 'h'}\n"
            "    results.merge(Path(sys.argv[1]), FAKE_DEVICE, SOFTWARE, {f'fake.{sys.argv[2]}_{i:02d}': rec})")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(out), who], cwd=ROOT, stderr=subprocess.PIPE, text=True)
             for who in ("a", "b")]
    for proc in procs:
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert len(schema.load(out)["benchmarks"]) == 80


@pytest.mark.parametrize("bid,why", [("fake.huge", "MiB, more than the 16 MiB a results file may hold"),
                                     ("fake.deep", "nested deeper than the 32 levels"),
                                     ("fake.surrogate", "holds text that is not UTF-8")])
def test_a_record_that_would_make_the_file_unloadable_is_recorded_as_failed(bid, why, fakes, tmp_path):
    """The writer keeps the loader's limits: the run never leaves a file that build.py and the next
    run refuse, and goes on after such a record."""
    out = tmp_path / "r.yaml"
    runner.run_all(registry.select(fakes, [bid, "fake.ok"]), out, FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    b = schema.load(out)["benchmarks"]
    assert b[bid]["status"] == "failed" and "its record cannot be written" in b[bid]["reason"], b[bid]["reason"]
    assert why in b[bid]["reason"] and b["fake.ok"]["status"] == "ok"


def test_a_write_that_fails_keeps_the_record_and_says_where(fakes, tmp_path, monkeypatch):
    import errno
    out = tmp_path / "r.yaml"
    real = results.write_atomic

    def full_disk(path, text):
        if path == out:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, text)
    monkeypatch.setattr(results, "write_atomic", full_disk)
    with pytest.raises(runner.WriteFailed) as e:
        runner.run_all(registry.select(fakes, ["fake.ok"]), out, FAKE_DEVICE, SOFTWARE, log=lambda *a, **k: None)
    kept = tmp_path / "r.logs" / "fake.ok.record.json"
    assert f"cannot write {out} (No space left on device); fake.ok's record is kept in {kept}" == str(e.value)
    assert json.loads(kept.read_text())["gbps"] == 123.0


def _cli(argv, fakes, monkeypatch, capsys, device=FAKE_DEVICE):
    """python -m bench in this process, on a fake GPU, running the fake benchmarks."""
    from bench import __main__ as cli
    from bench.core import device as devices
    monkeypatch.setattr(devices, "collect_device", lambda: {**device, "gpu_count": 1})
    monkeypatch.setattr(devices, "collect_software", lambda: SOFTWARE)
    code = cli.main(["--only", "fake.ok", *argv])
    return code, capsys.readouterr().err


def test_a_commit_told_that_is_not_a_hash_is_refused_before_anything_runs(fakes, tmp_path, monkeypatch, capsys):
    """$BENCH_GIT_COMMIT goes into every record it writes: text that is not a commit's 40 hex digits
    (a copy of .git/HEAD, "ref: refs/heads/main") stops the run with one line; a hash, dirty or not, runs."""
    out = tmp_path / "r.yaml"
    monkeypatch.setenv(registry.GIT_COMMIT_ENV, "ref: refs/heads/main")
    code, err = _cli(["--out", str(out)], fakes, monkeypatch, capsys)
    assert code == 2 and not out.exists()
    assert err.strip().splitlines() == [f"python -m bench: {registry.GIT_COMMIT_ENV} is 'ref: refs/heads/main', not a commit's "
                                        "40 hex digits (git rev-parse HEAD in the checkout the tree was copied from); "
                                        "nothing was run and results/ is unchanged."]
    for told in ("a" * 40, "0123456789" * 4 + registry.DIRTY):
        monkeypatch.setenv(registry.GIT_COMMIT_ENV, told)
        assert _cli(["--out", str(out)], fakes, monkeypatch, capsys)[0] == 0
        assert schema.load(out)["benchmarks"]["fake.ok"]["git_commit"] == told


def test_a_failed_rerun_fails_the_run_though_the_earlier_record_is_kept(fakes, tmp_path, monkeypatch, capsys):
    from bench import __main__ as cli
    from bench.core import device as devices
    monkeypatch.setattr(devices, "collect_device", lambda: {**FAKE_DEVICE, "gpu_count": 1})
    monkeypatch.setattr(devices, "collect_software", lambda: SOFTWARE)
    argv = ["--only", "fake.fails_when_told", "--out", str(tmp_path / "r.yaml")]
    assert cli.main(argv) == 0
    monkeypatch.setenv("FAKE_FAIL", "1")
    assert cli.main(argv) == 1
    assert capsys.readouterr().out.splitlines()[-1].endswith(
        "0 of 1 benchmarks did not fail; failed: fake.fails_when_told (the earlier record kept for fake.fails_when_told)")
    assert schema.load(tmp_path / "r.yaml")["benchmarks"]["fake.fails_when_told"]["status"] == "ok"


def test_stale_reruns_only_the_records_whose_code_changed_or_that_are_missing(fakes, tmp_path, monkeypatch, capsys):
    """python -m bench --stale: of the selected benchmarks, those without a record, or whose record's
    source hash is not what their code hashes to today; none left, nothing runs and the file stays."""
    from bench import __main__ as cli
    from bench.core import device as devices
    from tests.conftest import dump_results
    monkeypatch.setattr(devices, "collect_device", lambda: {**FAKE_DEVICE, "gpu_count": 1})
    monkeypatch.setattr(devices, "collect_software", lambda: SOFTWARE)
    out = tmp_path / "r.yaml"
    both = ["--stale", "--only", "fake.ok", "fake.fails_when_told", "--out", str(out)]

    def stale_run() -> str:
        capsys.readouterr()
        assert cli.main(both) == 0
        return capsys.readouterr().out

    assert cli.main(["--only", "fake.ok", "--out", str(out)]) == 0
    assert "1 stale or missing: fake.fails_when_told" in stale_run()          # missing
    doc = schema.load(out)
    doc["benchmarks"]["fake.ok"]["source_hash"] = "0" * 16                     # as if its code had changed
    out.write_text(dump_results(doc))
    assert "1 stale or missing: fake.ok" in stale_run()
    after = schema.load(out)["benchmarks"]
    assert after["fake.ok"]["source_hash"] == fakes["fake.ok"].source_hash()
    assert after["fake.fails_when_told"] == doc["benchmarks"]["fake.fails_when_told"]   # current: not rerun
    kept = out.read_bytes()
    assert stale_run().splitlines()[-1] == "every selected record is current: nothing to run"
    assert out.read_bytes() == kept


@pytest.mark.parametrize("where", ["under a file", "under /proc", "a folder"])
def test_an_output_that_cannot_be_written_is_refused_before_anything_runs(where, fakes, tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder.yaml").mkdir()
    out = {"under a file": tmp_path / "file" / "r.yaml", "under /proc": Path("/proc/bench-results/r.yaml"),
           "a folder": tmp_path / "folder.yaml"}[where]
    code, err = _cli(["--out", str(out)], fakes, monkeypatch, capsys)
    assert code == 1 and err.startswith(f"python -m bench: cannot write {out} (") and err.count("\n") == 1, err
    assert err.strip().endswith("nothing was run.")


def test_a_corrupt_output_is_one_line(fakes, tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.yaml"
    out.write_text("schema_version: 1\ndevice: [unclosed\n  - x: {\n")
    code, err = _cli(["--out", str(out)], fakes, monkeypatch, capsys)
    assert code == 1 and err.startswith(f"python -m bench: {out}: not valid YAML") and err.count("\n") == 1, err
    assert out.read_text().startswith("schema_version: 1\ndevice: [unclosed")


def test_a_node_file_is_never_merged_as_a_gpus_file(node_doc, tmp_path):
    """A node's file written by a one-GPU run (--out naming it) would lose its node section."""
    from tests.conftest import dump_results
    out = tmp_path / "n-x2.yaml"
    out.write_text(dump_results(node_doc))
    with pytest.raises(schema.ResultsError, match="a node's results file, where this run writes one GPU's"):
        results.merge(out, node_doc["device"], node_doc["software"], {})
    assert schema.load(out)["node"] == node_doc["node"]


def test_nothing_a_peers_build_started_outlives_the_run(fakes, tmp_path, monkeypatch, capsys):
    """A peer's build runs in the runner's process, outside any worker: it is ended with the run."""
    monkeypatch.setenv("FAKE_PID_DIR", str(tmp_path))
    from bench import __main__ as cli
    from bench.core import device as devices
    monkeypatch.setattr(devices, "collect_device", lambda: {**FAKE_DEVICE, "gpu_count": 1})
    monkeypatch.setattr(devices, "collect_software", lambda: SOFTWARE)
    assert cli.main(["--only", "fake.with_peer_build", "--out", str(tmp_path / "r.yaml")]) == 0
    pid = int((tmp_path / "peer_build").read_text())
    time.sleep(0.1)
    assert not _alive(pid), "the peer build's process outlived the run"


def test_a_merge_reads_the_file_again_only_when_another_process_replaced_it(tmp_path, monkeypatch):
    out = tmp_path / "r.yaml"
    rec = lambda gbps: {"family": "x", "status": "ok", "source_hash": "h", "telemetry": {"before": None, "after": None},
                        "gbps": gbps}
    results.merge(out, FAKE_DEVICE, SOFTWARE, {"x.a": rec(1.0)})
    loads = []
    real = schema.load
    monkeypatch.setattr(schema, "load", lambda path: loads.append(path) or real(path))
    results.merge(out, FAKE_DEVICE, SOFTWARE, {"x.b": rec(2.0)})
    assert loads == []                                     # what it wrote last is what the file holds
    other = subprocess.run([sys.executable, "-c", "import sys; from bench.core import results; from tests.test_runner import "
                            "FAKE_DEVICE, SOFTWARE; results.merge(sys.argv[1], FAKE_DEVICE, SOFTWARE, {'x.c': {'family': 'x', "
                            "'status': 'ok', 'source_hash': 'h', 'telemetry': {'before': None, 'after': None}}})", str(out)],
                           cwd=ROOT, capture_output=True, text=True)
    assert other.returncode == 0, other.stderr
    merged = results.merge(out, FAKE_DEVICE, SOFTWARE, {"x.d": rec(4.0)})
    assert loads == [out] and set(merged["benchmarks"]) == {"x.a", "x.b", "x.c", "x.d"}


def test_a_merge_keeps_the_records_of_benchmarks_no_longer_registered(tmp_path):
    out = tmp_path / "r.yaml"
    rec = {"family": "x", "status": "ok", "source_hash": "h", "telemetry": {"before": None, "after": None}}
    results.merge(out, FAKE_DEVICE, SOFTWARE, {"x.kept": rec, "x.removed": rec})
    merged = results.merge(out, FAKE_DEVICE, SOFTWARE, {"x.new": rec})
    assert set(merged["benchmarks"]) == set(schema.load(out)["benchmarks"]) == {"x.kept", "x.removed", "x.new"}


def test_the_gpu_tests_record_follows_the_code_they_ran():
    """A change to a kernel, or to a module the GPU tests import (or one it imports), stales their outcome."""
    from bench.core.registry import discover
    sources = discover()["checks.gpu_tests"].sources
    assert {"tests/test_gpu.py", "bench/gemm/launch.py", "bench/gemm/cublas.py", "bench/gemm/cublaslt.py"} <= set(sources)
    assert catalogue.step_of(catalogue.HEADLINE).source in sources
    # the kernels they load are built up front, in parallel, as a GEMM record's are: every variant, and
    # each step's best with each of its tiles (tiles by M, small tiles, widths), which the tests run too
    from bench.gemm import sweep
    built = {cuda.build_key(*b) for b in discover()["checks.gpu_tests"].builds}
    for step, variant in catalogue.KERNELS.values():
        assert {cuda.build_key(*b) for b in (*benchmarks.builds(step, variant), *sweep.tile_builds(step))} <= built, variant.id


def test_the_gpu_tests_record_counts_each_outcome_of_the_junit_report(tmp_path):
    from bench import checks
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase name="a"/><testcase name="b"><failure message="x"/></testcase>'
                      '<testcase name="c"><error message="y"/></testcase><testcase name="d"><skipped/></testcase>'
                      '</testsuite></testsuites>')
    assert checks.outcomes(checks.cases(report)) == {"passed": ["a"], "failed": ["b", "c"], "skipped": ["d"]}


def test_the_gpu_tests_record_names_the_slowest_tests_with_their_seconds(tmp_path):
    from bench import checks
    report = tmp_path / "r.xml"
    report.write_text('<testsuites><testsuite><testcase name="a" time="0.5"/><testcase name="b" time="12.25"/>'
                      '<testcase name="c"/><testcase name="d" time="3"/></testsuite></testsuites>')
    assert checks.slowest(checks.cases(report), 2) == [{"name": "b", "seconds": 12.25}, {"name": "d", "seconds": 3.0}]


def test_a_measured_clock_above_the_cards_maximum_by_more_than_the_probes_error_is_refused():
    from bench.core import worker
    device = {"sm_clock_max_mhz": 1980}
    clock = lambda mhz, seconds=1.0, samples=10: {"mean": mhz, "min": mhz, "max": mhz, "samples": samples, "seconds": seconds}
    tick = 32.0                                                        # the H200's global timer
    assert worker.clock_error(clock(1980 * (1 + worker.CLOCK_SLACK)), device, tick) is None
    assert "above the card's maximum of 1980 MHz" in worker.clock_error(clock(2010), device, tick)
    # the H100's 1,995 MHz over memory-bound work (474 samples in 2.67 s): 0.76% over, the probe's error 0.10%
    said = worker.clock_error(clock(1994.6, seconds=2.67, samples=474), device, tick)
    assert "0.74% above the card's maximum of 1980 MHz, past the probe's error of 0.10%" in said
    # a timer of a microsecond's tick over 20 us samples: 10% of error, the same clock passes
    assert worker.clock_error(clock(1994.6, seconds=0.02, samples=1000), device, 1000.0) is None
    assert worker.clock_error(clock(2010, seconds=0.001), device, tick) is None      # too short to tell
    assert worker.clock_error(None, device, tick) is None


def test_a_benchmark_that_needs_its_own_environment_gets_a_worker_of_its_own(fakes, tmp_path):
    """DeepGEMM's extension needs libstdc++ preloaded: its benchmark runs in a process started with
    that environment, the benchmarks around it in processes without it."""
    order = [fakes["fake.pid"], fakes["fake.with_env"], fakes["fake.ok"]]
    got = {bench.id: rec for bench, rec in runner.run_session(order, FAKE_DEVICE, tmp_path)}
    assert got["fake.with_env"]["loader"] == "preloaded" and got["fake.pid"]["loader"] == ""
    assert got["fake.with_env"]["pid"] != got["fake.pid"]["pid"]
    assert got["fake.ok"]["check"]["passed"]


def test_the_commit_is_the_projects_own_and_says_dirty(tmp_path, monkeypatch):
    """A record names its project's commit: not that of a checkout the project sits inside, and
    with -dirty where a tracked file differs from it."""
    git = lambda *a: subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, text=True).stdout.strip()
    git("init", "-q")
    (tmp_path / "f").write_text("a")
    git("add", "f")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.delenv(registry.GIT_COMMIT_ENV, raising=False)
    (tmp_path / "project").mkdir()
    monkeypatch.setattr(registry, "ROOT", tmp_path / "project")       # a copy inside another checkout
    assert registry.git_commit() is None
    monkeypatch.setattr(registry, "ROOT", tmp_path)
    assert registry.git_commit() == git("rev-parse", "HEAD")
    (tmp_path / "f").write_text("b")
    assert registry.git_commit() == git("rev-parse", "HEAD") + registry.DIRTY
    monkeypatch.setenv(registry.GIT_COMMIT_ENV, "abc")                 # a copy without .git is told its commit
    assert registry.git_commit() == "abc"


def test_a_first_quick_run_is_estimated_from_a_full_runs_durations_by_its_share(tmp_path):
    """With no quick run behind it, a quick run's estimates are a full run's durations times
    QUICK_SHARE; a quick run's own durations, where the file has them, as they are."""
    from bench.__main__ import QUICK_SHARE, estimated_durations
    full = schema.load(ROOT / "tests" / "fixtures" / "h100.yaml")["benchmarks"]
    quick = schema.load(ROOT / "tests" / "fixtures" / "h200-quick.yaml")["benchmarks"]
    some = next(bid for bid, rec in full.items() if rec.get("duration_s") and not rec.get("quick"))
    assert estimated_durations({}, ROOT / "tests" / "fixtures" / "h100.yaml", quick=True)[some] == \
        pytest.approx(QUICK_SHARE * full[some]["duration_s"])
    assert estimated_durations({}, ROOT / "tests" / "fixtures" / "h100.yaml", quick=False)[some] == full[some]["duration_s"]
    own = next(bid for bid, rec in quick.items() if rec.get("duration_s"))
    assert estimated_durations(quick, tmp_path / "none.yaml", quick=True)[own] == quick[own]["duration_s"]


def test_the_time_left_is_said_to_within_a_twentieth_of_itself_from_a_minute_up():
    """Whole minutes from ten up; below, minutes and tens of seconds (whole minutes said 3 min for
    the 141-147 s a refresh had left: 20-28% over); under a minute, seconds."""
    assert runner.left_said(900) == "about 15 min left" and runner.left_said(600) == "about 10 min left"
    assert runner.left_said(599) == "about 10 min left" and runner.left_said(146) == "about 2 min 30 s left"
    assert runner.left_said(64) == "about 1 min left" and runner.left_said(54) == "about 54 s left"
    for seconds in range(60, 1200, 7):
        said = runner.left_said(seconds).split()
        back = int(said[1]) * 60 + (int(said[3]) if said[2] == "min" and len(said) > 4 else 0)
        assert abs(back - seconds) <= max(5, 0.05 * seconds), (seconds, said)


def test_the_time_left_follows_this_runs_pace_by_family():
    """Estimates from a run half as fast: a family's own pace once PACED of it have finished, else the
    run's once PACED have; the first benchmark (the worker's start, the first warm-up) is no pace; a
    benchmark the last run did not time takes the mean so far."""
    assert runner.PACED == 3
    bench = lambda bid: registry.Benchmark(id=bid, run=lambda ctx: {}, sources=())
    estimates = {**{f"gemm.{x}": 10.0 for x in "abcde"}, **{f"hbm.{x}": 4.0 for x in "abc"}}
    done = [("hbm.a", 9.0), ("gemm.a", 5.0), ("gemm.b", 6.0), ("gemm.c", 4.0), ("hbm.b", 1.0)]
    left = runner.time_left(estimates, [bench("gemm.d"), bench("gemm.e"), bench("hbm.c"), bench("new.x")], done)
    overall = (5.0 + 6.0 + 4.0 + 1.0) / (30.0 + 4.0)
    assert left == pytest.approx(5.0 + 5.0 + overall * 4.0 + 25.0 / 5)
    # two after the first: too few for a pace, as estimated
    assert runner.time_left(estimates, [bench("gemm.d")], done[:3]) == 10.0
    assert runner.time_left(estimates, [bench("gemm.b")], []) == 10.0        # nothing done yet: as estimated


def test_a_benchmarks_builds_are_done_before_its_clock_starts(monkeypatch):
    """The first benchmark of a run to need nvcc would carry the compiles under way beside it in its
    duration, and the next run's progress line would expect them of it again: its builds come first."""
    from bench.core import worker
    built = []

    def slow_builds(builds, arch):
        built.append((tuple(builds), arch))
        time.sleep(0.5)
        return {}
    monkeypatch.setattr(worker, "compile_all", slow_builds)
    bench = registry.Benchmark(id="fake.built", run=lambda ctx: {"check": {"passed": True}}, sources=(),
                               builds=(("kernels/transpose.cu", {"TILE": 32}),))
    rec = worker.run_one(bench, {"compute_capability": "9.0", "sm_clock_max_mhz": 1980})
    assert built == [(bench.builds, "90a")] and rec["status"] == "ok" and rec["duration_s"] < 0.5
    worker.run_one(registry.Benchmark(id="fake.unbuilt", run=lambda ctx: {}, sources=()), {"sm_clock_max_mhz": 1980})
    assert len(built) == 1          # nothing to build: no compiler called
