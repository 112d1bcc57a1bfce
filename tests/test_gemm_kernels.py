"""The numba GEMM kernels under the CUDA simulator, on small shapes that are
multiples of no tile, against numpy in float64."""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")   # before numba is imported

import numpy as np
import pytest

from bench.gemm.harness import TOLERANCE


def test_naive_matches_float64_at_an_odd_shape():
    from kernels import gemm_01_naive as k
    rng = np.random.default_rng(3)
    m, n, kk = 19, 23, 37
    a = rng.standard_normal((m, kk), dtype=np.float32)
    b = rng.standard_normal((kk, n), dtype=np.float32)
    c = np.full((m, n), np.nan, dtype=np.float32)
    k.gemm_naive[k.grid(m, n), k.BLOCK](a.ravel(), b.ravel(), c.ravel(), m, n, kk)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert not np.isnan(c).any()
    assert np.linalg.norm(c - ref) / np.linalg.norm(ref) <= TOLERANCE["fp32"]


def test_naive_accumulates_in_float32():
    """A float64 accumulator would make the 'FP32' kernel exact here: 1 + 2^-24 + ... stays 1 in float32."""
    from kernels import gemm_01_naive as k
    kk = 64
    a = np.ones((1, kk), dtype=np.float32)
    b = np.full((kk, 1), 2.0 ** -25, dtype=np.float32)
    b[0, 0] = 1.0
    c = np.zeros((1, 1), dtype=np.float32)
    k.gemm_naive[k.grid(1, 1), k.BLOCK](a.ravel(), b.ravel(), c.ravel(), 1, 1, kk)
    assert c[0, 0] == pytest.approx(1.0, abs=0)      # each 2^-25 is lost against 1.0 in float32
