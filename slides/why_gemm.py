"""Why a GEMM: its arithmetic intensity at the reference shape against the machine's balance, the
TF32 peak over the measured copy bandwidth."""
from __future__ import annotations


def context(deck) -> dict:
    tf32, hbm, shape = deck["peaks"]["by"].get("tf32"), deck["hbm"], deck["gemm"]["shape"]
    if not (tf32 and hbm["rows"] and shape):
        return {"balance": None}
    balance = 1000 * tf32["tflops_max_clock"] / hbm["best"]["gbps"]
    return {"balance": {"tflops": tf32["tflops_max_clock"], "gbps": hbm["best"]["gbps"], "flop_per_byte": balance,
                        "margin": shape["intensity_fp32"] / balance,
                        # the reference shape's intensity past the balance: it can be compute-bound
                        "compute_bound": shape["intensity_fp32"] > balance}}
