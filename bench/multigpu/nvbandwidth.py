"""NVIDIA's nvbandwidth, the peer of multigpu.p2p: built at run time from the checkout
$NVBANDWIDTH_DIR, its test cases that measure what multigpu.p2p measures run on the same node in
the same run, and its matrices kept per ordered pair; skipped without a checkout.

nvbandwidth builds with CMake and Boost.Program_options. The build here compiles the sources its
CMakeLists.txt lists with nvcc directly (no CMake needed); Boost is found where the compiler looks,
CPATH and LIBRARY_PATH included, so a copy of it outside the system folders can be named there.
Where the linker finds no Boost.Program_options (the GPU machines' image has Boost's headers only),
it is built from the pinned boostorg/program_options checkout that python -m bench --peers fetches."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..core import peers
from ..core.registry import ROOT, register
from ..core.topology import child_env

PEER_ENV = "NVBANDWIDTH_DIR"
BOOST_ENV = "BOOST_PROGRAM_OPTIONS_DIR"
# nvbandwidth's test case -> the multigpu.p2p measurement it matches. In every matrix the row is the
# GPU whose context issues the work: write cases copy row -> column, read cases row <- column, and the
# latency case chases pointers from the row into the column's memory (testcases_ce.cpp, testcases_sm.cpp).
CASES = {
    "device_to_device_memcpy_write_ce": "copy_engine",
    "device_to_device_bidirectional_memcpy_write_ce": "copy_engine_both_ways",   # the measured direction's GB/s
    "device_to_device_memcpy_read_sm": "sm_read",
    "device_to_device_memcpy_write_sm": "sm_write",
    "device_to_device_latency_sm": "latency_ns",
}
BUFFER_MIB = 1024            # multigpu.p2p's copies are 1 GiB
SAMPLES = 5                  # nvbandwidth's -i: the median of these (its default is 3)
SOURCE_LIST = re.compile(r"set\(\s*src\s+([^)]*)\)", re.S)


def version(checkout: Path) -> str:
    for line in (checkout / "version.h").read_text(errors="replace").splitlines():
        if "NVBANDWIDTH_VERSION" in line and '"' in line:
            return line.split('"')[1]
    return "unknown"


def sources(checkout: Path) -> list[Path]:
    """The files its CMakeLists.txt builds into the nvbandwidth executable (its `set(src ...)`)."""
    found = SOURCE_LIST.search((checkout / "CMakeLists.txt").read_text(errors="replace"))
    if not found:
        raise RuntimeError(f"{checkout}/CMakeLists.txt lists no `set(src ...)`: not an nvbandwidth checkout")
    return [checkout / name for name in found.group(1).split()]


def _loaded(name: str) -> Path:
    """The path of a shared library this process has loaded (the driver's libcuda, NVML), to link
    against: the driver installs them without the unversioned name a linker looks for."""
    for line in Path("/proc/self/maps").read_text().splitlines():
        path = line.split()[-1]
        if Path(path).name.startswith(name + ".so"):
            return Path(path)
    raise RuntimeError(f"{name}.so is not loaded in this process: no driver library to link nvbandwidth with")


def links(library: str) -> bool:
    """Whether the host compiler's linker finds ``library`` (LIBRARY_PATH included)."""
    return subprocess.run(["g++", "-x", "c++", "-", f"-l{library}", "-o", os.devnull], input="int main() {}\n",
                          capture_output=True, text=True, env=child_env()).returncode == 0


def boost_program_options(libs: Path) -> tuple[list[str], str]:
    """nvcc's flags for Boost.Program_options and where it came from: the system's where the linker
    finds it, else a static library compiled into ``libs`` from the pinned checkout (the system's
    Boost headers beside it)."""
    if links("boost_program_options"):
        return [], "the system's"
    checkout = peers.checkout(BOOST_ENV)
    if checkout is None or not checkout.is_dir():
        raise RuntimeError("building nvbandwidth needs Boost.Program_options, which the linker does not find: apt install "
                           "libboost-program-options-dev, name a copy with CPATH and LIBRARY_PATH, or let python -m bench "
                           f"--peers fetch its source ({BOOST_ENV})")
    library = libs / "libboost_program_options.a"
    if not library.exists():
        objects = libs / "boost-program_options"
        objects.mkdir(exist_ok=True)
        compiles = [subprocess.Popen(["g++", "-std=c++17", "-O2", "-fPIC", f"-I{checkout / 'include'}", "-c", str(src),
                                      "-o", str(objects / f"{src.stem}.o")], stderr=subprocess.PIPE, text=True, env=child_env())
                    for src in sorted((checkout / "src").glob("*.cpp"))]
        failed = [err for proc, err in ((proc, proc.communicate()[1]) for proc in compiles) if proc.returncode]
        if not compiles or failed:
            raise RuntimeError(f"building Boost.Program_options from {checkout} failed (it needs the rest of Boost's headers "
                               f"where the compiler looks): {(failed or ['no sources in its src/'])[0].strip()[-600:]}")
        subprocess.run(["ar", "rcs", str(library), *map(str, sorted(objects.glob("*.o")))], check=True)
    return [f"-I{checkout / 'include'}"], f"built from {checkout} at {peers.checkout_commit(checkout)}"


def build(checkout: Path, device: dict) -> tuple[Path, str]:
    """nvbandwidth built from ``checkout`` for this GPU into .cache/ (the checkout is left as it was),
    and where its Boost.Program_options came from."""
    import pynvml
    from cupy.cuda import runtime
    pynvml.nvmlInit()
    runtime.getDeviceCount()                  # loads libcuda
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: nvbandwidth is built with the CUDA toolkit's nvcc")
    cc = device["compute_capability"].replace(".", "")
    files = sources(checkout)
    digest = hashlib.sha256("|".join([nvcc, cc, *(f"{f}:{f.stat().st_mtime_ns}" for f in files)]).encode())
    out = ROOT / ".cache" / "peers" / f"nvbandwidth-{digest.hexdigest()[:12]}"
    binary, libs = out / "nvbandwidth", out / "lib"
    libs.mkdir(parents=True, exist_ok=True)
    boost_flags, boost = boost_program_options(libs)
    if binary.exists():
        return binary, boost
    for name in ("libcuda", "libnvidia-ml"):
        link = libs / f"{name}.so"
        if not link.exists():
            link.symlink_to(_loaded(name))
    cmd = [nvcc, "-std=c++17", "-O3", f"-gencode=arch=compute_{cc},code=sm_{cc}", f"-I{checkout}",
           f'-DGIT_VERSION="{version(checkout)}"', *boost_flags, *map(str, files), f"-L{libs}",
           "-lboost_program_options", "-lnvidia-ml", "-lcuda", "-o", str(binary)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env())
    if proc.returncode != 0:
        err = proc.stderr.strip()
        if "boost" in err:
            raise RuntimeError("building nvbandwidth needs Boost's headers (apt install libboost-dev, or them on CPATH): "
                               + err[-600:])
        raise RuntimeError(f"building nvbandwidth failed: {err[-1200:]}")
    return binary, boost


def parse(doc: dict) -> tuple[list[dict], list[str]]:
    """Rows {case, src, dst, value} from nvbandwidth's JSON (-j), the matrices' "N/A" left out, and
    the cases that did not pass, with their status."""
    rows, failed = [], []
    for case in doc["nvbandwidth"]["testcases"]:
        if case.get("status") != "Passed":
            failed.append(f"{case['name']}: {case.get('status')}")
            continue
        for src, row in enumerate(case.get("bandwidth_matrix", [])):
            for dst, value in enumerate(row):
                if value != "N/A" and src != dst:
                    rows.append({"case": case["name"], "matches": CASES.get(case["name"]), "src": src, "dst": dst,
                                 "value": float(value), "unit": "ns" if "latency" in case["name"] else "GB/s"})
    return rows, failed


@register("multigpu.nvbandwidth", sources=["bench/core/topology.py"], title="nvbandwidth (NVIDIA), the peer",
          timeout_s=900, gpus=2, peer=PEER_ENV)
def nvbandwidth(ctx) -> dict:
    checkout = Path(os.environ[PEER_ENV])
    ctx.progress(f"building nvbandwidth {version(checkout)} from {checkout}")
    binary, boost = build(checkout, ctx.device)
    cmd = [str(binary), "-j", "-b", str(BUFFER_MIB), "-i", str(SAMPLES), "-t", *CASES]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=800)
    text = proc.stdout
    if proc.returncode != 0 or "{" not in text:
        raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: {(proc.stderr or text)[-800:]}")
    doc = json.loads(text[text.index("{"):])
    rows, failed = parse(doc)
    missing = sorted(set(CASES) - {r["case"] for r in rows} - {f.split(":")[0] for f in failed})
    for case in CASES:
        own = [r for r in rows if r["case"] == case]
        if own:
            values = [r["value"] for r in own]
            ctx.progress(f"{case}: {min(values):.1f} to {max(values):.1f} {own[0]['unit']}")
    problems = failed + [f"{m}: not in its output" for m in missing]
    return {
        "params": {"version": version(checkout), "git_version": doc["nvbandwidth"].get("git_version", ""),
                   "args": " ".join(cmd[1:]), "boost_program_options": boost, "buffer_mib": BUFFER_MIB, "samples": SAMPLES,
                   "cases": dict(CASES), "value": "median of the samples (nvbandwidth's default), GB/s of 1e9 bytes; "
                                                 "latency in ns"},
        "check": {"passed": not problems, "method": "nvbandwidth's own verification of every copy (its status per "
                                                    "test case)", **({"detail": "; ".join(problems[:5])} if problems else {})},
        "rows": rows,
    }
