"""Where the CUDA compiler and binary tools come from.

A system CUDA toolkit on PATH wins. Without one, NVIDIA's own toolkit from PyPI
(nvidia-cuda-nvcc and its companions, installed by the ``test`` extra) is put at
the end of PATH, so that every ``nvcc``, ``cuobjdump`` and ``nvdisasm`` the
project runs, in this process and in its children, resolves to the same
toolkit."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INSTALL_HINT = ("pip install -e '.[test]' brings NVIDIA's nvcc from PyPI (nvidia-cuda-nvcc, nvidia-cuda-crt, "
                "nvidia-nvvm, nvidia-cuda-runtime, nvidia-cuda-cccl), or put a CUDA 13 toolkit's bin/ on PATH; "
                "nvcc also needs a host C++ compiler (apt-get install g++)")


def pypi_bin() -> Path | None:
    """The bin/ folder of NVIDIA's CUDA 13 wheels in this Python's site-packages, if installed."""
    for base in map(Path, sys.path):
        candidate = base / "nvidia" / "cu13" / "bin"
        if (candidate / "nvcc").exists():
            return candidate
    return None


def use_pypi_toolkit() -> None:
    """Append the PyPI toolkit's bin/ to PATH, after any system toolkit already on it."""
    found = pypi_bin()
    path = os.environ.get("PATH", "")
    if found is not None and str(found) not in path.split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join(filter(None, [path, str(found)]))


def nvcc_version(nvcc: str) -> str:
    """nvcc's own words for its release: 'Cuda compilation tools, release 13.0, V13.0.88'."""
    proc = subprocess.run([nvcc, "--version"], capture_output=True, text=True)
    return next((line.strip() for line in proc.stdout.splitlines() if "release" in line), "unknown version")


def describe() -> str:
    """Which nvcc the kernels are built with: its path, its version, where it came from."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return f"no nvcc found: {INSTALL_HINT}"
    pypi = pypi_bin()
    origin = "PyPI" if pypi is not None and Path(nvcc).resolve().parent == pypi.resolve() else "the system"
    if shutil.which("c++") is None and shutil.which("g++") is None:
        return f"{nvcc} ({nvcc_version(nvcc)}, from {origin}), but no host C++ compiler: {INSTALL_HINT}"
    return f"{nvcc} ({nvcc_version(nvcc)}, from {origin})"
