"""A GEMM overlapped with its communication: the tensor-parallel MLP of a transformer layer, split
over every GPU of the node (one process a GPU, as multigpu.nccl), with the project's BF16 headline
kernel and NCCL.

- all_gather_gemm: the layer's input arrives a shard of rows per GPU (sequence parallelism); it is
  all-gathered, then multiplied by this GPU's slice of the up projection (column parallel).
- gemm_reduce_scatter: each GPU multiplies its slice of the activations by its slice of the down
  projection (row parallel); the partial sums are reduce-scattered, a shard of rows per GPU.

Each pattern runs four ways, in turns, on the same operands: the communication alone and the GEMM
alone (each whole), one after the other, and overlapped: split into CHUNKS row blocks, each
block's communication on its own stream while the GEMM works on the block before (all-gather) or
after (reduce-scatter). Overlap is judged against the ideal, max(GEMM, communication), and against
the two one after the other. One overlapped run is recorded as a timeline of CUDA events.

Operands are harness.Operands (random, BF16): every rank builds the whole input of the all-gather
from one seed and sends its own rows of it, so the gathered buffer must equal it bit for bit and
C is checked against float64; for the reduce-scatter every rank builds every rank's operands (a
seed each) and checks its shard against the float64 sum of their products."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from ..gemm import catalogue
from ..gemm.benchmarks import builds, kernel_sources
from ..core.registry import register

# The GEMMs overlapped, by how they take the SMs: the BF16 headline keeps one CTA on every SM for
# the whole GEMM (persistent); the last kernel of the BF16 track before it launches a CTA a tile,
# which the hardware places as SMs free up; cuBLAS, the baseline.
PERSISTENT = catalogue.HEADLINE_BF16
PER_TILE_ROUTE = "before:gemm.persistent_bf16"
PER_TILE = catalogue.resolve(PER_TILE_ROUTE)
KERNELS = {"persistent": PERSISTENT, "a CTA a tile": PER_TILE, "cuBLAS": "cublas"}
OURS = (PERSISTENT, PER_TILE)
# Llama-3 70B's MLP (hidden 8192, intermediate 28672) on a batch of 8192 tokens; quick runs a quarter
MODEL = {"model": "Llama-3 70B", "hidden": 8192, "intermediate": 28672, "tokens": 8192}
QUICK_TOKENS = 2048
CHUNKS = 4
PATTERNS = ("all_gather_gemm", "gemm_reduce_scatter")
WAYS = ("overlapped", "sequential", "gemm", "comm")      # timed in turns, in this order
WARMUP, REPS = 20, 10
ROUND_MS = 400.0             # a sample: turns of the four ways filling about this long
SEED = 2027
OVERLAP_TARGET = 0.80        # of the ideal, max(GEMM, communication)


def shapes(n: int, tokens: int, hidden: int, intermediate: int, chunks: int = CHUNKS) -> dict:
    """Each pattern's GEMM on one GPU of ``n`` (M x N x K: C = A B^T, B stored N x K as a linear
    layer's weight) and the bytes its collective moves (the largest buffer, as nccl-tests counts)."""
    if tokens % (n * chunks) or intermediate % n:
        raise ValueError(f"{tokens} tokens in {chunks} chunks, or {intermediate} columns, do not split over {n} GPUs")
    slice_ = intermediate // n
    return {"all_gather_gemm": {"gemm": [tokens, slice_, hidden], "comm": "all_gather", "comm_bytes": tokens * hidden * 2},
            "gemm_reduce_scatter": {"gemm": [tokens, hidden, slice_], "comm": "reduce_scatter",
                                    "comm_bytes": tokens * hidden * 4}}


def efficiency(overlapped: float, gemm: float, comm: float) -> dict:
    """What overlap bought: the ideal (the longer of the two, the shorter wholly hidden) over the
    overlapped time, and the two one after the other over it (above 1: overlap saved time)."""
    return {"of_ideal": max(gemm, comm) / overlapped, "speedup_over_serial": (gemm + comm) / overlapped}


