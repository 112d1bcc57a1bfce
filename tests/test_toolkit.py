"""The CUDA toolkit a fresh machine gets from PyPI, and files written as a reader expects."""
import os
import shutil
import subprocess
import sys

import pytest

from bench.core import results, toolkit
from tests.conftest import ROOT, _nvcc_or_fail


def test_pypi_nvcc_is_found_without_a_system_toolkit():
    """With only the system's own folders on PATH, importing bench puts the test extra's nvcc on it."""
    assert toolkit.pypi_bin() is not None, "the test extra installs nvidia-cuda-nvcc"
    probe = "import shutil, bench, bench.core.toolkit as t; print(shutil.which('nvcc')); print(t.describe())"
    proc = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}, check=True)
    nvcc, described = proc.stdout.splitlines()
    system = shutil.which("nvcc", path="/usr/bin:/bin")     # a distribution's nvcc would come first
    assert nvcc == (system or str(toolkit.pypi_bin() / "nvcc"))
    assert f"from {'the system' if system else 'PyPI'}" in described and "release 13." in described


def test_without_any_nvcc_compile_tests_fail_with_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(toolkit, "pypi_bin", lambda: None)
    assert toolkit.describe() == f"no nvcc found: {toolkit.INSTALL_HINT}"
    with pytest.raises(pytest.fail.Exception, match=r"pip install -e '\.\[test\]'"):
        _nvcc_or_fail()


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(umask, mode, tmp_path):
    old = os.umask(umask)
    try:
        results.write_atomic(tmp_path / "slides.md", "# deck\n")
    finally:
        os.umask(old)
    assert (tmp_path / "slides.md").stat().st_mode & 0o777 == mode
    assert [p.name for p in tmp_path.iterdir()] == ["slides.md"]


@pytest.mark.parametrize("code", ["C7514", "C7515"])
def test_a_build_whose_wgmmas_ptxas_serializes_is_refused(code, monkeypatch, tmp_path):
    """Either of ptxas's reasons for serializing wgmmas fails the build: a slower path, never timed."""
    from bench.core import cuda
    src = tmp_path / "k.cu"
    src.write_text("extern \"C\" __global__ void k() {}\n")
    said = f"ptxas info    : ({code}) Potential Performance Loss: wgmma.mma_async instructions are serialized"
    monkeypatch.setattr(cuda, "CACHE", tmp_path / "cache")
    monkeypatch.setattr(cuda.shutil, "which", lambda name: "/usr/bin/nvcc")
    monkeypatch.setattr(cuda.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "", said))
    with pytest.raises(RuntimeError, match=code):
        cuda.compile_cu(src, "90a")
