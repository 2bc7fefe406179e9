"""The Python API over the Rust core: machines and traffic runs."""

from __future__ import annotations

import atexit
import csv
import errno
import functools
import io
import json
import math
import os
import stat
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence, Tuple

from . import _core, memory
from .errors import MachineError, UsageError, WorkloadError

DIR_NAMES = ["x+", "x-", "y+", "y-", "z+", "z-"]


def coords(n: int, dims) -> tuple:
    """Coordinates of dense node index n = x + X * (y + Y * z)."""
    return n % dims[0], (n // dims[0]) % dims[1], n // (dims[0] * dims[1])


class OutputError(OSError):
    """An output file could not be written; the message names the file."""


def write_atomic(path: str, text) -> None:
    """Writes `text` (str, or bytes) to `path` whole or not at all.

    A regular file (new or existing) is written through a temporary file
    in its directory that is renamed over it once complete, so a failure
    leaves the old file as it was and no temporary behind. Anything else
    that exists at `path` is written to, never replaced: a device
    (/dev/null, /dev/stdout), a FIFO, a terminal - and a symbolic link is
    followed, so the link stays and its target gets the text. A directory
    is refused. Errors are `OutputError`s naming `path`."""
    try:
        real = os.path.realpath(path)
        # (A dangling symbolic link gets its target created.)
        st = os.stat(real) if os.path.exists(real) else None
    except OSError as e:
        raise OutputError(e.errno, f"cannot write {path}: {e.strerror}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(errno.EISDIR, f"cannot write {path}: it is a directory; give a file name")
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with (open(real, "wb") if isinstance(text, bytes) else open(real, "w", encoding="utf-8")) as f:
                f.write(text)
        except OSError as e:
            raise OutputError(e.errno, f"cannot write {path}: {e.strerror}") from None
        return
    d = os.path.dirname(real) or "."
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(real) + ".", suffix=".tmp", dir=d)
        with (os.fdopen(fd, "wb") if isinstance(text, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as f:
            f.write(text)
        os.chmod(tmp, st.st_mode & 0o7777 if st is not None else 0o666 & ~_umask())
        os.replace(tmp, real)
        tmp = None
    except OSError as e:
        raise OutputError(e.errno, f"cannot write {path}: {e.strerror}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def _settings(shape: Optional[str], mesh: Optional[str], mode: Optional[str], settings: Iterable[str]) -> list:
    out = []
    if shape is not None:
        out.append(f'partition.shape="{shape}"')
    if mesh is not None:
        out.append(f'partition.mesh="{mesh}"')
    if mode is not None:
        out.append(f'partition.mode="{mode}"')
    out.extend(settings)
    return out


@dataclass
class Machine:
    """A machine description: a preset name (``bgl``) or a TOML file path,
    plus ``section.key=value`` settings. Validated on construction."""

    source: str = "bgl"
    settings: Sequence[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.settings = list(self.settings)
        for s in self.settings:
            try:
                s.encode("utf-8")
            except UnicodeEncodeError as e:
                raise MachineError(f"setting {s.encode('utf-8', 'surrogateescape')!r}: not valid UTF-8 "
                                   f"(at character {e.start})") from None
        toml_text, derived = _core.machine_info(self.source, self.settings)
        self.toml: str = toml_text
        self.info: dict = json.loads(derived)

    def with_settings(self, *settings: str, shape: Optional[str] = None, mesh: Optional[str] = None,
                      mode: Optional[str] = None) -> "Machine":
        """The same machine with more settings (later ones win)."""
        return Machine(self.source, list(self.settings) + _settings(shape, mesh, mode, settings))

    @property
    def name(self) -> str:
        return self.info["name"]

    @property
    def shape(self) -> tuple:
        return tuple(self.info["shape"])

    @property
    def nodes(self) -> int:
        return self.info["nodes"]


class TrafficResult:
    """The result of a traffic run: every counter of the run as attributes
    (``r.latency_ncycles['mean']``, ``r.links['mean_util_pct']`` ...), plus
    JSON and CSV exports."""

    def __init__(self, data: dict, machine: Machine):
        self.data = data
        self.machine = machine

    def __getattr__(self, name: str) -> Any:
        try:
            return self.data[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self) -> str:
        d = self.data
        return (f"TrafficResult(pattern={d['pattern']!r}, shape={d['shape']!r}, completed={d['completed']}, "
                f"span_ncycles={d['span_ncycles']:.0f}, pct_peak={d['pct_peak']:.1f})")

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self.data, indent=indent)

    def links_csv(self) -> str:
        """Per link direction: node, coordinates, direction, utilization %, no-token stalls."""
        dims = self.machine.shape
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["node", "x", "y", "z", "dir", "util_pct", "stalls"])
        stalls = self.data.get("link_stalls") or []
        for i, u in enumerate(self.data.get("link_util_pct") or []):
            n, d = divmod(i, 6)
            x, y, z = coords(n, dims)
            w.writerow([n, x, y, z, DIR_NAMES[d], f"{u:.3f}", stalls[i] if i < len(stalls) else 0])
        return buf.getvalue()

    def throughput_csv(self) -> str:
        """Delivered packets and payload bytes per throughput window."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["window_start_ncycles", "packets", "payload_bytes"])
        win = self.data["window_ncycles"]
        for i, (p, b) in enumerate(zip(self.data["window_packets"], self.data["window_payload_bytes"])):
            w.writerow([i * win, p, b])
        return buf.getvalue()

    def vcs_csv(self) -> str:
        """Per virtual channel: mean occupancy, share of traffic."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["vc", "mean_occupancy_bytes", "share_pct", "packets", "stalls"])
        for v in self.data["vcs"]:
            w.writerow([v["name"], f"{v['mean_occupancy_bytes']:.3f}", f"{v['share_pct']:.3f}", v["packets"], v["stalls"]])
        return buf.getvalue()

    def nodes_csv(self) -> str:
        """Per node: coordinates, injection and reception FIFO full time (network cycles)."""
        dims = self.machine.shape
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["node", "x", "y", "z", "inj_fifo_full_ncycles", "rx_fifo_full_ncycles"])
        rx = self.data.get("node_rx_full_ncycles") or []
        for n, inj in enumerate(self.data.get("node_inj_full_ncycles") or []):
            x, y, z = coords(n, dims)
            w.writerow([n, x, y, z, f"{inj:.1f}", f"{rx[n]:.1f}" if n < len(rx) else ""])
        return buf.getvalue()

    def plane_link_util(self, z: int) -> list:
        """Mean utilization (%) of each node's outgoing links in plane z, as rows y of columns x
        (needs a run with per_link=True)."""
        dims = self.machine.shape
        u = self.data["link_util_pct"]
        rows = []
        for y in range(dims[1]):
            base = dims[0] * (y + dims[1] * z)
            rows.append([sum(u[(base + x) * 6:(base + x) * 6 + 6]) / 6 for x in range(dims[0])])
        return rows

    def throughput_series(self, skip_windows: int = 0) -> list:
        """Delivered packets per node per network cycle, per window."""
        win = self.data["window_ncycles"]
        n = self.data["nodes"]
        return [p / win / n for p in self.data["window_packets"][skip_windows:]]


def patterns() -> list:
    """Names of the built-in traffic patterns."""
    return list(_core.patterns())


def check_seed(seed: Any) -> None:
    """A random seed: an integer from 0 to 2**64 - 1."""
    if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**64:
        raise UsageError(f"seed = {seed!r}: an integer from 0 to 2**64 - 1")


def check_cpu_factor(cpu_factor: Any) -> None:
    """A CPU factor (simulated seconds per host CPU second), or None."""
    if cpu_factor is None:
        return
    if isinstance(cpu_factor, bool) or not isinstance(cpu_factor, (int, float)) or not 0 < cpu_factor <= 1e6:
        raise UsageError(f"cpu_factor = {cpu_factor!r}: a number above 0 and at most 1e6 (simulated seconds per host "
                         "CPU second)")


@functools.lru_cache(maxsize=1)
def pattern_options() -> tuple:
    """The traffic patterns as the core declares them: ({name: {"description",
    "timed", "options": {option: default}}}, {common option: default}).
    Read from the core once; treat it as read-only."""
    patterns, common = _core.pattern_options()
    table = {name: {"description": desc, "timed": timed, "options": json.loads(opts)}
             for name, desc, timed, opts in patterns}
    return table, json.loads(common)


def routings() -> dict:
    """The routing algorithms: name -> one-line description."""
    return dict(_core.routings())


def process_rank() -> int:
    """This process's index in the MPI job that started it (``mpirun -n P
    bgsim ...``), 0 outside one."""
    return _core.mpi_rank()


_finalize_registered = False


def register_mpi_finalize() -> None:
    """Ends MPI at exit in a process an MPI launcher started (once)."""
    global _finalize_registered
    if not _finalize_registered:
        atexit.register(_core.mpi_finalize)
        _finalize_registered = True


def partition_count(m: Machine, threads: int, parts: Optional[int] = None) -> int:
    """The partitions a run of machine `m` on `threads` threads (cut into
    `parts`, default one per thread) has: at most one per node, as the
    core cuts it. Says so on stderr when fewer threads run than asked for."""
    if threads > m.nodes:
        print(f"bgsim: note: threads = {threads:,}: a partition is at least a node, so the {m.nodes:,} nodes of "
              f"{'x'.join(map(str, m.shape))} run on {m.nodes:,} threads", file=sys.stderr)
    return min(threads if parts is None else parts, m.nodes)


#: When partitions on threads pay (docs/performance.md, "When threads
#: pay"). Every window ends at barriers where the threads meet, and the cut
#: costs what crossing it costs, so each partition needs enough to do in a
#: window. Measured on 2 cores: MPI programs gained from 512 nodes and 512
#: ranks (the smaller of the two is what counts) and lost below (most at
#: 64 to 128 nodes); traffic gained where the nodes times the offered load
#: reached 128 and broke even or lost below (0.6 times the speed at 512
#: nodes and 2%).
PAY_MPI = 512
PAY_TRAFFIC_LOAD = 128


#: The notes `threads_that_pay` gave (each is given once a process).
_SAID: set = set()


def threads_that_pay(threads: int, partitions: Optional[int], busy: Optional[float], least: float,
                     why: str) -> Tuple[int, int]:
    """(threads, partitions) a run asked for `threads` (and maybe
    `partitions`) takes. Without `partitions` the engine chooses: one
    thread and one partition where `busy` (how much a window of the run
    holds, in the measure of `least`) is below `least`, and says so on
    stderr with `why` (what the run is). With `partitions`, or `busy`
    None (no choice to make: under an MPI launcher the core refuses
    threads), the machine is cut as asked."""
    if partitions is not None or threads == 1 or busy is None or busy >= least:
        return threads, threads if partitions is None else partitions
    if why in _SAID:
        return 1, 1
    _SAID.add(why)
    print(f"bgsim: note: threads = {threads}: {why}: too small a run for partitions to pay (from {least:,.0f}); "
          f"this run stays on one thread, where {threads} would be slower (`partitions={threads}`, or "
          f"`--partitions {threads}`, cuts it anyway; "
          'docs/performance.md, "When threads pay")', file=sys.stderr)
    return 1, 1


def mpi_threads_that_pay(m: Machine, ranks: int, threads: int, partitions: Optional[int],
                         distributed: bool) -> Tuple[int, int]:
    """`threads_that_pay` for an MPI run of `ranks` ranks on machine `m`
    (`PAY_MPI`: the smaller of nodes and ranks counts); `distributed`: a
    run on the processes of an MPI job, where the core refuses threads."""
    return threads_that_pay(threads, partitions, None if distributed else min(m.nodes, ranks), PAY_MPI,
                            f"{m.nodes:,} nodes and {ranks:,} ranks")


def check_threads(threads: Any, partitions: Any) -> None:
    """Refuses a thread or partition count that is not a whole number, or
    fewer partitions than threads."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise UsageError(f"threads = {threads!r}: a whole number, at least 1")
    if partitions is not None and (not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < threads):
        raise UsageError(f"partitions = {partitions!r}: a whole number, at least threads ({threads})")


def run_traffic(pattern: str, machine: Machine | str = "bgl", *, shape: Optional[str] = None,
                mesh: Optional[str] = None, mode: Optional[str] = None, settings: Sequence[str] = (),
                progress: Optional[Callable[[float], None]] = None,
                progress_detail: Optional[Callable[[float, float, int], None]] = None, memory_check: bool = True,
                threads: int = 1, partitions: Optional[int] = None, **spec: Any) -> TrafficResult:
    """Runs a built-in traffic pattern and returns its result.

    ``spec`` holds the pattern's parameters (``load``, ``packets``,
    ``message_bytes``, ``routing`` (a name of ``routings()``), ``seed`` ...;
    see ``bgsim traffic --help``). A run that cannot fit in the memory this
    process may use is refused (``memory_check=False`` runs it anyway).
    ``progress(fraction)`` is called now and then with the fraction of the
    run done, ``progress_detail(fraction, ncycles, events)`` also with the
    simulated time and the events simulated so far.

    ``threads`` runs the machine cut into that many partitions (or
    ``partitions``, at least as many) whose time windows run on as many
    threads; the result is the same, bit for bit, for every choice
    (``docs/architecture.md``, "Partitions and the parallel window
    protocol"). Without ``partitions``, a run whose nodes times offered
    load (1 for the patterns without one) is under ``PAY_TRAFFIC_LOAD``
    stays on one thread, and says so: its windows hold too little for
    threads to pay. Ping-pong runs as one partition. Under an MPI launcher
    (``mpirun -n P``, a bgsim built with ``make build``) every process
    makes the same call and runs one partition; each gets the result.
    """
    if isinstance(machine, str):
        machine = Machine(machine)
    check_threads(threads, partitions)
    m = machine.with_settings(*settings, shape=shape, mesh=mesh, mode=mode)
    for k, v in spec.items():
        if isinstance(v, float) and not math.isfinite(v):
            raise WorkloadError(f"traffic `{k}` = {v}: a finite number")
    # Patterns without an offered load send as fast as they can.
    opts = pattern_options()[0].get(pattern, {"options": {}})["options"]
    load = spec.get("load", opts["load"]) if "load" in opts else 1.0
    # No choice under an MPI launcher (the core refuses threads: one
    # partition a process), nor on a load the core refuses.
    numeric = isinstance(load, (int, float)) and not isinstance(load, bool)
    busy = m.nodes * load if numeric and not _core.mpi_launched() else None
    why = "" if busy is None else f"{m.nodes:,} nodes at an offered load of {load:g} ({busy:,.1f} nodes' worth of traffic)"
    threads, parts = threads_that_pay(threads, partitions, busy, PAY_TRAFFIC_LOAD, why)
    cut = partition_count(m, threads, parts)
    if memory_check:
        # Each partition holds a copy of the machine's state.
        memory.check(m.nodes * cut, per_link=bool(spec.get("per_link")), what=f"traffic on {'x'.join(map(str, m.shape))}")
    body = {"pattern": pattern, **spec}
    report = None
    if progress is not None or progress_detail is not None:
        def report(f: float, ncycles: float, events: int) -> None:
            if progress is not None:
                progress(f)
            if progress_detail is not None:
                progress_detail(f, ncycles, events)
    if _core.mpi_launched():
        register_mpi_finalize()
    out = _core.run_traffic(m.source, list(m.settings), json.dumps(body), report, threads, parts)
    return TrafficResult(json.loads(out), m)
