"""Compiling and loading the CUDA C++ kernels in kernels/: one nvcc command line,
used by the benchmarks on the GPU and by the compile tests in CI."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

from .registry import ROOT

KERNELS = ROOT / "kernels"
CACHE = ROOT / ".cache" / "cubin"


def cutlass_include() -> Path | None:
    """CuTe/CUTLASS headers shipped by the PyPI package nvidia-cutlass, if installed."""
    try:
        import cutlass_library
    except ImportError:
        return None
    inc = Path(cutlass_library.__file__).parent / "source" / "include"
    return inc if inc.is_dir() else None


def arch_of(compute_capability: str) -> str:
    """nvcc arch suffix: '9.0' -> '90a' (Hopper's arch-specific features: wgmma, setmaxnreg)."""
    major, minor = compute_capability.split(".")
    return f"{major}{minor}" + ("a" if major == "9" else "")


def nvcc_command(src: Path, out: Path, arch: str, defines: dict | None = None) -> list[str]:
    cmd = ["nvcc", "-std=c++17", "-O3", "-cubin", f"-gencode=arch=compute_{arch},code=sm_{arch}",
           "--expt-relaxed-constexpr", "-lineinfo", "-Xptxas=-v"]   # -v: ptxas reports serialized wgmma
    inc = cutlass_include()
    if inc:
        cmd += ["-I", str(inc)]
    cmd += [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]
    return cmd + ["-o", str(out), str(src)]


def local_includes(source: str) -> list[str]:
    """The headers ``source`` (repo-relative) includes with quotes, and theirs, repo-relative."""
    found, todo = [], [Path(source) if Path(source).is_absolute() else ROOT / source]
    while todo:
        path = todo.pop()
        for line in path.read_text().splitlines():
            if line.startswith('#include "'):
                header = path.parent / line.split('"')[1]
                rel = str(header.relative_to(ROOT))
                if rel not in found:
                    found.append(rel)
                    todo.append(header)
    return found


# ptxas: "wgmma.mma_async instructions are serialized due to ...", with either code (C7514: other
# instructions read a wgmma's accumulators while it may still run, as step 14 once did)
SERIALIZED_WGMMA = ("(C7514)", "(C7515)")


def compile_cu(src: Path, arch: str, defines: dict | None = None) -> Path:
    """Compile ``src`` to a cubin (cached by its content and its folder's headers, arch and defines)."""
    if shutil.which("nvcc") is None:
        raise RuntimeError("nvcc not found on PATH: the CUDA toolkit is needed to build kernels/")
    src = Path(src)
    if cutlass_include() is None and any("#include <cute/" in p.read_text()
                                         for p in (src, *(ROOT / h for h in local_includes(src)))):
        raise RuntimeError(f"{src.name} needs the CuTe headers: pip install nvidia-cutlass (pyproject.toml lists it)")
    headers = b"".join(h.read_bytes() for h in sorted(src.parent.glob("*.cuh")))   # local includes
    command = nvcc_command(src, Path("out"), arch, defines)
    key = hashlib.sha256(src.read_bytes() + headers + repr(command).encode()).hexdigest()[:16]
    out = CACHE / f"{src.stem}-{arch}-{key}.cubin"
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(f".{os.getpid()}-{threading.get_ident()}.tmp")   # builds may run in parallel
        proc = subprocess.run(nvcc_command(src, tmp, arch, defines), capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nvcc failed on {src.name} for sm_{arch}:\n{proc.stderr.strip()}")
        if any(code in proc.stderr for code in SERIALIZED_WGMMA):
            # ptxas would make every wgmma wait for the one before: a slower path, not a tuning choice
            detail = next(line for line in proc.stderr.splitlines() if any(code in line for code in SERIALIZED_WGMMA))
            raise RuntimeError(f"{src.name} with {defines}: {detail.strip()}")
        tmp.replace(out)
    return out


def build_key(source, defines: dict | None) -> tuple:
    """One build of a source, whatever order its defines were given in (hashable)."""
    return str(source), tuple(sorted((defines or {}).items()))


def compile_all(builds, arch: str, workers: int | None = None) -> dict:
    """Compile every (source, defines) of ``builds`` at once (nvcc runs in its own processes; the GPU
    machine has 16 cores), each cubin's SASS dumped beside it: {build: error message} for those that
    failed, whose benchmarks then fail with the same error when they compile again."""
    from concurrent.futures import ThreadPoolExecutor
    from .sass import dump
    unique = list(dict.fromkeys(build_key(src, defines) for src, defines in builds))
    with ThreadPoolExecutor(workers or os.cpu_count() or 4) as pool:
        futures = {b: pool.submit(lambda b: dump(compile_cu(ROOT / b[0], arch, dict(b[1]))), b) for b in unique}
    return {b: str(f.exception()).splitlines()[0] for b, f in futures.items() if f.exception()}


def load_module(src: Path, device: dict, defines: dict | None = None):
    """``src`` compiled for ``device``: the cupy RawModule and the cubin's path (for its SASS)."""
    import cupy
    cubin = compile_cu(src, arch_of(device["compute_capability"]), defines)
    return cupy.RawModule(path=str(cubin)), cubin


def load_kernel(src: Path, name: str, device: dict, defines: dict | None = None):
    """A cupy RawKernel for ``name`` in ``src``, compiled for ``device``."""
    return load_module(src, device, defines)[0].get_function(name)
