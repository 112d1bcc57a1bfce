"""The GPU model: what the deck knows of a GPU beyond what CUDA and NVML report (per-SM rates by
architecture, the occupancy rules), and the device as the templates see it as ``device``."""
from __future__ import annotations

import math
from dataclasses import dataclass

from bench.core.schema import DEVICE_FIELDS
from slides.records import Context

# Dense FLOP per clock per SM by compute capability (NVIDIA architecture
# whitepapers): FP32 FMA on the CUDA cores, TF32, BF16 and (Hopper) FP8 on the tensor cores.
PER_SM_FLOP_PER_CLK = {
    "8.0": {"fp32": 128, "tf32": 1024, "bf16": 2048},
    "8.6": {"fp32": 256, "tf32": 512, "bf16": 1024},
    "8.9": {"fp32": 256, "tf32": 512, "bf16": 1024},
    "9.0": {"fp32": 256, "tf32": 2048, "bf16": 4096, "fp8": 8192},
}
ARCH_NAMES = {"7.0": "Volta", "7.5": "Turing", "8.0": "Ampere", "8.6": "Ampere", "8.7": "Ampere", "8.9": "Ada Lovelace",
              "9.0": "Hopper", "10.0": "Blackwell", "10.3": "Blackwell", "12.0": "Blackwell"}
PRECISION_NAMES = {"fp32": "FP32 (CUDA cores)", "tf32": "TF32 (tensor cores)", "bf16": "BF16 (tensor cores)",
                   "fp8": "FP8 (tensor cores)"}
SUBPARTITIONS_PER_SM = 4     # one warp scheduler each, every architecture since Volta
WARP_SIZE = 32
MAX_BLOCKS_PER_SM = 32       # every architecture since Volta except Turing's 16


@dataclass(frozen=True)
class Device(Context):
    """The GPU the results were measured on: what CUDA and NVML reported when the run started (the
    results file's device, bench/core/schema.py), and what the deck knows of its architecture."""
    name: str
    slug: str
    compute_capability: str
    sm_count: int
    sm_clock_max_mhz: float             # NVML's maximum SM clock
    sm_clock_mhz: float                 # the SM clock when the device was read
    mem_clock_max_mhz: float
    mem_bus_width_bits: int
    l2_bytes: int
    smem_per_block_optin_bytes: int
    memory_bytes: int
    max_threads_per_sm: int
    regs_per_sm: int
    smem_per_sm_bytes: int
    power_limit_w: float                # NVML's enforced limit
    arch: str                           # Hopper, or the compute capability where the deck has no name for it
    sm_name: str                        # the compiler's target: sm_90
    rates: dict[str, int] | None        # dense FLOP per clock per SM by precision; None: not in PER_SM_FLOP_PER_CLK
    fp32_lanes_per_sm: int | None
    hbm_peak_gbps: float                # memory clock x 2 (double data rate) x bus width
    subpartitions: int = SUBPARTITIONS_PER_SM
    warp_size: int = WARP_SIZE


def context(deck) -> Device:
    reported = {key: deck.doc["device"][key] for key in DEVICE_FIELDS}
    cc = reported["compute_capability"]
    rates = PER_SM_FLOP_PER_CLK.get(cc)
    return Device(**reported, arch=ARCH_NAMES.get(cc, f"compute capability {cc}"), sm_name="sm_" + cc.replace(".", ""),
                  rates=rates, fp32_lanes_per_sm=rates["fp32"] // 2 if rates else None,
                  hbm_peak_gbps=reported["mem_clock_max_mhz"] * 1e6 * 2 * reported["mem_bus_width_bits"] / 8 / 1e9)


def tflops_of(params: dict, time_ms: dict) -> float:
    """A GEMM's TFLOPS from a record's params (m, n, k) and a timing of it."""
    return 2 * params["m"] * params["n"] * params["k"] / (time_ms["median"] * 1e-3) / 1e12


def peak_tflops(device: Device, per_sm_per_clk: int, clock_mhz: float) -> float:
    return device.sm_count * per_sm_per_clk * clock_mhz * 1e6 / 1e12


def pct_of_peak(device: Device, precision: str, tflops: float | None, clock_mhz: float | None) -> float | None:
    """``tflops`` as a share of ``precision``'s dense peak at ``clock_mhz``, the clock its SMs ran
    at; None without a rate for this GPU, a clock or a figure."""
    rate = (device.rates or {}).get(precision)
    return 100 * tflops / peak_tflops(device, rate, clock_mhz) if rate and clock_mhz and tflops else None


def occupancy(resources: dict, device: Device) -> dict:
    """Resident blocks and warps per SM from the kernel's resources and the device
    limits, and which limit binds (registers are allocated per warp in 256s; each
    block reserves 1 KiB of shared memory)."""
    threads = resources["threads_per_block"]
    warps = math.ceil(threads / device.warp_size)
    regs_per_warp = math.ceil(resources["regs_per_thread"] * device.warp_size / 256) * 256
    smem = resources["smem_static_bytes"] + resources["smem_dynamic_bytes"]
    limits = {"threads": device.max_threads_per_sm // threads,
              "registers": (device.regs_per_sm // regs_per_warp) // warps if regs_per_warp else MAX_BLOCKS_PER_SM,
              "shared memory": device.smem_per_sm_bytes // (smem + 1024) if smem else MAX_BLOCKS_PER_SM,
              "blocks": MAX_BLOCKS_PER_SM}
    limiter = min(limits, key=limits.get)
    blocks = limits[limiter]
    max_warps = device.max_threads_per_sm // device.warp_size
    return {"blocks_per_sm": blocks, "warps_per_sm": blocks * warps, "occupancy_pct": 100 * blocks * warps / max_warps,
            "limited_by": limiter, "limits": limits}
