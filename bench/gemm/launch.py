"""Launching the hand-written GEMM kernels of the catalogue: CuTe kernels compiled with their
step's constants, their TMA descriptors, persistent grids and split-wave plans; and the numba
kernel. ``prepare(step, variant, device)`` gives prepare(a, b, c) -> harness.Launch."""
from __future__ import annotations

from dataclasses import replace

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


def _cute_prepare(step: Step, variant: Variant, device: dict):
    """prepare() for a CuTe kernel with a CTA tile of tile["BM"] x tile["BN"] x tile["BK"],
    compiled with the variant's constants; refuses shapes that are not whole tiles. Its SASS must
    hold each of the step's instructions (HMMA, HGMMA, UTMALDG), or it is on a slower path.

    SM80 kernels (WARPS_M x WARPS_N warps) take (A, B, C, M, N, K) on an (M/BM, N/BN) grid;
    SM90 kernels (WARPGROUPS_M consumer warpgroups, after PRODUCER_WARPGROUPS) take a 1-D grid,
    the order of its tiles being the kernel's (one CTA a tile, or as many as fit at once when
    PERSISTENT), and dynamic shared memory of the size the kernel exports as SMEM_BYTES, for a
    ring of the depth it exports as RING_STAGES; kernels that must hold UTMALDG take tensor maps
    of A and B in place of the pointers (B's box is 1/CLUSTER_M of its tile: each CTA of a cluster
    loads that slice for all of them), and those with EPILOGUE_N one of C, stored through shared
    memory a chunk at a time; SPLIT_WAVE kernels also take scratch for the partial sums of split
    tiles, their ready flags, and the plan of the last wave (split_wave); STREAM_K kernels the same
    scratch and where each cluster's run of K-tiles starts (stream_k); EPILOGUE_N kernels last
    take alpha, C = alpha A B (prepare's alpha: FP8's per-tensor scales), or, with SCALE_BLOCK, A's
    and B's block scales and the row length of B's (prepare's scales, cublaslt.block_scales)."""
    import cupy
    import numpy as np
    from ..core.cuda import load_module
    from ..core.registry import ROOT
    from ..core.sass import MMA, disassemble, histogram, mma_loop

    tile, name = variant.tile, step.function
    module, cubin = load_module(ROOT / step.source, device, tile)
    instructions = disassemble(cubin)[name]
    counts = histogram(instructions)
    missing = [op for op in step.sass if not counts[op]]
    if missing:
        raise RuntimeError(f"{name}: no {', '.join(missing)} in its SASS: a slower path was compiled")
    # the tensor-core instructions name the operands' type and the atom: HGMMA.64x256x16.F32.BF16
    mma = sorted({i.opcode for i in instructions if i.mnemonic in MMA})
    loop = mma_loop(instructions)
    sass_type = catalogue.SASS_TYPES[step.precision]
    if any(not op.endswith("." + sass_type) for op in mma):
        raise RuntimeError(f"{name}: its tensor-core instructions {mma} are not all {sass_type}")
    kernel = module.get_function(name)
    hopper = "WARPGROUPS_M" in tile
    # the kernel's geometry as it worked it out from its constants: its threads, its TMA boxes, a
    # split tile's scratch; Python plans only the grid and the split wave
    [threads] = exported(module, "BLOCK_THREADS")
    cluster = tile.get("CLUSTER_M", 1)
    smem_dynamic, compiled = 0, dict(tile)
    if hopper:
        [smem_dynamic] = exported(module, "SMEM_BYTES")
        [compiled["STAGES"]] = exported(module, "RING_STAGES")    # STAGES 0 asks for the deepest that fits
        kernel.max_dynamic_shared_size_bytes = smem_dynamic
    compiled["atom_mnk"] = exported(module, "ATOM_MNK", 3)
    uses_tma = "UTMALDG" in step.sass
    # (rows, cols, element): the operands in the step's precision, the result in its output type
    output = catalogue.output_of(tile)
    boxes = {}
    if uses_tma:                     # B's box is the slice each CTA of a cluster loads for all of them
        load = exported(module, "LOAD_BOXES", 4)
        boxes = {"a": (*load[:2], step.precision), "b": (*load[2:], step.precision)}
    if tile.get("EPILOGUE_N"):       # C leaves in chunks of EPILOGUE_N columns of a warpgroup's rows
        boxes["c"] = (*exported(module, "STORE_BOX", 2), output)
    streamed = bool(tile.get("STREAM_K"))
    tail_slot = exported(module, "TAIL_SLOT", 2) if tile.get("SPLIT_WAVE") or streamed else None
    resident = resident_ctas(kernel, threads, smem_dynamic, cluster) if tile.get("PERSISTENT") else None
    # TMA in and out: zeros are read past a ragged edge, and nothing is stored there
    ragged = uses_tma and "c" in boxes
    blocks = tile.get("SCALE_BLOCK")
    takes_alpha = "c" in boxes and not blocks     # the TMA-store epilogue writes C = alpha A B

    def prepare(a, b, c, alpha: float = 1.0, scales=None):
        (m, k), n = a.shape, c.shape[1]
        if c.dtype != OUTPUT_DTYPES[output]:
            raise Refused(f"{name} writes C in {output}: not into {c.dtype} (C's type is the kernel's, as cuBLAS's is)")
        if alpha != 1.0 and not takes_alpha:
            raise Refused(f"{name} takes no alpha (the per-tensor scales of {alpha:g})")
        if (scales is None) == bool(blocks):
            raise Refused(f"{name} takes {'block scales' if blocks else 'no block scales'}")
        if blocks:
            sfa, sfb = scales
            want = (-(-k // blocks), m), -(-n // blocks)
            if sfa.shape != want[0] or sfb.shape[0] != want[1] or sfb.shape[1] < want[0][0]:
                raise ValueError(f"{name}: block scales {sfa.shape} and {sfb.shape} do not fit {m}x{n}x{k} "
                                 f"in blocks of {blocks} (A's {want[0]}, B's {want[1]} rows of at least {want[0][0]})")
        if ragged:
            misaligned = [f"{what} = {count} elements of {size} bytes" for what, count, size in
                          (("K", k, a.itemsize), ("N", n, c.itemsize)) if count * size % 16]
            if misaligned:
                raise Refused(f"{name} reads and writes through TMA, whose rows are multiples of 16 bytes: "
                              f"{' and '.join(misaligned)} are not")
        elif m % (tile["BM"] * cluster) or n % tile["BN"] or k % tile["BK"]:
            raise Refused(f"{name} takes whole {tile['BM'] * cluster}×{tile['BN']}×{tile['BK']} tiles only"
                          f"{' (a cluster of ' + str(cluster) + ' tiles over M)' if cluster > 1 else ''}; "
                          f"{m}×{n}×{k} is not")
        units = ctas(tile, m, n) // cluster
        k_tiles = -(-k // tile["BK"])
        plan = stream_k(units, resident // cluster, k_tiles) if streamed else None
        grid = ((plan["clusters"] if plan else min(resident // cluster, units) if resident else units) * cluster,) if hopper \
            else (m // tile["BM"], n // tile["BN"])
        operands = (tensor_map(a, *boxes["a"]), tensor_map(b, *boxes["b"])) if uses_tma else (a, b)
        args = (*operands, tensor_map(c, *boxes["c"]) if "c" in boxes else c, np.int32(m), np.int32(n), np.int32(k))
        if tail_slot:                    # a slot per CTA: one tile's partial sums, a ready flag per consumer thread
            floats, flags = tail_slot
            args += (cupy.empty(grid[0] * floats, cupy.float32), cupy.zeros(grid[0] * flags, cupy.int32))
            if streamed:
                args += (cupy.asarray(plan["runs"], cupy.int32),)
            else:
                plan = split_wave(units, grid[0] // cluster, k_tiles)
                args += tuple(np.int32(plan[key]) for key in ("full_units", "left", "split"))
        if takes_alpha:
            args += (np.float32(alpha),)
        if blocks:
            args += (sfa, sfb, np.int32(sfb.shape[1]))
        run = lambda: kernel(grid, (threads,), args, shared_mem=smem_dynamic)
        attrs = kernel.attributes
        resources = {"threads_per_block": threads, "grid": list(grid),
                     "grid_axes": "tiles, in the kernel's order" if hopper else "x over M, y over N",
                     "regs_per_thread": int(attrs["num_regs"]),
                     "smem_static_bytes": int(attrs["shared_size_bytes"]), "smem_dynamic_bytes": smem_dynamic,
                     "local_bytes": int(attrs["local_size_bytes"]),
                     "tile": compiled,
                     "sass": {**{op: counts[op] for op in step.sass}, "instructions": sum(counts.values()),
                              "mma": mma,
                              # its main loop: every instruction in it, and the tensor-core ones
                              **({"main_loop": {"instructions": len(loop), "mma": sum(i.mnemonic in MMA for i in loop)}}
                                 if loop else {})}}
        if uses_tma:
            resources["tma"] = {operand: tensor_map_args(*box) for operand, box in boxes.items()}
        if resident:
            resources["resident_ctas"] = resident
        if plan:
            resources["stream_k" if streamed else "split_wave"] = plan
        return Launch(run, resources)
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
        tile = catalogue.tile_for(step, a.shape[0], c.shape[1], device["sm_count"])
        return prepares[step.tiles.index(tile)](a, b, c, **scaling)
    return pick
