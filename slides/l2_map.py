"""L2's latency from every SM to each of a set of lines (bench/micro/l2_map.py), split into the
partition beside an SM and the one across the chip: read by the L2 section and the memory latency
section alike."""
from __future__ import annotations

import numpy as np

MAP_ID = "l2.latency_map"
# Two halves are told apart where the far level lies this many of the cells' spread (the median
# absolute deviation within a half) above the near one.
SPLIT_MARGIN = 3.0


def halves(cycles: np.ndarray) -> dict:
    """Split SMs and lines by the strongest pattern in the latencies once each SM's and each line's
    own level is taken out (the first singular vectors of the doubly centred matrix): an SM group
    and a line group whose latency is high together. Near: each SM group's lower median over the
    two line groups; far: its higher one. ``split``: the halves cross (each SM group is near a
    different line group) and the far level clears the near one by SPLIT_MARGIN spreads."""
    centred = cycles - cycles.mean(axis=1, keepdims=True) - cycles.mean(axis=0, keepdims=True) + cycles.mean()
    u, _, vt = np.linalg.svd(centred, full_matrices=False)
    sm_group, line_group = u[:, 0] > 0, vt[0] > 0
    if sm_group.all() or not sm_group.any() or line_group.all() or not line_group.any():
        return {"split": False, "sm_group": sm_group, "line_group": line_group}
    median = {(g, l): float(np.median(cycles[sm_group == g][:, line_group == l])) for g in (True, False) for l in (True, False)}
    near_line = {g: min((True, False), key=lambda l: median[g, l]) for g in (True, False)}
    near = np.concatenate([cycles[sm_group == g][:, line_group == near_line[g]].ravel() for g in (True, False)])
    far = np.concatenate([cycles[sm_group == g][:, line_group != near_line[g]].ravel() for g in (True, False)])
    spread = float(np.median(np.abs(np.concatenate([near - np.median(near), far - np.median(far)]))))
    return {"split": near_line[True] != near_line[False] and np.median(far) - np.median(near) > SPLIT_MARGIN * spread,
            "sm_group": sm_group, "line_group": line_group, "near_line": near_line,
            "near": float(np.median(near)), "far": float(np.median(far)),
            "spread": spread, "sms": [int(sm_group.sum()), int((~sm_group).sum())],
            "lines": [int(line_group.sum()), int((~line_group).sum())]}


def map_halves(r: dict) -> tuple[np.ndarray, dict] | None:
    """The L2 map's cycles (SM by line) and their halves, from its deck.record; None where it holds none."""
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return None
    cycles = np.array([x["cycles"] for x in r["record"]["rows"]], dtype=float)
    return cycles, halves(cycles)
