"""One rank of the NCCL collectives benchmark: ``python -m bench.multigpu.collective_rank SPEC RANK OUT``.

bench.multigpu.collectives starts one per GPU (rank r drives GPU r); each checks and times every collective
and size of the spec on its own GPU and writes its rows to OUT as JSON."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from . import nccl
from .collectives import batch_of, element_count
from ..core.timing import time_gpu

SUM_OF_RANKS, ONE_RANK, GATHERED = 0, 1, 2     # kernels/collective_check.cu's Expect
THREADS, MAX_BLOCKS = 256, 4096


def main(argv) -> int:
    spec_path, rank, out = argv[0], int(argv[1]), Path(argv[2])
    spec = json.loads(Path(spec_path).read_text())
    n = spec["nranks"]
    import cupy
    import numpy as np
    cupy.cuda.Device(rank).use()
    stream = cupy.cuda.Stream(non_blocking=True)
    module = cupy.RawModule(path=spec["cubin"])
    fill, count_wrong = module.get_function("fill"), module.get_function("count_wrong")
    words = max(spec["sizes"]) // 4
    send, recv = cupy.empty(words, dtype=cupy.float32), cupy.empty(words, dtype=cupy.float32)
    wrong = cupy.zeros(1, dtype=cupy.uint64)
    grid = lambda count: (min(MAX_BLOCKS, -(-count // THREADS)),)
    prev, nxt = (rank - 1) % n, (rank + 1) % n
    rows = []
    with stream:
        comm = nccl.Comm(n, bytes.fromhex(spec["uid"]), rank, stream.ptr)
        s, r = send.data.ptr, recv.data.ptr
        for name in spec["collectives"]:
            for size in spec["sizes"]:
                count = element_count(name, size, n)
                if count == 0:
                    continue
                per = count // n
                # what this rank sends, what it runs, and what its output must hold
                sent, run, expect = {
                    "all_reduce": (count, lambda: comm.all_reduce(s, r, count), (count, SUM_OF_RANKS, 0, 0)),
                    "all_gather": (per, lambda: comm.all_gather(s, r, per), (count, GATHERED, 0, 0)),
                    "reduce_scatter": (count, lambda: comm.reduce_scatter(s, r, per),
                                       (per, SUM_OF_RANKS, 0, rank * per)),
                    "broadcast": (count, lambda: comm.broadcast(s, r, count, 0), (count, ONE_RANK, 0, 0)),
                    "send_recv": (count, lambda: comm.send_recv(s, r, count, nxt, prev), (count, ONE_RANK, prev, 0)),
                    # part j of the output is rank j's part of its input meant for this rank
                    "all_to_all": (count, lambda: comm.all_to_all(s, r, per), (count, GATHERED, 0, rank * per)),
                }[name]
                if spec.get("probe"):          # once, for NCCL to log what it chose (bench.multigpu.collectives.TUNING_ENV)
                    run()
                    continue
                fill(grid(sent), (THREADS,), (send, np.int64(sent), np.int32(rank), np.int64(0)))
                recv.view(cupy.uint32)[:expect[0]].fill(0xFFFFFFFF)     # NaN: an unwritten element fails
                wrong.fill(0)
                run()
                out_count, kind, source, offset = expect
                count_wrong(grid(out_count), (THREADS,), (recv, np.int64(out_count), np.int32(kind), np.int32(n),
                                                          np.int32(source), np.int64(offset), np.int64(max(per, 1)),
                                                          wrong))
                t = time_gpu(run, warmup=spec["warmup"], reps=spec["reps"], batch=batch_of(count * 4))
                rows.append({"collective": name, "bytes": count * 4, "time_ms": t, "checked": out_count,
                             "wrong": int(wrong.get()[0])})
            print(f"    rank {rank}: {name} done", flush=True)
        stream.synchronize()
        comm.destroy()
    out.write_text(json.dumps({"rank": rank, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
