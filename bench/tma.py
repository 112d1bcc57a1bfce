"""TMA alone, beside the step that brings it in (bench/machinery.py holds the wgmma's, bench/clusters.py
the clusters'): one load's latency against its box's size, from L2 and from memory; the bandwidth one
CTA per SM reaches against the boxes it keeps in flight, beside cp.async of the same bytes issued by
every thread; and a box multicast into the CTAs of a cluster against each CTA loading it. The source
is a matrix of 128-byte rows whose every word is distinct (word i holds i times an odd constant, modulo
2^32); a region smaller than L2 is read from L2, the whole matrix, rotated between launches, from memory.
Checked before it is timed: each CTA's last box, written back unswizzled, is the host's word for word,
and the SASS holds the load each path claims (UTMALDG, its multicast form, LDGSTS)."""
from __future__ import annotations

import numpy as np

from .catalogue import HOPPER
from .cuda import KERNELS, load_module
from .launch import exported, resident_ctas, tensor_map
from .registry import register
from .sass import disassemble
from .timing import quick, time_gpu

SOURCE = KERNELS / "tma_rate.cu"
CLUSTERS = (2, 4)
ROW_WORDS = 32                               # a 128-byte row: the swizzle row the GEMM's boxes are made of
MATRIX_BYTES = (1 << 30) if quick() else (2 << 30)
L2_REGION_BYTES = 16 << 20                   # read again and again: held in L2 on any Hopper part
LATENCY_ITERS = 256 if quick() else 1024     # loads one after another in a launch
LATENCY_STRIDE_BYTES = 64 << 10              # from memory: rows apart, past a box and L2's 256-byte promotion
STREAM_BOXES = 256 if quick() else 1024      # a CTA's boxes in a launch: a launch from memory reads less than the matrix
BATCH = 4                                    # a stream's launches between two events
MULTICAST_SLOTS = 8                          # the multicast's boxes in flight
ISSUERS = (1, 2, 4)                          # CTAs an SM, each with one thread issuing ...
ISSUER_SLOTS = 4                             # ... this many boxes in flight; and so for each box size:
BOX_ROWS = (16, 32, 64, 128, 256)            # 2 KiB to TMA's largest box, 32 KiB
REPS = 5 if quick() else 10
WORD_STEP = 2654435761                       # odd: word i's value i * WORD_STEP mod 2^32 is distinct for every i
SOURCES = ("l2", "hbm")


def words(first: int, count: int) -> np.ndarray:
    """The matrix's words first .. first + count - 1, as the device fills it."""
    return ((np.arange(first, first + count, dtype=np.uint64) * WORD_STEP) % 2**32).astype(np.uint32)


def box(row: int, rows: int) -> np.ndarray:
    """The box of ``rows`` rows from ``row``: its words in row-major order."""
    return words(row * ROW_WORDS, rows * ROW_WORDS)


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
    """A stream's launches over one region: from memory each launch starts where the last ended, so
    that none finds the one before in L2; from L2 each starts at row 0."""

    def __init__(self, region_rows: int, per_launch_rows: int, rotate: bool):
        self.region_rows, self.per_launch_rows, self.rotate, self.start = region_rows, per_launch_rows, rotate, 0

    def next(self) -> int:
        start = self.start
        if self.rotate:
            self.start = (self.start + self.per_launch_rows) % self.region_rows
        return start


@register("machinery.tma", sources=(str(SOURCE.relative_to(KERNELS.parent)), "bench/cuda.py", "bench/launch.py",
                                    "bench/sass.py"),
          builds=((SOURCE, {"CLUSTER": 1}),) + tuple((SOURCE, {"CLUSTER": c}) for c in CLUSTERS),
          title="TMA alone: a load's latency, boxes in flight, multicast", timeout_s=120, min_cc=HOPPER)
