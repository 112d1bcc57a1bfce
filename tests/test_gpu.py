"""Checks that need the GPU (run on the device: python -m pytest -m gpu)."""
import pytest

from bench.gemm import catalogue

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def device():
    from bench.core.device import collect_device
    return collect_device()


def test_timer_measures_kernel_time_not_launch_gaps():
    import cupy
    from bench.core.timing import time_gpu
    x = cupy.ones(1 << 26, dtype=cupy.float32)
    t = time_gpu(lambda: x.sum(), warmup=2, reps=20)
    assert t["n"] == 20 and 0 < t["p10"] <= t["median"] <= t["p90"] < 5


def test_batched_samples_time_one_run_each():
    """A sample of a batch of back-to-back runs reports one run's time, as a single run does."""
    import cupy
    from bench.core.timing import batch_filling, time_gpu
    x = cupy.ones(1 << 26, dtype=cupy.float32)
    single = time_gpu(lambda: x.sum(), warmup=2, reps=20)
    batch = batch_filling([lambda: x.sum()], 20 * single["median"])
    assert 10 <= batch <= 40
    batched = time_gpu(lambda: x.sum(), warmup=2, reps=10, batch=batch)
    assert batched["batch"] == batch and batched["n"] == 10
    assert 0.7 < batched["median"] / single["median"] < 1.3


def test_the_same_gemm_twice_in_single_run_turns_reads_the_same():
    """An A/A pair, as sweeps and atlases time their pairs (one run a turn, one turn a sample): the
    first of the turns must not pay for following the hold's idle GPU (it read 2-8% slower)."""
    import cupy
    from bench.core.timing import time_gpu_alternating
    from bench.gemm import cublas
    from bench.gemm.harness import SHAPE, operands
    ops = operands(SHAPE, "b_kmajor", "bf16")
    c1, c2 = (cupy.empty((SHAPE.m, SHAPE.n), cupy.float32) for _ in range(2))
    first, second = (lambda c=c: cublas.gemm(ops.a, ops.b, c, "b_kmajor", "bf16") for c in (c1, c2))
    time_gpu_alternating([first, second], warmup=20, reps=5)
    a, b = time_gpu_alternating([first, second], warmup=0, reps=60)
    assert 0.99 < a["median"] / b["median"] < 1.01, (a["median"], b["median"])


@pytest.mark.parametrize("precision", ["fp32", "tf32", "bf16"])
@pytest.mark.parametrize("layout", ["b_row", "b_kmajor"])
def test_cublas_check_passes_and_catches_errors(precision, layout):
    from bench.gemm import cublas
    from bench.gemm.harness import Operands, Shape
    ops = Operands(Shape(m=256, n=384, k=512), layout, precision)
    c = ops.poisoned_c()
    assert not ops.check(c)["passed"]                                       # nothing written yet
    cublas.gemm(ops.a, ops.b, c, layout, precision)
    good = ops.check(c)
    assert good["passed"], good
    c[3, 5] += 100.0 * abs(float(c[3, 5])) + 1.0
    c *= 1.01                                                               # a 1% error everywhere
    assert not ops.check(c)["passed"]


@pytest.mark.parametrize("bid", [b for b, (s, v) in catalogue.KERNELS.items()
                                 if s.min_cc and v.tile["STAGES"] == 0])
