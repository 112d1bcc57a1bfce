"""Past one GPU: the section's context and figures, from a node's results file
(results/<gpu-slug>-x<N>.yaml): the node's links, NVLink peer to peer, NCCL's collectives beside
nccl-tests, an α–β model of all-reduce fitted to them, and what it means for data-parallel
training. Template: multigpu.md.j2."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from bench.core.schema import BUS_FACTOR, COLLECTIVES, one_line
from slides import kit as fig
from slides.fmt import fmt_range
from slides.kit import fmt_bytes
from slides.records import BuildError, Context, Records, span
import slides.precision

IDS = ("multigpu.p2p", "multigpu.nccl", "multigpu.nccl_tests", "multigpu.nvbandwidth")
NAMES = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
         "broadcast": "broadcast", "send_recv": "send/recv", "all_to_all": "all-to-all"}
P2P_KINDS = {"copy_engine": "copy engine, one way", "copy_engine_both_ways": "copy engines, both ways (per direction)",
             "sm_read": "SMs reading the peer", "sm_write": "SMs writing the peer"}
LARGE_FROM = 64 << 20            # from this size up, busbw within LARGE_WITHIN of nccl-tests'
LARGE_WITHIN, SMALL_WITHIN = 0.05, 0.10   # ... and the smallest message's time within SMALL_WITHIN
PEER_COPY_TARGET = 0.85          # a peer copy's share of the NVLink bandwidth per direction
NVBANDWIDTH_WITHIN = 0.03        # a copy engine's bandwidth within this of nvbandwidth's matching test case
COPIES = ("copy_engine", "copy_engine_both_ways")      # what that target holds to nvbandwidth
NVBANDWIDTH_LATENCY_BYTES = 2 << 20     # the buffer its latency case chases through (nvbandwidth.cpp)
EXTRAPOLATED_MARK = "†"         # a time the α–β fit gives past the largest all-reduce measured
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
    large_met = bool(large) and worst(large) <= LARGE_WITHIN
    small_met = bool(smallest) and worst(smallest) <= SMALL_WITHIN
    return {"large": {"from_bytes": LARGE_FROM, "within": LARGE_WITHIN, "worst": worst(large),
                      "met": large_met, "met_said": met_said(large_met),
                      "worst_at": worst_row and {"name": NAMES[worst_row["collective"]], "bytes": worst_row["bytes"],
                                                 "ours_faster": worst_row["ratio"] > 1,
                                                 "ours_gbps": worst_row["ours_busbw_gbps"], "peer_gbps": worst_row["peer_busbw_gbps"]},
                      # which side is faster at the widest gap
                      "faster": worst_row and ("ours" if worst_row["ratio"] > 1 else "nccl-tests")},
            "small": {"within": SMALL_WITHIN, "worst": worst(smallest), "rows": smallest,
                      "met": small_met, "met_said": met_said(small_met)}}


def met_said(met: bool) -> str:
    return "met" if met else "not met"


def agreement_said(targets: dict | None) -> str:
    """The notes' line on how far the project and nccl-tests agree from the large messages up."""
    if targets is None:
        return "nccl-tests did not run beside it on this node, so there is nothing to set side by side."
    large = targets["large"]
    if large["worst"] is None:
        return f"No size from {fmt_bytes(large['from_bytes'])} up was measured by both."
    return f"From {fmt_bytes(large['from_bytes'])} up the two agree within {100 * large['worst']:,.1f}%."


# A data-parallel step: BF16 gradients all-reduced in PyTorch DDP's default 25 MiB buckets, for models
# each GPU holds whole: mixed-precision Adam keeps 16 bytes a parameter (BF16 weights and gradients,
# FP32 master weights and two moments), activations aside; the largest three that fit are shown.
GRADIENT_BYTES = 2
BUCKET_BYTES = 25 << 20
TRAINING_BYTES_PER_PARAM = 16
MODEL_PARAMS = (125e6, 350e6, 1.3e9, 2.7e9, 7e9, 13e9, 34e9, 70e9)
MODELS_SHOWN = 3
# Node sizes side by side: all-reduce's bus bandwidth at these sizes and the largest every size
# measured, and how far a figure may move from the fewest GPUs to the most and still "hold".
SCALING_SIZES = (LARGE_FROM, 1 << 30)
HOLDS_WITHIN = 0.05


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


def collective_ms(measured: list[tuple[int, float]], fit: dict | None, nbytes: float) -> tuple[float, str]:
    """A collective of ``nbytes``: interpolated (log-log) between the two measured sizes around it,
    or past the largest measured, the α–β fit (all-reduce's), extrapolated; and which of the two it is."""
    sizes = [s for s, _ in measured]
    if sizes[0] <= nbytes <= sizes[-1]:
        i = next(i for i, s in enumerate(sizes) if s >= nbytes)
        if sizes[i] == nbytes or i == 0:
            return measured[i][1], "measured"
        (s0, t0), (s1, t1) = measured[i - 1], measured[i]
        w = math.log(nbytes / s0) / math.log(s1 / s0)
        return math.exp((1 - w) * math.log(t0) + w * math.log(t1)), "measured"
    if fit is None or nbytes < sizes[0]:
        raise ValueError(f"no size measured near {nbytes:.0f} bytes")
    return predict_ms(fit, nbytes), "fit"


# where the time of a model's gradients as one all-reduce comes from, as the notes say it
ONE_HOW = {"measured": "interpolated between measured sizes", "fit": "past the largest measured size: extrapolated by the α–β fit"}


def data_parallel(measured: list[tuple[int, float]], fit: dict | None, memory_bytes: float) -> list[dict]:
    """The gradient all-reduce of a data-parallel step for the largest models a GPU of
    ``memory_bytes`` trains whole: as one all-reduce, and in DDP's buckets (each bucket's time
    measured at its size; the last one is the remainder)."""
    fitting = [p for p in MODEL_PARAMS if p * TRAINING_BYTES_PER_PARAM <= memory_bytes][-MODELS_SHOWN:]
    rows = []
    for params in fitting:
        nbytes = params * GRADIENT_BYTES
        buckets = math.ceil(nbytes / BUCKET_BYTES)
        one, how = collective_ms(measured, fit, nbytes)
        full, full_from = collective_ms(measured, fit, BUCKET_BYTES)
        last, last_from = collective_ms(measured, fit, nbytes - (buckets - 1) * BUCKET_BYTES)
        rows.append({"params": params, "label": f"{params / 1e9:g}B", "bytes": nbytes, "one_ms": one, "one_from": how,
                     "one_how": ONE_HOW[how], "one_mark": EXTRAPOLATED_MARK if how == "fit" else "",
                     "buckets": buckets, "bucketed_ms": (buckets - 1) * full + last,
                     # "fit" where a bucket passes the largest all-reduce measured: extrapolated
                     "bucketed_from": "fit" if "fit" in (full_from, last_from) else "measured",
                     "bucketed_mark": EXTRAPOLATED_MARK if "fit" in (full_from, last_from) else "",
                     "training_bytes": params * TRAINING_BYTES_PER_PARAM})
    return rows


