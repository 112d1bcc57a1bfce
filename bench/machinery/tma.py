"""TMA alone, beside the step that brings it in (bench/machinery/wgmma.py holds the wgmma's, bench/machinery/clusters.py
the clusters'): one load's latency against its box's size, from L2 and from memory; the bandwidth one
CTA per SM reaches against the boxes it keeps in flight, beside cp.async of the same bytes issued by
every thread; and a box multicast into the CTAs of a cluster against each CTA loading it. The source
is a matrix of 128-byte rows whose every word is distinct (word i holds i times an odd constant, modulo
2^32); a region smaller than L2 is read from L2, the whole matrix, rotated between launches, from memory.
Checked before it is timed: each CTA's last box, written back unswizzled, is the host's word for word,
and the SASS holds the load each path claims (UTMALDG, its multicast form, LDGSTS)."""
from __future__ import annotations

import numpy as np

from ..gemm.catalogue import HOPPER
from ..core.cuda import KERNELS, load_module
from ..gemm.launch import exported, resident_ctas, tensor_map
from ..core.registry import register
from ..core.sass import disassemble
from ..core.timing import quick, time_gpu_alternating

SOURCE = KERNELS / "tma_rate.cu"
CLUSTERS = (2, 4)
MATRIX_BYTES = (1 << 30) if quick() else (2 << 30)
L2_REGION_BYTES = 16 << 20                   # read again and again: held in L2 on any Hopper part
LATENCY_ITERS = 256 if quick() else 1024     # loads one after another in a launch
LATENCY_STRIDE_BYTES = 64 << 10              # from memory: rows apart, past a box and L2's 256-byte promotion
STREAM_BOXES = 256 if quick() else 1024      # a CTA's boxes in a launch: a launch from memory reads less than the matrix
BATCH = 4                                    # a stream's launches between two events
MULTICAST_SLOTS = 8                          # the multicast's boxes in flight
ISSUERS = (1, 2, 4)                          # CTAs an SM, each with one thread issuing
BOX_ROWS = (16, 32, 64, 128, 256)            # 2 KiB to TMA's largest box, 32 KiB
REPS = 5 if quick() else 10
WORD_STEP = 2654435761                       # odd: word i's value i * WORD_STEP mod 2^32 is distinct for every i
SOURCES = ("l2", "hbm")


def words(first: int, count: int) -> np.ndarray:
    """The matrix's words first .. first + count - 1, as the device fills it."""
    return ((np.arange(first, first + count, dtype=np.uint64) * WORD_STEP) % 2**32).astype(np.uint32)


def box(row: int, rows: int, row_words: int) -> np.ndarray:
    """The box of ``rows`` rows from ``row`` of a matrix ``row_words`` wide: its words in row-major order."""
    return words(row * row_words, rows * row_words)


def spacing(source: str, units: int, boxes: int, box_rows: int, region_rows: int) -> int:
    """Rows between the first boxes of two units (clusters) of a stream: from memory, each unit's run
    after the one before; in L2, the units spread evenly over the region, so that they do not all
    ask for the same lines at once."""
    if source == "hbm":
        return boxes * box_rows
    return region_rows // units // box_rows * box_rows


