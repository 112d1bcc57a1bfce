"""The diagrams of the steps past the reference deck (slides/step_diagrams.py), drawn from the fixture's
recorded resources (the H100's): at the slide's size, with legible text that stays inside and apart, showing the
recorded numbers, and drawing a changed or missing field without failing."""
import copy
import itertools
import re
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from bench.gemm import catalogue
from slides import diagrams, step_diagrams
from tests.conftest import _fixture_results

SHAPE = {"m": 4096, "n": 8192, "k": 16384}
# the steps past the reference deck, by the kind of diagram each names: the best kernel of the first
# step of each kind that the fixture holds a record of
BEYOND = {}
for _step in catalogue.STEPS:
    if _step.beyond and _step.best.id in _fixture_results()["benchmarks"]:
        BEYOND.setdefault(_step.diagram, _step.best.id)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def recorded() -> dict:
    doc = _fixture_results()
    return {kind: doc["benchmarks"][bid]["resources"] for kind, bid in BEYOND.items()}


def resources(recorded, kind: str) -> dict:
    return copy.deepcopy(recorded[kind])


def a_step(best: dict) -> SimpleNamespace:
    """What a diagram reads of a GEMM step (slides.gemm.Step): its best kernel, its title, no step before."""
    return SimpleNamespace(best=best, title="This step", loop_before=None)


def draw(kind: str, res: dict, shape: dict = SHAPE) -> str:
    """The diagram as its last click shows it: a figure in layers, each drawn over the one before."""
    drawn = step_diagrams.IDEAS[kind](a_step({"resources": res}), shape)
    if isinstance(drawn, str):
        return drawn
    base = ET.fromstring(drawn[0])
    for layer in drawn[1:]:
        base.extend(ET.fromstring(layer))
    return ET.tostring(base, encoding="unicode")


def texts(svg: str) -> list[tuple[float, float, float, str, str]]:
    """(x, y, font size, anchor, text) of every text element."""
    out = []
    for t in ET.fromstring(svg).iter(f"{SVG}text"):
        size = float(re.search(r"font-size:([\d.]+)px", t.get("style")).group(1))
        out.append((float(t.get("x")), float(t.get("y")), size, t.get("text-anchor", "start"), t.text or ""))
    return out


def extent(x, y, size, anchor, s) -> tuple[float, float, float, float]:
    """The box a text is about to take: its estimated width, from cap height to descender."""
    width = 0.58 * size * len(s)
    left = x - (width if anchor == "end" else width / 2 if anchor == "middle" else 0)
    return left, left + width, y - 0.75 * size, y + 0.2 * size


def shown(svg: str) -> str:
    return "\n".join(t[-1] for t in texts(svg))


def check_legible(svg: str):
    root = ET.fromstring(svg)
    assert root.get("viewBox") == "0 0 860 400"
    boxes = []
    for x, y, size, anchor, s in texts(svg):
        left, right, top, bottom = extent(x, y, size, anchor, s)
        assert size >= 11, (s, size)
        assert 0 <= left and right <= 860 and 0 <= top and y <= 400, (s, x, y)
        boxes.append((left, right, top, bottom, s))
    for a, b in itertools.combinations(boxes, 2):
        overlap_x = min(a[1], b[1]) - max(a[0], b[0])
        overlap_y = min(a[3], b[3]) - max(a[2], b[2])
        assert overlap_x <= 1 or overlap_y <= 1, (a[4], b[4])
    # a picture with a few labels, not a wall of text: few sentences, at most three caption lines
    assert len([s for *_, s in boxes if len(s.split()) >= 5]) <= 12
    assert len([top for _, _, top, _, _ in boxes if top >= 340]) <= 3


def legible(kind: str, res: dict, *shape) -> str:
    """A diagram drawn from ``res``, checked legible: its text as shown."""
    svg = draw(kind, res, *shape)
    check_legible(svg)
    return shown(svg)