# A mixture-of-experts layer sized as DeepSeek-V3's (its configuration: 7,168 values a token, each
# token to 8 of 256 experts), 4,096 tokens a GPU in BF16. The dispatch sends each token to its
# experts' GPUs and the combine brings their outputs back: an all-to-all each way, the experts spread
# evenly over the GPUs and the routing over the experts (each GPU keeps 1/n of its own).
MOE = {"model": "DeepSeek-V3", "hidden": 7168, "top_k": 8, "experts": 256, "tokens_per_gpu": 4096, "value_bytes": 2}


def moe_layer(rows: list[dict], n: int, peer: list[dict] = ()) -> dict | None:
    """A MOE layer's dispatch and combine on this node from NCCL's measured all-to-all: the bytes
    each GPU sends and receives each way, the time of one (interpolated between the measured sizes
    around it) and of both, and the bus bandwidth there; beside it nccl-tests' all-to-all at that
    size (``peer``: its rows), level where the two are within LARGE_WITHIN. None without an
    all-to-all measured, and no time where its size is past the sizes measured."""
    ours = [r for r in rows if r["collective"] == "all_to_all"]
    if not ours:
        return None
    peer_rows = [r for r in peer if r["collective"] == "all_to_all" and r["mode"] == PEER_MODE]
    measured = [(r["bytes"], r["time_ms"]["median"]) for r in ours]
    nbytes = MOE["tokens_per_gpu"] * MOE["top_k"] * MOE["hidden"] * MOE["value_bytes"]
    out = {**MOE, "n": n, "bytes": nbytes, "largest_bytes": measured[-1][0], "rows": ours, "peer_rows": peer_rows}
    if not measured[0][0] <= nbytes <= measured[-1][0]:
        return {**out, "measured": False, "sized_said": []}
    ms, _ = collective_ms(measured, None, nbytes)
    algbw = nbytes / (ms * 1e-3) / 1e9
    theirs = [(r["bytes"], r["time_us"] * 1e-3) for r in peer_rows]
    versus = None
    if theirs and theirs[0][0] <= nbytes <= theirs[-1][0]:
        ratio = collective_ms(theirs, None, nbytes)[0] / ms          # above 1: ours is faster
        versus = {"ratio": ratio, "pct": 100 * abs(ratio - 1), "within_pct": 100 * LARGE_WITHIN,
                  "call": "level with" if abs(ratio - 1) <= LARGE_WITHIN else "faster than" if ratio > 1 else "slower than"}
    return {**out, "measured": True, "one_way_ms": ms, "layer_ms": 2 * ms, "algbw_gbps": algbw,
            "busbw_gbps": algbw * BUS_FACTOR["all_to_all"](n), "kept_share": 1 / n, "versus_peer": versus,
            "versus_said": f"; {versus['call']} nccl-tests ({versus['pct']:,.1f}% apart)" if versus else "",
            "sized_said": [f"Sized as {MOE['model']}'s, each way moves {fmt_bytes(nbytes)} a GPU and takes {ms:,.2f} ms here."]}


# The backward pass a step's all-reduce must hide under: for each token, the gradient of a layer's
# input and of its weights, each a GEMM of 2 FLOPs a parameter, at the rate the results measured for
# cuBLAS BF16 (in turns with the BF16 headline, at the reference shape).
BACKWARD_FLOPS_PER_PARAM = 4


def backward(dp: list[dict], rate_tflops: float | None) -> dict | None:
    """Each model's backward pass at ``rate_tflops`` beside its gradients' all-reduce in buckets: the
    tokens a GPU must take in a step for the backward pass to last as long (past them, the all-reduce
    can hide under it), and whether that count is alike (within HOLDS_WITHIN) for every model."""
    if not dp or not rate_tflops:
        return None
    rows = [{**r, "backward_ms_per_token": 1e3 * BACKWARD_FLOPS_PER_PARAM * r["params"] / (rate_tflops * 1e12),
             "tokens": r["bucketed_ms"] * 1e-3 * rate_tflops * 1e12 / (BACKWARD_FLOPS_PER_PARAM * r["params"])} for r in dp]
    fewest, most = min(rows, key=lambda r: r["tokens"]), max(rows, key=lambda r: r["tokens"])
    tokens, alike = span(r["tokens"] for r in rows), most["tokens"] <= (1 + HOLDS_WITHIN) * fewest["tokens"]
    return {"rate_tflops": rate_tflops, "flops_per_param": BACKWARD_FLOPS_PER_PARAM, "rows": rows,
            "tokens": tokens, "fewest": fewest, "most": most, "alike": alike, "holds_within": HOLDS_WITHIN,
            # where the backward pass outlasts the all-reduce, as the notes say it: one count where alike
            "tokens_said": f"from {fmt_range(tokens, 0)} tokens a GPU" if alike else
                           f"from {fewest['tokens']:,.0f} to {most['tokens']:,.0f} tokens a GPU",
            "extrapolated": [r for r in rows if r["bucketed_from"] == "fit"]}


def _p2p(rec: dict, peer: dict) -> dict:
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
    met = worst_pct is not None and worst_pct >= 100 * PEER_COPY_TARGET
    chase = rec["record"].get("params", {}).get("chase_bytes")
    return {"rec": rec, "rows": rows, "first": first, "kinds": P2P_KINDS, "target_pct": 100 * PEER_COPY_TARGET,
            "met": met, "met_said": met_said(met), "peer": against_nvbandwidth(rows, peer), "over_pairs": over_pairs(rows),
            # the first pair as the slide and its notes say it
            "copy_engine": first and first_copy(first), "latency": first and first.get("latency_ns"),
            # its chase's working set: the local figure is this node's GPU, not the single card's of the latency slides
            "chase_said": f"(the same {fmt_bytes(chase)} chase, on this node)" if chase else "",
            "first_said": first_pair_said(first) if first else []}


def first_copy(first: dict) -> dict | None:
    """The first pair's copy engine, one way (None: not measured), and what the slide says after
    it: its share of the link, and both directions at once."""
    if "copy_engine" not in first["kinds"]:
        return None
    of_link = (f", {first['pct_link']['copy_engine']:,.0f}% of the {first['nvlink_gbps_per_direction']:,.0f} GB/s "
               f"that {first['nvlinks']} NVLinks carry each way") if first["pct_link"] else ""
    both = (f"; both directions at once, {first['copy_engine_both_ways']['gbps']:,.0f} GB/s in all"
            if "copy_engine_both_ways" in first["kinds"] else "")
    return {"gbps": first["kinds"]["copy_engine"], "beyond": of_link + both}


