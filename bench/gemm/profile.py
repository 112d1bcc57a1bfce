"""Nsight Compute counters for the hand-written GEMM kernels: ``python -m bench --profile``.

Each kernel is launched once, at the reference shape, in a process run under
``ncu --clock-control none`` (the card's clocks are left as they are), for a
fixed set of metrics; the values are stored in the kernel's results record under
``profile``. ``python -m bench.gemm.profile --target ID`` is that process.

A peer's record (PEERS) gets the same counters shape by shape, its kernel's and ours:
``python -m bench.gemm.profile --peer ID`` launches each of its shapes once, the peer's kernel
then ours, and the counters go to each shape of its record."""
from __future__ import annotations

import csv
import importlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..core.registry import ROOT

# metric -> what the slides call it
METRICS = {
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM throughput, % of peak",
    "l1tex__throughput.avg.pct_of_peak_sustained_active": "L1 throughput, % of peak",
    "l1tex__t_sector_hit_rate.pct": "L1 hit rate, %",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum": "shared-load bank conflicts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum": "shared-store bank conflicts",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved occupancy, %",
    "sm__instruction_throughput.avg.pct_of_peak_sustained_active": "SM busy, %",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor pipe active, %",
}


TOOL = "ncu --clock-control none"


def first_launches(kernel_name: str, launches: int = 1) -> list[str]:
    """ncu's selection of the first ``launches`` launches of the kernels ``kernel_name`` matches."""
    return ["--kernel-name", kernel_name, "--launch-count", str(launches)]


# ncu's selection of every launch inside the program's profiler windows (cudaProfilerStart / Stop)
IN_PROFILER_WINDOWS = ["--profile-from-start", "off"]


def ncu_command(select: list[str], target: list[str], log: Path, module: str = "bench.gemm.profile",
                metrics=METRICS) -> list[str]:
    """ncu over ``python -m module`` with ``target``'s arguments: the launches ``select`` picks
    (first_launches, IN_PROFILER_WINDOWS), each read for ``metrics``."""
    return [*TOOL.split(), "--metrics", ",".join(metrics), *select, "--csv", "--print-units", "base",
            "--log-file", str(log), sys.executable, "-m", module, *target]


