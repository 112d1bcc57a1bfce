"""Past one GPU: the section's context and figures, from a node's results file
(results/<gpu-slug>-x<N>.yaml): the node's links, NVLink peer to peer, NCCL's collectives beside
nccl-tests, an α–β model of all-reduce fitted to them, and what it means for data-parallel
training. Template: multigpu.md.j2."""
from __future__ import annotations

import math

import numpy as np

from bench.multigpu import BUS_FACTOR, COLLECTIVES
from bench.schema import one_line
from slides import kit as fig
from slides.deck import BuildError, Deck

IDS = ("multigpu.p2p", "multigpu.nccl", "multigpu.nccl_tests")
NAMES = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
         "broadcast": "broadcast", "send_recv": "send/recv"}
P2P_KINDS = {"copy_engine": "copy engine, one way", "copy_engine_both_ways": "copy engines, both ways (per direction)",
             "sm_read": "SMs reading the peer", "sm_write": "SMs writing the peer"}
LARGE_FROM = 64 << 20            # from this size up, busbw within LARGE_WITHIN of nccl-tests'
LARGE_WITHIN, SMALL_WITHIN = 0.05, 0.10   # ... and the smallest message's time within SMALL_WITHIN
PEER_COPY_TARGET = 0.85          # a peer copy's share of the NVLink bandwidth per direction
PEER_MODE = "launch"             # the nccl-tests mode the targets compare with: plain launches, as ours


def against_peer(ours: list[dict], peer: list[dict], mode: str = PEER_MODE) -> list[dict]:
    """Each collective and size both measured: the two times and busbws, and ours relative to the
    peer's (peer time / our time: above 1, ours is faster)."""
    theirs = {(r["collective"], r["bytes"]): r for r in peer if r["mode"] == mode}
    rows = []
    for r in ours:
        p = theirs.get((r["collective"], r["bytes"]))
        if p:
            ours_us = r["time_ms"]["median"] * 1e3
            rows.append({"collective": r["collective"], "bytes": r["bytes"], "ours_us": ours_us, "peer_us": p["time_us"],
                         "ours_busbw_gbps": r["busbw_gbps"], "peer_busbw_gbps": p["busbw_gbps"],
                         "ratio": p["time_us"] / ours_us})
    return rows


def targets(compared: list[dict]) -> dict:
    """The large-message and smallest-message targets over ``against_peer``'s rows."""
    large = [r for r in compared if r["bytes"] >= LARGE_FROM]
    smallest = [min((r for r in compared if r["collective"] == c), key=lambda r: r["bytes"])
                for c in COLLECTIVES if any(r["collective"] == c for r in compared)]
    worst = lambda rows: max((abs(r["ratio"] - 1) for r in rows), default=None)
    worst_row = max(large, key=lambda r: abs(r["ratio"] - 1), default=None)
    return {"large": {"from_bytes": LARGE_FROM, "within": LARGE_WITHIN, "worst": worst(large),
                      "met": bool(large) and worst(large) <= LARGE_WITHIN,
                      "worst_at": worst_row and {"name": NAMES[worst_row["collective"]], "bytes": worst_row["bytes"],
                                                 "ours_faster": worst_row["ratio"] > 1}},
            "small": {"within": SMALL_WITHIN, "worst": worst(smallest), "rows": smallest,
                      "met": bool(smallest) and worst(smallest) <= SMALL_WITHIN}}


# A data-parallel step: BF16 gradients all-reduced in PyTorch DDP's default 25 MiB buckets, for models
# each GPU holds whole: mixed-precision Adam keeps 16 bytes a parameter (BF16 weights and gradients,
# FP32 master weights and two moments), activations aside; the largest three that fit are shown.
GRADIENT_BYTES = 2
BUCKET_BYTES = 25 << 20
TRAINING_BYTES_PER_PARAM = 16
MODEL_PARAMS = (125e6, 350e6, 1.3e9, 2.7e9, 7e9, 13e9, 34e9, 70e9)
MODELS_SHOWN = 3


