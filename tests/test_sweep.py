"""How sweeps and atlases feed their timed runs (bench/gemm/sweep.py): operands that fit in L2 are
copied until the sets fill it COLD_L2S times over, and the runs take the sets one after another."""
import numpy as np

from bench.gemm.sweep import COLD_L2S, cycled, operand_sets

L2 = 60 << 20      # the H200's 60 MiB


def test_operands_that_fit_in_l2_are_copied_until_the_sets_fill_it_over():
    a, b = np.ones((64, 7168), np.uint16), np.full((2112, 7168), 2, np.uint16)     # 64 x 2112 x 7168 BF16: B is 30 MB
    c_bytes = 64 * 2112 * 4
    sets = operand_sets(a, b, c_bytes, L2)
    one = a.nbytes + b.nbytes + c_bytes
    assert len(sets) == -(-COLD_L2S * L2 // one) == 4
    assert sets[0][0] is a and sets[0][1] is b                      # the checked operands come first
    copies = [x for pair in sets[1:] for x in pair]
    assert all(x is not a and x is not b for x in copies)           # each set its own buffers
    assert all((x == a).all() if x.shape == a.shape else (x == b).all() for x in copies)
    assert len(sets) * one >= COLD_L2S * L2 > (len(sets) - 1) * one


def test_operands_past_l2_are_timed_as_they_are():
    a, b = np.ones((4096, 16384), np.float32), np.ones((8192, 16384), np.float32)
    assert operand_sets(a, b, 4096 * 8192 * 4, L2) == [(a, b)]


def test_queued_runs_read_the_sets_in_turn_whoever_runs():
    """Runs queued one after another (the kernel, cuBLAS, the kernel, ...) take sets 0, 1, 2, 0, ...:
    no run reads the set the run before it read."""
    read = []
    runs = cycled({name: [lambda name=name, i=i: read.append((name, i)) for i in range(3)] for name in ("kernel", "cublas")})
    for name in ("kernel", "cublas", "kernel", "cublas", "cublas", "kernel"):
        runs[name]()
    assert read == [("kernel", 0), ("cublas", 1), ("kernel", 2), ("cublas", 0), ("cublas", 1), ("kernel", 2)]
