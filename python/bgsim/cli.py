"""The `bgsim` command line."""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Dict, List, Optional

from . import __version__
from . import progress as _progress
from .api import check_cpu_factor, check_seed
from .errors import BgsimError, DeadlockError, MachineError, MappingError, MemoryLimitError, UsageError, WorkloadError


def _triple(s: str) -> list:
    try:
        v = [int(x) for x in s.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not three comma-separated integers, e.g. 2,2,2") from None
    if len(v) != 3 or min(v) < 0:
        raise argparse.ArgumentTypeError(f"`{s}` is not three non-negative comma-separated integers, e.g. 2,2,2")
    return v


def _finite(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"`{s}`: must be a finite number")
    return v


def _cpu_factor(s: str) -> float:
    v = _finite(s)
    try:
        check_cpu_factor(v)
    except UsageError as e:
        raise argparse.ArgumentTypeError(f"`{s}`: {e}") from None
    return v


def _seed(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not an integer") from None
    try:
        check_seed(v)
    except UsageError as e:
        raise argparse.ArgumentTypeError(f"`{s}`: {e}") from None
    return v


#: `--partitions` of run and traffic.
_PARTITIONS_HELP = "cut the machine into P partitions (at least --threads) whatever the run's size"


def _count(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"`{s}` is not an integer") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"`{s}`: must be at least 1")
    return v


def _machine_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--machine", default="bgl", metavar="NAME|FILE.toml",
                   help="machine preset (bgl, bgp) or TOML file (may start with base = \"bgl\"); default bgl")
    p.add_argument("--shape", metavar="XxYxZ",
                   help="partition shape, e.g. 8x8x8 (default: the machine's; on bgp the smallest partition that "
                        "holds -n ranks)")
    p.add_argument("--mesh", metavar="DIMS", help="dimensions without wrap-around links, e.g. z or xyz")
    p.add_argument("--mode", help="node mode: coprocessor, vn or heater (bgl); smp, dual or vn (bgp)")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override one machine parameter, e.g. --set torus.dynamic_vcs=4 (repeatable)")


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bgsim", description="Simulator of Blue Gene/L- and Blue Gene/P-class torus machines.")
    p.add_argument("--version", action="version", version=f"bgsim {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    t = sub.add_parser("traffic", help="run a built-in traffic pattern through the packet layer",
                       description="Runs a built-in traffic pattern on the simulated torus and prints a summary. "
                                   "Timed patterns (uniform, hot_region, alltoall_stream) generate traffic for "
                                   "--warmup + --measure network cycles; the others send a fixed set of packets "
                                   "and run until every one is delivered. An option the pattern does not read "
                                   "is an error.")
    from .api import pattern_options, routings
    table, _ = pattern_options()
    t.add_argument("--pattern", required=True, choices=list(table), metavar="PATTERN",
                   help="; ".join(f"{p}: {d['description']}" + (" (timed)" if d["timed"] else "")
                                  for p, d in table.items()))
    _machine_args(t)
    t.add_argument("--routing", choices=list(routings()), default="dynamic",
                   help="; ".join(f"{k}: {v}" for k, v in routings().items()) + " (default dynamic)")
    t.add_argument("--load", type=_finite, help="offered load, fraction of peak " + _applies_to("load"))
    t.add_argument("--packets", type=_count, help="packets per source and destination " + _applies_to("packets"))
    t.add_argument("--message-bytes", type=_count,
                   help="message bytes (per pair for alltoall, in all for the fills) " + _applies_to("message_bytes"))
    t.add_argument("--payload-bytes", type=_count,
                   help="payload bytes per packet, default full packets (240 bytes on bgl) " + _applies_to("payload_bytes"))
    t.add_argument("--variable-size", action="store_true",
                   help="packet sizes uniformly 1..8 chunks " + _applies_to("variable_size"))
    t.add_argument("--hops", type=_count, help="ping-pong distance in hops " + _applies_to("hops"))
    t.add_argument("--iters", type=_count, help="ping-pong round trips " + _applies_to("iters"))
    t.add_argument("--region-lo", type=_triple, metavar="X,Y,Z", help="region low corner " + _applies_to("region_lo"))
    t.add_argument("--region-size", type=_triple, metavar="X,Y,Z", help="region size " + _applies_to("region_size"))
    t.add_argument("--hot-fraction", type=_finite, help="share of packets to the region " + _applies_to("hot_fraction"))
    t.add_argument("--warmup", type=int, dest="warmup_ncycles",
                   help="warm-up, network cycles " + _applies_to("warmup_ncycles"))
    t.add_argument("--measure", type=_count, dest="measure_ncycles",
                   help="measured span, network cycles " + _applies_to("measure_ncycles"))
    t.add_argument("--window", type=_count, dest="window_ncycles", help="throughput window, network cycles (default 10000)")
    t.add_argument("--drain", action="store_true",
                   help="after generation, run until the network is empty " + _applies_to("drain"))
    t.add_argument("--random-start", action="store_true",
                   help="start each node's walk over the destinations at a random node " + _applies_to("random_start"))
    t.add_argument("--seed", type=_seed, help="random seed (default 1)")
    t.add_argument("--threads", type=_count, default=1, metavar="N",
                   help="run the machine cut into N partitions on N threads (default 1); the result is the same "
                        "for every N (ping-pong runs as one). A run of under 128 nodes' worth of traffic (nodes "
                        "times --load) stays on one thread, and says so: threads would be slower")
    t.add_argument("--partitions", type=_count, metavar="P",
                   help=_PARTITIONS_HELP)
    t.add_argument("--json", action="store_true", help="print the full result as JSON instead of a summary")
    t.add_argument("--quiet", action="store_true", help="no progress bar (there is none when stderr is not a terminal)")
    t.add_argument("--no-memory-check", dest="memory_check", action="store_false",
                   help="run even if the estimate exceeds the memory this process may use")
    t.add_argument("--out", metavar="DIR", help="write result.json, links/vcs/nodes/throughput CSVs and plots to DIR")

    run = sub.add_parser(
        "run", help="run an MPI program (written for mpi4py) on the simulated machine",
        description="Runs PROGRAM once per rank on the simulated machine; inside it, `from mpi4py import MPI` "
                    "is the simulated MPI. Ranks print to this terminal; a summary (simulated time, messages) "
                    "goes to stderr.",
        epilog="examples: bgsim run --shape 4x4x2 -n 32 examples/ring.py\n"
               "          bgsim run --shape 4x4x2 --mode vn --skeleton bt --class B -n 64",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _machine_args(run)
    _run_args(run)
    run.add_argument("--cpu-factor", type=_cpu_factor, metavar="F",
                     help="charge the host CPU time of the Python code between MPI calls, times F, as compute")
    run.add_argument("--buffers", choices=["full", "size-only"], default="full",
                     help="full (default): messages carry the buffers' contents; size-only: the buffer calls "
                          "(Send, Bcast, Allgather ...) send only their sizes and leave receive buffers as they are, "
                          "for programs whose data would not fit in memory (docs/buffers.md)")
    run.add_argument("--skeleton", choices=["bt", "sp", "lu", "cg", "mg", "ft", "is", "ep"], metavar="NAS",
                     help="instead of a program, run the communication skeleton of a NAS Parallel Benchmark "
                          "(bt, sp, lu, cg, mg, ft, is, ep; docs/skeletons.md)")
    run.add_argument("--class", dest="nas_class", default="B", choices=["S", "W", "A", "B", "C"],
                     help="NAS problem class for --skeleton (default B)")
    run.add_argument("--iterations", type=_count, default=2, metavar="N",
                     help="timed iterations of the skeleton's main loop to simulate, after one warm-up (default 2)")
    run.add_argument("program", nargs="?", help="the Python program")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the program (sys.argv[1:])")
    rp = sub.add_parser(
        "replay", help="replay a recorded MPI program (a trace of `bgsim record`) on the simulated machine",
        description="Replays TRACE (a directory of rank-R.trace files written by `bgsim record`, a tar archive "
                    "of one, or an OTF2 archive: its .otf2 anchor file or directory) on the "
                    "simulated machine: every rank's calls in its order (communicators, point-to-point calls in "
                    "every mode, waits and tests, collectives), through the same MPI and collective algorithms "
                    "as Python programs, messages of the recorded sizes, a wildcard receive matching the "
                    "message the recorded run matched, and the time between two calls as compute (times "
                    "--cpu-factor). The trace is checked whole first; a line that does not hold is refused "
                    "naming its file and line (docs/traces.md).",
        epilog="example: bgsim record --out ring.trace -n 4 -- ./ring\n"
               "         bgsim replay ring.trace --machine bgp --shape 1x1x1 --mode vn --cpu-factor 2",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _machine_args(rp)
    _run_args(rp)
    rp.add_argument("--cpu-factor", type=_cpu_factor, default=1.0, metavar="F",
                    help="scale the recorded time between calls (the real machine's compute) by F (default 1; "
                         "0: no compute)")
    rp.add_argument("trace", help="the trace: a directory of rank-R.trace files, a tar archive of one, or an OTF2 "
                                  "archive (its .otf2 anchor file or the directory holding it)")
    rec = sub.add_parser(
        "record", help="run a C/C++/Fortran MPI program under the real MPI and record its calls for `bgsim replay`",
        description="Builds bgsim's PMPI recorder with the MPI's own mpicc, runs COMMAND with N processes under "
                    "mpirun with the recorder preloaded, and writes one rank-R.trace per process into DIR.",
        epilog="example: bgsim record --out halo.trace -n 4 -- ./halo 64")
    rec.add_argument("--out", required=True, metavar="DIR", help="the trace directory to write")
    rec.add_argument("-n", "--np", dest="nprocs", type=_count, required=True, metavar="N", help="MPI processes")
    rec.add_argument("--mpirun", default="mpirun", help="the MPI launcher (default mpirun)")
    rec.add_argument("--format", dest="fmt", choices=["bgsim", "otf2"], default="bgsim",
                     help="bgsim (default): rank-R.trace text files; otf2: an OTF2 archive (Score-P's format, "
                          "for other tools too); bgsim replay reads both")
    rec.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                     help="what the recorded times measure: cpu (default), each rank's CPU time, so that the time "
                          "between two calls is its compute even when more processes than cores share the "
                          "machine; or wall, the wall clock")
    rec.add_argument("program_args", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                     help="the program and its arguments (after --)")

    r = sub.add_parser("reproduce", help="reproduce the published experiments",
                       description="Runs experiments of the reproduction suite (NAME, or all), or `apps`: the "
                                   "proxy applications of examples/traces replayed on BG/L and BG/P "
                                   "(--out DIR writes DIR/applications.md and DIR/apps.json; --scale quick: CoMD "
                                   "only; docs/applications.md is `bgsim reproduce apps --out docs`).")
    r.add_argument("name", nargs="?", help="experiment name, `all`, or `apps`")
    r.add_argument("--scale", choices=["quick", "paper"], default="paper", help="default paper")
    r.add_argument("--json", action="store_true", help="print the result JSON on stdout and nothing else")
    r.add_argument("--out", metavar="DIR", help="write NAME.json, plots and NAME.md (and index.md for all)")
    r.add_argument("--seed", type=_seed, default=1, help="random seed (default 1)")
    r.add_argument("--fidelity", choices=["auto", "packet", "phase"], default="auto",
                   help="auto (default): packets where they fit, the phase model (whole messages in lock-step "
                        "phases, docs/phase.md) beyond, for experiments that have one; packet or phase: that one "
                        "only (phase: only experiments that have it)")
    r.add_argument("--threads", type=_count, default=1, metavar="N",
                   help="run the experiments' traffic and MPI programs on N threads, the machine cut into N "
                        "partitions (default 1; the figures are the same for every N; the ranks' Python stays on "
                        "one thread, so programs of many small messages can run slower). Runs too small for "
                        "threads to pay (fewer than 512 nodes or ranks; traffic under 128 nodes' worth) stay on one "
                        "thread, and say so")
    r.add_argument("--partitions", type=_count, metavar="P",
                   help="cut every run's machine into P partitions (at least --threads) whatever its size")
    r.add_argument("--list", action="store_true", help="list the experiments")

    m = sub.add_parser("machine", help="validate a machine description and print it",
                       description="Prints the validated machine (TOML) and its derived values.")
    _machine_args(m)

    mp = sub.add_parser(
        "map", help="write a mapfile that places a logical process grid well on the partition",
        description="For a program whose ranks form a logical P x Q grid (row-major) and exchange halos with "
                    "their four neighbours (--grid), finds a rank mapping that folds the grid onto the torus; for "
                    "any program, from the traffic matrix of a run (--traffic-matrix), one that lowers its "
                    "hop-bytes. Prints the hop-bytes and the busiest link's bytes of the default XYZT mapping and "
                    "of the new one, and writes it as a mapfile for `bgsim run --map FILE`.",
        epilog="example: bgsim map --machine bgp --mode vn --grid 128x128 -o grid.map\n"
               "         bgsim run --shape 4x4x2 --traffic-matrix t.csv prog.py && "
               "bgsim map --shape 4x4x2 --traffic-matrix t.csv -o t.map\n"
               "         bgsim map --machine bgp --mode vn --grid 128x128 -o grid.map --verify "
               "examples/nlom_halo.py 128x128",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    _machine_args(mp)
    src = mp.add_mutually_exclusive_group(required=True)
    src.add_argument("--grid", metavar="PxQ", help="the logical process grid (P x Q ranks, row-major)")
    src.add_argument("--traffic-matrix", metavar="FILE",
                     help="a run's traffic matrix (`bgsim run --traffic-matrix FILE`): the mapping then lowers "
                          "its hop-bytes by a seeded search (bgsim.mapping.optimize)")
    mp.add_argument("-n", "--np", dest="nranks", type=_count, metavar="N",
                    help="ranks of the run (with --traffic-matrix; default: the largest rank in the file + 1)")
    mp.add_argument("--bytes", dest="nbytes", type=_count, default=8192, metavar="N",
                    help="bytes each rank sends to each neighbour in one exchange (default 8192)")
    mp.add_argument("--no-periodic", dest="periodic", action="store_false",
                    help="the grid does not wrap around (default: periodic in both dimensions)")
    mp.add_argument("-o", "--out", required=True, metavar="FILE", help="the mapfile to write")
    mp.add_argument("--verify", nargs=argparse.REMAINDER, metavar="PROGRAM ...",
                    help="then run PROGRAM [ARGS] under XYZT and under the new mapping and print both times")
    return p


_FLAG = {"warmup_ncycles": "--warmup", "measure_ncycles": "--measure", "window_ncycles": "--window"}


def _inapplicable(pattern: str, given: Dict[str, Any]) -> Optional[str]:
    """An error naming a given option, by its flag, that `pattern` does not
    read (the core refuses it too; the table comes from the core)."""
    from .api import pattern_options

    table, common = pattern_options()
    for k in given:
        if k in common or k in table[pattern]["options"]:
            continue
        flag = _FLAG.get(k, "--" + k.replace("_", "-"))
        users = ", ".join(p for p, d in table.items() if k in d["options"])
        return f"{flag} does not apply to pattern {pattern} (it applies to: {users})"
    return None


def _applies_to(option: str) -> str:
    """Which patterns read an option, and its default, for --help."""
    from .api import pattern_options

    table, _ = pattern_options()
    users = [p for p, d in table.items() if option in d["options"]]
    defaults = {json.dumps(table[p]["options"][option]) for p in users}
    default = f"; default {defaults.pop()}" if len(defaults) == 1 else ""
    return f"({', '.join(users)}{default})"


#: A finite traffic run of more packets than this says how big it is first.
BIG_TRAFFIC_PACKETS = 10_000_000


def _traffic_size_note(a: argparse.Namespace, machine: Any) -> Optional[str]:
    """For a finite pattern whose messages add up to more than
    BIG_TRAFFIC_PACKETS packets: what the run moves, said before it starts
    (a packet-level run of that size takes hours)."""
    if a.message_bytes is None or a.pattern not in ("alltoall", "pingpong", "line_fill", "plane_fill"):
        return None
    try:
        m = machine.with_settings(*a.settings, shape=a.shape, mesh=a.mesh, mode=a.mode)
    except Exception:
        return None  # the run itself reports a bad machine
    n = m.nodes
    per = m.info["max_payload_bytes"]
    count = {"alltoall": n * (n - 1), "pingpong": 2 * (a.iters or 1)}.get(a.pattern, 1)
    packets = count * max(1, -(-a.message_bytes // per))
    if packets <= BIG_TRAFFIC_PACKETS:
        return None
    return (f"note: {a.pattern} of {a.message_bytes:,} bytes" + (" per pair" if a.pattern == "alltoall" else "")
            + f" on {n:,} nodes moves {count * a.message_bytes / 1e9:,.1f} GB in {packets / 1e6:,.0f} M packets; "
            "packet by packet at a few million packet-hops a second, that takes hours (Ctrl-C stops it)")


def _traffic(a: argparse.Namespace) -> int:
    from .api import Machine, process_rank, run_traffic

    spec = {}
    for k in ("routing", "load", "packets", "message_bytes", "payload_bytes", "hops", "iters", "region_lo",
              "region_size", "hot_fraction", "warmup_ncycles", "measure_ncycles", "window_ncycles", "seed"):
        v = getattr(a, k)
        if v is not None:
            spec[k] = v
    if a.variable_size:
        spec["variable_size"] = True
    if a.drain:
        spec["drain"] = True
    if a.random_start:
        spec["random_start"] = True
    if err := _inapplicable(a.pattern, spec):
        print(f"bgsim traffic: error: {err}", file=sys.stderr)
        return 2
    if a.out:
        spec["per_link"] = True
        if err := _out_dir_error(a.out, "--out"):
            print(f"bgsim traffic: error: {err}", file=sys.stderr)
            return 2
    machine = Machine(a.machine, [])
    if note := _traffic_size_note(a, machine):
        print(f"bgsim traffic: {note}", file=sys.stderr)

    bar = _progress.Bar(f"bgsim traffic {a.pattern}", fraction=True, unit="ncycles") \
        if _progress.wanted(not a.quiet) else None
    try:
        r = run_traffic(a.pattern, machine, shape=a.shape, mesh=a.mesh, mode=a.mode, settings=a.settings,
                        progress_detail=(lambda f, ncycles, events: bar.update(ncycles, events, f)) if bar else None,
                        memory_check=a.memory_check, threads=a.threads, partitions=a.partitions, **spec)
    finally:
        if bar is not None:
            bar.close()
    if process_rank() != 0:
        return 0  # under an MPI launcher, process 0 reports
    if a.out:
        _write_traffic_outputs(r, a.out)
    if a.json:
        print(r.to_json())
        return 0
    d = r.data
    lat = d["latency_ncycles"]
    rows = [
        ("machine", f"{d['machine']} {d['shape']} ({d['nodes']} nodes, {d['mode']} mode"
         + (f", {d['dead_links']} dead links)" if d.get("dead_links") else ")")),
        ("pattern", f"{d['pattern']}, {d['spec']['routing']} routing"),
        ("completed", f"{d['completed']}" + (f"  DEADLOCK at {d['ncycles_to_deadlock']:.0f} ncycles" if d["deadlock"] else "")
         + (f"  (stopped at max_ncycles = {d['spec']['max_ncycles']})" if d.get("stopped_at_max_ncycles") else "")),
        ("simulated span", f"{d['span_ncycles']:.0f} network cycles = {d['span_us']:.2f} us"),
        ("packets", f"{d['packets']['delivered']} delivered, {d['packets']['hops']} hops"),
        ("latency (ncycles)", f"mean {lat['mean']:.1f}, p50 {lat['p50']:.0f}, p99 {lat['p99']:.0f}, max {lat['max']:.0f}"),
        ("link utilization", f"mean {d['links']['mean_util_pct']:.1f}%, max {d['links']['max_util_pct']:.1f}%"),
        ("throughput", f"{d['throughput_packets_per_node_ncycle']:.5f} packets/node/ncycle, {d['payload_MBps']:.1f} MB/s payload"),
        ("escape VC share", f"{d['escape_pct']:.1f}% of hops"),
        ("no-token stalls", f"{d['links']['stalls']}"),
    ]
    if d["bound_ncycles"] > 0:
        rows.append(("% of peak", f"{d['pct_peak']:.1f} (bound {d['bound_ncycles']:.0f} ncycles)"))
    if d["oneway_cycles"]:
        ow = d["oneway_cycles"]
        rows.append(("one-way latency", f"{sum(ow) / len(ow):.0f} cycles (mean of {len(ow)})"))
    e = d["engine"]
    cut = f" ({e['partitions']} partitions on {e['threads']} thread{'s' if e['threads'] > 1 else ''})" \
        if e.get("partitions", 1) > 1 else ""
    rows.append(("wall time", f"{e['wall_s']:.2f} s, {e['hops_per_s'] / 1e6:.2f} M hops/s{cut}"))
    w = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"{k:<{w}}  {v}")
    if a.out:
        print(f"{'written to':<{w}}  {a.out}")
    return 0


def _write_traffic_outputs(r, out: str) -> None:
    from . import plots
    from .api import write_atomic

    os.makedirs(out, exist_ok=True)
    files = {"result.json": r.to_json(), "links.csv": r.links_csv(), "vcs.csv": r.vcs_csv(),
             "nodes.csv": r.nodes_csv(), "throughput.csv": r.throughput_csv()}
    for fn, text in files.items():
        write_atomic(os.path.join(out, fn), text)
    win = r.window_ncycles
    series = {
        "throughput": {"x": [i * win for i in range(len(r.window_packets))], "y": r.throughput_series(),
                       "x_label": "time (network cycles)", "y_label": "packets / node / network cycle"},
        "latency": {"x": [b for b, _ in r.latency_histogram], "y": [c for _, c in r.latency_histogram],
                    "x_label": "latency (network cycles)", "y_label": "packets"},
    }
    plots.series_plot(series, ["throughput"], os.path.join(out, "throughput.png"), "throughput over time")
    if series["latency"]["x"]:
        plots.series_plot(series, ["latency"], os.path.join(out, "latency.png"), "latency distribution")
    plots.heatmap(r.plane_link_util(0), os.path.join(out, "links_z0.png"), "link utilization, plane z=0", "mean outgoing link utilization (%)")


def _out_dir_error(path: str, option: str) -> Optional[str]:
    """Creates output directory `path` now, so that a bad one stops before the run."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        return f"{option} {path}: cannot create the directory: {e.strerror}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{option} {path}: the directory is not writable"
    return None


def _out_file_error(path: str, option: str) -> Optional[str]:
    """Checks that output file `path` can be written, before the run."""
    d = os.path.dirname(path) or "."
    if os.path.isdir(path):
        return f"{option} {path}: is a directory; give a file name"
    if not os.path.isdir(d):
        return f"{option} {path}: directory {d} does not exist"
    if not os.access(d, os.W_OK | os.X_OK):
        return f"{option} {path}: directory {d} is not writable"
    return None


def _reproduce(a: argparse.Namespace) -> int:
    from .experiments import REGISTRY
    from .reproduce import reproduce

    if a.list:
        for n, e in REGISTRY.items():
            print(f"{n:<24} {e.machine}  {e.title}" + ("  [phase model]" if e.phase else ""))
        return 0
    if not a.name:
        print("bgsim reproduce: error: give an experiment NAME, `all`, `apps`, or --list", file=sys.stderr)
        return 2
    if a.out and (err := _out_dir_error(a.out, "--out")):
        print(f"bgsim reproduce: error: {err}", file=sys.stderr)
        return 2
    if a.name == "apps":
        from .apps import reproduce_apps
        return reproduce_apps(a.scale, a.out, a.json)
    if a.name != "all" and a.name not in REGISTRY:
        print(f"bgsim reproduce: error: unknown experiment `{a.name}`; known: {', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    if a.fidelity == "phase" and (a.name == "all" or not REGISTRY[a.name].phase):
        have = ", ".join(n for n, e in REGISTRY.items() if e.phase)
        print(f"bgsim reproduce: error: --fidelity phase: `{a.name}` has no phase model (experiments with one: "
              f"{have})", file=sys.stderr)
        return 2
    return reproduce(a.name, a.scale, a.out, a.seed, a.json, a.fidelity, a.threads, a.partitions)


def _record(a: argparse.Namespace) -> int:
    from . import trace as _trace
    command = a.program_args[1:] if a.program_args[:1] == ["--"] else a.program_args
    if not command:
        print("bgsim record: error: give the program to run after --, e.g. bgsim record --out t -n 4 -- ./ring",
              file=sys.stderr)
        return 2
    if err := _out_dir_error(a.out, "--out"):
        print(f"bgsim record: error: {err}", file=sys.stderr)
        return 2
    t = _trace.record(a.out, a.nprocs, command, a.mpirun, clock=a.clock, fmt=a.fmt)
    calls = sum(len(c) for c in t.ranks)
    print(f"bgsim record: {t.nranks} ranks, {calls:,} calls, {sum(m[0] for m in t.messages().values()):,} "
          f"point-to-point messages in {a.out}", file=sys.stderr)
    return 0


def _run_args(run: argparse.ArgumentParser) -> None:
    """The options `bgsim run` and `bgsim replay` share (after the machine's)."""
    run.add_argument("-n", "--np", dest="nranks", type=_count, metavar="N",
                     help="number of ranks (default: every task slot of the partition, or the mapfile's lines)")
    run.add_argument("--map", dest="mapping", default="XYZT", metavar="XYZT|FILE",
                     help="rank mapping: a permutation of X, Y, Z, T (first letter fastest; default XYZT) "
                          "or a mapfile with one `x y z t` line per rank")
    run.add_argument("--seed", type=_seed, default=1, help="random seed (default 1)")
    run.add_argument("--fidelity", choices=["packet", "coarse", "message"], default="packet",
                     help="packet (default): the torus packet by packet; coarse: its coarse tier, each packet "
                          "booking the links of its minimal route hop by hop, without routers (faster; no "
                          "no-token counts); message: the coarse torus with a message's data moving as trains "
                          "of up to 64 packets, each booking a link once (machines with a DMA engine, such as "
                          "bgp; tens of times faster on large messages). Errors against packets in docs/coarse.md")
    run.add_argument("--threads", type=_count, default=1, metavar="N",
                     help="run the machine cut into N partitions on N threads, the ranks' Python on one (default 1); "
                          "the result (and --timeline's file) is the same, bit for bit. A run of fewer than 512 "
                          "nodes or ranks stays on one thread, and says so: threads would be slower. Under "
                          "`mpirun -n P` each process runs one partition and the Python of its ranks instead "
                          "(leave this at 1)")
    run.add_argument("--partitions", type=_count, metavar="P",
                     help=_PARTITIONS_HELP)
    run.add_argument("--coll", action="append", default=[], metavar="OP=ALGORITHM",
                     help="collective algorithm for one operation, e.g. --coll bcast=torus_p2p (repeatable; "
                          "`bgsim machine` lists them under [collectives])")
    run.add_argument("--json", metavar="FILE", help="write the run's result (per-rank statistics, counters) as JSON")
    run.add_argument("--links-csv", metavar="FILE",
                     help="write per torus link direction: packets, utilization and no-token events (CSV)")
    run.add_argument("--stalls-png", metavar="FILE",
                     help="draw the no-token events per node (summed over directions and z) as a heat map (PNG)")
    run.add_argument("--traffic-matrix", metavar="FILE",
                     help="write the bytes every rank sent to every other (CSV: source, destination, bytes; "
                          "collectives' messages included), for `bgsim map --traffic-matrix`")
    run.add_argument("--timeline", metavar="FILE",
                     help="write the run's timeline as Trace Event JSON for Perfetto (ui.perfetto.dev) or "
                          "chrome://tracing: a track per rank (MPI calls, waits, compute), message flows with "
                          "their protocol, link and injection FIFO counters of chosen nodes")
    run.add_argument("--timeline-ranks", metavar="RANKS",
                     help="ranks with a track: `all`, or ranks and ranges like 0-15,64 (default: the first 16)")
    run.add_argument("--timeline-nodes", metavar="NODES",
                     help="nodes with link and FIFO counters, by index, e.g. 0,5 (default: node 0)")
    run.add_argument("--out", metavar="DIR",
                     help="write result.json, ranks.csv, links.csv, heat maps of no-token events and link "
                          "utilization, and index.html (one page with all of them) into DIR")
    run.add_argument("--quiet", action="store_true", help="no summary and no progress bar on stderr (there is no bar "
                     "when stderr is not a terminal)")
    run.add_argument("--no-memory-check", dest="memory_check", action="store_false",
                     help="run even if the estimate exceeds the memory this process may use, and do not stop "
                          "the run when it nears that limit")


def _run(a: argparse.Namespace) -> int:
    from .api import Machine, write_atomic
    from .errors import ProgramSyntaxError, RankError, RankExit
    from .program import run_file

    cmd = f"bgsim {a.command}"
    if a.cpu_factor is not None and a.cpu_factor < 0:
        print(f"{cmd}: error: --cpu-factor {a.cpu_factor}: must be >= 0", file=sys.stderr)
        return 2
    trace = None
    if a.command == "replay":
        from . import trace as _trace
        trace = _trace.load(a.trace)
        if a.nranks is not None and a.nranks != trace.nranks:
            print(f"{cmd}: error: -n {a.nranks}: the trace has {trace.nranks} ranks", file=sys.stderr)
            return 2
    elif a.skeleton and a.program:
        print(f"{cmd}: error: give a program or --skeleton, not both (got `{a.program}` and --skeleton {a.skeleton})",
              file=sys.stderr)
        return 2
    elif not a.skeleton and not a.program:
        print(f"{cmd}: error: give a program to run, or --skeleton NAS", file=sys.stderr)
        return 2
    elif not a.skeleton and not os.path.isfile(a.program):
        print(f"{cmd}: error: program `{a.program}` not found", file=sys.stderr)
        return 2
    for path, opt in ((a.json, "--json"), (a.links_csv, "--links-csv"), (a.stalls_png, "--stalls-png"),
                      (a.timeline, "--timeline")):
        if path and (err := _out_file_error(path, opt)):
            print(f"{cmd}: error: {err}", file=sys.stderr)
            return 2
    if a.out and (err := _out_dir_error(a.out, "--out")):
        print(f"{cmd}: error: {err}", file=sys.stderr)
        return 2
    machine = Machine(a.machine, []).with_settings(*a.settings, shape=a.shape, mesh=a.mesh, mode=a.mode)
    # Under an MPI launcher each process runs the ranks of its partition;
    # process 0 writes the outputs.
    from . import _core
    processes = _core.mpi_launched()
    first = _core.mpi_rank() == 0
    common = dict(mapping=a.mapping, seed=a.seed, fidelity=a.fidelity, threads=a.threads, partitions=a.partitions,
                  processes=processes,
                  progress=not a.quiet and first, coll=a.coll,
                  memory_check=a.memory_check,
                  traffic_matrix=bool(a.traffic_matrix), timeline=a.timeline, timeline_ranks=a.timeline_ranks,
                  timeline_nodes=a.timeline_nodes)
    try:
        if trace is not None:
            from .program import run as run_main
            r = run_main(_trace.program(trace, a.cpu_factor), machine=machine, nranks=trace.nranks,
                         in_flight=trace.in_flight(), **common)
        elif a.skeleton:
            from . import nas
            from .program import run as run_main

            # Refused before the run: a rank count the benchmark cannot use.
            nas.plan(a.skeleton, a.nas_class, a.nranks or machine.info["nodes"] * machine.info["tasks_per_node"])
            r = run_main(lambda: nas.run_rank(a.skeleton, a.nas_class, iterations=a.iterations), machine=machine,
                         nranks=a.nranks, **common)
            if first:
                print(nas.describe(r.results[0]))
        else:
            r = run_file(a.program, a.args, machine=machine, nranks=a.nranks, cpu_factor=a.cpu_factor,
                         buffers=a.buffers, **common)
    except RankError as e:
        sys.stdout.flush()
        print(f"{cmd}: rank {e.rank} failed:\n{e.traceback}", file=sys.stderr, end="")
        # The other processes of an MPI job would wait for this one's ranks.
        _core.mpi_abort(1)
        return 1
    except RankExit as e:
        sys.stdout.flush()
        print(f"{cmd}: {e}", file=sys.stderr)
        _core.mpi_abort(e.status)
        return e.status
    except ProgramSyntaxError as e:
        text = (e.text or "").rstrip()
        print(f"{cmd}: {e.filename}:{e.lineno}: syntax error: {e.msg}" + (f"\n    {text}" if text else ""),
              file=sys.stderr)
        return 2
    except DeadlockError as e:
        sys.stdout.flush()
        if first:  # every process of an MPI job finds the same deadlock
            print(f"{cmd}: {e}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    if not first:
        return 0
    if a.json:
        write_atomic(a.json, r.to_json())
    if a.links_csv:
        write_atomic(a.links_csv, r.links_csv())
    if a.traffic_matrix and r.traffic:
        write_atomic(a.traffic_matrix, r.traffic_csv())
    if a.stalls_png:
        r.stalls_plot(a.stalls_png)
    if a.out:
        what = f"trace {a.trace}" if trace is not None else f"--skeleton {a.skeleton} (class {a.nas_class})" \
            if a.skeleton else " ".join([a.program] + a.args)
        r.write_out_dir(a.out, f"{cmd} {what}", [("program", what), ("machine", a.machine)])
    if not a.quiet:
        print(f"bgsim: {r.summary()}", file=sys.stderr)
        if r.collectives:
            used = "; ".join(f"{op}: " + ", ".join(f"{k} x{v}" for k, v in algos.items()) for op, algos in r.collectives.items())
            print(f"bgsim: collectives: {used}", file=sys.stderr)
    return 0


def _grid(text: str) -> tuple:
    try:
        p, q = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--grid `{text}`: expected PxQ, e.g. 128x128") from None
    if p < 1 or q < 1:
        raise UsageError(f"--grid `{text}`: both sizes must be at least 1")
    return p, q


def _read_traffic(path: str) -> Dict[tuple, int]:
    """A traffic matrix CSV (source, destination, bytes) as {(s, d): bytes}."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"--traffic-matrix {path}: cannot be read: {e}") from None
    out: Dict[tuple, int] = {}
    for i, line in enumerate(lines, 1):
        if not line.strip() or line.startswith(("source", "#")):
            continue
        try:
            s, d, b = (int(v) for v in line.split(","))
        except ValueError:
            raise UsageError(f"{path}:{i}: `{line}`: expected `source,destination,bytes` (integers)") from None
        if s < 0 or d < 0 or b < 0:
            raise UsageError(f"{path}:{i}: `{line}`: ranks and bytes must be non-negative")
        out[(s, d)] = out.get((s, d), 0) + b
    return out


def _map(a: argparse.Namespace) -> int:
    from . import mapping
    from .api import Machine, write_atomic
    from .program import partition_for, run_file

    if err := _out_file_error(a.out, "-o"):
        raise UsageError(err)
    if a.traffic_matrix:
        traffic = _read_traffic(a.traffic_matrix)
        nranks = a.nranks or (max(max(s, d) for s, d in traffic) + 1 if traffic else 1)
        grid = None
    else:
        grid = _grid(a.grid)
        nranks = grid[0] * grid[1]
    base = Machine(a.machine, []).with_settings(*a.settings, shape=a.shape, mesh=a.mesh, mode=a.mode)
    sets = list(base.settings) + partition_for(base.source, list(base.settings), nranks)
    m = Machine(base.source, sets)
    shape, torus, tasks = tuple(m.shape), tuple(m.info["torus"]), m.info["tasks_per_node"]
    slots_total = m.nodes * tasks
    if nranks > slots_total:
        what = f"--grid {a.grid}" if grid is not None else \
            (f"-n {a.nranks}" if a.nranks else f"--traffic-matrix {a.traffic_matrix} (ranks 0 to {nranks - 1})")
        raise UsageError(f"{what}: {nranks:,} ranks do not fit the {'x'.join(map(str, shape))} partition "
                         f"({slots_total:,} task slots in mode {m.info['mode']}); give a larger --shape or "
                         "another --mode")
    default = mapping.order_slots(shape, tasks, nranks)
    where = f"on {m.info['name']} {'x'.join(map(str, shape))}, {m.info['mode']} mode ({tasks} task(s) per node)"
    if grid is None:
        if any(s >= nranks or d >= nranks for s, d in traffic):
            raise UsageError(f"--traffic-matrix {a.traffic_matrix}: ranks up to {max(max(p) for p in traffic)} "
                             f"for a run of -n {nranks}")
        new_name, folded = "optimized", mapping.optimize(traffic, shape, tasks, nranks, torus)
        print(f"traffic matrix {a.traffic_matrix} ({len(traffic):,} pairs, {nranks:,} ranks) {where}")
    else:
        traffic = mapping.grid_traffic(grid, a.nbytes, a.periodic)
        new_name, folded = "grid-fold", mapping.grid_mapping(grid, shape, tasks, torus, a.nbytes, a.periodic)
        print(f"grid {grid[0]}x{grid[1]} ({nranks:,} ranks) {where}; {a.nbytes:,} bytes to each of 4 neighbours")
    print(f"{'mapping':<10} {'hop-bytes':>16} {'busiest link (bytes)':>22}")
    for name, slots in (("XYZT", default), (new_name, folded)):
        load = mapping.link_loads(traffic, slots, shape, torus)
        print(f"{name:<10} {mapping.hop_bytes(traffic, slots, shape, torus):>16,} {int(load.max()):>22,}")
    write_atomic(a.out, mapping.mapfile_text(folded))
    print(f"wrote {a.out}")
    if a.verify:
        program, *args = a.verify
        for name, mp in (("XYZT", "XYZT"), (new_name, a.out)):
            r = run_file(program, args, machine=a.machine, settings=sets, nranks=nranks, mapping=mp)
            print(f"{name:<10} simulated time {r.time_s * 1e6:,.2f} us")
    return 0


def _machine(a: argparse.Namespace) -> int:
    from .api import Machine

    m = Machine(a.machine, []).with_settings(*a.settings, shape=a.shape, mesh=a.mesh, mode=a.mode)
    print(m.toml)
    print("# derived")
    for k, v in m.info.items():
        print(f"# {k} = {json.dumps(v)}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = _build_parser()
    a = parser.parse_args(argv)
    if a.command is None:
        parser.print_help()
        return 2
    try:
        if a.command == "traffic":
            return _traffic(a)
        if a.command == "reproduce":
            return _reproduce(a)
        if a.command == "machine":
            return _machine(a)
        if a.command in ("run", "replay"):
            return _run(a)
        if a.command == "record":
            return _record(a)
        if a.command == "map":
            return _map(a)
    except (MachineError, WorkloadError, MappingError, MemoryLimitError, UsageError) as e:
        print(f"bgsim: error: {e}", file=sys.stderr)
        return 2
    except BgsimError as e:
        print(f"bgsim: error: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # writing results: disk full, permissions changed mid-run
        print(f"bgsim: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bgsim: interrupted", file=sys.stderr)
        return 130
    return 2


if __name__ == "__main__":
    sys.exit(main())
