"""Benchmarks that need no GPU, for testing the runner: one succeeds, one raises,
one hangs past its limit, one dies without a word, one fails its check."""
import os
import time

from bench.registry import register


@register("fake.ok", sources=[], title="succeeds", timeout_s=60)
def ok(ctx):
    ctx.progress("working")
    return {"check": {"passed": True}, "time_ms": {"median": 1.0, "p10": 0.9, "p90": 1.2, "n": 5},
            "gbps": 123.0}


@register("fake.raises", sources=[], timeout_s=60)
def raises(ctx):
    raise RuntimeError("kernel exploded")


@register("fake.hangs", sources=[], timeout_s=2)
def hangs(ctx):
    time.sleep(600)


@register("fake.dies", sources=[], timeout_s=60)
def dies(ctx):
    os._exit(3)   # like a process killed by a device fault


@register("fake.wrong", sources=[], timeout_s=60)
def wrong(ctx):
    return {"check": {"passed": False, "detail": "relative error 1e-1 above tolerance"},
            "time_ms": {"median": 1.0, "p10": 1.0, "p90": 1.0, "n": 1}}
