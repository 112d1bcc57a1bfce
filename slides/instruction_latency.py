"""Instruction latency and issue rate (bench/micro/latency.py): cycles per warp-instruction by independent
chains, the full SM's rate, and the SASS each operation compiles to."""
from __future__ import annotations

from dataclasses import dataclass

from slides.fmt import fmt_sig
from slides.kit import Chart, PALETTE, Series, line_chart
from slides.records import Context

MIX_SHOWN = 0.1          # an instruction issued less than once in ten calls is left out of an operation's mix


@dataclass(frozen=True)
class InstructionLatency(Context):
    """The instruction-latency slides: each operation's cycles per warp-instruction by independent
    chains in one warp (None: not measured), its issue rate with every SM full, and the SASS it
    compiles to; the calls issued as several instructions apart."""
    result: dict                        # the record as a slide shows it (Records.record)
    rows: list[dict] | None = None
    ilps: list[int] | None = None       # the independent chains measured
    params: dict | None = None
    by_op: dict[str, dict] | None = None
    simple_latency: float | None = None     # the longest of FADD's, FMUL's and FFMA's latencies
    multi: list[dict] | None = None     # the operations issued as a sequence of SASS instructions
    check_said: str | None = None       # what reading the SASS back found


def context(deck) -> InstructionLatency:
    (r,) = deck.need("Instruction Latency — Results", "latency.instruction")
    if "rows" not in r["record"]:
        return InstructionLatency(result=r)
    rec = r["record"]
    ilps = rec["params"]["ilps"]
    rows = []
    for row in rec["rows"]:
        cycles = [(int(ilp), c) for ilp, c in sorted(row["cycles"].items(), key=lambda kv: int(kv[0]))]
        best = min(c for _, c in cycles)
        # the fewest chains whose cycles/instruction come within 10% of the best one warp reaches, and theirs
        enough, at_enough = next((i, c) for i, c in cycles if c <= 1.1 * best)
        issue = row["issue_cycles_per_subpartition"]
        sass1 = row["sass"][str(ilps[0])]      # the worker hands records over as JSON: string keys
        no_overlap = cycles[-1][1] >= 0.8 * cycles[0][1]
        rows.append({
            "op": row["op"], "name": row["name"], "cycles": cycles, "latency": cycles[0][1],
            "single_warp_best": best, "at_highest_ilp": cycles[-1][1], "issue": issue,
            "ilp_to_best": enough, "at_ilp_to_best": at_enough, "vs_issue_pct": 100 * (at_enough / issue - 1),
            "sass_per_op": sass1["per_op"], "mix": sass1["mix_per_op"],
            # the instructions an operation is issued as, leaving out those under MIX_SHOWN of one per call;
            # and those issued at least once every other call, as whole counts
            "mix_shown": " and ".join(f"{m} ×{n:,.2f}" for m, n in sass1["mix_per_op"].items() if n >= MIX_SHOWN),
            "mix_whole": ", ".join(f"{m} ×{n:,.0f}" for m, n in sass1["mix_per_op"].items() if n >= 0.5),
            "multi": sass1["per_op"] >= 1.5, "warps_per_sm": row["warps_per_sm"],
            "no_overlap": no_overlap,
            # where one warp cannot overlap calls, the table's note and the notes' clause on why
            "no_overlap_said": "(a branch: calls cannot overlap)" if no_overlap else "",
            "branch_said": f"; a data-dependent branch per call, so one warp cannot overlap calls: {fmt_sig(cycles[-1][1], 3)} "
                           f"cycles even at ILP {int(ilps[-1])}, and only more warps help" if no_overlap else "",
        })
    by_op = {row["op"]: row for row in rows}
    simple = [by_op[o] for o in ("FADD", "FMUL", "FFMA") if o in by_op]
    return InstructionLatency(
        result=r, rows=rows, ilps=[int(i) for i in ilps], params=rec["params"], by_op=by_op,
        simple_latency=max(x["latency"] for x in simple) if simple else None, multi=[x for x in rows if x["multi"]],
        check_said="every variant holds the intended instruction" if r["check"]["passed"] else f"FAILED: {r['check']['detail']}")


# --- figures --------------------------------------------------------------------------------------

def instruction_latency(instr: InstructionLatency) -> str:
    series = [Series(r["name"], [(ilp, c) for ilp, c in r["cycles"]], PALETTE[i % len(PALETTE)])
              for i, r in enumerate(instr.rows)]
    return line_chart(Chart("independent chains per thread (ILP, log scale)", "cycles per warp-instruction (log)",
                            series, y_log=True, height=400))


def draw(own: InstructionLatency, deck) -> dict[str, str]:
    return {"instruction_latency.svg": instruction_latency(own)} if own.rows else {}
