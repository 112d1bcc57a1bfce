"""The one catalogue of GEMM steps: the hand-written progression as the benchmarks run it and
the deck tells it. Each step declares, once, its kernel file and function, the tile constants
of each variant, the SASS its kernel must hold, the GPUs it needs, its title, the technique it
adds and how its diagram is drawn. The GEMM registrations (bench/gemm/benchmarks.py), the sweep, the
tuner, the settling run, the deck's step list and the tests' lists of kernels all read it.

Adding a step: its kernel file in kernels/ and one Step below (CONTRIBUTING.md)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .plan import ctas, last_wave_k_tiles, split_wave

HOPPER = (9, 0)      # wgmma, TMA, clusters: compute capability 9.0 (sm_90a)


class Refused(ValueError):
    """A kernel of the catalogue, or cuBLAS, declines a shape before launching (e.g. not a multiple of its tile)."""


@dataclass(frozen=True)
class Variant:
    """One kernel of a step: a benchmark of its own."""
    id: str                       # benchmark id, "gemm.<name>"
    label: str                    # how the step's slides tell it from its other variants
    tile: dict | None = None      # CuTe kernels: the constants it is compiled with (-D), drawn in its diagram


@dataclass(frozen=True)
class Step:
    key: str
    title: str
    technique: str
    source: str                   # its kernel file in kernels/ (.cu: CuTe, through nvcc; .py: numba)
    function: str                 # the kernel function in that file
    variants: tuple[Variant, ...]  # the last is the step's best: its sweep, its slides' headline
    diagram: str                  # how its diagram is drawn: a kind of slides/diagrams.py's DIAGRAMS (a shape
                                  # step's, SHAPE_STEPS: drawn from an atlas cell's plan by slides/atlas.py)
    sass: tuple[str, ...] = ()    # instructions its SASS must hold, or a slower path was compiled
    min_cc: tuple[int, int] | None = None
    layout: str = "b_kmajor"      # the B layout its kernel reads
    precision: str = "tf32"
    scaling: str = "tensor"       # FP8's scales: "tensor", one a matrix (alpha); "blocks", DeepSeek-V3's (harness.BLOCKS)
    beyond: bool = False          # past the reference deck's last step: what it left on the table
    also_in: tuple[str, ...] = ()  # other precisions its best kernel is built in (the BF16 track)
    # Where the best tile's CTAs would leave most SMs idle (small shapes), the tile these constants
    # make of it instead, chosen per shape by tile_for(); the sweep records which it ran.
    small_tile: dict | None = None
    # Tiles picked by M instead (tile_for): (the most rows it takes, the constants it changes), the
    # first that takes M; past the last, the best's tile.
    rows_tiles: tuple[tuple[int, dict], ...] = ()
    # Other widths (BN) its best tile is built in: tile_for takes, of these and the best's, the one
    # whose waves end first, so that a ragged N or a last wave of few tiles wastes fewer SMs' time.
    widths: tuple[int, ...] = ()
    # A width's speed over the best's, a wave for a wave, where it is not NARROW_SPEED: (width, speed)
    narrow_speeds: tuple[tuple[int, float], ...] = ()
    # Where more than this many clusters would share each of its tiles by M, the tile narrows
    # (fewer_sharers); 0: it never does.
    sharers: float = 0
    # A width whose tiles may make one wave where the picked tile's last wave leaves most clusters
    # idle (one_wave); 0: none.
    one_wave_width: int = 0
    # Where M fills one row of the best's tiles, (width, speed over the best's) of the widths that row
    # may run at alone (one_row); (): none.
    row_widths: tuple[tuple[int, float], ...] = ()
    # A shape step's (K, rows): where K is at most this K, it runs only up to these rows, and its
    # `against` past them, whose one accumulator sums so short a K within cuBLAS's error.
    short_k_rows: tuple[int, int] | None = None
    track: str = ""               # the suffix of its ids on another precision's track ("_bf16")
    # The part of its kernel region the code slide shows when the whole does not fit on a slide: the
    # first and the last line, by a text each holds (the whole region goes to backup slides).
    focus: tuple[str, str] | None = None
    shown: str = ""               # the file whose `#region kernel` its code slide shows, if not its own (a header it includes)
    # the kernel its gain is timed against where that is not the best of the step before on its track:
    # a step that changes one thing of a named kernel (so that a step added before it changes nothing)
    against: str = ""

    @property
    def best(self) -> Variant:
        return self.variants[-1]

    @property
    def cute(self) -> bool:
        return self.source.endswith(".cu")

    @property
    def code(self) -> str:
        """The file whose `#region kernel` its code slide shows."""
        return self.shown or self.source

    @property
    def tiles(self) -> tuple[dict, ...]:
        """The tiles its best kernel is built with: the best's, the small shapes' if it has one, those
        it picks by M, its other widths and each of those at its one-wave width, and its one-row tiles."""
        by_rows = tuple({**self.best.tile, **change} for _, change in self.rows_tiles)
        tiles = (self.best.tile, *([{**self.best.tile, **self.small_tile}] if self.small_tile else []), *by_rows,
                 *(narrow for tile in by_rows if self.sharers for narrow in narrower(tile)),
                 *({**self.best.tile, "BN": width} for width in self.widths))
        tiles += tuple(at_width(tile, self.one_wave_width) for tile in tiles if self.takes_one_wave(tile))
        if self.row_widths:
            tiles += tuple(row_tile(self, width) for width in (self.best.tile["BN"], *dict(self.row_widths)))
        return tuple(tile for i, tile in enumerate(tiles) if tile not in tiles[:i])

    def takes_one_wave(self, tile: dict) -> bool:
        """Whether ``tile`` may run at the step's one-wave width (one_wave): tiles of the best's rows,
        the ones measured so."""
        return bool(self.one_wave_width) and tile["BM"] == self.best.tile["BM"]

    @property
    def name(self) -> str:
        """Its key on its track, unique over every track: "lean_loop_bf16"."""
        return f"{self.key}{self.track}"

    @property
    def sweep_id(self) -> str:
        """Its best kernel across sizes (bench/gemm/sweep.py), for the steps in SWEPT."""
        return f"sweep.{self.name}"

    def title_of(self, variant: Variant) -> str:
        """The benchmark's title: the step's, and the variant's label where the step has several."""
        name = self.title if len(self.variants) == 1 else f"{self.title}: {variant.label}"
        return name if self.precision.upper() in name else f"{name} ({self.precision.upper()})"


SM80 = {"BM": 128, "BN": 128, "MMA_ATOM": "SM80_16x8x8_F32TF32TF32F32_TN", "WARPS_M": 2, "WARPS_N": 2}
# The swizzle band: a wave of 132 tiles of 128 x 256 spans 16 tile rows by 8.25 tile columns, so it
# reads 16 panels of A and 8.25 of B, each of the full K: fewer bytes than the 8 x 16.5 of a band of
# 8 (for the reference shape on the H100, 3.2 GB from DRAM against 4.2 GB, in Nsight Compute).
BAND = 16
DEEPEST = 0          # STAGES: as many as the shared memory holds, which the kernel works out and exports