def parse_launches(text: str, metrics=METRICS) -> list[tuple[str, dict]]:
    """ncu's CSV (one row per metric of each launch) -> [(kernel name, {metric: value})] in launch
    order, each of ``metrics`` read; the rows ncu prints before the header are skipped."""
    lines = text[text.index('"ID"'):].splitlines() if '"ID"' in text else []
    launches: dict[int, tuple[str, dict]] = {}
    for row in csv.DictReader(lines):
        if row.get("Metric Name") in metrics:
            _, values = launches.setdefault(int(row["ID"]), (row["Kernel Name"], {}))
            values[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return [launches[i] for i in sorted(launches)]


def run_ncu(select: list[str], target: list[str], what: str, timeout_s: float, env: dict | None = None,
            module: str = "bench.gemm.profile", metrics=METRICS) -> list[tuple[str, dict]]:
    """The launches ncu read (ncu_command, parse_launches), each with every metric; fails with what ncu
    said where it read none or some launch lacks a metric."""
    if shutil.which("ncu") is None:
        raise RuntimeError("ncu (Nsight Compute) is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ncu.csv"
        proc = subprocess.run(ncu_command(select, target, log, module, metrics), cwd=ROOT, capture_output=True,
                              text=True, timeout=timeout_s, env=env)
        text = log.read_text() if log.exists() else ""
    found = parse_launches(text, metrics)
    missing = sorted({m for _, values in found for m in metrics if m not in values})
    if proc.returncode != 0 or not found or missing:
        raise RuntimeError(f"ncu on {what} gave no {', '.join(missing) or 'result'} "
                           f"(exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-500:]}")
    return found


def kernel_name(bench_id: str) -> str:
    """Nsight Compute's --kernel-name for a catalogue kernel (numba's names are mangled around it)."""
    from .catalogue import step_of
    step = step_of(bench_id)
    return f"regex:^{step.function}$" if step.cute else f"regex:{step.function}"


def profile(bench_id: str, timeout_s: float = 600) -> dict:
    (_, values), = run_ncu(first_launches(kernel_name(bench_id)), ["--target", bench_id], bench_id, timeout_s)
    return {"metrics": values, "names": dict(METRICS), "tool": TOOL}


# The peers whose records --profile reads shape by shape, each with the module that measures it: its
# SHAPES, STEP (the step of our kernel beside it), PEER_KERNEL (ncu's regex for its kernel's name) and
# profile_launcher(ours_prepare), which gives launch(shape): the peer's kernel once, then ours
PEERS = {"peers.deepgemm": "bench.peers.deepgemm"}


def profile_peer(bench_id: str, env: dict, timeout_s: float = 900) -> list[dict]:
    """Each of the peer's shapes, in order: {"peer": its kernel's counters, "ours": ours} (no "ours"
    where ours refused the shape). ``env``: the environment its process needs (its loader)."""
    peer = importlib.import_module(PEERS[bench_id])
    ours = peer.STEP.function                       # ncu names our kernel by its extern "C" name
    found = run_ncu(first_launches(f"regex:^{ours}$|{peer.PEER_KERNEL}", 2 * len(peer.SHAPES)), ["--peer", bench_id], bench_id,
                    timeout_s, env)
    shapes: list[dict] = []
    for name, values in found:          # each shape's peer launch, then ours
        if name == ours:
            if not shapes or "ours" in shapes[-1]:
                raise RuntimeError(f"ncu on {bench_id}: a launch of {ours} without the peer's before it")
            shapes[-1]["ours"] = values
        else:
            shapes.append({"peer": values})
    if len(shapes) != len(peer.SHAPES):
        raise RuntimeError(f"ncu on {bench_id}: {len(shapes)} launches of the peer's kernel for {len(peer.SHAPES)} shapes")
    return [{"shape": shape.dims, **counters} for shape, counters in zip(peer.SHAPES, shapes)]


def with_peer_profile(record: dict, shapes: list[dict], stamp: dict) -> dict:
    """The peer's record with each shape's counters (profile_peer's, by shape) and, once, their names,
    the tool and ``stamp`` (when, at which commit, of which record: its source hash)."""
    if "shapes" not in record:
        raise RuntimeError(f"its record holds no shapes (status {record.get('status')}): measure it first")
    by_shape = {tuple(s["shape"]): {k: v for k, v in s.items() if k != "shape"} for s in shapes}
    if sorted(by_shape) != sorted(tuple(s["shape"]) for s in record["shapes"]):
        raise RuntimeError("its record's shapes are not the ones profiled: measure it again first")
    return {**record, "shapes": [{**s, "profile": by_shape[tuple(s["shape"])]} for s in record["shapes"]],
            "profile": {"names": dict(METRICS), "tool": TOOL, "of": record["source_hash"], **stamp}}


def target(bench_id: str) -> None:
    """Launch one kernel once at the reference shape (the process ncu profiles)."""
    from . import launch
    from .catalogue import KERNELS, output_of
    from ..core.device import collect_device
    from .harness import SHAPE, checked_launch
    step, variant = KERNELS[bench_id]
    checked_launch(SHAPE, step.layout, step.precision, launch.prepare(step, variant, collect_device()), step.scaling,
                   output_of(variant.tile))


def peer_target(bench_id: str) -> None:
    """Each of a peer's shapes once, its kernel then ours (the process ncu profiles for profile_peer)."""
    from . import launch
    from .harness import Refused
    from ..core.device import collect_device
    peer = importlib.import_module(PEERS[bench_id])
    launch_shape = peer.profile_launcher(launch.prepare_by_shape(peer.STEP, collect_device()))
    for shape in peer.SHAPES:
        try:
            launch_shape(shape)
        except Refused:             # ours does not take the shape: the peer's launch alone
            pass


if __name__ == "__main__":
    if sys.argv[1:2] not in (["--target"], ["--peer"]) or len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gemm.profile --target BENCHMARK_ID | --peer PEER_ID")
    (target if sys.argv[1] == "--target" else peer_target)(sys.argv[2])
