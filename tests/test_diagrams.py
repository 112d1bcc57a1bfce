"""The steps' diagrams (slides/diagrams.py): one kind for each step the catalogue names, and those
past the reference deck drawn at the slide's size with legible text that stays inside (their
content: tests/test_step_diagrams.py)."""
import re
import xml.etree.ElementTree as ET

import pytest

from bench import catalogue
from slides import diagrams
from slides.kit import text_width

SHAPE = {"m": 4096, "n": 8192, "k": 16384}
# the steps past the reference deck: each draws its own idea from its best kernel's resources
BEYOND = {step.diagram: step.best.id for step in catalogue.STEPS if step.beyond}


def draw(kind: str, resources: dict) -> str:
    return diagrams.DIAGRAMS[kind]({"best": {"resources": resources}}, SHAPE)


def texts(svg: str) -> list[tuple[float, float, float, str, str]]:
    """(x, y, font size, anchor, text) of every text element."""
    out = []
    for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text"):
        size = float(re.search(r"font-size:([\d.]+)px", t.get("style")).group(1))
        out.append((float(t.get("x")), float(t.get("y")), size, t.get("text-anchor", "start"), t.text or ""))
    return out


def test_every_step_past_the_reference_draws_its_own_idea():
    assert len(BEYOND) == sum(step.beyond for step in catalogue.STEPS)        # one kind each
    assert all(kind in diagrams.DIAGRAMS for kind in {step.diagram for step in catalogue.STEPS})


@pytest.mark.parametrize("kind", sorted(BEYOND))
def test_drawn_at_the_slides_size_with_text_inside_it(kind, fixture_doc):
    svg = draw(kind, fixture_doc["benchmarks"][BEYOND[kind]]["resources"])
    assert 'viewBox="0 0 860 400"' in svg
    for x, y, size, anchor, s in texts(svg):
        width = text_width(s, size)
        left = x - (width if anchor == "end" else width / 2 if anchor == "middle" else 0)
        assert size >= 11 and 0 <= left and left + width <= 860 and size <= y <= 400, (kind, s, x, y, size)
