"""Reading a trace: the directory of `rank-R.trace` files `bgsim record`
writes (format 2, documented in `bgsim_trace.c`), checked whole before a
run: every line's call, arguments, communicator, request and times, and
every rank's communicators and requests followed through the file, so that
a trace the replay cannot do is refused naming FILE:LINE.

Loading also resolves what the recorded run decided at run time, so that
the replay makes the same decisions: a receive posted with MPI_ANY_SOURCE
or MPI_ANY_TAG gets the source and tag of the message it matched (from the
`status` line after its completion), and each new communicator the split
colour and key that give it the recorded members in the recorded order.
"""

from __future__ import annotations

import gc
import math
import os
import re
import tarfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from .. import _core
from ..errors import UsageError

#: A rank's number for MPI_COMM_WORLD and MPI_COMM_SELF.
WORLD, SELF = 0, 1
#: MPI_PROC_NULL and the wildcards (MPI_ANY_SOURCE, MPI_ANY_TAG), as written.
PROC_NULL, ANY = -2, -1
#: A rooted collective's root at the root, on an intercommunicator (MPI_ROOT).
ROOT = -3
#: The largest tag (MPI_TAG_UB of the simulated MPI) and time (s) a trace may hold.
TAG_UB = 2**31 - 1
MAX_TIME_S = 1e6
#: Element types (TYPE: kind and size) and reduction operations a trace may name.
TYPES = ("f4", "f8", "f16", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "c8", "c16", "c32", "b1")
OPS = ("sum", "max", "min", "prod", "band", "bor", "bxor", "land", "lor", "lxor", "maxloc", "minloc", "replace",
       "user")

_SEND = ("dest", "tag", "bytes", "comm")
_RECV = ("src", "tag", "bytes", "comm")
#: Every call: its fixed integer arguments; then a list ("n": N values,
#: "2n": N values twice) and TYPE OP, when it has them.
SPEC: Dict[str, Tuple[Tuple[str, ...], Optional[str], bool]] = {
    "comm_dup": (("parent", "new"), None, False),
    "comm_idup": (("parent", "new", "req"), None, False),
    "comm_split": (("parent", "new"), "n", False),
    "comm_group": (("parent", "new"), "n", False),
    "comm_free": (("comm",), None, False),
    # Intercommunicators: the list is the remote group's world ranks
    # (create), the merged communicator's (merge).
    "intercomm_create": (("local", "leader", "peer", "rleader", "tag", "new"), "n", False),
    "intercomm_merge": (("inter", "high", "new"), "n", False),
    **{m: (_SEND, None, False) for m in ("send", "ssend", "bsend", "rsend")},
    **{m: (_SEND + ("req",), None, False) for m in ("isend", "issend", "ibsend", "irsend", "send_init",
                                                     "ssend_init", "bsend_init", "rsend_init")},
    "recv": (_RECV, None, False),
    "irecv": (_RECV + ("req",), None, False),
    "recv_init": (_RECV + ("req",), None, False),
    "sendrecv": (("dest", "stag", "sbytes", "src", "rtag", "rbytes", "comm"), None, False),
    "probe": (("src", "tag", "comm"), None, False),
    # Matched probes: MSG numbers the message taken (from 1), received once
    # by mrecv / imrecv.
    "mprobe": (("src", "tag", "bytes", "comm", "msg"), None, False),
    "mrecv": (("msg",), None, False),
    "imrecv": (("msg", "req"), None, False),
    "start": (("req",), None, False),
    "startall": ((), "n", False),
    "request_free": (("req",), None, False),
    "cancel": (("req",), None, False),
    **{m: (("req",), None, False) for m in ("wait", "test", "waitany", "testany")},
    **{m: ((), "n", False) for m in ("waitall", "testall", "waitsome", "testsome")},
    "status": (("req", "src", "tag"), None, False),
    "cancelled": (("req",), None, False),
    "finalize": ((), None, False),
}
#: Collectives; a nonblocking one is the same with an i in front and REQ after COMM.
COLLECTIVES: Dict[str, Tuple[Tuple[str, ...], Optional[str], bool]] = {
    "barrier": (("comm",), None, False),
    "bcast": (("root", "bytes", "comm"), None, False),
    "reduce": (("root", "bytes", "comm"), None, True),
    **{m: (("bytes", "comm"), None, True) for m in ("allreduce", "scan", "exscan", "reduce_scatter_block")},
    "reduce_scatter": (("comm",), "n", True),
    "allgather": (("bytes", "comm"), None, False),
    "alltoall": (("bytes", "comm"), None, False),
    "gather": (("root", "bytes", "comm"), None, False),
    "scatter": (("root", "bytes", "comm"), None, False),
    "gatherv": (("root", "bytes", "comm"), "n", False),
    "scatterv": (("root", "bytes", "comm"), "n", False),
    "allgatherv": (("comm",), "n", False),
    "alltoallv": (("comm",), "2n", False),
    # Neighbourhood collectives: the list is IN, the in-neighbours, the
    # bytes from each, OUT, the out-neighbours, the bytes to each
    # (`neighborhood`).
    **{m: (("comm",), "n", False) for m in ("neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall",
                                           "neighbor_alltoallv", "neighbor_alltoallw")},
}
#: One-sided communication: windows (WIN: the rank's number for a window,
#: from 0 in the order it made them), operations on TARGET (a rank of the
#: window's communicator) at displacement DISP (in the target's units),
#: synchronization.
RMA: Dict[str, Tuple[Tuple[str, ...], Optional[str], bool]] = {
    "win_create": (("comm", "win", "bytes", "unit"), None, False),
    "win_free": (("win",), None, False),
    "put": (("target", "disp", "bytes", "win"), None, False),
    "get": (("target", "disp", "bytes", "win"), None, False),
    "accumulate": (("target", "disp", "bytes", "win"), None, True),
    "get_accumulate": (("target", "disp", "bytes", "win"), None, True),
    "fetch_and_op": (("target", "disp", "bytes", "win"), None, True),
    "compare_and_swap": (("target", "disp", "bytes", "win"), None, False),
    # Request-based: done when REQ completes.
    "rput": (("target", "disp", "bytes", "win", "req"), None, False),
    "rget": (("target", "disp", "bytes", "win", "req"), None, False),
    "raccumulate": (("target", "disp", "bytes", "win", "req"), None, True),
    "rget_accumulate": (("target", "disp", "bytes", "win", "req"), None, True),
    "win_fence": (("win",), None, False),
    "win_lock": (("target", "exclusive", "win"), None, False),
    "win_unlock": (("target", "win"), None, False),
    "win_lock_all": (("win",), None, False),
    "win_unlock_all": (("win",), None, False),
    "win_flush": (("target", "win"), None, False),
    "win_flush_all": (("win",), None, False),
    "win_sync": (("win",), None, False),
    "win_post": (("win",), "n", False),
    "win_start": (("win",), "n", False),
    "win_complete": (("win",), None, False),
    "win_wait": (("win",), None, False),
}
SPEC.update(RMA)
SPEC.update(COLLECTIVES)
SPEC.update({"i" + k: (f[:f.index("comm") + 1] + ("req",) + f[f.index("comm") + 1:], lst, typed)
             for k, (f, lst, typed) in COLLECTIVES.items()})

