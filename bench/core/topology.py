"""The node: how many GPUs, and how each pair is linked (NVLink count and kind, the PCIe path,
peer access), read from NVML and the CUDA runtime. A multi-GPU results file records it as
``node``; the deck draws it."""
from __future__ import annotations

import os

# NVLink bandwidth per link and direction, GB/s, by compute capability (NVIDIA's NVLink
# generations: 2.0 on Volta, 3.0 on Ampere, 4.0 on Hopper, 5.0 on Blackwell).
NVLINK_GBPS_PER_LINK = {"7.0": 25.0, "8.0": 25.0, "9.0": 25.0, "10.0": 50.0}
# NVML's common-ancestor levels, named as `nvidia-smi topo -m` names them.
PCIE_PATHS = {0: "internal", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
# Kept off on shared hosts: NVLink multicast (NVLS) can put the host's GPUs out of service.
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def child_env(**extra: str) -> dict:
    """The environment every process a benchmark starts gets: this one, multicast off."""
    return {**os.environ, **NO_MULTICAST, **extra}


def bus_id(text) -> str:
    """'00000000:18:00.0' (NVML) and '0000:18:00.0' (CUDA) both as '0000:18:00.0'."""
    text = text.decode() if isinstance(text, bytes) else text
    domain, bus, devfn = text.strip().lower().split(":")
    return f"{int(domain, 16):04x}:{bus}:{devfn}"


def pairs_of(gpus: list[dict], links: dict[int, list[dict]], cc: str) -> list[dict]:
    """Each pair of GPUs (i < j): NVLinks between them, directly or through NVSwitches, and their
    bandwidth per direction. ``links[i]``: GPU i's active links, each {"remote": "gpu" | "switch" |
    "other", "remote_pci_bus_id"}."""
    per_link = NVLINK_GBPS_PER_LINK.get(cc)
    out = []
    for a in gpus:
        for b in gpus:
            if b["index"] <= a["index"]:
                continue
            direct = sum(1 for l in links[a["index"]] if l["remote"] == "gpu" and l["remote_pci_bus_id"] == b["pci_bus_id"])
            switched = min(sum(1 for l in links[g["index"]] if l["remote"] == "switch") for g in (a, b))
            count, via = (direct, "direct") if direct else (switched, "nvswitch") if switched else (0, "none")
            out.append({"a": a["index"], "b": b["index"], "nvlinks": count, "via": via,
                        **({"nvlink_gbps_per_direction": count * per_link} if per_link and count else {})})
    return out


def collect_node() -> dict:
    """Every GPU the CUDA runtime sees, in its order (the order the benchmarks use), and their links."""
    import pynvml as nv
    from cupy.cuda import runtime
    nv.nvmlInit()
    count = runtime.getDeviceCount()
    remote_pci = getattr(nv, "nvmlDeviceGetNvLinkRemotePciInfo_v2", None) or nv.nvmlDeviceGetNvLinkRemotePciInfo
    gpus, links, handles = [], {}, {}
    for i in range(count):
        props = runtime.getDeviceProperties(i)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        pci = bus_id(runtime.deviceGetPCIBusId(i))
        handles[i] = nv.nvmlDeviceGetHandleByPciBusId(pci.encode())
        links[i] = []
        for link in range(nv.NVML_NVLINK_MAX_LINKS):
            try:
                if nv.nvmlDeviceGetNvLinkState(handles[i], link) != nv.NVML_FEATURE_ENABLED:
                    continue
                remote = bus_id(remote_pci(handles[i], link).busId)
            except nv.NVMLError:        # no such link, or no NVLink at all
                continue
            try:
                kind = {0: "gpu", 2: "switch"}.get(nv.nvmlDeviceGetNvLinkRemoteDeviceType(handles[i], link), "other")
            except (nv.NVMLError, AttributeError):
                kind = "gpu"
            links[i].append({"link": link, "remote": kind, "remote_pci_bus_id": remote})
        gpus.append({"index": i, "name": name, "pci_bus_id": pci, "nvlinks": len(links[i]),
                     "compute_capability": f"{props['major']}.{props['minor']}"})
    pairs = pairs_of(gpus, links, gpus[0]["compute_capability"]) if gpus else []
    for p in pairs:
        try:
            level = nv.nvmlDeviceGetTopologyCommonAncestor(handles[p["a"]], handles[p["b"]])
            p["pcie_path"] = PCIE_PATHS.get(level, str(level))
        except nv.NVMLError:
            p["pcie_path"] = "unknown"
        p["peer_access"] = bool(runtime.deviceCanAccessPeer(p["a"], p["b"]))
    return {"gpu_count": count, "gpus": gpus, "pairs": pairs,
            "multicast": {k: os.environ.get(k) for k in NO_MULTICAST}}
