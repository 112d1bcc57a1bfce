import copy
import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest
import yaml

from bench.core import cuda, registry, toolkit

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "h100.yaml"
NODE_FIXTURE = ROOT / "tests" / "fixtures" / "h200-x2.yaml"      # a node's file: python -m bench on two H200s
# by GPU count: that node and the nodes of more H200s simulated from it (tests/make_node_fixtures.py)
NODE_FIXTURES = {int(p.stem.rsplit("-x", 1)[1]): p for p in sorted(NODE_FIXTURE.parent.glob("h200-x*.yaml"))}
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)     # libyaml parses the fixture ~5x faster
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    def ignore_aliases(self, data) -> bool:     # as bench.core.schema.Dumper: results files hold no aliases
        return True


@pytest.fixture(autouse=True)
def no_fetched_peers(tmp_path_factory, monkeypatch):
    """Peers fetched into this checkout's .peers/ (python -m bench --peers) are not the tests' to find."""
    from bench.core import peers
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path_factory.getbasetemp() / "no-peers")


def pytest_report_header(config):
    return f"nvcc: {toolkit.describe()}"


@functools.cache
def _fixture_results(path: Path = FIXTURE) -> dict:
    """The fixture results, parsed once, with the source hashes of registered benchmarks made
    current, so that only what a test breaks on purpose is stale."""
    doc = yaml.load(path.read_text(), Loader=_LOADER)
    benches = registry.discover()
    for bid, rec in doc["benchmarks"].items():
        if bid in benches:
            rec.update(benches[bid].provenance())
    return doc


def fixture_doc_copy() -> dict:
    """A fresh copy of the fixture results, for a test to change as it likes."""
    return copy.deepcopy(_fixture_results())


@pytest.fixture
def fixture_doc():
    return fixture_doc_copy()


@pytest.fixture
def node_doc():
    """A fresh copy of the node fixture (the multi-GPU benchmarks and the node's topology)."""
    return copy.deepcopy(_fixture_results(NODE_FIXTURE))


def node_docs_copy() -> dict:
    """A fresh copy of every node fixture, by GPU count, for a test to change as it likes (the parsed
    ones are shared by every test of a worker)."""
    return {n: copy.deepcopy(_fixture_results(path)) for n, path in sorted(NODE_FIXTURES.items())}


@pytest.fixture
def node_docs():
    return node_docs_copy()


def dump_results(doc) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False)


@pytest.fixture
def write_results(tmp_path):
    """Write a results document (or raw text or bytes) to a file and return its path."""
    def write(doc, name="results.yaml"):
        path = tmp_path / name
        if isinstance(doc, bytes):
            path.write_bytes(doc)
        else:
            path.write_text(doc if isinstance(doc, str) else dump_results(doc))
        return path
    return write


# Compiles: each (source, arch, defines) is built once, into a cache the run's workers share (pytest-
# xdist) and later runs reuse, and all that the selected tests need start in parallel as soon as the
# tests are collected. A worker takes a lock for each build, so a build the other worker has under way
# is waited for, not repeated; the workers go through the list from opposite ends.

def builds(*configurations):
    """Mark a test (or one of its parameters) as compiling ``configurations``: (source, arch, defines)."""
    return pytest.mark.nvcc(*configurations)


def _key(src, arch, defines):
    return cuda.build_key(src, defines) + (arch,)


RUN_CACHE = "GPU_PERF_TEST_CUBINS"      # the run's cubin folder, chosen by the controller for its workers
WORKER = os.environ.get("PYTEST_XDIST_WORKER")              # gw0, gw1, ... under pytest-xdist
WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))


def _toolchain() -> str:
    """What a cubin depends on beyond what cuda.compile_cu names it by (the source, its headers, the
    command): the nvcc, its release, and the CuTe headers' release."""
    from importlib import metadata
    try:
        cute = metadata.version("nvidia-cutlass")
    except metadata.PackageNotFoundError:
        cute = "no CuTe"
    return hashlib.sha256(f"{toolkit.describe()} {cute}".encode()).hexdigest()[:12]


def pytest_configure(config):
    """The cubins are kept in the user's cache, a folder per toolchain (an older toolchain's is removed):
    a second run compiles only what changed. Where that cache cannot be written, a folder of this run."""
    if WORKER is not None:
        return
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpu-perf-study" / "test-cubins"
    try:
        folder = home / _toolchain()
        folder.mkdir(parents=True, exist_ok=True)
        for old in home.iterdir():
            if old != folder:
                shutil.rmtree(old, ignore_errors=True)
        os.environ[RUN_CACHE] = str(folder)
    except OSError:
        os.environ[RUN_CACHE] = tempfile.mkdtemp(prefix="cubin-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ[RUN_CACHE], ignore_errors=True))


class _Compiler:
    def __init__(self):
        self.cache = Path(os.environ[RUN_CACHE])
        self.pool = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // WORKERS))
        self.futures = {}
        self.patch = pytest.MonkeyPatch()
        self.patch.setattr(cuda, "CACHE", self.cache)

    def submit(self, src, arch, defines=None):
        key = _key(src, arch, defines)
        if key not in self.futures:
            self.futures[key] = self.pool.submit(self._build, key, Path(src), arch, defines)
        return self.futures[key]

    def _build(self, key, src, arch, defines):
        with open(self.cache / f"{hashlib.sha256(repr(key).encode()).hexdigest()[:16]}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            return cuda.compile_cu(src, arch, defines)

    def close(self):
        self.pool.shutdown(cancel_futures=True)
        self.patch.undo()


_compiler: _Compiler | None = None


def _nvcc_or_fail():
    if shutil.which("nvcc") is None:
        pytest.fail(f"nvcc not found: {toolkit.INSTALL_HINT}", pytrace=False)


def pytest_collection_modifyitems(items):
    """Long tests first (Slidev's builds and browsers, the recipe's copy: minutes each), so that
    under pytest-xdist they start at once on workers of their own while the others share the rest
    (--no-loadscope-reorder keeps this order; by default xdist starts the files with the most tests);
    compile tests last: the other tests run while their builds are under way; timed tests after
    them, on a machine the builds have left."""
    long = lambda item: any(item.get_closest_marker(m) for m in ("slidev", "long"))
    items.sort(key=lambda item: (not long(item), item.get_closest_marker("timed") is not None,
                                 item.get_closest_marker("nvcc") is not None))


def pytest_collection_finish(session):
    global _compiler
    wanted = [c for item in session.items for m in item.iter_markers("nvcc") for c in m.args]
    if WORKER and int(WORKER[2:]) % 2:
        wanted.reverse()
    if wanted and shutil.which("nvcc"):
        _compiler = _Compiler()
        for configuration in wanted:
            _compiler.submit(*configuration)


def pytest_sessionfinish(session):
    if _compiler is not None:
        _compiler.close()


@pytest.fixture
def builds_done():
    """Waits for the session's compiles (if any are under way), so that what a test times is its own."""
    if _compiler is not None:
        wait(_compiler.futures.values())


@pytest.fixture(scope="session")
def compile_cu():
    """``cuda.compile_cu`` for tests: the session's cubin, compiled once (and usually already built)."""
    global _compiler
    _nvcc_or_fail()
    if _compiler is None:
        _compiler = _Compiler()
    return lambda src, arch, defines=None: _compiler.submit(src, arch, defines).result()
