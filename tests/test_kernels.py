"""Every CUDA C++ kernel compiles for sm_90a with the project's one nvcc command."""
from pathlib import Path

import pytest

from bench import cuda
from bench.progression import STEPS


@pytest.mark.parametrize("src", sorted(cuda.KERNELS.glob("*.cu")), ids=lambda p: p.name)
def test_compiles_for_sm90a(src: Path, tmp_path, monkeypatch):
    monkeypatch.setattr(cuda, "CACHE", tmp_path)
    cubin = cuda.compile_cu(src, "90a")
    assert cubin.stat().st_size > 0


def test_hbm_copy_compiles_with_every_unroll_it_is_run_with(tmp_path, monkeypatch):
    from bench import hbm
    monkeypatch.setattr(cuda, "CACHE", tmp_path)
    for unroll in {row["unroll"] for row in hbm.configurations({"sm_count": 132, "max_threads_per_sm": 2048})}:
        assert cuda.compile_cu(hbm.SOURCE, "90a", {"UNROLL": unroll}).exists()


def test_compile_error_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda, "CACHE", tmp_path)
    bad = tmp_path / "broken.cu"
    bad.write_text("__global__ void k() { this is not C++; }\n")
    with pytest.raises(RuntimeError, match="nvcc failed on broken.cu for sm_90a"):
        cuda.compile_cu(bad, "90a")


def test_arch_names():
    assert cuda.arch_of("9.0") == "90a" and cuda.arch_of("8.0") == "80"


def test_progression_ids_unique():
    ids = [bid for s in STEPS for bid, _ in s.variants]
    assert len(ids) == len(set(ids)) and all(bid.startswith("gemm.") for bid in ids)
