"""The FP8 peer: deepseek-ai/DeepGEMM, the FP8 GEMM DeepSeek-V3 trains and serves with: e4m3
operands with block scales (A per 1 x 128 of a row, B per 128 x 128), its sums promoted into FP32,
BF16 out. Built at run time from a checkout named by $DEEPGEMM_DIR (its host extension against
torch, its kernels by its own JIT at their first call) and measured on its own shapes, in turns
with cuBLASLt and this project's block-scaled kernel, every output checked against float64.

The operands are one set of normal values quantized twice: with block scales for DeepGEMM,
cuBLASLt's block-scaled mode and the project's kernel, with one scale per tensor for cuBLASLt alone
(its scaling). Its code stays in its checkout."""
from __future__ import annotations

import copy
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from ..gemm import catalogue, cublaslt, benchmarks, harness, launch
from ..gemm.sweep import cycled, operand_sets, picked_tile
from ..core import cuda
from ..core.peers import checkout_commit
from ..gemm.harness import BlockScaledOperands, Refused, Shape
from ..core.registry import ROOT, register

PEER_ENV = "DEEPGEMM_DIR"
# DeepGEMM's extension links no shared libstdc++ (ldd lists none), so its std::regex and ostreams use
# a locale of their own and fault once torch has loaded the shared one; preloaded, there is one.
LOADER_ENV = (("LD_PRELOAD", "libstdc++.so.6"),)
# The reference shape, and DeepGEMM's test shapes at M = 4096 (DeepSeek-V3's projections)
SHAPES = (harness.SHAPE, Shape(4096, 7168, 16384), Shape(4096, 2112, 7168), Shape(4096, 24576, 1536),
          Shape(4096, 7168, 2048))
STEP, OURS = catalogue.KERNELS[catalogue.BLOCK_SCALED]
OUTPUTS = {"deepgemm": "bf16", "cublaslt_blocks": "bf16", "cublaslt_bf16_out": "bf16", "cublaslt": "fp32",
           "ours": catalogue.output_of(OURS.tile)}
SCALING = {"deepgemm": "block", "cublaslt_blocks": "block", "cublaslt_bf16_out": "tensor", "cublaslt": "tensor",
           "ours": "block"}
# What DeepGEMM's heuristic chose for a shape, from the line DG_PRINT_CONFIGS has it print at its
# first call (csrc/jit_kernels/heuristics/common.hpp): its tile and cluster, its ring, its SMs, its waves
CONFIG_FIELDS = ("block_m", "block_n", "block_k", "cluster_m", "cluster_n", "swap_ab", "num_stages", "num_sms",
                 "num_math_threads", "num_waves", "last_wave_util")


def config_of(printed: str) -> dict | None:
    """The fields of CONFIG_FIELDS from DeepGEMM's printed configuration (None where it printed none)."""
    found = dict(re.findall(r"\b(\w+)=(-?\d+)\b", printed.rpartition("GemmConfig(")[2]))
    return {name: int(found[name]) for name in CONFIG_FIELDS if name in found} or None


def first_call_printed(run) -> str:
    """``run()``, with what it writes to the process's standard output (C++'s, not Python's) caught."""
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 1)
        try:
            run()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        caught.seek(0)
        return caught.read().decode(errors="replace")


def cuda_home() -> str:
    """The toolkit of the nvcc on PATH, for DeepGEMM's build and its JIT."""
    return str(Path(shutil.which("nvcc")).resolve().parents[1])


def build(checkout: Path) -> Path:
    """DeepGEMM's host extension built in a copy of the checkout under .cache/peers/ (the checkout
    is left as it was), with the CUTLASS headers of the nvidia-cutlass package: the folder that
    holds its ``deep_gemm`` package."""
    if not (checkout / "deep_gemm" / "__init__.py").exists():
        raise RuntimeError(f"{checkout} holds no deep_gemm/: is {PEER_ENV} a checkout of deepseek-ai/DeepGEMM?")
    cutlass = cuda.cutlass_include()
    nvcc = shutil.which("nvcc")
    if cutlass is None or nvcc is None:
        raise RuntimeError("DeepGEMM needs nvcc and the CUTLASS headers (pip install nvidia-cutlass)")
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        raise RuntimeError("DeepGEMM is a torch extension, and torch is not installed") from None
    key = hashlib.sha256(f"{checkout.resolve()}|{checkout_commit(checkout)}|{torch_version}|{nvcc}".encode()).hexdigest()[:12]
    out = ROOT / ".cache" / "peers" / f"deepgemm-{key}"
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # the run's build up front and its benchmark's: one builds, one waits
        if not any(out.glob("deep_gemm/_C*.so")):
            _build_into(out, checkout, cutlass)
    return out


