"""python -m bench: run the registered benchmarks on this machine's GPU and merge
the results into results/<gpu-slug>.yaml."""
from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import uuid
from pathlib import Path

from .core import registry, schema, timing, toolkit
from .core.registry import ROOT
from .core.topology import NO_MULTICAST


def main(argv=None) -> int:
    """The run, under a token of its own: whatever it starts outside a worker (the compiles, a peer's
    build, which runs that peer's Makefile) is ended with it, as a worker's processes are with the worker."""
    from .core.runner import TOKEN, end_holding
    token = uuid.uuid4().hex
    previous = os.environ.get(TOKEN)
    os.environ[TOKEN] = token           # workers get tokens of their own
    try:
        return _main(argv)
    finally:
        end_holding(token)
        if previous is None:
            os.environ.pop(TOKEN, None)
        else:
            os.environ[TOKEN] = previous


def _main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    ap.add_argument("--only", nargs="+", metavar="ID_OR_FAMILY",
                    help="run only these benchmark ids or families (globs allowed, e.g. 'gemm.cublas_*')")
    ap.add_argument("--out", type=Path, help="results file (default: results/<gpu-slug>.yaml)")
    ap.add_argument("--node-out", type=Path,
                    help="results file of the benchmarks that use every GPU of the host "
                         "(default: results/<gpu-slug>-x<GPUs>.yaml)")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke refresh: fewer samples, sizes and trials; its records and the deck say so")
    ap.add_argument("--stale", action="store_true",
                    help="run only those of the selected benchmarks whose record is missing from the results file "
                         "or was measured with code that has changed since (a refresh after a change)")
    ap.add_argument("--peers", action="store_true",
                    help="fetch every peer (fast.cu, DeepGEMM, gpu-benches, nccl-tests, nvbandwidth and the Boost "
                         "library it links) into .peers/ at "
                         "its pinned commit (bench/core/peers.py), or say what to copy where on a machine that is "
                         "offline, and exit; a run then finds them there")
    ap.add_argument("--profile", action="store_true",
                    help="instead of measuring, add Nsight Compute counters (ncu --clock-control none) to the "
                         "results of the selected hand-written GEMM kernels")
    args = ap.parse_args(argv)
    os.environ.update(NO_MULTICAST)     # every process this run starts inherits it, as these
    if args.quick:
        os.environ[timing.QUICK_ENV] = "1"
    if registry.git_commit():
        os.environ[registry.GIT_COMMIT_ENV] = registry.git_commit()

    from .core import peers
    if args.peers:
        return peers.fetch(log=print)
    for pin in peers.PINS:          # fetched ones, for every process the run starts (a variable set wins)
        if not os.environ.get(pin.env) and pin.path.is_dir():
            os.environ[pin.env] = str(pin.path)
    benchmarks = registry.discover()
    if args.list:
        for b in benchmarks.values():
            print(f"{b.id:40s} {b.family:10s} {b.title}")
        return 0
    try:
        chosen = build_order(registry.select(benchmarks, args.only))
    except KeyError as e:
        print(f"python -m bench: {e.args[0]}", file=sys.stderr)
        return 2

    told = os.environ.get(registry.GIT_COMMIT_ENV)
    if told and not re.fullmatch(f"[0-9a-f]{{40}}({re.escape(registry.DIRTY)})?", told):
        print(f"python -m bench: {registry.GIT_COMMIT_ENV} is {told!r}, not a commit's 40 hex digits (git rev-parse HEAD "
              "in the checkout the tree was copied from); nothing was run and results/ is unchanged.", file=sys.stderr)
        return 2

    from .core.device import NoGPU, collect_device, collect_software
    try:
        device = collect_device()
    except NoGPU as e:
        print(f"python -m bench: {e}; nothing was run and results/ is unchanged.", file=sys.stderr)
        return 1
    out = args.out or ROOT / "results" / f"{device['slug']}.yaml"
    print(f"{device['name']} (sm_{device['compute_capability'].replace('.', '')}, {device['sm_count']} SMs, "
          f"SM clock {device['sm_clock_mhz']}/{device['sm_clock_max_mhz']} MHz) -> {out}", flush=True)
    print(f"kernels built with nvcc: {toolkit.describe()}", flush=True)
    from .core import results
    from .core.runner import Interrupted, WriteFailed, run_all
    if args.profile:
        return profile_all(chosen, out, device)
    # Benchmarks of several GPUs write the node's own file, beside its topology; on a machine of
    # one GPU they are recorded as skipped in this GPU's file.
    on_node = [b for b in chosen if b.gpus > 1] if device["gpu_count"] > 1 else []
    runs = [(out, [b for b in chosen if b not in on_node], None)]
    if on_node:
        from .core.topology import collect_node
        node_out = args.node_out or out.with_name(f"{device['slug']}-x{device['gpu_count']}.yaml")
        if node_out.resolve() == out.resolve():
            print(f"python -m bench: --node-out is the same file as --out ({out}): the node's records need a file "
                  "of their own; nothing was run.", file=sys.stderr)
            return 2
        runs.append((node_out, on_node, collect_node()))
    runs = [(path, benchmarks, node) for path, benchmarks, node in runs if benchmarks]
    earlier = {}
    for path, _, node in runs:      # every target, before any GPU time is spent on records it could not keep
        try:
            results.check_target(path)
            earlier[path] = results.existing(path, device, node is not None)
        except OSError as e:
            print(f"python -m bench: cannot write {path} ({e.strerror or e}); nothing was run.", file=sys.stderr)
            return 1
        except schema.ResultsError as e:
            print(f"python -m bench: {e}; nothing was run.", file=sys.stderr)
            return 1
    if args.stale:
        runs = [(path, [b for b in picked if outdated(earlier[path].get(b.id), b)], node) for path, picked, node in runs]
        runs = [run for run in runs if run[1]]
        chosen = [b for _, picked, _ in runs for b in picked]
        if not chosen:
            print("every selected record is current: nothing to run", flush=True)
            return 0
        print(f"{len(chosen)} stale or missing: {' '.join(b.id for b in chosen)}", flush=True)
    software = collect_software()
    # The builds run beside the benchmarks, in the order they need them: a benchmark whose cubin is
    # not ready yet compiles it itself.
    compiling = threading.Thread(target=precompile, args=(chosen, device), daemon=True)
    compiling.start()
    bad = []
    registered = set(registry.discover())
    for path, benchmarks, node in runs:
        try:
            usual = f"{device['slug']}-x{device['gpu_count']}.yaml" if node else f"{device['slug']}.yaml"
            estimates = estimated_durations(earlier[path], ROOT / "results" / usual, args.quick)
            doc = run_all(benchmarks, path, device, software, node=node, estimates=estimates)
        except schema.ResultsError as e:
            print(f"python -m bench: {e}", file=sys.stderr)
            return 1
        except Interrupted as stop:
            print(f"python -m bench: stopped by {stop}; the records measured so far are in {path}", file=sys.stderr)
            return 128 + stop.signum
        except WriteFailed as e:
            print(f"python -m bench: {e}; the run stopped there.", file=sys.stderr)
            return 1
        # this run's outcome: a record kept from an earlier run carries this run's attempt
        attempts = {b.id: doc["benchmarks"][b.id].get("last_attempt", doc["benchmarks"][b.id]) for b in benchmarks}
        failed = [bid for bid, rec in attempts.items() if rec["status"] == "failed"]
        kept = [bid for bid in failed if "last_attempt" in doc["benchmarks"][bid]]
        bad += failed
        print(f"wrote {path}: {len(benchmarks) - len(failed)} of {len(benchmarks)} benchmarks did not fail"
              + (f"; failed: {', '.join(failed)}" if failed else "")
              + (f" (the earlier record kept for {', '.join(kept)})" if kept else ""))
        unknown = sorted(set(doc["benchmarks"]) - registered)
        if unknown:         # kept: only a person removes a measurement
            print(f"{path} also holds {len(unknown)} record{'s' if len(unknown) > 1 else ''} of ids no benchmark "
                  f"registers now, kept as they were: {', '.join(unknown)}")
    compiling.join()
    return 1 if bad else 0


