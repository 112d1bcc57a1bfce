"""Every CUDA C++ kernel compiles for sm_90a with the project's one nvcc command."""
from pathlib import Path

import pytest

from bench.gemm import catalogue, launch
from bench.core import cuda, registry
from bench.micro import hbm, latency
from bench.gemm.catalogue import KERNELS, STEPS
from bench.core.sass import WGMMA
from tests.conftest import builds


def _measured_tile(src: Path) -> dict | None:
    """A file is compiled with constants it is measured with (and so shares that build): a GEMM's
    tile, else the first build a benchmark declares of it, else its own defaults."""
    tile = next((v.tile for s, v in KERNELS.values() if s.source == f"kernels/{src.name}" and v.tile), None)
    return tile or next((defines for b in registry.discover().values() for built, defines in b.builds
                         if Path(built).name == src.name and defines), None)


SM90_BUILDS = [(src, "90a", _measured_tile(src)) for src in sorted(cuda.KERNELS.glob("*.cu"))]
HBM_BUILDS = [(hbm.SOURCE, "90a", {"UNROLL": unroll})
              for unroll in sorted({row["unroll"] for row in hbm.configurations({"sm_count": 132, "max_threads_per_sm": 2048})})]
ARCHS = ["90a", "80", "89"]


@pytest.mark.parametrize("src,arch,defines", [pytest.param(*b, marks=builds(b), id=b[0].name) for b in SM90_BUILDS])
def test_compiles_for_sm90a(src: Path, arch, defines, compile_cu):
    assert compile_cu(src, arch, defines).stat().st_size > 0


@builds(*HBM_BUILDS)
def test_hbm_copy_compiles_with_every_unroll_it_is_run_with(compile_cu):
    for build in HBM_BUILDS:
        assert compile_cu(*build).exists()


@builds()
def test_compile_error_names_the_file(tmp_path, compile_cu):
    bad = tmp_path / "broken.cu"
    bad.write_text("__global__ void k() { this is not C++; }\n")
    with pytest.raises(RuntimeError, match="nvcc failed on broken.cu for sm_90a"):
        compile_cu(bad, "90a")


def test_arch_names():
    assert cuda.arch_of("9.0") == "90a" and cuda.arch_of("8.0") == "80"


def test_catalogue_ids_unique():
    ids = [v.id for s in STEPS for v in s.variants]
    assert len(ids) == len(set(ids)) and all(bid.startswith("gemm.") for bid in ids)
    assert len({s.key for s in STEPS}) == len(STEPS)


def _instruction_build(arch):
    return latency.INSTRUCTION_SOURCE, arch, {"OPS_PER_ITER": latency.OPS_PER_ITER}


@pytest.mark.parametrize("arch", [pytest.param("90a", marks=builds(_instruction_build("90a")))])
def test_a_cubins_sass_is_dumped_once_and_read_back_from_beside_it(arch, compile_cu, tmp_path, monkeypatch):
    """The run dumps each cubin's SASS in its compile threads (cuda.compile_all): a benchmark that
    disassembles it then reads the dump instead of running cuobjdump again, and finds the same."""
    import shutil
    import subprocess
    from bench.core import sass
    cubin = tmp_path / "kernel.cubin"
    shutil.copy(compile_cu(*_instruction_build(arch)), cubin)
    first = sass.disassemble(cubin)
    assert cubin.with_suffix(".sass").read_text().count("Function :") == len(first) > 0
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("cuobjdump ran again"))
    assert sass.disassemble(cubin) == first


@pytest.mark.parametrize("arch", [pytest.param(a, marks=builds(_instruction_build(a))) for a in ARCHS])
def test_sass_evidence_of_the_instruction_kernels(arch, compile_cu):
    """The timed loop of each variant holds the intended instruction once per operation, on
    Hopper and on the GPUs before it."""
    from bench.core import sass
    functions = sass.disassemble(compile_cu(*_instruction_build(arch)))
    for op in latency.OPERATIONS:
        for ilp in latency.ILPS:
            evidence = latency.sass_evidence(functions, op, ilp)
            assert evidence["primary_per_op"] == 1.0, (op, ilp, evidence)
    assert latency.sass_evidence(functions, "FADD", 1)["loop_instructions"] <= latency.OPS_PER_ITER + 4
    assert latency.sass_evidence(functions, "SINF", 1)["mix_per_op"]["MUFU.SIN"] == 1.0


@pytest.mark.parametrize("arch", [pytest.param(a, marks=builds((latency.MEMORY_SOURCE, a, None))) for a in ARCHS])
def test_pointer_chase_loop_holds_only_loads(arch, compile_cu):
    from bench.core import sass
    functions = sass.disassemble(compile_cu(latency.MEMORY_SOURCE, arch))
    for name, load in (("chase_l1", "LDG"), ("chase_l2", "LDG"), ("chase_shared", "LDS")):
        body = sass.histogram(sass.timed_loop(functions[name]))
        assert body[load] == 8 and sum(body.values()) - body[load] <= 3, (name, body)   # 8 loads + loop control


def test_random_cycle_visits_every_slot_and_walks_in_one_step():
    import numpy as np
    from bench.micro.latency import RandomCycle
    cycle = RandomCycle(1000, np.random.default_rng(0))
    seen, i = set(), 0
    for steps in range(1, 2501):
        seen.add(i)
        i = int(cycle.next[i])
        assert cycle.walk(0, steps) == i
    assert len(seen) == 1000


