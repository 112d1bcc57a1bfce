"""Benchmarks that need no GPU, for testing the runner: one succeeds, one raises,
one hangs past its limit, one dies without a word, one fails its check; and the unlucky
ones further down."""
import os
import time

from bench.core.registry import register


@register("fake.ok", sources=[], title="succeeds", timeout_s=60)
def ok(ctx):
    ctx.progress("working")
    return {"check": {"passed": True}, "time_ms": {"median": 1.0, "p10": 0.9, "p90": 1.2, "n": 5},
            "gbps": 123.0}


@register("fake.fails_when_told", sources=[], timeout_s=60)
def fails_when_told(ctx):
    if os.environ.get("FAKE_FAIL"):
        raise RuntimeError("building the peer failed")
    return {"check": {"passed": True}, "gbps": 1.0}


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


# Records the results file cannot hold: the runner records each as failed and goes on.
@register("fake.nan", sources=[], timeout_s=60)
def nan(ctx):
    return {"gbps": float("nan")}


@register("fake.negative_time", sources=[], timeout_s=60)
def negative_time(ctx):
    return {"time_ms": {"median": -1.0, "p10": -1.0, "p90": -1.0, "n": 3}}


@register("fake.list_is_a_string", sources=[], timeout_s=60)
def list_is_a_string(ctx):
    return {"rows": "a string where a list belongs"}


@register("fake.noisy_death", sources=[], timeout_s=60)
def noisy_death(ctx):
    """Undecodable bytes and a 2 MB line on stderr, then a crash."""
    os.write(2, b"\xff\xfe not UTF-8 \xc3\x28\n" + b"y" * 2_000_000 + b"\n")
    os._exit(1)


def _pid_file(name: str):
    folder = os.environ.get("FAKE_PID_DIR")
    return os.path.join(folder, name) if folder else None


def _spawn_sleeper(name: str, new_session: bool) -> None:
    """A grandchild that sleeps for minutes; its pid goes to $FAKE_PID_DIR/<name>."""
    import subprocess
    import sys
    code = "import os, time; os.setsid(); time.sleep(300)" if new_session else "import time; time.sleep(300)"
    child = subprocess.Popen([sys.executable, "-c", code])
    if _pid_file(name):
        with open(_pid_file(name), "w") as f:
            f.write(str(child.pid))


@register("fake.leaves_grandchildren", sources=[], timeout_s=60)
def leaves_grandchildren(ctx):
    """Succeeds, leaving one grandchild in its process group and one that left it with setsid()."""
    _spawn_sleeper("in_group", new_session=False)
    _spawn_sleeper("own_session", new_session=True)
    time.sleep(0.5)                  # the setsid() has happened
    return {"check": {"passed": True}}


@register("fake.outlasts_the_runner", sources=[], timeout_s=120)
def outlasts_the_runner(ctx):
    """Writes its pid and a grandchild's, then hangs: for the runner to be stopped meanwhile."""
    _spawn_sleeper("hang_child", new_session=True)
    if _pid_file("worker"):
        with open(_pid_file("worker"), "w") as f:
            f.write(str(os.getpid()))
    time.sleep(600)


for _i in range(12):                  # quick, distinct records for two runners on one file
    register(f"fake.quick_{_i:02d}", sources=[], timeout_s=60)(lambda ctx: {"check": {"passed": True}})


# Records that are valid yet would make a results file the loader refuses: each becomes a failed record.
@register("fake.huge", sources=[], timeout_s=60)
def huge(ctx):
    return {"rows": [{"label": "x" * 1000, "i": i} for i in range(18_000)]}      # ~18 MiB written


@register("fake.deep", sources=[], timeout_s=60)
def deep(ctx):
    nested = {"leaf": 1}
    for _ in range(40):
        nested = {"down": nested}
    return {"params": nested}


@register("fake.surrogate", sources=[], timeout_s=60)
def surrogate(ctx):
    return {"params": {"dir": os.fsdecode(b"/home/fast\xe9cu")}}     # a path with a byte that is not UTF-8


def _peer_build(device):
    """A peer's build that leaves a process behind (a make that forked a daemon)."""
    _spawn_sleeper("peer_build", new_session=True)


@register("fake.with_peer_build", sources=[], timeout_s=60, prebuild=_peer_build)
def with_peer_build(ctx):
    time.sleep(1)          # the build runs beside it
    return {"gbps": 1.0}


@register("fake.with_env", sources=[], timeout_s=60, env=(("FAKE_PEER_LOADER", "preloaded"),))
def with_env(ctx):
    """Reports its process and what its environment holds (a peer's loader needs a worker of its own)."""
    return {"check": {"passed": True}, "pid": os.getpid(), "loader": os.environ.get("FAKE_PEER_LOADER", "")}


@register("fake.pid", sources=[], timeout_s=60)
def pid(ctx):
    return {"check": {"passed": True}, "pid": os.getpid(), "loader": os.environ.get("FAKE_PEER_LOADER", "")}