def alpha_beta(sizes, times_s, large_from: int = LARGE_FROM) -> dict:
    """t = α + s/β: α the time of the smallest message (where bytes cost nothing), β the bandwidth
    that the sizes from ``large_from`` up add their bytes at (least squares on t − α = s/β). In
    between, the bandwidth climbs with size, which two numbers cannot follow: the largest
    error of the model over the measured sizes is reported beside it."""
    s, t = np.asarray(sizes, dtype=float), np.asarray(times_s, dtype=float)
    alpha = float(t[np.argmin(s)])
    large = s >= large_from
    if not large.any():
        raise ValueError(f"no size of {large_from} bytes or more to fit the bandwidth to")
    inv_beta = float(np.sum(s[large] * (t[large] - alpha)) / np.sum(s[large] ** 2))
    if inv_beta <= 0:
        raise ValueError("the large messages took no longer than the smallest: no bandwidth to fit")
    errors = 100 * np.abs(alpha + s * inv_beta - t) / t
    worst = int(np.argmax(errors))
    return {"alpha_us": alpha * 1e6, "beta_gbps": 1 / inv_beta / 1e9, "large_from": large_from,
            "max_error_pct": float(errors[worst]), "max_error_bytes": int(s[worst]),
            "large_error_pct": float(errors[large].max()),
            "half_bytes": alpha / inv_beta}       # where latency and bandwidth cost the same


def predict_ms(fit: dict, nbytes: float, buckets: int = 1) -> float:
    return 1e3 * (buckets * fit["alpha_us"] * 1e-6 + nbytes / (fit["beta_gbps"] * 1e9))


def all_reduce_ms(measured: list[tuple[int, float]], fit: dict | None, nbytes: float) -> tuple[float, str]:
    """An all-reduce of ``nbytes``: interpolated (log-log) between the two measured sizes around it,
    or past the largest measured, the α–β fit, which holds there; and which of the two it is."""
    sizes = [s for s, _ in measured]
    if sizes[0] <= nbytes <= sizes[-1]:
        i = next(i for i, s in enumerate(sizes) if s >= nbytes)
        if sizes[i] == nbytes or i == 0:
            return measured[i][1], "measured"
        (s0, t0), (s1, t1) = measured[i - 1], measured[i]
        w = math.log(nbytes / s0) / math.log(s1 / s0)
        return math.exp((1 - w) * math.log(t0) + w * math.log(t1)), "measured"
    if fit is None or nbytes < sizes[0]:
        raise ValueError(f"no all-reduce measured near {nbytes:.0f} bytes")
    return predict_ms(fit, nbytes), "fit"


def data_parallel(measured: list[tuple[int, float]], fit: dict | None, memory_bytes: float) -> list[dict]:
    """The gradient all-reduce of a data-parallel step for the largest models a GPU of
    ``memory_bytes`` trains whole: as one all-reduce, and in DDP's buckets (each bucket's time
    measured at its size; the last one is the remainder)."""
    fitting = [p for p in MODEL_PARAMS if p * TRAINING_BYTES_PER_PARAM <= memory_bytes][-MODELS_SHOWN:]
    rows = []
    for params in fitting:
        nbytes = params * GRADIENT_BYTES
        buckets = math.ceil(nbytes / BUCKET_BYTES)
        one, how = all_reduce_ms(measured, fit, nbytes)
        full, _ = all_reduce_ms(measured, fit, BUCKET_BYTES)
        last, _ = all_reduce_ms(measured, fit, nbytes - (buckets - 1) * BUCKET_BYTES)
        rows.append({"params": params, "label": f"{params / 1e9:g}B", "bytes": nbytes, "one_ms": one, "one_from": how,
                     "buckets": buckets, "bucketed_ms": (buckets - 1) * full + last,
                     "training_bytes": params * TRAINING_BYTES_PER_PARAM})
    return rows


