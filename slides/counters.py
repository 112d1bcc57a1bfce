"""Each GEMM step's best kernel as it ran: its launch resources, its main loop in SASS and its Nsight
Compute counters, in one backup table (the performance slides' notes leave them out)."""
from __future__ import annotations
import slides.gemm


def context(deck) -> dict:
    rows, names = [], {}
    for s in deck.of(slides.gemm)["steps"]:
        v = s["best"]
        res = v["resources"] or {}
        if not res and not v["profile"]:
            continue
        for q in v["profile"] or []:
            names.setdefault(q["name"], None)
        loop = (res.get("sass") or {}).get("main_loop")
        rows.append({"index": s["index"], "name": s["title"], "threads": res.get("threads_per_block"),
                     "regs": res.get("regs_per_thread"),
                     # a producer warpgroup: setmaxnreg moves registers from it to the consumers after launch
                     "moved": bool((res.get("tile") or {}).get("PRODUCER_WARPGROUPS")),
                     "smem": (res["smem_static_bytes"] + res["smem_dynamic_bytes"]) if res else None,
                     "loop": loop, "metrics": {q["name"]: q["value"] for q in v["profile"] or []}})
    return {"rows": rows, "metrics": list(names), "moved": any(r["moved"] for r in rows)}
