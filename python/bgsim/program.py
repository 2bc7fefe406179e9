"""Running an MPI program on a simulated machine: builds the world of
ranks, makes ``mpi4py`` the simulated MPI for the run, runs every rank's
program (``runtime``) and returns the run's result: the core's report plus
what only Python knows (each rank's return value, the collective choices,
host time).
"""

from __future__ import annotations

import builtins
import json
import os
import pickle
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


from . import _core, memory
from . import mpi4py_package as _mpi4py_package
from . import timeline as _timeline
from .api import (Machine, _settings, check_cpu_factor, check_seed, check_threads, mpi_threads_that_pay,
                  partition_count, write_atomic)
from .errors import MachineError, MappingError, ProgramNotFoundError, ProgramSyntaxError, UsageError
from .mpishim.world import _reset
from .runtime import Runtime
from .runtime import current as _current_rank

#: The tiers a run may take: the torus packet by packet, its coarse tier,
#: or the message tier (the coarse torus, messages as trains of packets).
FIDELITIES = ("packet", "coarse", "message")


@dataclass
class RunResult:
    """The outcome of a simulated MPI run.

    ``time_s``: simulated time from the start to the last rank's end;
    ``ranks``: per-rank statistics (coordinates, end time, messages, bytes,
    per-protocol counts, core time by category); ``counters``: network-wide
    counters; ``results``: what each rank's main returned (API runs)."""

    nranks: int
    shape: tuple
    mode: str
    time_s: float
    ranks: List[dict]
    counters: dict
    results: List[Any]
    wall_s: float
    python_wall_s: float
    machine_toml: str
    #: The algorithm of every collective call: {op: {algorithm: calls}}.
    collectives: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: Collective-network links that carried packets: node, parent, packets
    #: up / down, busy seconds up / down, utilization % of the run.
    tree_links: List[dict] = field(default_factory=list)
    #: Per torus link direction (node * 6 + direction, x+ x- y+ y- z+ z-):
    #: packets, utilization % of the run, no-token events (a packet ready
    #: with no downstream tokens, as BG/P's hardware counters count them).
    link_packets: List[int] = field(default_factory=list)
    link_util_pct: List[float] = field(default_factory=list)
    link_stalls: List[int] = field(default_factory=list)
    #: Bytes sent per (source rank, destination rank), collectives'
    #: messages included: [(source, destination, bytes)] (runs made with
    #: ``traffic_matrix=True``; ``bgsim run --traffic-matrix FILE``).
    traffic: List[tuple] = field(default_factory=list)
    #: "full", or "size-only": the buffer calls' messages carried only
    #: their sizes (``bgsim.run(buffers=...)``).
    buffers: str = "full"
    #: "packet"; "coarse": the torus ran on its coarse tier; "message":
    #: the message tier (``bgsim.run(fidelity=...)``, docs/coarse.md).
    fidelity: str = "packet"
    #: Threads the run took (``bgsim.run(threads=...)``; one where the
    #: machine is too small for threads to pay): the same figures on any
    #: number.
    threads: int = 1
    #: Partitions the machine was cut into (as many as threads unless
    #: ``bgsim.run(partitions=...)`` asked for more).
    partitions: int = 1
    #: The share of the simulated time the engine ran on those threads: it
    #: keeps to one thread while the ranks act too often for threads to
    #: pay (0 on one thread).
    threaded_share: float = 0.0
    #: Processes of an MPI job the run took, one partition each
    #: (``mpirun -n P bgsim run ...``): the same figures on any number.
    processes: int = 1

    @property
    def time_us(self) -> float:
        return self.time_s * 1e6

    def traffic_csv(self) -> str:
        """The traffic matrix as CSV: source, destination, bytes (one line
        per pair that talked)."""
        return "source,destination,bytes\n" + "".join(f"{s},{d},{b}\n" for s, d, b in self.traffic)

    def to_dict(self) -> dict:
        return {
            "nranks": self.nranks,
            "shape": list(self.shape),
            "mode": self.mode,
            "time_s": self.time_s,
            "ranks": self.ranks,
            "counters": self.counters,
            "collectives": self.collectives,
            "tree_links": self.tree_links,
            "link_packets": self.link_packets,
            "link_util_pct": self.link_util_pct,
            "link_stalls": self.link_stalls,
            "wall_s": self.wall_s,
            "python_wall_s": self.python_wall_s,
            "threads": self.threads,
            "partitions": self.partitions,
            "threaded_share": self.threaded_share,
            "processes": self.processes,
            "buffers": self.buffers,
            "fidelity": self.fidelity,
        }

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_dataframe(self):
        """Per-rank statistics as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("RunResult.to_dataframe needs pandas (pip install pandas); "
                              "RunResult.ranks has the same data as a list of dicts") from e
        return pd.DataFrame(self.ranks).set_index("rank")

    def links_csv(self) -> str:
        """Per torus link direction: node, coordinates, direction, packets,
        utilization %, no-token events."""
        import csv
        import io
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["node", "x", "y", "z", "dir", "packets", "util_pct", "no_token_stalls"])
        sx, sy, _ = self.shape
        for i, (p, u, st) in enumerate(zip(self.link_packets, self.link_util_pct, self.link_stalls)):
            n, d = divmod(i, 6)
            w.writerow([n, n % sx, (n // sx) % sy, n // (sx * sy), ("x+", "x-", "y+", "y-", "z+", "z-")[d], p,
                        f"{u:.3f}", st])
        return buf.getvalue()

    def _per_node(self, values: Sequence[float], scale: float = 1.0) -> List[List[float]]:
        """Per-link-direction values summed per node over its six directions
        and over z, times `scale` (rows = y, columns = x)."""
        sx, sy, _ = self.shape
        grid = [[0.0] * sx for _ in range(sy)]
        for i, v in enumerate(values):
            n = i // 6
            grid[(n // sx) % sy][n % sx] += v * scale
        return grid

    def stalls_plot(self, path: str) -> None:
        """A heat map of the no-token events per node, summed over its six
        directions and over z (rows = y, columns = x), as PNG."""
        from . import plots
        plots.heatmap(self._per_node(self.link_stalls), path,
                      f"no-token events, {self.nranks} ranks on {'x'.join(map(str, self.shape))}",
                      "events (summed over directions and z)")

    def util_plot(self, path: str) -> None:
        """A heat map of the mean outgoing link utilization per node, over
        its six directions and over z (rows = y, columns = x), as PNG."""
        from . import plots
        plots.heatmap(self._per_node(self.link_util_pct, 1 / (6 * self.shape[2])), path,
                      f"link utilization, {self.nranks} ranks on {'x'.join(map(str, self.shape))}",
                      "mean outgoing link utilization (%), over directions and z")

    def ranks_csv(self) -> str:
        """Per-rank statistics as CSV (the columns of `ranks`)."""
        import csv
        import io
        buf = io.StringIO()
        if self.ranks:
            w = csv.DictWriter(buf, fieldnames=list(self.ranks[0]), lineterminator="\n")
            w.writeheader()
            w.writerows(self.ranks)
        return buf.getvalue()

    def write_out_dir(self, out: str, title: str, described: Sequence[tuple] = ()) -> List[str]:
        """Writes the run's files into `out` - result.json, ranks.csv,
        links.csv, stalls.png, link_util.png (traffic.csv when the traffic
        matrix was recorded) - and index.html, one page with all of them;
        `described`: (label, value) rows to put first in its summary.
        Returns the files' names."""
        from . import html
        os.makedirs(out, exist_ok=True)
        files = {"result.json": self.to_json(), "ranks.csv": self.ranks_csv(), "links.csv": self.links_csv()}
        if self.traffic:
            files["traffic.csv"] = self.traffic_csv()
        for name, text in files.items():
            write_atomic(os.path.join(out, name), text)
        self.stalls_plot(os.path.join(out, "stalls.png"))
        self.util_plot(os.path.join(out, "link_util.png"))
        c = self.counters
        rows = list(described) + [
            ("ranks", self.nranks), ("partition", f"{'x'.join(map(str, self.shape))}, {self.mode} mode"),
            ("simulated time (us)", self.time_us), ("messages", c["messages_completed"]),
            ("packets delivered", c["packets_delivered"]), ("no-token events", c.get("no_token_stalls", 0)),
            ("wall time (s)", self.wall_s)]
        body = [html.table(["run", ""], rows, numeric=(False, True)), "<h2>Plots</h2>",
                html.plot(os.path.join(out, "stalls.png"), "no-token events per node"),
                html.plot(os.path.join(out, "link_util.png"), "mean outgoing link utilization per node"),
                "<h2>Collective algorithms</h2>", html.collectives(self.collectives),
                "<h2>Counters</h2>", html.table(["counter", "value"], self.counters.items(), numeric=(False, True))]
        shown = self.ranks[:64]
        if shown:
            cols = ["rank", "x", "y", "z", "t", "end_s", "sends", "recvs", "bytes_sent", "bytes_received"]
            body += [f"<h2>Ranks</h2><p>{len(shown)} of {self.nranks} (all in ranks.csv).</p>",
                     html.table(cols, ([rk.get(k, "") for k in cols] for rk in shown), numeric=[False] + [True] * 9)]
        names = sorted(files) + ["stalls.png", "link_util.png"]
        body += ["<h2>Machine</h2>", html.machine(self.machine_toml.split("\n", 1)[0].strip("# ") or "machine",
                                                  self.machine_toml), html.links(names)]
        html.write(out, title, body)
        return names + ["index.html"]

    def summary(self) -> str:
        c = self.counters
        return (f"{self.nranks} ranks on {'x'.join(map(str, self.shape))} ({self.mode}"
                + (", size-only buffers" if self.buffers == "size-only" else "")
                + (f", {self.fidelity} tier" if self.fidelity != "packet" else "") + "): "
                f"simulated time {self.time_s * 1e6:,.2f} us; {c['messages_completed']:,} messages, "
                f"{c['packets_delivered']:,} packets"
                + (f", {c['no_token_stalls']:,} no-token events" if c.get("no_token_stalls") else "")
                + f"; wall {self.wall_s:.2f} s"
                + (f" in {self.partitions} partitions on {self.threads} thread{'s' if self.threads > 1 else ''} "
                   f"({self.threaded_share:.0%} of the simulated time on threads)" if self.partitions > 1 else "")
                + (f" on {self.processes} processes" if self.processes > 1 else ""))


