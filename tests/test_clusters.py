"""The clusters benchmark without a GPU: the host's side of its checks (the ring the chase follows,
the sums the streams must reach), and every build compiled for sm_90a with each path's own load."""
import pytest

from bench import clusters, sass
from tests.conftest import builds


def test_the_ring_is_one_cycle_and_the_host_follows_it_as_the_kernel_does():
    nxt = clusters.ring(4096)
    j, seen = 0, set()
    for _ in range(4096):
        seen.add(j)
        j = int(nxt[j])
    assert len(seen) == 4096 and j == 0
    j = 0
    for _ in range(5000):
        j = int(nxt[j])
    assert clusters.chase_end(nxt, 5000) == j


def test_stream_sums_are_each_threads_vectors_summed_and_wrapped():
    import numpy as np
    words = np.arange(64, dtype=np.uint32) * np.uint32(2**27)        # sums that wrap past 2^32
    sums = clusters.stream_sums(words, threads=4, passes=3)
    for t in range(4):
        mine = [int(w) for v in range(t, 16, 4) for w in words[4 * v:4 * v + 4]]
        assert int(sums[t]) == 3 * sum(mine) % 2**32


@pytest.mark.parametrize("size", [pytest.param(c, marks=builds((clusters.SOURCE, "90a", {"CLUSTER": c})))
                                  for c in clusters.CLUSTERS])
def test_each_cluster_build_reads_a_peer_through_the_cluster_window_and_its_own_through_shared(size, compile_cu):
    functions = sass.disassemble(compile_cu(clusters.SOURCE, "90a", {"CLUSTER": size}))
    loads = lambda name: {i.opcode for i in functions[name] if i.mnemonic in ("LD", "LDS")}
    assert loads("chase_own") == {"LDS"} and loads("stream_own") == {"LDS.128"}
    assert loads("chase_peer") == {"LD.E"} and loads("stream_peer") == {"LD.E.128"}
    assert any(i.mnemonic == "UCGABAR_ARV" for i in functions["meet_cluster_relaxed"])
    assert any(i.opcode.startswith("SYNCS.ARRIVE") for i in functions["signal_peer"]), "a remote mbarrier arrive"