def first_pair_said(first: dict) -> list[str]:
    """The notes' sentences on the first pair: its copy engine against the link, a load's latency."""
    said = []
    if "copy_engine" in first["kinds"]:
        of_link = f", {first['pct_link']['copy_engine']:,.0f}% of the link" if first["pct_link"] else ""
        said.append(f"On the first pair a copy engine moves {first['kinds']['copy_engine']:,.0f} GB/s{of_link}.")
    if first.get("latency_ns"):
        said.append(f"A peer's load takes {first['latency_ns']['peer']:,.0f} ns, a local one {first['latency_ns']['local']:,.0f}.")
    return said


def over_pairs(rows: list[dict]) -> dict:
    """What the ordered pairs with peer access measured, each kind's lowest and highest over them
    (GB/s and share of NVLink), and the load latency's from a peer and local: the notes' summary."""
    peered = [r for r in rows if r["kinds"]]
    kinds = {k: {"gbps": span([r["kinds"][k] for r in peered if k in r["kinds"]]),
                 "pct": span([r["pct_link"][k] for r in peered if k in r["pct_link"]])}
             for k in P2P_KINDS if any(k in r["kinds"] for r in peered)}
    timed = [r["latency_ns"] for r in peered if r.get("latency_ns")]
    return {"pairs": len(peered),
            "kinds_said": [f"{P2P_KINDS[k]} {fmt_range(v['gbps'], 0)} GB/s" + (f" ({fmt_range(v['pct'], 0)}% of NVLink)" if v["pct"] else "")
                           for k, v in kinds.items()],
            "latency_said": f"load latency {fmt_range(span([t['peer'] for t in timed]), 0)} ns from a peer, "
                            f"{fmt_range(span([t['local'] for t in timed]), 0)} ns local." if timed else ""}


def against_nvbandwidth(rows: list[dict], peer: dict) -> dict:
    """Each pair's measurements beside nvbandwidth's matching test case (ours per direction, as its
    bidirectional case reports the measured direction): the ratio ours / nvbandwidth, and the
    copy-engine target over every pair."""
    if not peer["measured"] or peer["failed"]:
        return {"rec": peer, "measured": False, "pairs": []}
    theirs = {(r["matches"], r["src"], r["dst"]): r["value"] for r in peer["record"]["rows"] if r.get("matches")}
    pairs = []
    for r in rows:
        if not r["kinds"]:
            continue
        ours = {**r["kinds"], **({"latency_ns": r["latency_ns"]["peer"]} if r.get("latency_ns") else {})}
        pairs.append({"src": r["src"], "dst": r["dst"],
                      "kinds": {k: {"ours": v, "nvbandwidth": theirs[(k, r["src"], r["dst"])],
                                    "ratio": v / theirs[(k, r["src"], r["dst"])]}
                                for k, v in ours.items() if (k, r["src"], r["dst"]) in theirs}})
    gaps = [abs(p["kinds"][k]["ratio"] - 1) for p in pairs for k in COPIES if k in p["kinds"]]
    kinds = dict.fromkeys(k for p in pairs for k in p["kinds"])
    met = bool(gaps) and max(gaps) <= NVBANDWIDTH_WITHIN
    return {"rec": peer, "measured": bool(gaps), "pairs": pairs, "first": pairs[0] if pairs else None,
            # each case's ratio ours / nvbandwidth, lowest and highest over the pairs
            "ratios_said": [f"{P2P_KINDS.get(k, 'load latency')} {fmt_range(span([p['kinds'][k]['ratio'] for p in pairs if k in p['kinds']]), 2)}"
                            for k in kinds],
            "within": NVBANDWIDTH_WITHIN, "worst": max(gaps, default=None),
            "met": met, "met_said": met_said(met), "version": peer["record"]["params"]["version"],
            "latency_bytes": NVBANDWIDTH_LATENCY_BYTES,
            "args": peer["record"]["params"]["args"]}


def _peer_rows(peer: dict) -> list[dict]:
    return peer["record"].get("rows", []) if peer["measured"] and not peer["failed"] else []


def node_moe(nccl: dict, peer: dict, node: dict) -> dict | None:
    """A node's MOE layer (moe_layer) from its records, with the all-to-all its NCCL ran and its link."""
    moe = moe_layer(nccl["record"].get("rows", []), node["gpu_count"], _peer_rows(peer))
    return moe and {**moe, "implementation": nccl["record"].get("params", {}).get("all_to_all") or "NCCL's all-to-all",
                    "link_gbps": link_gbps(node)}


def _collectives(nccl: dict, peer: dict, n: int) -> dict:
    ours = nccl["record"].get("rows", [])
    theirs = _peer_rows(peer)
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
        at = [{"bytes": b, **cell(b)} for b in shown]
        # what NCCL chose at the sizes shown: one (algorithm, protocol) said once, where it chose one at each
        recorded = [a["ours"] for a in at if (a["ours"] or {}).get("algorithm")]
        chosen = {(r["algorithm"], r["protocol"]) for r in recorded}
        t = {"collective": c, "name": NAMES[c], "factor": BUS_FACTOR[c](n), "smallest": small,
             "small": cell(small), "at": at, "chose": ", ".join(next(iter(chosen))) if len(chosen) == 1 else None,
             "chose_at_each": len(recorded) == len(at)}
        table.append({**t, "runs_said": runs_said(t)})
    found = targets(compared) if compared else None
    # a collective whose smallest size is not the first's names its own in the table
    table = [{**t, "smallest_said": f"({fmt_bytes(t['smallest'])})" if t["smallest"] != table[0]["smallest"] else ""}
             for t in table]
    small_peer = table and table[0]["small"]["peer"]
    return {"ours": ours, "compared": compared, "targets": found, "table": table, "busbw_said": reaches_said(table),
            "small_peer_said": f", and {small_peer['time_us']:,.1f} µs in nccl-tests" if small_peer else "",
            "agreement_said": agreement_said(found), "graph_said": graph_said(table)}


def runs_said(t: dict) -> str:
    """A collective's bus bandwidth at the sizes shown and what NCCL chose there, as the notes say it:
    one choice at every size said once, after them, and the smallest size's."""
    sizes = [at_size_said(a, unit=" GB/s" if i == 0 else "", choice=not t["chose"]) for i, a in enumerate(t["at"])]
    chose = f"; NCCL chose {t['chose']} {'at each' if t['chose_at_each'] else 'wherever it reported a choice'}" if t["chose"] else ""
    small = t["small"]["ours"]
    smallest = f", and {small['algorithm']}, {small['protocol']} at its smallest size" if small.get("algorithm") else ""
    return f"{t['name'].capitalize()} runs at {and_list(sizes)}{chose}{smallest}."


