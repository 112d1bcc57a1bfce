"""The one GEMM harness: operands, the float64 check, and timing against cuBLAS.

Shape and layouts are the reference deck's: A(M x K) row-major times B(K x N) gives C(M x N)
row-major, with B stored either row-major ("b_row", N contiguous) or K-major ("b_kmajor", i.e.
B transposed in memory, as TF32 wgmma wants both operands). C is poisoned with NaN, then every
element is checked against a float64 GEMM of the same operands; cuBLAS is checked against the
same reference on the same operands, so that a kernel's error stands beside cuBLAS's.

A run of many GEMMs shares one process (bench/core/worker.py): operands and their float64 product
are kept for the next kernel of the same shape, and the GPU stays at the steady state the GEMM
before left it (keep_busy), so that each GEMM needs only a short settling."""
from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable

from . import catalogue, cublas
from .catalogue import SCALE_BLOCK, Refused
from ..core.timing import SM_CLOCKS, TIMED_SPANS, clock_probe, quick, time_gpu, time_gpu_alternating
from ..core.stats import spread, summarize


@dataclass(frozen=True)
class Shape:
    m: int
    n: int
    k: int

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def dims(self) -> list[int]:
        return [self.m, self.n, self.k]


SHAPE = Shape(m=4096, n=8192, k=16384)
ODD_SHAPE = Shape(m=1031, n=1553, k=1291)    # multiples of no tile
SEED = 2026
# A kernel and cuBLAS take turns, so that both meet the same clock: their ratio is per clock. Under
# the power cap the clock swings about once a second (settle.headline), and no turn of a few hundred
# milliseconds averages that out: timed in turns of 200 ms, or of 25 ms each a sample, GEMMs spread
# by 3-5% (the H100, 2026-11-25). So a turn is as many GEMMs as fill TURN_MS, far quicker than the
# swing, and a sample is ROUND_S of turns (the kernel's, cuBLAS's, the kernel's, ...). Their ratio,
# sample by sample, is what the turns make fair; REPS samples give its median an interval (ten:
# the 2nd and 9th hold the median 98% of the time), in the four seconds four samples of a second took.
# A quick run takes five of 50 ms (their least and largest hold the median 94% of the time): 42 GEMM
# records' timings in 10 s of its two minutes.
TURN_MS = 10.0 if quick() else 25.0
ROUND_S = 0.05 if quick() else 0.4
REPS = 5 if quick() else 10
# Before timing, the GEMMs run rounds as they will be timed until the first of them is steady: its
# last two rounds within SETTLED_DRIFT of each other. From a rest, a tensor-core GEMM at the power
# cap drifts for ten seconds or more (settle.headline); the run keeps the chip busy from one GEMM to
# the next (keep_busy), so this mostly takes two rounds. Timed anyway, marked unsettled, after
# SETTLE_MAX_S: cuBLAS in turns meets the same clock regardless.
SETTLED_DRIFT = 0.01
SETTLE_MAX_S = 0.5 if quick() else 6.0
SETTLE_RULE = {"round_s": ROUND_S, "drift": SETTLED_DRIFT, "max_s": SETTLE_MAX_S}

# Relative Frobenius error allowed, by arithmetic: FP32 accumulates in FP32; TF32 rounds each
# operand to 10 mantissa bits (unit roundoff 2^-11); BF16 operands are exact in the reference, so
# only the FP32 accumulation errs. FP8 operands are exact too (the reference takes their e4m3
# values times their scales), but Hopper's FP8 tensor cores add into an accumulator of about 14
# bits, truncating (DeepSeek-V3's report, section 3.3.2: up to 2% relative error at K = 4096), unless
# the kernel moves its sums into FP32 every few K-tiles: 3.1e-3 at K = 16384 on an H100 without,
# 1.3e-4 with (cuBLASLt's default). The check is for a wrong result; each record also compares
# its error with cuBLASLt's.
TOLERANCE = {"fp32": 1e-5, "tf32": 2e-3, "bf16": 1e-4, "fp8": 1e-2}
# ... and what rounding C to its output type adds: BF16 keeps 8 bits (unit roundoff 2^-9).
OUTPUT_ROUNDING = {"fp32": 0.0, "bf16": 2.0**-8}
BF16_NAN = 0x7FC0