def _build_into(out: Path, checkout: Path, cutlass: Path) -> None:
    work = out.with_name(out.name + ".building")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(checkout, work, symlinks=True, ignore=shutil.ignore_patterns(".git", "build"))
    for dst, src in ((work / "third-party" / "cutlass" / "include", cutlass),       # for its host build
                     (work / "deep_gemm" / "include" / "cute", cutlass / "cute"),     # for its JIT
                     (work / "deep_gemm" / "include" / "cutlass", cutlass / "cutlass")):
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        shutil.rmtree(dst, ignore_errors=True)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src)
    # its setup.py imports torch, which needs the loader the benchmark's worker runs with
    env = {**os.environ, **dict(LOADER_ENV), "CUDA_HOME": cuda_home(), "DG_USE_LOCAL_VERSION": "0"}
    proc = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=work, env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building DeepGEMM's extension failed: {(proc.stdout + proc.stderr).strip()[-1500:]}")
    shutil.rmtree(out, ignore_errors=True)
    work.rename(out)


def peer(built: Path):
    """prepare(ops, d) -> run(): DeepGEMM's fp8_gemm_nt on block-scaled operands into BF16 D (bit
    patterns), on the default stream, as the timer's events. A's scales are put into the layout its kernels read
    once, beforehand, as a model keeps its weights' and its quantizer writes its activations'."""
    import cupy
    sys.path.insert(0, str(built))
    os.environ.setdefault("CUDA_HOME", cuda_home())
    os.environ.setdefault("DG_JIT_CACHE_DIR", str(ROOT / ".cache" / "peers" / "deepgemm-jit"))
    os.environ["DG_PRINT_CONFIGS"] = "1"           # its choice of tile for each shape, at its first call (config_of)
    import torch
    import deep_gemm
    # the timer's events go on CuPy's stream: DeepGEMM must launch on that one. Both default to the
    # legacy default stream; torch's ExternalStream of it launched elsewhere (untimed, 28,000 "TFLOPS").
    if cupy.cuda.get_current_stream().ptr != 0 or torch.cuda.current_stream().cuda_stream != 0:
        raise RuntimeError("CuPy's and torch's current streams must both be the default stream to time DeepGEMM")

    def prepare(ops: BlockScaledOperands, d):
        fp8 = lambda x: torch.from_dlpack(x).view(torch.float8_e4m3fn)
        sfa = deep_gemm.get_mn_major_tma_aligned_tensor(torch.from_dlpack(ops.sfa))
        a, b, sfb, out = fp8(ops.a), fp8(ops.b), torch.from_dlpack(ops.sfb), torch.from_dlpack(d.view(cupy.float16)).view(torch.bfloat16)
        return lambda: deep_gemm.fp8_gemm_nt((a, sfa), (b, sfb), out)
    return prepare, deep_gemm.__version__


# DeepGEMM's kernel as Nsight Compute names it (deep_gemm::sm90_fp8_gemm_1d2d_impl<...>): python -m bench --profile
PEER_KERNEL = "fp8_gemm"


def profile_launcher(ours_prepare):
    """launch(shape): DeepGEMM's kernel once on the shape's block-scaled operands, then ours (raising
    Refused where ours does not take it); the process bench/gemm/profile.py runs under ncu."""
    theirs, _ = peer(build(Path(os.environ[PEER_ENV])))

    def launch_shape(shape: Shape) -> None:
        blocks = harness.operands(shape, "b_kmajor", "fp8", "blocks")
        theirs(blocks, blocks.poisoned_c("bf16"))()
        harness.checked_launch(shape, "b_kmajor", "fp8", ours_prepare, STEP.scaling, OUTPUTS["ours"])
    return launch_shape


def _with_operands(blocks: BlockScaledOperands, a, b) -> BlockScaledOperands:
    """``blocks`` with A and B swapped for copies of them (the same scales)."""
    other = copy.copy(blocks)
    other.a, other.b = a, b
    return other