def _includes_cute(source: str) -> bool:
    from .core.cuda import local_includes
    return any("#include <cute/" in (ROOT / path).read_text() for path in (source, *local_includes(source)))


def build_order(chosen: list) -> list:
    """The benchmarks in the order the compiles, which run beside them in that order, can keep up
    with: next, always the one needing the fewest builds that none before it needs and, of those,
    the fewest that include CuTe (the first in registry order of those). A CuTe kernel takes nvcc
    about 40 s beside 13 others, a plain one a few: the micro-benchmarks run while the first GEMM
    kernels compile, and a fresh machine's compiles (a minute on 16 cores) run under cuBLAS and the
    steps rather than ahead of the atlas, which needs 14 builds at once. Those that need a worker
    of their own (a peer's loader) come last, so the others share one."""
    from .core.cuda import build_key
    cute = {source: _includes_cute(source) for source in {str(b[0]) for bench in chosen for b in bench.builds}}
    pending, built, ordered = [b for b in chosen if not b.env], set(), []

    def cost(bench) -> tuple[int, int]:
        new = {build_key(*x) for x in bench.builds} - built
        return len(new), sum(cute[source] for source, _ in new)
    while pending:
        bench = min(pending, key=cost)
        pending.remove(bench)
        built |= {build_key(*x) for x in bench.builds}
        ordered.append(bench)
    return ordered + [b for b in chosen if b.env]


# A quick run's benchmark time over a full run's, for the same records: 113 s over 712 on the H200
# (2026-11-29, at 52eb7a3): a first quick run's estimate, from a full run's durations.
QUICK_SHARE = 0.16


