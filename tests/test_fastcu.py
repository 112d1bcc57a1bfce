"""The fast.cu peer without a GPU: its entry point builds against a checkout's header, and a folder
that is not a checkout is named as such. (Measured on the GPU by python -m bench with $FASTCU_DIR.)"""
import pytest

from bench.peers import fastcu
from bench.core import registry, runner

STUB = """namespace M12 {
int _prev_m = 0;
void runKernel12(int M, int N, int K, bf16* A, bf16* B, bf16* C, int* DB) {}
}
using M12::runKernel12;
"""


def test_a_folder_without_kernel_12_is_not_a_checkout(tmp_path):
    with pytest.raises(RuntimeError, match="holds no examples/matmul/matmul_12.cuh"):
        fastcu.build(tmp_path)


@pytest.mark.nvcc()
def test_the_entry_point_builds_against_the_checkouts_header(tmp_path):
    """bench/peers/fastcu.cu declares what fast.cu's header expects of its matmul.cu and calls its
    runKernel12: a stand-in header with fast.cu's names builds into the shared library."""
    header = tmp_path / fastcu.HEADER
    header.parent.mkdir(parents=True)
    header.write_text(STUB)
    library = fastcu.build(tmp_path)
    assert library.exists() and library.stat().st_size > 0


def test_without_a_checkout_the_peer_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.delenv(fastcu.PEER_ENV, raising=False)
    bench = registry.discover()["peers.fastcu"]
    hopper = {"compute_capability": "9.0", "gpu_count": 1}
    assert runner.skip_reason(bench, hopper).startswith(f"no checkout of the peer: set {fastcu.PEER_ENV}")
