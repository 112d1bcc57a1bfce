"""The results schema as a document, written from the specs the loader checks (``RECORDS`` and
``NODE`` in bench/core/schema.py), so that it is written once: ``python -m bench.core.schema_doc``
prints docs/results-schema.md, and a test holds the committed page equal to it."""
from __future__ import annotations

from . import schema

INTRO = """# The results file: what the deck reads

Generated from `RECORDS` and `NODE` in `bench/core/schema.py` by `python -m bench.core.schema_doc`
(a test keeps this page equal to its output): edit the specs, then run that command into this file.
The file's layout, the fields every record carries and the loader's limits are in that module's
docstring.

A record whose `status` is `ok` must hold these fields, by the first id prefix that matches its id;
a field marked *optional* may be absent, and "> 0" marks a number the deck divides by or takes a
logarithm of. Anything else a record holds is kept and not
read.
"""


def _leaf(spec) -> str:
    if isinstance(spec, schema.Exactly):
        return f"{schema.spec_name(spec)}, each {_leaf(spec.spec)}"
    return schema.spec_name(spec)


def _lines(spec: dict, depth: int) -> list[str]:
    """A mapping spec's fields as nested Markdown bullets, ``depth`` levels in."""
    pad, out = "  " * depth, []
    for key, value in spec.items():
        name, note = (key[:-1], " *(optional)*") if key.endswith("?") else (key, "")
        item = value[0] if isinstance(value, list) else None
        if isinstance(value, dict) or isinstance(item, dict):
            out.append(f"{pad}- `{name}`{note}: " + ("a list of at least one, each" if item else "a mapping of"))
            out += _lines(item or value, depth + 1)
        elif isinstance(value, list):
            out.append(f"{pad}- `{name}`{note}: a list of at least one, each {_leaf(item)}")
        else:
            out.append(f"{pad}- `{name}`{note}: {_leaf(value)}")
    return out


def describe() -> str:
    parts = [INTRO]
    for prefix, spec in schema.RECORDS.items():
        whole = not prefix.endswith((".", "_"))
        parts.append(f"## `{prefix}`" + ("" if whole else " (every id that starts so)") + "\n\n" + "\n".join(_lines(spec, 0)) + "\n")
    parts.append("## A node's file: `node`\n\nIn `results/<gpu-slug>-x<N>.yaml` only, beside `device` and `benchmarks`.\n\n"
                 + "\n".join(_lines(schema.NODE, 0)) + "\n")
    return "\n".join(parts)


if __name__ == "__main__":
    print(describe(), end="")
