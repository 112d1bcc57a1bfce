"""The generated deck builds with Slidev and exports to a PDF in a real Chromium,
one page per slide. Needs node_modules (npm ci) and Debian's chromium."""
import functools
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

import build
from tests.conftest import ROOT
from tests.test_build import headings

pytestmark = pytest.mark.slidev     # under pytest-xdist, --dist loadfile keeps them on one worker: they share builds
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
SLIDEV = ROOT / "node_modules" / ".bin" / "slidev"
# Vue's interpolation, an HTML element with a handler, Markdown, MDC's attributes (a class whose
# animation would fire a handler) and KaTeX: the title slide shows them as typed
HOSTILE = ("{{ 7*7 }} <img src=x onerror=\"document.title='pwned'\"> **not bold** | a cell "
           "x{.animate-spin onanimationstart=alert(1)} ${1+1}$")


@pytest.fixture(scope="session")
def deck_dir(tmp_path_factory):
    """The deck built from the fixture, in a folder inside the repository so that
    Slidev resolves its packages from the repository's node_modules. One worker builds it (--dist
    loadfile): Slidev's PDF server takes a fixed port (12445), so two `--download` builds at once
    collide (pytest 9 ignores xdist 3.8's --dist loadgroup, which split these across workers)."""
    if not SLIDEV.exists():
        pytest.fail("node_modules/.bin/slidev is missing: run `PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci` first")
    out = ROOT / ".deck-test"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    import yaml
    from tests.conftest import fixture_doc_copy
    from tests.test_compare import other_gpu
    from tests.test_hostile import hostile_doc
    folder = tmp_path_factory.mktemp("results")
    other = folder / "other.yaml"                                # so that the comparison section is exported too
    other.write_text(yaml.safe_dump(other_gpu(fixture_doc_copy()), sort_keys=False))
    mine = folder / "hostile.yaml"                               # data that looks like markup, shown as text
    doc = hostile_doc(fixture_doc_copy(), HOSTILE)
    mine.write_text(yaml.safe_dump(doc, sort_keys=False))
    from tests.conftest import node_docs_copy                     # and the multi-GPU section: nodes of 2 to 8 GPUs
    nodes = []                                                   # (tests/make_node_fixtures.py), each under this GPU
    for n, node in node_docs_copy().items():
        node["device"]["slug"] = doc["device"]["slug"]
        nodes.append(folder / f"hostile-x{n}.yaml")
        nodes[-1].write_text(yaml.safe_dump(node, sort_keys=False))
    assert build.main(["--results", str(mine), "--out-dir", str(out), "--compare", str(other),
                       "--node", *map(str, nodes)]) == 0
    yield out
    shutil.rmtree(out, ignore_errors=True)


