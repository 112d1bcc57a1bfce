"""Trying a change to a kernel's constants (bench/gemm/trial.py): what it reads from the command line,
the tiles it builds from the catalogue's pick, and its one-line refusals."""
import json

import numpy as np
import pytest

from bench.core.device import NoGPU
from bench.gemm import catalogue, trial
from bench.gemm.harness import Shape


def test_a_shape_reads_as_m_by_n_by_k():
    assert trial.parse_shape("2048x7168x16384") == Shape(2048, 7168, 16384)
    assert trial.parse_shape(" 64×2112×7168 ") == Shape(64, 2112, 7168)


@pytest.mark.parametrize("text", ["2048x7168", "2048x0x16", "axbxc", "1x2x3x4", ""])
def test_a_malformed_shape_is_refused_naming_it(text):
    with pytest.raises(ValueError, match="MxNxK"):
        trial.parse_shape(text)


def test_a_variant_changes_constants_numbers_as_ints():
    assert trial.parse_variant("w192:BN=192,CLUSTER_M=1") == ("w192", {"BN": 192, "CLUSTER_M": 1})
    assert trial.parse_variant("bf16c:C_ELEMENT=bfloat16_t") == ("bf16c", {"C_ELEMENT": "bfloat16_t"})


@pytest.mark.parametrize("text", ["BN=192", "w:", "w:bn=192", "w:BN", "w:BN=", f"{trial.BASE}:BN=64", "1x:BN=64"])
def test_a_malformed_variant_is_refused(text):
    with pytest.raises(ValueError):
        trial.parse_variant(text)


def test_the_catalogues_pick_runs_first_and_each_variant_changes_only_its_constants():
    step = catalogue.step_of(catalogue.HEADLINE_FP8)
    shape = Shape(2048, 7168, 16384)
    picked = catalogue.tile_for(step, shape.m, shape.n, shape.k, 132)
    by_name = trial.tiles(catalogue.HEADLINE_FP8, shape, 132, {"w192": {"BN": 192}, "one": {"CLUSTER_M": 1, "STAGES": 3}})
    assert list(by_name) == [trial.BASE, "w192", "one"]
    assert by_name[trial.BASE] == picked
    assert by_name["w192"] == {**picked, "BN": 192}
    assert by_name["one"] == {**picked, "CLUSTER_M": 1, "STAGES": 3}


def test_a_variants_width_keeps_a_named_rings_bytes_unless_it_names_its_stages():
    """A block-scaled tile at M = 128 has a ring of named depth (5 stages at 128 columns): 64 columns hold
    more stages in the same bytes, 192 fewer, as catalogue.at_width keeps them; a variant's own STAGES
    stands; the deepest ring (0) stays the deepest."""
    picked = trial.tiles(catalogue.BLOCK_SCALED, Shape(128, 28672, 4096), 132, {})[trial.BASE]
    assert picked["BN"] == 128 and picked["STAGES"] == 5
    by_name = trial.tiles(catalogue.BLOCK_SCALED, Shape(128, 28672, 4096), 132,
                          {"w64": {"BN": 64}, "w192": {"BN": 192}, "own": {"BN": 192, "STAGES": 3}})
    assert by_name["w64"] == catalogue.at_width(picked, 64) and by_name["w64"]["STAGES"] == 6
    assert by_name["w192"]["STAGES"] == 4 and by_name["own"]["STAGES"] == 3
    deepest = trial.tiles(catalogue.HEADLINE_BF16, Shape(4096, 4096, 4096), 132, {"w192": {"BN": 192}})
    assert deepest["w192"]["STAGES"] == deepest[trial.BASE]["STAGES"] == 0


def test_a_kernel_that_is_not_its_steps_best_starts_from_its_own_tile():
    bench_id, (step, variant) = next((bid, sv) for bid, sv in catalogue.KERNELS.items()
                                     if sv[0].cute and sv[1] is not sv[0].best)
    assert trial.tiles(bench_id, Shape(4096, 4096, 4096), 132, {})[trial.BASE] == variant.tile


NUMBA = next(bid for bid, (step, _) in catalogue.KERNELS.items() if not step.cute)


@pytest.mark.parametrize("argv, said", [
    (["gemm.nothing", "--shape", "64x64x64"], "names no kernel"),
    (["headline", "--shape", "64x64"], "MxNxK"),
    (["headline", "--shape", "64x64x64", "--variant", "a:BN=64", "--variant", "a:BN=128"], "share a name"),
    ([NUMBA, "--shape", "64x64x64"], "numba"),
])
def test_bad_arguments_end_in_one_line_before_any_gpu_work(argv, said, capsys, monkeypatch):
    monkeypatch.setattr("bench.core.device.collect_device", lambda: pytest.fail("reached the GPU"))
    with pytest.raises(SystemExit) as e:
        trial.main(argv)
    assert e.value.code == 2
    assert said in capsys.readouterr().err.strip().splitlines()[-1]


