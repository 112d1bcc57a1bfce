"""The results file: the contract between ``python -m bench`` and build.py.

One YAML file per GPU (results/<gpu-slug>.yaml)::

    schema_version: 1
    device:                       # read from the CUDA runtime and NVML when the run started
      name: NVIDIA H100 80GB HBM3
      slug: nvidia-h100-80gb-hbm3
      compute_capability: "9.0"
      sm_count: 132
      sm_clock_max_mhz: 1980      # NVML max SM clock
      sm_clock_mhz: 1980          # SM clock when the device was read
      mem_clock_max_mhz: 2619
      mem_bus_width_bits: 5120
      l2_bytes: 52428800
      smem_per_block_optin_bytes: 232448
      memory_bytes: 85...
      power_limit_w: 700          # NVML's enforced power limit
    software: {driver, cuda_runtime, python, cupy, numba, nvcc, git_commit}   # strings or null
    node: {gpu_count, gpus: [..], pairs: [{a, b, nvlinks, via, nvlink_gbps_per_direction}], multicast}
                                  # only in a node's file, results/<gpu-slug>-x<N>.yaml (bench/core/topology.py)
    benchmarks:                   # merged by id: rerunning one family keeps the others
      gemm.cublas_tf32_b_row:
        family: gemm
        title: cuBLAS TF32, B row-major
        status: ok | failed | skipped
        reason: why, when status is not ok
        source_hash: 16 hex digits over the files that produced the result and the catalogue's
                     kernels it ran (bench/core/provenance.py)
        sources: [the files, repository-relative]   # absent in records older than 2026-11-27: stale
        kernels: [routes of the catalogue's kernels it ran]   # "gemm.persistent", "before:<id>", "best:<step>", a role
        measured_at: ISO-8601 UTC time
        git_commit: the commit the code was at (null outside a checkout)
        quick: true when measured by python -m bench --quick (a smoke refresh); absent otherwise
        peer: {checkout, commit}  # a peer's benchmark: the checkout it built and its commit (bench/core/peers.py)
        duration_s: wall time of the benchmark's run, its kernels built before (the run's compiles are not in it)
        telemetry: {before: SAMPLE, after: SAMPLE}     # absent only when skipped
            # SAMPLE: {sm_clock_mhz, mem_clock_mhz, power_w, temperature_c, throttle_reasons: [..]}
            #         or null with telemetry.error saying why NVML could not be read
        params: {...}             # the method's parameters (sizes, blocks, threads, repetitions)
        check: {passed: bool, ...}  # where the output can be checked
        # measurements, by kind:
        time_ms: {median, p10, p90, n,   # from the one timer
                  batch?}                #   runs per sample (its time: their mean); absent: 1
        tflops: number                   # from the median time
        gbps: number                     # bytes read + written over the median time
        rows: [{...}, ...]               # tables
        # family-specific fields: what the deck reads of each family's ok record is RECORDS below,
        # written out in docs/results-schema.md (python -m bench.core.schema_doc); the rest is
        # described where the benchmark is defined

Every number anywhere in the file is finite, not negative and at most 1e15; what the deck
reads from each family's ok record is described in RECORDS and checked too. ``load`` raises
``ResultsError`` naming the file, the field and what was expected; it refuses a file that
is too large, not UTF-8 or cut mid-line before parsing it, and one that holds anchors or
aliases, nests too deep or repeats a key where it meets them, before building anything below.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
import stat
from pathlib import Path

import yaml

SCHEMA_VERSION = 1
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)    # libyaml's parser when PyYAML has it
STATUSES = ("ok", "failed", "skipped")
# Bus bandwidth = algorithm bandwidth x this factor for n ranks (nccl-tests, doc/PERFORMANCE.md):
# what each rank's busiest link carries, so that every collective can be held to the link's speed.
# The multigpu.nccl and multigpu.nccl_tests records' busbw_gbps, by collective.
BUS_FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
    # each rank sends (n-1)/n of its buffer to the others and keeps the rest: a mixture-of-experts
    # layer's dispatch and combine
    "all_to_all": lambda n: (n - 1) / n,
}
COLLECTIVES = tuple(BUS_FACTOR)
GPU_TESTS = "checks.gpu_tests"     # the record of python -m pytest -m gpu on the GPU that measured (bench/checks.py)

DEVICE_FIELDS = {
    "name": str, "slug": str, "compute_capability": str, "sm_count": int,
    "sm_clock_max_mhz": (int, float), "sm_clock_mhz": (int, float),
    "mem_clock_max_mhz": (int, float), "mem_bus_width_bits": int, "l2_bytes": int,
    "smem_per_block_optin_bytes": int, "memory_bytes": int,
    "max_threads_per_sm": int, "regs_per_sm": int, "smem_per_sm_bytes": int,
    "power_limit_w": (int, float),      # NVML's enforced limit: the cap the deck's clock claims refer to
}
# Device fields the deck divides by or multiplies into a peak: zero would make every figure 0 or inf.
POSITIVE_DEVICE_FIELDS = ("sm_count", "sm_clock_max_mhz", "mem_clock_max_mhz", "mem_bus_width_bits", "l2_bytes",
                          "max_threads_per_sm", "regs_per_sm", "smem_per_sm_bytes", "power_limit_w")
CAPABILITY = re.compile(r"\d{1,2}\.\d")
LARGEST = 1e15          # past any byte count, clock, counter or time a GPU run records
# What a results file may hold before it is even parsed: ours are ~300 KB, 10 levels deep,
# with no anchors or aliases (PyYAML's dump writes none for them).
MAX_BYTES = 16 * 2**20
MAX_DEPTH = 32
SOFTWARE_FIELDS = ("driver", "cuda_runtime", "python", "cupy", "numba", "git_commit")
TIME_FIELDS = ("median", "p10", "p90", "n")


NUM = (int, float)


class Positive:
    """A leaf of a spec (RECORDS, NODE) that must be > 0: the deck divides by it or takes its logarithm."""

    def __init__(self, t=NUM):
        self.t = t


POS, POS_INT = Positive(), Positive(int)


class Exactly:
    """A leaf of a spec that is a list of exactly ``n``, each following ``spec``: an interval, an MMA atom's M, N, K."""

    def __init__(self, n: int, spec):
        self.n, self.spec = n, spec