def test_every_step_past_the_reference_is_drawn():
    assert set(step_diagrams.IDEAS) == set(BEYOND) == {s.diagram for s in catalogue.STEPS if s.beyond}
    assert all(step.diagram in diagrams.DIAGRAMS for step in catalogue.STEPS)    # every step has its kind


@pytest.mark.parametrize("kind", sorted(BEYOND))
def test_drawn_at_the_slides_size_with_legible_text_inside(kind, recorded, fixture_doc):
    check_legible(draw(kind, resources(recorded, kind)))
    check_legible(draw(kind, fixture_doc["benchmarks"][BEYOND[kind]]["resources"]))     # the fixture's too


def test_the_ring_follows_the_stages(recorded):
    res = resources(recorded, "producer_ring")
    svg = shown(draw("producer_ring", res))
    assert "4 stages × 48 KiB shared memory" in svg and "384 threads" in svg
    assert "warpgroup 0: producer" in svg and "warpgroups 1–2: consumers" in svg and "64×256" in svg
    assert "stage 3" in svg and "stage 4" not in svg and "Load k + 4" in svg
    res["tile"]["STAGES"] = 6
    svg = legible("producer_ring", res)
    assert "6 stages × 48 KiB" in svg and "stage 5" in svg and "Load k + 6" in svg


def test_the_cluster_splits_b_by_its_tma_box(recorded):
    res = resources(recorded, "multicast")
    svg = shown(draw("multicast", res))
    assert "Cluster of 2 CTAs" in svg and "2 slices of 32×128" in svg and "TMA box 32×128" in svg
    assert "48 KiB" in svg and "32 KiB" in svg and "33% fewer L2 bytes" in svg
    res["tile"]["CLUSTER_M"] = 4
    res["tma"]["b"]["box"] = [32, 64]
    svg = legible("multicast", res)
    assert "4 slices of 32×64" in svg and "CTA 3" in svg and "24 KiB" in svg


def test_the_persistent_schedule_follows_the_resident_ctas(recorded):
    res = resources(recorded, "tile_schedule")
    svg = shown(draw("tile_schedule", res))
    assert "132 CTAs" in svg and "1,024 tiles ÷ 132 CTAs" in svg and "= 7.76 waves" in svg
    assert "the last runs 100 of 132 CTAs" in svg and "CTA 99" in svg and "32 SMs idle" in svg
    res["resident_ctas"] = 128
    svg = legible("tile_schedule", res)
    assert "= 8.00 waves" in svg and "the last runs 128 of 128 CTAs" in svg
    assert "idle" not in svg


def test_the_split_wave_draws_the_recorded_plan(recorded):
    res = resources(recorded, "split_tail")
    plan = res["split_wave"]
    svg = shown(draw("split_tail", res))
    assert f"Split at K-tile {plan['split']} of {plan['k_tiles']}" in svg
    assert f"{plan['left']} owners: K-tiles 0–{plan['split'] - 1}" in svg
    assert f"{plan['helpers']} helpers: {plan['split']}–{plan['k_tiles'] - 1}" in svg
    assert f"{plan['full_waves']} full waves" in svg and "last wave: 410 of 512" in svg
    res["split_wave"] = {**plan, "left": 10, "helpers": 56, "rounds": 1, "split": 256}
    svg = legible("split_tail", res)
    assert "Split at K-tile 256 of 512" in svg and "50% shorter" in svg
    res["split_wave"] = {**plan, "left": 0, "helpers": 66, "rounds": 0, "split": 512}
    svg = legible("split_tail", res)
    assert "no last wave to split" in svg
    # a plan that charges each tail for its partial sums draws the charge, and its owners finish last
    from bench.gemm.plan import split_wave
    res["split_wave"] = charged = split_wave(plan["units"], plan["clusters"], plan["k_tiles"])
    svg = legible("split_tail", res)
    fixup = charged["fixup_k_tiles"]
    assert f"+ {fixup} K-tiles a run: its sums" in svg and f"runs of {charged['k_tiles'] - charged['split']} + {fixup} for its sums" in svg
    assert f"last wave: {charged['split']} of {charged['k_tiles']}" in svg


