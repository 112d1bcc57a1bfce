"""README's first screen and the docs/ pages it links: every link leads to a file, and the picture is
the one the committed H100 results draw today."""
import contextlib
import io
import re

import build
from tests.conftest import ROOT


def test_every_link_of_the_readme_and_the_docs_leads_to_a_file():
    for page in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+)\)", page.read_text()):
            if not target.startswith("http"):
                assert (page.parent / target).exists(), (page.name, target)


def test_the_results_schema_page_is_written_from_the_specs_the_loader_checks():
    from bench.core import schema_doc
    assert (ROOT / "docs" / "results-schema.md").read_text() == schema_doc.describe(), \
        "RECORDS changed: python -m bench.core.schema_doc > docs/results-schema.md"
    # every family's spec has its section
    page = schema_doc.describe()
    assert all(f"## `{prefix}`" in page for prefix in schema_doc.schema.RECORDS)


def test_the_readmes_picture_is_the_committed_h100_decks_headline(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        assert build.main(["--results", str(build.DEFAULT_RESULTS), "--out-dir", str(tmp_path), "--no-compare"]) == 0
    (drawn,) = tmp_path.glob("svgs/*/climb_title.svg")
    assert drawn.read_text() == (ROOT / "docs" / "headline.svg").read_text(), \
        f"the H100 results changed the headline: cp {drawn.name} from a build's svgs/ folder to docs/headline.svg"