def Pair(spec) -> Exactly:
    return Exactly(2, spec)


class OneOf:
    """A leaf of a spec that is one of ``values`` (a name the code looks up: a collective)."""

    def __init__(self, values):
        self.values = tuple(values)


_TIMED = {"median": POS}
# a ratio of two kernels' samples in turns: its median, spread and interval, as the slides quote them
_RATIO = {"median": POS, "p10": POS, "p90": POS, "ci": Pair(POS)}
# a size of a sweep or a cell of the atlas (bench/gemm/sweep.py): what the deck reads of it
_SWEEP_ROW = {"shape": [int], "outcome": str, "kernel?": str, "ratio_same_layout?": NUM, "tflops?": dict,
              "tile?": {"BM": POS_INT, "BN": POS_INT},
              "plan?": {"kind": str, "units": POS_INT, "clusters": POS_INT, "k_tiles": POS_INT},
              "cublas_check?": {"passed": bool, "rel_error": NUM},
              "operand_sets?": POS_INT}        # where one set of operands fits in L2: the copies its runs cycled through
_TILE = {"BM": POS_INT, "BN": POS_INT}
_P2P = ("copy_engine", "copy_engine_both_ways", "sm_read", "sm_write")
_BUSBW = {"algbw_gbps": NUM, "busbw_gbps": NUM}
_OVERLAPPED = {"tile": str, "times_ms": {w: _TIMED for w in ("overlapped", "sequential", "gemm", "comm")},
               "efficiency": {"of_ideal": POS, "speedup_over_serial": POS}, "check": {"passed": bool, "rel_error": NUM},
               "timeline": [{"stream": str, "chunk": int, "start_ms": NUM, "end_ms": NUM}]}
# A node's file (results/<gpu-slug>-x<N>.yaml) also holds the node: its GPUs and their links.
NODE = {"gpu_count": int, "gpus": [{"index": int, "name": str, "pci_bus_id": str, "nvlinks": int}],
        "pairs": [{"a": int, "b": int, "nvlinks": int, "via": str, "nvlink_gbps_per_direction?": POS,
                   "pcie_path?": str}],
        "multicast": {"NCCL_NVLS_ENABLE?": str}}
# What the deck reads from an ok record, by id prefix (the first that matches): a mapping's
# keys, "?" marking one that may be absent; [spec] a list of at least one entry, each
# following spec. The record's own fields (status, time_ms, check, ...) are checked above.
_PEER_RUN = {"time_ms": {"median": POS, "ci": Pair(POS)}, "tflops": POS, "check": {"passed": bool, "rel_error": NUM}}
_STREAM = {"time_ms": {"median": POS, "ci": Pair(POS)}, "tbps": POS, "bytes_per_sm_clock": POS}     # machinery.tma: a stream's rate
_ENERGY = {"watts": POS, "time_ms": POS, "joules": POS, "tflops_per_watt": POS}
_CHECKED = {"passed": bool, "rel_error": NUM}
_CONFIG = {k: int for k in ("BN", "STAGES", "CLUSTER_M", "GROUP_M")}      # a configuration the tuner tried


# the constants a step's diagram reads off its recorded tile: a CuTe MMA tile's warps, a Hopper tile's ring
_SM80_TILE = {**_TILE, "BK": POS_INT, "WARPS_M": POS_INT, "WARPS_N": POS_INT, "MMA_ATOM": str, "atom_mnk": Exactly(3, POS_INT)}
_SM90_TILE = {**_TILE, "BK": POS_INT, "STAGES": POS_INT, "GROUP_M": int, "WARPGROUPS_M": POS_INT,
              "atom_mnk": Exactly(3, POS_INT)}