def _p2p(rec: dict) -> dict:
    rows = []
    for r in rec["record"].get("rows", []):
        if not r["peer_access"]:
            rows.append({**r, "kinds": {}})
            continue
        link = r.get("nvlink_gbps_per_direction")          # absent where the pair has no NVLink
        kinds = {k: r[k]["gbps"] / (2 if k == "copy_engine_both_ways" else 1) for k in P2P_KINDS if k in r}
        rows.append({**r, "kinds": kinds, "pct_link": {k: 100 * v / link for k, v in kinds.items()} if link else {}})
    first = next((r for r in rows if r["kinds"]), None)
    worst_pct = min((r["pct_link"]["copy_engine"] for r in rows if "copy_engine" in r.get("pct_link", {})), default=None)
    return {"rec": rec, "rows": rows, "first": first, "kinds": P2P_KINDS, "target_pct": 100 * PEER_COPY_TARGET,
            "met": worst_pct is not None and worst_pct >= 100 * PEER_COPY_TARGET}


def _collectives(nccl: dict, peer: dict, n: int) -> dict:
    ours = nccl["record"].get("rows", [])
    theirs = peer["record"].get("rows", []) if peer["measured"] and not peer["failed"] else []
    compared = against_peer(ours, theirs)
    by = {(r["collective"], r["bytes"]): r for r in ours}
    peer_by = {(r["collective"], r["mode"], r["bytes"]): r for r in theirs}
    largest = max((r["bytes"] for r in ours), default=None)
    shown = [b for b in (LARGE_FROM, 512 << 20, largest) if b and b <= (largest or 0)]
    table = []
    for c in COLLECTIVES:
        mine = [r for r in ours if r["collective"] == c]
        if not mine:
            continue
        small = min(mine, key=lambda r: r["bytes"])["bytes"]
        cell = lambda b: {"ours": by.get((c, b)), "peer": peer_by.get((c, PEER_MODE, b)),
                          "graph": peer_by.get((c, "graph", b))}
        table.append({"collective": c, "name": NAMES[c], "factor": BUS_FACTOR[c](n), "smallest": small,
                      "small": cell(small), "at": [{"bytes": b, **cell(b)} for b in shown]})
    return {"ours": ours, "compared": compared, "targets": targets(compared) if compared else None, "table": table}


def context(deck) -> dict:
    """The section from deck.node, the (path, document) of a node's results file, or None."""
    path, doc = deck.node or (None, None)
    if doc is None:
        deck.missing.setdefault("Past One GPU", []).extend(IDS)
        return {"measured": False, "ids": list(IDS)}
    if "node" not in doc:
        raise BuildError(f"{path}: not a node's results file (it has no node section)")
    node_deck = Deck(doc, deck.benchmarks)
    if doc is not deck.doc:
        deck.beside.append((path, doc))
    try:
        return section(doc, {bid: node_deck.record(bid) for bid in IDS})
    except Exception as e:
        raise BuildError(f"{path}: the multi-GPU section cannot be built from it ({type(e).__name__}: "
                         f"{one_line(e, 200)})") from e


