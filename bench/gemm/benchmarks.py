"""The GEMM family's registrations: cuBLAS in every precision and layout, timed alone, and each
kernel of the step catalogue (bench/gemm/catalogue.py), checked and timed in turns with the cuBLAS
of its precision and layout and with the kernel before it (its gain is that pair's), through the
one harness (bench/gemm/harness.py)."""
from __future__ import annotations

from . import catalogue, cublas, harness, launch
from ..core import cuda
from .catalogue import Step, Variant
from ..core.registry import register

HARNESS_SOURCES = ("bench/gemm/harness.py", "bench/gemm/cublas.py", "bench/gemm/cublaslt.py")
CUTE_SOURCES = ("bench/gemm/launch.py", "bench/gemm/plan.py", "bench/core/cuda.py", "bench/core/sass.py")


def _register_cublas(precision: str, layout: str):
    @register(catalogue.cublas_id(precision, layout), sources=HARNESS_SOURCES, timeout_s=300,
              title=f"cuBLAS {precision.upper()}, {catalogue.LAYOUTS[layout]}")
    def run(ctx) -> dict:
        harness.keep_busy()
        prepare = lambda a, b, c, alpha=1.0: harness.Launch(lambda: cublas.gemm(a, b, c, layout, precision, alpha))
        return harness.run_gemm(ctx, precision=precision, layout=layout, prepare=prepare)


for _precision in catalogue.CUBLAS_PRECISIONS:
    for _layout in catalogue.cublas_layouts(_precision):
        _register_cublas(_precision, _layout)


def kernel_sources(step: Step) -> tuple[str, ...]:
    """The files that define a catalogue kernel's result: its own, the headers it includes, the
    harness, and for CuTe kernels the launcher and the compiler's command line."""
    own = (step.source, *cuda.local_includes(step.source)) if step.cute else (step.source,)
    return (*own, *HARNESS_SOURCES, "bench/gemm/launch.py", *(CUTE_SOURCES if step.cute else ()))


def paired_sources(step: Step, before: str | None) -> tuple[str, ...]:
    """A kernel's sources and those of the kernel before it, which it is timed in turns with."""
    return tuple(dict.fromkeys((*kernel_sources(step), *(kernel_sources(catalogue.step_of(before)) if before else ()))))


def builds(step: Step, variant: Variant) -> tuple:
    """The nvcc builds a kernel's benchmark needs, for the run to compile them all up front."""
    return ((step.source, variant.tile),) if step.cute else ()


def _register_kernel(step: Step, variant: Variant):
    before = catalogue.before(variant.id)
    before_kernel = catalogue.KERNELS[before] if before else None
    @register(variant.id, sources=paired_sources(step, before),
              kernels=catalogue.definitions((variant.id, *((f"before:{variant.id}",) if before else ()))),
              builds=(*builds(step, variant), *(builds(*before_kernel) if before else ())), code=step.code,
              title=step.title_of(variant), timeout_s=300, min_cc=step.min_cc)
    def run(ctx) -> dict:
        harness.keep_busy()         # while the kernels load and their SASS is read
        paired = harness.Before(before, before_kernel[0].precision, before_kernel[0].layout,
                                launch.prepare(*before_kernel, ctx.device), before_kernel[0].scaling,
                                catalogue.output_of(before_kernel[1].tile)) if before else None
        return harness.run_gemm(ctx, precision=step.precision, layout=step.layout, scaling=step.scaling,
                                output=catalogue.output_of(variant.tile),
                                prepare=launch.prepare(step, variant, ctx.device), against_cublas=True, before=paired)


for _step, _variant in catalogue.KERNELS.values():
    _register_kernel(_step, _variant)
