"""Past one GPU: NVLink peer to peer, and NCCL's collectives beside nccl-tests, on every GPU of
one host. These benchmarks need 2+ GPUs; their records go to the node's own results file
(results/<gpu-slug>-x<N>.yaml), beside the node's topology.

- multigpu.p2p: for every ordered pair of GPUs, copy-engine bandwidth (cudaMemcpyPeerAsync) one
  way and both ways at once, SM-driven bandwidth (a kernel on one GPU reading, or writing, the
  other's memory), and the latency of a load from the other GPU's memory (a pointer chase).
- multigpu.nccl: NCCL's all-reduce, all-gather, reduce-scatter, broadcast and send/recv from 8 B
  to 4 GiB, one process per GPU, each result checked element by element; algbw and busbw as
  nccl-tests defines them.
- multigpu.nccl_tests: NVIDIA's nccl-tests, built at run time from the checkout $NCCL_TESTS_DIR
  against the same NCCL, on the same collectives and sizes; skipped without a checkout.

NVLink multicast (NVLS) stays off in every process these start (topology.NO_MULTICAST)."""
from __future__ import annotations

import hashlib
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..core.cuda import KERNELS, arch_of, compile_cu, load_kernel
from ..core.registry import ROOT, register
from ..core.schema import BUS_FACTOR, COLLECTIVES
from ..core.topology import child_env

NCCL_TESTS_BINARY = {"all_reduce": "all_reduce_perf", "all_gather": "all_gather_perf",
                     "reduce_scatter": "reduce_scatter_perf", "broadcast": "broadcast_perf",
                     "send_recv": "sendrecv_perf", "all_to_all": "alltoall_perf"}
MIN_BYTES, MAX_BYTES = 8, 4 << 30
SIZES = [1 << e for e in range(MIN_BYTES.bit_length() - 1, MAX_BYTES.bit_length())]   # 8 B, 16 B, ..., 4 GiB
WARMUP, REPS = 5, 10
BATCH_BYTES, MAX_BATCH = 1 << 30, 200      # a sample: back-to-back ops moving about 1 GiB, at most 200 of them
NCCL_TESTS_ITERS = 20
# How nccl-tests issues its iterations: captured in one CUDA graph (the GPU's own time, as the
# project's held stream measures it), or launched one by one from the host (its default: small
# messages then cost the launch).
NCCL_TESTS_MODES = {"graph": ["-G", "1"], "launch": []}
CHECK_SOURCE = KERNELS / "collective_check.cu"