def section(doc: dict, records: dict) -> dict:
    """The section's context from a node's document; ``records``: Deck.record of each of IDS."""
    node = doc["node"]
    nccl, peer = records["multigpu.nccl"], records["multigpu.nccl_tests"]
    n = node["gpu_count"]
    nvls = node["multicast"].get("NCCL_NVLS_ENABLE")
    c = {"measured": True, "ids": list(IDS), "device": doc["device"], "node": node, "n": n,
         "multicast_off": nvls == "0", "nvls": nvls,
         "multicast": "not recorded" if nvls is None else "off" if nvls == "0" else "on",
         "pairs": [{**p, "pcie_path": p.get("pcie_path", "not recorded"),
                    "nvlink_gbps_per_direction": p.get("nvlink_gbps_per_direction")} for p in node["pairs"]],
         "p2p": _p2p(records["multigpu.p2p"]), "nccl": nccl, "peer": peer, "fit": None, "fit_reason": "", "dp": [],
         "dp_reason": ""}
    c.update(_collectives(nccl, peer, n))
    reduce = [r for r in c["ours"] if r["collective"] == "all_reduce"]
    try:
        fit = reduce and alpha_beta([r["bytes"] for r in reduce], [r["time_ms"]["median"] * 1e-3 for r in reduce])
    except ValueError as e:         # sizes the model cannot be fitted to: the slide says why
        fit, c["fit_reason"] = None, f"the α–β model: {e}"
    if fit:
        fit["busbw_gbps"] = fit["beta_gbps"] * BUS_FACTOR["all_reduce"](n)
        largest = max(reduce, key=lambda r: r["bytes"])
        fit["check"] = {"bytes": largest["bytes"], "measured_ms": largest["time_ms"]["median"],
                        "predicted_ms": predict_ms(fit, largest["bytes"])}
        c["fit"] = fit
    if reduce:
        measured = sorted((r["bytes"], r["time_ms"]["median"]) for r in reduce)
        try:
            c["dp"] = data_parallel(measured, fit, doc["device"]["memory_bytes"])
        except ValueError as e:        # the bucket's size was not measured and no fit reaches it
            c["dp_reason"] = str(e)
        c["bucket_ms"] = all_reduce_ms(measured, fit, BUCKET_BYTES)[0] if c["dp"] else None
        c["bucket_bytes"], c["gradient_bytes"] = BUCKET_BYTES, GRADIENT_BYTES
        c["training_bytes_per_param"], c["memory_bytes"] = TRAINING_BYTES_PER_PARAM, doc["device"]["memory_bytes"]
    # the pairs by how they are joined: one line for all of them where they all are joined alike
    groups = {}
    for p in c["pairs"]:
        groups.setdefault((p["nvlinks"], p["via"], p["nvlink_gbps_per_direction"]), []).append(p)
    c["links"] = [{"pairs": ps, "nvlinks": k[0], "via": k[1], "nvlink_gbps_per_direction": k[2], "every": len(groups) == 1}
                  for k, ps in groups.items()]
    link_gbps = [p["nvlink_gbps_per_direction"] for p in node["pairs"] if p.get("nvlink_gbps_per_direction")]
    c["link_gbps"] = min(link_gbps) if link_gbps else None
    return c


# --- figures -----------------------------------------------------------------------------------

def topology(c: dict) -> str:
    """The node's GPUs (four a row), and each pair's NVLinks as recorded: a line for a direct
    bond, a fabric box between the rows for links through NVSwitches."""
    gpus, pairs = c["node"]["gpus"], c["node"]["pairs"]
    per_row, box_w, box_h, gap, top, fabric_h = min(len(gpus), 4), 190, 74, 60, 20, 40
    switched = any(p["via"] == "nvswitch" for p in pairs)
    fabric_y = top + box_h + 30
    second_row = fabric_y + fabric_h + 30 if switched else top + box_h + gap
    w = per_row * box_w + (per_row - 1) * gap + 80
    h = (second_row + box_h if len(gpus) > per_row else fabric_y + fabric_h if switched else top + box_h) + 20
    dwg = fig.drawing(w, h)
    pos = {g["index"]: (40 + (i % per_row) * (box_w + gap), top if i < per_row else second_row)
           for i, g in enumerate(gpus)}
    if switched:
        dwg.add(dwg.rect((40, fabric_y), (w - 80, fabric_h), rx=6, fill="#eef2ff", stroke=fig.ACCENT))
        fig.text(dwg, (w / 2, fabric_y + 26), "NVSwitch fabric", size=13, color=fig.ACCENT, anchor="middle",
                  weight="bold")
        for g in gpus:
            x, y = pos[g["index"]]
            y0, y1 = (y + box_h, fabric_y) if y < fabric_y else (fabric_y + fabric_h, y)
            dwg.add(dwg.line((x + box_w / 2, y0), (x + box_w / 2, y1), stroke=fig.ACCENT, stroke_width=4))
            fig.text(dwg, (x + box_w / 2 + 8, (y0 + y1) / 2 + 5), f"{g['nvlinks']} NVLinks", size=12, color=fig.ACCENT)
    for p in pairs:
        if p["via"] == "direct":
            (xa, ya), (xb, yb) = pos[p["a"]], pos[p["b"]]
            dwg.add(dwg.line((xa + box_w, ya + box_h / 2), (xb, yb + box_h / 2), stroke=fig.ACCENT, stroke_width=4))
            fig.text(dwg, ((xa + box_w + xb) / 2, (ya + yb + box_h) / 2 - 8), f"NV{p['nvlinks']}", size=12,
                      color=fig.ACCENT, anchor="middle")
    for g in gpus:
        x, y = pos[g["index"]]
        dwg.add(dwg.rect((x, y), (box_w, box_h), rx=8, fill="#f9fafb", stroke=fig.INK, stroke_width=1.5))
        fig.text(dwg, (x + box_w / 2, y + 28), f"GPU {g['index']}", size=15, anchor="middle", weight="bold")
        fig.text(dwg, (x + box_w / 2, y + 48), g["name"], size=12, color=fig.MUTED, anchor="middle")
        fig.text(dwg, (x + box_w / 2, y + 64), g["pci_bus_id"], size=11, color=fig.MUTED, anchor="middle")
    return dwg.tostring()


