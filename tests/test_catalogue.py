"""The step catalogue is the one place a GEMM step is declared, and the constants a kernel works
out for itself (the depth of its ring, its shared memory) are read back, not mirrored: checked on
the records the committed runs wrote."""
import ast
import re
from pathlib import Path

import pytest
import yaml

from bench import catalogue, registry

ROOT = Path(__file__).resolve().parent.parent
RESULTS = sorted(p for p in (ROOT / "results").glob("*.yaml") if not re.search(r"-x\d+\.yaml$", p.name))


def _step_of(text: str) -> str | None:
    """The step a string names: by its key, title, a kernel's id or its sweep's id."""
    return next((s.key for s in catalogue.STEPS
                 if text in {s.key, s.title, f"sweep.{s.key}", *(v.id for v in s.variants)}), None)


def _lists_of_steps(tree: ast.AST) -> list[list[str]]:
    """Literal lists, tuples, sets and dicts of strings that name three steps or more."""
    found = []
    for node in ast.walk(tree):
        items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", None)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)) and items:
            named = {_step_of(i.value) for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
            if len(named - {None}) >= 3:
                found.append(sorted(named - {None}))
    return found


PYTHON = [p for p in (*ROOT.glob("bench/*.py"), *ROOT.glob("slides/*.py"), ROOT / "build.py", *ROOT.glob("kernels/*.py"),
                      *ROOT.glob("tests/*.py")) if p.name != "catalogue.py"]


@pytest.mark.parametrize("path", PYTHON, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_list_of_steps_outside_the_catalogue(path):
    """Registrations, sweeps, the tuner, the deck and the tests read their steps from the catalogue:
    a literal list of steps anywhere else is a second registration that will drift."""
    assert not _lists_of_steps(ast.parse(path.read_text())), _lists_of_steps(ast.parse(path.read_text()))


def test_the_check_finds_a_list_of_steps():
    listed = ", ".join(repr(s.title) for s in catalogue.STEPS[:3])
    assert _lists_of_steps(ast.parse(f"STEPS = [{listed}]"))
    assert not _lists_of_steps(ast.parse(f"x = {catalogue.STEPS[0].title!r}"))


@pytest.mark.parametrize("path", sorted(ROOT.glob("slides/*.j2")), ids=lambda p: p.name)
def test_templates_name_no_steps(path):
    """Templates take their steps from the context; only the tuner's slide names the step it tunes."""
    text = path.read_text()
    named = [s.key for s in catalogue.STEPS if s.title in text or any(v.id in text for v in s.variants)]
    assert len(named) <= 1, named


def test_every_variant_is_registered_once_and_swept_once():
    benches = registry.discover()
    for step in catalogue.STEPS:
        for variant in step.variants:
            assert benches[variant.id].title == step.title_of(variant)
        sweep = benches[f"sweep.{step.key}"]
        assert sweep.definition == benches[step.best.id].definition   # the sweep runs the step's best kernel
    gemm_kernels = {bid for bid in benches if bid.startswith("gemm.") and not bid.startswith("gemm.cublas_")}
    assert gemm_kernels == set(catalogue.KERNELS)


def _records(path: Path):
    doc = yaml.safe_load(path.read_text())
    for bid, rec in doc["benchmarks"].items():
        tile = (rec.get("resources") or {}).get("tile")
        if bid in catalogue.KERNELS and rec["status"] == "ok" and tile and "STAGES" in tile:
            yield doc["device"], bid, rec["resources"], catalogue.variant(bid).tile


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_the_ring_read_back_is_the_catalogues_or_the_deepest_that_fits(path):
    """STAGES > 0: the kernel's RING_STAGES is the catalogue's. STAGES DEEPEST: the kernel worked
    the depth out from its own SharedStorage, and the ring it exported fills the shared memory it
    asked for, with no room on the GPU for one stage more."""
    checked = 0
    for device, bid, res, declared in _records(path):
        stages = res["tile"]["STAGES"]
        stage_bytes = (declared["BM"] + declared["BN"]) * declared["BK"] * catalogue.ELEMENT_BYTES[catalogue.step_of(bid).precision]
        assert stages * stage_bytes <= res["smem_dynamic_bytes"], bid
        if declared["STAGES"] == catalogue.DEEPEST:
            used = res["smem_dynamic_bytes"] + res["smem_static_bytes"]
            assert used <= device["smem_per_block_optin_bytes"] < used + stage_bytes, bid
            checked += 1
        else:
            assert stages == declared["STAGES"], bid
    assert checked, f"{path.name}: no kernel of the deepest ring recorded"