def test_the_epilogue_follows_its_chunks_and_buffers(recorded):
    res = resources(recorded, "staged_store")
    svg = shown(draw("staged_store", res))
    assert "8 chunks of 64×32" in svg and "8 chunks of 32 columns" in svg
    assert "2 staging buffers (32 KiB a CTA)" in svg and "TMA, buffer 1" in svg and "buffer j mod 2" in svg
    res["tile"].update(EPILOGUE_N=64, EPILOGUE_BUFFERS=3)
    res["smem_static_bytes"] = 3 * 128 * 64 * 4
    svg = legible("staged_store", res)
    assert "4 chunks of 64×64" in svg and "TMA, buffer 2" in svg and "96 KiB" in svg


@pytest.mark.parametrize("kind", sorted(BEYOND))
def test_optional_fields_may_be_missing(kind, recorded):
    res = resources(recorded, kind)
    for field in ("split_wave", "resident_ctas", "tma", "smem_static_bytes"):
        res.pop(field, None)
    svg = legible(kind, res)
    if kind == "split_tail":        # no plan recorded: the last wave its grid implies, drawn unsplit
        assert "50 clusters: a whole unit" in svg and "No split plan recorded" in svg


@pytest.mark.parametrize("kind", sorted(BEYOND))
def test_another_shape_draws_its_own_numbers(kind, recorded):
    svg = legible(kind, resources(recorded, kind), {"m": 8192, "n": 8192, "k": 8192})
    if kind == "tile_schedule":
        assert "2,048 tiles ÷ 132 CTAs" in svg


def test_the_lean_loop_sets_its_main_loop_beside_the_step_before():
    """Instructions per K-tile of both main loops, from their records' SASS counts, and the change
    in percent, fewer or more as the counts say."""
    doc = _fixture_results()["benchmarks"]
    lean = next(s for s in catalogue.STEPS if s.diagram == "lean_loop")
    before = catalogue.before(lean.best.id)

    def step(counts):
        variants = []
        for bid, n in zip((before, lean.best.id), counts):
            res = copy.deepcopy(doc[bid]["resources"])
            res["sass"]["main_loop"] = {"instructions": n, "mma": 8}
            variants.append({"resources": res, "clock_mhz": 1400.0})
        return SimpleNamespace(title=lean.title, best=variants[1], loop_before={"title": "Before", "variant": variants[0]})

    per_tile = lambda n: n * 4 / 8          # 8 wgmmas in the loop, 4 a K-tile
    svg = step_diagrams.lean_loop(step((145, 96)), SHAPE)
    assert f"{per_tile(145):g} a K-tile" in shown(svg) and f"{per_tile(96):g} a K-tile" in shown(svg)
    assert f"{100 * (1 - 96 / 145):.0f}% fewer instructions per K-tile" in shown(svg)
    assert f"{100 * (120 / 96 - 1):.0f}% more instructions" in shown(step_diagrams.lean_loop(step((96, 120)), SHAPE))


@pytest.mark.parametrize("kind", sorted(step_diagrams.REVEALS))
def test_a_diagram_in_layers_has_a_sentence_for_each_click(recorded, kind):
    """Every layer after the first is one click, which the notes speak to (REVEALS); the layers are
    the same size, and only the first paints a background (the others lie over it)."""
    drawn = step_diagrams.IDEAS[kind](a_step({"resources": resources(recorded, kind)}), SHAPE)
    assert len(drawn) == 1 + len(step_diagrams.REVEALS[kind])
    roots = [ET.fromstring(svg) for svg in drawn]
    assert len({r.get("viewBox") for r in roots}) == 1
    backgrounds = [any(e.get("fill") == "white" and e.get("x") in ("0", None) and e.get("width") == r.get("width").replace("px", "")
                       for e in r.iter(f"{SVG}rect")) for r in roots]
    assert backgrounds == [True] + [False] * len(step_diagrams.REVEALS[kind])