def _gemm(tile: dict = _SM90_TILE) -> dict:
    """A GEMM step's record; ``tile``: what its slides read off its recorded tile, where it has one."""
    return {"params": {"m": POS_INT, "n": POS_INT, "k": POS_INT, "turn_ms": POS}, "time_ms": _TIMED, "tflops": NUM,
            "check": _CHECKED,
            "resources?": {"threads_per_block": POS_INT, "grid": [POS_INT], "regs_per_thread": int, "smem_static_bytes": int,
                           "smem_dynamic_bytes": int, "tile?": tile,
                           "sass?": {"main_loop?": {"instructions": POS_INT, "mma": int}},
                           "tma?": {"a": {"box": [POS_INT]}, "b": {"box": [POS_INT]}},
                           "split_wave?": {"full_waves": int, "k_tiles": POS_INT, "left": int, "rounds": int,
                                           "split": int, "helpers": int, "units": POS_INT, "clusters": POS_INT,
                                           "fixup_k_tiles?": int}},
            "cublas": {"id": str, "time_ms": _TIMED, "tflops": POS, "ratio": NUM, "ratio_by_sample?": _RATIO,
                       "check": _CHECKED, "energy?": _ENERGY},
            # the step before it, in the same turns
            "before?": {"id": str, "time_ms": _TIMED, "tflops": POS, "gain": NUM, "gain_by_sample": _RATIO},
            "energy?": _ENERGY,
            "odd_shape?": {"outcome": str, "shape": [int]},
            "settle?": {"seconds": NUM, "settled": bool},
            # python -m bench --profile's counters, and the launch they were read from (results.launch_fingerprint)
            "profile?": {"metrics": dict, "names": dict, "of?": str}}