def stream_rows(start: int, ctas: int, cluster: int, gap: int, boxes: int, box_rows: int, region_rows: int) -> list[int]:
    """The first row of each CTA's last box in a stream: the kernel's walk (every CTA of a cluster
    reads the same boxes; unit u starts ``gap`` rows after unit u - 1; modulo the region)."""
    return [(start + cta // cluster * gap + (boxes - 1) * box_rows) % region_rows for cta in range(ctas)]


class _Walk:
    """Where each launch over one region starts. From memory a launch starts where the one before
    ended, whichever stream it belongs to, so that none finds another's rows in L2 (streams timed in
    turns share one walk); from L2 every launch starts at row 0."""

    def __init__(self, region_rows: int, rotate: bool):
        self.region_rows, self.rotate, self.start = region_rows, rotate, 0

    def next(self, launch_rows: int) -> int:
        start = self.start
        if self.rotate:
            self.start = (self.start + launch_rows) % self.region_rows
        return start


@register("machinery.tma", sources=(str(SOURCE.relative_to(KERNELS.parent)), "bench/core/cuda.py", "bench/gemm/launch.py",
                                    "bench/core/sass.py", "bench/core/timing.py"),
          builds=((SOURCE, {"CLUSTER": 1}),) + tuple((SOURCE, {"CLUSTER": c}) for c in CLUSTERS),
          title="TMA alone: a load's latency, boxes in flight, multicast", timeout_s=120, min_cc=HOPPER)
def tma(ctx) -> dict:
    import cupy

    wrong, sass = [], {}
    sms = ctx.device["sm_count"]

    def module_of(cluster: int):
        module, cubin = load_module(SOURCE, ctx.device, {"CLUSTER": cluster})
        [smem] = exported(module, "DYNAMIC_SMEM_BYTES")
        for name, instructions in disassemble(cubin).items():
            sass[f"{name}, clusters of {cluster}" if cluster > 1 else name] = sorted(
                {i.opcode for i in instructions if i.mnemonic in ("UTMALDG", "LDGSTS")})
        def kernel(name):
            f = module.get_function(name)
            f.max_dynamic_shared_size_bytes = smem
            return f
        return module, kernel, smem

    module, kernel, smem = module_of(1)
    [row_bytes] = exported(module, "BOX_ROW_BYTES")
    [box_rows_stream] = exported(module, "STREAM_BOX_ROWS")
    [max_box_rows] = exported(module, "MAX_BOX_ROWS")
    [max_slots] = exported(module, "MAX_SLOTS")
    [sweep_slots] = exported(module, "SWEEP_SLOTS")
    [threads] = exported(module, "CTA_THREADS")
    [align_slack] = exported(module, "ALIGN_SLACK_BYTES")
    cp_async_slots = exported(module, "CP_ASYNC_SLOTS", *exported(module, "CP_ASYNC_KINDS"))
    row_words = row_bytes // 4
    box_bytes = lambda rows: rows * row_bytes

    matrix_rows = MATRIX_BYTES // row_bytes
    matrix = (cupy.arange(matrix_rows * row_words, dtype=cupy.uint32) * cupy.uint32(WORD_STEP)).reshape(matrix_rows, row_words)
    regions = {"l2": L2_REGION_BYTES // row_bytes, "hbm": matrix_rows}
    walks = {source: _Walk(regions[source], rotate=source == "hbm") for source in SOURCES}

    def checked(label: str, out, rows: list[int], box_rows: int) -> None:
        got = out.get().reshape(len(rows), box_rows * row_words)
        off = sum(not np.array_equal(got[i], box(r, box_rows, row_words)) for i, r in enumerate(rows))
        if off:
            wrong.append(f"{label}: {off} of {len(rows)} CTAs' last box differs from the source")

    # latency: one thread, one box at a time; from L2 the same box again, from memory 64 KiB apart
    # after L2 is flushed (a buffer of twice its size written over it: the walk's few lines would stay)
    scratch = cupy.empty(2 * ctx.device["l2_bytes"] // 4, dtype=cupy.uint32)
    latency_rows = []
    load_latency = kernel("load_latency")
    stride = LATENCY_STRIDE_BYTES // row_bytes
    box_rows = 1
    while box_rows <= max_box_rows:
        tmap = tensor_map(matrix, box_rows, row_words, "fp32")
        out = cupy.zeros(box_rows * row_words, dtype=cupy.uint32)
        clocks = cupy.zeros(1, dtype=cupy.int64)
        for source in SOURCES:
            step = stride if source == "hbm" else 0
            cycles = []
            for launch in range(REPS + 1):                      # the first loads the module and warms L2
                if source == "hbm":
                    scratch.fill(launch)
                load_latency((1,), (threads,), (tmap, np.int32(box_rows), np.int32(LATENCY_ITERS), np.int32(step),
                                                np.int32(matrix_rows), out, clocks), shared_mem=smem)
                if launch:
                    cycles.append(float(clocks.get()[0]) / LATENCY_ITERS)
            checked(f"latency, {box_rows} rows from {source}", out, [(LATENCY_ITERS - 1) * step % matrix_rows], box_rows)
            latency_rows.append({"source": source, "box_bytes": box_bytes(box_rows), "cycles": float(np.median(cycles))})
        ctx.progress(f"TMA latency, box {box_bytes(box_rows):,} B: " + ", ".join(
            f"{x['cycles']:.0f} cycles from {x['source']}" for x in latency_rows[-2:]))
        box_rows *= 2

    cluster_kernels = {1: kernel}

    def stream(name: str, args_of, ctas: int, cluster: int, source: str, rows: int, smem_bytes: int,
               boxes: int = STREAM_BOXES):
        """A stream of boxes of ``rows`` rows, ``ctas`` CTAs: its launch, and what turns its time into
        a checked rate (every CTA's last box of the last launch). ``args_of(boxes, start, gap, region,
        out, clocks)``: the kernel's arguments."""
        f = cluster_kernels[cluster](name)
        resident = resident_ctas(f, threads, smem_bytes, cluster)
        if resident < ctas:
            wrong.append(f"{name}, boxes of {rows} rows: {ctas} CTAs asked for, {resident} resident at once")
        region = regions[source]
        gap = spacing(source, ctas // cluster, boxes, rows, region)
        out = cupy.zeros(ctas * rows * row_words, dtype=cupy.uint32)
        clocks = cupy.zeros(ctas, dtype=cupy.int64)
        last = {}

        def run():
            last["start"] = walks[source].next(ctas // cluster * boxes * rows)
            f((ctas,), (threads,), args_of(np.int32(boxes), np.int32(last["start"]), np.int32(gap), np.int32(region), out, clocks),
              shared_mem=smem_bytes)

        def rate(t: dict) -> dict:
            checked(f"{name}, boxes of {rows} rows from {source}", out,
                    stream_rows(last["start"], ctas, cluster, gap, boxes, rows, region), rows)
            per_sm = -(-ctas // sms)                # CTAs on each busy SM: its bytes a clock are theirs together
            return {"time_ms": t, "tbps": ctas * boxes * box_bytes(rows) / (t["median"] * 1e-3) / 1e12,
                    "bytes_per_sm_clock": per_sm * boxes * box_bytes(rows) / float(clocks.get().max())}
        return run, rate

    def in_turns(*streams) -> list[dict]:
        """Streams timed in turns, so that the ones a row compares meet the same clocks; each checked."""
        times = time_gpu_alternating([run for run, _ in streams], warmup=2, reps=REPS, batch=BATCH)
        return [rate(t) for (_, rate), t in zip(streams, times)]

    def tma_args(tmap, rows: int, slots: int):
        return lambda *where: (tmap, np.int32(rows), np.int32(slots), *where)

    def ring_bytes(rows: int, slots: int) -> int:      # a CTA's dynamic shared memory for its slots
        return slots * box_bytes(rows) + align_slack

    # boxes in flight: one CTA per SM, TMA by one thread against cp.async by all, in turns
    ctas = resident_ctas(kernel("stream_separate"), threads, smem, 1)
    maps = {rows: tensor_map(matrix, rows, row_words, "fp32") for rows in {*BOX_ROWS, box_rows_stream}}
    flat = matrix.reshape(-1)
    depth_rows = []
    for source in SOURCES:
        for slots in cp_async_slots:
            tma_rate, cp_async_rate = in_turns(
                stream("stream_separate", tma_args(maps[box_rows_stream], box_rows_stream, slots), ctas, 1, source,
                       box_rows_stream, smem),
                stream(f"cp_async_{slots}", lambda *where: (flat, *where), ctas, 1, source, box_rows_stream, smem))
            depth_rows.append({"source": source, "slots": slots, "tma": tma_rate, "cp_async": cp_async_rate})
            ctx.progress(f"{slots:2d} boxes in flight from {source}: TMA {tma_rate['tbps']:.2f} TB/s, "
                         f"cp.async {cp_async_rate['tbps']:.2f} TB/s")

    def swept(source: str, rows: int, per_sm: int):
        """The stream with sweep_slots boxes of ``rows`` rows in flight a CTA and ``per_sm`` CTAs an SM,
        each its own thread issuing; a launch reads as many bytes an SM as the stream's own boxes do."""
        return stream("stream_separate", tma_args(maps[rows], rows, sweep_slots), sms * per_sm, 1, source, rows,
                      ring_bytes(rows, sweep_slots), boxes=STREAM_BOXES * box_rows_stream // rows // per_sm)

    # the box's size, one CTA an SM; then 1, 2, 4 CTAs an SM with the stream's box: each set in turns
    size_rows, issuer_rows = [], []
    for source in SOURCES:
        for rows, rate in zip(BOX_ROWS, in_turns(*(swept(source, rows, 1) for rows in BOX_ROWS))):
            size_rows.append({"source": source, "box_bytes": box_bytes(rows), "slots": sweep_slots, "tma": rate})
            ctx.progress(f"boxes of {box_bytes(rows):,} B, {sweep_slots} in flight, from {source}: TMA {rate['tbps']:.2f} TB/s")
        for per_sm, rate in zip(ISSUERS, in_turns(*(swept(source, box_rows_stream, n) for n in ISSUERS))):
            issuer_rows.append({"source": source, "ctas_per_sm": per_sm, "slots": sweep_slots, "tma": rate})
            ctx.progress(f"{per_sm} CTAs an SM, {sweep_slots} boxes in flight each, from {source}: TMA {rate['tbps']:.2f} TB/s")

    # multicast: a cluster's CTAs read the same boxes, each loading all of it or its slice for all, in turns
    multicast_rows = []
    for cluster in CLUSTERS:
        _, cluster_kernels[cluster], _ = module_of(cluster)
        slice_rows = box_rows_stream // cluster              # the kernel's slice: box_rows / CLUSTER, the map's box
        slice_map = tensor_map(matrix, slice_rows, row_words, "fp32")
        group = resident_ctas(cluster_kernels[cluster]("stream_multicast"), threads, smem, cluster)
        for source in SOURCES:
            separate, multicast = in_turns(
                stream("stream_separate", tma_args(maps[box_rows_stream], box_rows_stream, MULTICAST_SLOTS), group, cluster,
                       source, box_rows_stream, smem),
                stream("stream_multicast", tma_args(slice_map, box_rows_stream, MULTICAST_SLOTS), group, cluster, source,
                       box_rows_stream, smem))
            multicast_rows.append({"source": source, "cluster": cluster, "ctas": group, "separate": separate,
                                   "multicast": multicast})
            ctx.progress(f"clusters of {cluster} from {source}: each CTA loading {separate['tbps']:.2f} TB/s "
                         f"delivered, multicast {multicast['tbps']:.2f}")

    expected = {"load_latency": "UTMALDG.2D", "stream_separate": "UTMALDG.2D",
                **{f"stream_multicast, clusters of {c}": "UTMALDG.2D.MULTICAST" for c in CLUSTERS},
                **{f"cp_async_{s}": "LDGSTS" for s in cp_async_slots}}
    for name, opcode in expected.items():     # the TMA loads exactly; cp.async in any of its cache forms
        if not any(op == opcode or opcode == "LDGSTS" and op.startswith("LDGSTS.") for op in sass.get(name, [])):
            wrong.append(f"{name}: SASS holds {sass.get(name) or 'no load of its kind'}, not {opcode}")
    return {"params": {"matrix_bytes": MATRIX_BYTES, "l2_region_bytes": L2_REGION_BYTES, "row_bytes": row_bytes,
                       "latency_iters": LATENCY_ITERS, "latency_stride_bytes": LATENCY_STRIDE_BYTES,
                       "stream_box_bytes": box_bytes(box_rows_stream), "stream_boxes": STREAM_BOXES, "batch": BATCH,
                       "max_slots": max_slots, "multicast_slots": MULTICAST_SLOTS, "issuers": list(ISSUERS),
                       "issuer_slots": sweep_slots, "box_rows": list(BOX_ROWS), "clusters": list(CLUSTERS),
                       "threads": threads, "ctas": ctas, "reps": REPS, "swizzle": "128B, as the GEMM's tiles",
                       "in_turns": "TMA and cp.async at each depth; the box sizes; the CTAs an SM; separate and "
                                   "multicast loads at each cluster size"},
            "check": {"passed": not wrong, "method": "every CTA's last box, written back unswizzled, equals the source's "
                                                    "rows word for word (each word distinct); the SASS holds UTMALDG, "
                                                    "its multicast form and LDGSTS where each path claims them; every "
                                                    "stream's CTAs resident at once",
                      **({"detail": "; ".join(wrong[:5])} if wrong else {})},
            "sass": sass, "latency": latency_rows, "depth": depth_rows, "sizes": size_rows, "issuers": issuer_rows, "multicast": multicast_rows}
