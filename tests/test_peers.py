"""The peers in one command: python -m bench --peers fetches each pinned peer into .peers/, a run
finds it there (its environment variable still wins), and offline it says what to copy where."""
import subprocess

import pytest

from bench.core import peers, registry, runner


def test_every_peer_a_benchmark_builds_is_pinned():
    used = {b.peer for b in registry.discover().values() if b.peer}
    assert used == {pin.env for pin in peers.PINS if not pin.needed_by}
    assert {pin.needed_by for pin in peers.PINS if pin.needed_by} <= used      # a build dependency, of a peer that is used
    assert all(len(pin.commit) == 40 and pin.repo.startswith("https://github.com/") for pin in peers.PINS)


def test_a_fetched_peer_is_found_and_the_variable_wins(tmp_path, monkeypatch):
    bench = registry.discover()["peers.fastcu"]
    hopper = {"compute_capability": "9.0", "gpu_count": 1}
    monkeypatch.delenv("FASTCU_DIR", raising=False)
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path)
    assert runner.skip_reason(bench, hopper).startswith("no checkout of the peer: set FASTCU_DIR to one, or python -m bench --peers")
    (tmp_path / "fast.cu").mkdir()
    assert runner.skip_reason(bench, hopper) is None and peers.checkout("FASTCU_DIR") == tmp_path / "fast.cu"
    monkeypatch.setenv("FASTCU_DIR", str(tmp_path / "elsewhere"))
    assert peers.checkout("FASTCU_DIR") == tmp_path / "elsewhere"
    assert runner.skip_reason(bench, hopper) == f"FASTCU_DIR={tmp_path / 'elsewhere'} is not a folder"


def test_offline_it_says_what_to_copy_where(tmp_path, monkeypatch):
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path)
    (tmp_path / "nccl-tests").mkdir()          # one already there is kept
    said = []

    def offline(cmd, **kw):
        if cmd[:2] == ["git", "clone"]:
            return subprocess.CompletedProcess(cmd, 128, "", "fatal: unable to access 'https://github.com/': Could not resolve host")
        return subprocess.run(cmd, **kw)
    assert peers.fetch(log=lambda *a, **k: said.append(a[0]), run=offline) == 1
    text = "\n".join(said)
    assert "nccl-tests: kept at unknown" in text
    for pin in peers.PINS:
        if pin.folder != "nccl-tests":
            assert f"git clone --quiet {pin.repo} {pin.folder}" in text and f"checkout --quiet {pin.commit}" in text
            assert f"# -> {pin.path}   (or {pin.env}=<its folder>)" in text
    assert "submodule update --quiet --init --recursive" in text         # DeepGEMM builds with its submodules
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nccl-tests"]   # nothing half-fetched is left


def test_a_fetch_checks_out_the_pinned_commit(tmp_path, monkeypatch):
    """Fetched from a local repository standing in for GitHub: the checkout is at the pinned commit."""
    origin = tmp_path / "origin"
    git = lambda *a, cwd=origin: subprocess.run(["git", "-C", str(cwd), *a], check=True, capture_output=True, text=True).stdout.strip()
    origin.mkdir()
    git("init", "-q")
    for i in range(2):
        (origin / "f").write_text(str(i))
        git("add", "f")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", str(i))
    first = git("rev-list", "--max-parents=0", "HEAD")
    pin = peers.Pin("FASTCU_DIR", "fast.cu", str(origin), first, False, "-")
    monkeypatch.setattr(peers, "PINS", (pin,))
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path / "peers")
    assert peers.fetch(log=lambda *a, **k: None) == 0
    assert peers.checkout_commit(tmp_path / "peers" / "fast.cu") == first


def test_a_peers_record_names_its_checkout_and_commit(tmp_path, monkeypatch):
    from bench.core import schema, worker
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                    "--allow-empty", "-m", "c"], check=True)
    monkeypatch.setenv("NVBANDWIDTH_DIR", str(tmp_path))
    bench = registry.Benchmark(id="multigpu.fake", run=lambda ctx: {"check": {"passed": True}}, sources=(),
                               peer="NVBANDWIDTH_DIR")
    rec = worker.run_one(bench, {"sm_clock_max_mhz": 1980})
    assert rec["peer"] == {"checkout": str(tmp_path), "commit": peers.checkout_commit(tmp_path)}
    assert len(rec["peer"]["commit"]) == 40
    schema.validate_record("multigpu.fake", rec)
    with pytest.raises(schema.ResultsError, match="peer.commit"):
        schema.validate_record("multigpu.fake", {**rec, "peer": {"checkout": "x"}})


def test_nvbandwidth_builds_boost_program_options_from_its_pin_where_the_linker_finds_none(tmp_path, monkeypatch):
    """The GPU machines' image has Boost's headers and no libboost_program_options: its pinned source
    is compiled into a static library (a stand-in checkout here: one source file)."""
    from bench.multigpu import nvbandwidth
    monkeypatch.setattr(nvbandwidth, "links", lambda library: False)
    monkeypatch.setattr(peers, "PEERS_DIR", tmp_path / "peers")
    monkeypatch.delenv(nvbandwidth.BOOST_ENV, raising=False)
    libs = tmp_path / "libs"
    libs.mkdir()
    with pytest.raises(RuntimeError, match="python -m bench --peers fetch its source"):
        nvbandwidth.boost_program_options(libs)
    source = peers.BY_ENV[nvbandwidth.BOOST_ENV].path
    (source / "src").mkdir(parents=True)
    (source / "include").mkdir()
    (source / "src" / "options.cpp").write_text("int parse_options() { return 1; }\n")
    flags, origin = nvbandwidth.boost_program_options(libs)
    assert flags == [f"-I{source / 'include'}"] and origin == f"built from {source} at unknown (not a git checkout)"
    members = subprocess.run(["ar", "t", str(libs / "libboost_program_options.a")], capture_output=True, text=True).stdout
    assert members.split() == ["options.o"]
    (libs / "libboost_program_options.a").unlink()
    (source / "src" / "broken.cpp").write_text("#include <boost/no_such_header.hpp>\n")
    with pytest.raises(RuntimeError, match="failed .it needs the rest of Boost's headers.*no_such_header"):
        nvbandwidth.boost_program_options(libs)


def test_nvbandwidth_uses_the_systems_boost_where_the_linker_finds_it(tmp_path, monkeypatch):
    from bench.multigpu import nvbandwidth
    monkeypatch.setattr(nvbandwidth, "links", lambda library: library == "boost_program_options")
    assert nvbandwidth.boost_program_options(tmp_path) == ([], "the system's")
    assert list(tmp_path.iterdir()) == []
