"""A runner process over the fake benchmarks, as ``python -m bench`` would run them:
``python -m tests.run_fakes RESULTS ID...`` (exits 128 + the signal's number when stopped)."""
import sys
from pathlib import Path

from bench.core import registry, runner
from tests.test_runner import FAKE_DEVICE, SOFTWARE

if __name__ == "__main__":
    out, *ids = sys.argv[1:]
    fakes = registry.discover(modules=("tests.fake_benchmarks",))
    try:
        runner.run_all(registry.select(fakes, ids), Path(out), FAKE_DEVICE, SOFTWARE)
    except runner.Interrupted as stop:
        sys.exit(128 + stop.signum)