def test_without_a_gpu_it_says_so_in_one_line(capsys, monkeypatch):
    def no_gpu():
        raise NoGPU("no GPU: the CUDA runtime reports 0 devices")
    monkeypatch.setattr("bench.core.device.collect_device", no_gpu)
    assert trial.main(["headline_fp8", "--shape", "2048x7168x16384", "--variant", "w192:BN=192"]) == 1
    assert capsys.readouterr().err.strip() == "no GPU: the CUDA runtime reports 0 devices"


def test_a_shapes_lines_give_each_run_against_the_base_and_mark_a_failed_check():
    ratio = lambda m: {"median": m, "ci": [m - 0.01, m + 0.01]}
    row = {"shape": [2048, 7168, 16384], "operand_sets": 1, "runs": {
        trial.BASE: {"tflops": 1248.8, "check": {"passed": True, "rel_error": 3.0e-3}, "over_base": ratio(1.0)},
        "w192": {"tflops": 1277.9, "check": {"passed": False, "rel_error": 0.5}, "over_base": ratio(0.972)}}}
    head, base, w192 = trial.lines(row)
    assert head == "2048x7168x16384"
    assert "1248.8 TFLOPS" in base and "1.000 [0.990, 1.010]" in base and "FAILED" not in base
    assert "0.972 [0.962, 0.982]" in w192 and w192.endswith("FAILED its check")
    assert "over 3 operand sets" in trial.lines({**row, "operand_sets": 3})[0]


def test_a_source_names_a_variant_and_a_file(tmp_path):
    copy = tmp_path / "gemm_14_fp8_blocks.cu"
    copy.write_text("// an edited copy")
    variants = {"skew": {"SKEW_MODE": 2}}
    assert trial.parse_sources([f"skew={copy}"], variants) == {"skew": str(copy)}
    with pytest.raises(ValueError, match="one of the variants"):
        trial.parse_sources([f"other={copy}"], variants)
    with pytest.raises(ValueError, match="no file"):
        trial.parse_sources([f"skew={tmp_path / 'missing.cu'}"], variants)


class _FakeOperands:
    """Operands small beside L2, so the runs cycle over copies of them (sweep.operand_sets)."""
    def __init__(self):
        self.a, self.b, self.scaling = np.zeros((64, 128), np.float32), np.zeros((256, 128), np.float32), {}

    def poisoned_c(self, output):
        return np.full((64, 256), np.nan, np.float32)

    def check(self, c):
        return {"passed": True, "rel_error": 1e-6}


def test_a_shape_checks_each_run_then_times_all_in_turns_over_the_operand_copies(monkeypatch):
    """measure()'s plumbing, the GPU's parts faked: every tile built and checked, cuBLAS added, the
    runs cycled over the operand sets, each run's time over the base's from the same turns."""
    from bench.gemm import harness, launch
    ops, built, ran, sources = _FakeOperands(), [], [], []

    def prepare(step, variant, device):
        built.append(variant.tile)
        sources.append(step.source)
        if variant.tile["BN"] == 96:
            return lambda *args, **scaling: None          # fed to the fake check, which refuses it
        return lambda a, b, c, **scaling: harness.Launch(lambda: ran.append((variant.tile["BN"], id(a))))

    def checked_launch(shape, layout, precision, prep, scaling, output):
        first = prep(ops.a, ops.b, ops.poisoned_c(output))
        if not first:
            raise harness.Refused("takes whole tiles only")
        return first, {"passed": True, "rel_error": 2e-6, "unwritten": 0}, ops, ops.poisoned_c(output)

    def time_in_turns(fns):
        for fn in fns * 2:
            fn()
        return [{"median": 1.0 + i, "samples": [1.0 + i] * 4, "ci": [1.0 + i] * 2} for i in range(len(fns))], {}, 1, 1

    monkeypatch.setattr(harness, "operands", lambda *args: ops)
    monkeypatch.setattr(harness, "checked_launch", checked_launch)
    monkeypatch.setattr(harness, "time_in_turns", time_in_turns)
    monkeypatch.setattr(launch, "prepare", prepare)
    monkeypatch.setattr("bench.gemm.cublas.gemm", lambda *args, **kwargs: ran.append(("cublas", id(args[0]))))
    step = catalogue.step_of(catalogue.HEADLINE_FP8)
    by_name = trial.tiles(catalogue.HEADLINE_FP8, Shape(64, 256, 128), 132, {"w192": {"BN": 192}, "w96": {"BN": 96}})
    row = trial.measure(step, Shape(64, 256, 128), by_name, {"l2_bytes": 60 << 20}, with_cublas=True,
                        sources={"w192": "probe/gemm_12_lean_loop.cu"})
    assert built == list(by_name.values())
    assert sources == [step.source, "probe/gemm_12_lean_loop.cu", step.source]    # w192 from its own file
    assert list(row["runs"]) == [trial.BASE, "w192", "cublas"] and row["operand_sets"] > 1
    assert row["refused"] == {"w96": "takes whole tiles only"}                 # a refused variant, the others timed
    assert trial.lines(row)[-1].split() == ["w96", "refused:", "takes", "whole", "tiles", "only"]
    assert [r["over_base"]["median"] for r in row["runs"].values()] == [1.0, 2.0, 3.0]
    assert row["operand_sets"] >= 6
    assert len({a for _, a in ran[-6:]}) == 6     # the timed runs, two rounds of three, each on the next set
    with pytest.raises(harness.Refused):              # the base refused: the whole shape is (main says so)
        trial.measure(step, Shape(64, 256, 128), {trial.BASE: by_name["w96"]}, {"l2_bytes": 60 << 20}, False)


