"""The BF16 peer: pranjalssh/fast.cu's fastest kernel (its kernel 12), the best public hand-written
Hopper BF16 GEMM, built at run time from a checkout named by $FASTCU_DIR and measured side by side:
in turns with cuBLAS BF16 (its output in BF16, as fast.cu's, and in FP32) and with this project's
BF16 headline kernel (FP32 C) and its BF16-C twin, on the same operands, every output checked against
the float64 product.

fast.cu takes A (M x K) and B (N x K), both K-major, as this project's kernels do, and writes C in
BF16, column-major; its code stays in its checkout (bench/peers/fastcu.cu is the entry point)."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ..gemm import catalogue, cublas, benchmarks, harness, launch
from ..gemm.harness import Shape
from ..core.peers import checkout_commit
from ..core.registry import ROOT, register
from ..core.stats import spread

PEER_ENV = "FASTCU_DIR"
ENTRY = ROOT / "bench" / "peers" / "fastcu.cu"
HEADER = "examples/matmul/matmul_12.cuh"
SHAPES = (harness.SHAPE, Shape(8192, 8192, 8192))       # the reference shape, and fast.cu's own
STEP, OURS = catalogue.KERNELS[catalogue.HEADLINE_BF16]
C_STEP, OURS_C = catalogue.KERNELS[catalogue.BF16_C]     # the same with C in BF16, as fast.cu writes it
LAYOUT = "b_kmajor"
# What each of the five writes C as
OUTPUTS = {"fastcu": "bf16, column-major", "cublas_bf16_out": "bf16", "cublas": "fp32", "ours": "fp32",
           "ours_bf16_out": "bf16"}


def build(checkout: Path) -> Path:
    """The peer's kernel behind bench/peers/fastcu.cu, compiled with its own flags (its Makefile's),
    for sm_90a, into .cache/peers/: the shared library's path. The driver's symbols it calls
    (cuTensorMapEncodeTiled) are left to the driver library loaded before it (peer)."""
    if not (checkout / HEADER).exists():
        raise RuntimeError(f"{checkout} holds no {HEADER}: is {PEER_ENV} a checkout of pranjalssh/fast.cu?")
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        raise RuntimeError("nvcc not found: fast.cu is built with the CUDA toolkit's nvcc")
    key = hashlib.sha256(f"{checkout.resolve()}|{checkout_commit(checkout)}|{nvcc}|{ENTRY.read_bytes()!r}"
                         .encode()).hexdigest()[:12]
    out = ROOT / ".cache" / "peers" / f"fastcu-{key}" / "libfastcu.so"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [nvcc, "-std=c++17", "-O3", "-DNDEBUG", "-w", "--expt-relaxed-constexpr", "--expt-extended-lambda",
           "--use_fast_math", "-Xcompiler=-fPIC", "-Xcompiler=-fno-strict-aliasing", "-shared",
           "-gencode=arch=compute_90a,code=sm_90a", "-I", str(checkout), "-o", str(out), str(ENTRY)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"building fast.cu's kernel 12 failed: {proc.stderr.strip()[-1500:]}")
    return out


def peer(library: Path):
    """fastcu(a, b, c): fast.cu's kernel 12 on CuPy arrays of BF16 bit patterns."""
    import ctypes
    ctypes.CDLL("libcuda.so.1", mode=ctypes.RTLD_GLOBAL)      # the driver API, for the library's undefined symbols
    lib = ctypes.CDLL(str(library))
    lib.fastcu_gemm.restype = ctypes.c_int
    lib.fastcu_gemm.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 3

    def run(a, b, c):
        (m, k), n = a.shape, b.shape[0]
        err = lib.fastcu_gemm(m, n, k, a.data.ptr, b.data.ptr, c.data.ptr)
        if err:
            raise RuntimeError(f"fast.cu's kernel 12 failed at {m}x{n}x{k}: cudaError {err}")
    return run


def measure(shape: Shape, theirs, ours_prepare, ours_c_prepare) -> dict:
    """The five on one shape's operands, checked, the peer settled, then timed in turns."""
    import cupy
    ours, ours_check, ops, _ = harness.checked_launch(shape, LAYOUT, "bf16", ours_prepare)
    c_peer = ops.poisoned_c("bf16", rows=shape.n, cols=shape.m)          # column-major C: (N, M) row-major
    c_ours = ops.poisoned_c(catalogue.output_of(OURS_C.tile))
    c_bf16 = ops.poisoned_c("bf16")
    c_fp32 = ops.poisoned_c()
    runs = {"fastcu": lambda: theirs(ops.a, ops.b, c_peer),
            "cublas_bf16_out": lambda: cublas.gemm(ops.a, ops.b, c_bf16, LAYOUT, "bf16"),
            "cublas": lambda: cublas.gemm(ops.a, ops.b, c_fp32, LAYOUT, "bf16"),
            "ours": ours.run, "ours_bf16_out": ours_c_prepare(ops.a, ops.b, c_ours).run}
    for name in ("fastcu", "cublas_bf16_out", "cublas", "ours_bf16_out"):
        runs[name]()
    cupy.cuda.get_current_stream().synchronize()
    checks = {"fastcu": ops.check(c_peer.T), "cublas_bf16_out": ops.check(c_bf16), "cublas": ops.check(c_fp32),
              "ours": ours_check, "ours_bf16_out": ops.check(c_ours)}
    return harness.side_by_side(shape, runs, checks)[0]


@register("peers.fastcu", sources=(str(ENTRY.relative_to(ROOT)), *dict.fromkeys((*benchmarks.kernel_sources(STEP),
                                                                                   *benchmarks.kernel_sources(C_STEP)))),
          kernels=catalogue.definitions(("headline_bf16", "bf16_c")),
          builds=benchmarks.builds(STEP, OURS) + benchmarks.builds(C_STEP, OURS_C), prebuild=lambda device: build(Path(os.environ[PEER_ENV])),
          title="fast.cu kernel 12 (BF16), the peer", timeout_s=600,
          min_cc=catalogue.HOPPER, peer=PEER_ENV)
def fastcu(ctx) -> dict:
    checkout = Path(os.environ[PEER_ENV])
    ctx.progress(f"building fast.cu's kernel 12 from {checkout} ({checkout_commit(checkout)[:12]})")
    theirs = peer(build(checkout))
    harness.keep_busy()
    ours_prepare = launch.prepare(STEP, OURS, ctx.device)
    ours_c_prepare = launch.prepare(C_STEP, OURS_C, ctx.device)
    shapes = []
    for shape in SHAPES:
        result = measure(shape, theirs, ours_prepare, ours_c_prepare)
        shapes.append(result)
        line = ", ".join(f"{name} {result[name]['tflops']:.1f}" for name in OUTPUTS)
        ctx.progress(f"{shape.m}x{shape.n}x{shape.k}: {line} TFLOPS (spread {100 * spread(result['fastcu']['time_ms']):.1f}%)")
    wrong = [f"{name} at {s['shape']}: {s[name]['check'].get('detail')}" for s in shapes
             for name in OUTPUTS if not s[name]["check"]["passed"]]
    return {"params": {"checkout": str(checkout), "commit": checkout_commit(checkout), "kernel": "matmulKernel12",
                       "ours": OURS.id, "ours_bf16_out": OURS_C.id, "layout": LAYOUT, "precision": "bf16",
                       "reps": harness.REPS, "turn_ms": harness.TURN_MS, "round_s": harness.ROUND_S,
                       "timing": "the five in turns", "outputs": OUTPUTS},
            "check": {"passed": not wrong, **({"detail": "; ".join(wrong)} if wrong else {})},
            "shapes": shapes}
