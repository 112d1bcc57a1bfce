"""The machinery family without a GPU: every wgmma build compiles for sm_90a and its SASS holds the
wgmma of the precision and N it was built for, in both kernels, each K-tile's four in the rate loop."""
import pytest

from bench import catalogue, machinery, registry, sass
from tests.conftest import builds

BUILDS = [(p, n) for p in machinery.PRECISIONS for n in machinery.NS]


def test_the_benchmark_declares_every_build_it_loads():
    declared = registry.discover()["machinery.wgmma"].builds
    assert [d for _, d in declared] == [machinery.defines(p, n) for p, n in BUILDS]


def test_four_warpgroups_run_wherever_their_accumulators_fit():
    for n in machinery.NS:
        most = machinery.defines("bf16", n)["MAX_WARPGROUPS"]
        # a thread's N / 2 accumulators and about 40 more registers, of the 65,536 the SM's warpgroups share
        assert n // 2 + 40 <= 65536 // (128 * most)
        assert most == max(machinery.WARPGROUPS) or n // 2 + 40 > 65536 // (128 * max(machinery.WARPGROUPS))


@pytest.mark.parametrize("precision,n", [pytest.param(p, n, id=f"{p}-{n}",
                                                      marks=builds((machinery.SOURCE, "90a", machinery.defines(p, n))))
                                         for p, n in BUILDS])
def test_each_build_holds_the_wgmma_it_measures(precision, n, compile_cu):
    functions = sass.disassemble(compile_cu(machinery.SOURCE, "90a", machinery.defines(precision, n)))
    k = 32 // catalogue.ELEMENT_BYTES[precision]
    for name in ("wgmma_rate", "wgmma_latency"):
        ops = {i.opcode for i in functions[name] if i.mnemonic in sass.MMA}
        assert ops == {f"{catalogue.WGMMA_OPCODES[precision]}.64x{n}x{k}.F32.{'E4M3.E4M3' if precision == 'fp8' else catalogue.SASS_TYPES[precision]}"}, (name, ops)
        assert not sum(i.mnemonic in ("STL", "LDL") for i in functions[name]), "no spills"
    rate = [i for i in functions["wgmma_rate"] if i.mnemonic in sass.WGMMA]
    assert len(rate) % 4 == 0, "a K-tile is four wgmmas"