def element_count(collective: str, nbytes: int, nranks: int) -> int:
    """Float32 elements of the collective's largest buffer for a size of ``nbytes``; as nccl-tests
    counts them: the gathered or scattered whole, each rank's part rounded down to 16 bytes."""
    count = nbytes // 4
    return ((count // nranks) & ~3) * nranks if collective in ("all_gather", "reduce_scatter", "all_to_all") else count


def batch_of(nbytes: int) -> int:
    """Operations per timed sample: the same on every rank, so that their collectives pair up."""
    return max(1, min(MAX_BATCH, BATCH_BYTES // nbytes))


def bandwidths(collective: str, nbytes: int, time_ms: float, nranks: int) -> dict:
    """nccl-tests' algbw (bytes over time, GB/s of 1e9 bytes) and busbw."""
    algbw = nbytes / (time_ms * 1e-3) / 1e9
    return {"algbw_gbps": algbw, "busbw_gbps": algbw * BUS_FACTOR[collective](nranks)}


def gpu_count() -> int:
    from cupy.cuda import runtime
    return runtime.getDeviceCount()


# --- NCCL, one process per GPU --------------------------------------------------------------

def run_ranks(module: str, spec: dict, nranks: int, timeout_s: float, progress, env: dict | None = None) -> list[dict]:
    """Start ``python -m <module> SPEC RANK OUT`` for every rank (``env`` added to their environment;
    "{tmp}" in a value is the run's own folder); their JSON outputs, in rank order, each with "logs":
    the text of the files they wrote there. One rank that fails ends the others (they would wait
    in NCCL for it forever)."""
    with tempfile.TemporaryDirectory(prefix="ranks-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps(spec))
        outs = [Path(tmp) / f"rank{r}.json" for r in range(nranks)]
        extra = {k: v.replace("{tmp}", tmp) for k, v in (env or {}).items()}
        procs = [subprocess.Popen([sys.executable, "-m", module, str(spec_path), str(r), str(outs[r])],
                                  cwd=ROOT, env={**child_env(), **extra}) for r in range(nranks)]
        try:
            for r, p in enumerate(procs):
                code = p.wait(timeout=timeout_s)
                if code != 0:
                    raise RuntimeError(f"rank {r} exited with code {code} (its stderr is in the log)")
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        progress(f"{nranks} ranks done")
        logs = "".join(p.read_text(errors="replace") for p in sorted(Path(tmp).glob("*.log")))
        return [{**json.loads(o.read_text()), "logs": logs} for o in outs]


# NCCL's choice for each call, as NCCL_DEBUG_SUBSYS=TUNING logs it on rank 0 ("AllReduce: 4096 Bytes
# -> Algo TREE proto LL ..."; older releases give the numbers of its enums)
TUNING_LINE = re.compile(r"(AllReduce|AllGather|ReduceScatter|Broadcast): +(\d+) Bytes -> Algo (\w+) proto (\w+)")
NCCL_ALGOS = ("TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT")
NCCL_PROTOS = ("LL", "LL128", "SIMPLE")
NCCL_NAMES = {"AllReduce": "all_reduce", "AllGather": "all_gather", "ReduceScatter": "reduce_scatter",
              "Broadcast": "broadcast"}


def nccl_choices(log: str, nranks: int) -> dict[tuple[str, int], dict]:
    """(collective, bytes the call moves) -> the algorithm and protocol NCCL chose, from its TUNING log.
    NCCL logs a call's count times its type's size: for all-gather and reduce-scatter that count is
    one rank's part, so the row's bytes (the largest buffer, as nccl-tests counts them) are n times it."""
    named = lambda value, names: names[int(value)] if value.isdigit() and int(value) < len(names) else value.upper()
    per_rank = {"all_gather", "reduce_scatter"}
    return {(NCCL_NAMES[m[1]], int(m[2]) * (nranks if NCCL_NAMES[m[1]] in per_rank else 1)):
            {"algorithm": named(m[3], NCCL_ALGOS), "protocol": named(m[4], NCCL_PROTOS)}
            for m in TUNING_LINE.finditer(log)}


# The probe: each collective and size once, with NCCL saying what it chose (the timed run logs nothing)
TUNING_ENV = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING", "NCCL_DEBUG_FILE": "{tmp}/nccl.%p.log"}


def combine(ranks: list[dict], nranks: int) -> list[dict]:
    """One row per collective and size from every rank's rows: the slowest rank's time (a
    collective is done when its last rank is), the wrong elements of all ranks."""
    rows = []
    for per_rank in zip(*(r["rows"] for r in ranks)):
        first = per_rank[0]
        if any((x["collective"], x["bytes"]) != (first["collective"], first["bytes"]) for x in per_rank):
            raise RuntimeError("the ranks measured different collectives or sizes")
        slowest = max(per_rank, key=lambda x: x["time_ms"]["median"])
        rows.append({"collective": first["collective"], "bytes": first["bytes"], "time_ms": slowest["time_ms"],
                     **bandwidths(first["collective"], first["bytes"], slowest["time_ms"]["median"], nranks),
                     "wrong": sum(x["wrong"] for x in per_rank), "checked": sum(x["checked"] for x in per_rank)})
    return rows


@register("multigpu.nccl", sources=["bench/multigpu/nccl.py", "bench/multigpu/collective_rank.py", "bench/core/topology.py",
                                    str(CHECK_SOURCE.relative_to(ROOT)), "bench/core/cuda.py"],
          title="NCCL collectives, one process per GPU", timeout_s=900, gpus=2)
def collectives(ctx) -> dict:
    from . import nccl
    n = gpu_count()
    cubin = compile_cu(CHECK_SOURCE, arch_of(ctx.device["compute_capability"]))    # once, before the ranks
    spec = {"nranks": n, "uid": nccl.unique_id().hex(), "cubin": str(cubin), "sizes": SIZES,
            "collectives": list(COLLECTIVES), "warmup": WARMUP, "reps": REPS}
    ctx.progress(f"NCCL {nccl.version()} from {nccl.home()}, {n} ranks, {len(SIZES)} sizes x {len(COLLECTIVES)} collectives")
    # a unique id bootstraps one communicator: the probe gets one of its own
    probe = run_ranks("bench.multigpu.collective_rank", {**spec, "probe": True, "uid": nccl.unique_id().hex()}, n,
                      timeout_s=300, progress=ctx.progress, env=TUNING_ENV)
    chosen = nccl_choices(probe[0]["logs"], n)
    ctx.progress(f"NCCL's choice of algorithm and protocol logged for {len(chosen)} collective calls")
    rows = combine(run_ranks("bench.multigpu.collective_rank", spec, n, timeout_s=800, progress=ctx.progress), n)
    for row in rows:                       # send/recv is point to point: NCCL chooses no algorithm for it
        row.update(chosen.get((row["collective"], row["bytes"]), {}))
    bad = [f"{r['collective']} at {r['bytes']} B: {r['wrong']} of {r['checked']} wrong" for r in rows if r["wrong"]]
    for name in COLLECTIVES:
        last = [r for r in rows if r["collective"] == name][-1]
        ctx.progress(f"{name:>15s}: busbw {last['busbw_gbps']:6.1f} GB/s at {last['bytes'] >> 20} MiB")
    return {
        "params": {"ranks": n, "processes": "one per GPU", "dtype": "float32", "op": "sum", "broadcast_root": 0,
                   "sizes_bytes": [MIN_BYTES, MAX_BYTES], "warmup": WARMUP, "reps": REPS,
                   "batch": f"back-to-back ops moving about {BATCH_BYTES >> 20} MiB per sample, 1 to {MAX_BATCH}",
                   "time": "median sample of the slowest rank (CUDA events, one timer)",
                   "gb": "1e9 bytes, as nccl-tests", "nccl": nccl.version(),
                   "all_to_all": "ncclAlltoAll" if nccl.has_all_to_all() else "a group of ncclSend and ncclRecv, one each a rank",
                   "multicast": {k: os.environ.get(k) for k in ("NCCL_NVLS_ENABLE",)},
                   "choices": f"algorithm and protocol per size from NCCL's TUNING log of a probe run ("
                              f"{len(chosen)} calls logged)"},
        "check": {"passed": not bad, "method": "every output element of every rank, each size, against the "
                                               "values the ranks sent (small integers: sums are exact)",
                  **({"detail": "; ".join(bad[:5])} if bad else {})},
        "rows": rows,
    }


# --- nccl-tests, the peer ----------------------------------------------------------------------

PEER_ENV = "NCCL_TESTS_DIR"


def nccl_tests_version(checkout: Path) -> str:
    for line in (checkout / "src" / "common.h").read_text(errors="replace").splitlines():
        if "NCCL_TESTS_VERSION" in line and '"' in line:
            return line.split('"')[1]
    return "unknown"


def build_nccl_tests(checkout: Path, device: dict) -> Path:
    """nccl-tests built from ``checkout`` against our NCCL, for this GPU only, into .cache/ (the
    checkout is left as it was); the folder of the *_perf binaries."""
    from . import nccl
    home = nccl.home()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: nccl-tests is built with the CUDA toolkit's nvcc")
    cc = device["compute_capability"].replace(".", "")
    key = hashlib.sha256(f"{checkout.resolve()}|{home}|{nvcc}|{cc}".encode()).hexdigest()[:12]
    out = ROOT / ".cache" / "peers" / f"nccl-tests-{key}"
    # the wheel ships libnccl.so.2 alone: the linker wants libnccl.so
    staged = out / "nccl"
    (staged / "lib").mkdir(parents=True, exist_ok=True)
    for link, target in ((staged / "include", home / "include"), (staged / "lib" / "libnccl.so", home / "lib" / "libnccl.so.2")):
        if not link.exists():
            link.symlink_to(target)
    proc = subprocess.run(["make", "-C", str(checkout / "src"), "build", f"-j{os.cpu_count() or 4}",
                           f"BUILDDIR={out / 'build'}", f"CUDA_HOME={Path(nvcc).resolve().parent.parent}",
                           f"NCCL_HOME={staged}", f"NVCC_GENCODE=-gencode=arch=compute_{cc},code=sm_{cc}"],
                          capture_output=True, text=True, env=child_env())
    if proc.returncode != 0:
        raise RuntimeError(f"building nccl-tests failed: {proc.stderr.strip()[-1500:]}")
    return out / "build"


def parse_nccl_tests(doc: dict, collective: str) -> list[dict]:
    """The out-of-place rows of one nccl-tests JSON output (-J)."""
    rows = []
    for r in doc["results"]:
        oop = r.get("out_of_place")
        if not oop or not int(r["size"]):     # a gather or scatter smaller than 16 bytes a rank is size 0
            continue
        rows.append({"collective": collective, "bytes": int(r["size"]), "time_us": float(oop["time"]),
                     "algbw_gbps": float(oop["alg_bw"]), "busbw_gbps": float(oop["bus_bw"]),
                     "wrong": None if oop["nwrong"] is None else int(oop["nwrong"])})
    return rows


@register("multigpu.nccl_tests", sources=["bench/multigpu/nccl.py", "bench/core/topology.py"],
          title="nccl-tests (NVIDIA), the peer", timeout_s=900, gpus=2, peer=PEER_ENV)
def nccl_tests(ctx) -> dict:
    from . import nccl
    checkout = Path(os.environ[PEER_ENV])
    n = gpu_count()
    ctx.progress(f"building nccl-tests {nccl_tests_version(checkout)} from {checkout} against {nccl.home()}")
    binaries = build_nccl_tests(checkout, ctx.device)
    env = child_env(LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(nccl.home() / "lib"),
                                                                  os.environ.get("LD_LIBRARY_PATH")])))
    rows = []
    with tempfile.TemporaryDirectory(prefix="nccl-tests-") as tmp:
        for name in COLLECTIVES:
            for mode, flags in NCCL_TESTS_MODES.items():
                out = Path(tmp) / f"{name}-{mode}.json"
                cmd = [str(binaries / NCCL_TESTS_BINARY[name]), "-b", str(MIN_BYTES), "-e", str(MAX_BYTES), "-f", "2",
                       "-g", str(n), "-w", str(WARMUP), "-n", str(NCCL_TESTS_ITERS), "-c", "1", *flags, "-J", str(out)]
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
                if proc.returncode != 0 or not out.exists():
                    raise RuntimeError(f"{' '.join(cmd)} exited with {proc.returncode}: {proc.stdout[-800:]}")
                measured = [{**r, "mode": mode} for r in parse_nccl_tests(json.loads(out.read_text()), name)]
                rows += measured
                ctx.progress(f"{name:>15s} ({mode}): {measured[-1]['busbw_gbps']:6.1f} GB/s busbw at "
                             f"{measured[-1]['bytes'] >> 20} MiB, {measured[0]['time_us']:.1f} us at {measured[0]['bytes']} B")
    bad = [f"{r['collective']} at {r['bytes']} B: {r['wrong']} wrong" for r in rows if r["wrong"] != 0]
    return {
        "params": {"ranks": n, "processes": f"one process, -g {n}", "version": nccl_tests_version(checkout),
                   "nccl": nccl.version(), "args": f"-b {MIN_BYTES} -e {MAX_BYTES} -f 2 -w {WARMUP} "
                                                  f"-n {NCCL_TESTS_ITERS} -c 1", "dtype": "float32", "op": "sum",
                   "modes": {m: " ".join(f) or "(default)" for m, f in NCCL_TESTS_MODES.items()},
                   "time": "mean of the iterations (nccl-tests' own host timer), out of place"},
        "check": {"passed": not bad, "method": "nccl-tests' own check (-c 1): wrong elements per size",
                  **({"detail": "; ".join(bad[:5])} if bad else {})},
        "rows": rows,
    }


# --- NVLink peer to peer ---------------------------------------------------------------------

P2P_BYTES = 1 << 30
P2P_REPS = 20
CHASE_BYTES = 256 << 20          # far past either GPU's L2: each load crosses the link to the peer's HBM
CHASE_STEPS = 5000
COPY_SOURCE, CHASE_SOURCE = KERNELS / "hbm_copy.cu", KERNELS / "memory_latency.cu"
COPY_THREADS, COPY_BLOCKS_PER_SM = 1024, 2


@register("multigpu.p2p", sources=["bench/core/topology.py", str(COPY_SOURCE.relative_to(ROOT)),
                                   str(CHASE_SOURCE.relative_to(ROOT)), "bench/micro/latency.py", "bench/core/cuda.py"],
          title="NVLink peer to peer: copy engines, SMs, latency", timeout_s=900, gpus=2)
def peer_to_peer(ctx) -> dict:
    import cupy
    from cupy.cuda import runtime
    from ..micro.latency import LINE, RandomCycle
    from ..core.timing import time_gpu
    from ..core.topology import collect_node
    node = collect_node()
    n = node["gpu_count"]
    link_of = {frozenset((p["a"], p["b"])): p for p in node["pairs"]}
    rng = np.random.default_rng(11)
    bufs, copy, chase = {}, {}, {}
    for g in range(n):
        with cupy.cuda.Device(g):
            for peer in range(n):
                if peer != g and runtime.deviceCanAccessPeer(g, peer):
                    try:
                        runtime.deviceEnablePeerAccess(peer)
                    except runtime.CUDARuntimeError as e:       # already enabled
                        if "PeerAccessAlreadyEnabled" not in str(e):
                            raise
            src = cupy.random.default_rng(g).standard_normal(P2P_BYTES // 4, dtype=cupy.float32)
            bufs[g] = {"src": src, "dst": cupy.empty_like(src), "arena": cupy.zeros(CHASE_BYTES // 8, dtype=cupy.uint64),
                       "sm_of_block": cupy.zeros(ctx.device["sm_count"] * COPY_BLOCKS_PER_SM, dtype=cupy.uint32),
                       "result": cupy.zeros(3, dtype=cupy.uint64), "side": cupy.cuda.Stream(non_blocking=True),
                       "main": cupy.cuda.Stream(non_blocking=True)}
            copy[g] = load_kernel(COPY_SOURCE, "copy_f4", ctx.device, {"UNROLL": 4})
            chase[g] = load_kernel(CHASE_SOURCE, "chase_l2", ctx.device)
    failures, rows = [], []

    def poison(dst):
        """NaN in every float of ``dst``, finished before any stream of any GPU goes on."""
        with cupy.cuda.Device(dst.device.id) as d:
            dst.view(cupy.uint32).fill(0xFFFFFFFF)
            d.synchronize()

    def checked(label, dst, src):
        with cupy.cuda.Device(dst.device.id) as d:
            d.synchronize()
            # src copied to dst's GPU first: compared there, not read across the link element by element
            here = src if src.device.id == dst.device.id else cupy.empty_like(dst)
            if here is not src:
                # on the legacy stream and asynchronous to the host: finished before the comparison's stream reads
                runtime.memcpyPeer(here.data.ptr, dst.device.id, src.data.ptr, src.device.id, src.nbytes)
                d.synchronize()
            same = bool(cupy.array_equal(dst.view(cupy.uint32), here.view(cupy.uint32)))
        if not same:
            failures.append(label)
        return same

    def bandwidth(g, label, fn, dst, src, nbytes):
        """Poison, run once, compare bit for bit; then time on GPU g's stream."""
        poison(dst)
        with cupy.cuda.Device(g), bufs[g]["main"]:
            fn()
            bufs[g]["main"].synchronize()
            ok = checked(label, dst, src)
            t = time_gpu(fn, warmup=3, reps=P2P_REPS)
        return {"time_ms": t, "gbps": nbytes / t["median"] / 1e6, "check_passed": ok}

    def memcpy_peer(dst, dst_dev, src, src_dev, stream):
        runtime.memcpyPeerAsync(dst.data.ptr, dst_dev, src.data.ptr, src_dev, P2P_BYTES, stream.ptr)

    def sm_copy(g, dst, src):
        blocks = ctx.device["sm_count"] * COPY_BLOCKS_PER_SM
        copy[g]((blocks,), (COPY_THREADS,), (src, dst, cupy.int64(P2P_BYTES // 16), bufs[g]["sm_of_block"]))

    def chase_ns(g, arena):
        """ns per load of a pointer chase run on GPU g over ``arena`` (on any GPU)."""
        slots = CHASE_BYTES // LINE
        cycle = RandomCycle(slots, rng)
        base = arena.data.ptr
        with cupy.cuda.Device(arena.device.id):
            arena[::LINE // 8] = cupy.asarray(base + cycle.next.astype(np.uint64) * LINE, dtype=cupy.uint64)
            cupy.cuda.Device().synchronize()
        with cupy.cuda.Device(g):
            result = bufs[g]["result"]
            chase[g]((1,), (1,), (np.uint64(base), np.int32(0), np.int32(CHASE_STEPS), result))
            cycles, ns, last = result.get().tolist()
        if last != base + LINE * cycle.walk(0, CHASE_STEPS):
            failures.append(f"chase from GPU {g} over GPU {arena.device.id}'s memory")
        return ns / CHASE_STEPS

    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            pair = link_of[frozenset((a, b))]
            if not runtime.deviceCanAccessPeer(a, b):
                rows.append({"src": a, "dst": b, "peer_access": False})
                continue
            A, B = bufs[a], bufs[b]
            one_way = bandwidth(a, f"copy engine {a}->{b}", lambda: memcpy_peer(B["dst"], b, A["src"], a, A["main"]),
                                B["dst"], A["src"], P2P_BYTES)

            def both_ways():
                main, side = A["main"], A["side"]
                side.wait_event(main.record())
                memcpy_peer(B["dst"], b, A["src"], a, main)          # a -> b
                memcpy_peer(A["dst"], a, B["src"], b, side)          # b -> a, at the same time
                main.wait_event(side.record())
            poison(B["dst"])
            two_way = bandwidth(a, f"copy engines {a}<->{b}", both_ways, A["dst"], B["src"], 2 * P2P_BYTES)
            two_way["check_passed"] &= checked(f"copy engines {a}<->{b}", B["dst"], A["src"])
            sm_read = bandwidth(a, f"SMs of {a} reading {b}", lambda: sm_copy(a, A["dst"], B["src"]),
                                A["dst"], B["src"], P2P_BYTES)
            sm_write = bandwidth(a, f"SMs of {a} writing {b}", lambda: sm_copy(a, B["dst"], A["src"]),
                                 B["dst"], A["src"], P2P_BYTES)
            row = {"src": a, "dst": b, "peer_access": True,
                   **{k: pair[k] for k in ("nvlinks", "via", "nvlink_gbps_per_direction") if k in pair},
                   "copy_engine": one_way, "copy_engine_both_ways": two_way, "sm_read": sm_read, "sm_write": sm_write,
                   "latency_ns": {"peer": chase_ns(a, B["arena"]), "local": chase_ns(a, A["arena"])}}
            rows.append(row)
            ctx.progress(f"GPU {a} -> {b}: copy engine {one_way['gbps']:.0f} GB/s, both ways {two_way['gbps']:.0f}, "
                         f"SM read {sm_read['gbps']:.0f}, SM write {sm_write['gbps']:.0f}; load latency "
                         f"{row['latency_ns']['peer']:.0f} ns (local {row['latency_ns']['local']:.0f})")
    return {
        "params": {"bytes": P2P_BYTES, "reps": P2P_REPS, "chase_bytes": CHASE_BYTES, "chase_steps": CHASE_STEPS,
                   "line_bytes": LINE, "sm_copy": {"blocks_per_sm": COPY_BLOCKS_PER_SM, "threads": COPY_THREADS,
                                                   "bytes_per_access": 16},
                   "gb": "1e9 bytes; one way counts the bytes copied, both ways the bytes of both copies",
                   "latency": "one thread, ld.cg pointer chase over a random cycle of 128-byte slots"},
        "check": {"passed": not failures, "method": "destination poisoned with NaN, compared bit for bit; each "
                                                    "chase ends on the slot the host's walk predicts",
                  **({"detail": "; ".join(failures[:5])} if failures else {})},
        "rows": rows,
    }