#: The nonblocking and persistent sends, and the blocking mode each posts.
SEND_MODE = {"isend": "send", "issend": "ssend", "ibsend": "bsend", "irsend": "rsend", "send_init": "send",
             "ssend_init": "ssend", "bsend_init": "bsend", "rsend_init": "rsend"}
#: Completions of one request, and of a list of them.
COMPLETES_ONE = frozenset(("wait", "test", "waitany", "testany"))
COMPLETES_LIST = frozenset(("waitall", "testall", "waitsome", "testsome"))


def neighborhood(lst: List[int]) -> Tuple[List[int], List[int], List[int], List[int]]:
    """A neighbourhood collective's list: (in-neighbours, bytes from each,
    out-neighbours, bytes to each). Raises UsageError if it is not laid
    out so."""
    if not lst or lst[0] < 0 or len(lst) < 2 + 2 * lst[0]:
        raise UsageError("expected IN, IN in-neighbours, IN byte counts, then OUT ...")
    k = lst[0]
    rest = lst[1 + 2 * k:]
    if rest[0] < 0 or len(rest) != 1 + 2 * rest[0]:
        raise UsageError(f"expected OUT, OUT out-neighbours and OUT byte counts after the {k} in-neighbours")
    m = rest[0]
    return lst[1:1 + k], lst[1 + k:1 + 2 * k], rest[1:1 + m], rest[1 + m:]


def blocking_collective(name: str) -> Optional[str]:
    """The collective a call is (its blocking name: `iallreduce` ->
    `allreduce`), or None for any other call."""
    if name in COLLECTIVES:
        return name
    return name[1:] if name[:1] == "i" and name[1:] in COLLECTIVES else None


#: What checks a call: point to point (with one peer), completions, the
#: status after one; the rest by name, collectives last.
_KIND = {**{m: "p2p" for m in ("send", "ssend", "bsend", "rsend", "recv", "irecv", "recv_init", "probe",
                               *SEND_MODE)},
         **{m: "done" for m in COMPLETES_ONE | COMPLETES_LIST},
         **{m: m for m in ("status", "cancelled", "cancel", "intercomm_create", "intercomm_merge", "comm_dup", "comm_idup", "comm_split", "comm_group", "comm_free", "sendrecv", "start",
                           "startall", "request_free", "finalize", "mprobe", "mrecv", "imrecv")},
         **{m: "rma" for m in RMA}}


_EMPTY: List[int] = []
#: The arguments that may carry a buffer's layout (point to point, and the
#: collectives whose send and receive buffers have one datatype and count).
_LAID_OUT = ("bytes", "sbytes", "rbytes")
_LAID_OUT_COLLECTIVES = ("bcast", "reduce", "allreduce", "scan", "exscan", "reduce_scatter_block")
#: One-sided operations whose origin buffer may carry its layout.
_LAID_OUT_RMA = ("put", "get", "rput", "rget", "accumulate", "raccumulate")
#: The collectives whose send and receive buffers each may carry a layout
#: (`send=SIZE:EXTENT:TRUE_EXTENT recv=...` at the line's end).
_SIDED = ("gather", "scatter", "allgather", "alltoall", "gatherv", "scatterv", "allgatherv", "alltoallv",
          "reduce_scatter", "neighbor_allgather", "neighbor_allgatherv", "neighbor_alltoall", "neighbor_alltoallv")


def _side_bytes(name: str, c: "Call") -> Dict[str, List[int]]:
    """The byte counts of the blocks of a collective line's send and
    receive buffers that its layouts must divide (those the line gives)."""
    lst = c.lst
    if name in ("gather", "scatter", "allgather", "alltoall"):
        return {"send": [c.a["bytes"]], "recv": [c.a["bytes"]]}
    if name == "gatherv":
        return {"send": [c.a["bytes"]], "recv": lst}
    if name == "scatterv":
        return {"send": lst, "recv": [c.a["bytes"]]}
    if name == "alltoallv":
        half = len(lst) // 2
        return {"send": lst[:half], "recv": lst[half:]}
    if name == "reduce_scatter":
        return {"send": lst, "recv": lst}
    if name == "allgatherv":  # (on an intercommunicator the last is the rank's own block)
        return {"recv": lst[:-1]}
    return {}  # a neighbourhood collective (its list is checked with the call)