def combine(ranks: list[dict], pattern: str, label: str) -> dict:
    """One pattern and GEMM across ranks: sample by sample, each way's time is its slowest rank's (a
    collective ends when its last rank does); the efficiency figures per sample and at the medians."""
    from ..core.stats import summarize
    runs = [r[pattern]["kernels"][label] for r in ranks]
    per_way = {}
    for way in WAYS:
        samples = [max(col) for col in zip(*(run["times"][way]["samples"] for run in runs))]
        clocks = [run["times"][way]["sm_clock_mhz"] for run in runs if "sm_clock_mhz" in run["times"][way]]
        per_way[way] = {**summarize(samples), "samples": samples, **({"sm_clock_mhz": min(clocks)} if clocks else {})}
    by_sample = [efficiency(o, g, c) for o, g, c in zip(*(per_way[w]["samples"] for w in ("overlapped", "gemm", "comm")))]
    first, passed = runs[0], all(run["check"]["passed"] for run in runs)
    return {"kernel": KERNELS[label], **{k: first[k] for k in ("turns", "tile")}, "times_ms": per_way,
            "efficiency": efficiency(*(per_way[w]["median"] for w in ("overlapped", "gemm", "comm"))),
            "efficiency_by_sample": {k: summarize([e[k] for e in by_sample]) for k in by_sample[0]},
            "check": {"passed": passed, "rel_error": max(run["check"]["rel_error"] for run in runs),
                      "tolerance": first["check"]["tolerance"],
                      **({} if passed else {"detail": "; ".join(f"rank {i}: {run['check']['detail']}"
                                                                for i, run in enumerate(runs) if "detail" in run["check"])})},
            "timeline": first["timeline"]}


@register("multigpu.overlap", sources=["bench/multigpu/nccl.py", "bench/multigpu/collectives.py", "bench/core/topology.py",
                                       *dict.fromkeys(f for k in OURS for f in kernel_sources(catalogue.step_of(k)))],
          kernels=catalogue.definitions(("headline_bf16", PER_TILE_ROUTE)),
          title="A GEMM overlapped with its communication (tensor-parallel MLP)", timeout_s=900, gpus=2,
          min_cc=catalogue.HOPPER,          # our GEMMs are Hopper's
          builds=tuple(b for k in OURS for b in builds(*catalogue.KERNELS[k])))
def overlap(ctx) -> dict:
    from . import nccl
    from .collectives import gpu_count, run_ranks
    from ..core.timing import quick
    n = gpu_count()
    tokens = QUICK_TOKENS if quick() else MODEL["tokens"]
    layer = shapes(n, tokens, MODEL["hidden"], MODEL["intermediate"])
    spec = {"nranks": n, "uid": nccl.unique_id().hex(), "device": ctx.device, "kernels": KERNELS, "tokens": tokens,
            "hidden": MODEL["hidden"], "intermediate": MODEL["intermediate"], "chunks": CHUNKS}
    ctx.progress(f"{MODEL['model']} MLP, {tokens} tokens over {n} GPUs: "
                 + "; ".join(f"{p} GEMM {'x'.join(map(str, s['gemm']))}, {s['comm']} of {s['comm_bytes'] >> 20} MiB"
                             for p, s in layer.items()))
    ranks = run_ranks("bench.multigpu.overlap", spec, n, timeout_s=800, progress=ctx.progress)
    patterns = {p: {**layer[p], "chunks": CHUNKS, "kernels": {label: combine(ranks, p, label) for label in KERNELS}}
                for p in PATTERNS}
    for p, pattern in patterns.items():
        for label, r in pattern["kernels"].items():
            t, e = r["times_ms"], r["efficiency"]
            ctx.progress(f"{p}, {label}: GEMM {t['gemm']['median']:.3f} ms, {pattern['comm']} {t['comm']['median']:.3f} "
                         f"ms, one after the other {t['sequential']['median']:.3f}, overlapped "
                         f"{t['overlapped']['median']:.3f}: {100 * e['of_ideal']:.0f}% of the ideal")
    bad = [f"{p}, {label}: {r['check'].get('detail', 'failed')}" for p, pattern in patterns.items()
           for label, r in pattern["kernels"].items() if not r["check"]["passed"]]
    return {
        "params": {"ranks": n, "kernels": KERNELS, **MODEL, "tokens": tokens, "chunks": CHUNKS, "ways": list(WAYS),
                   "warmup": WARMUP, "reps": REPS, "target_of_ideal": OVERLAP_TARGET, "nccl": nccl.version(),
                   "time": "median sample of the slowest rank; the ways in turns on the same operands (CUDA events)",
                   "streams": "GEMMs on one stream, NCCL on another, joined by CUDA events"},
        "check": {"passed": not bad, "method": "the overlapped run's output, poisoned first: the gathered input bit "
                                               "for bit, C and the reduced shard against float64 (relative Frobenius)",
                  **({"detail": "; ".join(bad)} if bad else {})},
        "patterns": patterns,
    }


# --- one rank: python -m bench.multigpu.overlap SPEC RANK OUT ------------------------------------------