def at_size_said(a: dict, unit: str, choice: bool) -> str:
    """A collective's bus bandwidth at one size, with NCCL's choice there where it reported one and ``choice``."""
    chose = f" (NCCL chose {a['ours']['algorithm']}, {a['ours']['protocol']})" if choice and a["ours"].get("algorithm") else ""
    return f"{a['ours']['busbw_gbps']:,.1f}{unit} at {fmt_bytes(a['bytes'])}{chose}"


def and_list(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return " and ".join([", ".join(items[:-1]), items[-1]]) if len(items) > 1 else "".join(items)


def reaches_said(table: list[dict]) -> str:
    """The notes' first line on NCCL: what the first collective reaches at the largest size shown."""
    if not table:
        return "NCCL was not measured on this node, so the slide has no curve."
    last = table[0]["at"][-1]
    return f"{table[0]['name'].capitalize()} reaches {last['ours']['busbw_gbps']:,.1f} GB/s at {fmt_bytes(last['bytes'])}."


def graph_said(table: list[dict]) -> str:
    """Each collective whose largest size nccl-tests ran both ways, captured in a CUDA graph against
    launched one by one, as the notes say it."""
    both = [(t["name"], t["at"][-1]) for t in table if t["at"] and t["at"][-1]["graph"] and t["at"][-1]["peer"]]
    if not both:
        return "no graph-mode run of nccl-tests is recorded."
    return "; ".join(f"{name} at {fmt_bytes(a['bytes'])} {a['graph']['busbw_gbps']:,.1f} GB/s in a graph "
                     f"against {a['peer']['busbw_gbps']:,.1f} launched" for name, a in both) + "."


@dataclass(frozen=True)
class Multigpu(Context):
    """Past one GPU, from the node file of the most GPUs (measured False: none, and the talk shows
    nothing of it): the node's GPUs and how they are joined, NVLink peer to peer, NCCL's collectives
    beside nccl-tests, the α–β model of all-reduce, a MOE layer's all-to-all, a data-parallel step's
    all-reduce beside the backward pass, and the node sizes side by side."""
    measured: bool
    ids: tuple[str, ...] = IDS
    n: int = 0
    device: dict | None = None
    node: dict | None = None
    links: list[dict] | None = None         # the pairs by how they are joined, each group named as the slide lists it
    joins_said: list[str] | None = None     # the notes' sentences on the links and the PCIe paths
    link_gbps: float | None = None          # the slowest NVLink per direction (None: no NVLink)
    link_limit_said: str = ""               # what the bus bandwidth slide says of it
    multicast: str = ""                     # NVLink multicast: off, on or not recorded
    multicast_note: str = ""                # what multicast off leaves NCCL, after its state
    multicast_said: str = ""
    nccl_version: str = ""
    p2p: dict | None = None
    nccl: dict | None = None                # multigpu.nccl as a slide shows it (Records.record)
    peer: dict | None = None                # multigpu.nccl_tests, likewise
    ours: list[dict] | None = None          # NCCL's rows
    compared: list[dict] | None = None      # ours beside nccl-tests' at each size both measured
    targets: dict | None = None
    table: list[dict] | None = None         # each collective at the sizes shown
    busbw_said: str = ""
    small_peer_said: str = ""               # nccl-tests' time of the smallest all-reduce, after ours
    agreement_said: str = ""
    graph_said: str = ""
    moe: dict | None = None
    moe_from_said: tuple[str, ...] = ()     # the notes' line where the MOE layer is another node size's
    fit: dict | None = None                 # the α–β model of all-reduce
    fit_reason: str = ""
    dp: list[dict] | None = None            # the data-parallel step of each model shown
    dp_reason: str = ""
    bucket_ms: float | None = None
    largest_bytes: int | None = None        # the largest all-reduce measured
    extrapolated_said: str = ""             # where a model's buckets pass the largest all-reduce measured
    marked: bool = False                    # a time in the table is the fit's, extrapolated
    bucket_bytes: int = BUCKET_BYTES
    gradient_bytes: int = GRADIENT_BYTES
    training_bytes_per_param: int = TRAINING_BYTES_PER_PARAM
    memory_bytes: int | None = None
    rate: dict | None = None                # the BF16 GEMM rate the backward pass runs at
    backward: dict | None = None
    backward_rate_said: str = ""            # the rate the table's backward pass runs at
    scaling: dict | None = None             # the node sizes side by side (None: fewer than two)


def context(deck) -> Multigpu:
    """The section from deck.node, the (path, document) of the node file of the most GPUs, or None;
    and the node sizes side by side from deck.nodes, all of this GPU's node files."""
    path, doc = deck.node or (None, None)
    if doc is None:
        deck.missing.setdefault("Past One GPU", []).extend(IDS)
        return Multigpu(measured=False)
    records = lambda d: {bid: Records(d).record(bid) for bid in IDS}
    detailed = records(doc)
    for bid, r in detailed.items():         # listed as the single-GPU slides list theirs
        if not r["measured"]:
            deck.missing.setdefault(f"Past One GPU: {doc['node']['gpu_count']} GPUs", []).append(bid)
    c = _built_from(path, lambda: section(doc, detailed))
    rate = gemm_rate(deck.of(slides.precision).headline)
    sizes = scaling([_built_from(p, lambda: node_size(d, records(d)["multigpu.nccl"])) for p, d in deck.nodes])
    moe = c.moe
    if moe is None:        # the all-to-all of the node of most GPUs that measured it, where this one did not
        for p, d in reversed(deck.nodes):
            rec = records(d)
            if rec["multigpu.nccl"]["measured"] and not rec["multigpu.nccl"]["failed"]:
                moe = _built_from(p, lambda: node_moe(rec["multigpu.nccl"], rec["multigpu.nccl_tests"], d["node"]))
                if moe:
                    break
    deck.beside += [(p, d) for p, d in deck.nodes if d is not deck.doc]
    bw = backward(c.dp, rate and rate["tflops"])
    return replace(c, rate=rate, backward=bw, scaling=sizes, moe=moe,
                   moe_from_said=(f"The {c.n}-GPU node's run has no all-to-all, so this one is the {moe['n']}-GPU "
                                  "node's, the largest that measured it.",) if moe and moe["n"] != c.n else (),
                   backward_rate_said=f": at {rate['name']}'s {bw['rate_tflops']:,.1f} TFLOPS, "
                                      f"{bw['flops_per_param']} FLOPs a parameter a token" if bw else "")


def gemm_rate(headline: dict | None) -> dict | None:
    """The GEMM rate of the single-GPU results: cuBLAS BF16 in turns with the BF16 headline."""
    if not headline or not headline.get("baseline"):
        return None
    return {"tflops": headline["baseline_tflops"], "name": f"cuBLAS {headline['baseline']['precision']}"}


def _built_from(path, make):
    """``make()``, or a BuildError naming the node file ``path`` it was made from."""
    try:
        return make()
    except Exception as e:
        raise BuildError(f"{path}: the multi-GPU section cannot be built from it ({type(e).__name__}: "
                         f"{one_line(e, 200)})") from e


def all_reduce_model(rows: list[dict], n: int, memory_bytes: float) -> dict:
    """All-reduce on a node of n GPUs, from its collectives' ``rows``: the α–β fit (None where the
    sizes allow none, with the reason) and the data-parallel step from the measured times (none
    where the bucket's size is out of reach, with the reason)."""
    reduce = [r for r in rows if r["collective"] == "all_reduce"]
    out = {"fit": None, "fit_reason": "", "dp": [], "dp_reason": "", "bucket_ms": None, "largest_bytes": None,
           "extrapolated_said": "", "marked": False}
    if not reduce:
        return out
    try:
        fit = alpha_beta([r["bytes"] for r in reduce], [r["time_ms"]["median"] * 1e-3 for r in reduce])
    except ValueError as e:         # sizes the model cannot be fitted to: the slide says why
        out["fit_reason"] = f"the α–β model: {e}"
    else:
        fit["busbw_gbps"] = fit["beta_gbps"] * BUS_FACTOR["all_reduce"](n)
        largest = max(reduce, key=lambda r: r["bytes"])
        fit["check"] = {"bytes": largest["bytes"], "measured_ms": largest["time_ms"]["median"],
                        "predicted_ms": predict_ms(fit, largest["bytes"])}
        out["fit"] = fit
    measured = sorted((r["bytes"], r["time_ms"]["median"]) for r in reduce)
    try:
        out["dp"] = data_parallel(measured, out["fit"], memory_bytes)
    except ValueError as e:        # the bucket's size was not measured and no fit reaches it
        out["dp_reason"] = str(e)
    if out["dp"]:
        out["bucket_ms"] = collective_ms(measured, out["fit"], BUCKET_BYTES)[0]
        out["largest_bytes"] = measured[-1][0]
        # where a model's gradients or buckets pass the largest all-reduce measured, its time is the fit's
        extrapolated = any(r["bucketed_from"] == "fit" for r in out["dp"])
        out["extrapolated_said"] = (f"Marked: past the largest all-reduce measured ({fmt_bytes(measured[-1][0])}), "
                                    "extrapolated by the α–β fit.") if extrapolated else ""
        out["marked"] = extrapolated or any(r["one_from"] == "fit" for r in out["dp"])
    return out


def section(doc: dict, records: dict) -> Multigpu:
    """The section's context from a node's document; ``records``: Records.record of each of IDS."""
    node = doc["node"]
    nccl, peer = records["multigpu.nccl"], records["multigpu.nccl_tests"]
    n = node["gpu_count"]
    nvls = node["multicast"].get("NCCL_NVLS_ENABLE")
    pairs = [{**p, "pcie_path": p.get("pcie_path", "not recorded"),
              "nvlink_gbps_per_direction": p.get("nvlink_gbps_per_direction")} for p in node["pairs"]]
    # the pairs by how they are joined: one line for all of them where they all are joined alike
    links = grouped(pairs, lambda p: (p["nvlinks"], p["via"], p["nvlink_gbps_per_direction"]))
    links = [{"pairs": ps, "nvlinks": k[0], "switched": k[1] == "nvswitch", "nvlink_gbps_per_direction": k[2],
              "every": len(links) == 1, **joined_said(k[1] == "nvswitch")} for k, ps in links.items()]
    paths = grouped(pairs, lambda p: p["pcie_path"])
    slowest = link_gbps(node)
    collectives = _collectives(nccl, peer, n)
    return Multigpu(
        measured=True, device=doc["device"], node=node, n=n,
        links=[{**g, "named": link_named(g, n)} for g in links],
        joins_said=[*map(link_said, links), *(path_said(path, ps, len(paths) == 1) for path, ps in paths.items())],
        link_gbps=slowest, link_limit_said=link_limit_said(slowest), multicast_note=": NCCL uses its ring and tree algorithms" if nvls == "0" else "", multicast_said=multicast_said(nvls),
        multicast="not recorded" if nvls is None else "off" if nvls == "0" else "on",
        nccl_version=nccl["record"]["params"]["nccl"] if nccl["measured"] and not nccl["failed"] else "not measured",
        p2p=_p2p(records["multigpu.p2p"], records["multigpu.nvbandwidth"]), nccl=nccl, peer=peer,
        **collectives, moe=node_moe(nccl, peer, node), memory_bytes=doc["device"]["memory_bytes"],
        **all_reduce_model(collectives["ours"], n, doc["device"]["memory_bytes"]))


def link_named(link: dict, n: int) -> str:
    """A group of pairs joined alike, as the first slide's list names it."""
    if len(link["pairs"]) == 1:
        return f"GPU {link['pairs'][0]['a']} ↔ GPU {link['pairs'][0]['b']}"
    if link["every"]:
        return f"Every pair of the {n} GPUs"
    each = ", ".join(f"{p['a']}↔{p['b']}" for p in link["pairs"])
    return f"{len(link['pairs'])} pairs ({each})"


def joined_said(switched: bool) -> dict:
    """The words around a group's NVLink count on the first slide: through the switches, from each GPU."""
    return {"through": "through NVSwitches," if switched else "", "from_each": "from each GPU" if switched else ""}


def link_limit_said(gbps: float | None) -> str:
    """The bus bandwidth slide's clause on the slowest NVLink a direction, where the node has NVLink."""
    return f", at most {gbps:,.0f} GB/s a direction" if gbps else ""


def pairs_said(pairs: list[dict]) -> str:
    return ", ".join(f"GPUs {p['a']} and {p['b']}" for p in pairs)


def link_said(link: dict) -> str:
    """The notes' sentence on a group of pairs joined alike."""
    who = "Every pair of GPUs" if link["every"] else pairs_said(link["pairs"])
    many = link["every"] or len(link["pairs"]) > 1
    if link["switched"]:
        return f"{who} {'meet' if many else 'meets'} through the NVSwitches, each GPU over its {link['nvlinks']} NVLinks into them."
    return f"{who} {'share' if many else 'shares'} {link['nvlinks']} NVLinks, GPU to GPU."


def path_said(path: str, pairs: list[dict], every: bool) -> str:
    """The notes' sentence on the pairs a PCIe path joins."""
    return f"The PCIe path is {path} for {'every pair' if every else pairs_said(pairs)}."


def multicast_said(nvls: str | None) -> str:
    """Whether NCCL ran with NVLink multicast (NCCL_NVLS_ENABLE as the node file records it), as the notes say it."""
    if nvls is None:
        return "The node's file does not record whether NVLink multicast was kept off."
    if nvls == "0":
        return (f"NVLink multicast was kept off in every process of the run (NCCL_NVLS_ENABLE={nvls}), "
                "so NCCL uses its ring and tree algorithms over plain NVLink.")
    return f"NVLink multicast was on in every process of the run (NCCL_NVLS_ENABLE={nvls})."


def grouped(pairs: list[dict], key) -> dict:
    """The pairs by ``key(pair)``, in the order each key first appears."""
    groups = {}
    for p in pairs:
        groups.setdefault(key(p), []).append(p)
    return groups


def link_gbps(node: dict) -> float | None:
    """The slowest NVLink bandwidth per direction between two of the node's GPUs (None: no NVLink)."""
    rates = [p["nvlink_gbps_per_direction"] for p in node["pairs"] if p.get("nvlink_gbps_per_direction")]
    return min(rates) if rates else None


def node_size(doc: dict, nccl: dict) -> dict:
    """One node size for the scaling slide: its GPU count, all-reduce's bus bandwidth by size (none
    where multigpu.nccl was not measured), its α–β fit and the data-parallel step it implies."""
    n = doc["node"]["gpu_count"]
    rows = nccl["record"].get("rows", []) if nccl["measured"] else []
    return {"n": n, "factor": BUS_FACTOR["all_reduce"](n), "link_gbps": link_gbps(doc["node"]),
            "busbw": {r["bytes"]: r["busbw_gbps"] for r in rows if r["collective"] == "all_reduce"},
            "nccl": nccl, **all_reduce_model(rows, n, doc["device"]["memory_bytes"])}


def change(before: float, after: float) -> dict:
    """``after`` against ``before`` in words: it holds within HOLDS_WITHIN, else it rises or falls by so much."""
    ratio = after / before
    verdict = "holds within" if abs(ratio - 1) <= HOLDS_WITHIN else "rises by" if ratio > 1 else "falls by"
    return {"before": before, "after": after, "pct": 100 * abs(ratio - 1), "verdict": verdict}


def step_against_factor(before_ms: float, after_ms: float, before_n: int, after_n: int) -> dict:
    """How a data-parallel step's gradient all-reduce grows from a node of ``before_n`` GPUs to one of
    ``after_n`` against the growth of the bus factor alone (a ring moves 2(n-1)/n of the gradients
    through each GPU): in line with it (within HOLDS_WITHIN) where bus bandwidth holds, else more or less."""
    ratio = after_ms / before_ms
    factor_ratio = BUS_FACTOR["all_reduce"](after_n) / BUS_FACTOR["all_reduce"](before_n)
    verdict, why = (("in line with", "bus bandwidth holds") if abs(ratio / factor_ratio - 1) <= HOLDS_WITHIN else
                    ("more than", "bus bandwidth falls as GPUs are added") if ratio > factor_ratio else
                    ("less than", "bus bandwidth rises as GPUs are added"))
    return {"before_ms": before_ms, "after_ms": after_ms, "ratio": ratio, "factor_ratio": factor_ratio,
            "verdict": verdict, "why": why}


def scaling(sizes: list[dict]) -> dict | None:
    """The node sizes side by side (``sizes``: node_size of each, by GPU count), None with fewer than
    two that measured all-reduce: bus bandwidth at SCALING_SIZES and the largest size all measured,
    and from the fewest GPUs to the most, how it, α and the largest common model's step change."""
    shown_sizes = [s for s in sizes if s["busbw"]]
    if len(shown_sizes) < 2:
        return None
    common = set.intersection(*(set(s["busbw"]) for s in shown_sizes))
    at = sorted({b for b in SCALING_SIZES if b in common} | {max(common)}) if common else []
    fewest, most = shown_sizes[0], shown_sizes[-1]
    models = [{r["label"] for r in s["dp"]} for s in shown_sizes]
    common_models = [r["label"] for r in fewest["dp"] if all(r["label"] in m for m in models)]
    model = common_models[-1] if common_models else None
    step = lambda size: next(r["bucketed_ms"] for r in size["dp"] if r["label"] == model)
    links = {s["link_gbps"] for s in shown_sizes}
    busbw = [{"bytes": b, **change(fewest["busbw"][b], most["busbw"][b])} for b in at]
    alpha = change(fewest["fit"]["alpha_us"], most["fit"]["alpha_us"]) if fewest["fit"] and most["fit"] else None
    grows = step_against_factor(step(fewest), step(most), fewest["n"], most["n"]) if model else None
    if grows:
        grows["said"] = (f"A {model} step's gradient all-reduce takes {grows['ratio']:,.2f}× as long on {most['n']} GPUs "
                         f"as on {fewest['n']}, {grows['verdict']} the bus factor's {grows['factor_ratio']:,.2f}×")
    return {"sizes": [{**s, "step_ms": step(s) if model else None, "said": size_said(s)} for s in shown_sizes],
            "at": at, "fewest": fewest["n"], "most": most["n"],
            "not_shown": [s for s in sizes if not s["busbw"]],
            "link_gbps": links.pop() if len(links) == 1 else None,
            "busbw": busbw, "alpha": alpha, "changes_said": changes_said(busbw, alpha),
            "model": model, "step": grows,
            "step_column": f"{model} step, {fmt_bytes(BUCKET_BYTES)} buckets" if model else "Data-parallel step",
            # what the notes say first: the step's growth, else the bus bandwidth's change at the largest size
            "summary_said": f"{grows['said']}." if grows else
                            f"From {fewest['n']} to {most['n']} GPUs, all-reduce's bus bandwidth {busbw[-1]['verdict']} "
                            f"{busbw[-1]['pct']:,.0f}% at {fmt_bytes(busbw[-1]['bytes'])}.",
            "holds_within": HOLDS_WITHIN, "large_from": LARGE_FROM, "bucket_bytes": BUCKET_BYTES}


def changes_said(busbw: list[dict], alpha: dict | None) -> str:
    """The bus bandwidth's change at each size, its verdict said where it differs from the size
    before's, then α's."""
    said = [f"{'' if i and j['verdict'] == busbw[i - 1]['verdict'] else j['verdict'] + ' '}{j['pct']:,.0f}% at {fmt_bytes(j['bytes'])}"
            for i, j in enumerate(busbw)]
    return ", ".join(said) + (f"; α {alpha['verdict']} {alpha['pct']:,.0f}%" if alpha else "")


def size_said(size: dict) -> str:
    """The notes' sentence on one node size: its α–β fit, and its data-parallel step in buckets and as
    one all-reduce."""
    fit = size["fit"]
    fitted = (f"the α–β fit within {fit['large_error_pct']:,.1f}% of every measurement from {fmt_bytes(LARGE_FROM)} up "
              f"({fmt_bytes(fit['check']['bytes'])}: {fit['check']['predicted_ms']:,.2f} ms predicted, "
              f"{fit['check']['measured_ms']:,.2f} measured)") if fit else f"no α–β fit ({size['fit_reason']})"
    if size["dp"]:
        steps = (" In buckets " + ", ".join(f"{r['label']} {r['bucketed_ms']:,.1f} ms" for r in size["dp"])
                 + "; as one all-reduce "
                 + ", ".join(f"{r['one_ms']:,.1f}{'' if r['one_from'] == 'measured' else ' (fit)'}" for r in size["dp"]) + " ms.")
    else:
        steps = " No data-parallel step" + (f" ({size['dp_reason']})" if size["dp_reason"] else "") + "."
    return f"{size['n']} GPUs: {fitted}.{steps}"


# --- figures -----------------------------------------------------------------------------------

# The node's drawing: as wide as the column beside the first slide's list, whatever the GPU count,
# so that its text is the size it is drawn at (a wider figure would be scaled down past legibility)
TOPOLOGY_WIDTH = 540
GPUS_PER_ROW = 4
NAME_LINES = 2                   # a GPU's name wraps onto at most this many lines of its box


def topology(c: Multigpu) -> str:
    """The node's GPUs, GPUS_PER_ROW a row, and each pair's NVLinks as recorded: a line for a direct
    bond, the NVSwitch fabric under the first row (the rest below it) for links through NVSwitches."""
    gpus, pairs = c.node["gpus"], c.node["pairs"]
    switched = any(p["via"] == "nvswitch" for p in pairs)
    direct = any(p["via"] == "direct" for p in pairs)
    per_row = min(len(gpus), GPUS_PER_ROW)
    margin, gap = 20, 56 if direct else 24          # a direct bond's label goes in the gap
    box_w = (TOPOLOGY_WIDTH - 2 * margin - (per_row - 1) * gap) / per_row
    names = {g["index"]: fig.wrap(g["name"], 11, box_w - 8, NAME_LINES) for g in gpus}
    line_h = 16                                     # a box holds its title, its name's lines and its PCIe address
    box_h = 32 + line_h * (max(len(lines) for lines in names.values()) + 1)
    link_h, fabric_h, row_gap, top = 30, 36, 40, 16
    fabric_y = top + box_h + link_h
    below = fabric_y + fabric_h + link_h if switched else top + box_h + row_gap      # the second row's top
    rows = math.ceil(len(gpus) / per_row)
    row_y = [top] + [below + i * (box_h + row_gap) for i in range(rows - 1)]
    h = (row_y[-1] + box_h if rows > 1 else fabric_y + fabric_h if switched else top + box_h) + top
    dwg = fig.drawing(TOPOLOGY_WIDTH, h)
    pos = {g["index"]: (margin + (i % per_row) * (box_w + gap), row_y[i // per_row]) for i, g in enumerate(gpus)}
    if switched:
        dwg.add(dwg.rect((margin, fabric_y), (TOPOLOGY_WIDTH - 2 * margin, fabric_h), rx=6, fill="#eef2ff",
                         stroke=fig.ACCENT))
        fig.text(dwg, (TOPOLOGY_WIDTH / 2, fabric_y + 23), "NVSwitch fabric", size=13, color=fig.ACCENT,
                 anchor="middle", weight="bold")
        for g in gpus:
            x, y = pos[g["index"]]
            y0, y1 = (y + box_h, fabric_y) if y < fabric_y else (fabric_y + fabric_h, y)
            dwg.add(dwg.line((x + box_w / 2, y0), (x + box_w / 2, y1), stroke=fig.ACCENT, stroke_width=4))
            fig.text(dwg, (x + box_w / 2 + 6, (y0 + y1) / 2 + 4), f"{g['nvlinks']} NVLinks", size=11, color=fig.ACCENT)
    for p in pairs:
        if p["via"] == "direct":
            (xa, ya), (xb, yb) = pos[p["a"]], pos[p["b"]]
            dwg.add(dwg.line((xa + box_w, ya + box_h / 2), (xb, yb + box_h / 2), stroke=fig.ACCENT, stroke_width=4))
            fig.text(dwg, ((xa + box_w + xb) / 2, (ya + yb + box_h) / 2 - 8), f"NV{p['nvlinks']}", size=12,
                     color=fig.ACCENT, anchor="middle")
    for g in gpus:
        x, y = pos[g["index"]]
        dwg.add(dwg.rect((x, y), (box_w, box_h), rx=8, fill="#f9fafb", stroke=fig.INK, stroke_width=1.5))
        fig.text(dwg, (x + box_w / 2, y + 22), f"GPU {g['index']}", size=14, anchor="middle", weight="bold")
        for k, line in enumerate([*names[g["index"]], *fig.wrap(g["pci_bus_id"], 11, box_w - 8, 1)]):
            fig.text(dwg, (x + box_w / 2, y + 22 + line_h * (k + 1)), line, size=11, color=fig.MUTED, anchor="middle")
    return dwg.tostring()


def p2p_bars(c: Multigpu) -> str:
    """The first pair's copies, GB/s per direction; beside nvbandwidth's matching cases where it ran."""
    first, peer = c.p2p["first"], c.p2p["peer"]
    title = f"GB/s per direction, GPU {first['src']} → GPU {first['dst']}"
    if peer["measured"]:
        kinds = [k for k in P2P_KINDS if k in first["kinds"]]
        theirs = peer["first"]["kinds"]
        return fig.grouped_bars([P2P_KINDS[k] for k in kinds],
                                [("this project", [first["kinds"][k] for k in kinds]),
                                 (f"nvbandwidth {peer['version']}", [theirs[k]["nvbandwidth"] if k in theirs else None
                                                                      for k in kinds])],
                                title + (f" (NVLink: {c.link_gbps:,.0f})" if c.link_gbps else ""), digits=0,
                                height=300)
    bars = [fig.Bar(label, first["kinds"][k], fig.PALETTE[i]) for i, (k, label) in enumerate(P2P_KINDS.items())
            if k in first["kinds"]]
    lines = [fig.Line("x", c.link_gbps, f"NVLink {c.link_gbps:,.0f} per direction", fig.REF)] if c.link_gbps else []
    return fig.bar_chart(bars, title, lines)


def busbw_chart(c: Multigpu) -> str:
    series = [fig.Series(NAMES[k], [(r["bytes"], r["busbw_gbps"]) for r in c.ours if r["collective"] == k],
                         fig.PALETTE[i], marks=False) for i, k in enumerate(COLLECTIVES)
              if any(r["collective"] == k for r in c.ours)]
    lines = [fig.Line("y", c.link_gbps, f"NVLink per direction {c.link_gbps:,.0f}", fig.REF)] if c.link_gbps else []
    return fig.line_chart(fig.Chart("message size (log scale)", "bus bandwidth, GB/s", series, lines,
                                    x_format=fig.fmt_bytes, width=760, height=320))


def all_to_all_chart(moe: dict) -> str:
    """All-to-all's bus bandwidth against size, this project's and nccl-tests', with the size of a
    DeepSeek-V3 layer's dispatch marked."""
    series = [fig.Series(f"this project (NCCL), {moe['n']} GPUs", [(r["bytes"], r["busbw_gbps"]) for r in moe["rows"]], fig.ACCENT)]
    if moe["peer_rows"]:
        series.append(fig.Series("nccl-tests alltoall_perf", [(r["bytes"], r["busbw_gbps"]) for r in moe["peer_rows"]],
                                 fig.PALETTE[2], marks=False, dash="6,4"))
    lines = [fig.Line("x", moe["bytes"], f"{moe['model']} dispatch, {fig.fmt_bytes(moe['bytes'])}", fig.REF)]
    if moe.get("link_gbps"):
        lines.append(fig.Line("y", moe["link_gbps"], f"NVLink per direction {moe['link_gbps']:,.0f}", fig.MUTED))
    return fig.line_chart(fig.Chart("bytes each GPU sends (log scale)", "all-to-all bus bandwidth, GB/s", series, lines,
                                    x_format=fig.fmt_bytes, width=760, height=300))


def latency_chart(c: Multigpu) -> str:
    """All-reduce time against size: the project's, nccl-tests' both ways, and the α–β model."""
    ours = [r for r in c.ours if r["collective"] == "all_reduce"]
    peer = c.peer["record"].get("rows", []) if c.peer["measured"] else []
    series = [fig.Series("this project", [(r["bytes"], r["time_ms"]["median"] * 1e3) for r in ours], fig.ACCENT)]
    for mode, label, color in ((PEER_MODE, "nccl-tests", fig.PALETTE[2]), ("graph", "nccl-tests, graph", fig.MUTED)):
        pts = [(r["bytes"], r["time_us"]) for r in peer if r["collective"] == "all_reduce" and r["mode"] == mode]
        if pts:
            series.append(fig.Series(label, pts, color, marks=False, dash="6,4"))
    if c.fit:        # drawn where it was fitted and holds: from its large sizes up
        series.append(fig.Series("α + size/β", [(r["bytes"], 1e3 * predict_ms(c.fit, r["bytes"])) for r in ours
                                                if r["bytes"] >= c.fit["large_from"]], fig.REF, marks=False, dash="2,3"))
    return fig.line_chart(fig.Chart("message size (log scale)", "all-reduce time, µs (log scale)", series,
                                    x_format=fig.fmt_bytes, y_log=True, width=760, height=320))


def scaling_chart(s: dict) -> str:
    """All-reduce's bus bandwidth against message size, a line for each node size."""
    series = [fig.Series(f"{size['n']} GPUs", sorted(size["busbw"].items()), fig.PALETTE[i], marks=False)
              for i, size in enumerate(s["sizes"])]
    lines = [fig.Line("y", s["link_gbps"], f"NVLink per direction {s['link_gbps']:,.0f}", fig.REF)] if s["link_gbps"] else []
    return fig.line_chart(fig.Chart("all-reduce size (log scale)", "busbw, GB/s", series, lines,
                                    x_format=fig.fmt_bytes, width=860, height=230))


def data_parallel_chart(c: Multigpu) -> str:
    """Each model's gradient all-reduce in buckets (dashed, flat: it does not grow with the tokens)
    beside its backward pass at the measured GEMM rate (solid, growing with the tokens a GPU takes in
    a step), both against tokens a GPU; a dot where the two meet. Without a rate, the all-reduces alone."""
    bw = c.backward
    mark = lambda r: " (extrapolated)" if r["bucketed_from"] == "fit" else ""
    if not bw:
        bars = [fig.Bar(f"{r['label']} parameters{mark(r)}", r["bucketed_ms"], fig.PALETTE[i],
                        f"{r['buckets']:,} buckets") for i, r in enumerate(c.dp)]
        return fig.bar_chart(bars, f"ms a step: the gradients' all-reduce in {fig.fmt_bytes(c.bucket_bytes)} buckets",
                             height=40 + 34 * len(bars) + 46)
    lo = 2.0 ** math.floor(math.log2(bw["tokens"]["low"] / 8))
    hi = 2.0 ** math.ceil(math.log2(bw["tokens"]["high"] * 8))
    grid = [lo * 2.0 ** k for k in range(round(math.log2(hi / lo)) + 1)]
    series = []
    for i, r in enumerate(bw["rows"]):
        color = fig.PALETTE[i]
        series += [fig.Series(f"{r['label']} backward pass", [(t, t * r["backward_ms_per_token"]) for t in grid], color, marks=False),
                   fig.Series(f"{r['label']} all-reduce, {r['bucketed_ms']:,.1f} ms{mark(r)}",
                              [(lo, r["bucketed_ms"]), (hi, r["bucketed_ms"])], color, marks=False, dash="6,4"),
                   fig.Series("", [(r["tokens"], r["bucketed_ms"])], color, legend=False)]
    lines = [fig.Line("x", bw["tokens"]["low"], f"backward pass = all-reduce at {bw['tokens']['low']:,.0f} tokens", fig.INK)] if bw["alike"] else []
    return fig.line_chart(fig.Chart("tokens a GPU takes in a step (log scale)", "ms a step (log scale)", series, lines,
                                    x_format=lambda t: f"{t:,.0f}", y_log=True, width=860, height=300))


def draw(own: Multigpu, deck) -> dict[str, str]:
    c = own
    if not c.measured:
        return {}
    svgs = {"node_topology.svg": topology(c)}
    if c.p2p["first"]:
        svgs["p2p.svg"] = p2p_bars(c)
    if c.ours:
        svgs["nccl_busbw.svg"] = busbw_chart(c)
        svgs["nccl_latency.svg"] = latency_chart(c)
    if c.moe:
        svgs["all_to_all.svg"] = all_to_all_chart(c.moe)
    if c.dp:
        svgs["data_parallel.svg"] = data_parallel_chart(c)
    if c.scaling:
        svgs["nccl_scaling.svg"] = scaling_chart(c.scaling)
    return svgs