@dataclass(slots=True)
class Call:
    """One recorded call: when it started and ended (s), what, its integer
    arguments by name, its list (byte counts, members, requests), TYPE and
    OP, and its file and line."""

    t0: float
    t1: float
    name: str
    a: Dict[str, int]
    lst: List[int] = field(default_factory=list)
    dtype: str = "u1"
    op: str = "sum"
    file: str = ""
    lineno: int = 0
    #: start/startall: each started request's (source, tag) as matched.
    starts: Optional[Dict[int, List[int]]] = None
    #: mrecv/imrecv: the mprobe line that took its message.
    probed: Optional["Call"] = None
    #: The requests this call posted whose cancel succeeded in the recorded
    #: run (they moved no message; the replay does not post them).
    cancelled: Optional[Set[int]] = None
    #: The buffers whose data do not lie in one run of bytes: argument
    #: (bytes, sbytes, rbytes) -> (count, the datatype's extent, its true
    #: extent) from `BYTES:COUNT:EXTENT:TRUE_EXTENT` (point to point,
    #: bcast, reduce, allreduce, scan, exscan, reduce_scatter_block, a
    #: put's, get's or accumulate's origin); side (send, recv) -> (the
    #: datatype's size, extent, true extent) from a gather's, scatter's,
    #: allgather's or alltoall's `send=` and `recv=`.
    layout: Optional[Dict[str, Tuple[int, int, int]]] = None

    @property
    def where(self) -> str:
        return f"{self.file}:{self.lineno}"


@dataclass
class Trace:
    """Every rank's calls, in order, and the point-to-point messages they send."""

    path: str
    ranks: List[List[Call]] = field(default_factory=list)
    #: What T0 and T1 measure: "cpu" (the rank's thread's CPU time) or "wall".
    clock: str = "wall"
    #: (source, destination) world ranks -> [messages, bytes]
    sent: Dict[Tuple[int, int], List[int]] = field(default_factory=dict)
    #: Per rank: the most point-to-point requests it holds at once, and the
    #: most sends and receives one of its all-to-alls posts at once.
    peaks: List[Tuple[int, int]] = field(default_factory=list)

    @property
    def nranks(self) -> int:
        return len(self.ranks)

    def in_flight(self) -> Tuple[int, int]:
        """At most how many messages the replay holds posted at once, as
        (posted one by one, posted as a collective's exchange): every
        rank's most at once, as if those came together (an upper bound;
        `bgsim.memory` costs the two kinds apart)."""
        one = sum(p for p, _ in self.peaks) // 2
        coll = sum(c for _, c in self.peaks) // 2
        return one, coll

    def messages(self) -> Dict[Tuple[int, int], List[int]]:
        """The point-to-point messages the trace sends: (source, destination)
        world ranks -> [messages, bytes] (persistent sends once per start)."""
        return self.sent


def load(path: str) -> Trace:
    """Reads and checks a trace: a directory of rank-R.trace files, or a
    tar archive of one (.tar, .tar.gz, .tgz, .tar.xz, .tar.bz2)."""
    files = _files(path)
    first = min(files)
    head = _lines(*files[first])[:1]
    name0 = files[first][0]
    m = re.fullmatch(r"# bgsim-trace (\d+) rank \d+ size (\S+)(?: clock (\S+))?", head[0].strip()) if head else None
    if m and m.group(1) != "2":
        raise UsageError(f"{name0}:1: trace format {m.group(1)}; this bgsim reads format 2 "
                         "(record the program again with `bgsim record`)")
    try:
        n = int(m.group(2)) if m else 0
    except ValueError:
        n = 0
    if n <= 0:
        raise UsageError(f"{name0}:1: expected `# bgsim-trace 2 rank R size N` with N a positive number of ranks, "
                         f"got `{head[0].strip() if head else ''}`")
    extra = sorted(r for r in files if r >= n)
    if extra:
        raise UsageError(f"trace `{path}`: rank-{extra[0]}.trace is beyond the {n} ranks the headers give "
                         f"(rank-0.trace to rank-{n - 1}.trace)")
    clock = (m.group(3) or "wall") if m else "wall"
    if clock not in ("cpu", "wall"):
        raise UsageError(f"{name0}:1: clock `{clock}`: a trace's clock is cpu or wall")
    trace = Trace(path, clock=clock)
    world = list(range(n))
    # A trace is millions of small objects and no reference cycles: the
    # cycle collector's passes over them while they are made cost 40% of
    # the reading at a million calls (scripts/bench_replay.py), and find
    # nothing.
    collecting = gc.isenabled()
    gc.disable()
    try:
        for r in range(n):
            if r not in files:
                raise UsageError(f"trace `{path}`: rank-{r}.trace is missing (the trace has {n} ranks)")
            rank = _Rank(files[r], r, n, trace.sent, clock, world)
            trace.ranks.append(rank.parse())
            trace.peaks.append((rank.peak, rank.exchange))
    finally:
        if collecting:
            gc.enable()
    return trace


def _files(path: str) -> Dict[int, Tuple[str, Callable[[], bytes]]]:
    """rank -> (the name errors give, a reader of its bytes)."""
    pattern = re.compile(r"(?:.*/)?rank-(\d+)\.trace")
    from . import otf2io
    if otf2io.anchor(path) is not None:
        name, ranks = otf2io.read(path)
        n = len(ranks)
        return {r: (f"{name} (rank {r}, as bgsim reads it)",
                    lambda r=r, ls=ls: "\n".join([f"# bgsim-trace 2 rank {r} size {n} clock wall", *ls]).encode())
                for r, ls in ranks.items()}
    if os.path.isdir(path):
        found = {int(m.group(1)): f for f in os.listdir(path) if (m := pattern.fullmatch(f))}
        files = {r: (os.path.join(path, f), _reader(os.path.join(path, f))) for r, f in found.items()}
    elif os.path.isfile(path) and tarfile.is_tarfile(path):
        files = {}
        try:
            tar = tarfile.open(path)
            members = [(int(m.group(1)), t) for t in tar.getmembers() if t.isfile() and (m := pattern.fullmatch(t.name))]
        except (tarfile.TarError, OSError, EOFError) as e:
            raise UsageError(f"trace `{path}`: cannot read the archive: {e}") from None
        dirs = {os.path.dirname(t.name) for _, t in members}
        if len(dirs) > 1:
            raise UsageError(f"trace `{path}`: the archive holds rank files in several directories "
                             f"({', '.join(sorted(dirs))}); one trace per archive")
        for r, t in members:
            files[r] = (f"{path}:{t.name}", lambda t=t: tar.extractfile(t).read())
    elif os.path.exists(path):
        raise UsageError(f"trace `{path}`: neither a directory of rank-R.trace files nor a tar archive of one")
    else:
        raise UsageError(f"trace `{path}`: not a directory (expected rank-0.trace, rank-1.trace ...)")
    if not files:
        raise UsageError(f"trace `{path}`: no rank-R.trace files")
    return files


