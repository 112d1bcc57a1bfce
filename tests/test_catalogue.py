"""The step catalogue is the one place a GEMM step is declared, and the constants a kernel works
out for itself (the depth of its ring, its shared memory) are read back, not mirrored: checked on
the records the committed runs wrote."""
import ast
import re
from pathlib import Path

import pytest
import yaml

from bench.gemm import catalogue, benchmarks, plan
from bench.core import registry

ROOT = Path(__file__).resolve().parent.parent
RESULTS = sorted(p for p in (ROOT / "results").glob("*.yaml") if not re.search(r"-x\d+\.yaml$", p.name))


def _step_of(text: str) -> str | None:
    """The step a string names: by its key, title, a kernel's id or its sweep's id."""
    return next((s.key for s in catalogue.STEPS
                 if text in {s.key, s.title, s.sweep_id, *(v.id for v in s.variants)}), None)


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


PYTHON = [p for p in (*ROOT.glob("bench/**/*.py"), *ROOT.glob("slides/*.py"), ROOT / "build.py", *ROOT.glob("kernels/*.py"),
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


def test_each_role_is_a_kernel_of_the_catalogue_and_no_kernel_takes_two():
    assert set(catalogue.ROLES.values()) <= set(catalogue.KERNELS), "a role names no kernel"
    assert len(set(catalogue.ROLES.values())) == len(catalogue.ROLES), "one kernel in two roles"
    # each role's kernel is of the precision its name says
    for role, bid in catalogue.ROLES.items():
        precision = catalogue.KERNELS[bid][0].precision
        assert precision == ("bf16" if "bf16" in role else "fp8" if "fp8" in role or role == "block_scaled" else "tf32"), (role, bid)


def test_every_variant_is_registered_once_and_swept_once():
    benches = registry.discover()
    for step in catalogue.STEPS:
        for variant in step.variants:
            assert benches[variant.id].title == step.title_of(variant)
        sweep = benches[step.sweep_id]
        # the sweep runs the step's best kernel, whichever that is, and its small tile where the catalogue picks it
        [(route, kernel)] = sweep.kernels.items()
        assert route == f"best:{step.name}" and kernel == benches[step.best.id].kernels[step.best.id]
        assert kernel.get("small_tile") == step.small_tile
    gemm_kernels = {bid for bid in benches if bid.startswith("gemm.") and not bid.startswith("gemm.cublas_")}
    assert gemm_kernels == set(catalogue.KERNELS)


def test_each_kernel_is_timed_in_turns_with_the_best_of_the_step_before_on_its_track():
    benches = registry.discover()
    for name, track in catalogue.TRACKS.items():
        wider = catalogue.WIDER.get(name)
        # a narrower track starts against its first step on the wider one: the narrower type's gain
        first = track[0].best.id
        assert catalogue.before(first) == (f"{first.removesuffix('_' + name)}_{wider}" if wider else None)
        for previous, step in zip(track, track[1:]):
            for v in step.variants:         # every kernel of a step: one pair with the step before's best
                partner = step.against or previous.best.id
                assert catalogue.before(v.id) == partner
                # the pair's result depends on both kernels: a change to the one before stales it
                assert set(benchmarks.kernel_sources(catalogue.step_of(partner))) <= set(benches[v.id].sources)
                assert benches[v.id].kernels[f"before:{v.id}"]["id"] == partner


def test_the_small_tile_runs_only_where_the_best_leaves_most_sms_idle():
    step = catalogue.step_of(catalogue.HEADLINE)
    assert step.small_tile, "the headline has a tile for small shapes"
    sms = 132
    assert catalogue.tile_for(step, 1024, 1024, 1024, sms) == step.tiles[1]          # 32 CTAs of 128 x 256
    assert catalogue.tile_for(step, 2048, 2048, 2048, sms) == step.best.tile         # 128 of them
    assert catalogue.tile_for(step, 1024, 1024, 1024, 40) == step.best.tile          # a GPU of 40 SMs
    assert plan.ctas(step.best.tile, 3000, 3000) == 24 * 12               # ragged edges, whole clusters
    plain = catalogue.STEPS[0]
    single = next(s for s in catalogue.STEPS if s.cute and not s.small_tile)
    assert catalogue.tile_for(single, 1024, 1024, 1024, sms) == single.best.tile
    assert plain.tiles == (plain.best.tile,)


def test_a_step_with_other_widths_takes_the_one_whose_waves_end_first_and_its_best_on_a_tie():
    """tile_for: of the best tile and its other widths, the tile whose waves (plan.split_wave's, the
    last one split or not) times its width end first, a narrower one at NARROW_SPEED; the best where
    they end alike; the small tile still runs where the best's CTAs leave most SMs idle."""
    sms = 132
    for bid in catalogue.HEADLINES.values():
        step = catalogue.step_of(bid)
        best = step.best.tile
        assert step.widths and {t["BN"] for t in step.tiles} >= {best["BN"], *step.widths}
        cost = lambda tile, shape: (catalogue.waves(tile, *shape, sms) * tile["BN"]
                                    / (1 if tile["BN"] == best["BN"] else catalogue.NARROW_SPEED))
        for shape in ((16384, 2112, 7168), (4096, 8192, 16384), (512, 10240, 8192), (2048, 3000, 3000), (1024, 28672, 4096)):
            tile = catalogue.tile_for(step, *shape, sms)
            assert tile in step.tiles
            assert cost(tile, shape) == min(cost({**best, "BN": w}, shape) for w in (best["BN"], *step.widths))
        assert catalogue.tile_for(step, 16384, 2112, 7168, sms)["BN"] == 192     # 11 x 192, where 9 x 256 pad 192
        assert catalogue.tile_for(step, 4096, 8192, 16384, sms) == best           # 7.8 waves of 256, 10.5 of 192
        # 80 units of 128 x 256 on 66 clusters, a last wave of 14 split, 1.5 waves; 108 of 192, 1.7
        assert catalogue.tile_for(step, 512, 10240, 8192, sms)["BN"] == 192
        assert catalogue.tile_for(step, 1024, 1024, 1024, sms) == step.tiles[1]  # 32 CTAs of 128 x 256: small
        assert 1 < catalogue.waves(best, 512, 10240, 8192, sms) < catalogue.waves({**best, "BN": 192}, 512, 10240, 8192, sms) < 2
    widths = [catalogue.kernel_definition(bid).get("widths") for bid in catalogue.HEADLINES.values()]
    assert all(widths), "the record's kernel names the widths, so a change stales it"


def test_the_shapes_kernels_are_on_no_track_and_timed_in_turns_with_their_precisions_headline():
    """Stream-K (SHAPE_STEPS): a step of the catalogue (all_steps) on no track, each kernel registered
    under its title and timed in turns with its precision's headline, whose change stales it."""
    benches = registry.discover()
    on_tracks = tuple(s for track in catalogue.TRACKS.values() for s in track)
    assert catalogue.all_steps() == (*on_tracks, *catalogue.SHAPE_STEPS, *catalogue.TURN_STEPS)
    # one for each atlas whose kernel is its precision's headline
    assert {s.against for s in catalogue.SHAPE_STEPS} == {catalogue.resolve(role) for role, _ in catalogue.ATLASES.values()
                                                          if catalogue.resolve(role) in catalogue.HEADLINES.values()}
    for step in catalogue.SHAPE_STEPS:
        assert step not in on_tracks and catalogue.step_named(step.name) is step
        headline = catalogue.HEADLINES[step.precision]
        for v in step.variants:
            assert benches[v.id].title == step.title_of(v)
            assert catalogue.before(v.id) == headline == benches[v.id].kernels[f"before:{v.id}"]["id"]
            assert set(benchmarks.kernel_sources(catalogue.step_of(headline))) <= set(benches[v.id].sources)


def test_the_atlas_rule_runs_stream_k_as_far_as_its_tiles_by_m_go():
    """catalogue.kernel_for: stream-K where one of its rows_tiles takes M, each of those tiles spanning
    its rows in one cluster's column, so that each column of B is read once; past them, the
    precision's headline."""
    sms = 132
    for step in catalogue.SHAPE_STEPS:
        most = catalogue.streamed_rows(step)
        for rows, change in step.rows_tiles:
            tile = {**step.best.tile, **change}
            assert tile in step.tiles and tile["BM"] * tile["CLUSTER_M"] >= rows
        for m in (1, 64, 65, 128, 129, 256, 257, 512, 513, 1024, 16384):
            rows = next((change for bound, change in step.rows_tiles if m <= bound), {})
            assert catalogue.tile_for(step, m, 28672, 4096, sms) == {**step.best.tile, **rows}
            for k in (1536, 8192, 8193, 28672):
                short = step.short_k_rows and k <= step.short_k_rows[0]
                rows = min(most, step.short_k_rows[1]) if short else most
                one_row = catalogue.one_row_fills(catalogue.step_of(step.against), m, 28672, k, sms)
                if m <= rows and not one_row:
                    assert catalogue.kernel_for(step.against, m, 28672, k, sms) == step.best.id
                else:
                    assert catalogue.kernel_for(step.against, m, 28672, k, sms) != step.best.id
    # a kernel with no shape step is its own at every M
    for bid in (catalogue.PROMOTED_FP8, catalogue.BLOCK_SCALED):
        assert catalogue.streamed_for(bid) is None and catalogue.kernel_for(bid, 64, 28672, 4096, sms) == bid


def test_ping_pong_consumers_run_where_k_is_short_and_their_tiles_make_enough_waves():
    """catalogue.kernel_for: the BF16 headline's ping-pong step past stream-K's rows and the one-row
    tile, where K is at most PINGPONG_MAX_K and its tiles make PINGPONG_MIN_WAVES waves or more; the
    headline elsewhere. Each warpgroup holds a whole tile: one step of BF16, timed against its headline."""
    sms, headline = 132, catalogue.HEADLINE_BF16
    step = catalogue.turns_for(headline)
    assert catalogue.TURN_STEPS == (step,) and step.precision == "bf16" and catalogue.before(step.best.id) == headline
    assert all(catalogue.turns_for(catalogue.resolve(role)) is None for role in ("headline", "promoted_fp8", "block_scaled"))
    tile, short = step.best.tile, catalogue.PINGPONG_MAX_K
    waves = lambda m, n: catalogue.ctas(tile, m, n) / sms
    assert waves(512, 28672) >= catalogue.PINGPONG_MIN_WAVES > waves(2048, 2112)
    for m in (512, 4096, 16384):
        assert catalogue.kernel_for(headline, m, 28672, short, sms) == step.best.id
        assert catalogue.kernel_for(headline, m, 28672, short + 1, sms) == headline
    assert catalogue.kernel_for(headline, 2048, 2112, 7168, sms) == headline
    assert catalogue.kernel_for(headline, 4096, 2112, 7168, sms) == step.best.id
    # fewer rows: stream-K or one row of tiles first
    assert catalogue.kernel_for(headline, 64, 28672, 4096, sms) == catalogue.streamed_for(headline).best.id
    assert catalogue.kernel_for(headline, 128, 28672, 4096, sms) == headline


def test_one_row_of_tiles_runs_alone_at_the_width_whose_waves_end_first_and_stream_k_where_it_is_too_few():
    """catalogue.one_row: where M fills more than half of one row of the best's tiles, that row runs
    with no cluster over M (a second tile row would be padding), at the best's width or a row width,
    whichever's waves end first; it is built. The atlas runs it in place of stream-K only where its
    tiles, each split with one helper, keep WAVE_FILL of the SMs busy."""
    sms = 132
    stepped = [s for s in catalogue.all_steps() if s.row_widths]
    assert {s.precision for s in stepped} == {"tf32", "bf16"}
    for step in stepped:
        rows = step.best.tile["BM"]
        assert catalogue.one_row(step, rows // 2, 6144, 4096, sms) is None
        assert catalogue.one_row(step, rows + 1, 6144, 4096, sms) is None
        for n, k in ((6144, 4096), (28672, 4096), (4096, 14336), (2112, 7168)):
            tile = catalogue.one_row(step, rows, n, k, sms)
            assert tile == catalogue.tile_for(step, rows, n, k, sms) and tile in step.tiles
            assert tile["CLUSTER_M"] == 1 and tile["BN"] in (step.best.tile["BN"], *dict(step.row_widths))
            speeds = {step.best.tile["BN"]: 1, **dict(step.row_widths)}
            cost = {w: catalogue.waves({**tile, "BN": w}, rows, n, k, sms) * w / v for w, v in speeds.items()}
            assert cost[tile["BN"]] == min(cost.values())
        # 33 tiles of 64 columns keep 66 of 132 SMs busy: stream-K; 64 of 96 columns keep 128
        assert catalogue.ctas(catalogue.one_row(step, rows, 2112, 7168, sms), rows, 2112) == 33
        assert not catalogue.one_row_fills(step, rows, 2112, 7168, sms)
        assert catalogue.one_row_fills(step, rows, 6144, 4096, sms)
        headline = catalogue.HEADLINES[step.precision]
        assert catalogue.kernel_for(headline, rows, 2112, 7168, sms) == catalogue.streamed_for(headline).best.id
        assert catalogue.kernel_for(headline, rows, 6144, 4096, sms) == headline


def test_bf16_stream_k_stops_at_128_rows_where_k_is_short_enough_for_the_headline():
    """At 256 rows BF16 runs stream-K only where K passes the bound its headline's one accumulator
    stayed within cuBLAS's error up to; up to 128 rows at every K."""
    step = catalogue.streamed_for(catalogue.HEADLINE_BF16)
    bound, rows = step.short_k_rows
    assert catalogue.streamed_rows(step) == 256 and rows == 128
    assert catalogue.kernel_for(catalogue.HEADLINE_BF16, 256, 2112, bound, 132) == catalogue.HEADLINE_BF16
    assert catalogue.kernel_for(catalogue.HEADLINE_BF16, 256, 2112, bound + 1, 132) == step.best.id
    assert catalogue.kernel_for(catalogue.HEADLINE_BF16, 128, 2112, 1536, 132) == step.best.id
    assert catalogue.streamed_for(catalogue.HEADLINE).short_k_rows is None


def test_a_tile_by_m_narrows_where_more_clusters_than_its_steps_bound_would_share_a_tile():
    """catalogue.fewer_sharers: a tile by M runs 64 columns narrower at a time, down to NARROWEST, while
    the clusters outnumber its tiles more than its step's `sharers` to one; a ring of named depth keeps
    its bytes; each tile it can run is built too."""
    sms, narrowing = 132, [s for s in catalogue.all_steps() if s.sharers]
    assert {s.best.id for s in narrowing} >= {catalogue.PROMOTED_FP8, catalogue.BLOCK_SCALED, *(s.best.id for s in catalogue.SHAPE_STEPS)}
    for step in narrowing:
        for rows, change in step.rows_tiles:
            if step.widths and "BN" not in change:
                continue                                  # its width is the waves' (tile_for)
            tile = {**step.best.tile, **change}
            for n in (1024, 2112, 2816, 4096, 6144, 28672):
                expected = tile
                while expected["BN"] > catalogue.NARROWEST and (
                        sms * expected.get("CTAS_PER_SM", 1) // expected["CLUSTER_M"]
                        > step.sharers * (plan.ctas(expected, rows, n) // expected["CLUSTER_M"])):
                    bn = expected["BN"] - catalogue.NARROWEST
                    stages = expected["STAGES"] * (expected["BM"] + expected["BN"]) // (expected["BM"] + bn)
                    assert stages * (expected["BM"] + bn) <= max(1, expected["STAGES"]) * (expected["BM"] + expected["BN"])
                    expected = {**expected, "BN": bn, "STAGES": stages}
                picked = catalogue.tile_for(step, rows, n, 7168, sms)
                assert picked == expected and picked in step.tiles
    # stream-K, 128 rows: 17 tiles of 128 x 128 at N = 2,112 (7.8 clusters a tile), 28 at 3,584 (4.7), 32 at 4,096 (4.1)
    assert [catalogue.tile_for(catalogue.STREAM_K, 128, n, 7168, sms)["BN"] for n in (2112, 3584, 4096)] == [64, 64, 128]
    # FP8 promoted, 128 rows: 48 tiles at N = 6,144 (2.75 a tile) narrow, 56 at 7,168 (2.4) do not
    promoted = catalogue.step_of(catalogue.PROMOTED_FP8)
    assert [catalogue.tile_for(promoted, 128, n, 4096, sms)["BN"] for n in (6144, 7168)] == [64, 128]
    # block scales, 256 rows in clusters of two: 192 columns at N = 6,144 (2.1 clusters a tile), 128 at
    # 4,096 (3 a tile of 192, 2.1 of 128), 64 at 2,112 (6 a tile of 192, 3.9 of 128), its ring deeper each time
    blocks = catalogue.step_of(catalogue.BLOCK_SCALED)
    assert [(t["BN"], t["STAGES"]) for t in (catalogue.tile_for(blocks, 256, n, 7168, sms) for n in (6144, 4096, 2112))] == [
        (192, 4), (128, 5), (64, 6)]
    headline = catalogue.step_of(catalogue.HEADLINE)       # a step without a bound keeps its width
    assert not headline.sharers and catalogue.fewer_sharers(headline.best.tile, 128, 64, sms, headline.sharers) == headline.best.tile


def test_a_tile_whose_last_wave_leaves_most_clusters_idle_runs_its_one_wave_width_where_that_fills_a_wave():
    """catalogue.one_wave: the step's one-wave width takes the pick's place where its tiles make one wave
    filling at least WAVE_FILL of the clusters and the pick's last wave fills less; never where M leaves
    a cluster's tile empty, nor at more than one wave; each tile it can run is built too."""
    sms = 132
    stepped = [s for s in catalogue.all_steps() if s.one_wave_width]
    assert {s.best.id for s in stepped} >= {catalogue.HEADLINE, catalogue.PROMOTED_FP8}
    fill = lambda tile, m, n: plan.ctas(tile, m, n) // tile["CLUSTER_M"] / catalogue.clusters_at_once(tile, sms)
    for step in stepped:
        for m, n, k in ((256, 6144, 4096), (512, 3072, 4096), (256, 5120, 5120), (256, 10240, 8192), (512, 2112, 7168),
                        (64, 6144, 4096), (4096, 8192, 16384)):
            picked, by_rule = catalogue.tile_for(step, m, n, k, sms), catalogue.tile_by_rule(step, m, n, k, sms)
            assert picked in step.tiles
            if picked != by_rule:
                assert picked == catalogue.at_width(by_rule, step.one_wave_width) and m >= picked["BM"] * picked["CLUSTER_M"]
                assert catalogue.WAVE_FILL <= fill(picked, m, n) <= 1
                assert fill(by_rule, m, n) % 1 < catalogue.WAVE_FILL and fill(by_rule, m, n) % 1 > 0
    headline, promoted = catalogue.step_of(catalogue.HEADLINE), catalogue.step_of(catalogue.PROMOTED_FP8)
    # 256 rows, N = 6,144: 32 units of 128 x 192 in clusters of two, a half-filled wave; 64 of 96 fill 64 of 66
    assert [catalogue.tile_for(s, 256, 6144, 4096, sms)["BN"] for s in (headline, promoted)] == [96, 96]
    # N = 10,240: 96 columns would make 107 units, more than a wave; 512 x 2,112: the pick's 66 fill it
    assert catalogue.tile_for(promoted, 256, 10240, 8192, sms)["BN"] != 96
    assert catalogue.tile_for(promoted, 512, 2112, 7168, sms)["BN"] == 64
    assert catalogue.tile_for(headline, 64, 6144, 4096, sms)["BN"] != 96        # the cluster's second tile past M
    blocks = catalogue.step_of(catalogue.BLOCK_SCALED)      # C in BF16, 64 columns a staged chunk: no 96
    assert not blocks.one_wave_width and catalogue.tile_for(blocks, 256, 6144, 4096, sms)["BN"] != 96


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


def test_a_step_timed_against_a_named_kernel_names_one_of_its_precision():
    """A step's ``against`` (the kernel its one change is measured from) is a kernel of the catalogue
    on the same track, so that its gain is a pair of one precision."""
    named = [s for s in catalogue.all_steps() if s.against]
    assert named
    for step in named:
        assert step.against in catalogue.KERNELS and catalogue.step_of(step.against).precision == step.precision, step.key
        assert catalogue.before(step.best.id) == step.against


def test_a_route_names_the_kernel_the_catalogue_would_run_now():
    # a kernel itself, the one it is timed against, a step's best (whichever variant), a role
    assert catalogue.resolve("gemm.persistent") == "gemm.persistent"
    assert catalogue.resolve("before:gemm.persistent") == catalogue.before("gemm.persistent")
    step = catalogue.step_of(catalogue.TUNED)
    assert catalogue.resolve(f"best:{step.name}") == step.best.id
    for role, bid in catalogue.ROLES.items():
        assert catalogue.resolve(role) == bid
    for gone in ("gemm.nothing", "best:nothing", "before:gemm.nothing", "elsewhere:gemm.persistent"):
        with pytest.raises(KeyError):
            catalogue.resolve(gone)
    # what the catalogue says of a kernel (not its words) is its definition: another tile, another hash
    assert catalogue.kernel_definition(catalogue.TUNED)["tile"] == catalogue.variant(catalogue.TUNED).tile


def test_each_width_counts_at_its_own_speed_and_the_record_keeps_it():
    """A step that names its widths' speeds (FP8's: a narrow FP8 tile loses more a wave than TF32's)
    picks with those, and its definition and records carry them; the others count NARROW_SPEED."""
    sms = 132
    widened = [s for s in catalogue.all_steps() if s.widths]
    assert any(s.narrow_speeds for s in widened) and any(not s.narrow_speeds for s in widened)
    for step in widened:
        best, speeds = step.best.tile, catalogue.width_speeds(step)
        assert speeds == {w: dict(step.narrow_speeds).get(w, catalogue.NARROW_SPEED) for w in step.widths}
        cost = lambda tile, shape: catalogue.waves(tile, *shape, sms) * tile["BN"] / ({best["BN"]: 1, **speeds}[tile["BN"]])
        for shape in ((16384, 2112, 7168), (4096, 8192, 16384), (512, 2112, 7168), (512, 7168, 16384), (1024, 28672, 4096)):
            tile = catalogue.tile_for(step, *shape, sms)
            if tile["BN"] in (best["BN"], *step.widths) and tile["BM"] == best["BM"]:
                assert cost(tile, shape) == min(cost({**best, "BN": w}, shape) for w in (best["BN"], *step.widths))
        assert catalogue.rule_params(step)["narrow_speeds"] == {str(w): v for w, v in speeds.items()}
        assert catalogue.kernel_definition(step.best.id).get("narrow_speeds", []) == [list(p) for p in step.narrow_speeds]
    fp8 = catalogue.step_of(catalogue.PROMOTED_FP8)
    # 256 x 2112 x 7168: 34 tiles of 128 x 128 in clusters of two for 132 SMs; 128 x 64 makes 66 of them
    assert catalogue.tile_for(fp8, 256, 2112, 7168, sms) == {**fp8.best.tile, "BN": 64}
    assert catalogue.tile_for(fp8, 4096, 8192, 16384, sms) == fp8.best.tile
