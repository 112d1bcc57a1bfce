"""The FP8 peer (bench/peers/deepgemm.py) and its block-scaled operands, without a GPU."""
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