# What A and B hold in a Hopper step, by precision: the CuTe type wgmma reads (the kernel picks its
# wgmma atom for it) and BK, the K-tile of them that makes one 128-byte swizzle row.
# FP8 is e4m3: 4 exponent bits, 3 of mantissa, the format wgmma reads for the forward pass.
ELEMENT_BYTES = {"tf32": 4, "bf16": 2, "fp8": 1}
ELEMENTS = {p: {"ELEMENT": name, "BK": 128 // ELEMENT_BYTES[p]}
            for p, name in (("tf32", "tfloat32_t"), ("bf16", "bfloat16_t"), ("fp8", "float_e4m3_t"))}
# How the SASS names each precision's operands at the end of a tensor-core opcode
# (QGMMA.64x256x32.F32.E4M3.E4M3), and its wgmma: FP8's is QGMMA.
SASS_TYPES = {"tf32": "TF32", "bf16": "BF16", "fp8": "E4M3"}
WGMMA_OPCODES = {"tf32": "HGMMA", "bf16": "HGMMA", "fp8": "QGMMA"}


def sm90(bn: int, stages: int, group_m: int = 0, producers: int = 0, cluster_m: int = 1, **beyond) -> dict:
    """A Hopper step's constants, in TF32: two consumer warpgroups, each a 64 x BN slice of the CTA
    tile; a K-tile of BK elements, one 128-byte swizzle row; STAGES shared buffers in the ring;
    GROUP_M the CTA swizzle's band of tile rows (0: none); PRODUCER_WARPGROUPS issuing TMA loads;
    CLUSTER_M CTAs sharing B's tile by multicast."""
    return {"BM": 128, "BN": bn, **ELEMENTS["tf32"], "STAGES": stages, "GROUP_M": group_m, "WARPGROUPS_M": 2,
            "PRODUCER_WARPGROUPS": producers, "CLUSTER_M": cluster_m, **beyond}


def in_precision(step: Step, precision: str) -> Step:
    """The step's best kernel built for ``precision``: the same source, tile and plan, its operands
    of that type (its own benchmark, "<id>_<precision>")."""
    best = step.best
    retyped = Variant(f"{best.id}_{precision}", best.label, {**best.tile, **ELEMENTS[precision]})
    sass = tuple(WGMMA_OPCODES[precision] if op == "HGMMA" else op for op in step.sass)
    return replace(step, precision=precision, variants=(retyped,), also_in=(), track=f"_{precision}", sass=sass)


# The small tile runs where the best tile's CTAs would number fewer than this share of the SMs. A
# lone wave of the best tile is split with the idle clusters (plan.split_wave), so its CTAs keep up to
# twice their number of SMs busy; the small tile does about 0.72 of its work a second (fitted at
# M = 512 where the rule then picked it, Llama-3 8B down and DeepSeek-V3 q_a+kv_a): it pays where
# 2 x CTAs < 0.72 x SMs. At M = 512 (H200, 2026-11-30, TF32 and BF16 in turns with cuBLAS, the two
# projections and six widths outside the list) it picked the faster of the two in 13 of 16 pairs, a
# tie (within 1%) in one; it missed by 6% (N = 2,560, TF32) and 11% (3,072, BF16). Under the old
# share, 0.5, 8B down ran the small tile at 74% of cuBLAS's speed, against 99% (TF32) and 92% (BF16)
# on the best tile.
SMALL_TILE_BELOW = 0.36


# A narrower width of the best tile does its work at about this share of the best's speed: the median
# over 22 cells of the TF32 and BF16 atlases where 128 x 192 and 128 x 256 ran in turns, each over
# what the waves below say (H200, 2026-11-30; 0.91-1.04). Checked in turns on 62 cells (those atlas
# cells under 97% of cuBLAS and every atlas, sweep and outside-the-list cell where the rule changed
# the width): from 384 rows up it ran the faster width in 43 of 44 (one miss of 2%); at 256 rows or
# fewer, where the atlases run stream-K beside it, in 9 of 18 (misses of 2-14%). The FP8 headline's two
# widths in turns on 27 shapes (the FP8 sweep's squares, the atlas's projections at M = 1,024 and 4,096,
# four outside both; H200, 2026-12-01): 128 x 192 took 0.79-1.27x 128 x 256's time, and the rule ran the
# faster at 19 and one of a tie at 3, missing by 1.9-3.0% at 5, all of 2,048 rows and more.
NARROW_SPEED = 0.95


def clusters_at_once(tile: dict, sm_count: int) -> int:
    """The clusters of ``tile`` the GPU holds at once, CTAS_PER_SM on each SM: a persistent launch's."""
    return sm_count * tile.get("CTAS_PER_SM", 1) // tile.get("CLUSTER_M", 1)


def waves(tile: dict, m: int, n: int, k: int, sm_count: int) -> float:
    """The waves a split-wave launch of ``tile`` takes over an M x N x K GEMM on ``sm_count`` SMs
    (plan.split_wave): its full waves, and the part of a wave its last one lasts, split or not."""
    cluster, k_tiles = tile.get("CLUSTER_M", 1), -(-k // tile["BK"])
    plan = split_wave(ctas(tile, m, n) // cluster, clusters_at_once(tile, sm_count), k_tiles)
    return plan["full_waves"] + (last_wave_k_tiles(plan) / k_tiles if plan["left"] else 0)


# Stream-K cuts every tile's K-tiles among all the clusters, and the split wave the last wave's, and
# a tile's owner adds, one after another, the partial sums of each other cluster that ran part of it.
# Where the clusters would outnumber a tile by M's tiles more than a step's `sharers` to one, the tile
# narrows by 64 columns at a time: fewer bytes a partial, fewer clusters a tile. Each bound lies
# between the counts of clusters a tile where narrowing lost and won, in turns with cuBLAS or
# cuBLASLt (H200, 2026-11-30):
# - stream-K, TF32 and BF16: at 128 rows on the eight projections, 64 columns beat 128 at N = 2,112
#   (7.8 clusters a tile: 107.0% and 70.3% of cuBLAS against 84.0% and 49.0%) and lost at N = 4,096
#   (4.1 a tile: 84.7% and 77.8% against 94.8% and 83.2%). On 36 cells outside the list (128 and 256
#   rows, N = 1,024 to 3,584, K = 4,096 and 7,168) a bound of 6 picked the faster width at 23; this
#   one, between 4.1 and 4.7, at 31 (misses of 0.6-4.1 points), the projections' cells unchanged.
STREAM_K_SHARERS = 4.5
# - FP8 promoted, its 128 x 128 tile at 128 rows: 64 columns won at 2.75 clusters a tile and more
#   (N = 6,144: 81.3% of cuBLASLt against 74.2%; N = 2,112, 7.8 a tile: 84.1 against 60.8) and on all
#   14 cells outside the list (N = 1,024 to 5,120, K = 4,096 and 7,168, 3.3-16.5 a tile: by 11-25
#   points); it lost at 2.36 (N = 7,168: 89.2 against 91.9) and 1.65 (N = 10,240: by 12).
PROMOTED_SHARERS = 2.5
# - FP8 block-scaled, its tiles at 64, 128 and 256 rows (then 64 x 128; 128 x 128; 128 x 192 in
#   clusters of two): narrower won at 3.0 clusters a tile and more (at 256 rows N = 4,096: 128 columns 84.8%
#   against 74.9%; N = 2,112, 6 a tile: 64 columns 103.9% against 76.5%) and lost at 2.75 (N = 6,144:
#   at 64 rows 108.6 against 120.8, at 128 rows 93.6 against 101.8). On 42 cells outside the list (64,
#   128 and 256 rows, N = 1,024 to 5,120, K = 4,096 and 7,168) it picked the fastest at 36 (within half a
#   point), missing by 0.7 and 0.8 at two and by 3.2-5.0 at four of 64 rows and 3.3-3.7 clusters a
#   tile, where 64 x 128 stayed ahead; a bound past 3.7 would keep 128 x 192 at 256 rows where 128
#   columns won by 10-15 points (3.0-3.5 a tile).
BLOCK_SCALED_SHARERS = 2.9
NARROWEST = 64       # the narrowest tile these kernels are built in (one 64-column wgmma)


def narrower(tile: dict) -> tuple[dict, ...]:
    """The tiles ``tile`` narrows to, 64 columns at a time down to NARROWEST; a ring of named depth
    keeps its bytes (A's and B's stages), as deep as they allow."""
    if tile["BN"] <= NARROWEST:
        return ()
    narrow = at_width(tile, tile["BN"] - NARROWEST)
    return (narrow, *narrower(narrow))


def at_width(tile: dict, bn: int) -> dict:
    """``tile`` ``bn`` columns wide, a ring of named depth keeping its bytes (A's and B's stages)."""
    return {**tile, "BN": bn, "STAGES": tile["STAGES"] * (tile["BM"] + tile["BN"]) // (tile["BM"] + bn)}


def fewer_sharers(tile: dict, m: int, n: int, sm_count: int, sharers: float) -> dict:
    """The first of ``tile`` and its narrower tiles whose tiles at most ``sharers`` clusters each would
    share, else the narrowest; ``tile`` where its step never narrows (``sharers`` 0)."""
    candidates = (tile, *narrower(tile)) if sharers else (tile,)
    return next((c for c in candidates
                 if clusters_at_once(c, sm_count) <= sharers * (ctas(c, m, n) // c.get("CLUSTER_M", 1))), candidates[-1])


# A tile's tiles that fill at least this share of the clusters the SMs hold at once make a full
# wave: where the picked tile's last wave fills less, the step's one-wave width (96 columns, C
# staged 32 floats at a time) takes it instead if its tiles make one full wave and no more, as
# cuBLAS's tiles 96 or 112 columns wide make one wave of about 128 CTAs at a few hundred rows
# (bench.gemm.trial --counters names them). Each width beside the pick in turns (H200, 2026-12-01,
# bench.gemm.trial), 96 columns took 0.78-0.97 of the pick's time at the 15 shapes of 128-512 rows
# where this rule takes it (the four precisions; 4 of them atlas cells), its tiles filling 0.81-0.97
# of the clusters, and 1.04 at one (TF32 256x6144x8192). Where 96 columns lost, 1.03-1.17x (1.13-1.40x
# past a wave), its tiles filled 0.33-0.67 of the clusters or more than a wave. Any bound from 0.7
# to 0.8 picks the same.
WAVE_FILL = 0.75
ONE_WAVE_WIDTH = 96


def one_wave(step: Step, tile: dict, m: int, n: int, sm_count: int) -> dict:
    """``tile``, or the step's one-wave width of it where that makes one full wave (WAVE_FILL) and
    ``tile``'s last wave is not full; only where M fills a cluster's tiles (as where it was measured)."""
    if not step.takes_one_wave(tile) or tile["BN"] == step.one_wave_width or m < tile["BM"] * tile.get("CLUSTER_M", 1):
        return tile
    at = clusters_at_once(tile, sm_count)
    last = ctas(tile, m, n) // tile.get("CLUSTER_M", 1) % at or at
    wide = at_width(tile, step.one_wave_width)
    units = ctas(wide, m, n) // wide.get("CLUSTER_M", 1)
    return wide if WAVE_FILL * at <= units <= at and last < WAVE_FILL * at else tile


# Where M fills more than half of one row of the best's 128-row tiles (a 64-row tile takes M up to 64),
# a cluster over M would add a tile row of padding: that row runs alone (CLUSTER_M 1), at whichever
# of the best's width and these its waves end first, each at its speed over the best's. At 128 rows
# (H200, 2026-12-01, bench.gemm.trial in turns with cuBLAS, TF32 and BF16, the eight projections and
# four widths outside them, N 1,536-14,336) the tile so picked was the fastest of 128 x 64 to 128 x 256
# at 22 of 24 and missed by 3.0 and 3.7 points at two; any speed of 64 columns from 0.70 to 0.85 picks
# the same. The clusters of two it replaced ran 39-76% of cuBLAS there; the width picked, 77-122%.
ROW_WIDTHS = ((192, 1.0), (128, 1.0), (96, 1.0), (64, 0.75))


def row_tile(step: Step, width: int) -> dict:
    """One row of the step's best tile at ``width``, alone (no cluster over M)."""
    return {**step.best.tile, "BN": width, "CLUSTER_M": 1}


def one_row(step: Step, m: int, n: int, k: int, sm_count: int) -> dict | None:
    """The step's tile where M fills more than half of one row of its best's (row_widths): that row
    alone, at the width whose waves end first (the widest on a tie); None elsewhere."""
    rows = step.best.tile["BM"]
    if not step.row_widths or not rows // 2 < m <= rows:
        return None
    speeds = ((step.best.tile["BN"], 1.0), *step.row_widths)
    return min((row_tile(step, width) for width, _ in speeds),
               key=lambda tile: waves(tile, m, n, k, sm_count) * tile["BN"] / dict(speeds)[tile["BN"]])


def one_row_fills(step: Step, m: int, n: int, k: int, sm_count: int) -> bool:
    """Whether the step's one-row tile keeps at least WAVE_FILL of the SMs busy: a lone wave split with
    one helper a tile (plan.split_wave) keeps at most twice its tiles' SMs busy."""
    tile = one_row(step, m, n, k, sm_count)
    return bool(tile) and min(2 * ctas(tile, m, n), sm_count) >= WAVE_FILL * sm_count


def width_speeds(step: Step) -> dict[int, float]:
    """Each of a step's other widths and its speed over the best's, a wave for a wave (tile_for)."""
    return {width: NARROW_SPEED for width in step.widths} | dict(step.narrow_speeds)


def rule_params(step: Step) -> dict:
    """The constants tile_for picks a step's tiles with, as its records keep them (keys are text)."""
    return {"small_tile_below_sms": SMALL_TILE_BELOW,
            **({"sharers": step.sharers} if step.sharers else {}),
            **({"one_wave": {"width": step.one_wave_width, "fill": WAVE_FILL}} if step.one_wave_width else {}),
            **({"row_widths": {str(width): speed for width, speed in step.row_widths}} if step.row_widths else {}),
            **({"narrow_speeds": {str(width): speed for width, speed in width_speeds(step).items()}} if step.widths else {})}


def tile_for(step: Step, m: int, n: int, k: int, sm_count: int) -> dict:
    """The tile a step's best kernel runs an M x N x K GEMM with: the first of its tiles by M that
    takes M; else its small tile, where the best tile's CTAs would leave most SMs with nothing to do;
    else, of its best tile and its other widths, the one whose waves end first (its waves times its
    width, a narrower one at its width_speeds; the best on a tie). A tile by M narrows where the
    clusters would share its tiles more than the step's `sharers` to one (fewer_sharers). Where the
    tile's last wave would leave most clusters idle, the step's one-wave width may take it (one_wave).
    Where M fills one row of its best's tiles, that row alone at its row widths (one_row)."""
    return one_row(step, m, n, k, sm_count) or one_wave(step, tile_by_rule(step, m, n, k, sm_count), m, n, sm_count)


def tile_by_rule(step: Step, m: int, n: int, k: int, sm_count: int) -> dict:
    """tile_for's pick before its one-wave width may take its place."""
    best = step.best.tile
    speed = {best["BN"]: 1, **width_speeds(step)}
    big = min((best, *({**best, "BN": width} for width in step.widths)),
              key=lambda tile: waves(tile, m, n, k, sm_count) * tile["BN"] / speed[tile["BN"]])
    for rows, change in step.rows_tiles:
        if m <= rows:
            return fewer_sharers({**big, **change}, m, n, sm_count, step.sharers)
    if step.small_tile is None or ctas(best, m, n) >= SMALL_TILE_BELOW * sm_count:
        return big
    return step.tiles[1]


_WS = {"producers": 1}
_PERSISTENT = {**_WS, "cluster_m": 2, "PERSISTENT": 1}
_TMA = ("HGMMA", "UTMALDG")
_FP8_TMA = ("QGMMA", "UTMALDG")
_BF16 = ("bf16",)
_BF16_FP8 = ("bf16", "fp8")
# DeepSeek-V3's FP8 blocks (harness.BLOCKS): A scaled per 1 x SCALE_BLOCK of a row, B per SCALE_BLOCK x
# SCALE_BLOCK; one block along K is one K-tile of e4m3 (BK = 128)
SCALE_BLOCK = 128
_FP8_BLOCKS = {**ELEMENTS["fp8"], "SCALE_BLOCK": SCALE_BLOCK}
# What C holds, by its output type: the CuTe type the TMA-store epilogue writes (C_ELEMENT)
C_ELEMENTS = {"fp32": "float", "bf16": "bfloat16_t"}
# C staged 128 bytes of a row at a time (32 floats), double-buffered
_STAGED = {**_PERSISTENT, "SPLIT_WAVE": 1, "EPILOGUE_N": 32, "EPILOGUE_BUFFERS": 2, "C_ELEMENT": C_ELEMENTS["fp32"]}
# stream-K: persistent clusters, each a run of K-tiles however few the tiles
_STREAMED = {**_WS, "PERSISTENT": 1, "STREAM_K": 1, "EPILOGUE_N": 32, "EPILOGUE_BUFFERS": 2, "C_ELEMENT": C_ELEMENTS["fp32"]}
# ... or 64 BF16 values: the sums rounded as they are staged, half the bytes to store
_BF16_C = {"EPILOGUE_N": 64, "C_ELEMENT": C_ELEMENTS["bf16"]}
# Block scales' tile, 128 x 192 in clusters of two sharing B's tile, as step 13's: without the cluster
# the step ran 9-12% slower in turns (H100, 4096x8192x16384 and 4096x7168x16384), its CTAs reading
# from L2 about 40 KB a K-tile instead of 28
# Tried beside it, each in turns with it at DeepGEMM's five shapes (H200, 2026-12-01; the thirty-first
# session's closing note), its time over this one's: the consumer warpgroups skewed at every K-tile,
# not once, 1.06-1.11x (never skewed, 1.03-1.04x; the promoted kernel at its three shapes, 1.13-1.20x);
# B's scales read a K-tile ahead, or before the stage's wait, 1.02-1.09x; B's a piece at a time into
# shared memory, as DeepGEMM keeps them, 1.01-1.06x; prefetched into L1, 1.06-1.08x. Without the scales'
# loads (wrong sums: what they cost at most) 0.90-0.92x, where DeepGEMM ran at 0.80-0.94x our time.
# DeepGEMM's own tile at four of those shapes, 256 x 128 with each consumer warpgroup's wgmmas over its
# two 64-row waves in turn (one B scale a K-tile), ran 1.06-1.19x this one's time there in clusters of
# two sharing B, 1.03-1.15x without them, 1.03-1.14x in bands of 8 tile rows, and 1.39-1.52x at
# 4096x2112x7168 (H200, 2026-12-01, in turns, the tiles' headers generalised in a copy; that copy's
# build of this very tile, scheduled otherwise by ptxas, ran 1.01-1.05x: the spread of a rebuild).
# Then (H200, 2026-12-01, the thirty-fifth session's closing note): the loop's bookkeeping trimmed
# (the cluster's empty barriers mapped once a piece, B's scale pointers stepped) 1.00-1.01x at the
# five shapes; unrolled by two, so that ptxas moves the next K-tile's barrier wait among the FFMAs as
# DeepGEMM's unrolling by eight does, 1.01-1.02x at three (by four, 46-60x: its registers spill);
# 3 staging buffers for C 1.00-1.01x; 3 stages 1.06-1.10x; 5 stages, room for them only beside one
# buffer for C, 1.06-1.08x (4 beside one, 1.00-1.03x); bands of 8 or 32 tile rows 1.00-1.02x.
_BLOCK_SCALED = {**sm90(192, DEEPEST, BAND, **_STAGED), **_FP8_BLOCKS}
# FP8's tiles by M (tile_for), where 128 x 192 tiles in clusters of two leave most SMs idle: the
# fastest of six tilings at most of five of the FP8 atlas's projections at each M (H200, in turns
# with cuBLASLt; promoted, at M = 64: 128 x 192 at 27-56% of it, 64 x 64 at 38-112%). A 64-row tile
# is one consumer warpgroup's. The promoted kernel's 128 rows take one 128 x 128 tile, both consumer
# warpgroups: on the eight projections at M = 128 it reached 61-99% of cuBLASLt (median 86.3%) where
# two 64-row CTAs of a 64 x 128 tile reached 64-81% (72.9%), faster at 6 of 8 (H200, 2026-11-30, in
# the sweep's turns; .probe/fp8_rows_exp.py on branch probes).
# At 64 rows the cells are bound by memory and the 64 x 64 tile runs two CTAs an SM (CTAS_PER_SM), so
# that one's loads go on through the other's epilogue or a split tile's wait: on the eight projections
# at M = 64 (H200, 2026-11-30, in the sweep's turns; .probe/two_per_sm_all_exp.py on branch probes)
# the promoted kernel rose at 5 (77.4 -> 95.0% of cuBLASLt at N = 10,240, K = 8,192), level within a
# point at 3, and on seven widths outside the list (K = 4,096) level or up to 4.9 points. Stream-K's
# 64-row tile two an SM fell at 13 of 15 (BF16, N = 1,024: 52.5 -> 35.0% of cuBLAS): twice the clusters
# leave twice the partial sums. Stream-K for the promoted kernel (gemm_15 adding each K-tile's sums into
# FP32 as step 13 does) fell below these tiles at 22 of the FP8 atlas's 24 cells of 64-256 rows and tied
# at 2 (60-98% of cuBLASLt against 74-105%; H200, 2026-12-01, in the sweep's turns).
_FP8_ROWS_64 = {"BM": 64, "WARPGROUPS_M": 1, "BN": 64, "CLUSTER_M": 1, "CTAS_PER_SM": 2}
_FP8_ROWS_128 = {"BN": 128, "CLUSTER_M": 1}
_FP8_ROWS = ((64, _FP8_ROWS_64), (128, _FP8_ROWS_128), (256, {"CLUSTER_M": 2}))
# From 256 rows up the promoted kernel's width is the one whose waves end first (tile_for), each width
# at its own speed over 128 x 192's, a wave for a wave: the median over the eight projections at M = 256,
# 512 and 1,024 (H200, 2026-11-30, in the sweep's turns with cuBLASLt; 128: 0.78-0.99, 64: 0.53-0.85).
# There 128 x 192 tiles number 34-44 at N = 2,112, where 128 x 64 ran at 88% of cuBLASLt, not 66-72%.
_FP8_NARROW = ((128, 0.88), (64, 0.73))
# Block scales' tiles by M, each narrowing where it would have few tiles (BLOCK_SCALED_SHARERS), their
# rings at most 160 KiB of A and B tiles (A's scales in each stage do not fit beside as deep a ring as
# the shared memory would otherwise hold). On the eight projections (H200, 2026-11-30, in the sweep's
# turns with cuBLASLt's block-scaled GEMM; .probe/blocks_rows_exp.py on branch probes), each against
# the tile it replaced: at 64 rows 64 x 64 two CTAs an SM beat one 64 x 128 an SM at 7 of 8 (by 0.5-19.4:
# 98.7 -> 118.1% at N = 2,112), lost 2.2 points at N = 8,192, K = 28,672, and beat it on all seven widths
# outside the list (K = 4,096, by 8-21; .probe/two_per_sm_all_exp.py); at 128 rows one 128 x 128 tile,
# both consumer warpgroups, beat a 64 x 128 tile at 6 of 8 (by 5-28: 61.2 -> 89.4% at N = 8,192,
# K = 28,672); at 256 rows 128 x 192 in clusters of two beat 128 x 128 at 6 of 8 (by 5-26). Where
# each lost (N = 4,096 and 2,112), it narrows.
_FP8_BLOCK_ROWS = ((64, {**_FP8_ROWS_64, "STAGES": 5}), (128, {**_FP8_ROWS_128, "STAGES": 5}), (256, {"STAGES": 4}))


def output_of(tile: dict | None) -> str:
    """The type a kernel writes C in: BF16 where its epilogue stages BF16, else FP32."""
    element = (tile or {}).get("C_ELEMENT", C_ELEMENTS["fp32"])
    return next(name for name, e in C_ELEMENTS.items() if e == element)
# 128 x 64: at 1024^3 the 128 x 256 tiles number 32 for the H100's 132 SMs, these 128 (the fastest
# there of six smaller tiles tried on the H100 in turns with cuBLAS)
_SMALL = {"BN": 64}
# 128 x 192 beside 128 x 256, where its waves end first (tile_for): DeepSeek-V3's 2112 is 11 x 192, where 9
# tiles of 256 leave 192 of 2304 columns idle (BF16 at M = 1024: 62% -> 80% of cuBLAS, H100, in turns);
# at M = 512, Llama-3 70B's QKV (N = 10,240) makes 1.7 waves of 192 against 1.5 of 256, the last split
# (TF32 1.11x, BF16 1.08x faster in turns, H200)
_WIDTHS = (192,)

STEPS = (
    Step(key="naive", title="Naive FP32",
         technique="FP32 scalar, one thread per element of C",
         source="kernels/gemm_01_naive.py", function="gemm_naive",
         diagram="naive",
         variants=(Variant("gemm.naive_fp32", "naive"),),
         layout="b_row", precision="fp32"),
    Step(key="cute_mma", title="CuTe Simple MMA",
         technique="TF32 tensor cores (SM80 16x8x8 atom), operands from global memory",
         source="kernels/gemm_02_cute_mma.cu", function="gemm_cute_mma",
         diagram="cute", sass=("HMMA",),
         variants=(Variant("gemm.cute_mma_tf32", "simple MMA", {**SM80, "BK": 8}),)),
    Step(key="cute_smem", title="CuTe SMEM",
         technique="+ shared memory tiles filled by cp.async",
         source="kernels/gemm_03_cute_smem.cu", function="gemm_cute_smem",
         diagram="cute", sass=("HMMA",),
         variants=(Variant("gemm.cute_smem_k8", "K-tile 8", {**SM80, "BK": 8}),
                   Variant("gemm.cute_smem_k32", "K-tile 32", {**SM80, "BK": 32})),
         focus=("for (int k = 0;", "copy(tCrC, tCgC);")),
    Step(key="wgmma", title="CuTe WGMMA",
         technique="SM90 wgmma reading swizzled shared memory",
         source="kernels/gemm_04_wgmma.cu", function="gemm_wgmma",
         diagram="wgmma", sass=("HGMMA",), min_cc=HOPPER,
         variants=(Variant("gemm.wgmma", "WGMMA", sm90(128, 1)),),
         also_in=_BF16, focus=("// shared -> tensor cores", "copy(tCrC, tCgC);")),
    Step(key="wgmma_pipe", title="WGMMA Pipelined",
         technique="+ a ring of shared buffers: cp.async of K-tile k+STAGES-1 overlaps the wgmma of k",
         source="kernels/gemm_05_wgmma_pipe.cu", function="gemm_wgmma_pipe",
         diagram="wgmma", sass=("HGMMA",), min_cc=HOPPER,
         variants=(Variant("gemm.wgmma_pipe", "2 stages, 128x128", sm90(128, 2)),
                   Variant("gemm.wgmma_pipe_128x256", "3 stages, 128x256", sm90(256, 3)),
                   Variant("gemm.wgmma_pipe_swizzle", "+ CTA swizzle", sm90(256, 3, BAND))),
         also_in=_BF16),
    Step(key="wgmma_tma", title="WGMMA + TMA",
         technique="+ TMA loads, each issued by one thread (the last warp to finish reading the "
                   "stage), full mbarriers counting the bytes, 3 stages; the copy rounds FP32 to the nearest TF32 on its "
                   "way in, where wgmma would drop the low bits",
         source="kernels/gemm_06_wgmma_tma.cu", function="gemm_wgmma_tma",
         diagram="wgmma", sass=_TMA, min_cc=HOPPER,
         variants=(Variant("gemm.wgmma_tma_128x128", "128x128 tile", sm90(128, 3, BAND)),
                   Variant("gemm.wgmma_tma_128x256", "128x256 tile", sm90(256, 3, BAND))),
         also_in=_BF16, focus=("for (int k = 0; k < k_tiles; ++k) {", "copy(tCrC, tCgC);")),
    Step(key="warp_specialized", title="Warp Specialization",
         technique="+ a producer warpgroup issuing the TMA loads, full/empty mbarrier pairs, two consumer warpgroups "
                   "issuing wgmma, setmaxnreg moving registers to them; then as many stages as shared memory holds",
         source="kernels/gemm_07_warp_specialized.cu", function="gemm_warp_specialized",
         diagram="producer_ring", sass=_TMA, min_cc=HOPPER,
         variants=(Variant("gemm.warp_specialized", "3 stages", sm90(256, 3, BAND, **_WS)),
                   Variant("gemm.warp_specialized_deep", "all the stages that fit", sm90(256, DEEPEST, BAND, **_WS))),
         beyond=True, also_in=_BF16),
    Step(key="cluster", title="Cluster Multicast",
         technique="+ clusters of 2 CTAs on vertically adjacent tiles: each loads half of their common B tile and "
                   "multicasts it into both",
         source="kernels/gemm_08_cluster_multicast.cu", function="gemm_cluster_multicast",
         diagram="multicast", sass=_TMA, min_cc=HOPPER,
         variants=(Variant("gemm.cluster_multicast", "cluster of 2", sm90(256, DEEPEST, BAND, **_WS, cluster_m=2)),),
         beyond=True, also_in=_BF16),
    Step(key="persistent", title="Persistent Kernel",
         technique="+ one CTA per SM for the whole run, walking output tiles in the swizzled order; the next tile's "
                   "loads overlap this tile's epilogue",
         source="kernels/gemm_09_persistent.cu", function="gemm_persistent",
         diagram="tile_schedule", sass=_TMA, min_cc=HOPPER,
         variants=(Variant("gemm.persistent_no_cluster", "no cluster", sm90(256, DEEPEST, BAND, **{**_PERSISTENT, "cluster_m": 1})),
                   Variant("gemm.persistent", "2-CTA clusters", sm90(256, DEEPEST, BAND, **_PERSISTENT))),
         beyond=True, also_in=_BF16, focus=("warpgroup_reg_alloc<CONSUMER_REGS>", "copy(tCrC, thr.partition_C")),
    Step(key="split_wave", title="Split Last Wave",
         technique="+ the tiles past the last full wave split in two along K: their owners compute the first part, "
                   "the clusters that would idle compute the rest and leave partial sums for the owners to add",
         source="kernels/gemm_10_split_wave.cu", function="gemm_split_wave",
         diagram="split_tail", sass=_TMA, min_cc=HOPPER,
         variants=(Variant("gemm.split_wave", "split last wave", sm90(256, DEEPEST, BAND, **_PERSISTENT, SPLIT_WAVE=1)),),
         beyond=True, also_in=_BF16, focus=("static_assert(decltype(size(tCrC))", "copy(tCrC, thr.partition_C")),
    Step(key="tma_store", title="TMA-Store Epilogue",
         technique="+ C leaves through shared memory: each warpgroup stages 32-column chunks that TMA stores while it "
                   "writes the next, and goes back to wgmma as soon as its registers are in shared memory",
         source="kernels/gemm_11_tma_store.cu", function="gemm_tma_store",
         diagram="staged_store", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
         variants=(Variant("gemm.tma_store", "TMA-store epilogue", sm90(256, DEEPEST, BAND, **_STAGED)),),
         beyond=True, also_in=_BF16, small_tile=_SMALL, shown="kernels/gemm_sm90_tma_store.cuh",
         focus=("for (int j = 0; j < BN / EPILOGUE_N", "tma_store_arrive();")),
    Step(key="lean_loop", title="Leaner Main Loop",
         technique="+ the consumers' K-loop issues fewer instructions: the wgmma descriptors sliced by a warp-uniform "
                   "warpgroup index (kept in uniform registers), the ring's stage and parity carried from one K-tile "
                   "to the next",
         source="kernels/gemm_12_lean_loop.cu", function="gemm_lean_loop",
         diagram="lean_loop", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
         variants=(Variant("gemm.lean_loop", "leaner main loop", sm90(256, DEEPEST, BAND, **_STAGED)),),
         beyond=True, also_in=_BF16_FP8, small_tile=_SMALL, widths=_WIDTHS, one_wave_width=ONE_WAVE_WIDTH,
         row_widths=ROW_WIDTHS, shown="kernels/gemm_sm90_lean_loop.cuh"),
)

# The BF16 track: the Hopper steps again, BF16 in, FP32 accumulated and out.
BF16_STEPS = (
    *(in_precision(s, "bf16") for s in STEPS if "bf16" in s.also_in),
    Step(key="bf16_out", title="BF16 C",
         technique="+ C written in BF16, as a model keeps it: the FP32 sums rounded to BF16 as they "
                   "are staged, half the bytes to store",
         source="kernels/gemm_12_lean_loop.cu", function="gemm_lean_loop",
         diagram="lean_loop", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
         variants=(Variant("gemm.bf16_out", "BF16 C", {**sm90(256, DEEPEST, BAND, **_STAGED), **ELEMENTS["bf16"], **_BF16_C}),),
         beyond=True, precision="bf16", small_tile=_SMALL, against="gemm.lean_loop_bf16"),
)
# The FP8 track: e4m3 in, the tensor cores' own accumulation, FP32 out scaled by alpha (the
# operands' per-tensor scales).
FP8_STEPS = (
    *(replace(in_precision(s, "fp8"), row_widths=()) for s in STEPS if "fp8" in s.also_in),   # measured in TF32 and BF16
    Step(key="fp8_promote", title="FP32 Promotion",
         technique="+ each K-tile's wgmmas start from zero and their sums, in the FP8 tensor cores' own precision, "
                   "are added into FP32 registers; the tile narrows (128 x 128, 128 x 192) so that both fit in registers; "
                   "the two consumer warpgroups run half a K-tile apart, so that one promotes while the other's wgmmas run",
         source="kernels/gemm_13_fp8_promote.cu", function="gemm_fp8_promote",
         diagram="lean_loop", sass=(*_FP8_TMA, "UTMASTG"), min_cc=HOPPER,
         variants=(Variant("gemm.fp8_promote_128x128", "128x128 tile", {**sm90(128, DEEPEST, BAND, **_STAGED), **ELEMENTS["fp8"]}),
                   Variant("gemm.fp8_promote", "128x192 tile", {**sm90(192, DEEPEST, BAND, **_STAGED), **ELEMENTS["fp8"]})),
         beyond=True, precision="fp8", rows_tiles=_FP8_ROWS, widths=(128, 64), narrow_speeds=_FP8_NARROW, sharers=PROMOTED_SHARERS,
         one_wave_width=ONE_WAVE_WIDTH),
    Step(key="fp8_blocks", title="Block Scales",
         technique="+ DeepSeek-V3's scales: A's per 1 x 128 of a row, B's per 128 x 128 block; a K-tile is one block "
                   "along K, so each K-tile's sums are multiplied by their row's and their column block's scales as "
                   "they are promoted into FP32; A's scales come with A's K-tile, one bulk copy into the stage, and "
                   "are read while its wgmmas run",
         source="kernels/gemm_14_fp8_blocks.cu", function="gemm_fp8_blocks",
         diagram="lean_loop", sass=(*_FP8_TMA, "UTMASTG", "UBLKCP"), min_cc=HOPPER,
         variants=(Variant("gemm.fp8_blocks", "128x192 tile", _BLOCK_SCALED),),
         beyond=True, precision="fp8", scaling="blocks", rows_tiles=_FP8_BLOCK_ROWS,
         sharers=BLOCK_SCALED_SHARERS),
    Step(key="fp8_bf16_out", title="BF16 C",
         technique="+ C written in BF16, as DeepGEMM and a model write it: the FP32 sums rounded "
                   "to BF16 as they are staged, half the bytes to store",
         source="kernels/gemm_14_fp8_blocks.cu", function="gemm_fp8_blocks",
         diagram="lean_loop", sass=(*_FP8_TMA, "UTMASTG", "UBLKCP"), min_cc=HOPPER,
         variants=(Variant("gemm.fp8_blocks_bf16_out", "BF16 C", {**_BLOCK_SCALED, **_BF16_C}),),
         beyond=True, precision="fp8", scaling="blocks", rows_tiles=_FP8_BLOCK_ROWS,
         sharers=BLOCK_SCALED_SHARERS),
)
TRACKS = {"tf32": STEPS, "bf16": BF16_STEPS, "fp8": FP8_STEPS}
# A track whose first kernel is timed against the same step on the track of wider operands: the
# gain is the narrower type's.
WIDER = {"fp8": "bf16"}
KERNELS: dict[str, tuple[Step, Variant]] = {v.id: (s, v) for track in TRACKS.values() for s in track for v in s.variants}
# The roles of the talk, each named once by its kernel's id: a step appended to STEPS takes none of
# them (and changes no other benchmark's id or source hash) until one is moved to it here.
HEADLINE = "gemm.lean_loop"            # the talk's headline; the settling run's kernel (bench/gemm/settle.py)
HEADLINE_BF16 = "gemm.lean_loop_bf16"  # the BF16 track's headline: its sweep, and beside fast.cu (bench/peers/fastcu.py)
BF16_C = "gemm.bf16_out"               # the BF16 kernel writing C in BF16: beside fast.cu, which writes BF16 too
HEADLINE_FP8 = "gemm.lean_loop_fp8"    # the FP8 track's headline
PROMOTED_FP8 = "gemm.fp8_promote"      # FP8 summed in FP32, a scale a tensor: the FP8 atlas's kernel (bench/gemm/atlas.py)
BLOCK_SCALED = "gemm.fp8_blocks_bf16_out"   # FP8 with DeepSeek-V3's block scales, C in BF16: beside DeepGEMM (bench/peers/deepgemm.py)
TUNED = "gemm.persistent"              # the kernel the tuner searches around (bench/gemm/tune.py)
HEADLINES = {"tf32": HEADLINE, "bf16": HEADLINE_BF16, "fp8": HEADLINE_FP8}
ROLES = {"headline": HEADLINE, "headline_bf16": HEADLINE_BF16, "bf16_c": BF16_C, "headline_fp8": HEADLINE_FP8,
         "promoted_fp8": PROMOTED_FP8, "block_scaled": BLOCK_SCALED, "tuned": TUNED}
# Kernels for the shapes the talk's steps were not tuned for, run by the shape atlas (bench/gemm/atlas.py)
# where kernel_for picks them; each timed against its precision's headline at the reference shape.
# Stream-K's tiles by M: a cluster's column of tiles spans all of M (BM x CLUSTER_M >= M), so each
# column of B is read once whatever the order of the runs; N narrows where M is small, for more tiles
# (the fastest of four tilings at each M of the atlas up to 512, H100, in turns with cuBLAS); in TF32
# none past 128 rows (kernel_for says why).
STREAM_K = Step(key="stream_k", title="Stream-K",
                technique="for shapes whose tiles cannot fill the SMs: every tile's K-tiles laid end "
                          "to end and cut into one equal run per cluster; a tile cut between runs is finished by the "
                          "cluster that started it, adding the partial sums the others left; a cluster's tiles span M",
                source="kernels/gemm_15_stream_k.cu", function="gemm_stream_k",
                diagram="stream_k", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
                variants=(Variant("gemm.stream_k", "stream-K", sm90(256, DEEPEST, BAND, **_STREAMED, cluster_m=4)),),
                beyond=True, against=HEADLINE, focus=("struct Run {", "each follow it"),
                rows_tiles=((64, {"BM": 64, "WARPGROUPS_M": 1, "BN": 64, "CLUSTER_M": 1}),
                            (128, {"BN": 128, "CLUSTER_M": 1})), sharers=STREAM_K_SHARERS)
# BF16 summed over a long K in one accumulator errs past cuBLAS, which splits K (2.1x its error at
# M = 64, K = 28,672): the tiles by M add their sums into FP32 registers every 32 K-tiles
# (PROMOTE_EVERY). On the BF16 atlas's four cells past 1.25x cuBLAS's error (H200, 2026-11-30, in
# turns with the unpromoted kernel): 0.13-0.38x it, from 1.29-2.14x, at the same speed (every 8
# K-tiles: 3% slower at M = 256). At 256 rows the headline sums all of K in one accumulator: at
# 256 x 4096 x 14336 it erred 2.04x cuBLAS (stream-K 0.25x), though faster at 6 of the 8 cells of
# 256 rows (83-100% of cuBLAS, stream-K 71-94%; H200, 2026-11-30, the atlas's pairs). So at 256 rows
# BF16 runs stream-K only where K passes 8,192: there, over operands cold in L2, the headline erred
# 0.49-1.00x cuBLAS at every K up to 8,192 and 0.93-2.08x at 14,336, and beat stream-K at 10 of 13
# such cells (80-100% of cuBLAS against 63-98%; 256 x 2112 x 7168: 91.6 against 72.3), missing by
# 1.5-12.3 points at N = 3,584 and 5,120 (eight projections and twelve shapes outside them,
# N 1,536-5,120, K 4,096-14,336; H200, 2026-12-01).
_STREAM_K_BF16 = in_precision(STREAM_K, "bf16")
STREAM_K_BF16 = replace(_STREAM_K_BF16, against=HEADLINE_BF16, short_k_rows=(8192, 128), rows_tiles=tuple(
    (rows, {**change, "PROMOTE_EVERY": 32})
    for rows, change in (*_STREAM_K_BF16.rows_tiles, (256, {"BN": 128, "CLUSTER_M": 2}))))
SHAPE_STEPS = (STREAM_K, STREAM_K_BF16)
KERNELS.update({v.id: (s, v) for s in SHAPE_STEPS for v in s.variants})
# Ping-pong consumers, for BF16 where K is short: the headline's two consumer warpgroups store their
# halves of a tile at once while the tensor cores wait, 4-9% of its time from M = 512 (the same kernel
# without its stores: 0.91-0.96x its time, H200). Here each warpgroup computes whole 128 x 192 tiles
# (192 accumulators a thread), in turns, two staging buffers each, so that one's epilogue runs beside
# the other's wgmmas. Its time over the headline's, the headline at its own width (H200, 2026-12-01,
# bench.gemm.trial in turns, each beside cuBLAS): at K <= 7,168 with 1.5 waves of its tiles or more,
# 0.87-0.98x at all 9 cells measured (Llama-3 8B QKV and gate+up, DeepSeek-V3 q_b and q_a+kv_a, M
# 512-16,384); with fewer tiles a tie (2048 x 2112 x 7168, 1.00x) or a loss (512 x 2112 x 7168, the
# headline's small tile, 1.33x); at K = 8,192 a tie (1.00x at M = 512 and 4,096), and past it a loss
# (0.99-1.26x, 4 cells of K 14,336-28,672 and under 1.5 waves), where the epilogue is a smaller share
# and the narrower tile's extra reads of A and B cost more than it hides. With more waves there it
# gained little: 0.98-1.07x at 10 cells of K 8,192-28,672 and M 1,024-8,192, 1.02-1.07x at M = 1,024.
# Widths 128 and 160 were slower at 10 of 14 cells of K <= 7,168.
PINGPONG_BF16 = Step(key="pingpong", title="Ping-Pong Consumers",
                     technique="each consumer warpgroup computes whole tiles alone and the two take the CTA's tiles in "
                               "turn: one stores its tile while the other's wgmmas keep the tensor cores busy",
                     source="kernels/gemm_16_pingpong.cu", function="gemm_pingpong",
                     diagram="pingpong", sass=(*_TMA, "UTMASTG"), min_cc=HOPPER,
                     variants=(Variant("gemm.pingpong_bf16", "ping-pong consumers",
                                       {**sm90(192, DEEPEST, BAND, **_STAGED), **ELEMENTS["bf16"], "EPILOGUE_BUFFERS": 4}),),
                     beyond=True, precision="bf16", track="_bf16", against=HEADLINE_BF16,
                     focus=("SoloEpilogue epilogue(alpha, warpgroup);", "epilogue.store(tCrC, tmaC, tm, tn);"))
PINGPONG_MAX_K = 7168           # the longest K it runs at in the atlas (kernel_for)
PINGPONG_MIN_WAVES = 1.5        # ... and the fewest waves of its tiles: fewer leave a warpgroup little to hide behind
TURN_STEPS = (PINGPONG_BF16,)
KERNELS.update({v.id: (s, v) for s in TURN_STEPS for v in s.variants})


# The shape atlas (bench/gemm/atlas.py): each atlas's kernel by its role, and what its records and
# slides call it. Where the kernel has a shape step (streamed_for), that one runs the few-row shapes.
ATLASES = {"tf32": ("headline", "TF32"), "bf16": ("headline_bf16", "BF16"),
           "fp8_blocks": ("block_scaled", "FP8 block-scaled"), "fp8": ("promoted_fp8", "FP8")}


def atlas_id(name: str) -> str:
    return f"atlas.{name}"


def turns_for(kernel: str) -> Step | None:
    """The ping-pong step that stands in for ``kernel`` where K is short and its tiles many, None for a
    kernel that has none."""
    return next((s for s in TURN_STEPS if s.against == kernel), None)


def streamed_for(kernel: str) -> Step | None:
    """The shape step that stands in for ``kernel`` where its tiles are few (stream-K, for its
    precision's headline), None for a kernel that has none."""
    return next((s for s in SHAPE_STEPS if s.against == kernel), None)


def streamed_rows(step: Step, k: int | None = None) -> int:
    """The most rows a shape step runs the atlas's shapes for: those its tiles by M take, fewer where
    K is short enough for its `against` (short_k_rows); at any K where ``k`` is None."""
    most = max(rows for rows, _ in step.rows_tiles)
    if k is not None and step.short_k_rows and k <= step.short_k_rows[0]:
        return min(most, step.short_k_rows[1])
    return most


# The atlas runs stream-K only as far as its tiles by M go (TF32 128 rows, BF16 256): at 512, on
# its reference tile, the headline beat it at 15 of 22 cells, its lone last wave split with the idle
# clusters (TF32 and BF16, the eight projections and three other widths; H200, 2026-11-30, in turns
# with cuBLAS); at 256 rows at 11 of 22, at 128 and 64 at none. In the TF32 atlas's own pairs at 256
# rows the headline reached 87-133% of cuBLAS where stream-K had 62-127% (its lowest 62.0% -> 87%;
# H200, 2026-11-30), at the same error. Where the headline's one-row tile (one_row) keeps three
# quarters of the SMs busy, it runs instead: at 128 rows it beat stream-K at the 7 projections where
# it does in BF16 (84-110% of cuBLAS against 67-101%) and the 6 of them measured in TF32 (100-115
# against 76-107), and in BF16 at the 3 of 4 widths outside them where it does (83-93 against 62-87;
# H200, 2026-12-01, bench.gemm.trial, each beside cuBLAS in turns). Where it would not
# (N = 2,112: 33 tiles keep 66 of 132 SMs busy) stream-K was faster in TF32 (107% against 91%), as fast
# in BF16 at 0.7x cuBLAS's error where the one-row tile had 1.55x; at N = 1,536 (24 tiles) it was
# slower in BF16 (63% against 78%).
def kernel_for(kernel: str, m: int, n: int, k: int, sm_count: int) -> str:
    """The kernel the atlas runs an M x N x K GEMM with in place of ``kernel``: ``kernel`` where its
    one-row tile fills the SMs (one_row_fills); its shape step where it runs that many rows at that K
    (streamed_rows); its ping-pong step where K is at most PINGPONG_MAX_K and that step's tiles make
    PINGPONG_MIN_WAVES waves or more; else ``kernel`` itself."""
    if one_row_fills(step_of(kernel), m, n, k, sm_count):
        return kernel
    streamed, turns = streamed_for(kernel), turns_for(kernel)
    if streamed and m <= streamed_rows(streamed, k):
        return streamed.best.id
    if turns and k <= PINGPONG_MAX_K and ctas(turns.best.tile, m, n) >= PINGPONG_MIN_WAVES * sm_count:
        return turns.best.id
    return kernel


# across sizes: every step of the talk, the BF16 headline and the FP8 track
SWEPT = (*STEPS, KERNELS[HEADLINE_BF16][0], *FP8_STEPS)


def before(bench_id: str) -> str | None:
    """The kernel a kernel is timed in turns with to measure its gain: its step's ``against`` where it
    names one, else the best of the step before its step on its track (TF32: the naive FP32 kernel
    first), so that a step's gain is one pair;
    the first of a track in WIDER, the same step on the wider track; None for the first of any
    other track."""
    step, _ = KERNELS[bench_id]
    if step.against:
        return step.against
    name, track = next((name, track) for name, track in TRACKS.items() if step in track)
    at = track.index(step)
    if at:
        return track[at - 1].best.id
    wider = WIDER.get(name)
    return next(s.best.id for s in TRACKS[wider] if s.key == step.key) if wider else None


def step_of(bench_id: str) -> Step:
    return KERNELS[bench_id][0]


def variant(bench_id: str) -> Variant:
    return KERNELS[bench_id][1]


def all_steps() -> tuple[Step, ...]:
    """Every step: the tracks' and the shapes'."""
    return (*(s for track in TRACKS.values() for s in track), *SHAPE_STEPS, *TURN_STEPS)


def step_named(name: str) -> Step:
    """A step by its name on its track (Step.name)."""
    return next(s for s in all_steps() if s.name == name)


# cuBLAS, the baseline of every GEMM: its benchmarks by precision and B layout.
LAYOUTS = {"b_row": "B row-major (N contiguous)", "b_kmajor": "B K-major (stored transposed)"}
CUBLAS_PRECISIONS = ("fp32", "tf32", "bf16", "fp8")


def cublas_layouts(precision: str) -> tuple[str, ...]:
    """The B layouts cuBLAS is measured in: FP8 tensor cores read both operands K-major only."""
    return ("b_kmajor",) if precision == "fp8" else tuple(LAYOUTS)


def cublas_id(precision: str, layout: str) -> str:
    return f"gemm.cublas_{precision}_{layout}"


# What a benchmark runs of the catalogue, by route, so that a record can say which kernels defined
# it and the deck can tell, from the catalogue alone, whether they are still the ones it would run:
# a kernel's id ("gemm.persistent"), "before:<id>" (the kernel that one is timed in turns with),
# "best:<step name>" (a step's best, whichever variant that is) or a role of ROLES ("headline").
def resolve(route: str) -> str:
    """The kernel id a route names now; KeyError where it names nothing of the catalogue."""
    kind, _, name = route.rpartition(":")
    if kind == "before":
        found = before(name)
    elif kind == "best":
        found = next((s.best.id for s in all_steps() if s.name == name), None)
    elif not kind:
        found = ROLES.get(route, route)
    else:
        found = None
    if found not in KERNELS:
        raise KeyError(f"{route!r} names no kernel of the catalogue")
    return found


def kernel_definition(bench_id: str) -> dict:
    """What of a kernel's catalogue entry defines its results (its words do not)."""
    step, variant = KERNELS[bench_id]
    return {"id": bench_id, "function": step.function, "tile": variant.tile, "sass": list(step.sass),
            "layout": step.layout, "precision": step.precision,
            **({"scaling": step.scaling} if step.scaling != "tensor" else {}),
            **({"small_tile": step.small_tile} if step.small_tile and variant is step.best else {}),
            **({"rows_tiles": [[rows, change] for rows, change in step.rows_tiles]} if step.rows_tiles and variant is step.best else {}),
            **({"widths": list(step.widths)} if step.widths and variant is step.best else {}),
            **({"narrow_speeds": [list(pair) for pair in step.narrow_speeds]} if step.narrow_speeds and variant is step.best else {}),
            **({"sharers": step.sharers} if step.sharers and variant is step.best else {}),
            **({"one_wave": {"width": step.one_wave_width, "fill": WAVE_FILL}} if step.one_wave_width and variant is step.best else {}),
            **({"short_k_rows": list(step.short_k_rows)} if step.short_k_rows and variant is step.best else {})}


def definitions(routes) -> dict:
    """Each route's kernel definition: what a benchmark hashes with its sources (registry.register's
    ``kernels``), and what the deck hashes again to tell a stale record."""
    return {route: kernel_definition(resolve(route)) for route in routes}
