"""Clusters measured alone (bench/machinery/clusters.py): what a CTA pays to reach its peer's shared memory
and to meet or signal its cluster, against the same within itself. The in-talk slide sits beside the
step that brings in clusters (gemm.md.j2), at that step's cluster size; this section's own slide
is the backup table of every size."""
from __future__ import annotations

from dataclasses import dataclass

from bench.gemm import catalogue
from slides.fmt import fmt_bound
from slides.kit import ACCENT, REF, Bar, bar_chart
from slides.records import Context
import slides.device

ID = "machinery.cluster"
SLIDE = "Clusters Alone: What a Peer Costs"
# A peer's load whose cost moves less than this share from one cluster size to another: the same.
SAME_WITHIN = 0.10


def _beside() -> catalogue.Step:
    """The step the cluster slide follows: the first whose best kernel runs in clusters."""
    return next(s for s in catalogue.STEPS if (s.best.tile or {}).get("CLUSTER_M", 1) > 1)


def _spread(values: list[float]) -> float:
    """How far apart the sizes' figures lie: the largest over the smallest, less one."""
    return max(values) / min(values) - 1


def _short(rows: list[dict], sms: int) -> list[dict]:
    """The sizes whose clusters cannot cover every SM (the GPCs' SMs do not divide into them),
    grouped by the CTAs they fit at once."""
    groups: dict[int, list[int]] = {}
    for x in rows:
        if x["ctas"] < sms:
            groups.setdefault(x["ctas"], []).append(x["cluster"])
    return [{"sizes": sizes, "ctas": ctas, "idle": sms - ctas} for ctas, sizes in groups.items()]


@dataclass(frozen=True)
class ClustersAlone:
    """Clusters measured alone, one CTA on every SM: what a CTA pays to reach its peer's shared memory
    and to meet or signal its cluster, against the same within itself; at the size the talk's step
    runs (load, stream, barrier, signal) and at every size (rows)."""
    rows: list[dict]                    # every cluster size's figures
    size: int                           # the cluster size the talk's slide shows: its step's
    beside: str                         # that step, which the talk's slide follows
    beside_title: str
    load: dict                          # a load's cycles from the CTA's own shared memory and the peer's
    stream: dict                        # bytes per SM per clock streamed from each
    barrier: dict                       # the CTA's barrier and the cluster's, relaxed and memory ordered
    signal: float                       # a signal to the peer's mbarrier and back, in cycles
    load_said: str                      # how far it moves, as the notes say it: the same within SAME_WITHIN, or by so much
    sizes: list[int]
    short: list[dict]                   # the sizes whose clusters cannot cover every SM (_short)
    setmaxnreg: dict | None             # the register hand-over (records from the register trade on)
    setmaxnreg_said: str                # the notes' sentence on it ("": not recorded)
    sm_count: int
    params: dict
    buffer_kib: float


@dataclass(frozen=True)
class Clusters(Context):
    """Clusters measured alone (None: not measured)."""
    clusters: ClustersAlone | None = None
    id: str = ID


def context(deck) -> Clusters:
    (r,) = deck.need(SLIDE, ID)
    if not r["measured"] or r["failed"] and "rows" not in r["record"]:
        return Clusters()
    rows = r["record"]["rows"]
    step = _beside()
    size = step.best.tile["CLUSTER_M"]
    at = next((x for x in rows if x["cluster"] == size), rows[0])
    sms = deck.of(slides.device).sm_count
    chase, stream, meet = at["chase_cycles"], at["stream"], at["barrier_cycles"]
    trade = r["record"].get("setmaxnreg")       # records from the register trade on
    # a peer's load from one size to the next: the same where within SAME_WITHIN
    load_spread = _spread([x["chase_cycles"]["peer"] for x in rows])
    return Clusters(clusters=ClustersAlone(
        rows=rows, size=at["cluster"], beside=step.key, beside_title=step.title,
        load={"own": chase["own"], "peer": chase["peer"], "times": chase["peer"] / chase["own"]},
        stream={"own": stream["own"]["bytes_per_sm_clock"], "peer": stream["peer"]["bytes_per_sm_clock"],
                "times": stream["own"]["bytes_per_sm_clock"] / stream["peer"]["bytes_per_sm_clock"]},
        barrier={**meet, "ordered_times": meet["cluster"] / meet["cluster_relaxed"]},
        signal=at["signal_round_trip_cycles"],
        sizes=[x["cluster"] for x in rows],
        load_said=f"costs the same within {fmt_bound(100 * load_spread)}% in clusters of {', '.join(str(x['cluster']) for x in rows)}"
                  if load_spread < SAME_WITHIN else
                  f"moves by {100 * load_spread:,.0f}% from clusters of {rows[0]['cluster']} to {rows[-1]['cluster']}",
        short=_short(rows, sms),
        setmaxnreg=trade and {**trade["hand_over_cycles"], "round_trip": trade["round_trip_cycles"],
                              "regs": trade["regs"], "warpgroups": trade["warpgroups"],
                              "released": trade["regs"]["entry"] - trade["regs"]["producer"]},
        setmaxnreg_said=f"The consumers' setmaxnreg waits for the producer's to release "
                        f"{trade['regs']['entry'] - trade['regs']['producer']} registers a thread; giving and taking back "
                        f"in a row costs {trade['round_trip_cycles']:,.0f} cycles." if trade else "",
        sm_count=sms, params=r["record"]["params"], buffer_kib=r["record"]["params"]["buffer_bytes"] / 2**10))


def cost_chart(c: ClustersAlone) -> str:
    """The cycles each mechanism takes, the CTA's own beside its cluster's, at the slide's size."""
    load, meet = c.load, c.barrier
    bars = [Bar("load, own shared memory", load["own"], ACCENT), Bar("load, the peer's", load["peer"], REF),
            Bar("barrier, the CTA's", meet["cta"], ACCENT), Bar("barrier, the cluster's (relaxed)", meet["cluster_relaxed"], REF),
            Bar("barrier, the cluster's (memory ordered)", meet["cluster"], REF),
            Bar("signal to the peer and back", c.signal, REF)]
    return bar_chart(bars, f"cycles, clusters of {c.size}: blue within the CTA, red across the cluster", width=760)


def draw(own: Clusters, deck) -> dict[str, str]:
    return {"clusters_cost.svg": cost_chart(own.clusters)} if own.clusters else {}