def stream_k_cell(precision: str, m: int, n: int, k: int, sm_count: int = 132) -> dict:
    """What slides/atlas.py hands stream_k_diagram for an atlas cell: stream-K's tile there and the plan
    its launcher computes (bench/gemm/launch.py), on the clusters that fit the SMs."""
    from bench.gemm import plan
    step = next(s for s in catalogue.SHAPE_STEPS if s.precision == precision)
    tile = catalogue.tile_for(step, m, n, k, sm_count)
    runs = plan.stream_k(plan.ctas(tile, m, n) // tile["CLUSTER_M"], sm_count // tile["CLUSTER_M"], -(-k // tile["BK"]))
    return {"precision": precision.upper(), "shape": [m, n, k], "tile": tile, "plan": runs,
            **step_diagrams.stream_k_runs(runs)}


def test_stream_k_pieces_are_the_runs_cut_where_a_tile_ends():
    """Each tile's pieces cover its K-tiles once, in K order; a tile is cut where a run starts inside
    it, so the tiles of more than one piece are the plan's split units."""
    for shape in ((64, 6144, 4096), (512, 2112, 7168), (256, 24576, 1536)):
        cell = stream_k_cell("bf16", *shape)
        runs, pieces = cell["plan"], cell["pieces"]
        assert len(pieces) == runs["units"]
        for unit in pieces:
            assert [k0 for _, k0, _ in unit] == [0, *(k1 for _, _, k1 in unit[:-1])] and unit[-1][2] == runs["k_tiles"]
            assert [c for c, _, _ in unit] == sorted({c for c, _, _ in unit})     # one piece a cluster, in cluster order
        assert sum(len(unit) > 1 for unit in pieces) == runs["split_units"]


@pytest.mark.parametrize("precision", ["tf32", "bf16"])
def test_stream_k_draws_every_atlas_cell_it_runs_legibly_with_its_plan(precision):
    from bench.gemm import atlas
    for _, _, n, k in atlas.PROJECTIONS:
        for m in atlas.MS:
            if catalogue.kernel_for(catalogue.HEADLINES[precision], m, n, k, 132) not in {s.best.id for s in catalogue.SHAPE_STEPS}:
                continue
            cell = stream_k_cell(precision, m, n, k)
            runs, tile = cell["plan"], cell["tile"]
            svg = step_diagrams.stream_k_diagram(cell)
            check_legible(svg)
            lo, hi = runs["run_k_tiles"]
            cluster = f" ({tile['CLUSTER_M']}-CTA clusters)" if tile["CLUSTER_M"] > 1 else ""
            assert (f"{m}×{n}×{k}: {runs['units']} tiles of {tile['BM'] * tile['CLUSTER_M']}×{tile['BN']}{cluster}, "
                    f"{runs['k_tiles']} K-tiles each, on {runs['clusters']} clusters") in shown(svg)
            assert f"every run: {lo}–{hi} K-tiles" in shown(svg)
            assert f"{runs['split_units']} of {runs['units']} tiles cut between runs" in shown(svg)


@pytest.mark.parametrize("stages", [3, 4, 6])
def test_ping_pong_draws_its_tile_and_ring_legibly(stages):
    """Ping-pong consumers' diagram (slides/atlas.py draws it from its record's tile): legible at the
    slide's size, its tile, its staging buffers a warpgroup and its ring's stages written as recorded."""
    tile = {**catalogue.PINGPONG_BF16.best.tile, "STAGES": stages}
    svg = step_diagrams.pingpong_diagram(tile)
    check_legible(svg)
    said = shown(svg)
    assert f"each warpgroup a whole {tile['BM']}×{tile['BN']} tile" in said
    assert f"{tile['EPILOGUE_BUFFERS'] // 2} buffers of its own" in said and f"{stages} stages" in said
