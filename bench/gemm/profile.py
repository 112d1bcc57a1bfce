"""Nsight Compute counters for the hand-written GEMM kernels: ``python -m bench --profile``.

Each kernel is launched once, at the reference shape, in a process run under
``ncu --clock-control none`` (the card's clocks are left as they are), for a
fixed set of metrics; the values are stored in the kernel's results record under
``profile``. ``python -m bench.gemm.profile --target ID`` is that process."""
from __future__ import annotations

import csv
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


def ncu_command(kernel_name: str, bench_id: str, log: Path) -> list[str]:
    return ["ncu", "--clock-control", "none", "--metrics", ",".join(METRICS), "--kernel-name", kernel_name,
            "--launch-count", "1", "--csv", "--print-units", "base", "--log-file", str(log),
            sys.executable, "-m", "bench.gemm.profile", "--target", bench_id]


def parse_csv(text: str) -> dict:
    """ncu's CSV (one row per metric) -> {metric: value}; the rows ncu prints before the header are skipped."""
    lines = text[text.index('"ID"'):].splitlines() if '"ID"' in text else []
    values = {}
    for row in csv.DictReader(lines):
        if row.get("Metric Name") in METRICS:
            values[row["Metric Name"]] = float(row["Metric Value"].replace(",", ""))
    return values


def kernel_name(bench_id: str) -> str:
    """Nsight Compute's --kernel-name for a catalogue kernel (numba's names are mangled around it)."""
    from .catalogue import step_of
    step = step_of(bench_id)
    return f"regex:^{step.function}$" if step.cute else f"regex:{step.function}"


def profile(bench_id: str, timeout_s: float = 600) -> dict:
    if shutil.which("ncu") is None:
        raise RuntimeError("ncu (Nsight Compute) is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "ncu.csv"
        cmd = ncu_command(kernel_name(bench_id), bench_id, log)
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout_s)
        text = log.read_text() if log.exists() else ""
    values = parse_csv(text)
    missing = [m for m in METRICS if m not in values]
    if proc.returncode != 0 or missing:
        raise RuntimeError(f"ncu on {bench_id} gave no {', '.join(missing) or 'result'} "
                           f"(exit {proc.returncode}): {(proc.stderr or proc.stdout).strip()[-500:]}")
    return {"metrics": values, "names": dict(METRICS), "tool": "ncu --clock-control none"}


def target(bench_id: str) -> None:
    """Launch one kernel once at the reference shape (the process ncu profiles)."""
    from . import launch
    from .catalogue import KERNELS, output_of
    from ..core.device import collect_device
    from .harness import SHAPE, checked_launch
    step, variant = KERNELS[bench_id]
    checked_launch(SHAPE, step.layout, step.precision, launch.prepare(step, variant, collect_device()), step.scaling,
                   output_of(variant.tile))


if __name__ == "__main__":
    if sys.argv[1:2] != ["--target"] or len(sys.argv) != 3:
        sys.exit("usage: python -m bench.gemm.profile --target BENCHMARK_ID")
    target(sys.argv[2])