def measure(shape: Shape, theirs, ours_prepare) -> dict:
    """The peer, cuBLASLt with the same block scales, cuBLASLt with one scale a tensor (BF16 out as
    the peer's, and FP32) and the block-scaled kernel on one shape, each checked, settled,
    then timed in turns; ours only where it takes the shape."""
    import cupy
    ops = harness.operands(shape, "b_kmajor", "fp8")
    blocks = harness.operands(shape, "b_kmajor", "fp8", "blocks")
    c_peer, c_blocks = blocks.poisoned_c("bf16"), blocks.poisoned_c("bf16")
    c_bf16, c_fp32 = ops.poisoned_c("bf16"), ops.poisoned_c()
    alpha, scales = ops.scaling["alpha"], blocks.scaling["scales"]
    # where A, B and C are small beside L2 (4096 x 2112 x 7168: 62 MB), each run takes the next of
    # copies of them, as the atlas's cells do and as DeepGEMM's own benchmark flushes L2 before a run
    l2 = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["l2CacheSize"]
    block_sets, tensor_sets = (operand_sets(x.a, x.b, c_peer.nbytes, l2) for x in (blocks, ops))
    runs = {"deepgemm": [theirs(_with_operands(blocks, a, b), c_peer) for a, b in block_sets],
            "cublaslt_blocks": [lambda a=a, b=b: cublaslt.gemm_fp8_blocks(a, b, c_blocks, scales) for a, b in block_sets],
            "cublaslt_bf16_out": [lambda a=a, b=b: cublaslt.gemm_fp8(a, b, c_bf16, alpha) for a, b in tensor_sets],
            "cublaslt": [lambda a=a, b=b: cublaslt.gemm_fp8(a, b, c_fp32, alpha) for a, b in tensor_sets]}
    config = config_of(first_call_printed(runs["deepgemm"][0]))
    for name, by_set in runs.items():
        if name != "deepgemm":
            by_set[0]()
    cupy.cuda.get_current_stream().synchronize()
    checks = {"deepgemm": blocks.check(c_peer), "cublaslt_blocks": blocks.check(c_blocks), "cublaslt_bf16_out": ops.check(c_bf16), "cublaslt": ops.check(c_fp32)}
    refused, ours_tile = None, None
    try:
        ours, checks["ours"], _, c_ours = harness.checked_launch(shape, "b_kmajor", "fp8", ours_prepare, STEP.scaling,
                                                                 OUTPUTS["ours"])
        runs["ours"] = [ours.run] + [ours_prepare(a, b, c_ours, **blocks.scaling).run for a, b in block_sets[1:]]
        ours_tile = picked_tile(ours)
    except Refused as e:
        refused = str(e)
    record, times = harness.side_by_side(shape, cycled(runs), checks)
    if len(block_sets) > 1:
        record["operand_sets"] = len(block_sets)
    # speed ratios, each pair from the same turns: DeepGEMM over cuBLASLt on the same operands, ours over DeepGEMM
    pairs = {**harness.ratio("deepgemm_over_cublaslt", times["cublaslt_blocks"], times["deepgemm"]),
             **(harness.ratio("ours_over_deepgemm", times["deepgemm"], times["ours"]) if "ours" in times else {})}
    return {**record, **pairs, **({"ours_refused": refused} if refused else {}),
            **({"deepgemm_config": config} if config else {}), **({"ours_tile": ours_tile} if ours_tile else {})}


@register("peers.deepgemm", sources=benchmarks.kernel_sources(STEP),
          kernels=catalogue.definitions(("block_scaled",)),
          # its extension built up front, beside the run (a minute and more on a fresh machine); its
          # kernels by its JIT, in its worker
          builds=benchmarks.builds(STEP, OURS), prebuild=lambda device: build(Path(os.environ[PEER_ENV])),
          title="DeepGEMM (FP8, block scales), the peer", timeout_s=900,
          min_cc=catalogue.HOPPER, peer=PEER_ENV, env=LOADER_ENV)
def deepgemm(ctx) -> dict:
    checkout = Path(os.environ[PEER_ENV])
    ctx.progress(f"building DeepGEMM from {checkout} ({checkout_commit(checkout)[:12]})")
    theirs, version = peer(build(checkout))
    harness.keep_busy()
    ours_prepare = launch.prepare_by_shape(STEP, ctx.device)
    shapes = []
    for shape in SHAPES:
        result = measure(shape, theirs, ours_prepare)
        shapes.append(result)
        line = ", ".join(f"{name} {result[name]['tflops']:.1f}" for name in OUTPUTS if name in result)
        ctx.progress(f"{shape.m}x{shape.n}x{shape.k}: {line} TFLOPS")
    wrong = [f"{name} at {s['shape']}: {s[name]['check'].get('detail')}" for s in shapes
             for name in OUTPUTS if name in s and not s[name]["check"]["passed"]]
    return {"params": {"checkout": str(checkout), "commit": checkout_commit(checkout), "version": version,
                       "kernel": "fp8_gemm_nt", "ours": OURS.id, "layout": "b_kmajor", "precision": "fp8",
                       "block": {name: list(size) for name, size in harness.BLOCKS.items()},
                       "reps": harness.REPS, "turn_ms": harness.TURN_MS, "round_s": harness.ROUND_S,
                       "timing": "in turns", "outputs": OUTPUTS, "scaling": SCALING},
            "check": {"passed": not wrong, **({"detail": "; ".join(wrong)} if wrong else {})},
            "shapes": shapes}
