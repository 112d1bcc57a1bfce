"""The steps' diagrams (slides/diagrams.py): drawn at the slide's size with legible text that stays
inside, from the constants and plan the measured run recorded."""
import copy
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


def test_the_ring_and_its_roles_come_from_the_tile(fixture_doc):
    res = copy.deepcopy(fixture_doc["benchmarks"]["gemm.warp_specialized_deep"]["resources"])
    svg = draw("producer_ring", res)
    assert f"{res['tile']['STAGES']} stages × 48 KiB" in svg and "warpgroup 0: producer" in svg
    assert "warpgroup 2: consumer" in svg and "empty[" in svg
    res["tile"]["STAGES"] = 6
    assert "6 stages × 48 KiB" in draw("producer_ring", res) and "stage 5" in draw("producer_ring", res)


def test_the_cluster_shares_b_in_slices(fixture_doc):
    res = fixture_doc["benchmarks"]["gemm.cluster_multicast"]["resources"]
    svg = draw("multicast", res)
    assert "A cluster of 2 CTAs" in svg and "B slice 1: 32×128" in svg
    assert "in the cluster: A 16 + B 16 = 32 KiB" in svg and "33% fewer bytes" in svg


def test_the_persistent_schedule_follows_the_grid(fixture_doc):
    res = copy.deepcopy(fixture_doc["benchmarks"]["gemm.persistent"]["resources"])
    tiles = (4096 // 128) * (8192 // 256)
    svg = draw("tile_schedule", res)
    assert f"{tiles:,} ÷ 132 = {tiles / 132:.2f} waves" in svg and "the last runs 100 of 132 CTAs" in svg
    res.pop("resident_ctas")            # an older record: the grid says how many ran at once
    res["grid"] = [128]
    assert f"{tiles:,} ÷ 128 = 8.00 waves" in draw("tile_schedule", res)


def test_the_split_wave_draws_the_plan_it_ran(fixture_doc):
    res = copy.deepcopy(fixture_doc["benchmarks"]["gemm.split_wave"]["resources"])
    plan = res["split_wave"]
    svg = draw("split_tail", res)
    assert f"then {plan['left']} pairs split at K-tile {plan['split']} of {plan['k_tiles']}" in svg
    assert f"{plan['helpers']} helpers: K-tiles {plan['split']}–{plan['k_tiles'] - 1}" in svg
    res["split_wave"] = {**plan, "left": 0}
    assert "No last wave to split" in draw("split_tail", res)
    del res["split_wave"]
    assert "No last wave to split" in draw("split_tail", res)


def test_the_epilogue_follows_its_chunks_and_buffers(fixture_doc):
    res = copy.deepcopy(fixture_doc["benchmarks"]["gemm.tma_store"]["resources"])
    svg = draw("staged_store", res)
    assert "leave in 8 chunks of 64×32" in svg and "TMA store, buffer 1" in svg
    res["tile"].update(EPILOGUE_N=64, EPILOGUE_BUFFERS=3)
    svg = draw("staged_store", res)
    assert "leave in 4 chunks of 64×64" in svg and "TMA store, buffer 2" in svg