def _reader(name: str) -> Callable[[], bytes]:
    def read() -> bytes:
        with open(name, "rb") as f:
            return f.read()
    return read


def _lines(name: str, read: Callable[[], bytes]) -> List[str]:
    try:
        return read().decode("utf-8").splitlines()
    except UnicodeDecodeError as e:
        raise UsageError(f"{name}: not a text trace file (byte {e.start} is not UTF-8)") from None


#: Collectives whose every send and receive a rank posts at once.
_POST_ALL = frozenset(f"{p}alltoall{v}{q}" for p in ("", "i") for v in ("", "v", "w") for q in ("", "_init")
                      if not (p and q))


class _Rank:
    """One rank's file, read line by line with the state the lines build:
    its communicators (number -> members' world ranks) and live requests."""

    def __init__(self, source: Tuple[str, Callable[[], bytes]], rank: int, n: int,
                 sent: Dict[Tuple[int, int], List[int]], clock: str, world: List[int]) -> None:
        (self.name, self.read), self.rank, self.n, self.sent = source, rank, n, sent
        self.clock = clock
        self.comms: Dict[int, List[int]] = {WORLD: world, SELF: [rank]}
        # intercommunicator -> its local group (`comms` holds its remote
        # group: the ranks of its point-to-point calls)
        self.inter: Dict[int, List[int]] = {}
        # window -> its communicator's members
        self.wins: Dict[int, List[int]] = {}
        # request -> [the call that made it, active, the call and key that activated it]
        self.reqs: Dict[int, list] = {}
        # what the last completion line completed: request -> (the call that
        # made it, the call that activated it)
        self.last_done: Dict[int, Tuple[Call, Call]] = {}
        # matched message -> the mprobe line that took it (until received)
        self.msgs: Dict[int, Call] = {}
        self.lineno = 0
        # The most requests held at once, and the most sends and receives
        # of one all-to-all (`Trace.in_flight`).
        self.peak = 0
        self.exchange = 0

    def fail(self, msg: str) -> UsageError:
        return UsageError(f"{self.name}:{self.lineno}: {msg}")

    def parse(self) -> List[Call]:
        lines = _lines(self.name, self.read)
        want = f"# bgsim-trace 2 rank {self.rank} size {self.n} clock {self.clock}"
        head = lines[0].split() if lines else []
        if head != want.split() and not (self.clock == "wall" and head == want.split()[:7]):
            self.lineno = 1
            raise self.fail(f"expected `{want}` (as rank-0.trace), got `{lines[0] if lines else ''}`")
        calls: List[Call] = []
        done = False
        fast = self.fast
        for i, line in enumerate(lines[1:], start=2):
            self.lineno = i
            if not done:
                c = fast(line, i)
                if c is not None:
                    calls.append(c)
                    continue
            if not line.strip():
                continue
            if done:
                raise self.fail("a call after finalize")
            c = self.line(line)
            if c is None:
                continue
            calls.append(c)
            done = c.name == "finalize"
        left = [(req, made) for req, (made, active, _) in self.reqs.items()
                if active and not made.name.endswith("_init")]
        if left:
            req, made = left[0]
            self.lineno = made.lineno
            raise self.fail(f"request {req} is never completed (the replay would end with it pending)")
        return calls

    def fast(self, line: str, lineno: int) -> Optional[Call]:
        """A halo's lines, the most common ones, read and checked in one go:
        an irecv from or an isend to a rank of the communicator with a plain
        tag and size, and a waitall. The call, or None for any other line
        and for any of these that fails a check (`line` then reads it again
        and says what is wrong)."""
        parts = line.split()
        n = len(parts)
        if n < 4:
            return None
        what = parts[2]
        if what == "waitall":
            try:
                t0, t1, k = float(parts[0]), float(parts[1]), int(parts[3])
                ids = [int(v) for v in parts[4:]]
            except ValueError:
                return None
            reqs = self.reqs
            if not (0.0 <= t0 <= t1 <= MAX_TIME_S and k == n - 4 and k > 0 and len(set(ids)) == k):
                return None
            made = [reqs.get(r) for r in ids]
            if not all(m is not None and m[1] and not m[0].name.endswith("_init") for m in made):
                return None
            self.last_done = {r: (m[0], m[2]) for r, m in zip(ids, made)}
            for r in ids:
                del reqs[r]
            return Call(t0, t1, what, {}, ids, "u1", "sum", self.name, lineno)
        if n != 8 or (what != "irecv" and what != "isend"):
            return None
        try:
            t0, t1 = float(parts[0]), float(parts[1])
            peer, tag, nbytes, comm, req = int(parts[3]), int(parts[4]), int(parts[5]), int(parts[6]), int(parts[7])
        except ValueError:
            return None
        members = self.comms.get(comm)
        if (members is None or not 0.0 <= t0 <= t1 <= MAX_TIME_S or not 0 <= peer < len(members)
                or not 0 <= tag <= TAG_UB or not 0 <= nbytes <= _core.MAX_MESSAGE_BYTES or req <= 0
                or req in self.reqs):
            return None
        if self.last_done:
            self.last_done = {}
        if what == "isend":
            c = Call(t0, t1, what, {"dest": peer, "tag": tag, "bytes": nbytes, "comm": comm, "req": req}, _EMPTY,
                     "u1", "sum", self.name, lineno)
            cell = self.sent.get((self.rank, members[peer]))
            if cell is None:
                cell = self.sent[self.rank, members[peer]] = [0, 0]
            cell[0] += 1
            cell[1] += nbytes
        else:
            c = Call(t0, t1, what, {"src": peer, "tag": tag, "bytes": nbytes, "comm": comm, "req": req}, _EMPTY,
                     "u1", "sum", self.name, lineno)
        self.reqs[req] = [c, True, c]
        if len(self.reqs) > self.peak:
            self.peak = len(self.reqs)
        return c

    def line(self, line: str) -> Optional[Call]:
        parts = line.split()
        try:
            t0, t1, what, rest = float(parts[0]), float(parts[1]), parts[2], parts[3:]
        except (ValueError, IndexError):
            raise self.fail(f"expected `T0 T1 CALL ARGS...`, got `{line}`") from None
        if not 0.0 <= t0 <= t1 <= MAX_TIME_S:  # NaN fails too
            for t in (t0, t1):
                if not (math.isfinite(t) and 0 <= t <= MAX_TIME_S):
                    raise self.fail(f"time {t!r} s: times are seconds from 0 to {MAX_TIME_S:g}")
            raise self.fail(f"the call ends ({t1}) before it starts ({t0})")
        spec = SPEC.get(what)
        if spec is None:
            if what == "unsupported":
                raise self.fail(f"the program called {' '.join(rest)}, which bgsim cannot replay")
            raise self.fail(f"unknown call `{what}` (known: {', '.join(SPEC)})")
        fixed, lst, typed = spec
        dtype, op = "u1", "sum"
        layout = None
        if rest and "=" in rest[-1]:
            rest, layout = self.sides(what, rest)
        if typed:
            if len(rest) < 2:
                raise self.fail(f"{what} ends with its TYPE and OP")
            rest, (dtype, op) = rest[:-2], rest[-2:]
            if dtype not in TYPES:
                raise self.fail(f"unknown element type `{dtype}` (known: {', '.join(TYPES)})")
            if op not in OPS:
                raise self.fail(f"unknown operation `{op}` (known: {', '.join(OPS)})")
        try:
            ints = list(map(int, rest))
        except ValueError:
            if layout:
                raise self.fail(f"arguments must be integers, got `{' '.join(rest)}`") from None
            ints, layout = self.laid_out(what, fixed, rest)
        k = len(fixed)
        if lst:
            if len(ints) <= k:
                raise self.fail(f"{what} takes {k} arguments and a list (N, then its values), got {len(ints)}")
            count = ints[k]
            want = k + 1 + count * (2 if lst == "2n" else 1)
            if count < 0 or len(ints) != want:
                raise self.fail(f"{what} with a list of {count}: {want} arguments, got {len(ints)}")
        elif len(ints) != k:
            raise self.fail(f"{what} takes {k} arguments ({' '.join(fixed).upper()}), got {len(ints)}")
        c = Call(t0, t1, what, dict(zip(fixed, ints)), ints[k + 1:] if lst else _EMPTY, dtype, op, self.name,
                 self.lineno)
        if layout:
            c.layout = layout
            for side, nbytes in _side_bytes(blocking_collective(what) or what, c).items():
                if side in layout and any(b % layout[side][0] for b in nbytes):
                    raise self.fail(f"{side}={':'.join(map(str, layout[side]))}: blocks of {nbytes} bytes are "
                                    f"not whole elements of {layout[side][0]} bytes")
        return self.check(c)

    def sides(self, what: str, rest: List[str]) -> Tuple[List[str], Dict[str, Tuple[int, int, int]]]:
        """The trailing `send=SIZE:EXTENT:TRUE_EXTENT` and `recv=...` of a
        gather, scatter, allgather, alltoall (or its v-form), reduce_scatter
        or neighbourhood collective: the layouts of its
        buffers whose data do not lie in one run of bytes. The arguments
        before them, and the layouts by side (send, recv)."""
        layout: Dict[str, Tuple[int, int, int]] = {}
        while rest and "=" in rest[-1]:
            tok = rest[-1]
            side, _, value = tok.partition("=")
            try:
                if blocking_collective(what) not in _SIDED or side not in ("send", "recv") or side in layout:
                    raise ValueError
                size, extent, true_extent = map(int, value.split(":"))
            except ValueError:
                raise self.fail(f"`{tok}`: only a gather, scatter, allgather or alltoall (or its v-form), a "
                                f"reduce_scatter or a neighbourhood collective (not alltoallw) ends with "
                                f"send=SIZE:EXTENT:TRUE_EXTENT and recv=SIZE:EXTENT:TRUE_EXTENT, once each") from None
            if size < 1 or true_extent < size:
                raise self.fail(f"`{tok}`: a size of 1 or more, and a true extent no less than it")
            if abs(extent) > _core.MAX_MESSAGE_BYTES or true_extent > _core.MAX_MESSAGE_BYTES:
                raise self.fail(f"`{tok}`: extents are at most {_core.MAX_MESSAGE_BYTES} bytes either way")
            layout[side] = (size, extent, true_extent)
            rest = rest[:-1]
        return rest, layout

    def laid_out(self, what: str, fixed: Tuple[str, ...], rest: List[str]) -> Tuple[List[int], Dict[str, Tuple[int, int, int]]]:
        """The integer arguments of a line some of whose BYTES are
        `BYTES:COUNT:EXTENT:TRUE_EXTENT` (data that do not lie in one run of
        bytes: point to point, bcast, the reductions of one buffer size,
        a put's, get's or accumulate's origin), and those layouts by
        argument."""
        ints: List[int] = []
        layout: Dict[str, Tuple[int, int, int]] = {}
        for i, tok in enumerate(rest):
            key = fixed[i] if i < len(fixed) else None
            try:
                if ":" not in tok:
                    ints.append(int(tok))
                    continue
                if key not in _LAID_OUT or not (_KIND.get(what) in ("p2p", "sendrecv") or what in _LAID_OUT_RMA
                                                or blocking_collective(what) in _LAID_OUT_COLLECTIVES):
                    raise ValueError
                nbytes, count, extent, true_extent = map(int, tok.split(":"))
            except ValueError:
                raise self.fail(f"arguments must be integers (the BYTES of a point-to-point call, bcast, reduce, "
                                f"allreduce, scan, exscan, reduce_scatter_block, put, get or accumulate may be "
                                f"BYTES:COUNT:EXTENT:TRUE_EXTENT), got `{' '.join(rest)}`") from None
            if count < 1 or nbytes % count:
                raise self.fail(f"{key} {tok}: BYTES:COUNT:EXTENT:TRUE_EXTENT takes a COUNT of 1 or more "
                                f"that divides BYTES")
            if true_extent < nbytes // count:
                raise self.fail(f"{key} {tok}: the true extent {true_extent} is less than the datatype's size "
                                f"{nbytes // count}")
            if abs(extent) > _core.MAX_MESSAGE_BYTES or true_extent > _core.MAX_MESSAGE_BYTES:
                raise self.fail(f"{key} {tok}: extents are at most {_core.MAX_MESSAGE_BYTES} bytes either way")
            ints.append(nbytes)
            layout[key] = (count, extent, true_extent)
        return ints, layout

    # -- checks, and the state they follow ---------------------------------

    def comm(self, c: Call, key: str = "comm") -> List[int]:
        v = c.a[key]
        if v not in self.comms:
            raise self.fail(f"communicator {v} was not made on this rank (or was freed)")
        return self.comms[v]

    def rank_in(self, c: Call, key: str, members: List[int], allowed: Sequence[int] = ()) -> None:
        v = c.a[key]
        if not (0 <= v < len(members) or v in allowed):
            raise self.fail(f"{key} {v} is not a rank of communicator {c.a['comm']} ({len(members)} ranks)")

    def nbytes(self, v: int, what: str = "bytes") -> None:
        if not 0 <= v <= _core.MAX_MESSAGE_BYTES:
            raise self.fail(f"{what} {v}: bgsim's messages hold 0 to {_core.MAX_MESSAGE_BYTES} bytes (4 GiB - 1)")

    def tag(self, v: int, wildcard: bool) -> None:
        if not (0 <= v <= TAG_UB or wildcard and v == ANY):
            raise self.fail(f"tag {v}: tags are 0 to {TAG_UB}" + (" or -1 (MPI_ANY_TAG)" if wildcard else ""))

    def new_req(self, c: Call, active: bool = True) -> None:
        req = c.a["req"]
        if req <= 0:
            raise self.fail(f"request {req}: requests are numbered from 1")
        if req in self.reqs:
            raise self.fail(f"request {req} is already in use (made at {self.reqs[req][0].where})")
        self.reqs[req] = [c, active, c]
        self.peak = max(self.peak, len(self.reqs))

    def send(self, members: List[int], dest: int, nbytes: int) -> None:
        if dest != PROC_NULL:
            cell = self.sent.setdefault((self.rank, members[dest]), [0, 0])
            cell[0] += 1
            cell[1] += nbytes

    def check(self, c: Call) -> Optional[Call]:
        a, name = c.a, c.name
        kind = _KIND.get(name, "coll")
        if self.last_done and kind not in ("status", "cancelled"):
            self.last_done = {}
        if name in _POST_ALL:
            members = self.comms.get(a.get("comm", -1))
            if members:
                self.exchange = max(self.exchange, 2 * (len(members) - 1))
        # The common calls first.
        if kind == "p2p":
            members = self.comm(c)
            if "dest" in a:
                self.rank_in(c, "dest", members, (PROC_NULL,))
                self.tag(a["tag"], False)
            else:
                self.rank_in(c, "src", members, (PROC_NULL, ANY))
                self.tag(a["tag"], True)
            if name != "probe":
                self.nbytes(a["bytes"])
            if "req" in a:
                self.new_req(c, active=not name.endswith("_init"))
            if "dest" in a and not name.endswith("_init"):
                self.send(members, a["dest"], a["bytes"])
            return c
        if kind == "done":
            reqs = [a["req"]] if "req" in a else c.lst
            if not reqs:
                raise self.fail(f"{name} completes no request")
            if len(reqs) > 1:
                self.distinct(reqs)
            for req in reqs:
                made = self.live(req)
                if not made[1]:
                    raise self.fail(f"request {req} is not active (made at {made[0].where})")
                self.last_done[req] = (made[0], made[2])
                if made[0].name.endswith("_init"):
                    made[1] = False
                else:
                    del self.reqs[req]
            return c
        if name in ("comm_dup", "comm_idup", "comm_split", "comm_group"):
            parent = self.comm(c, "parent")
            new = a["new"]
            if name == "comm_idup":
                self.new_req(c)
            if name in ("comm_dup", "comm_idup"):
                if new < 2:
                    raise self.fail(f"a new communicator is numbered from 2, got {new}")
                members = list(parent)
            else:
                members = c.lst
                if new == -1 and not members:
                    a["color"], a["key"] = -1, 0
                    return c
                if new < 2:
                    raise self.fail(f"a new communicator is numbered from 2 (or -1 with no members), got {new}")
                if self.rank not in members:
                    raise self.fail(f"communicator {new}'s members {members} do not include this rank")
                if len(set(members)) != len(members) or not set(members) <= set(parent):
                    raise self.fail(f"communicator {new}'s members {members} are not distinct ranks of "
                                    f"communicator {a['parent']}")
                a["color"], a["key"] = min(members), members.index(self.rank)
                if name == "comm_group":
                    c.lst = [parent.index(w) for w in members]
            if new in self.comms:
                raise self.fail(f"communicator {new} already exists")
            if a["parent"] in self.inter:
                if name not in ("comm_dup", "comm_idup"):
                    raise self.fail(f"{name} of intercommunicator {a['parent']}: bgsim replays only its dup")
                self.inter[new] = self.inter[a["parent"]]
            self.comms[new] = members
        elif name in ("intercomm_create", "intercomm_merge"):
            self.intercomm(c)
        elif name == "comm_free":
            if a["comm"] < 2:
                raise self.fail(f"communicator {a['comm']} is predefined and cannot be freed")
            self.comm(c)
            del self.comms[a["comm"]]
            self.inter.pop(a["comm"], None)
        elif name == "sendrecv":
            members = self.comm(c)
            self.rank_in(c, "dest", members, (PROC_NULL,))
            self.rank_in(c, "src", members, (PROC_NULL, ANY))
            self.tag(a["stag"], False)
            self.tag(a["rtag"], True)
            self.nbytes(a["sbytes"], "sbytes")
            self.nbytes(a["rbytes"], "rbytes")
            self.send(members, a["dest"], a["sbytes"])
        elif name in ("start", "startall"):
            reqs = [a["req"]] if name == "start" else c.lst
            self.distinct(reqs)
            for req in reqs:
                made = self.live(req)
                if not made[0].name.endswith("_init"):
                    raise self.fail(f"request {req} is not persistent (made by {made[0].name} at {made[0].where})")
                if made[1]:
                    raise self.fail(f"request {req} is started while active")
                made[1], made[2] = True, c
                init = made[0]
                if c.starts is None:
                    c.starts = {}
                if init.name == "recv_init":
                    c.starts[req] = [init.a["src"], init.a["tag"]]
                else:
                    c.starts[req] = [init.a["dest"], init.a["tag"]]
                    self.send(self.comms.get(init.a["comm"], []), init.a["dest"], init.a["bytes"])
        elif name == "request_free":
            self.live(a["req"])
            del self.reqs[a["req"]]
        elif name == "cancel":
            made = self.live(a["req"])
            if not made[1]:
                raise self.fail(f"cancel of request {a['req']}, which is not active (made at {made[0].where})")
        elif name == "cancelled":
            if a["req"] not in self.last_done:
                raise self.fail(f"cancelled request {a['req']}, which the line before did not complete")
            made, act = self.last_done[a["req"]]
            if made.name not in SEND_MODE and made.name not in ("irecv", "recv_init"):
                raise self.fail(f"cancelled request {a['req']}: only sends and receives are cancelled "
                                f"({made.name} at {made.where})")
            if act.cancelled is None:
                act.cancelled = set()
            act.cancelled.add(a["req"])
            if made.name in SEND_MODE:  # its message never went
                dest = act.starts[a["req"]][0] if act is not made else made.a["dest"]
                members = self.comms.get(made.a["comm"], [])
                cell = self.sent.get((self.rank, members[dest])) if 0 <= dest < len(members) else None
                if cell:
                    cell[0] -= 1
                    cell[1] -= made.a["bytes"]
            return None  # resolved into the call that posted it: nothing to replay
        elif name == "status":
            if a["req"] not in self.last_done:
                raise self.fail(f"status of request {a['req']}, which the line before did not complete")
            made, act = self.last_done[a["req"]]
            if made.name not in ("irecv", "recv_init"):
                raise self.fail(f"status of request {a['req']}, which is not a receive ({made.name} at {made.where})")
            members = self.comms.get(made.a["comm"], [])
            if not (0 <= a["src"] < len(members) or a["src"] == PROC_NULL):
                raise self.fail(f"src {a['src']} is not a rank of the receive's communicator ({len(members)} ranks)")
            self.tag(a["tag"], False)
            if act is made:
                made.a["src"], made.a["tag"] = a["src"], a["tag"]
            else:
                act.starts[a["req"]] = [a["src"], a["tag"]]
            return None  # resolved into the receive: nothing to replay
        elif name == "mprobe":
            members = self.comm(c)
            self.rank_in(c, "src", members, (PROC_NULL,))
            self.tag(a["tag"], False)
            self.nbytes(a["bytes"])
            if a["msg"] <= 0:
                raise self.fail(f"message {a['msg']}: matched messages are numbered from 1")
            if a["msg"] in self.msgs:
                raise self.fail(f"message {a['msg']} is already taken (at {self.msgs[a['msg']].where}) and not received")
            self.msgs[a["msg"]] = c
        elif name in ("mrecv", "imrecv"):
            probed = self.msgs.pop(a["msg"], None)
            if probed is None:
                raise self.fail(f"message {a['msg']} was not taken by an mprobe line before, or was received already")
            c.probed = probed
            if name == "imrecv":
                self.new_req(c)
        elif name == "finalize":
            pass
        elif kind == "rma":
            self.rma(c)
        else:
            self.collective(c)
        return c

    def intercomm(self, c: Call) -> None:
        a, name, n = c.a, c.name, self.n
        new, members = a["new"], c.lst
        if new in self.comms:
            raise self.fail(f"communicator {new} already exists")
        if new < 2:
            raise self.fail(f"a new communicator is numbered from 2, got {new}")
        if len(set(members)) != len(members) or not all(0 <= w < n for w in members):
            raise self.fail(f"communicator {new}'s ranks {members} are not distinct ranks of MPI_COMM_WORLD")
        if name == "intercomm_create":
            local = self.comm(c, "local")
            if a["local"] in self.inter:
                raise self.fail(f"intercomm_create over intercommunicator {a['local']} (its local group must be "
                                "an intracommunicator)")
            if not 0 <= a["leader"] < len(local):
                raise self.fail(f"leader {a['leader']} is not a rank of communicator {a['local']} ({len(local)} ranks)")
            if local.index(self.rank) == a["leader"]:
                peer = self.comm(c, "peer")
                if not 0 <= a["rleader"] < len(peer):
                    raise self.fail(f"remote leader {a['rleader']} is not a rank of communicator {a['peer']} "
                                    f"({len(peer)} ranks)")
                self.tag(a["tag"], False)
            if set(members) & set(local) or not members:
                raise self.fail(f"intercommunicator {new}'s remote group {members} is empty or overlaps its local "
                                f"group {local}")
            self.inter[new] = list(local)
        else:
            if a["inter"] not in self.inter:
                raise self.fail(f"intercomm_merge of {a['inter']}, which is not an intercommunicator of this rank")
            if a["high"] not in (0, 1):
                raise self.fail(f"high {a['high']}: 1 or 0")
            both = set(self.inter[a["inter"]]) | set(self.comms[a["inter"]])
            if set(members) != both:
                raise self.fail(f"communicator {new}'s ranks {members} are not the ranks of both groups of "
                                f"intercommunicator {a['inter']}")
        self.comms[new] = list(members)

    def rma(self, c: Call) -> None:
        a, name = c.a, c.name
        if name == "win_create":
            if a["comm"] in self.inter:
                raise self.fail(f"a window on intercommunicator {a['comm']}")
            members = self.comm(c)
            if a["win"] < 0 or a["win"] in self.wins:
                raise self.fail(f"window {a['win']}: windows are numbered from 0, one number each")
            self.nbytes(a["bytes"])
            if a["unit"] <= 0:
                raise self.fail(f"displacement unit {a['unit']}: must be positive")
            self.wins[a["win"]] = members
            return
        if a["win"] not in self.wins:
            raise self.fail(f"window {a['win']} was not made on this rank (or was freed)")
        members = self.wins[a["win"]]
        if name == "win_free":
            del self.wins[a["win"]]
            return
        if "target" in a and not (0 <= a["target"] < len(members) or a["target"] == PROC_NULL):
            raise self.fail(f"target {a['target']} is not a rank of window {a['win']} ({len(members)} ranks)")
        if "disp" in a and a["disp"] < 0:
            raise self.fail(f"displacement {a['disp']}: must be 0 or more")
        if "bytes" in a:
            self.nbytes(a["bytes"])
        if "exclusive" in a and a["exclusive"] not in (0, 1):
            raise self.fail(f"lock kind {a['exclusive']}: 1 exclusive, 0 shared")
        for r in c.lst:
            if not 0 <= r < len(members):
                raise self.fail(f"rank {r} of the group is not a rank of window {a['win']} ({len(members)} ranks)")
        if "req" in a:
            self.new_req(c)

    def live(self, req: int) -> list:
        if req not in self.reqs:
            raise self.fail(f"request {req} does not exist (never made, or already completed or freed)")
        return self.reqs[req]

    def distinct(self, reqs: List[int]) -> None:
        if len(set(reqs)) != len(reqs):
            dup = next(r for r in reqs if reqs.count(r) > 1)
            raise self.fail(f"request {dup} appears twice")

    def collective(self, c: Call) -> None:
        a = c.a
        members = self.comm(c)  # on an intercommunicator, the remote group
        inter = a["comm"] in self.inter
        base = blocking_collective(c.name)
        if inter and base in ("scan", "exscan") or inter and base.startswith("neighbor_"):
            raise self.fail(f"{c.name} on intercommunicator {a['comm']}: MPI does not define it there")
        size = len(members)
        if "root" in a:
            if inter and a["root"] not in (ROOT, PROC_NULL) and not 0 <= a["root"] < size:
                raise self.fail(f"root {a['root']} on intercommunicator {a['comm']}: -3 (MPI_ROOT) at the root, "
                                f"-2 (MPI_PROC_NULL) in its group, a rank of the remote group ({size} ranks) in the other")
            if not inter and not 0 <= a["root"] < size:
                raise self.fail(f"root {a['root']} is not a rank of communicator {a['comm']} ({size} ranks)")
        if "bytes" in a:
            self.nbytes(a["bytes"])
        if base.startswith("neighbor_"):
            try:
                ins, rbytes, outs, sbytes = neighborhood(c.lst)
            except UsageError as e:
                raise self.fail(f"{c.name}: {e}") from None
            for v in ins + outs:
                if not (0 <= v < size or v == PROC_NULL):
                    raise self.fail(f"{c.name}: neighbour {v} is not a rank of communicator {a['comm']} "
                                    f"({size} ranks) or -2 (MPI_PROC_NULL)")
            for v in rbytes + sbytes:
                self.nbytes(v)
        elif SPEC[c.name][1]:
            n = len(c.lst) // (2 if base == "alltoallv" else 1)
            me_root = "root" in a and (a["root"] == ROOT if inter else members.index(self.rank) == a["root"])
            # On an intercommunicator: allgatherv's list ends with the
            # rank's own block; reduce_scatter's counts are its own group's.
            want = size + (inter and base == "allgatherv")
            if inter and base == "reduce_scatter":
                want = len(self.inter[a["comm"]])
            if base in ("gatherv", "scatterv") and not me_root:
                if n:
                    raise self.fail(f"{c.name}: only the root gives the counts (N 0 at other ranks), got {n}")
            elif n != want:
                raise self.fail(f"{c.name}: {n} counts for communicator {a['comm']} of {size} ranks"
                                + (" (an intercommunicator's remote group)" if inter else ""))
            for v in c.lst:
                self.nbytes(v)
        if c.op in ("band", "bor", "bxor") and c.dtype[0] in "fc":
            raise self.fail(f"operation {c.op} on floating-point elements ({c.dtype})")
        if "req" in a:
            self.new_req(c)