RECORDS = {
    "checks.gpu_tests": {"tests": {"passed": int, "failed": int, "skipped": int, "failures": list,
                                   "slowest?": [{"name": str, "seconds": NUM}]}},
    "peers.gpu_benches": {"params": {"commit": str, "latency_s": POS},
                          "stream": [{"block": POS_INT, "blocks_per_sm": int, "gbps": {k: NUM for k in (
                              "init", "read", "scale", "triad", "stencil3", "stencil5")}}],
                          "l2_cache": [{"footprint_kb": POS, "gbps": POS}],
                          "latency": [{"footprint_kb": POS, "cycles": POS}]},
    "peers.deepgemm": {"params": {"commit": str, "version": str, "ours": str, "block": {"a": Pair(POS_INT), "b": Pair(POS_INT)},
                                  "outputs": {"ours": str}, "scaling": {"ours": str}},
                       "shapes": [{"shape": [POS_INT], **{who: _PEER_RUN for who in ("deepgemm", "cublaslt_blocks", "cublaslt_bf16_out")},
                                   "deepgemm_over_cublaslt_by_sample": _RATIO,
                                   "ours?": _PEER_RUN, "ours_over_deepgemm_by_sample?": _RATIO,
                                   # each one's tile: DeepGEMM's as it printed it, from records of 2026-11-30 on
                                   "deepgemm_config?": {"block_m": POS_INT, "block_n": POS_INT}, "ours_tile?": {"BM": POS_INT, "BN": POS_INT},
                                   # python -m bench --profile's counters at the shape, DeepGEMM's kernel's and ours
                                   "profile?": {"peer": dict, "ours?": dict},
                                   # where A, B and C are small beside L2: the copies of them its runs took in turn
                                   "operand_sets?": POS_INT}],
                       "profile?": {"names": dict, "of?": str}},     # the counters' names, once
    "peers.fastcu": {"params": {"commit": str, "ours": str},      # ours_bf16_out: records from ddaaf36 on
                         "shapes": [{"shape": [int], "ours_bf16_out?": _PEER_RUN,
                                     **{who: _PEER_RUN for who in ("fastcu", "cublas_bf16_out", "cublas", "ours")}}]},
    "gemm.cublas_": {"time_ms": _TIMED, "tflops": NUM, "energy?": _ENERGY},
    # the FP8 steps' slides draw their tiles: the K-tile, the warpgroups that promote, the scales' block
    "gemm.fp8_blocks": _gemm({**_SM90_TILE, "SCALE_BLOCK": POS_INT}),
    "gemm.cute_": _gemm(_SM80_TILE),
    "gemm.": _gemm(),
    "burst.": {"params": {"rest_s": NUM, "runs": POS_INT, "sustain_s": POS},
               "rows": [{"name": str, "title": str, "shape": [int], "time_ms": _TIMED, "tflops": POS,
                         "check": {"passed": bool, "rel_error": NUM}, "sustained?": {"tflops": POS, "watts": POS},
                         "samples": [{"ms": POS, "nvml_sm_clock_mhz": NUM, "power_w": NUM}]}]},
    "hbm.": {"params": {"buffer_bytes": int}, "memcpy": {"gbps": POS, "label": str},
             "rows": [{"label": str, "blocks": POS_INT, "threads": int, "sms_used": POS_INT, "gbps": POS}]},
    "l2.placement": {"params": dict,
                     "rows": [{"sms": POS_INT, "scheduled_sms": [int], "spread_sms": [int],
                               **{how: {"gbps": POS, "passes": POS_INT, "time_ms": {"median": POS, "ci": Pair(POS)}}
                                  for how in ("scheduled", "spread")}}],
                     "sweep": [{"bytes": POS_INT, "gbps": POS}]},
    "l2.latency_map": {"params": {"lines": POS_INT, "hops": POS_INT, "buffer_bytes": POS_INT}, "rows": [{"sm": int, "cycles": [POS]}]},
    "l2.bandwidth_scaling": {"params": {"read_bytes": int, "copy_bytes": int},
            "rows": [{"label": str, "sms": POS_INT, "blocks": POS_INT, "threads": POS_INT, "read": {"gbps": NUM}, "copy": {"gbps": NUM},
                      "sms_used?": POS_INT}]},       # sms_used: records from one block an SM on
    "latency.instruction": {"params": {"ilps": [int], "iters": int, "ops_per_iter": int, "subpartitions": int},
                            "check": {"passed": bool},
                            # the SASS of the chain of one (ILP 1): its instructions per op, alone and in the mix
                            "rows": [{"op": str, "name": str, "cycles": dict, "sass": {"1": {"per_op": NUM, "mix_per_op": dict}},
                                      "warps_per_sm": NUM, "issue_cycles_per_subpartition": POS}]},
    "latency.memory": {"params": {"line_bytes": int}, "levels": [{"label": str, "level": str, "bytes": POS_INT, "cycles": POS, "ns": POS}],
                       "sweep": [{"bytes": POS_INT, "cycles": POS, "ns": POS}]},
    "transpose.": {"params": {"n": int, "bytes": int}, "copy": {"gbps": NUM, "kernel": str, "time_ms": _TIMED},
                   "rows": [{"key": str, "label": str, "note": str, "gbps": POS, "pct_of_copy": NUM,
                             "check_passed": bool, "time_ms": _TIMED, "tile": int}]},
    "multigpu.p2p": {"params": {"bytes": int},
                     "rows": [{"src": int, "dst": int, "peer_access": bool, "nvlink_gbps_per_direction?": POS,
                               **{f"{how}?": {"gbps": NUM} for how in _P2P},
                               "latency_ns?": {"peer": NUM, "local": NUM}}]},
    "multigpu.nccl_tests": {"params": {"ranks": int, "version": str},
                            "rows": [{"collective": OneOf(COLLECTIVES), "mode": str, "bytes": POS_INT, "time_us": POS, **_BUSBW}]},
    "multigpu.nvbandwidth": {"params": {"version": str, "cases": dict},
                             "rows": [{"case": str, "src": int, "dst": int, "value": POS, "unit": str}]},
    "multigpu.overlap": {"params": {"ranks": int, "kernels": dict, "chunks": POS_INT, "target_of_ideal": POS},
                         "patterns": {p: {"gemm": [POS_INT], "comm": str, "comm_bytes": POS_INT,
                                          "kernels": {label: _OVERLAPPED for label in ("persistent", "a CTA a tile", "cuBLAS")}}
                                      for p in ("all_gather_gemm", "gemm_reduce_scatter")}},
    "multigpu.nccl": {"params": {"ranks": int, "reps": POS_INT, "warmup": int, "sizes_bytes": Pair(POS_INT), "nccl": str,
                                 "time": str},
                      "rows": [{"collective": OneOf(COLLECTIVES), "bytes": POS_INT, "time_ms": _TIMED,
                                                          "wrong": int, "algorithm?": str, "protocol?": str, **_BUSBW}]},
    "machinery.tma": {"params": {"stream_box_bytes": POS_INT, "stream_boxes": POS_INT, "multicast_slots": POS_INT,
                                 "matrix_bytes": POS_INT, "l2_region_bytes": POS_INT, "issuer_slots": POS_INT,
                                 "latency_iters": POS_INT},
                      "latency": [{"source": str, "box_bytes": POS_INT, "cycles": POS}],
                      "depth": [{"source": str, "slots": POS_INT, "tma": _STREAM, "cp_async": _STREAM}],
                      "sizes": [{"source": str, "box_bytes": POS_INT, "slots": POS_INT, "tma": _STREAM}],
                      "issuers": [{"source": str, "ctas_per_sm": POS_INT, "slots": POS_INT, "tma": _STREAM}],
                      "multicast": [{"source": str, "cluster": POS_INT, "ctas": POS_INT, "separate": _STREAM,
                                     "multicast": _STREAM}]},
    "machinery.cluster": {"params": {"clusters": [POS_INT], "hops": POS_INT, "buffer_bytes": POS_INT, "passes": POS_INT,
                                     "meetings": POS_INT},
                          "rows": [{"cluster": POS_INT, "ctas": POS_INT, "chase_cycles": {"own": POS, "peer": POS},
                                    "stream": {w: _STREAM for w in ("own", "peer")},
                                    "barrier_cycles": {"cta": POS, "cluster": POS, "cluster_relaxed": POS},
                                    "signal_round_trip_cycles": POS}],
                          # setmaxnreg: records from the register trade on
                          "setmaxnreg?": {"regs": {"entry": POS_INT, "producer": POS_INT, "consumer": POS_INT},
                                          "warpgroups": POS_INT, "round_trip_cycles": POS,
                                          "hand_over_cycles": {"producer": POS, "consumers": POS, "consumers_slowest": POS}}},
    "machinery.wgmma": {"params": {"ns": [POS_INT], "iters": POS_INT, "warpgroups": [POS_INT]},
                        "rows": [{"precision": str, "n": POS_INT, "atom": [POS_INT], "k_tile": POS_INT, "latency_cycles": POS,
                                  "rates": [{"warpgroups": POS_INT, "time_ms": _TIMED, "flop_per_sm_clock": POS, "tflops": POS}]}]},
    "atlas.": {"params": {"precision": str, "scaling?": str, "output?": str, "ms": [POS_INT],
                          "projections": [{"model": str, "projection": str, "n": POS_INT, "k": POS_INT}]},
               "rows": [{"model": str, "projection": str, **_SWEEP_ROW,
                         "headline?": {"kernel": str, "ratio": POS, "ci": [POS]}}]},
    "sweep.": {"params": {"precision": str, "timed_s": POS}, "rows": [_SWEEP_ROW]},
    # the block-scaled kernel's constants, each changed, timed in turns with its pick (bench/gemm/tune_blocks.py)
    "tune.fp8_blocks": {"params": {"kernel": str, "shape": [POS_INT], "knobs": dict, "pick_stages": POS_INT},
                        "shape": [POS_INT], "tiles": {"catalogue": dict}, "pairs": dict},
    "tune.": {"params": {"bm": int, "space": {k: [int] for k in _CONFIG}, "stages_max": dict, "kernel": str, "m": POS_INT,
                         "n": POS_INT, "k": POS_INT, "trial_reps": POS_INT, "final_reps": POS_INT, "final_settle_s": NUM},
              "trials": [{"config": _CONFIG, "outcome": str, "check?": _CHECKED}],
              "winner": int, "hand_picked": int,
              "final": {"winner": {"config": _CONFIG, "ratio": POS, "tflops": POS},
                        "hand_picked": {"config": _CONFIG, "ratio": POS, "ratio_by_sample": _RATIO},
                        "cublas_time_ms": _TIMED}},
    "settle.": {"params": {"kernel": str, "sample_ms": POS, "gemm_settle_rule": {"max_s": NUM, "round_s": POS, "drift": NUM},
                           "m": POS_INT, "n": POS_INT, "k": POS_INT, "rest_s": NUM, "duration_s": POS, "gemm_reps": POS_INT,
                           "gemm_turn_ms": POS},
                "series": {who: {"batch": int, "rows": [{"t_s": NUM, "ms": POS, "sm_clock_mhz": NUM,
                                                         "temperature_c": NUM}]} for who in ("kernel", "cublas")}},
}


