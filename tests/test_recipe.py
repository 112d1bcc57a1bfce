"""CONTRIBUTING's recipes, followed in a copy of the repository: a GEMM step is its kernel file and
one catalogue entry, a deck section its template, its module and its line in the outline. The
copy's deck builds, the tests its change touches pass there (the catalogue's, the deck's, the step
diagrams', and every test generated for the new benchmarks), and no benchmark that existed before
changes its id, its role or its source hash."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

# What a copy of the repository reports of its benchmarks: every id with its source hash, and the roles.
REGISTRY = ("import json; from bench.gemm import catalogue; from bench.core import registry; "
            "print(json.dumps({'hashes': {b.id: b.source_hash() for b in registry.discover().values()}, "
            "'roles': catalogue.ROLES}))")
NEW_STEP = '''    Step(key="recipe_copy", title="Recipe Copy",
         technique="+ nothing: the last step's kernel again, added by CONTRIBUTING's recipe",
         source="kernels/gemm_{number}_recipe_copy.cu", function="gemm_recipe_copy",
         diagram="staged_store", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
         variants=(Variant("gemm.recipe_copy", "a copy", {tile}),),
         beyond=True, also_in=_BF16, focus={focus}, shown={shown}),
)
'''

# A section: its template (words and layout), its module (the numbers) and its line in the outline.
NEW_TEMPLATE = '''[% set r = recipe_note %]
# A Section Added by the Recipe

[% if r.gbps %]
cudaMemcpy copies **[[ r.gbps | num(0) ]] GB/s** on this GPU.
[% else %]
Not measured on this GPU.
[% endif %]

<!--
A section added by CONTRIBUTING's recipe: the copy bandwidth the HBM benchmark recorded.
[% if r.gbps %]cudaMemcpy copies [[ r.gbps | num(0) ]] GB/s here.[% else %]It is not measured on this GPU.[% endif %]
-->
'''
NEW_MODULE = '''"""A section added by CONTRIBUTING's recipe."""
from __future__ import annotations

from dataclasses import dataclass

from slides.records import Context


@dataclass(frozen=True)
class RecipeNote(Context):
    """The copy bandwidth the HBM benchmark recorded (None: not measured)."""
    gbps: float | None


def context(deck) -> RecipeNote:
    (rec,) = deck.need("A Section Added by the Recipe", "hbm.copy_scaling")
    return RecipeNote(gbps=rec["record"]["memcpy"]["gbps"] if rec["measured"] and not rec["failed"] else None)
'''


def _copy_of_the_repository(to):
    """The working tree as git sees it (tracked files and new ones it does not ignore), with no
    build products: what a contributor starts from."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (to / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, to / rel)


def _run(args, cwd, timeout=900):
    """``args`` in the copy, as a contributor runs them: not as a worker of this run's pytest-xdist."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.long
def test_a_step_and_a_section_added_by_the_recipes_build_and_the_suite_stays_green(tmp_path):
    repo = tmp_path / "repo"
    _copy_of_the_repository(repo)
    before = json.loads(_run([sys.executable, "-c", REGISTRY], repo).stdout)

    from bench.gemm import catalogue
    last = catalogue.STEPS[-1]
    # 1. the kernel: a copy of the last step's file under a new name and function
    code = (ROOT / last.source).read_text().replace(f"{last.function}(", "gemm_recipe_copy(")
    (repo / "kernels" / f"gemm_{len(catalogue.STEPS) + 1}_recipe_copy.cu").write_text(code)
    # 2. one catalogue entry, appended to STEPS
    cat = repo / "bench" / "gemm" / "catalogue.py"
    text = cat.read_text()
    end = re.search(r"^\)\n\n# The BF16 track", text, flags=re.M)
    assert end, "STEPS no longer ends where the recipe expects"
    entry = NEW_STEP.format(tile=repr(last.best.tile), focus=repr(last.focus), shown=repr(last.shown), number=len(catalogue.STEPS) + 1)
    cat.write_text(text[:end.start()] + entry + text[end.start() + 2:])
    # 3. a section: its template, its module, its line in the outline (before the appendix)
    (repo / "slides" / "recipe_note.md.j2").write_text(NEW_TEMPLATE)
    (repo / "slides" / "recipe_note.py").write_text(NEW_MODULE)
    outline = repo / "slides" / "outline.py"
    outline.write_text(outline.read_text().replace('"transpose",', '"transpose", "recipe_note",'))

    after = json.loads(_run([sys.executable, "-c", REGISTRY], repo).stdout)
    assert after["roles"] == before["roles"]
    # every record keeps its hash but the GPU tests', which follow every kernel (the new one too)
    kept = {bid: h for bid, h in before["hashes"].items() if bid != "checks.gpu_tests"}
    assert {bid: after["hashes"][bid] for bid in kept} == kept
    # the step, its sweep, and its BF16 twin (CONTRIBUTING: a Hopper step is on the BF16 track too)
    assert set(after["hashes"]) - set(before["hashes"]) == {"gemm.recipe_copy", "sweep.recipe_copy", "gemm.recipe_copy_bf16"}

    built = _run([sys.executable, "build.py", "--no-compare"], repo)
    assert built.returncode == 0, built.stderr
    deck = (repo / "slides.md").read_text()
    assert f"# Kernel {len(catalogue.STEPS) + 1}: Recipe Copy — Code" in deck and "# A Section Added by the Recipe" in deck
    assert "gemm.recipe_copy" in built.stdout                      # listed as not measured, with its sweep
    # the tests the change touches: those over the catalogue, the templates and the outline, and those
    # the registry generates for each new benchmark; the rest of the suite is the same code as here
    new = sorted(set(after["hashes"]) - set(before["hashes"]))
    touched = ["tests/test_catalogue.py", "tests/test_build.py", "tests/test_step_diagrams.py",
               *(f"tests/test_any_run.py::test_the_deck_builds_without_any_one_record[{bid}]" for bid in new)]
    suite = _run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m",
                  "not gpu and not slidev and not nvcc and not timed", *touched], repo, timeout=900)
    assert suite.returncode == 0, suite.stdout[-4000:]
    passed = re.search(r"(\d+) passed", suite.stdout)
    assert passed and int(passed.group(1)) > len(new), suite.stdout[-2000:]     # the files ran, not only the new ids
