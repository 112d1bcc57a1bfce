"""python -m bench.multigpu.nccl_json NODE_RESULTS [--out-dir DIR]: the collectives of a node's file
(multigpu.nccl) written as nccl-tests writes its -J output (JSON, version 3), one file a
collective (<binary>.json: all_reduce_perf.json, ...), so that they can be read beside a user's own
nccl-tests runs by the same tools. Each file says what it is not: the times are this project's
(the median sample of the slowest rank, one timer), not nccl-tests' mean of iterations."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from ..core import schema
from .collectives import NCCL_TESTS_BINARY, element_count

VERSION = 3             # nccl-tests' JSON_FILE_VERSION (src/util.cu)
REDUCING = {"all_reduce": "sum", "reduce_scatter": "sum"}


NCCL_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def nccl_version_code(version: str) -> int:
    """NCCL_VERSION_CODE of "2.28.9": 22809, as nccl-tests writes nccl_version."""
    found = NCCL_VERSION.match(version)
    if not found:
        raise ValueError(f"multigpu.nccl.params.nccl: expected NCCL's version as major.minor.patch, got {version!r}")
    major, minor, patch = (int(x) for x in found.groups())
    return major * 10000 + minor * 100 + patch


def as_nccl_tests(doc: dict, collective: str) -> dict:
    """One collective of a node's multigpu.nccl record in nccl-tests' JSON layout."""
    rec = doc["benchmarks"]["multigpu.nccl"]
    params = rec["params"]
    ranks = params["ranks"]
    rows = [r for r in rec["rows"] if r["collective"] == collective]
    root = params.get("broadcast_root", 0) if collective == "broadcast" else -1
    results = [{"size": r["bytes"], "count": element_count(collective, r["bytes"], ranks), "type": "float",
                "redop": REDUCING.get(collective, "none"), "root": f"{root:6d}",
                "out_of_place": {"time": 1e3 * r["time_ms"]["median"], "alg_bw": r["algbw_gbps"],
                                 "bus_bw": r["busbw_gbps"], "nwrong": float(r["wrong"])},
                "in_place": None, "actual_iterations": params["reps"], "experiment_name": ""} for r in rows]
    wrong = sum(r["wrong"] for r in rows)
    return {"version": VERSION, "start_time": rec["measured_at"],
            "args": [NCCL_TESTS_BINARY[collective], "-b", str(params["sizes_bytes"][0]),
                     "-e", str(params["sizes_bytes"][1]), "-f", "2", "-g", str(ranks)],
            "env": [f"{k}={v}" for k, v in sorted(params.get("multicast", {}).items())],
            "nccl_version": nccl_version_code(params["nccl"]),
            "config": {"nthreads": 1, "ngpus": ranks, "minimum_bytes": params["sizes_bytes"][0],
                       "maximum_bytes": params["sizes_bytes"][1], "step_factor": 2, "warmup_iters": params["warmup"],
                       "iterations": params["reps"], "aggregated_iterations": 1, "validation": 1, "graph": 0,
                       "blocking_collectives": False, "per_iter_timing": False, "per_iter_skip": 0,
                       "parallel_init": False,
                       "devices": [{"rank": g["index"], "group": 0, "device": g["index"], "device_hex": g["pci_bus_id"],
                                    "device_info": g["name"]} for g in doc["node"]["gpus"]]},
            "results": results,
            "out_of_bounds": {"count": wrong, "okay": wrong == 0},
            "average_bus_bandwidth": {"bandwidth": sum(r["busbw_gbps"] for r in rows) / len(rows) if rows else 0.0,
                                      "okay": "unchecked"},
            "end_time": rec["measured_at"],
            "written_by": ("this project's multigpu.nccl record (python -m bench, commit "
                           f"{rec.get('git_commit') or 'unknown'}), not nccl-tests: time is {params['time']}")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.multigpu.nccl_json", description=__doc__)
    ap.add_argument("results", type=Path, help="a node's results file (results/<gpu-slug>-x<N>.yaml)")
    ap.add_argument("--out-dir", type=Path, default=Path("."), help="where the JSON files go (default: here)")
    args = ap.parse_args(argv)
    try:
        doc = schema.load(args.results)
    except (OSError, schema.ResultsError) as e:
        print(f"python -m bench.multigpu.nccl_json: {e}", file=sys.stderr)
        return 1
    rec = doc["benchmarks"].get("multigpu.nccl")
    if "node" not in doc or not rec or rec["status"] != "ok":
        print(f"python -m bench.multigpu.nccl_json: {args.results} holds no measured multigpu.nccl record of a node",
              file=sys.stderr)
        return 1
    try:
        files = {args.out_dir / f"{NCCL_TESTS_BINARY[c]}.json": as_nccl_tests(doc, c)
                 for c in dict.fromkeys(r["collective"] for r in rec["rows"])}
    except ValueError as e:
        print(f"python -m bench.multigpu.nccl_json: {args.results}: {e}", file=sys.stderr)
        return 1
    try:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        for out, content in files.items():
            out.write_text(json.dumps(content, indent=2) + "\n")
            print(f"wrote {out}")
    except OSError as e:
        print(f"python -m bench.multigpu.nccl_json: cannot write into {args.out_dir}: {e.strerror or e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