class _Rank:
    """One GPU's part: GEMMs on ``main``, NCCL on ``side``; each pattern's four ways, for each GEMM."""

    def __init__(self, spec: dict, rank: int):
        import cupy
        from ..gemm import launch
        from . import nccl
        self.spec, self.rank, self.n, self.chunks = spec, rank, spec["nranks"], spec["chunks"]
        self.tokens = spec["tokens"]
        self.layer = shapes(self.n, self.tokens, spec["hidden"], spec["intermediate"], self.chunks)
        self.rows, self.block = self.tokens // self.chunks, self.tokens // (self.n * self.chunks)   # a chunk; a rank's part of it
        cupy.cuda.Device(rank).use()
        self.main, self.side = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
        self.prepares = {label: launch.prepare(*catalogue.KERNELS[k], spec["device"]) for label, k in spec["kernels"].items()
                         if k in catalogue.KERNELS}
        self.comm = nccl.Comm(self.n, bytes.fromhex(spec["uid"]), rank, self.side.ptr)

    def gemm(self, label: str, a, b, c):
        """(run, tile) of C = A B^T by the GEMM ``label`` names, on the current stream."""
        from ..gemm import cublas
        if label not in self.prepares:
            return (lambda: cublas.gemm(a, b, c, "b_kmajor", "bf16")), "cuBLAS's own"
        ready = self.prepares[label](a, b, c)
        return ready.run, "{BM}x{BN}".format(**ready.resources["tile"])

    def on_side(self, enqueue) -> None:
        """``enqueue`` on the communication stream after what main has queued; main waits for it."""
        self.side.wait_event(self.main.record())
        enqueue()
        self.main.wait_event(self.side.record())

    @staticmethod
    def mark(marks, stream, name: str, j: int, enqueue) -> None:
        """``enqueue``, between two events on ``stream`` when a timeline is being recorded."""
        if marks is None:
            return enqueue()
        start = stream.record()
        enqueue()
        marks.append((name, j, start, stream.record()))

    def agreed_turns(self, ways) -> int:
        """Turns of the ways that fill a sample, the most any rank wants: every rank must issue the same
        collectives, or NCCL waits forever."""
        import cupy
        from . import nccl
        from ..core.timing import time_gpu_alternating
        probe = time_gpu_alternating(ways, warmup=2, reps=2)
        turns = cupy.array([max(1.0, ROUND_MS / sum(t["median"] for t in probe))], cupy.float32)
        self.on_side(lambda: self.comm.all_reduce(turns.data.ptr, turns.data.ptr, 1, op=nccl.MAX))
        self.main.synchronize()
        return round(float(turns.get()[0]))

    def timed(self, ways: dict, check: dict, tile: str) -> dict:
        """The four ways in turns, after the check; then one overlapped run as a timeline."""
        import cupy
        from ..core.timing import time_gpu_alternating
        turns = self.agreed_turns(list(ways.values()))
        times = time_gpu_alternating(list(ways.values()), warmup=WARMUP, reps=REPS, turns=turns, keep_samples=True)
        # the timeline starts as every rank leaves one small all-reduce: not with a rank that waits for the others
        flag = cupy.zeros(1, cupy.float32)
        self.on_side(lambda: self.comm.all_reduce(flag.data.ptr, flag.data.ptr, 1))
        marks, start = [], self.main.record()
        ways["overlapped"](marks)
        self.main.synchronize()
        timeline = [{"stream": s, "chunk": j, "start_ms": cupy.cuda.get_elapsed_time(start, a),
                     "end_ms": cupy.cuda.get_elapsed_time(start, b)} for s, j, a, b in marks]
        return {"times": dict(zip(ways, times)), "timeline": timeline, "turns": turns, "check": check, "tile": tile}

    def all_gather_gemm(self) -> dict:
        """Every rank holds the whole input (one seed) and sends its rows of it: the gathered buffer
        must be that input, bit for bit."""
        import cupy
        from ..gemm.harness import BF16_NAN, Operands, Shape
        m, n, k = self.layer["all_gather_gemm"]["gemm"]
        ops = Operands(Shape(m, n, k), "b_kmajor", "bf16", seed=SEED)
        x, w = ops.a, ops.b                                   # x: tokens x hidden; w: this GPU's slice x hidden
        gathered = cupy.empty_like(x)
        rows, block, rank = self.rows, self.block, self.rank
        chunk = lambda a, j: a[j * rows:(j + 1) * rows]
        words = lambda a: a.size * a.itemsize // 4           # NCCL moves float32 words here: BF16 pairs
        sent = [x[j * rows + rank * block: j * rows + (rank + 1) * block] for j in range(self.chunks)]
        own = x[rank * (m // self.n):(rank + 1) * (m // self.n)]
        comm = lambda: self.on_side(lambda: self.comm.all_gather(own.data.ptr, gathered.data.ptr, words(own)))
        done = {}
        for label in self.spec["kernels"]:
            c = ops.poisoned_c()
            gemms = [self.gemm(label, chunk(gathered, j), w, chunk(c, j))[0] for j in range(self.chunks)]
            whole, tile = self.gemm(label, gathered, w, c)

            def overlapped(marks=None, gemms=gemms):
                ready = []
                self.side.wait_event(self.main.record())
                for j in range(self.chunks):
                    self.mark(marks, self.side, "comm", j,
                              lambda: self.comm.all_gather(sent[j].data.ptr, chunk(gathered, j).data.ptr, words(sent[j])))
                    ready.append(self.side.record())
                for j in range(self.chunks):          # GEMM j as soon as chunk j is in, while j + 1 arrives
                    self.main.wait_event(ready[j])
                    self.mark(marks, self.main, "gemm", j, gemms[j])

            gathered.fill(BF16_NAN)
            overlapped()
            self.main.synchronize()
            check = ops.check(c)
            if not bool(cupy.array_equal(gathered, x)):
                check.update(passed=False, detail="the gathered input differs from the one the ranks sent")
            done[label] = self.timed({"overlapped": overlapped, "sequential": lambda whole=whole: (comm(), whole()),
                                      "gemm": whole, "comm": comm}, check, tile)
        return done

    def gemm_reduce_scatter(self) -> dict:
        """Every rank's activations and weights have a seed of their own; each rank checks its shard
        against the float64 sum of every rank's product."""
        import cupy
        import numpy as np
        from ..gemm.harness import Operands, Shape, compare
        m, n, k = self.layer["gemm_reduce_scatter"]["gemm"]
        operands = lambda q: Operands(Shape(m, n, k), "b_kmajor", "bf16", seed=SEED + 1 + q)
        ops = operands(self.rank)
        rows, block = self.rows, self.block
        mine = cupy.asarray(np.concatenate([np.arange(j * rows + self.rank * block, j * rows + (self.rank + 1) * block)
                                            for j in range(self.chunks)]))       # this rank's part of every chunk
        want = cupy.zeros((m // self.n, n), cupy.float64)
        for q in range(self.n):
            want += (ops if q == self.rank else operands(q)).reference()[0][mine]
        partial = ops.poisoned_c()
        done = {}
        for label in self.spec["kernels"]:
            shard = cupy.full((m // self.n, n), cupy.nan, cupy.float32)
            gemms = [self.gemm(label, ops.a[j * rows:(j + 1) * rows], ops.b, partial[j * rows:(j + 1) * rows])[0]
                     for j in range(self.chunks)]
            whole, tile = self.gemm(label, ops.a, ops.b, partial)

            def overlapped(marks=None, gemms=gemms, shard=shard):
                for j in range(self.chunks):          # chunk j's sums leave while GEMM j + 1 runs
                    self.mark(marks, self.main, "gemm", j, gemms[j])
                    self.side.wait_event(self.main.record())
                    self.mark(marks, self.side, "comm", j, lambda: self.comm.reduce_scatter(
                        partial[j * rows:(j + 1) * rows].data.ptr, shard[j * block:(j + 1) * block].data.ptr, block * n))
                self.main.wait_event(self.side.record())

            comm = lambda shard=shard: self.on_side(lambda: self.comm.reduce_scatter(partial.data.ptr, shard.data.ptr,
                                                                                      shard.size))
            partial.fill(cupy.nan)
            overlapped()
            self.main.synchronize()
            check = compare(shard, want, float(cupy.linalg.norm(want)), "bf16")
            done[label] = self.timed({"overlapped": overlapped, "sequential": lambda whole=whole, comm=comm: (whole(), comm()),
                                      "gemm": whole, "comm": comm}, check, tile)
        return done

    def run(self) -> dict:
        with self.main:
            done = {p: {"kernels": getattr(self, p)()} for p in PATTERNS}
            self.main.synchronize()
            self.comm.destroy()
        return done


def main(argv) -> int:
    spec_path, rank, out = argv[0], int(argv[1]), Path(argv[2])
    result = _Rank(json.loads(Path(spec_path).read_text()), rank).run()
    out.write_text(json.dumps({"rank": rank, **result}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