@pytest.mark.gpu
def test_a_trial_times_the_catalogues_pick_beside_a_variant_and_cublas(tmp_path):
    rows = tmp_path / "rows.json"
    assert trial.main(["headline_fp8", "--shape", "1024x2048x4096", "--variant", "w192:BN=192", "--cublas",
                       "--json", str(rows)]) == 0
    [row] = json.loads(rows.read_text())
    assert list(row["runs"]) == [trial.BASE, "w192", "cublas"]
    assert all(run["check"]["passed"] for run in row["runs"].values())
    assert row["runs"][trial.BASE]["over_base"]["median"] == pytest.approx(1.0)
    assert row["tiles"]["w192"] == {**row["tiles"][trial.BASE], "BN": 192}


def _counters(us: float, ctas: int) -> dict:
    from bench.gemm.profile import METRICS
    return {**{m: 50.0 for m in METRICS}, **dict.fromkeys(trial.LAUNCH_METRICS, 0.0),
            "gpu__time_duration.sum": us * 1e3, "launch__grid_size": ctas, "sm__cycles_elapsed.avg.per_second": 1.755e9}


def test_counters_go_to_the_runs_that_launched_them_cublas_taking_its_split_k_reduction_too():
    ours, gemm, reduce = "gemm_lean_loop", "sm90_xmma_gemm_bf16bf16_tilesize64x128x64", "splitKreduce_kernel"
    launches = [(ours, _counters(40, 132)), (ours, _counters(38, 132)), (gemm, _counters(30, 96)), (reduce, _counters(2, 48)),
                (ours, _counters(80, 132)), (gemm, _counters(70, 132))]
    order = [{"shape": [128, 6144, 4096], "runs": [trial.BASE, "w128", "cublas"], "refused": {"w64": "takes whole tiles only"}},
             {"shape": [256, 6144, 4096], "runs": [trial.BASE, "cublas"]},
             {"shape": [100, 6144, 4096], "runs": [], "refused": {trial.BASE: "takes whole tiles only"}}]
    first, second, refused = trial.counters_by_run(launches, order, ours)
    assert trial.counter_lines(refused) == ["100x6144x4096", f"  {trial.BASE}  refused: takes whole tiles only"]
    assert [len(first["runs"][name]) for name in (trial.BASE, "w128", "cublas")] == [1, 1, 2]
    assert [c["kernel"] for c in first["runs"]["cublas"]] == [gemm, reduce]
    assert first["refused"] == {"w64": "takes whole tiles only"}
    assert second["runs"]["cublas"][0]["gpu__time_duration.sum"] == 70e3
    lines = trial.counter_lines(first)
    assert lines[0] == "128x6144x4096" and lines[1].split()[:5] == [trial.BASE, "40.0", "us", "132", "CTAs"]
    assert lines[4].split()[0] == "2.0" and lines[4].endswith(reduce)     # the reduction's line, its run named once
    assert "1755 MHz" in lines[1] and lines[-1].split()[:2] == ["w64", "refused:"]