@pytest.mark.parametrize("bid", [pytest.param(b, marks=builds((cuda.ROOT / s.source, "90a", v.tile)), id=b)
                                 for b, (s, v) in KERNELS.items() if v.tile])
def test_cute_gemm_compiles_with_its_tile_and_holds_its_instructions(bid, compile_cu):
    """Each CuTe GEMM of the catalogue, compiled with the constants it is measured with, holds the
    tensor-core (HMMA / HGMMA) and TMA (UTMALDG) instructions its step requires."""
    from bench.core import sass
    step, variant = KERNELS[bid]
    cubin = compile_cu(cuda.ROOT / step.source, "90a", variant.tile)
    counts = sass.histogram(sass.disassemble(cubin)[step.function])
    assert step.sass and all(counts[op] for op in step.sass), (bid, dict(counts))
    wgmma = set(step.sass) & set(sass.WGMMA)
    if wgmma:                   # a K-tile is 128 bytes of K, four wgmmas of 32 bytes each, issued as one batch
        assert counts[wgmma.pop()] % 4 == 0
    mma = {i.opcode for i in sass.disassemble(cubin)[step.function] if i.mnemonic in sass.MMA}
    shape = f"64x{variant.tile['BN']}x{32 // catalogue.ELEMENT_BYTES[step.precision]}." if set(step.sass) & set(sass.WGMMA) else ""
    assert mma and all(shape in op and op.endswith("." + catalogue.SASS_TYPES[step.precision]) for op in mma), (bid, mma)


OTHER_TILES = [(step, tile) for step in catalogue.all_steps() if step.cute for tile in step.tiles[1:]]


@pytest.mark.parametrize("step,tile", [pytest.param(s, t, marks=builds((cuda.ROOT / s.source, "90a", t)),
                                                    id=f"{s.name}-{t['BM']}x{t['BN']}-cluster{t['CLUSTER_M']}") for s, t in OTHER_TILES])
def test_every_other_tile_of_a_best_kernel_compiles_with_wgmmas_of_its_width(step, tile, compile_cu):
    """The tiles tile_for picks per shape (small, by M, other widths) are built as the best's are:
    each compiles, and its wgmmas are as wide as its BN."""
    from bench.core import sass
    mma = {i.opcode for i in sass.disassemble(compile_cu(cuda.ROOT / step.source, "90a", tile))[step.function]
           if i.mnemonic in sass.MMA}
    assert mma and all(op.split(".")[1].startswith(f"64x{tile['BN']}x") for op in mma), mma


HEADLINE_STEP, HEADLINE_KERNEL = catalogue.KERNELS[catalogue.HEADLINE]     # a kernel with a TMA-store epilogue
WITHOUT_EPILOGUE_N = {k: v for k, v in HEADLINE_KERNEL.tile.items() if k != "EPILOGUE_N"}


@builds((cuda.ROOT / HEADLINE_STEP.source, "90a", WITHOUT_EPILOGUE_N))
def test_a_constant_the_catalogue_did_not_pass_is_a_compile_error(compile_cu):
    """Step files hold no silent defaults: a missing constant stops the build and says where it comes from."""
    with pytest.raises(RuntimeError, match="come from the step catalogue"):
        compile_cu(cuda.ROOT / HEADLINE_STEP.source, "90a", WITHOUT_EPILOGUE_N)


def test_tensor_map_box_is_the_tile():
    args = launch.tensor_map_args(256, 32)
    assert args["box"] == [32, 256] and args["swizzle"] == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert args["data_type"] == "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"
    assert launch.tensor_map_args(256, 32, "tf32")["data_type"] == "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32"
    assert launch.tensor_map_args(256, 64, "bf16")["box"] == [64, 256]
    with pytest.raises(ValueError, match="128 bytes"):
        launch.tensor_map_args(128, 64)
    with pytest.raises(ValueError, match="128 bytes"):
        launch.tensor_map_args(128, 32, "bf16")


@pytest.mark.parametrize("bid", [pytest.param(b, marks=builds((cuda.ROOT / s.source, "90a", v.tile)), id=b)
                                 for b, (s, v) in KERNELS.items() if set(s.sass) & set(WGMMA)])
def test_every_wgmma_kernel_has_a_main_loop_the_record_can_count(bid, compile_cu):
    """Each wgmma kernel's K-loop is found in its SASS (what its record counts as its main loop),
    and holds a K-tile's wgmmas: the four of a 128-byte K-tile, or a multiple."""
    from bench.core import sass
    step, variant = KERNELS[bid]
    loop = sass.mma_loop(sass.disassemble(compile_cu(cuda.ROOT / step.source, "90a", variant.tile))[step.function])
    assert loop, bid
    assert sum(i.mnemonic in WGMMA for i in loop) % 4 == 0


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_the_leaner_main_loop_issues_fewer_instructions_than_the_step_before(precision, compile_cu):
    """The lean-loop step's one idea, as the compiler built it: per wgmma, its main loop issues
    fewer instructions than the TMA-store step's, whose kernel it otherwise is."""
    from bench.core import sass
    lean = catalogue.KERNELS[f"gemm.lean_loop{'' if precision == 'tf32' else '_bf16'}"]
    staged = catalogue.KERNELS[catalogue.before(lean[1].id)]
    per_mma = []
    for step, variant in (staged, lean):
        loop = sass.mma_loop(sass.disassemble(compile_cu(cuda.ROOT / step.source, "90a", variant.tile))[step.function])
        per_mma.append(len(loop) / sum(i.mnemonic in WGMMA for i in loop))
    assert per_mma[1] < per_mma[0], per_mma