@dataclass(frozen=True)
class Before:
    """The kernel a kernel's gain is measured against, in turns with it: its benchmark id, its
    precision and layout (its own operands), and prepare(a, b, c)."""
    id: str
    precision: str
    layout: str
    prepare: Callable
    scaling: str = "tensor"
    output: str = "fp32"


@dataclass
class Launch:
    """A GEMM ready to run on given operands, and what it occupies on the GPU."""
    run: Callable[[], None]
    resources: dict | None = None      # threads_per_block, regs_per_thread, smem_*_bytes, local_bytes, grid


def _to_bf16_bits(x):
    """float32 -> bfloat16 bit patterns (round to nearest even); CuPy has no bf16 dtype."""
    import cupy
    u = x.view(cupy.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(cupy.uint16)


def _bf16_to_f64(bits):
    import cupy
    return (bits.astype(cupy.uint32) << 16).view(cupy.float32).astype(cupy.float64)


E4M3_MAX = 448.0        # the largest finite e4m3 value: 1.75 x 2^8


def e4m3_values():
    """The value of each of the 256 e4m3 bit patterns (NumPy float64): sign, 4 exponent bits biased
    by 7, 3 mantissa bits; exponent 0 is subnormal; S.1111.111 is NaN, and there is no infinity."""
    import numpy as np
    code = np.arange(256)
    exponent, mantissa = (code >> 3) & 0xF, code & 7
    magnitude = np.where(exponent == 0, mantissa / 8 * 2.0**-6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    values = np.where(code & 0x80, -magnitude, magnitude)
    values[[0x7F, 0xFF]] = np.nan
    return values


def to_e4m3_bits(x, xp=None):
    """float32 within +-E4M3_MAX -> the nearest e4m3 bit patterns (uint8; CuPy has no FP8 dtype)."""
    import numpy as np
    xp = xp or __import__("cupy")
    positive = xp.asarray(e4m3_values()[:0x7F])                     # 0 up to 448, increasing
    magnitude = xp.abs(x)
    above = xp.clip(xp.searchsorted(positive, magnitude), 1, 0x7E)
    below = above - 1
    code = xp.where(magnitude - positive[below] <= positive[above] - magnitude, below, above)
    return (code | (x < 0).astype(np.int64) << 7).astype(np.uint8)


def e4m3_to_f64(bits, xp=None):
    xp = xp or __import__("cupy")
    return xp.asarray(e4m3_values())[bits]


# DeepSeek-V3's FP8 blocks: A (activations) scaled per 1 x BLOCK of a row, B (weights, N x K) per
# BLOCK x BLOCK, so that one outlier costs the precision of its block only, not of the tensor.
BLOCK = SCALE_BLOCK
BLOCKS = {"a": (1, BLOCK), "b": (BLOCK, BLOCK)}


def block_quantize(x, rows: int, cols: int, xp=None):
    """float32 x (R x C) -> its e4m3 bits with each rows x cols block scaled so that its largest
    value becomes E4M3_MAX, and the scales (ceil(R/rows) x ceil(C/cols) float32: a value is bits x
    scale); a last, partial block is scaled by what it holds."""
    import numpy as np
    xp = xp or __import__("cupy")
    r, c = x.shape
    padded = xp.zeros((-(-r // rows) * rows, -(-c // cols) * cols), dtype=np.float32)
    padded[:r, :c] = x
    blocks = padded.reshape(padded.shape[0] // rows, rows, padded.shape[1] // cols, cols)
    scales = (xp.maximum(xp.abs(blocks).max(axis=(1, 3)), np.float32(1e-30)) / np.float32(E4M3_MAX)).astype(np.float32)
    bits = to_e4m3_bits((blocks / scales[:, None, :, None]).reshape(padded.shape), xp)
    return xp.ascontiguousarray(bits[:r, :c]), scales


def block_dequantize(bits, scales, rows: int, cols: int, xp=None):
    """The float64 values of block-scaled e4m3 ``bits`` (block_quantize's inverse, exactly)."""
    xp = xp or __import__("cupy")
    r, c = bits.shape
    per_element = xp.repeat(xp.repeat(scales.astype(xp.float64), rows, axis=0), cols, axis=1)[:r, :c]
    return e4m3_to_f64(bits, xp) * per_element


def _normal_values(shape: Shape, layout: str, seed: int):
    """A (M x K) and B (N x K for b_kmajor, else K x N) of standard normal float32 values, drawn from
    ``seed``: what every set of operands of a shape quantizes."""
    import cupy
    rng = cupy.random.default_rng(seed)
    a = rng.standard_normal((shape.m, shape.k), dtype=cupy.float32)
    return a, rng.standard_normal((shape.n, shape.k) if layout == "b_kmajor" else (shape.k, shape.n), dtype=cupy.float32)


class Operands:
    """Random A and B of a shape (B transposed in memory for b_kmajor; bf16 as uint16 bit
    patterns; fp8 as e4m3 bit patterns, each matrix scaled to fill e4m3's range, its scale kept)
    and, once asked for, their float64 product. ``scaling`` is what a GEMM is given besides the
    operands: FP8's alpha, the product of the two scales."""

    def __init__(self, shape: Shape, layout: str, precision: str, seed: int = SEED):
        import cupy
        self.shape, self.layout, self.precision = shape, layout, precision
        a, b = _normal_values(shape, layout, seed)
        self.scales, self.scaling = (1.0, 1.0), {}
        if precision == "bf16":
            a, b = _to_bf16_bits(a), _to_bf16_bits(b)
        elif precision == "fp8":           # per-tensor scales: each matrix's largest value becomes E4M3_MAX
            self.scales = tuple(float(cupy.abs(x).max()) / E4M3_MAX for x in (a, b))
            a, b = (to_e4m3_bits(x / s) for x, s in zip((a, b), self.scales))
            self.scaling = {"alpha": self.scales[0] * self.scales[1]}
        self.a, self.b = a, b
        self._reference = None

    @property
    def nbytes(self) -> int:
        return self.a.nbytes + self.b.nbytes + (self._reference.nbytes if self._reference is not None else 0)

    def dequantized(self):
        """A and B in float64: the values a GEMM of them multiplies."""
        import cupy
        up = {"bf16": _bf16_to_f64, "fp8": e4m3_to_f64}.get(self.precision, lambda x: x.astype(cupy.float64))
        return tuple(up(x) * s for x, s in zip((self.a, self.b), self.scales))

    def reference(self):
        """A B in float64 (cuBLAS DGEMM), and its Frobenius norm."""
        import cupy
        if self._reference is None:
            a64, b64 = self.dequantized()
            self._reference = a64 @ (b64.T if self.layout == "b_kmajor" else b64)
            self._norm = float(cupy.linalg.norm(self._reference))
        return self._reference, self._norm

    def poisoned_c(self, output: str = "fp32", rows: int | None = None, cols: int | None = None):
        """C full of NaN: FP32 (M x N), or BF16 bit patterns (of rows x cols, for a column-major C)."""
        import cupy
        if output == "bf16":
            return cupy.full((rows or self.shape.m, cols or self.shape.n), BF16_NAN, dtype=cupy.uint16)
        return cupy.full((self.shape.m, self.shape.n), cupy.nan, dtype=cupy.float32)

    def check(self, c) -> dict:
        """C (M x N, FP32 or BF16 bit patterns) against the float64 product (compare)."""
        ref, norm = self.reference()
        return compare(c, ref, norm, self.precision)


class BlockScaledOperands(Operands):
    """FP8 operands as DeepSeek-V3 trains with: A (M x K) and B (N x K) e4m3 bits, ``sfa``
    (M x K/BLOCK) and ``sfb`` (N/BLOCK x K/BLOCK, rounded up) float32 scales; the reference is their
    dequantized product. Drawn from the same normal values as the per-tensor operands. A GEMM is
    given the scales in the layouts cuBLASLt reads (cublaslt.block_scales), which the kernels read too."""

    def __init__(self, shape: Shape, seed: int = SEED):
        self.shape, self.layout, self.precision = shape, "b_kmajor", "fp8"
        a, b = _normal_values(shape, self.layout, seed)
        self.scales = (1.0, 1.0)
        (self.a, self.sfa), (self.b, self.sfb) = (block_quantize(x, *BLOCKS[name]) for name, x in (("a", a), ("b", b)))
        from .cublaslt import block_scales
        self.scaling = {"scales": block_scales(self.sfa, self.sfb)}
        self._reference = None

    @property
    def nbytes(self) -> int:
        return super().nbytes + sum(x.nbytes for x in (self.sfa, self.sfb, *self.scaling["scales"]))

    def dequantized(self):
        return block_dequantize(self.a, self.sfa, *BLOCKS["a"]), block_dequantize(self.b, self.sfb, *BLOCKS["b"])


def side_by_side(shape: Shape, runs: dict, checks: dict) -> tuple[dict, dict]:
    """GEMMs of one shape, each already checked (``checks``, by the names of ``runs``), settled and
    timed in turns: the record's part for the shape (each with its times, TFLOPS and check) and
    their times with the samples, for ratios from the same turns."""
    fns = list(runs.values())
    batch, turns = pace(fns)
    settled = settle(fns, batch, turns)
    times = dict(zip(runs, time_gpu_alternating(fns, warmup=0, reps=REPS, batch=batch, turns=turns, keep_samples=True)))
    entries = {}
    for name, own in times.items():
        time_ms = {k: v for k, v in own.items() if k != "samples"}
        entries[name] = {"time_ms": time_ms, "tflops": tflops(shape, time_ms), "check": checks[name]}
    return {"shape": shape.dims, "batch": batch, "turns": turns, "settle": settled, **entries}, times


def compare(c, reference, norm: float, precision: str) -> dict:
    """Relative Frobenius error of C (FP32 or BF16 bit patterns) against a float64 ``reference`` of
    Frobenius norm ``norm``, within the tolerance of ``precision`` and C's type, and whether every
    element of C was written (no NaN left of the poison)."""
    import cupy
    output = "bf16" if c.dtype == cupy.uint16 else "fp32"
    c64 = _bf16_to_f64(c) if output == "bf16" else c.astype(cupy.float64)
    unwritten = int(cupy.isnan(c64).sum())
    err = float(cupy.linalg.norm(cupy.nan_to_num(c64) - reference) / norm)
    tol = TOLERANCE[precision] + OUTPUT_ROUNDING[output]
    passed = unwritten == 0 and err <= tol
    out = {"passed": passed, "rel_error": err, "tolerance": tol, "unwritten": unwritten, "output": output,
           "reference": "float64 GEMM of the same operands, relative Frobenius norm"}
    if not passed:
        out["detail"] = (f"{unwritten} elements of C never written" if unwritten
                         else f"relative error {err:.2e} above {precision} tolerance {tol:.0e}")
    return out


# Operands kept for the next GEMM of the same shape, layout and precision, the least recently
# used dropped first past this many bytes.
KEPT_OPERAND_BYTES = 12 * 2**30
_kept: OrderedDict[tuple, Operands] = OrderedDict()


def operands(shape: Shape, layout: str, precision: str, scaling: str = "tensor") -> Operands:
    """The operands of a shape, kept (KEPT_OPERAND_BYTES); FP8's with a scale a tensor or, for
    ``scaling`` "blocks", a scale a block (BlockScaledOperands)."""
    key = (shape, layout, precision, scaling)
    if key not in _kept:
        if scaling == "blocks" and (layout, precision) != ("b_kmajor", "fp8"):
            raise ValueError(f"block scales are FP8's, B K-major: not {precision}, {layout}")
        _kept[key] = BlockScaledOperands(shape) if scaling == "blocks" else Operands(shape, layout, precision)
    _kept.move_to_end(key)
    while len(_kept) > 1 and sum(o.nbytes for o in _kept.values()) > KEPT_OPERAND_BYTES:
        _kept.popitem(last=False)
    return _kept[key]


def checked_launch(shape: Shape, layout: str, precision: str, prepare, scaling: str = "tensor", output: str = "fp32"):
    """A kernel on the shape's operands, C (of the ``output`` type) poisoned with NaN, one run, and its
    check against float64: (the launch, the check, the operands, C). ``prepare`` may raise Refused."""
    import cupy
    ops = operands(shape, layout, precision, scaling)
    c = ops.poisoned_c(output)
    launch = prepare(ops.a, ops.b, c, **ops.scaling)
    launch.run()
    cupy.cuda.get_current_stream().synchronize()
    return launch, ops.check(c), ops, c


def checked_cublas(ops: Operands, precision: str | None = None, output: str = "fp32"):
    """cuBLAS on the same operands into a poisoned C of the ``output`` type: its run and its check
    against the same reference."""
    import cupy
    precision = precision or ops.precision
    c = ops.poisoned_c(output)
    run = lambda: cublas.gemm(ops.a, ops.b, c, ops.layout, precision, **ops.scaling)
    run()
    cupy.cuda.get_current_stream().synchronize()
    return run, ops.check(c)


# A second of idle GPU, while the host loads and disassembles the next kernel, is a step in the load
# that sets the power cap's controller swinging for ten seconds (settle.headline), and the next
# timings would measure the swing. So GEMM benchmarks first queue BUSY_S of cuBLAS and then do their
# host work while it runs. The first GEMM of a process warms the chip from its rest for FIRST_WARM_S.
BUSY_S = 0.2        # about what loading a kernel and its SASS (dumped as it compiled: sass.dump) takes
FIRST_WARM_S = 1.0 if quick() else 8.0
_busy: dict = {}


def keep_busy(seconds: float = BUSY_S) -> None:
    """Queue about ``seconds`` of cuBLAS TF32 GEMMs at the reference shape and return at once: the
    host work that follows overlaps them, and the next synchronization waits for them."""
    import cupy
    if "run" not in _busy:
        ops = operands(SHAPE, "b_kmajor", "tf32")
        c = cupy.empty((SHAPE.m, SHAPE.n), cupy.float32)
        _busy["run"] = lambda: cublas.gemm(ops.a, ops.b, c, "b_kmajor", "tf32")
        _busy["ms"] = time_gpu(_busy["run"], warmup=1, reps=3)["median"]
        seconds = max(seconds, FIRST_WARM_S)
    for _ in range(max(1, round(seconds * 1e3 / _busy["ms"]))):
        _busy["run"]()


def warm(run, seconds: float) -> None:
    """Run ``run`` back to back for ``seconds`` of wall time (in batches, so the queue stays full)."""
    import cupy
    began = time.monotonic()
    while time.monotonic() - began < seconds:
        for _ in range(8):
            run()
        cupy.cuda.get_current_stream().synchronize()


def pace(runs, round_s: float = ROUND_S) -> tuple[int, int]:
    """(batch, turns): runs of the slowest of ``runs`` that fill a turn of TURN_MS, and turns of each
    that make a round of about ``round_s``."""
    probe = [t["median"] for t in time_gpu_alternating(runs, warmup=1, reps=3)]
    batch = max(1, round(TURN_MS / max(probe)))
    return batch, max(1, round(round_s * 1e3 / (batch * sum(probe))))


def settle(runs, batch: int, turns: int, max_s: float = SETTLE_MAX_S) -> dict:
    """Time rounds of ``runs`` as they will be timed until the first of them is steady (its last two
    rounds within SETTLED_DRIFT) or ``max_s`` has passed. Its rounds are not timings: their spans
    are taken back out of TIMED_SPANS and SM_CLOCKS, so the telemetry recorded "during" the run is
    that of the timed rounds."""
    began, rounds, spans, clocks = time.monotonic(), [], len(TIMED_SPANS), len(SM_CLOCKS)
    while True:
        rounds.append(time_gpu_alternating(runs, warmup=0, reps=1, batch=batch, turns=turns)[0]["median"])
        elapsed = time.monotonic() - began
        drift = abs(rounds[-1] / rounds[-2] - 1) if len(rounds) > 1 else None
        steady = drift is not None and drift < SETTLED_DRIFT
        if steady or elapsed >= max_s:
            del TIMED_SPANS[spans:], SM_CLOCKS[clocks:]
            return {"seconds": round(elapsed, 2), "rounds": len(rounds), "settled": steady, "drift": drift,
                    "first_ms": rounds[0], "last_ms": rounds[-1]}


def time_in_turns(runs, reps: int = REPS, settle_max_s: float = SETTLE_MAX_S,
                  round_s: float = ROUND_S) -> tuple[list[dict], dict, int, int]:
    """The GEMM timing every GEMM figure comes from: ``runs`` in turns of TURN_MS, settled, then
    ``reps`` rounds of ``round_s``, each summary keeping its samples. (times, settling, batch, turns)."""
    batch, turns = pace(runs, round_s)
    settled = settle(runs, batch, turns, settle_max_s)
    times = time_gpu_alternating(runs, warmup=0, reps=reps, batch=batch, turns=turns, keep_samples=True)
    return times, settled, batch, turns


# Energy per GEMM. NVML's energy counter moves in ticks tens of milliseconds apart and cannot tell
# two kernels in turns apart, so after its turns each GEMM runs alone for ENERGY_S, and its power is
# the slope of the counter over the ticks read while the GPU was still running it, past
# ENERGY_SKIP_S (the change from turns): a line through all of them, as a tick is read up to a
# poll late and a lone pair of ticks would carry that. NVML's power reading (a trailing average) is
# kept beside it.
# A quick run measures none: a window short enough for it holds too few ticks (35 of 42 GEMMs had
# fewer than three in 0.3 s on the H200, 2026-11-29).
ENERGY_S = None if quick() else 1.0
ENERGY_SKIP_S = 0.2
POLL_S = 0.001
# cuBLAS's energy on the reference shape, by what it runs (precision, layout, output, scaling): measured
# once a process, by the first kernel record that pairs with it, and named as that record's in the others
# (35 kernel records pair with about ten cuBLAS configurations: a window each was 40 s of a full run).
_cublas_energy: dict[tuple, dict | None] = {}


def energy(run, shape: "Shape", ms: float) -> dict | None:
    """``run`` alone, back to back for about ENERGY_S (``ms`` a run): its mean power from the energy
    counter, the time a run took, the joules a GEMM takes, TFLOPS per watt and the SMs' clock; None
    where the GPU has no energy counter, the window held fewer than three of its ticks, or the run is quick."""
    import cupy
    import numpy as np
    from ..core.device import energy_counter, telemetry
    if ENERGY_S is None:
        return None
    try:
        read = energy_counter()
    except Exception:           # no NVML, or no counter on this GPU
        return None
    runs = max(1, round(ENERGY_S * 1e3 / ms))
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    probe = clock_probe()
    probe.clear()
    began = time.monotonic()
    probe.mark(0)
    start.record()
    for _ in range(runs):
        run()
    end.record()
    probe.mark(1)
    ticks, nvml, last = [], [], read()
    while not end.done:
        now, mj = time.monotonic(), read()
        if mj != last and now - began >= ENERGY_SKIP_S and not end.done:   # the GPU still ran it
            ticks.append((now, mj))
            nvml.append(telemetry()["power_w"])
        last = mj
        time.sleep(POLL_S)
    end.synchronize()
    if len(ticks) < 3:
        return None
    t, mj = np.array(ticks, dtype=float).T
    watts = float(np.polyfit(t - t[0], (mj - mj[0]) / 1e3, 1)[0])
    per_run = cupy.cuda.get_elapsed_time(start, end) / runs
    clock = probe.read()        # the SMs' clock over the window
    return {"watts": watts, "time_ms": per_run, "joules": watts * per_run / 1e3,
            "tflops_per_watt": tflops(shape, {"median": per_run}) / watts, "runs": runs,
            "window_s": float(t[-1] - t[0]), "ticks": len(ticks), "nvml_power_w": float(np.median(nvml)),
            **({"sm_clock_mhz": clock[0]} if clock else {})}


def tflops(shape: Shape, time_ms: dict) -> float:
    return shape.flops / (time_ms["median"] * 1e-3) / 1e12


def _odd_shape(layout: str, precision: str, prepare, scaling: str, output: str) -> dict:
    try:
        _, check, _, _ = checked_launch(ODD_SHAPE, layout, precision, prepare, scaling, output)
        odd = {"outcome": "correct" if check["passed"] else "wrong", "check": check}
    except Refused as e:
        odd = {"outcome": "refused", "reason": str(e)}
    return {**odd, "shape": ODD_SHAPE.dims}


def ratio(name: str, numerator: dict, denominator: dict) -> dict:
    """Two fns' times from the same turns: the ratio of medians and, sample by sample, the ratio
    with its interval (what is left of the spread once both met the same clock)."""
    return {name: numerator["median"] / denominator["median"],
            f"{name}_by_sample": summarize([n / d for n, d in zip(numerator["samples"], denominator["samples"])])}


def run_gemm(ctx, *, precision: str, layout: str, prepare, against_cublas: bool = False,
             before: Before | None = None, scaling: str = "tensor", output: str = "fp32") -> dict:
    """Check at the reference shape, settle, time; then correctness (or a clear refusal) at ODD_SHAPE.
    ``against_cublas``: cuBLAS (same precision, layout and operands) is checked too, and, once the
    kernel has settled, the two are timed in turns, so that both meet the same clock: the kernel's
    figures and cuBLAS's come from the same samples, and their ratio is per unit of clock.
    ``before``: the kernel before it in the talk joins the turns (checked on its own operands), and
    the kernel's gain over it is that pair's. Then the kernel and cuBLAS each run alone for their
    power and energy per GEMM (energy(); cuBLAS's once a process, _cublas_energy). ``scaling``: FP8's scales, a tensor's or a block's (operands()),
    cuBLASLt's given the same; ``output``: C's type, cuBLAS's the same."""
    launch, check, ops, _ = checked_launch(SHAPE, layout, precision, prepare, scaling, output)
    runs = [launch.run]
    if against_cublas:
        cublas_run, cublas_check = checked_cublas(ops, output=output)
        runs.append(cublas_run)
    if before:
        before_launch, before_check, _, _ = checked_launch(SHAPE, before.layout, before.precision, before.prepare,
                                                           before.scaling, before.output)
        runs.append(before_launch.run)
    times, settled, batch, turns = time_in_turns(runs)
    t = times[0]
    # alone, after the turns: each one's power and energy (the turns mix theirs)
    used = [energy(launch.run, SHAPE, t["median"]), None]
    if against_cublas:
        key = (precision, layout, output, scaling)
        if key not in _cublas_energy:
            measured = energy(cublas_run, SHAPE, times[1]["median"])
            _cublas_energy[key] = measured and {**measured, "measured_in": ctx.bench_id}
        used[1] = _cublas_energy[key]
    odd = _odd_shape(layout, precision, prepare, scaling, output)
    if odd["outcome"] == "wrong":
        check = {**check, "passed": False, "detail": f"wrong at the odd shape {odd['shape']}: {odd['check']['detail']}"}
    partners = ["cuBLAS"] * against_cublas + ([before.id] if before else [])
    timing = " and ".join(partners)
    record = {"params": {"m": SHAPE.m, "n": SHAPE.n, "k": SHAPE.k, "layout": layout, "precision": precision,
                         "output": output, **({"scaling": scaling} if precision == "fp8" else {}), "reps": REPS, "turn_ms": TURN_MS, "round_s": ROUND_S, "batch": batch,
                         "turns": turns, "seed": SEED,
                         "settle_rule": SETTLE_RULE,
                         "timing": f"in turns with {timing}" if timing else "alone"},
              "check": check, "settle": settled, "time_ms": t, "tflops": tflops(SHAPE, t), "odd_shape": odd,
              **({"energy": used[0]} if used[0] else {})}
    said = []
    if against_cublas:
        record["cublas"] = {"id": catalogue.cublas_id(precision, layout), "time_ms": times[1],
                            "tflops": tflops(SHAPE, times[1]), **ratio("ratio", times[1], t), "check": cublas_check,
                            **({"energy": used[1]} if used[1] else {})}
        c = record["cublas"]
        said.append(f" = {100 * c['ratio']:.1f}% of cuBLAS's {c['tflops']:.1f} in turns "
                    f"(interval {100 * c['ratio_by_sample']['ci'][0]:.1f}-{100 * c['ratio_by_sample']['ci'][1]:.1f}%); "
                    f"error {check['rel_error']:.1e} vs cuBLAS {cublas_check['rel_error']:.1e}")
    if before:
        record["before"] = {"id": before.id, "time_ms": times[-1], "tflops": tflops(SHAPE, times[-1]),
                            **ratio("gain", times[-1], t),
                            "check": {k: before_check[k] for k in ("passed", "rel_error")}}
        g = record["before"]["gain_by_sample"]
        said.append(f"; {100 * (g['median'] - 1):+.1f}% over {before.id} in turns "
                    f"(interval {100 * (g['ci'][0] - 1):+.1f} to {100 * (g['ci'][1] - 1):+.1f}%)")
    steady = "steady" if settled["settled"] else "NOT steady"
    clock = f", SMs at {t['sm_clock_mhz']:.0f} MHz" if "sm_clock_mhz" in t else ""
    if used[0]:
        said.append(f"; alone {used[0]['watts']:.0f} W, {used[0]['joules']:.2f} J a GEMM, "
                    f"{used[0]['tflops_per_watt']:.3f} TFLOPS/W")
    ctx.progress(f"{record['tflops']:.1f} TFLOPS{''.join(said)}; {steady} after {settled['seconds']:.1f} s, "
                 f"spread {100 * spread(t):.1f}%{clock}, odd shape {odd['outcome']}")
    if launch.resources:
        record["resources"] = launch.resources
    return record