def tma(ctx) -> dict:
    import cupy

    matrix_rows = MATRIX_BYTES // (4 * ROW_WORDS)
    matrix = (cupy.arange(matrix_rows * ROW_WORDS, dtype=cupy.uint32) * cupy.uint32(WORD_STEP)).reshape(matrix_rows, ROW_WORDS)
    regions = {"l2": L2_REGION_BYTES // (4 * ROW_WORDS), "hbm": matrix_rows}
    wrong, sass = [], {}

    def checked(label: str, out, rows: list[int], box_rows: int) -> None:
        got = out.get().reshape(len(rows), box_rows * ROW_WORDS)
        off = sum(not np.array_equal(got[i], box(r, box_rows)) for i, r in enumerate(rows))
        if off:
            wrong.append(f"{label}: {off} of {len(rows)} CTAs' last box differs from the source")

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
    [box_rows_stream] = exported(module, "STREAM_BOX_ROWS")
    [max_box_rows] = exported(module, "MAX_BOX_ROWS")
    [max_slots] = exported(module, "MAX_SLOTS")
    [threads] = exported(module, "CTA_THREADS")
    [align_slack] = exported(module, "ALIGN_SLACK_BYTES")
    cp_async_slots = exported(module, "CP_ASYNC_SLOTS", 5)
    box_bytes = box_rows_stream * 4 * ROW_WORDS

    # latency: one thread, one box at a time; from L2 the same box again, from memory 64 KiB apart
    # after L2 is flushed (a buffer of twice its size written over it: the walk's few lines would stay)
    scratch = cupy.empty(2 * ctx.device["l2_bytes"] // 4, dtype=cupy.uint32)
    latency_rows = []
    load_latency = kernel("load_latency")
    stride = LATENCY_STRIDE_BYTES // (4 * ROW_WORDS)
    box_rows = 1
    while box_rows <= max_box_rows:
        tmap = tensor_map(matrix, box_rows, ROW_WORDS, "fp32")
        out = cupy.zeros(box_rows * ROW_WORDS, dtype=cupy.uint32)
        clocks = cupy.zeros(1, dtype=cupy.int64)
        for source in SOURCES:
            step = stride if source == "hbm" else 0
            cycles, start = [], 0
            for launch in range(REPS + 1):                      # the first loads the module and warms L2
                if source == "hbm":
                    scratch.fill(launch)
                load_latency((1,), (threads,), (tmap, np.int32(box_rows), np.int32(LATENCY_ITERS), np.int32(start),
                                                np.int32(step), np.int32(matrix_rows), out, clocks), shared_mem=smem)
                if launch:
                    cycles.append(float(clocks.get()[0]) / LATENCY_ITERS)
            checked(f"latency, {box_rows} rows from {source}", out, [(start + (LATENCY_ITERS - 1) * step) % matrix_rows],
                    box_rows)
            latency_rows.append({"source": source, "box_bytes": box_rows * 4 * ROW_WORDS, "cycles": float(np.median(cycles))})
        ctx.progress(f"TMA latency, box {box_rows * 4 * ROW_WORDS:,} B: " + ", ".join(
            f"{x['cycles']:.0f} cycles from {x['source']}" for x in latency_rows[-2:]))
        box_rows *= 2

    def stream(name: str, args_of, ctas: int, cluster: int, source: str, rows: int, smem_bytes: int,
               boxes: int = STREAM_BOXES) -> dict:
        """Time a stream of boxes of ``rows`` rows; check every CTA's last box of the last launch; its rate.
        ``args_of(boxes, start, gap, region, out, clocks)``: the kernel's arguments."""
        f = kernel(name) if cluster == 1 else cluster_kernels[cluster](name)
        region = regions[source]
        gap = spacing(source, ctas // cluster, boxes, rows, region)
        walk = _Walk(region, ctas // cluster * boxes * rows, rotate=source == "hbm")
        out = cupy.zeros(ctas * rows * ROW_WORDS, dtype=cupy.uint32)
        clocks = cupy.zeros(ctas, dtype=cupy.int64)
        last = {}

        def run():
            last["start"] = walk.next()
            f((ctas,), (threads,), args_of(np.int32(boxes), np.int32(last["start"]), np.int32(gap), np.int32(region), out, clocks),
              shared_mem=smem_bytes)
        t = time_gpu(run, warmup=2, reps=REPS, batch=BATCH)
        checked(f"{name}, boxes of {rows} rows from {source}", out,
                stream_rows(last["start"], ctas, cluster, gap, boxes, rows, region), rows)
        box_bytes = rows * 4 * ROW_WORDS
        per_sm = -(-ctas // sms)                    # CTAs on each busy SM: its bytes a clock are theirs together
        return {"time_ms": t, "tbps": ctas * boxes * box_bytes / (t["median"] * 1e-3) / 1e12,
                "bytes_per_sm_clock": per_sm * boxes * box_bytes / float(clocks.get().max())}

    def tma_args(tmap, rows: int, slots: int):
        return lambda *where: (tmap, np.int32(rows), np.int32(slots), *where)

    def ring_bytes(rows: int, slots: int) -> int:      # a CTA's dynamic shared memory for its slots
        return slots * rows * 4 * ROW_WORDS + align_slack

    # boxes in flight: one CTA per SM, TMA by one thread against cp.async by all
    cluster_kernels = {}
    sms = ctx.device["sm_count"]
    ctas = resident_ctas(kernel("stream_separate"), threads, smem, 1)
    maps = {rows: tensor_map(matrix, rows, ROW_WORDS, "fp32") for rows in {*BOX_ROWS, box_rows_stream}}
    flat = matrix.reshape(-1)
    depth_rows = []
    for source in SOURCES:
        for slots in cp_async_slots:
            row = {"source": source, "slots": slots,
                   "tma": stream("stream_separate", tma_args(maps[box_rows_stream], box_rows_stream, slots), ctas, 1,
                                 source, box_rows_stream, smem),
                   "cp_async": stream(f"cp_async_{slots}", lambda *where: (flat, *where), ctas, 1, source,
                                      box_rows_stream, smem)}
            depth_rows.append(row)
            ctx.progress(f"{slots:2d} boxes in flight from {source}: TMA {row['tma']['tbps']:.2f} TB/s, "
                         f"cp.async {row['cp_async']['tbps']:.2f} TB/s")

    # the box's size: one CTA an SM, ISSUER_SLOTS boxes in flight
    size_rows = []
    for source in SOURCES:
        for rows in BOX_ROWS:
            # from memory a launch still reads less than the matrix: as many bytes a CTA as 8 KiB boxes give
            boxes = STREAM_BOXES * box_rows_stream // rows
            row = {"source": source, "box_bytes": rows * 4 * ROW_WORDS, "slots": ISSUER_SLOTS,
                   "tma": stream("stream_separate", tma_args(maps[rows], rows, ISSUER_SLOTS), ctas, 1, source, rows,
                                 ring_bytes(rows, ISSUER_SLOTS), boxes=boxes)}
            size_rows.append(row)
            ctx.progress(f"boxes of {row['box_bytes']:,} B, {ISSUER_SLOTS} in flight, from {source}: TMA "
                         f"{row['tma']['tbps']:.2f} TB/s")

    # issuers: the same stream with 1, 2, 4 CTAs on every SM, each its own thread issuing
    issuer_rows = []
    for source in SOURCES:
        for per_sm in ISSUERS:
            row = {"source": source, "ctas_per_sm": per_sm, "slots": ISSUER_SLOTS,
                   "tma": stream("stream_separate", tma_args(maps[box_rows_stream], box_rows_stream, ISSUER_SLOTS),
                                 sms * per_sm, 1, source, box_rows_stream, ring_bytes(box_rows_stream, ISSUER_SLOTS),
                                 boxes=STREAM_BOXES // per_sm)}
            issuer_rows.append(row)
            ctx.progress(f"{per_sm} CTAs an SM, {ISSUER_SLOTS} boxes in flight each, from {source}: TMA {row['tma']['tbps']:.2f} TB/s")

    # multicast: a cluster's CTAs read the same boxes, each loading all of it or its slice for all
    multicast_rows = []
    for cluster in CLUSTERS:
        _, cluster_kernels[cluster], _ = module_of(cluster)
        slice_rows = box_rows_stream // cluster              # the kernel's slice: box_rows / CLUSTER, the map's box
        slice_map = tensor_map(matrix, slice_rows, ROW_WORDS, "fp32")
        group = resident_ctas(cluster_kernels[cluster]("stream_multicast"), threads, smem, cluster)
        for source in SOURCES:
            row = {"source": source, "cluster": cluster, "ctas": group,
                   "separate": stream("stream_separate", tma_args(maps[box_rows_stream], box_rows_stream, MULTICAST_SLOTS),
                                      group, cluster, source, box_rows_stream, smem),
                   "multicast": stream("stream_multicast", tma_args(slice_map, box_rows_stream, MULTICAST_SLOTS),
                                       group, cluster, source, box_rows_stream, smem)}
            multicast_rows.append(row)
            ctx.progress(f"clusters of {cluster} from {source}: each CTA loading {row['separate']['tbps']:.2f} TB/s "
                         f"delivered, multicast {row['multicast']['tbps']:.2f}")

    expected = {"load_latency": "UTMALDG.2D", "stream_separate": "UTMALDG.2D",
                **{f"stream_multicast, clusters of {c}": "UTMALDG.2D.MULTICAST" for c in CLUSTERS},
                **{f"cp_async_{s}": "LDGSTS" for s in cp_async_slots}}
    for name, opcode in expected.items():     # the TMA loads exactly; cp.async in any of its cache forms
        if not any(op == opcode or opcode == "LDGSTS" and op.startswith("LDGSTS.") for op in sass.get(name, [])):
            wrong.append(f"{name}: SASS holds {sass.get(name) or 'no load of its kind'}, not {opcode}")
    return {"params": {"matrix_bytes": MATRIX_BYTES, "l2_region_bytes": L2_REGION_BYTES, "row_bytes": 4 * ROW_WORDS,
                       "latency_iters": LATENCY_ITERS, "latency_stride_bytes": LATENCY_STRIDE_BYTES,
                       "stream_box_bytes": box_bytes, "stream_boxes": STREAM_BOXES, "batch": BATCH, "max_slots": max_slots,
                       "multicast_slots": MULTICAST_SLOTS, "issuers": list(ISSUERS), "issuer_slots": ISSUER_SLOTS,
                       "box_rows": list(BOX_ROWS), "clusters": list(CLUSTERS), "threads": threads, "ctas": ctas,
                       "reps": REPS, "swizzle": "128B, as the GEMM's tiles"},
            "check": {"passed": not wrong, "method": "every CTA's last box, written back unswizzled, equals the source's "
                                                    "rows word for word (each word distinct); the SASS holds UTMALDG, "
                                                    "its multicast form and LDGSTS where each path claims them",
                      **({"detail": "; ".join(wrong[:5])} if wrong else {})},
            "sass": sass, "latency": latency_rows, "depth": depth_rows, "sizes": size_rows, "issuers": issuer_rows, "multicast": multicast_rows}