def estimated_durations(earlier: dict, committed: Path, quick: bool) -> dict:
    """Seconds by id for the progress line's time left: each benchmark's last duration in a run of
    the same kind (quick or not), from the file written to, else from the committed file of that name
    (a first run into another file), else a full run's committed ones, times QUICK_SHARE for a quick
    run (the runner then scales them by this run's pace), else none (the runner takes the mean so far)."""
    def of(records: dict) -> dict:
        return {bid: rec["duration_s"] for bid, rec in records.items()
                if rec.get("duration_s") and bool(rec.get("quick")) == quick}
    found = of(earlier)
    if not found and committed.is_file():
        try:
            records = schema.load(committed)["benchmarks"]
        except schema.ResultsError:
            return {}
        found = of(records) or {bid: rec["duration_s"] * (QUICK_SHARE if quick and not rec.get("quick") else 1.0)
                                for bid, rec in records.items() if rec.get("duration_s")}
    return found


def outdated(record: dict | None, bench) -> bool:
    """Whether a benchmark's record is missing, or was made from code other than today's: its sources
    and kernels hash otherwise now (bench/core/provenance.py)."""
    return record is None or record.get("source_hash") != bench.source_hash()


def precompile(chosen, device: dict) -> None:
    """Every nvcc build the chosen benchmarks need, and their peers' builds, all at once, on all but
    two cores (the benchmarks run meanwhile): each benchmark then loads its cubin or library from the
    cache. A build that fails fails its benchmark, with the compiler's message."""
    import time
    from .core.cuda import arch_of, compile_all
    from .core.runner import skip_reason
    from concurrent.futures import ThreadPoolExecutor
    runnable = [bench for bench in chosen if not skip_reason(bench, device)]
    builds = [b for bench in runnable for b in bench.builds]
    prebuilds = [bench for bench in runnable if bench.prebuild]
    if not builds and not prebuilds:
        return
    t0 = time.monotonic()
    print(f"compiling {len(builds)} kernel builds{f' and {len(prebuilds)} peer' if prebuilds else ''} "
          f"on {os.cpu_count()} cores ...", flush=True)
    with ThreadPoolExecutor(max(1, len(prebuilds))) as pool:
        peers = {bench.id: pool.submit(bench.prebuild, device) for bench in prebuilds}
        failed = compile_all(builds, arch_of(device["compute_capability"]), workers=max(1, (os.cpu_count() or 4) - 2))
    for bid, future in peers.items():       # the benchmark builds again, and fails with the reason
        if future.exception():
            print(f"{bid}: its build failed: {str(future.exception()).splitlines()[0]}", flush=True)
    print(f"compiled in {time.monotonic() - t0:.0f} s" + (f"; {len(failed)} failed, their benchmarks will say why, "
                                                          f"the first: {next(iter(failed.values()))}" if failed else ""),
          flush=True)


def profile_all(chosen, out: Path, device: dict) -> int:
    """Profile each chosen hand-written GEMM, and each chosen peer that runs beside one (shape by
    shape, its kernel and ours), whose result is already in ``out``."""
    from .core import peers, results
    from .core.device import collect_software
    from .core.topology import child_env
    from .gemm.catalogue import KERNELS
    from .gemm.profile import METRICS, PEERS, profile, profile_peer, with_peer_profile
    try:
        recorded = results.existing(out, device)
    except schema.ResultsError as e:
        print(f"python -m bench: {e}", file=sys.stderr)
        return 1
    targets = [b for b in chosen if b.id in KERNELS or b.id in PEERS]
    software = collect_software()
    failures = 0
    for i, bench in enumerate(targets, 1):
        bid = bench.id
        if bid not in recorded:
            print(f"[{i}/{len(targets)}] {bid}: not measured yet; run python -m bench --only {bid} first", flush=True)
            failures += 1
            continue
        print(f"[{i}/{len(targets)}] {bid}: ncu ...", flush=True)
        stamp = {"measured_at": schema.now_iso(), "git_commit": registry.git_commit()}
        try:
            if bid in KERNELS:
                prof = profile(bid)
                record = {**recorded[bid], "profile": {**prof, "of": results.launch_fingerprint(recorded[bid].get("resources")),
                                                       **stamp}}
                said = [", ".join(f"{prof['names'][m]} {v:.3g}" for m, v in prof["metrics"].items())]
            else:
                if bench.peer and peers.missing(bench.peer):
                    raise RuntimeError(peers.missing(bench.peer))
                shapes = profile_peer(bid, child_env(**dict(bench.env)))
                record = with_peer_profile(recorded[bid], shapes, stamp)
                said = [f"{'x'.join(map(str, s['shape']))}: " + ", ".join(
                            f"{METRICS[m]} {v:.3g}" + (f" (ours {s['ours'][m]:.3g})" if "ours" in s else "")
                            for m, v in s["peer"].items()) for s in shapes]
        except Exception as e:
            print(f"[{i}/{len(targets)}] {bid}: profile failed: {e}", file=sys.stderr)
            failures += 1
            continue
        results.merge(out, device, software, {bid: record})
        for line in said:
            print("    " + line, flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
