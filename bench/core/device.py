"""What the results record about the machine: the device, the software, and NVML
telemetry (clocks, power, temperature, throttle reasons) around each benchmark."""
from __future__ import annotations

import platform
import re
import shutil
import subprocess
import time

from .registry import ROOT, git_commit


class NoGPU(RuntimeError):
    """No usable CUDA device."""


# NVML clock-event (throttle) reason bits, nvml.h
THROTTLE_BITS = {
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap",
    0x8: "hw_slowdown", 0x10: "sync_boost", 0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown", 0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}


def gpu_slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _nvml_handle(pci_bus_id: str | None):
    import pynvml
    pynvml.nvmlInit()
    if pci_bus_id:
        try:
            return pynvml, pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id.encode())
        except pynvml.NVMLError:
            pass
    return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)


def collect_device() -> dict:
    """Read the CUDA device 0 (CUDA_VISIBLE_DEVICES picks it) and its NVML clocks."""
    try:
        import cupy
        from cupy.cuda import runtime
        count = runtime.getDeviceCount()
    except ImportError as e:
        raise NoGPU(f"no GPU: CuPy is not installed ({e}); install the GPU extras: pip install -e '.[gpu]'") from e
    except Exception as e:  # CUDARuntimeError without a driver, among others
        raise NoGPU(f"no GPU: the CUDA runtime found no usable device ({e})") from e
    if count == 0:
        raise NoGPU("no GPU: the CUDA runtime reports 0 devices")
    props = runtime.getDeviceProperties(0)
    attr = lambda a: runtime.deviceGetAttribute(a, 0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    pci = runtime.deviceGetPCIBusId(0)
    nv, h = _nvml_handle(pci)
    return {
        "name": name,
        "slug": gpu_slug(name),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "sm_count": int(props["multiProcessorCount"]),
        "sm_clock_max_mhz": int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_SM)),
        "sm_clock_mhz": int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
        "mem_clock_max_mhz": int(nv.nvmlDeviceGetMaxClockInfo(h, nv.NVML_CLOCK_MEM)),
        "mem_bus_width_bits": int(attr(runtime.cudaDevAttrGlobalMemoryBusWidth)),
        "l2_bytes": int(props["l2CacheSize"]),
        "smem_per_block_optin_bytes": int(props["sharedMemPerBlockOptin"]),
        "memory_bytes": int(props["totalGlobalMem"]),
        "max_threads_per_sm": int(props["maxThreadsPerMultiProcessor"]),
        "regs_per_sm": int(props["regsPerMultiprocessor"]),
        "smem_per_sm_bytes": int(props["sharedMemPerMultiprocessor"]),
        "power_limit_w": round(nv.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0, 1),
        "pci_bus_id": pci,
        "gpu_count": int(count),       # on this host; benchmarks of several GPUs go to the node's file
    }


def _version(cmd) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=ROOT).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip().splitlines()[-1] if out.strip() else None


def _module_version(name: str) -> str | None:
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


def collect_software() -> dict:
    import cupy
    from cupy.cuda import runtime
    nv, _ = _nvml_handle(None)
    rt = runtime.runtimeGetVersion()
    driver = nv.nvmlSystemGetDriverVersion()
    return {
        "driver": driver.decode() if isinstance(driver, bytes) else driver,
        "cuda_runtime": f"{rt // 1000}.{rt % 1000 // 10}",
        "python": platform.python_version(),
        "cupy": cupy.__version__,
        "numba": _module_version("numba"),
        "nvcc": _version(["nvcc", "--version"]),
        "git_commit": git_commit(),
    }


def telemetry() -> dict:
    """One NVML sample of the device; raises if NVML cannot be read."""
    from cupy.cuda import runtime
    nv, h = _nvml_handle(runtime.deviceGetPCIBusId(0))
    try:
        reasons = nv.nvmlDeviceGetCurrentClocksEventReasons(h)
    except AttributeError:
        reasons = nv.nvmlDeviceGetCurrentClocksThrottleReasons(h)
    return {
        "sm_clock_mhz": int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)),
        "mem_clock_mhz": int(nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)),
        "power_w": round(nv.nvmlDeviceGetPowerUsage(h) / 1000.0, 1),
        "temperature_c": int(nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
        "throttle_reasons": [name for bit, name in THROTTLE_BITS.items() if reasons & bit],
    }


def energy_counter():
    """A reader of the GPU's energy counter (NVML, millijoules since the driver loaded); raises
    where the GPU has none."""
    from cupy.cuda import runtime
    nv, h = _nvml_handle(runtime.deviceGetPCIBusId(0))
    nv.nvmlDeviceGetTotalEnergyConsumption(h)
    return lambda: int(nv.nvmlDeviceGetTotalEnergyConsumption(h))


class TelemetrySampler:
    """Samples NVML in a background thread while a benchmark runs, so that the
    clocks and power *during* the measurement are on record, not only around it."""

    def __init__(self, enabled: bool = True, interval_s: float = 0.05):
        import threading
        self.enabled = enabled
        self.interval_s = interval_s
        self.samples: list[dict] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.wait(self.interval_s):
            self.samples.append((time.monotonic(), telemetry()))

    def __enter__(self):
        if self.enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self.enabled:
            self._thread.join()

    def summary(self, spans=()) -> dict | None:
        """Clock, power and throttling over the samples taken inside ``spans`` (the
        timed loops), or over all samples when none fall inside."""
        timed = [s for t, s in self.samples if any(a <= t <= b for a, b in spans)]
        samples = timed or [s for _, s in self.samples]
        if not samples:
            return None
        import numpy as np
        clocks = np.array([s["sm_clock_mhz"] for s in samples])
        power = np.array([s["power_w"] for s in samples])
        return {
            "samples": len(samples),
            "interval_s": self.interval_s,
            "window": "timed loops" if timed else "whole benchmark",
            "sm_clock_mhz": {"min": int(clocks.min()), "median": float(np.median(clocks)), "max": int(clocks.max())},
            "power_w": {"median": float(np.median(power)), "max": float(power.max())},
            "temperature_c_max": max(s["temperature_c"] for s in samples),
            "throttle_reasons": sorted({r for s in samples for r in s["throttle_reasons"]}),
        }