_BREAKS = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\s]+")     # controls, line and paragraph breaks


def one_line(value, limit: int) -> str:
    """``value`` as text on one line of at most ``limit`` characters (an ellipsis marks a cut):
    how a reason is recorded, and how any string from a results file is shown."""
    text = _BREAKS.sub(" ", str(value)).strip()
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


class ResultsError(ValueError):
    """A results file that does not follow the schema."""


def _type_name(t) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true/false",
             dict: "a mapping", list: "a list"}
    if isinstance(t, tuple):
        return "a number" if set(t) == {int, float} else " or ".join(names[x] for x in t)
    return names[t]


def spec_name(spec) -> str:
    """A spec's leaf as an error message and docs/results-schema.md say it."""
    if isinstance(spec, Positive):
        return f"{_type_name(spec.t)} > 0"
    if isinstance(spec, Exactly):
        return f"a list of {spec.n}"
    if isinstance(spec, OneOf):
        return "one of " + ", ".join(spec.values)
    return "a mapping" if isinstance(spec, dict) else "a list" if isinstance(spec, list) else _type_name(spec)


class _Validator:
    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, expected: str, got) -> None:
        shown = repr(got) if not isinstance(got, (dict, list)) else type(got).__name__
        raise ResultsError(f"{self.source}: {path or 'top level'}: expected {expected}, got {shown}")

    def expect(self, value, t, path: str):
        # bool is an int in Python; a true/false where a number belongs is an error
        if isinstance(value, bool) and t is not bool and bool not in (t if isinstance(t, tuple) else (t,)):
            self.fail(path, _type_name(t), value)
        if not isinstance(value, t):
            self.fail(path, _type_name(t), value)
        return value

    def require(self, mapping: dict, key: str, t, path: str):
        if key not in mapping:
            self.fail(f"{path}.{key}".lstrip("."), f"{_type_name(t)} (the field is missing)", None)
        return self.expect(mapping[key], t, f"{path}.{key}".lstrip("."))

    def values(self, value, path: str) -> None:
        """Every leaf is a plain YAML scalar; every number finite and >= 0."""
        if isinstance(value, dict):
            for k, v in value.items():
                if not isinstance(k, str):
                    self.fail(path, "string keys", k)
                self.values(v, f"{path}.{k}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                self.values(v, f"{path}[{i}]")
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            pass
        elif isinstance(value, (int, float)):
            if isinstance(value, int) and value > LARGEST:    # before float(), which 10**400 overflows
                self.fail(path, f"a number up to {LARGEST:g}", "an integer of %d digits" % len(str(value)))
            if not math.isfinite(value) or value < 0:
                self.fail(path, "a finite number >= 0", value)
            if value > LARGEST:
                self.fail(path, f"a number up to {LARGEST:g}", value)
        else:
            self.fail(path, "a string, number, true/false, null, list or mapping "
                            f"(not a {type(value).__name__})", value)

    def benchmark(self, bid: str, rec, path: str) -> None:
        self.expect(rec, dict, path)
        self.values(rec, path)
        self.require(rec, "family", str, path)
        status = self.require(rec, "status", str, path)
        if status not in STATUSES:
            self.fail(f"{path}.status", "one of " + ", ".join(STATUSES), status)
        if status != "ok":
            self.require(rec, "reason", str, path)
        self.require(rec, "source_hash", str, path)
        for field in ("sources", "kernels"):
            if field in rec:
                for i, item in enumerate(self.expect(rec[field], list, f"{path}.{field}")):
                    self.expect(item, str, f"{path}.{field}[{i}]")
        if status != "skipped":
            tel = self.require(rec, "telemetry", dict, path)
            for when in ("before", "after"):
                if when not in tel:
                    self.fail(f"{path}.telemetry.{when}", "a telemetry sample or null (the field is missing)", None)
        if "check" in rec:
            self.require(self.expect(rec["check"], dict, f"{path}.check"), "passed", bool, f"{path}.check")
        profile = rec.get("profile")
        if isinstance(profile, dict) and isinstance(profile.get("metrics"), dict) and isinstance(profile.get("names"), dict):
            for metric in profile["metrics"]:       # the slides name each counter they quote
                if metric not in profile["names"]:
                    self.fail(f"{path}.profile.names.{metric}", "the name of every metric measured (the field is missing)", None)
        if "peer" in rec:
            for field in ("checkout", "commit"):
                self.require(self.expect(rec["peer"], dict, f"{path}.peer"), field, str, f"{path}.peer")
        if "time_ms" in rec:
            t = self.expect(rec["time_ms"], dict, f"{path}.time_ms")
            for f in TIME_FIELDS:
                self.require(t, f, int if f == "n" else (int, float), f"{path}.time_ms")
            if "batch" in t and not (isinstance(t["batch"], int) and t["batch"] >= 1):
                self.fail(f"{path}.time_ms.batch", "a whole number of runs per sample, at least 1", t["batch"])
            if not t["median"] > 0:
                self.fail(f"{path}.time_ms.median", "a number > 0 (a time)", t["median"])
            if not t["p10"] <= t["median"] <= t["p90"]:
                self.fail(f"{path}.time_ms", "p10 <= median <= p90",
                          f"p10={t['p10']}, median={t['median']}, p90={t['p90']}")
        for f in ("tflops", "gbps"):
            if f in rec:
                self.expect(rec[f], (int, float), f"{path}.{f}")
        if "rows" in rec:
            for i, row in enumerate(self.expect(rec["rows"], list, f"{path}.rows")):
                self.expect(row, dict, f"{path}.rows[{i}]")
        telemetry = rec.get("telemetry")
        during = telemetry.get("during") if isinstance(telemetry, dict) else None
        if during is not None:
            self.shape(during, {"sm_clock_mhz": {"median": NUM}}, f"{path}.telemetry.during")
        spec = next((spec for prefix, spec in RECORDS.items() if bid.startswith(prefix)), None)
        if status == "ok" and spec is not None:
            self.shape(rec, spec, path)
            if bid.startswith("sweep."):          # a correct size was timed: its speeds are what the slide shows
                for i, row in enumerate(rec["rows"]):
                    if row["outcome"] == "correct":
                        self.shape(row, {"ratio_same_layout": POS, "tflops": {"kernel": POS}}, f"{path}.rows[{i}]")

    def shape(self, value, spec, path: str) -> None:
        """``value`` follows ``spec`` (see RECORDS)."""
        if isinstance(spec, dict):
            self.expect(value, dict, path)
            for key, sub in spec.items():
                name = key.rstrip("?")
                if name in value:
                    self.shape(value[name], sub, f"{path}.{name}")
                elif not key.endswith("?"):
                    self.fail(f"{path}.{name}", f"{spec_name(sub)} (the field is missing)", None)
        elif isinstance(spec, list):
            if not self.expect(value, list, path):
                self.fail(path, f"a list of at least one entry, each {spec_name(spec[0])}", value)
            for i, item in enumerate(value):
                self.shape(item, spec[0], f"{path}[{i}]")
        elif isinstance(spec, OneOf):
            if value not in spec.values:
                self.fail(path, spec_name(spec), value)
        elif isinstance(spec, Exactly):
            if len(self.expect(value, list, path)) != spec.n:
                self.fail(path, f"{spec_name(spec)} entries, each {spec_name(spec.spec)}", value)
            for i, item in enumerate(value):
                self.shape(item, spec.spec, f"{path}[{i}]")
        elif isinstance(spec, Positive):
            if not self.expect(value, spec.t, path) > 0:
                self.fail(path, spec_name(spec), value)
        else:
            self.expect(value, spec, path)

    def document(self, doc) -> dict:
        self.expect(doc, dict, "")
        version = self.require(doc, "schema_version", int, "")
        if version != SCHEMA_VERSION:
            self.fail("schema_version", f"{SCHEMA_VERSION} (this code's schema)", version)
        device = self.require(doc, "device", dict, "")
        for key, t in DEVICE_FIELDS.items():
            self.require(device, key, t, "device")
        self.values(device, "device")
        for key in POSITIVE_DEVICE_FIELDS:
            if not device[key] > 0:
                self.fail(f"device.{key}", "a number > 0", device[key])
        if not CAPABILITY.fullmatch(device["compute_capability"]):
            self.fail("device.compute_capability", "major.minor, like '9.0'", device["compute_capability"])
        software = self.require(doc, "software", dict, "")
        for key in SOFTWARE_FIELDS:
            if key not in software:
                self.fail(f"software.{key}", "a string or null (the field is missing)", None)
            if software[key] is not None:
                self.expect(software[key], str, f"software.{key}")
        benchmarks = self.require(doc, "benchmarks", dict, "")
        for bid, rec in benchmarks.items():
            self.expect(bid, str, "benchmarks (keys)")
            if "." not in bid:
                self.fail(f"benchmarks.{bid}", "an id like '<family>.<name>'", bid)
            self.benchmark(bid, rec, f"benchmarks.{bid}")
        if "node" in doc:
            self.values(doc["node"], "node")
            self.shape(doc["node"], NODE, "node")
            if doc["node"]["gpu_count"] < 2:
                self.fail("node.gpu_count", "2 or more (a node's file)", doc["node"]["gpu_count"])
            indices = set()
            for i, gpu in enumerate(doc["node"]["gpus"]):
                if gpu["index"] in indices:
                    self.fail(f"node.gpus[{i}].index", "an index no other GPU of the node has", gpu["index"])
                if gpu["name"] != doc["device"]["name"]:        # one card's node: its slides are that card's
                    self.fail(f"node.gpus[{i}].name", f"the file's GPU, {doc['device']['name']!r}", gpu["name"])
                indices.add(gpu["index"])
            for i, pair in enumerate(doc["node"]["pairs"]):
                for end in ("a", "b"):
                    if pair[end] not in indices:
                        self.fail(f"node.pairs[{i}].{end}", f"the index of one of the node's GPUs "
                                  f"({', '.join(map(str, sorted(indices)))})", pair[end])
        unknown = set(doc) - {"schema_version", "device", "software", "benchmarks", "node"}
        if unknown:
            self.fail(sorted(unknown)[0], "no such top-level field", doc[sorted(unknown)[0]])
        return doc


def validate(doc, source: str = "<results>") -> dict:
    return _Validator(source).document(doc)


def validate_record(bid: str, record, source: str = "the benchmark's record") -> dict:
    """One benchmark's record, as ``validate`` would check it inside a results file."""
    _Validator(source).benchmark(bid, record, f"benchmarks.{bid}")
    return record


class _UniqueKeyLoader(YAML_LOADER):
    """The results loader, refusing a mapping that names a key twice (YAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _anchored(path, event) -> ResultsError:
    return ResultsError(f"{path}: holds a YAML anchor or alias (at line {event.start_mark.line + 1}); results files hold none")


def _too_deep(path, event) -> ResultsError:
    return ResultsError(f"{path}: nested deeper than {MAX_DEPTH} levels (at line {event.start_mark.line + 1})")


def _check_shape(text: str, path, loader=YAML_LOADER) -> None:
    """Refuse, before building any object, what no results file holds: anchors and aliases (an
    alias bomb expands exponentially) and nesting deeper than MAX_DEPTH. libyaml's event stream
    is iterative, so this costs ~30 ms and no recursion. Where libyaml stops first (PyYAML 6.0.4's
    own nesting limit, at a thousand levels), the pure-Python parser, which reads no further than
    asked, finds the depth this check refuses, so the refusal is the same whatever PyYAML does."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _anchored(path, event)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(path, event)
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        if loader is not yaml.SafeLoader:
            _check_shape(text, path, yaml.SafeLoader)
        raise


def _read(path: Path) -> str:
    """The file's text, read no further than the limit: a device (/dev/zero) or a FIFO says 0 to
    stat() and never ends, so only a regular file is read, and at most MAX_BYTES + 1 of it."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ResultsError(f"{path}: not a regular file; a results file is one")
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise ResultsError(f"{path}: cannot read the results file ({e.strerror or e})") from e
    if len(data) > MAX_BYTES:
        raise ResultsError(f"{path}: more than the {MAX_BYTES // 2**20} MiB a results file may hold")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not a results file: byte {e.start} is not UTF-8 text") from e


class _Unusual(Exception):
    """What only PyYAML's own composer and constructor build as it should (a tag, a merge key, a
    repeated or unhashable key, a second document): the file is read again their way."""


_IMPLICIT = yaml.resolver.Resolver.yaml_implicit_resolvers     # first character -> [(tag, pattern)]
_SAFE = yaml.constructor.SafeConstructor()
_PLAIN_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")             # what int() reads as YAML 1.1 does
_PLAIN_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*(?:[eE][-+][0-9]+)?\Z")


def _scalar(event):
    """A scalar's value, resolved and constructed as SafeLoader does; a plain decimal int or float
    (which YAML 1.1 resolves before any other tag) without looking further."""
    if event.tag is not None and event.tag != "!":
        raise _Unusual
    value = event.value
    if not event.implicit[0]:                   # quoted: a string
        return value
    if _PLAIN_FLOAT.match(value):
        return float(value)
    if _PLAIN_INT.match(value):
        return int(value)
    for tag, pattern in _IMPLICIT.get(value[:1], ()):
        if pattern.match(value):
            break
    else:
        return value
    construct = _SAFE.yaml_constructors.get(tag)
    if construct is None:                       # a merge key (<<) or the value tag (=)
        raise _Unusual
    return construct(_SAFE, yaml.ScalarNode(tag, value))


_NO_KEY = object()          # a mapping's next scalar is a key


def _compose(text: str, path):
    """The document of ``text`` built in one pass over libyaml's events, refusing anchors, aliases
    and nesting past MAX_DEPTH before anything deeper is built; ``_Unusual`` for what it leaves to
    PyYAML. About five times faster than yaml.load, whose construction is Python."""
    stack, doc, documents = [], None, 0       # stack: [container, key waiting for its value, keys' text]
    for event in yaml.parse(text, Loader=YAML_LOADER):
        kind = type(event)
        if kind is yaml.ScalarEvent or kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            if event.anchor is not None:
                raise _anchored(path, event)
            if kind is yaml.ScalarEvent:
                value = _scalar(event)
            else:
                if event.tag is not None and event.tag != "!":
                    raise _Unusual
                if len(stack) >= MAX_DEPTH:
                    raise _too_deep(path, event)
                stack.append([{} if kind is yaml.MappingStartEvent else [], _NO_KEY, set()])
                continue
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            value = stack.pop()[0]
        elif kind is yaml.AliasEvent:
            raise _anchored(path, event)
        else:
            documents += kind is yaml.DocumentStartEvent
            if documents > 1:
                raise _Unusual
            continue
        if not stack:
            doc = value
            continue
        top = stack[-1]
        container = top[0]
        if type(container) is list:
            container.append(value)
        elif top[1] is _NO_KEY:
            if kind is not yaml.ScalarEvent or event.value in top[2] or value in container:
                raise _Unusual
            top[1] = value
            top[2].add(event.value)
        else:
            container[top[1]] = value
            top[1] = _NO_KEY
    return doc


def load(path) -> dict:
    """Read, parse and validate a results file; anything wrong with it is a ResultsError that
    names the file and, where there is one, the field."""
    path = Path(path)
    text = _read(path)
    if text and not text.endswith("\n"):          # every dump ends with one: a cut file loses rows silently
        raise ResultsError(f"{path}: ends in the middle of a line: the file looks truncated")
    try:
        try:
            doc = _compose(text, path)
        except (_Unusual, yaml.YAMLError):          # PyYAML's way, and its own words for what is wrong
            _check_shape(text, path)
            doc = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as e:
        raise ResultsError(f"{path}: not valid YAML: {one_line(e, 300)}") from e
    return validate(doc, str(path))


class LimitError(ResultsError):
    """A document that would make a results file ``load`` refuses: too large, too deep, or holding
    text that is not UTF-8."""


def _depth(value) -> int:
    """Levels of nesting, counted as _check_shape counts them (a mapping or a list is one); a LimitError
    on the way for a string (key or value) that is not UTF-8, which the same walk meets."""
    deepest, level = 0, [(value, 1)]
    while level:
        item, d = level.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, d)
            level.extend((child, d + 1) for child in (item.values() if isinstance(item, dict) else item))
            if isinstance(item, dict):
                level.extend((key, d + 1) for key in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as e:       # a lone surrogate: YAML writes it as an escape it then refuses
                raise LimitError(f"holds text that is not UTF-8 ({one_line(ascii(item[max(0, e.start - 30):e.end + 10]), 80)})") from e
    return deepest


def dump_loadable(doc, source: str) -> str:
    """``doc`` as the text of a results file that ``load`` accepts, or a LimitError naming ``source``:
    one set of limits on the way in and on the way out."""
    try:
        if _depth(doc) > MAX_DEPTH:
            raise LimitError(f"nested deeper than the {MAX_DEPTH} levels a results file may hold")
        text = dump(doc)
        if len(text.encode("utf-8")) > MAX_BYTES:
            raise LimitError(f"{len(text.encode()) / 2**20:.0f} MiB, more than the {MAX_BYTES // 2**20} MiB a "
                             "results file may hold")
    except LimitError as e:
        raise LimitError(f"{source}: {e}") from e
    return text


class Dumper(yaml.SafeDumper):
    """Writes a value that appears twice in full both times: a results file holds no aliases; and a
    list of numbers (a timing's samples) on as few lines as fit, not one number a line."""

    def ignore_aliases(self, data) -> bool:
        return True

    def represent_list(self, data):
        numbers = data and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in data)
        return self.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=bool(numbers))


Dumper.add_representer(list, Dumper.represent_list)


def dump(doc) -> str:
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100)


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