@pytest.mark.parametrize("launches, said", [
    ([("gemm_lean_loop", {})], "no launch of cublas"),                           # cuBLAS's launch missing
    ([("sm90_xmma_gemm", {}), ("gemm_lean_loop", {})], "no launch of catalogue"),   # out of order
    ([("gemm_lean_loop", {}), ("k", {}), ("gemm_lean_loop", {})], "1 launches past the runs"),
])
def test_launches_that_do_not_follow_the_runs_are_refused_naming_what_is_missing(launches, said):
    with pytest.raises(RuntimeError, match=said):
        trial.counters_by_run(launches, [{"shape": [64, 64, 64], "runs": [trial.BASE] + (["cublas"] if len(launches) != 2 else [])}],
                              "gemm_lean_loop")


def test_counters_without_ncu_say_so_in_one_line_before_any_gpu_work(capsys, monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    monkeypatch.setattr("bench.core.device.collect_device", lambda: pytest.fail("reached the GPU"))
    assert trial.main(["headline_fp8", "--shape", "2048x7168x16384", "--counters"]) == 1
    assert capsys.readouterr().err.strip() == "ncu (Nsight Compute) is not on PATH: --counters reads its counters"


@pytest.mark.gpu
def test_counters_read_one_launch_of_each_run_and_cublas(tmp_path):
    rows = tmp_path / "rows.json"
    assert trial.main(["headline_fp8", "--shape", "1024x2048x4096", "--variant", "w192:BN=192", "--cublas",
                       "--counters", "--json", str(rows)]) == 0
    [row] = json.loads(rows.read_text())
    assert list(row["runs"]) == [trial.BASE, "w192", "cublas"]
    assert [len(row["runs"][name]) for name in (trial.BASE, "w192")] == [1, 1]
    assert all(c["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] > 0
               and c["gpu__time_duration.sum"] > 0 for launches in row["runs"].values() for c in launches)


class _Fault(Exception):
    """Stands in for cupy's error after a kernel has faulted."""


def test_a_run_that_faults_ends_the_trial_in_one_line_naming_it(capsys, monkeypatch, tmp_path):
    """A kernel that faults in its check: the trial names the run, says the context is lost, keeps the
    rows measured before it in --json's file, and ends with FAULTED (the process exits at once)."""
    from bench.core import cuda
    from bench.gemm import harness
    monkeypatch.setattr(trial, "_cuda_errors", lambda: (_Fault,))
    monkeypatch.setattr("bench.core.device.collect_device", lambda: {"sm_count": 132, "compute_capability": "9.0",
                                                                      "l2_bytes": 50 << 20})
    monkeypatch.setattr(cuda, "compile_all", lambda builds, arch: {})
    monkeypatch.setattr(harness, "keep_busy", lambda: None)
    done = {"shape": [1, 2, 3], "runs": {}}
    shapes = iter([done])

    def measure(*args, **kwargs):
        row = next(shapes, None)
        if row is None:
            raise trial.Faulted("w192 faulted in its check: an illegal address")
        return row
    monkeypatch.setattr(trial, "measure", measure)
    monkeypatch.setattr(trial, "lines", lambda row: [])
    out = tmp_path / "rows.json"
    assert trial.main(["headline_fp8", "--shape", "2048x7168x16384", "--shape", "1024x7168x16384",
                       "--variant", "w192:BN=192", "--json", str(out)]) == trial.FAULTED
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["1024x7168x16384: w192 faulted in its check: an illegal address; the CUDA context is lost, "
                   "so the trial stops here"]
    assert json.loads(out.read_text()) == [done]


def test_a_fault_in_a_check_is_named_by_its_run(monkeypatch):
    """_checked_runs: cupy's error from a run's check becomes Faulted, naming that run."""
    from bench.gemm import harness, launch
    monkeypatch.setattr(trial, "_cuda_errors", lambda: (_Fault,))
    monkeypatch.setattr(harness, "operands", lambda *args: type("Ops", (), {"a": None, "b": None, "scaling": {}})())
    monkeypatch.setattr("bench.gemm.sweep.operand_sets", lambda a, b, c_bytes, l2: [(a, b)])
    monkeypatch.setattr(launch, "prepare", lambda *args: None)

    def checked_launch(*args):
        raise _Fault("an illegal address")
    monkeypatch.setattr(harness, "checked_launch", checked_launch)
    step = catalogue.step_of(catalogue.resolve("headline_fp8"))
    by_name = trial.tiles(step.best.id, trial.parse_shape("256x256x256"), 132, {})
    with pytest.raises(trial.Faulted, match="catalogue faulted in its check: an illegal address"):
        trial._checked_runs(step, trial.parse_shape("256x256x256"), by_name, {"l2_bytes": 50 << 20}, False, None)