def p2p_bars(c: dict) -> str:
    first = c["p2p"]["first"]
    bars = [fig.Bar(label, first["kinds"][k], fig.PALETTE[i]) for i, (k, label) in enumerate(P2P_KINDS.items())
            if k in first["kinds"]]
    lines = [fig.Line("x", c["link_gbps"], f"NVLink {c['link_gbps']:,.0f} per direction", fig.REF)] if c["link_gbps"] else []
    return fig.bar_chart(bars, f"GB/s per direction, GPU {first['src']} → GPU {first['dst']}", lines)


def busbw_chart(c: dict) -> str:
    series = [fig.Series(NAMES[k], [(r["bytes"], r["busbw_gbps"]) for r in c["ours"] if r["collective"] == k],
                         fig.PALETTE[i], marks=False) for i, k in enumerate(COLLECTIVES)
              if any(r["collective"] == k for r in c["ours"])]
    lines = [fig.Line("y", c["link_gbps"], f"NVLink per direction {c['link_gbps']:,.0f}", fig.REF)] if c["link_gbps"] else []
    return fig.line_chart(fig.Chart("message size (log scale)", "bus bandwidth, GB/s", series, lines,
                                    x_format=fig.fmt_bytes, width=760, height=320))


def latency_chart(c: dict) -> str:
    """All-reduce time against size: the project's, nccl-tests' both ways, and the α–β model."""
    ours = [r for r in c["ours"] if r["collective"] == "all_reduce"]
    peer = c["peer"]["record"].get("rows", []) if c["peer"]["measured"] else []
    series = [fig.Series("this project", [(r["bytes"], r["time_ms"]["median"] * 1e3) for r in ours], fig.ACCENT)]
    for mode, label, color in ((PEER_MODE, "nccl-tests", fig.PALETTE[2]), ("graph", "nccl-tests, graph", fig.MUTED)):
        pts = [(r["bytes"], r["time_us"]) for r in peer if r["collective"] == "all_reduce" and r["mode"] == mode]
        if pts:
            series.append(fig.Series(label, pts, color, marks=False, dash="6,4"))
    if c["fit"]:        # drawn where it was fitted and holds: from its large sizes up
        series.append(fig.Series("α + size/β", [(r["bytes"], 1e3 * predict_ms(c["fit"], r["bytes"])) for r in ours
                                                if r["bytes"] >= c["fit"]["large_from"]], fig.REF, marks=False, dash="2,3"))
    return fig.line_chart(fig.Chart("message size (log scale)", "all-reduce time, µs (log scale)", series,
                                    x_format=fig.fmt_bytes, y_log=True, width=760, height=320))


def draw(deck) -> dict[str, str]:
    c = deck["multigpu"]
    if not c["measured"]:
        return {}
    svgs = {"node_topology.svg": topology(c)}
    if c["p2p"]["first"]:
        svgs["p2p.svg"] = p2p_bars(c)
    if c["ours"]:
        svgs["nccl_busbw.svg"] = busbw_chart(c)
        svgs["nccl_latency.svg"] = latency_chart(c)
    return svgs
