"""Simulated nodes of 4 and 8 H200s (tests/fixtures/h200-x4.yaml, h200-x8.yaml), made from the two
H200s measured (h200-x2.yaml), for the tests of the deck's node sizes: every GPU and every pair
through the NVSwitches as on an HGX board, every ordered pair's peer-to-peer row (the measured
pair's), and each collective's times as more ranks stretch them: the smallest messages by a longer
chain of hops (LATENCY), the largest by the bus factor of n ranks at a bus bandwidth a little lower
(BUSBW), the two blended by size. Not measurements: each file says so in its first line and in
node.simulated. tests/test_multigpu.py checks that the committed files are what this makes.

    python -m tests.make_node_fixtures      # rewrites both from h200-x2.yaml
"""
from __future__ import annotations

import copy
from pathlib import Path

from bench.core import schema
from bench.multigpu.collectives import BUS_FACTOR, bandwidths, element_count

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SOURCE = FIXTURES / "h200-x2.yaml"
MEASURED_GPUS = 2
LATENCY = {4: 1.3, 8: 1.7}          # the smallest message's time against two GPUs'
BUSBW = {4: 0.97, 8: 0.92}          # the largest messages' bus bandwidth against two GPUs'
BLEND_BYTES = 8 << 20               # the size at which latency and bandwidth weigh alike
# An HGX board's GPUs by PCIe address, four to a CPU socket (a pair across sockets: PCIe path SYS)
BUS_IDS = ("0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
           "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0")
PER_SOCKET = 4


def path_of(n: int) -> Path:
    return FIXTURES / f"h200-x{n}.yaml"


def time_ratio(collective: str, nbytes: int, n: int) -> float:
    """A collective's time on n GPUs against two: LATENCY for the smallest, the bus factors' ratio
    over BUSBW for the largest."""
    large = nbytes / (nbytes + BLEND_BYTES)
    bandwidth = BUS_FACTOR[collective](n) / BUS_FACTOR[collective](MEASURED_GPUS) / BUSBW[n]
    return LATENCY[n] * (1 - large) + bandwidth * large


def checked(collective: str, nbytes: int, n: int) -> int:
    """Output elements the ranks check together (bench/multigpu/collective_rank.py): a reduce-scatter's
    ranks each hold a part of the whole, the others each a whole."""
    count = element_count(collective, nbytes, n)
    return count if collective == "reduce_scatter" else count * n


def scaled(rows: list[dict], n: int) -> list[dict]:
    """The rows a node of n GPUs records: those of sizes its ranks can split (element_count), each
    time stretched by time_ratio and its bandwidths recomputed for n ranks."""
    out = []
    for row in rows:
        c, nbytes = row["collective"], row["bytes"]
        if not element_count(c, nbytes, n):
            continue
        r, ratio = copy.deepcopy(row), time_ratio(c, nbytes, n)
        if "time_ms" in r:
            r["time_ms"].update({k: r["time_ms"][k] * ratio for k in ("median", "p10", "p90")})
            r["checked"] = checked(c, nbytes, n)
            r.update(bandwidths(c, nbytes, r["time_ms"]["median"], n))
        else:                                                        # nccl-tests' row: its own host timer
            r["time_us"] *= ratio
            r.update(bandwidths(c, nbytes, r["time_us"] * 1e-3, n))
        out.append(r)
    return out


def node_of(doc: dict, n: int) -> dict:
    """The measured node ``doc`` as a node of n GPUs would record it."""
    doc = copy.deepcopy(doc)
    doc["device"].update(gpu_count=n, pci_bus_id=BUS_IDS[0])
    node, gpu, pair = doc["node"], doc["node"]["gpus"][0], doc["node"]["pairs"][0]
    node["gpu_count"] = n
    node["gpus"] = [{**gpu, "index": i, "pci_bus_id": BUS_IDS[i]} for i in range(n)]
    node["pairs"] = [{**pair, "a": a, "b": b, "pcie_path": "NODE" if a // PER_SOCKET == b // PER_SOCKET else "SYS"}
                     for a in range(n) for b in range(a + 1, n)]
    node["simulated"] = f"from {SOURCE.name} by tests/{Path(__file__).name}: not a measurement"
    p2p = doc["benchmarks"]["multigpu.p2p"]
    p2p["rows"] = [{**p2p["rows"][0], "src": s, "dst": d} for s in range(n) for d in range(n) if s != d]
    peer = doc["benchmarks"]["multigpu.nvbandwidth"]          # each test case's pair 0 -> 1, for every pair
    peer["rows"] = [{**r, "src": s, "dst": d} for r in peer["rows"] if (r["src"], r["dst"]) == (0, 1)
                    for s in range(n) for d in range(n) if s != d]
    # the overlap's figures are the GEMM's as much as the links': nothing to scale them by
    del doc["benchmarks"]["multigpu.overlap"]
    for bid in ("multigpu.nccl", "multigpu.nccl_tests"):
        rec = doc["benchmarks"][bid]
        rec["params"]["ranks"] = n
        rec["rows"] = scaled(rec["rows"], n)
    doc["benchmarks"]["multigpu.nccl_tests"]["params"]["processes"] = f"one process, -g {n}"
    return doc


def text_of(n: int) -> str:
    """The fixture file of n GPUs, as written."""
    source = schema.load(SOURCE)
    for row in source["benchmarks"]["multigpu.nccl"]["rows"]:      # the model of checked elements fits what ran
        assert row["checked"] == checked(row["collective"], row["bytes"], MEASURED_GPUS), row
    header = f"# SIMULATED: {n} H200s made from {SOURCE.name} by tests/{Path(__file__).name}; not a measurement.\n"
    return header + schema.dump_loadable(node_of(source, n), str(path_of(n)))


def main() -> None:
    for n in LATENCY:
        path_of(n).write_text(text_of(n))
        schema.load(path_of(n))
        print(f"wrote {path_of(n).relative_to(FIXTURES.parent.parent)}")


if __name__ == "__main__":
    main()