def partition_for(source: str, sets: Sequence[str], nranks: Optional[int]) -> List[str]:
    """The setting that gives a run of `nranks` ranks, with no shape of its
    own, the smallest of its machine's partition shapes that holds it (none
    when the machine lists none or the shape was given)."""
    if nranks is None or any(s.replace(" ", "").startswith("partition.shape=") for s in sets):
        return []
    m = Machine(source, list(sets))
    tpn = m.info["tasks_per_node"]
    fits = [s for s in m.info.get("partition_shapes", []) if _nodes(s) * tpn >= nranks]
    return [f'partition.shape="{min(fits, key=_nodes)}"'] if fits else []


def _nodes(shape: str) -> int:
    n = 1
    for d in shape.lower().split("x"):
        n *= int(d)
    return n


def make_world(machine: Machine | str = "bgl", *, shape: Optional[str] = None, mesh: Optional[str] = None,
               mode: Optional[str] = None, nranks: Optional[int] = None, mapping: Optional[str] = None,
               settings: Sequence[str] = (), seed: int = 1, mpi: bool = True,
               memory_check: bool = True, fidelity: str = "packet", threads: int = 1,
               processes: bool = False, in_flight: Tuple[int, int] = (0, 0),
               partitions: Optional[int] = None) -> "_core.World":
    """A simulated world: machine, partition, node mode, ranks and mapping.
    `mapping` is a permutation of XYZT or the path of a mapfile. A world
    that cannot fit in the memory this process may use is refused
    (`memory_check=False` builds it anyway). `fidelity`: "packet",
    "coarse" for the torus's coarse tier, or "message" for the message
    tier (docs/coarse.md). `threads` > 1: the machine cut into that many
    partitions (or `partitions`, at least as many), run on as many
    threads; without `partitions`, a run of fewer than `PAY_MPI` nodes or
    ranks stays on one thread and says so (its windows hold too little
    for threads to pay).
    `processes`: in a process of an MPI job (``mpirun -n P``), one
    partition per process, each running its own ranks (else every process
    runs the whole machine). `in_flight`: at most how many messages the
    program holds posted at once, one by one and in collectives'
    exchanges, where that is known beforehand (a trace's replay): the
    memory check counts them."""
    if fidelity not in FIDELITIES:
        raise UsageError(f"fidelity = {fidelity!r}: allowed {', '.join(FIDELITIES)}")
    check_threads(threads, partitions)
    if (not isinstance(in_flight, (tuple, list)) or len(in_flight) != 2
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in in_flight)):
        raise UsageError(f"in_flight = {in_flight!r}: two whole numbers, at least 0 (messages posted one by one, "
                         "and in collectives' exchanges)")
    if isinstance(machine, str):
        machine = Machine(machine)
    sets = list(machine.settings) + _settings(shape, mesh, mode, settings)
    if nranks is not None and (not isinstance(nranks, int) or nranks < 1):
        raise UsageError(f"nranks = {nranks!r}: must be a positive integer")
    sets += partition_for(machine.source, sets, nranks)
    check_seed(seed)
    m = Machine(machine.source, sets)
    ranks = nranks or (m.nodes - m.info["dead_nodes"]) * m.info["tasks_per_node"]
    threads, partitions = mpi_threads_that_pay(m, ranks, threads, partitions, processes and _core.mpi_launched())
    parts = partition_count(m, threads, partitions)
    if memory_check:
        # Each partition on a thread holds a copy of the machine's state
        # (every node's); the ranks' Python is one.
        memory.check(m.nodes * parts, ranks, what=f"an MPI run of {ranks:,} ranks on {'x'.join(map(str, m.shape))}"
                     + (f" in {parts} partitions" if parts > 1 else ""), messages=in_flight[0],
                     exchange_messages=in_flight[1])
    if processes and _core.mpi_launched():
        from .api import register_mpi_finalize
        register_mpi_finalize()
    mapping = mapping or "XYZT"
    if _is_order(mapping):
        return _core.World(machine.source, sets, nranks, mapping.upper(), None, seed, mpi, fidelity, threads, processes,
                           parts)
    if not os.path.exists(mapping):
        raise MappingError(f"mapping `{mapping}`: neither a permutation of X, Y, Z, T (e.g. XYZT, TXYZ) nor an existing mapfile")
    try:
        with open(mapping, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise MappingError(f"mapfile `{mapping}`: not a text file (byte {e.start} is not UTF-8); "
                           "a mapfile has one `x y z t` line per rank") from None
    except OSError as e:
        raise MappingError(f"mapfile `{mapping}`: cannot be read: {e.strerror}") from None
    return _core.World(machine.source, sets, nranks, "XYZT", (mapping, text), seed, mpi, fidelity, threads, processes,
                       parts)


def _is_order(s: str) -> bool:
    return len(s) == 4 and sorted(s.upper()) == ["T", "X", "Y", "Z"]


def run(main: Callable[[], Any], machine: Machine | str = "bgl", *, nranks: Optional[int] = None,
        shape: Optional[str] = None, mesh: Optional[str] = None, mode: Optional[str] = None,
        mapping: Optional[str] = None, settings: Sequence[str] = (), seed: int = 1,
        cpu_factor: Optional[float] = None, progress: bool = False, layer: str = "mpi",
        coll: Optional[Dict[str, str]] = None, memory_check: bool = True,
        traffic_matrix: bool = False, timeline: Optional[str] = None, timeline_ranks: Optional[str] = None,
        timeline_nodes: Optional[str] = None, buffers: str = "full", fidelity: str = "packet",
        threads: int = 1, processes: bool = False, in_flight: Tuple[int, int] = (0, 0),
        partitions: Optional[int] = None) -> RunResult:
    """Runs `main()` once per rank on a simulated machine and returns the
    RunResult. Inside `main`, ``from mpi4py import MPI`` (or
    ``from bgsim import MPI``) is the simulated MPI.

    `layer="msglayer"` leaves out MPI's own per-message costs: the program
    then measures the message layer below MPI (same protocols, matching as
    the message layer's `recvnew` callback does it).

    `coll` chooses collective algorithms, e.g. ``{"bcast": "torus_p2p"}``
    (the names of `bgsim.collective_algorithms()`; same as ``--coll``).

    A run that cannot fit in the memory this process may use is refused
    before it starts, and one that nears the limit while it runs stops with
    `bgsim.errors.MemoryLimitError` (`memory_check=False`: neither).

    `traffic_matrix=True` records the bytes every rank sends to every other
    (`RunResult.traffic`, `RunResult.traffic_csv()`).

    `timeline="FILE.json"` writes the run's timeline for Perfetto and
    chrome://tracing (`bgsim.timeline`): tracks for the ranks
    `timeline_ranks` names (`all`, or ranks and ranges like `0-15,64`;
    default the first 16) and link and injection FIFO counters for the
    nodes `timeline_nodes` names (`0,5`; default node 0).

    `buffers="size-only"`: the buffer calls (Send, Recv, Bcast, Allreduce,
    Allgather, Alltoallv ...) send messages of their buffers' sizes without
    content, and leave receive buffers as they are: the same messages,
    algorithms and simulated times, without the data (docs/buffers.md).
    Calls on Python objects (send, bcast, allgather ...) still carry them.

    `fidelity="coarse"` runs the torus on its coarse tier: a packet's head
    books the next link of its minimal route when it reaches a node
    (dynamically routed packets take the productive link free first), with
    no routers (no buffers or tokens, so no no-token counts); cores, the
    message layer, MPI and the other networks are the packet tier's.
    Faster; its error against packets is in docs/coarse.md.

    `fidelity="message"` (machines with a DMA engine, such as bgp) runs
    the message tier: the coarse torus, and a message's full data packets
    moving as trains of up to 64 packets (15 KB), each of which books each
    link of its route once, for as long as its packets take; the DMA
    engine and the cores are charged per packet as on packets. Tens of
    times faster on large messages; its error against packets is in
    docs/coarse.md.

    `threads=N` cuts the machine into N partitions run on N threads (the
    ranks' Python stays on one): the same result, bit for bit, hardware
    collectives, deposit-bit broadcasts, the coarse and message tiers and
    timelines included. A machine of fewer than `PAY_MPI` (512) nodes or
    ranks stays on one thread, and says so on stderr: its windows hold
    too little for threads to pay. `partitions=P` (at least `threads`)
    cuts it into P partitions on `threads` threads whatever its size.

    `processes=True` in a process of an MPI job (``mpirun -n P``) runs one
    partition per process, each process the Python of its own ranks; every
    process gets the whole result (the ranks' return values pickled across;
    the same figures as on one process; a timeline's file is written by
    the first process).

    `in_flight=(ONE_BY_ONE, EXCHANGE)`: at most how many messages the
    program holds posted at once, one by one and in collectives'
    exchanges, where that is known beforehand (`Trace.in_flight()` for a
    replay): the memory check before the run counts them."""
    if layer not in ("mpi", "msglayer"):
        raise UsageError(f"layer = {layer!r}: allowed mpi, msglayer")
    world = make_world(machine, shape=shape, mesh=mesh, mode=mode, nranks=nranks, mapping=mapping,
                       settings=list(settings) + coll_settings(coll), seed=seed, mpi=layer == "mpi",
                       memory_check=memory_check, fidelity=fidelity, threads=threads, processes=processes,
                       in_flight=in_flight, partitions=partitions)
    with _mpi4py_package.installed():
        return _execute(world, main, cpu_factor, progress, seed, memory_check, traffic_matrix=traffic_matrix,
                        timeline=(timeline, timeline_ranks, timeline_nodes), buffers=buffers)


def coll_settings(coll: Optional[Any]) -> List[str]:
    """Machine settings choosing collective algorithms: from a dict
    {op: name} or strings "op=name"."""
    if not coll:
        return []
    items = coll.items() if isinstance(coll, dict) else (c.split("=", 1) if "=" in c else (c, "") for c in coll)
    out = []
    known = dict(_core.collective_algorithms())
    for op, name in items:
        op, name = op.strip(), name.strip()
        if op not in known:
            raise MachineError(f"--coll {op}={name}: unknown operation `{op}` (allowed: {', '.join(known)})")
        out.append(f'collectives.{op}="{name}"')
    return out


def collective_algorithms() -> Dict[str, List[str]]:
    """Every selectable collective algorithm, by operation."""
    return {op: list(names) for op, names in _core.collective_algorithms()}


def run_file(path: str, argv: Sequence[str] = (), **kw) -> RunResult:
    """Runs the program at `path` once per rank, each rank in its own
    ``__main__`` namespace, with ``sys.argv = [path, *argv]``."""
    try:
        with open(path, "rb") as f:
            source = f.read()
    except OSError as e:
        raise ProgramNotFoundError(f"bgsim run: cannot read program `{path}`: {e.strerror}") from None
    try:
        code = compile(source, path, "exec")
    except SyntaxError as e:
        raise ProgramSyntaxError(e.msg, (e.filename, e.lineno, e.offset, e.text)) from None

    def main() -> Any:
        # The rank's own __main__ module: what `sys.modules["__main__"]`
        # gives while the rank runs (unittest.main, pickle by reference).
        mod = types.ModuleType("__main__")
        mod.__dict__.update({"__file__": path, "__builtins__": builtins, "__package__": None})
        ctx = _current_rank()
        ctx.runtime.modules.set_main(ctx.rank, mod)
        exec(code, mod.__dict__)
        return None

    old_argv, old_path = sys.argv, list(sys.path)
    sys.argv = [path, *argv]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        seed = kw.get("seed", 1)
        settings = list(kw.pop("settings", [])) + coll_settings(kw.pop("coll", None))
        memory_check = kw.pop("memory_check", True)
        world = make_world(kw.pop("machine", "bgl"), settings=settings, memory_check=memory_check, **{
            k: kw.pop(k) for k in list(kw) if k in ("shape", "mesh", "mode", "nranks", "mapping", "seed", "fidelity", "threads",
                                          "processes", "partitions")})
        with _mpi4py_package.installed():
            return _execute(world, main, kw.pop("cpu_factor", None), kw.pop("progress", False), seed, memory_check,
                            private_dir=os.path.dirname(os.path.abspath(path)),
                            traffic_matrix=kw.pop("traffic_matrix", False),
                            timeline=(kw.pop("timeline", None), kw.pop("timeline_ranks", None),
                                      kw.pop("timeline_nodes", None)), buffers=kw.pop("buffers", "full"))
    finally:
        sys.argv, sys.path[:] = old_argv, old_path


def _execute(world: "_core.World", main: Callable[[], Any], cpu_factor: Optional[float], progress: bool,
             seed: int = 1, memory_check: bool = True, private_dir: Optional[str] = None,
             traffic_matrix: bool = False, timeline: tuple = (None, None, None), buffers: str = "full") -> RunResult:
    """Runs `main` on every rank; modules under `private_dir` (a program
    file's directory) are each rank's own; `timeline`: (file, ranks,
    nodes) of the timeline to write (file None: none)."""
    t0 = time.perf_counter()
    check_cpu_factor(cpu_factor)
    path, tl_ranks, tl_nodes = timeline
    tl = None
    if path:
        nodes = world.shape[0] * world.shape[1] * world.shape[2]
        tl = _timeline.Timeline(world, _timeline.parse_ranks(tl_ranks, world.nranks),
                                _timeline.parse_nodes(tl_nodes, nodes))
    limit = memory.limit_bytes() if memory_check else None
    rt = Runtime(world, cpu_factor, progress, seed, memory_limit=limit, private_dir=private_dir, buffers=buffers)
    if limit is not None:
        # The runtime stops the run cleanly at memory.GUARD_SHARE of the
        # limit, between calls into the core; the core's watch stops the
        # process at memory.WATCH_SHARE whatever it is doing, before the
        # kernel would kill it.
        world.watch_memory(min(int(memory.WATCH_SHARE * limit), 2**63), limit)
    rt.timeline = tl
    _reset(world.nranks)
    if traffic_matrix:
        world.record_traffic()
    try:
        if tl is None:
            rt.run(main)
        else:
            with _timeline.instrument(tl):
                rt.run(main)
            tl.write(path)
    finally:
        # What the program does after the run is not the watch's to judge.
        world.watch_memory_end()
    wall = time.perf_counter() - t0
    # The core's report (components' counters, per-rank statistics) and
    # what only the Python side knows.
    report = json.loads(world.report([c.finished_at for c in rt.ctxs]))
    results, coll_stats = _gathered(world, rt)
    processes = world.process[1]
    result = RunResult(
        nranks=report["nranks"], shape=tuple(report["shape"]), mode=report["mode"], time_s=report["time_s"],
        ranks=report["ranks"], counters=report["counters"], results=results, wall_s=wall,
        collectives=coll_stats, tree_links=report["tree_links"], python_wall_s=rt.python_wall,
        machine_toml=report["machine_toml"], link_packets=report["link_packets"],
        link_util_pct=report["link_util_pct"], link_stalls=report["link_stalls"],
        traffic=world.traffic_matrix() if traffic_matrix else [], buffers=buffers, fidelity=world.fidelity,
        threads=world.threads if processes == 1 else 1, partitions=world.partitions if processes == 1 else 1,
        processes=processes,
        threaded_share=world.threaded_share if processes == 1 else 0.0)
    for fn in list(_OBSERVERS):
        fn(result)
    return result


def _gathered(world: "_core.World", rt: Runtime) -> Tuple[List[Any], Dict[str, Dict[str, int]]]:
    """Every rank's return value and the collective choices: on the
    processes of an MPI job each process knows its own ranks' and the
    choices its ranks recorded; they are shared (a value that cannot be
    pickled arrives as its repr)."""
    results = [c.result for c in rt.ctxs]
    if world.process[1] == 1:
        return results, rt.coll_stats
    mine = {}
    for r in world.local_ranks:
        try:
            mine[r] = pickle.dumps(results[r])
        except Exception:
            mine[r] = pickle.dumps(repr(results[r]))
    stats: Dict[str, Dict[str, int]] = {}
    for blob in world.share(pickle.dumps((mine, rt.coll_stats))):
        theirs, their_stats = pickle.loads(blob)
        for r, v in theirs.items():
            results[r] = pickle.loads(v)
        for label, algos in their_stats.items():
            for name, k in algos.items():
                stats.setdefault(label, {})[name] = stats.get(label, {}).get(name, 0) + k
    return results, stats


#: Functions told of every RunResult as a run ends (`observe`).
_OBSERVERS: List[Callable[[RunResult], None]] = []


class observe:
    """``with observe(fn):`` calls fn(result) for every MPI run that ends in
    the block (what `bgsim reproduce` gathers across an experiment's runs)."""

    def __init__(self, fn: Callable[[RunResult], None]):
        self.fn = fn

    def __enter__(self) -> "observe":
        _OBSERVERS.append(self.fn)
        return self

    def __exit__(self, *exc: Any) -> None:
        _OBSERVERS.remove(self.fn)
