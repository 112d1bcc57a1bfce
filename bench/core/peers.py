"""The peers, pinned: each one's repository, the commit the committed results ran, and how the run
builds it. ``python -m bench --peers`` fetches every one into PEERS_DIR at its pinned commit (on a
machine that is online), or says exactly what to copy where (on one that is not). A benchmark finds
its peer's checkout in the environment variable it names (which wins) or in PEERS_DIR."""
from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .provenance import ROOT

PEERS_DIR = ROOT / ".peers"         # ignored by git: their code never enters this repository


@dataclass(frozen=True)
class Pin:
    env: str            # the environment variable that names a checkout of it
    folder: str         # its folder under PEERS_DIR
    repo: str
    commit: str
    submodules: bool    # it builds with its git submodules
    built: str          # how the run builds it (nothing is built when it is fetched)
    needed_by: str = "" # the peer (its variable) that builds with it, where it is no benchmark's own

    @property
    def path(self) -> Path:
        return PEERS_DIR / self.folder


PINS = (
    Pin("FASTCU_DIR", "fast.cu", "https://github.com/pranjalssh/fast.cu", "38eb642e0c081231d6f695978be63604bd7c689b",
        False, "its kernel 12 compiled by nvcc into a library beside bench/peers/fastcu.cu"),
    Pin("DEEPGEMM_DIR", "DeepGEMM", "https://github.com/deepseek-ai/DeepGEMM", "54e22612409371d6364144b69086735beb54e98b",
        True, "its setup.py's extension against the installed torch, in a copy under .cache/peers/; kernels by its JIT"),
    Pin("GPU_BENCHES_DIR", "gpu-benches", "https://github.com/RRZE-HPC/gpu-benches", "1038c5d0d0f48cfe9912930d34eb2d8a31b72b9b",
        False, "gpu-stream, gpu-l2-cache and gpu-latency compiled by nvcc into .cache/peers/"),
    Pin("NCCL_TESTS_DIR", "nccl-tests", "https://github.com/NVIDIA/nccl-tests", "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432",
        False, "its Makefile, against the NCCL the run loads, into .cache/peers/ (nodes of 2+ GPUs)"),
    Pin("NVBANDWIDTH_DIR", "nvbandwidth", "https://github.com/NVIDIA/nvbandwidth", "66746a3bef61c8c2e12ab34955310da70b9e38cb",
        False, "the sources its CMakeLists.txt lists, by nvcc (nodes of 2+ GPUs; needs Boost.Program_options)"),
    # Boost 1.83's program_options (the tag boost-1.83.0): the GPU machines' image has Boost 1.83's
    # headers but not this library, and cannot install it offline
    Pin("BOOST_PROGRAM_OPTIONS_DIR", "boost-program_options", "https://github.com/boostorg/program_options",
        "7bcbb4ea23c958800694436b411669f80c543e18", False,
        "its src/ by g++ into a static library under .cache/peers/, where the system has none", "NVBANDWIDTH_DIR"),
)
BY_ENV = {pin.env: pin for pin in PINS}


def checkout(env: str) -> Path | None:
    """The peer's checkout: the folder ``$env`` names, else its folder under PEERS_DIR where it was
    fetched; None where there is neither."""
    if os.environ.get(env):
        return Path(os.environ[env])
    pin = BY_ENV.get(env)
    return pin.path if pin and pin.path.is_dir() else None


def missing(env: str) -> str | None:
    """Why the peer of ``env`` cannot be built here (None: its checkout is there)."""
    found = checkout(env)
    if found is None:
        return f"no checkout of the peer: set {env} to one, or python -m bench --peers fetches it"
    if not found.is_dir():
        return f"{env}={os.environ.get(env)} is not a folder"
    return None


def checkout_commit(path: Path) -> str:
    """The commit a checkout is at, which its record names."""
    proc = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown (not a git checkout)"


def commands(pin: Pin, into: Path) -> list[list[str]]:
    """What fetches ``pin`` into ``into`` at its commit: a clone, the commit, its submodules."""
    out = [["git", "clone", "--quiet", pin.repo, str(into)], ["git", "-C", str(into), "checkout", "--quiet", pin.commit]]
    if pin.submodules:
        out.append(["git", "-C", str(into), "submodule", "update", "--quiet", "--init", "--recursive"])
    return out


def fetch(log=print, run=subprocess.run) -> int:
    """Every peer into PEERS_DIR at its pinned commit; one already there at that commit is kept, one
    at another commit is left as it is and said. Where a fetch fails (offline), what to copy where."""
    failed = []
    for pin in PINS:
        if pin.path.is_dir():
            at = checkout_commit(pin.path)
            log(f"{pin.folder}: {'at its pinned commit' if at == pin.commit else f'kept at {at[:12]}, not the pinned {pin.commit[:12]}'}"
                f" ({pin.path})")
            continue
        log(f"{pin.folder}: fetching {pin.repo} at {pin.commit[:12]} ...", flush=True)
        stage = pin.path.with_name(f".{pin.folder}.fetching")
        run(["rm", "-rf", str(stage)])
        for cmd in commands(pin, stage):
            proc = run(cmd, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                failed.append(pin)
                log(f"{pin.folder}: {shlex.join(cmd)} failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:] or ['no output']}")
                run(["rm", "-rf", str(stage)])
                break
        else:
            stage.rename(pin.path)
            log(f"{pin.folder}: {pin.path} (builds: {pin.built})")
    if failed:
        log("\nThis machine could not fetch them. On one that is online, run these, then copy each folder to the "
            "path its last line names (or set the variable to wherever you put it):")
        for pin in failed:
            there = Path(pin.folder)
            log("\n".join(f"  {shlex.join(cmd)}" for cmd in commands(pin, there)))
            log(f"  # -> {pin.path}   (or {pin.env}=<its folder>)")
    return 1 if failed else 0
