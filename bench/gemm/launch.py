"""Launching the hand-written GEMM kernels of the catalogue: CuTe kernels compiled with their
step's constants, their TMA descriptors, persistent grids and split-wave plans; and the numba
kernel. ``prepare(step, variant, device)`` gives prepare(a, b, c) -> harness.Launch."""
from __future__ import annotations

from dataclasses import dataclass, replace

from . import catalogue
from .catalogue import Step, Variant
from .harness import Launch, Refused
from .plan import ctas, split_wave, stream_k


def numba_cuda():
    """numba.cuda, importable beside newer NumPy: numba-cuda 0.30 still calls np.row_stack,
    which NumPy 2.5 removed (it was an alias of vstack)."""
    import numpy as np
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda
    return cuda


def _numba_prepare(step: Step):
    import importlib
    numba_cuda()
    module = importlib.import_module(step.source.removesuffix(".py").replace("/", "."))
    kernel = getattr(module, step.function)

    def prepare(a, b, c):
        (m, k), n = a.shape, c.shape[1]
        grid = module.grid(m, n)
        flat = (a.ravel(), b.ravel(), c.ravel())
        run = lambda: kernel[grid, module.BLOCK](*flat, m, n, k)
        run()                                   # compiles, so that the resources can be read
        compiled = next(iter(kernel.overloads.values()))      # the one specialization launched
        return Launch(run, {"threads_per_block": module.BLOCK[0] * module.BLOCK[1], "grid": list(grid),
                            "regs_per_thread": int(compiled.regs_per_thread),
                            "smem_static_bytes": int(compiled.shared_mem_per_block), "smem_dynamic_bytes": 0,
                            "local_bytes": int(compiled.local_mem_per_thread)})
    return prepare