def _slidev(*args, cwd):
    proc = subprocess.run([str(SLIDEV), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="session")
def site(deck_dir):
    """The deck built as `npm run build` builds it (package.json's build script, which finds Chromium
    itself: $CHROMIUM here): a static site."""
    script = shlex.split(json.loads((ROOT / "package.json").read_text())["scripts"]["build"])
    assert script[:4] == ["node", "scripts/with-chromium.mjs", "build", "--download"], script
    proc = subprocess.run([shutil.which("node"), str(ROOT / script[1]), "build", "slides.md", *script[3:], "--out",
                           str(deck_dir / "dist")], cwd=deck_dir, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return deck_dir / "dist"


def test_the_build_says_in_one_line_when_it_finds_no_chromium(tmp_path):
    proc = subprocess.run([shutil.which("node"), str(ROOT / "scripts" / "with-chromium.mjs"), "build"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "CHROMIUM": str(tmp_path / "none")})
    assert proc.returncode == 1 and proc.stderr == f"with-chromium: CHROMIUM={tmp_path / 'none'} does not exist\n"


def test_npm_run_build_makes_a_hostable_site_with_the_pdf(site):
    assert (site / "index.html").exists()
    pdfs = list(site.glob("*.pdf"))
    assert [p.name for p in pdfs] == ["gpu-perf-study.pdf"] and pdfs[0].stat().st_size > 100_000, pdfs
    head = (site / "index.html").read_text()
    description = re.search(r'<meta property="og:description" content="([^"]*)"', head).group(1)
    assert description.startswith("Micro-benchmarks and a GEMM") and description.endswith("${1+1}$."), description  # unquoted
    export = json.loads((ROOT / "package.json").read_text())["scripts"]["export"]
    assert export == "npm run build && cp dist/gpu-perf-study.pdf gpu-perf-study.pdf"    # the handout is this PDF


class _Site(http.server.SimpleHTTPRequestHandler):
    """A plain static host, as python -m http.server is: no route rewriting (the deck routes in the hash)."""
    def log_message(self, *args):
        pass


def _assert_every_slide_fits(site: Path, slides_md: Path, clicks: bool = True) -> None:
    """Each slide opened in Chromium at Slidev's 980 x 552 canvas: no text or image past its edges,
    no code block that scrolls or clips (tests/deck_check.mjs); ``clicks``: in every click state too."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Site, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run([shutil.which("node"), str(ROOT / "tests" / "deck_check.mjs"),
                               f"http://127.0.0.1:{server.server_address[1]}", str(len(headings(slides_md.read_text()))),
                               CHROMIUM, *([] if clicks else ["first"])], cwd=ROOT, capture_output=True, text=True, timeout=600)
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-3000:]
    walked = json.loads(proc.stdout)
    problems = walked["problems"]
    assert not problems, "\n".join(f"slide {p['slide']}{'.' + str(p['click']) if 'click' in p else ''} ({p['title']}): "
                                    f"{p['what']}" for p in problems)
    # every click the speaker's notes mark was walked, each state checked like a slide's first
    assert walked["clicked"] >= slides_md.read_text().count("[click]") if clicks else not walked["clicked"], walked["clicked"]


def test_a_plain_static_host_serves_a_slide_and_the_presenter_view_by_url(site, deck_dir):
    """dist/ as python -m http.server serves it: slide 10 and the presenter view, with the first
    slide's notes, open by their URLs (the deck routes in the URL's hash)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Site, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        proc = subprocess.run([shutil.which("node"), str(ROOT / "tests" / "presenter_check.mjs"),
                               f"http://127.0.0.1:{server.server_address[1]}", "10", CHROMIUM],
                              cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        server.shutdown()
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    first_notes = re.search(r"<!--\s*(.*?)\s*-->", (deck_dir / "slides.md").read_text().split("\n---\n", 2)[1], re.S)
    assert seen["slide"] and seen["notes"][:40] == " ".join(first_notes.group(1).split())[:40], seen


def test_every_slide_fits_on_the_canvas_in_chromium(site, deck_dir):
    _assert_every_slide_fits(site, deck_dir / "slides.md")


def test_pdf_export_has_one_page_per_slide(site, deck_dir):
    """The handout (npm run build's PDF, printed from the static site): a page per slide, each
    with its text, the hostile strings shown as typed, every code slide's last line on its page."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) or set CHROMIUM")
    pdf = site / "gpu-perf-study.pdf"
    from pypdf import PdfReader     # a test extra: `pytest -m gpu` collects without it
    titles = headings((deck_dir / "slides.md").read_text())
    pages = PdfReader(pdf).pages
    assert "What Differs, and Why" in titles and "NCCL Beside nccl-tests" in titles and len(pages) == len(titles)
    unloaded = [title for title, page in zip(titles, pages)
                if not page.extract_text().strip() or "Loading slide" in page.extract_text()]
    assert not unloaded, f"printed before these slides had loaded: {unloaded}"
    title_page = " ".join(pages[0].extract_text().split())
    assert HOSTILE in title_page and "GPU 49" not in title_page
    # each code slide's last line is on its page: nothing cut off below the slide's edge
    from tests.test_build import slides_of
    slides = slides_of((deck_dir / "slides.md").read_text())
    for title, page in zip(titles, pages):
        if "— Code" not in title:
            continue
        blocks = re.findall(r"```\w+(?: \{[^}\n]*\})?\n(.*?)\n```", slides[title], flags=re.S)   # {*|3-5}: lit by click
        if blocks:
            code = blocks[-1].splitlines()
        else:
            source = re.search(r"<<< (\S+)#kernel", slides[title]).group(1)
            lines = (deck_dir / source).read_text().splitlines()       # the snippet path is relative to the deck
            marks = [k for k, line in enumerate(lines) if "#region kernel" in line or "#endregion kernel" in line]
            code = lines[marks[0] + 1:marks[1]]
        # (spaces aside: a magic-move's tokens print apart, "copy ( tCrC , tCgC );")
        last = "".join([line for line in code if line.strip()][-1].split())
        assert last in "".join(page.extract_text().split()), (title, last)


@pytest.mark.parametrize("results", ["nvidia-h100-80gb-hbm3.yaml", "nvidia-h200.yaml"])
def test_the_committed_decks_fit_on_the_canvas_in_chromium(results):
    """The decks of the committed results, each beside the other and its node's section, in Chromium:
    each slide as it opens. What clicks reveal (the code walk's steps from kernels/, the same in every
    deck; a diagram's layers, drawn at its size over it) is walked click by click in the fixture's deck."""
    out = ROOT / f".deck-test-{Path(results).stem}"
    shutil.rmtree(out, ignore_errors=True)
    try:
        assert build.main(["--results", str(ROOT / "results" / results), "--out-dir", str(out)]) == 0
        _slidev("build", "slides.md", "--out", str(out / "dist"), cwd=out)
        _assert_every_slide_fits(out / "dist", out / "slides.md", clicks=False)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_the_checked_deck_holds_every_node_size_up_to_eight_gpus(deck_dir):
    """The deck every slide of which is checked in Chromium (test_every_slide_fits_on_the_canvas_in_chromium)
    holds the node fixtures of every size: the section's slides, drawing and listing every GPU and pair
    of 8 and setting the sizes side by side, fit as a 2-GPU node's do."""
    from tests.conftest import NODE_FIXTURES
    titles = headings((deck_dir / "slides.md").read_text())
    assert max(NODE_FIXTURES) == 8 and "NCCL Across Node Sizes" in titles and "NCCL Beside nccl-tests" in titles
    assert "8 GPUs" in (deck_dir / "slides.md").read_text()
