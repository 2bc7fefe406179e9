"""Proxy applications on the simulated machines: the traces of four public
MPI proxy apps (examples/traces/, recorded under Open MPI by
`scripts/record_apps.py`), replayed on BG/L and BG/P in both node modes,
with where each rank's time goes, the MPI calls that take it, and what a
mapping chosen from the run's traffic matrix changes. `bgsim reproduce
apps` runs it and writes docs/applications.md.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from . import mapping as _mapping
from . import trace as _trace
from .api import Machine
from .errors import UsageError
from .program import run as _run

#: Where the traces are in a checkout of bgsim.
TRACES = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                                       "traces"))
#: The recorded compute is the recording machine's (a 2.x GHz x86 core):
#: replayed as it is. `--cpu-factor` of `bgsim replay` scales it.
CPU_FACTOR = 1.0


@dataclass(frozen=True)
class App:
    name: str
    file: str
    title: str
    about: str
    source: str


APPS = (
    App("lulesh", "lulesh-64.tar.xz", "LULESH 2.0",
        "shock hydrodynamics on an unstructured hexahedral mesh: a 26-neighbour halo exchange (faces, edges, "
        "corners) of nonblocking sends and receives every phase, and an allreduce of the time step; "
        "`-s 6 -i 10` (6^3 elements per rank, 10 iterations)",
        "https://github.com/LLNL/LULESH at 3e01c40"),
    App("comd", "comd-64.tar.xz", "CoMD 1.1",
        "classical molecular dynamics (Lennard-Jones): a 6-direction halo exchange of atoms by MPI_Sendrecv, "
        "allreduces of energies and atom counts; `-x 24 -y 24 -z 24 -N 20 -n 5` on a 4x4x4 process grid",
        "https://github.com/ECP-copa/CoMD at 3d48396"),
    App("minife", "minife-64.tar.xz", "miniFE 2.0 (ref)",
        "implicit finite elements: assembly, then conjugate gradients whose sparse matrix-vector product "
        "exchanges boundary values with MPI_ANY_SOURCE receives, and two dot-product allreduces per "
        "iteration; `nx=ny=nz=24`",
        "https://github.com/Mantevo/miniFE at c79e0f7"),
    App("hpcg", "hpcg-8.tar.xz", "HPCG 3.1",
        "preconditioned conjugate gradients with a multigrid V-cycle: halo exchanges on four grid levels and "
        "a dot-product allreduce; `--nx=16 --ny=16 --nz=16 --rt=0` (the reference and validation runs)",
        "https://github.com/hpcg-benchmark/hpcg at 114602d"),
)


def configs(nranks: int) -> List[tuple]:
    """(label, machine, shape, mode) of the four runs of an app of `nranks`
    ranks: each machine's one-task mode on nranks nodes, and its virtual
    node mode on as few nodes as hold them."""
    cube = {8: "2x2x2", 64: "4x4x4"}
    if nranks not in cube:
        raise UsageError(f"an app of {nranks} ranks: the suite runs 8 or 64")
    vn_l = {8: "2x2x1", 64: "4x4x2"}[nranks]
    vn_p = {8: "2x1x1", 64: "4x2x2"}[nranks]
    return [("BG/L coprocessor", "bgl", cube[nranks], "coprocessor"), ("BG/L VN", "bgl", vn_l, "vn"),
            ("BG/P SMP", "bgp", cube[nranks], "smp"), ("BG/P VN", "bgp", vn_p, "vn")]


#: The core cycles a rank's stats give, by what spent them: compute, and
#: the MPI's and message layer's own work.
_WORK = ("core_inject_cycles", "core_read_cycles", "core_poll_cycles", "core_protocol_cycles", "core_copy_cycles",
         "core_interrupt_cycles")


def split(ranks: Sequence[Dict[str, Any]], cpu_mhz: float) -> Dict[str, float]:
    """Where the ranks' time went, the mean per rank (us): compute (the
    recorded compute, charged to the core), communication (the MPI's and
    message layer's work on the core: injecting, reading, polling, protocol,
    copies, interrupts) and waiting (the rest of the rank's run: blocked
    for messages or other ranks)."""
    n = float(len(ranks))
    compute = sum(r["core_compute_cycles"] for r in ranks) / cpu_mhz / n
    work = sum(sum(r[k] for k in _WORK) for r in ranks) / cpu_mhz / n
    total = sum(r["end_s"] for r in ranks) * 1e6 / n
    return {"compute_us": compute, "communication_us": work, "waiting_us": max(total - compute - work, 0.0)}


def calls(timeline_json: dict) -> Dict[str, Dict[str, float]]:
    """Per MPI call, from a timeline of every rank: its count and the time
    inside it summed over the ranks (us)."""
    out: Dict[str, Dict[str, float]] = {}
    for e in timeline_json["traceEvents"]:
        if e.get("ph") == "X" and e.get("pid") == 0 and e.get("cat") == "mpi":
            c = out.setdefault(e["name"], {"calls": 0, "time_us": 0.0})
            c["calls"] += 1
            c["time_us"] += e["dur"]
    return out


def run_app(app: App, traces: str = TRACES) -> Dict[str, Any]:
    """Replays one app in the four configurations and once more with a
    mapping chosen from its traffic matrix."""
    path = os.path.join(traces, app.file)
    if not os.path.exists(path):
        raise UsageError(f"{path}: the trace of {app.title} is missing (examples/traces of a bgsim checkout; "
                         "scripts/record_apps.py records it)")
    t = _trace.load(path)
    out: Dict[str, Any] = {"app": app.name, "title": app.title, "nranks": t.nranks,
                           "messages": sum(m[0] for m in t.messages().values()),
                           "bytes": sum(m[1] for m in t.messages().values()),
                           "calls": sum(len(r) for r in t.ranks), "runs": []}
    wall = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        tl = os.path.join(tmp, "timeline.json")
        traffic = None
        for label, machine, shape, mode in configs(t.nranks):
            r = _run(_trace.program(t, CPU_FACTOR), machine, nranks=t.nranks, shape=shape, mode=mode,
                     timeline=tl, timeline_ranks="all", traffic_matrix=traffic is None, memory_check=False)
            with open(tl) as f:
                per_call = calls(json.load(f))
            mhz = Machine(machine, []).info["cpu_mhz"]
            out["runs"].append({"config": label, "machine": machine, "shape": shape, "mode": mode,
                                "time_us": r.time_us, **split(r.ranks, mhz), "calls": per_call})
            if traffic is None:
                traffic = {(s, d): b for s, d, b in r.traffic if s != d}
        # A mapping for the first configuration, from its traffic matrix.
        label, machine, shape, mode = configs(t.nranks)[0]
        m = Machine(machine, []).with_settings(shape=shape, mode=mode)
        dims, torus, tasks = tuple(m.shape), tuple(m.info["torus"]), m.info["tasks_per_node"]
        base = _mapping.order_slots(dims, tasks, t.nranks)
        better = _mapping.optimize(traffic, dims, tasks, t.nranks, torus)
        mapfile = os.path.join(tmp, "app.map")
        _mapping.write_mapfile(mapfile, better)
        r = _run(_trace.program(t, CPU_FACTOR), machine, nranks=t.nranks, shape=shape, mode=mode, mapping=mapfile,
                 memory_check=False)
        out["mapping"] = {
            "config": label,
            "hop_bytes_xyzt": _mapping.hop_bytes(traffic, base, dims, torus),
            "hop_bytes_optimized": _mapping.hop_bytes(traffic, better, dims, torus),
            "busiest_link_xyzt": int(_mapping.link_loads(traffic, base, dims, torus).max()),
            "busiest_link_optimized": int(_mapping.link_loads(traffic, better, dims, torus).max()),
            "time_us_xyzt": out["runs"][0]["time_us"], "time_us_optimized": r.time_us}
    out["wall_s"] = time.time() - wall
    return out


def report(results: Sequence[Dict[str, Any]]) -> str:
    """docs/applications.md from the results of `run_app`."""
    by_name = {a.name: a for a in APPS}
    lines = ["# Proxy applications on BG/L and BG/P", "",
             "Generated by `bgsim reproduce apps --out docs` (do not edit by hand). Four public MPI proxy "
             "applications, built from their sources with Open MPI's `mpicxx`/`mpicc` and recorded by "
             "`bgsim record` (`scripts/record_apps.py`; the traces, not the code, are in `examples/traces/`), "
             "replayed with `bgsim replay` (docs/traces.md). The time between two MPI calls is the compute the "
             "recording machine (an x86 core at 2-3 GHz) measured, replayed as it is (`--cpu-factor 1`): a "
             "700/850 MHz PowerPC core is several times slower, so on the real machines compute takes a larger "
             "share than here; `bgsim replay --cpu-factor F` scales it.", "",
             "Per configuration, the mean over the ranks of where a rank's time went: *compute* (between MPI "
             "calls), *communication* (the MPI's and message layer's work on the core: injecting and reading "
             "packets, polling, protocol, copies) and *waiting* (the rest: blocked for messages or for other "
             "ranks). One-task modes run "
             "a rank per node (BG/L coprocessor, BG/P SMP), virtual node modes two (BG/L) or four (BG/P) ranks per "
             "node on fewer nodes.", ""]
    for res in results:
        app = by_name[res["app"]]
        lines += [f"## {app.title}", "", f"{app.about}. Source: {app.source}. {res['nranks']} ranks, "
                  f"{res['calls']:,} recorded calls, {res['messages']:,} point-to-point messages "
                  f"({res['bytes'] / 1e6:,.1f} MB). Replayed in {res['wall_s']:.0f} s of wall time.", "",
                  "| configuration | partition | simulated time | compute | communication | waiting |",
                  "|---|---|---|---|---|---|"]
        for run in res["runs"]:
            total = run["compute_us"] + run["communication_us"] + run["waiting_us"]

            def pct(v: float) -> str:
                return f"{100 * v / total:.0f}%" if total > 0 else "-"
            lines.append(f"| {run['config']} | {run['shape']} | {run['time_us'] / 1e3:,.2f} ms | "
                         f"{pct(run['compute_us'])} | {pct(run['communication_us'])} | {pct(run['waiting_us'])} |")
        first = res["runs"][0]
        calls = sorted(first["calls"].items(), key=lambda kv: -kv[1]["time_us"])[:5]
        mpi_total = sum(v["time_us"] for v in first["calls"].values()) or 1.0
        lines += ["", f"Top MPI calls by time on {first['config']} (summed over the ranks):", "",
                  "| call | calls | time | share of MPI time |", "|---|---|---|---|"]
        for name, v in calls:
            lines.append(f"| {name} | {v['calls']:,} | {v['time_us'] / 1e3:,.2f} ms | "
                         f"{100 * v['time_us'] / mpi_total:.0f}% |")
        mp = res["mapping"]
        hb = mp["hop_bytes_optimized"] / mp["hop_bytes_xyzt"] if mp["hop_bytes_xyzt"] else 1.0
        tt = mp["time_us_optimized"] / mp["time_us_xyzt"] if mp["time_us_xyzt"] else 1.0
        lines += ["", f"Mapping ({mp['config']}): `bgsim map --traffic-matrix` proposes a placement with "
                  f"{hb:.2f}x the hop-bytes of XYZT (busiest link {mp['busiest_link_xyzt']:,} -> "
                  f"{mp['busiest_link_optimized']:,} bytes); the run takes {tt:.3f}x the time "
                  f"({mp['time_us_xyzt'] / 1e3:,.2f} -> {mp['time_us_optimized'] / 1e3:,.2f} ms).", ""]
        t = {r["config"]: r["time_us"] for r in res["runs"]}
        lines += [f"Node modes: BG/L VN takes {t['BG/L VN'] / t['BG/L coprocessor']:.2f}x the time of "
                  f"coprocessor mode on twice the nodes; BG/P VN {t['BG/P VN'] / t['BG/P SMP']:.2f}x that of SMP "
                  "on four times the nodes.", ""]
    return "\n".join(lines)


def reproduce_apps(scale: str, out_dir: Optional[str], as_json: bool, traces: str = TRACES) -> int:
    """`bgsim reproduce apps`: every app (`quick`: CoMD only), the report
    printed or written to OUT/applications.md with OUT/apps.json."""
    todo = [a for a in APPS if scale == "paper" or a.name == "comd"]
    results = []
    for app in todo:
        if not as_json:
            print(f"[apps] {app.title} ...", flush=True)
        results.append(run_app(app, traces))
    text = report(results)
    if out_dir:
        from .api import write_atomic
        os.makedirs(out_dir, exist_ok=True)
        write_atomic(os.path.join(out_dir, "applications.md"), text + "\n")
        write_atomic(os.path.join(out_dir, "apps.json"), json.dumps(results, indent=1) + "\n")
    if as_json:
        print(json.dumps(results, indent=1))
    elif not out_dir:
        print(text)
    return 0
