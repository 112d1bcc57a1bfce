import copy
from pathlib import Path

import pytest
import yaml

from bench import registry

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "h100.yaml"


@pytest.fixture
def fixture_doc():
    """The fixture results with the source hashes of registered benchmarks made
    current, so that only what a test breaks on purpose is stale."""
    doc = yaml.safe_load(FIXTURE.read_text())
    benches = registry.discover()
    for bid, rec in doc["benchmarks"].items():
        if bid in benches:
            rec["source_hash"] = benches[bid].source_hash()
    return doc


@pytest.fixture
def write_results(tmp_path):
    """Write a results document (or raw text) to a file and return its path."""
    def write(doc, name="results.yaml"):
        path = tmp_path / name
        path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(copy.deepcopy(doc), sort_keys=False))
        return path
    return write