def test_the_deepest_ring_fills_the_shared_memory_of_this_gpu(bid, device):
    """RING_STAGES and SMEM_BYTES, as the kernel exports them: as many stages as fit, and no more."""
    import cupy
    from bench.gemm import launch
    step, variant = catalogue.KERNELS[bid]
    prepare = launch.prepare(step, variant, device)
    element = cupy.dtype(f"u{catalogue.ELEMENT_BYTES[step.precision]}")     # zeros: any type of the element's size
    a = cupy.zeros((4096, 16384), element)
    b = cupy.zeros((8192, 16384), element)
    c = cupy.zeros((4096, 8192), launch.OUTPUT_DTYPES[catalogue.output_of(variant.tile)])
    scales = ({"scales": (cupy.zeros((16384 // catalogue.SCALE_BLOCK, 4096), cupy.float32),
                          cupy.zeros((8192 // catalogue.SCALE_BLOCK, 16384 // catalogue.SCALE_BLOCK), cupy.float32))}
              if step.scaling == "blocks" else {})
    resources = prepare(a, b, c, **scales).resources
    stage = (variant.tile["BM"] + variant.tile["BN"]) * variant.tile["BK"] * catalogue.ELEMENT_BYTES[step.precision]
    used = resources["smem_dynamic_bytes"] + resources["smem_static_bytes"]
    assert resources["tile"]["STAGES"] * stage <= resources["smem_dynamic_bytes"]
    assert used <= device["smem_per_block_optin_bytes"] < used + stage


@pytest.mark.parametrize("bid", [b for b, (s, v) in catalogue.KERNELS.items() if s.scaling == "blocks"])
def test_block_scales_reach_every_row_and_block(bid, device):
    """A block-scaled kernel where A's scales differ up to 32-fold from row to row and block to block,
    and B's from block to block, so that a scale taken for the wrong row or block is far off; M and
    N past whole tiles, B's last block partial (2112 = 16.5 blocks of 128). Without scales it refuses."""
    import cupy
    from bench.gemm import launch
    from bench.gemm.cublaslt import block_scales
    from bench.gemm.harness import BLOCK, BlockScaledOperands, Refused, Shape, block_quantize
    step, variant = catalogue.KERNELS[bid]
    shape = Shape(1000, 2112, 1536)
    rng = cupy.random.default_rng(7)
    spread = lambda rows, cols: 2.0 ** rng.integers(0, 6, (rows, cols)).astype(cupy.float32)
    a = rng.standard_normal((shape.m, shape.k), dtype=cupy.float32) * cupy.repeat(spread(shape.m, shape.k // BLOCK), BLOCK, 1)
    b = rng.standard_normal((shape.n, shape.k), dtype=cupy.float32)
    b *= cupy.repeat(cupy.repeat(spread(-(-shape.n // BLOCK), shape.k // BLOCK), BLOCK, 0), BLOCK, 1)[:shape.n]
    ops = BlockScaledOperands(shape)
    (ops.a, ops.sfa), (ops.b, ops.sfb) = block_quantize(a, 1, BLOCK), block_quantize(b, BLOCK, BLOCK)
    ops.scaling = {"scales": block_scales(ops.sfa, ops.sfb)}
    prepare = launch.prepare(step, variant, device)
    c = ops.poisoned_c(catalogue.output_of(variant.tile))
    prepare(ops.a, ops.b, c, **ops.scaling).run()
    cupy.cuda.get_current_stream().synchronize()
    check = ops.check(c)
    assert check["passed"] and check["rel_error"] < check["tolerance"] / 4, check     # a misplaced scale is far off
    with pytest.raises(Refused):
        prepare(ops.a, ops.b, c)


@pytest.mark.parametrize("bid", [b for b, (s, v) in catalogue.KERNELS.items() if catalogue.output_of(v.tile) == "bf16"])
def test_a_bf16_c_is_written_whole_past_the_last_full_tile(bid, device):
    """A kernel writing C in BF16, at a shape whose last tiles over M and N are partial: every element
    written, within BF16's rounding of the float64 product; an FP32 C it refuses."""
    from bench.gemm import launch
    from bench.gemm.harness import Refused, Shape, checked_launch
    step, variant = catalogue.KERNELS[bid]
    prepare = launch.prepare(step, variant, device)
    _, check, ops, _ = checked_launch(Shape(1000, 2112, 1536), step.layout, step.precision, prepare, step.scaling, "bf16")
    assert check["passed"] and check["output"] == "bf16", check
    with pytest.raises(Refused, match="writes C in bf16"):
        prepare(ops.a, ops.b, ops.poisoned_c(), **ops.scaling)


@pytest.mark.parametrize("step", catalogue.SHAPE_STEPS, ids=lambda s: s.name)
def test_stream_k_sums_every_tile_cut_between_runs_once_and_in_order(step, device):
    """Stream-K with each of its tiles by M, at shapes whose runs cut tiles among several clusters
    (N = 2112, partial last tiles; K of hundreds of K-tiles): correct, and the same bits run after
    run, since an owner adds its helpers' sums in their order, not as they arrive."""
    import cupy
    from bench.gemm import launch
    from bench.gemm.harness import Shape, checked_launch
    prepare = launch.prepare_by_shape(step, device)
    for rows in (*(rows for rows, _ in step.rows_tiles), step.best.tile["BM"] * step.best.tile["CLUSTER_M"]):
        launch_, check, _, c = checked_launch(Shape(rows - 7, 2112, 7168), step.layout, step.precision, prepare)
        plan = launch_.resources["stream_k"]
        assert check["passed"], (rows, check)
        assert plan["helpers"] > plan["split_units"] > 0, plan          # several clusters share a tile
        first = c.copy()
        for _ in range(3):
            launch_.run()
        cupy.cuda.get_current_stream().synchronize()
        assert bool(cupy.array_equal(first, c)), f"M = {rows - 7}: the sums changed from run to run"


def test_ping_pong_consumers_take_tiles_in_turn_through_a_split_last_wave(device):
    """Ping-pong consumers where each CTA takes several tiles, its warpgroups in turn, and the last wave
    is split (1000 x 7000 x 1536: 148 cluster tiles, ragged at both edges, for 66 clusters): correct,
    and the same bits run after run (an owner's warpgroup adds its helper's sums once)."""
    import cupy
    from bench.gemm import launch
    from bench.gemm.harness import Shape, checked_launch
    step = catalogue.PINGPONG_BF16
    launch_, check, _, c = checked_launch(Shape(1000, 7000, 1536), step.layout, step.precision,
                                          launch.prepare_by_shape(step, device))
    plan = launch_.resources["split_wave"]
    assert check["passed"], check
    assert plan["full_waves"] >= 2 and 0 < plan["left"] and plan["split"] < plan["k_tiles"], plan
    first = c.copy()
    for _ in range(3):
        launch_.run()
    cupy.cuda.get_current_stream().synchronize()
    assert bool(cupy.array_equal(first, c)), "the sums changed from run to run"


@pytest.mark.parametrize("role", [role for role, _ in catalogue.ATLASES.values()])
def test_a_lone_wave_is_split_with_the_idle_clusters(role, device):
    """Each atlas kernel at a shape whose cluster tiles are fewer than the resident clusters (44
    units of 1024 x 2112 for 66 clusters): the plan splits that lone wave with the idle clusters as
    helpers, and the result is correct and the same bits run after run (each owner adds its helper's
    sums once, whenever they arrive)."""
    import cupy
    from bench.gemm import launch
    from bench.gemm.harness import Shape, checked_launch
    step = catalogue.step_of(catalogue.resolve(role))
    prepare = launch.prepare_by_shape(step, device)
    launch_, check, _, c = checked_launch(Shape(1024, 2112, 7168), step.layout, step.precision, prepare, step.scaling,
                                          catalogue.output_of(step.best.tile))
    plan = launch_.resources["split_wave"]
    assert check["passed"], check
    assert plan["full_waves"] == 0 and plan["left"] == plan["units"] < plan["clusters"], plan
    assert plan["split"] < plan["k_tiles"], plan
    first = c.copy()
    for _ in range(3):
        launch_.run()
    cupy.cuda.get_current_stream().synchronize()
    assert bool(cupy.array_equal(first, c)), "the sums changed from run to run"


@pytest.mark.parametrize("unroll", [1, 4])
def test_copy_kernel_copies_every_element_including_the_tail(device, unroll):
    import cupy
    from bench.core.cuda import load_kernel
    from bench.micro.hbm import SOURCE
    kernel = load_kernel(SOURCE, "copy_f4", device, {"UNROLL": unroll})
    n16 = 1000003                                     # not a multiple of any tile
    src = cupy.random.default_rng(0).standard_normal(4 * n16, dtype=cupy.float32)
    dst = cupy.full_like(src, cupy.nan)
    sm = cupy.zeros(7, dtype=cupy.uint32)
    kernel((7,), (96,), (src, dst, cupy.int64(n16), sm))
    assert bool(cupy.array_equal(src, dst))
    assert int(cupy.unique(sm).size) == 7


def test_the_clock_probe_reads_every_sm_at_a_clock_the_card_can_run(device):
    """Idle, and under a kernel on every SM, the probe's clock is one the card can run at: above
    NVML's idle clock floor, at most its maximum (with the global timer's slack)."""
    import cupy
    from bench.core import timing, worker
    spin = cupy.RawKernel(timing._SPIN_SRC, "spin")
    for blocks in (1, device["sm_count"]):
        t = timing.time_gpu(lambda: spin((blocks,), (1,), (cupy.int64(2_000_000),)), warmup=1, reps=10)
        assert 100 < t["sm_clock_mhz"] <= device["sm_clock_max_mhz"] * (1 + worker.CLOCK_SLACK)
    assert worker.globaltimer_tick_ns() < worker.COARSEST_TICK_NS      # read off this GPU, not the fallback
    probe = timing.clock_probe()
    probe.clear()
    probe.mark(0)
    spin((device["sm_count"],), (1,), (cupy.int64(20_000_000),))
    probe.mark(1)
    cupy.cuda.get_current_stream().synchronize()
    mhz, ns = probe.read()
    assert ns > 5e6 and mhz > 100


def test_energy_per_gemm_is_a_power_the_card_can_draw(device, monkeypatch):
    """A GEMM alone draws, by the energy counter (ticks 100 ms apart on the H200), more than the idle
    card and about its power limit at most; its joules are that power over its time, and its TFLOPS
    per watt its TFLOPS over that power. (NVML's power reading, a trailing average, still holds
    the idle card's power this soon after a rest.)"""
    from bench.gemm import harness
    from bench.core import timing
    ops = harness.operands(harness.SHAPE, "b_kmajor", "tf32")
    run, _ = harness.checked_cublas(ops)
    ms = timing.time_gpu(run, warmup=2, reps=5)["median"]     # from a rest: faster than the window runs
    monkeypatch.setattr(harness, "ENERGY_S", 1.0)              # a full run's window, in a quick run's tests too
    e = harness.energy(run, harness.SHAPE, ms)
    assert e and e["ticks"] >= 3 and e["window_s"] > 0.3
    assert 50 < e["watts"] <= 1.1 * device["power_limit_w"]
    assert e["joules"] == pytest.approx(e["watts"] * e["time_ms"] / 1e3)
    assert e["tflops_per_watt"] == pytest.approx(harness.SHAPE.flops / (e["time_ms"] * 1e-3) / 1e12 / e["watts"])


def test_an_a_a_pair_on_operands_that_fit_in_l2_reads_the_same_in_either_slot(device):
    """sweep.measure with a kernel as its own partner, where A, B and C fit in L2 (64 x 2112 x 7168
    BF16): the kernel's slot follows the partner and the partner's follows cuBLAS on B's transposed
    copy, so over one set of operands the slot after a run on the same operands read 14-19% faster
    (H200). The runs cycle through copies of the operands instead: each reads them from memory."""
    from bench.gemm import launch, sweep
    from bench.gemm.harness import Shape
    step = catalogue.streamed_for(catalogue.HEADLINE_BF16)
    prepare = launch.prepare_by_shape(step, device)
    row = sweep.measure(step, prepare, Shape(64, 2112, 7168), partner=("same", step, prepare))
    assert row["outcome"] == "correct" and row["operand_sets"] > 1, row
    assert 0.96 < row["same"]["ratio"] < 1.04, row["same"]
