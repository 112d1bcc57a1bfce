"""What a result was made from, as its record says it: the files whose content defines it and the
catalogue's kernels it ran (their definitions, by route: bench/gemm/catalogue.py's ``definitions``),
hashed into ``source_hash``. The measuring side hashes them when it registers a benchmark; the deck
hashes a record's again, from the files and the catalogue alone, to tell whether the code has
changed since it was measured."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


_READ: dict[Path, tuple[tuple, bytes]] = {}


def _content(path: Path) -> bytes:
    """The file's bytes, read again only when its size or time changed: a deck hashes the same
    twenty-odd sources for each of ~400 records."""
    try:
        st = path.stat()
    except OSError:
        return b"<missing>"
    key = (st.st_mtime_ns, st.st_size, st.st_ino)
    if path not in _READ or _READ[path][0] != key:
        _READ[path] = (key, path.read_bytes())
    return _READ[path][1]


def source_hash(sources, kernels: dict) -> str:
    """16 hex digits over each source's path and content (repository-relative, or absolute) and the
    kernels' definitions."""
    h = hashlib.sha256()
    for rel in sorted(sources):
        p = Path(rel) if Path(rel).is_absolute() else ROOT / rel
        h.update(rel.encode() + b"\0")
        h.update(_content(p))
    if kernels:
        h.update(json.dumps(kernels, sort_keys=True).encode())
    return h.hexdigest()[:16]


def provenance(sources, kernels: dict) -> dict:
    """The fields of a record that say what it was made from."""
    return {"source_hash": source_hash(sources, kernels), "sources": sorted(sources), "kernels": sorted(kernels)}
