"""The FP8 peer (bench/peers/deepgemm.py) and its block-scaled operands, without a GPU."""
import os

import numpy as np
import pytest

from bench.peers import deepgemm
from bench.gemm import harness
from bench.core import registry, runner

HOPPER = {"compute_capability": "9.0", "gpu_count": 1}


@pytest.mark.parametrize("block", sorted(harness.BLOCKS))
def test_each_block_fills_e4m3_and_dequantizes_to_the_values_it_stores(block):
    rows, cols = harness.BLOCKS[block]
    x = np.random.default_rng(1).standard_normal((256, 512)).astype(np.float32)
    x[5, 300] = 1000.0                                # an outlier costs its own block's precision only
    bits, scales = harness.block_quantize(x, rows, cols, np)
    assert bits.dtype == np.uint8 and scales.shape == (256 // rows, 512 // cols)
    values = harness.e4m3_values()[bits]
    per_block = np.abs(values).reshape(256 // rows, rows, 512 // cols, cols).max(axis=(1, 3))
    assert np.allclose(per_block, harness.E4M3_MAX)   # every block's largest value at e4m3's largest
    back = harness.block_dequantize(bits, scales, rows, cols, np)
    assert np.array_equal(back, (values.reshape(256 // rows, rows, 512 // cols, cols)
                                 * scales.astype(np.float64)[:, None, :, None]).reshape(256, 512))
    ragged_bits, ragged_scales = harness.block_quantize(x[:200], rows, cols, np)    # N = 2112 is 16.5 blocks
    assert ragged_scales.shape == (-(-200 // rows), 512 // cols)
    whole = (200 // rows) * rows                      # the rows of whole blocks: scaled as before
    assert np.array_equal(harness.block_dequantize(ragged_bits, ragged_scales, rows, cols, np)[:whole], back[:whole])
    far = np.ones_like(x, dtype=bool)
    far[(5 // rows) * rows:(5 // rows + 1) * rows, 256:384] = False
    # e4m3 keeps 3 mantissa bits: within 2^-4 of each value away from the outlier's block
    assert np.max(np.abs(back - x)[far] / np.maximum(np.abs(x[far]), 2.0**-6 * scales.max())) <= 2.0**-4


def test_a_folder_without_deep_gemm_is_not_a_checkout(tmp_path):
    with pytest.raises(RuntimeError, match="is DEEPGEMM_DIR a checkout of deepseek-ai/DeepGEMM"):
        deepgemm.build(tmp_path)


def test_without_a_checkout_the_peer_is_skipped_with_the_reason(monkeypatch):
    monkeypatch.delenv(deepgemm.PEER_ENV, raising=False)
    bench = registry.discover()["peers.deepgemm"]
    assert runner.skip_reason(bench, HOPPER).startswith(f"no checkout of the peer: set {deepgemm.PEER_ENV}")
    assert runner.skip_reason(bench, {"compute_capability": "8.0", "gpu_count": 1}).startswith("needs compute capability 9.0")



def test_deepgemms_printed_configuration_is_read_and_its_output_caught(capfd):
    """DG_PRINT_CONFIGS has DeepGEMM print its choice at a shape's first call, from C++ to the process's
    standard output (csrc/jit_kernels/heuristics/common.hpp): caught at the file descriptor, and read."""
    line = ("GemmDesc(gemm_type=0, kernel_type=1, m=4096, n=7168, k=16384, num_groups=1, num_sms=132): "
            "GemmConfig(layout=Layout(swap_ab=0, block_m=128, block_n=112, block_k=128, cluster_m=2, cluster_n=1), "
            "storage_config=StorageConfig(load_block_m=128, load_block_n=112), pipeline_config=PipelineConfig("
            "smem_size=216064, num_stages=6), launch_config=LaunchConfig(num_sms=132, num_sms_per_cluster=2, "
            "num_threads=384, num_tma_threads=128, num_math_threads=256)), LayoutInfo(num_waves=2, last_wave_util=97, "
            "num_cycles=123456)\n")
    printed = deepgemm.first_call_printed(lambda: os.write(1, line.encode()))
    assert printed == line and capfd.readouterr().out == ""          # none of it reached the run's output
    assert deepgemm.config_of(printed) == {"block_m": 128, "block_n": 112, "block_k": 128, "cluster_m": 2, "cluster_n": 1,
                                           "swap_ab": 0, "num_stages": 6, "num_sms": 132, "num_math_threads": 256,
                                           "num_waves": 2, "last_wave_util": 97}
    assert deepgemm.config_of("") is None and deepgemm.config_of("something else=3") is None
    with pytest.raises(ZeroDivisionError):                           # a call that raises gives the output back
        deepgemm.first_call_printed(lambda: 1 / 0)
    print("after")
    assert capfd.readouterr().out == "after\n"