# C as CuPy holds it, by output type: BF16 as bit patterns
OUTPUT_DTYPES = {"fp32": "float32", "bf16": "uint16"}
# A matrix's element as the copy writes it to shared memory: its tensor-map type and its bytes.
# TFLOAT32 reads FP32 and rounds each float to the nearest TF32 on its way in, where the tensor
# cores, given the float, would drop its low 13 bits.
TMA_TYPES = {"fp32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4), "tf32": ("CU_TENSOR_MAP_DATA_TYPE_TFLOAT32", 4),
             "bf16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2), "fp8": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1)}


def tensor_map_args(box_rows: int, box_cols: int, element: str = "fp32") -> dict:
    """cuTensorMapEncodeTiled's arguments for a row-major matrix of ``element`` (TMA_TYPES) read in
    boxes of box_rows x box_cols, swizzled 128-byte rows in shared memory (the wgmma layout), before
    the matrix's address and extent are known: the one place the TMA box is defined."""
    data_type, size = TMA_TYPES[element]
    if box_cols * size != 128:
        raise ValueError(f"a 128-byte-swizzled box row is 128 bytes: {box_cols} elements of {size} bytes are not")
    return {"data_type": data_type, "box": [box_cols, box_rows],   # innermost first
            "element_strides": [1, 1], "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE",
            "swizzle": "CU_TENSOR_MAP_SWIZZLE_128B", "l2_promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
            "oob_fill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"}


def tensor_map(x, box_rows: int, box_cols: int, element: str = "fp32"):
    """A TMA descriptor for the row-major matrix ``x`` (cuda-bindings' cuTensorMapEncodeTiled),
    as a structured NumPy scalar that CuPy passes by value to a ``__grid_constant__ CUtensorMap``."""
    import ctypes
    import numpy as np
    from cuda.bindings import driver as cu

    opaque = np.dtype([(f"w{i}", "<u8") for i in range(16)])      # CUtensorMap: 128 opaque bytes
    args = tensor_map_args(box_rows, box_cols, element)
    rows, cols = x.shape
    err, tmap = cu.cuTensorMapEncodeTiled(
        getattr(cu.CUtensorMapDataType, args["data_type"]), 2, x.data.ptr,
        [cu.cuuint64_t(cols), cu.cuuint64_t(rows)], [cu.cuuint64_t(cols * x.itemsize)],
        [cu.cuuint32_t(v) for v in args["box"]], [cu.cuuint32_t(v) for v in args["element_strides"]],
        getattr(cu.CUtensorMapInterleave, args["interleave"]), getattr(cu.CUtensorMapSwizzle, args["swizzle"]),
        getattr(cu.CUtensorMapL2promotion, args["l2_promotion"]), getattr(cu.CUtensorMapFloatOOBfill, args["oob_fill"]))
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled failed ({err.name}) for a {rows}x{cols} matrix, box {args['box']}")
    return np.frombuffer(ctypes.string_at(tmap.getPtr(), opaque.itemsize), dtype=opaque)[0]


def resident_ctas(kernel, threads: int, smem_bytes: int, cluster: int) -> int:
    """How many CTAs of ``kernel`` the GPU holds at once, in whole clusters of ``cluster``
    (the driver's cuOccupancyMaxActiveClusters): a persistent kernel's grid."""
    from cuda.bindings import driver as cu
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = cluster, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = smem_bytes
    err, clusters = cu.cuOccupancyMaxActiveClusters(cu.CUfunction(kernel.kernel.ptr), config)
    if err != cu.CUresult.CUDA_SUCCESS or clusters < 1:
        raise RuntimeError(f"cuOccupancyMaxActiveClusters failed ({err.name}, {clusters} clusters) "
                           f"for {threads} threads, {smem_bytes} bytes of shared memory, clusters of {cluster}")
    return clusters * cluster


def exported(module, name: str, count: int = 1) -> list[int]:
    """An ``extern "C" __constant__ int`` (or array of ``count``) the kernel exports: its shared
    memory, its ring's depth, its MMA atom's shape."""
    import cupy
    return [int(v) for v in cupy.ndarray((count,), cupy.int32, memptr=module.get_global(name)).get()]


@dataclass(frozen=True)
class Built:
    """A CuTe kernel as nvcc built it with a variant's constants, and the geometry the kernel worked out
    from them and exports (its threads, shared memory, TMA boxes, a split tile's scratch): Python plans
    only the grid and how persistent clusters share K (geometry()).

    SM80 kernels (WARPS_M x WARPS_N warps) take (A, B, C, M, N, K) on an (M/BM, N/BN) grid; SM90
    kernels (WARPGROUPS_M consumer warpgroups, after PRODUCER_WARPGROUPS) a 1-D grid of tiles in the
    kernel's order, and SMEM_BYTES of dynamic shared memory for a ring RING_STAGES deep."""
    step: Step
    tile: dict                  # the variant's constants, with STAGES and the MMA atom as built
    kernel: object              # the cupy function
    threads: int
    smem_dynamic: int
    boxes: dict                 # operand -> (rows, cols, element) of its TMA box (a, b: loads; c: stores)
    tail_slot: list | None      # a CTA's scratch for a split tile: floats of partial sums, ready flags
    resident: int | None        # CTAs the GPU holds at once: a persistent kernel's grid
    sass: dict                  # its instructions as the record lists them

    @property
    def name(self) -> str:
        return self.step.function

    @property
    def hopper(self) -> bool:
        return "WARPGROUPS_M" in self.tile

    @property
    def cluster(self) -> int:
        return self.tile.get("CLUSTER_M", 1)

    @property
    def output(self) -> str:
        return catalogue.output_of(self.tile)

    @property
    def blocks(self) -> int | None:
        """FP8 block scales' block (SCALE_BLOCK): A's and B's scales follow C's pointer or tensor map."""
        return self.tile.get("SCALE_BLOCK")

    @property
    def streamed(self) -> bool:
        return bool(self.tile.get("STREAM_K"))

    @property
    def takes_alpha(self) -> bool:
        """The TMA-store epilogue writes C = alpha A B (FP8's per-tensor scales), unless block-scaled."""
        return "c" in self.boxes and not self.blocks

    @property
    def ragged(self) -> bool:
        """TMA in and out: zeros are read past a ragged edge, and nothing is stored there."""
        return "a" in self.boxes and "c" in self.boxes


def _sass(step: Step, cubin) -> dict:
    """The kernel's SASS as a record lists it, once it holds each of the step's instructions (HMMA,
    HGMMA, UTMALDG; else a slower path was compiled) and its tensor-core instructions are all of the
    step's type (HGMMA.64x256x16.F32.BF16 names the operands' type and the atom)."""
    from ..core.sass import MMA, disassemble, histogram, mma_loop
    name = step.function
    instructions = disassemble(cubin)[name]
    counts = histogram(instructions)
    missing = [op for op in step.sass if not counts[op]]
    if missing:
        raise RuntimeError(f"{name}: no {', '.join(missing)} in its SASS: a slower path was compiled")
    mma = sorted({i.opcode for i in instructions if i.mnemonic in MMA})
    sass_type = catalogue.SASS_TYPES[step.precision]
    if any(not op.endswith("." + sass_type) for op in mma):
        raise RuntimeError(f"{name}: its tensor-core instructions {mma} are not all {sass_type}")
    loop = mma_loop(instructions)
    return {**{op: counts[op] for op in step.sass}, "instructions": sum(counts.values()), "mma": mma,
            # its main loop: every instruction in it, and the tensor-core ones
            **({"main_loop": {"instructions": len(loop), "mma": sum(i.mnemonic in MMA for i in loop)}} if loop else {})}


def build(step: Step, variant: Variant, device: dict) -> Built:
    """A CuTe kernel of the catalogue loaded for ``device``, its SASS checked (_sass), its exports read."""
    from ..core.cuda import load_module
    from ..core.registry import ROOT
    module, cubin = load_module(ROOT / step.source, device, variant.tile)
    sass = _sass(step, cubin)
    kernel = module.get_function(step.function)
    tile = {**variant.tile, "atom_mnk": exported(module, "ATOM_MNK", 3)}
    [threads] = exported(module, "BLOCK_THREADS")
    smem_dynamic = 0
    if "WARPGROUPS_M" in tile:
        [smem_dynamic] = exported(module, "SMEM_BYTES")
        [tile["STAGES"]] = exported(module, "RING_STAGES")        # STAGES 0 asks for the deepest that fits
        kernel.max_dynamic_shared_size_bytes = smem_dynamic
    boxes = {}
    if "UTMALDG" in step.sass:       # B's box is 1/CLUSTER_M of its tile: each CTA of a cluster loads that slice for all
        load = exported(module, "LOAD_BOXES", 4)
        boxes = {"a": (*load[:2], step.precision), "b": (*load[2:], step.precision)}
    if tile.get("EPILOGUE_N"):       # C leaves through shared memory in chunks of EPILOGUE_N columns of a warpgroup's rows
        boxes["c"] = (*exported(module, "STORE_BOX", 2), catalogue.output_of(tile))
    split = tile.get("SPLIT_WAVE") or tile.get("STREAM_K")
    return Built(step=step, tile=tile, kernel=kernel, threads=threads, smem_dynamic=smem_dynamic, boxes=boxes,
                 tail_slot=exported(module, "TAIL_SLOT", 2) if split else None,
                 resident=resident_ctas(kernel, threads, smem_dynamic, tile.get("CLUSTER_M", 1))
                 if tile.get("PERSISTENT") else None, sass=sass)


def refuse(built: Built, a, c, alpha: float, scales) -> None:
    """Refused (or, for block scales of the wrong shape, ValueError) where ``built`` cannot run C = A B
    on these operands: C of another type, scales it does not take, or a shape it does not tile."""
    (m, k), n, name, tile, blocks = a.shape, c.shape[1], built.name, built.tile, built.blocks
    if c.dtype != OUTPUT_DTYPES[built.output]:
        raise Refused(f"{name} writes C in {built.output}: not into {c.dtype} (C's type is the kernel's, as cuBLAS's is)")
    if alpha != 1.0 and not built.takes_alpha:
        raise Refused(f"{name} takes no alpha (the per-tensor scales of {alpha:g})")
    if (scales is None) == bool(blocks):
        raise Refused(f"{name} takes {'block scales' if blocks else 'no block scales'}")
    if blocks:
        sfa, sfb = scales
        want = (-(-k // blocks), m), -(-n // blocks)
        if sfa.shape != want[0] or sfb.shape[0] != want[1] or sfb.shape[1] < want[0][0]:
            raise ValueError(f"{name}: block scales {sfa.shape} and {sfb.shape} do not fit {m}x{n}x{k} "
                             f"in blocks of {blocks} (A's {want[0]}, B's {want[1]} rows of at least {want[0][0]})")
    if built.ragged:
        misaligned = [f"{what} = {count} elements of {size} bytes" for what, count, size in
                      (("K", k, a.itemsize), ("N", n, c.itemsize)) if count * size % 16]
        if misaligned:
            raise Refused(f"{name} reads and writes through TMA, whose rows are multiples of 16 bytes: "
                          f"{' and '.join(misaligned)} are not")
    elif m % (tile["BM"] * built.cluster) or n % tile["BN"] or k % tile["BK"]:
        raise Refused(f"{name} takes whole {tile['BM'] * built.cluster}×{tile['BN']}×{tile['BK']} tiles only"
                      f"{' (a cluster of ' + str(built.cluster) + ' tiles over M)' if built.cluster > 1 else ''}; "
                      f"{m}×{n}×{k} is not")


def geometry(built: Built, m: int, n: int, k: int) -> tuple[tuple, dict | None]:
    """(grid, plan): SM80's (M/BM, N/BN); SM90's tiles in whole clusters, at most as many as fit at once
    for a persistent kernel, and a split-wave kernel's plan of its last wave or a stream-K kernel's runs."""
    tile, cluster = built.tile, built.cluster
    if not built.hopper:
        return (m // tile["BM"], n // tile["BN"]), None
    units, k_tiles = ctas(tile, m, n) // cluster, -(-k // tile["BK"])
    if built.streamed:
        plan = stream_k(units, built.resident // cluster, k_tiles)
        return (plan["clusters"] * cluster,), plan
    if built.tail_slot:             # the split wave's plan says how many clusters launch
        plan = split_wave(units, built.resident // cluster, k_tiles)
        return (plan["clusters"] * cluster,), plan
    clusters = min(built.resident // cluster, units) if built.resident else units
    return (clusters * cluster,), None


def scratch(built: Built, grid: tuple, plan: dict | None) -> tuple:
    """A split tile's arguments: a slot per CTA (one tile's partial sums, a ready flag per consumer
    thread), then stream-K's runs or the split wave's plan."""
    import cupy
    import numpy as np
    if not built.tail_slot:
        return ()
    floats, flags = built.tail_slot
    slots = (cupy.empty(grid[0] * floats, cupy.float32), cupy.zeros(grid[0] * flags, cupy.int32))
    if built.streamed:
        return (*slots, cupy.asarray(plan["runs"], cupy.int32))
    return (*slots, *(np.int32(plan[key]) for key in ("full_units", "left", "split")))


def resources(built: Built, grid: tuple, plan: dict | None) -> dict:
    """What a launch occupies on the GPU, as its record lists it."""
    attrs = built.kernel.attributes
    out = {"threads_per_block": built.threads, "grid": list(grid),
           "grid_axes": "tiles, in the kernel's order" if built.hopper else "x over M, y over N",
           "regs_per_thread": int(attrs["num_regs"]),
           "smem_static_bytes": int(attrs["shared_size_bytes"]), "smem_dynamic_bytes": built.smem_dynamic,
           "local_bytes": int(attrs["local_size_bytes"]), "tile": built.tile, "sass": built.sass}
    if "a" in built.boxes:
        out["tma"] = {operand: tensor_map_args(*box) for operand, box in built.boxes.items()}
    if built.resident:
        out["resident_ctas"] = built.resident
    if plan:
        out["stream_k" if built.streamed else "split_wave"] = plan
    return out


def _cute_prepare(step: Step, variant: Variant, device: dict):
    """prepare() for a CuTe kernel (build): C = alpha A B on whole tiles, or through TMA on any shape
    whose rows are whole 16 bytes (refuse). Its arguments: A and B (or their tensor maps), C (or its
    tensor map), M, N, K; then a split tile's scratch (scratch); alpha where it takes one; A's and B's
    block scales and the row length of B's (prepare's scales: cublaslt.block_scales) where it takes those."""
    import numpy as np
    built = build(step, variant, device)

    def prepare(a, b, c, alpha: float = 1.0, scales=None):
        refuse(built, a, c, alpha, scales)
        (m, k), n = a.shape, c.shape[1]
        grid, plan = geometry(built, m, n, k)
        maps = {name: tensor_map(x, *built.boxes[name]) for name, x in (("a", a), ("b", b), ("c", c)) if name in built.boxes}
        args = (maps.get("a", a), maps.get("b", b), maps.get("c", c), np.int32(m), np.int32(n), np.int32(k),
                *scratch(built, grid, plan))
        if built.takes_alpha:
            args += (np.float32(alpha),)
        if built.blocks:
            sfa, sfb = scales
            args += (sfa, sfb, np.int32(sfb.shape[1]))
        return Launch(lambda: built.kernel(grid, (built.threads,), args, shared_mem=built.smem_dynamic),
                      resources(built, grid, plan))
    return prepare


def prepare(step: Step, variant: Variant, device: dict):
    """prepare(a, b, c) -> Launch for a kernel of the catalogue, built for ``device``."""
    return _cute_prepare(step, variant, device) if step.cute else _numba_prepare(step)


def prepare_by_shape(step: Step, device: dict):
    """prepare(a, b, c) for a step's best kernel, built with each of its tiles, that launches the one
    the catalogue picks for the shape (catalogue.tile_for); its resources name that tile."""
    if len(step.tiles) == 1:
        return prepare(step, step.best, device)
    prepares = [prepare(step, replace(step.best, tile=tile), device) for tile in step.tiles]

    def pick(a, b, c, **scaling):
        tile = catalogue.tile_for(step, a.shape[0], c.shape[1], a.shape[1], device["sm_count"])
        return prepares[step.tiles.index(tile)](a, b, c, **scaling)
    return pick
