"""The slide sections' structure: each reads another by importing it, so the import graph of slides/
is the sections' real dependencies, and it has no cycle; only build.py and the tests assemble a deck."""
import ast
import dataclasses
import graphlib
from pathlib import Path

from slides.deck import Deck, section_module
from slides.outline import SECTIONS
from slides.records import Context

SLIDES = Path(__file__).resolve().parent.parent / "slides"


def _imports(path: Path) -> set[str]:
    """The modules of slides/ that ``path`` imports, by name."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("slides.")}
        elif isinstance(node, ast.ImportFrom) and node.module == "slides":
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("slides."):
            found.add(node.module.split(".")[1])
    return found - {path.stem}


def graph() -> dict[str, set[str]]:
    return {p.stem: _imports(p) for p in SLIDES.glob("*.py")}


def test_the_import_graph_of_slides_has_no_cycle():
    graphlib.TopologicalSorter(graph()).prepare()       # raises CycleError naming the cycle


def test_no_section_imports_the_deck_that_assembles_them():
    assert [name for name, deps in graph().items() if "deck" in deps] == []


def test_a_section_reads_another_through_its_module_not_a_string_key():
    """``deck.of(slides.gemm)``, never ``deck["gemm"]``: no subscript of a name ``deck``."""
    keyed = [f"{p.name}:{node.lineno}" for p in SLIDES.glob("*.py") for node in ast.walk(ast.parse(p.read_text()))
             if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "deck"]
    assert keyed == []


def test_every_section_context_is_a_frozen_dataclass(fixture_doc):
    """Typed contexts: what a template sees is a frozen Context dataclass, or None where a section has
    nothing to show (no other GPU to compare with)."""
    deck = Deck(fixture_doc)
    for name in SECTIONS:
        module = section_module(name)
        if hasattr(module, "context"):
            ctx = deck.of(module)
            assert ctx is None or isinstance(ctx, Context) and dataclasses.is_dataclass(ctx), name
            assert ctx is None or type(ctx).__dataclass_params__.frozen, name
