"""A GPU that is not Hopper: the Hopper-only benchmarks are skipped with their reason,
everything else builds for it, and the deck says so on the skipped kernels' slides."""
import copy
import os

import pytest

import build
from bench.gemm import catalogue
from bench.core import cuda, registry, runner
from slides.device import PER_SM_FLOP_PER_CLK
from tests.conftest import builds

# Fixture devices as CUDA and NVML would describe them (figures from NVIDIA's data sheets).
OTHER_GPUS = {
    "8.0": {"name": "NVIDIA A100-SXM4-80GB", "slug": "nvidia-a100-sxm4-80gb", "compute_capability": "8.0",
            "sm_count": 108, "sm_clock_max_mhz": 1410, "sm_clock_mhz": 1410, "mem_clock_max_mhz": 1593,
            "mem_bus_width_bits": 5120, "l2_bytes": 41943040, "smem_per_block_optin_bytes": 166912,
            "memory_bytes": 85097971712, "max_threads_per_sm": 2048, "regs_per_sm": 65536,
            "smem_per_sm_bytes": 167936, "power_limit_w": 400.0},
    "8.9": {"name": "NVIDIA L40S", "slug": "nvidia-l40s", "compute_capability": "8.9",
            "sm_count": 142, "sm_clock_max_mhz": 2520, "sm_clock_mhz": 2520, "mem_clock_max_mhz": 9001,
            "mem_bus_width_bits": 384, "l2_bytes": 100663296, "smem_per_block_optin_bytes": 101376,
            "memory_bytes": 48305799168, "max_threads_per_sm": 1536, "regs_per_sm": 65536,
            "smem_per_sm_bytes": 102400, "power_limit_w": 350.0},
}
# The catalogue's Hopper kernels (every track), their sweeps and atlases, the tuner, settling run
# and bursts that use them, the BF16 and FP8 peers that run beside them, and Hopper's machinery measured alone.
HOPPER_ONLY = ({bid for bid, (s, v) in catalogue.KERNELS.items() if s.min_cc == catalogue.HOPPER}
               | {s.sweep_id for s in catalogue.SWEPT if s.min_cc == catalogue.HOPPER}
               | {catalogue.atlas_id(precision) for precision in catalogue.ATLASES}
               | {"settle.headline", "burst.gemm", "peers.fastcu", "peers.deepgemm"}
               | {bid for bid in registry.discover() if bid.startswith(("machinery.", "tune."))})


def on_gpu(doc: dict, cc: str) -> dict:
    """The fixture results as a run on the fixture device of compute capability ``cc``
    would leave them: the runner's own skip records for what cannot run there."""
    doc = copy.deepcopy(doc)
    device = {**doc["device"], **OTHER_GPUS[cc]}
    doc["device"] = device
    for bid, bench in registry.discover().items():
        reason = runner.skip_reason(bench, device)
        if reason:
            doc["benchmarks"][bid] = runner.skipped(bench, reason)
    return doc


@pytest.mark.parametrize("cc", OTHER_GPUS)
def test_only_the_hopper_kernels_are_skipped(cc):
    device = OTHER_GPUS[cc]
    benches = registry.discover()
    skipped = {bid: runner.skip_reason(b, device) for bid, b in benches.items()}
    without_peer = {bid for bid, b in benches.items() if b.peer and not os.environ.get(b.peer)}   # a checkout's absence
    assert {bid for bid, why in skipped.items() if why} == {bid for bid in skipped if bid in HOPPER_ONLY
                                                           or bid.startswith("multigpu.") or bid in without_peer}
    # a node's benchmark of Hopper's kernels (the overlapped GEMM) names the GPU before the GPU count
    hopper = {bid for bid in skipped if bid in HOPPER_ONLY or benches[bid].min_cc}
    assert all(why == f"needs compute capability 9.0+, this GPU is {cc}" for bid, why in skipped.items() if bid in hopper)
    # a machine of one GPU: the node's other benchmarks say so (the fixture devices carry no gpu_count)
    assert all(why == "needs 2+ GPUs, this machine has 1" for bid, why in skipped.items()
               if bid.startswith("multigpu.") and bid not in hopper)


def _non_hopper_builds():
    """(source, defines) of every kernel a GPU below Hopper runs: each tile a CuTe GEMM is measured
    with, and every other kernel with its own defaults."""
    benches = registry.discover()
    tiled = [(cuda.ROOT / step.source, v.tile) for step in catalogue.STEPS if step.cute and not step.min_cc
             for v in step.variants]
    tiled_sources = {src for src, _ in tiled}
    # the GPU tests' record names every kernel (it follows the code they ran): not a list of what runs here
    plain = sorted({cuda.ROOT / s for b in benches.values() if not b.min_cc and b.id != "checks.gpu_tests"
                    for s in b.sources if s.endswith(".cu")} - tiled_sources)
    return tiled + [(src, None) for src in plain]


@pytest.mark.parametrize("src,arch,defines", [pytest.param(src, arch, defines, marks=builds((src, arch, defines)),
                                                          id=f"{src.name}-{i}-{arch}")
                                             for arch in ("80", "89") for i, (src, defines) in enumerate(_non_hopper_builds())])
def test_everything_else_compiles_for_ampere_and_ada(src, arch, defines, compile_cu):
    assert compile_cu(src, arch, defines).stat().st_size > 0


@pytest.mark.parametrize("cc", OTHER_GPUS)
def test_deck_of_a_non_hopper_gpu_says_why_kernels_are_missing(cc, fixture_doc, write_results, tmp_path):
    doc = on_gpu(fixture_doc, cc)
    ctx = build.build(write_results(doc), tmp_path)
    deck = (tmp_path / "slides.md").read_text()
    name = OTHER_GPUS[cc]["name"]
    assert f"# CUDA Performance Study\n\n## {name} ({'Ampere' if cc == '8.0' else 'Ada Lovelace'}, sm_{cc.replace('.', '')})" in deck
    assert f"{OTHER_GPUS[cc]['sm_count']} SMs" in deck
    why = f"needs compute capability 9.0+, this GPU is {cc}"
    for step in ctx["gemm"].steps:
        skipped = all(v["id"] in HOPPER_ONLY for v in step.variants)
        for slide in ("Diagram", "Performance"):
            text = deck.split(f"# {step.slide_title} — {slide}")[1].split("\n---")[0]
            assert (why in text) == skipped, (step["title"], slide)
        measured_table = f"# {step.slide_title} — Results" in deck        # a measured step's table, one click on
        assert measured_table != skipped, step["title"]
    # the headline and the peaks are this GPU's
    head = ctx["gemm"].headline
    assert head["to"]["id"] == "gemm.cute_smem_k32"
    tf32 = ctx["peaks"].by["tf32"]
    assert tf32["tflops_max_clock"] == pytest.approx(
        OTHER_GPUS[cc]["sm_count"] * PER_SM_FLOP_PER_CLK[cc]["tf32"] * OTHER_GPUS[cc]["sm_clock_max_mhz"] / 1e6)
