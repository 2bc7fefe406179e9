"""Timelines of MPI runs in the Trace Event Format (JSON), which Perfetto
(ui.perfetto.dev) and chrome://tracing open.

- One track per watched rank (process "ranks", thread = rank): every MPI
  call as a slice, with the time it was blocked inside it (`wait`) and
  compute charged to the core (`compute`) nested in it.
- Every point-to-point message of a watched rank: an async slice over its
  life named by its protocol (one packet, eager, adaptive eager,
  rendezvous, intranode) and, between two watched ranks, a flow arrow from
  the sender's track when it was posted to the receiver's when the receive
  completed.
- Counter tracks for chosen nodes (process "nodes"): the utilization of
  each of the six outgoing torus links and the bytes in the node's
  injection FIFOs, sampled by the core every `SAMPLE_PACKETS` largest
  packets' time on a link (BG/L: 5.9 us; BG/P: 2.4 us), or a power-of-two
  multiple of it: a node keeps at most `SAMPLES` samples, and its
  interval doubles past that (`mpi::timeline` in the core). A packet's
  bytes count when it starts on its link, so a short interval can show
  more than 100%; four packets' time keeps that below 125%.

The file stays bounded on large runs: only the watched ranks (by default
the first 16) have tracks, each with at most its share of `max_events`
slices (its first ones), messages are logged up to a limit; the file's
`otherData` says what was left out. Times are simulated microseconds.

The file is the same, byte for byte, for any number of threads or MPI
processes the run takes: the core's samples and message log do not
depend on where the machine is cut, and the slices are written in the
order of their track and start.
"""

from __future__ import annotations

import json
import pickle
from typing import Any, Dict, List, Optional, Sequence

from .api import write_atomic
from .errors import UsageError
from .mpishim import comm as _comm
from .mpishim import requests as _requests

PROTOCOLS = ("one packet", "eager", "adaptive eager", "rendezvous", "intranode")
DIRS = ("x+", "x-", "y+", "y-", "z+", "z-")
#: Ranks with a track when none are chosen.
DEFAULT_RANKS = 16
#: Samples a node keeps at most.
SAMPLES = 4096
#: Messages logged at most.
MESSAGES = 1_000_000
#: The first sampling interval, in largest packets' time on a link.
SAMPLE_PACKETS = 4


def parse_ranks(text: Optional[str], nranks: int) -> List[int]:
    """`--timeline-ranks`: `all`, or ranks and ranges like `0-15,64,100-103`
    (default: the first 16)."""
    if text is None:
        return list(range(min(nranks, DEFAULT_RANKS)))
    if text.strip() == "all":
        return list(range(nranks))
    out: List[int] = []
    for part in text.split(","):
        try:
            lo, _, hi = part.strip().partition("-")
            a, b = int(lo), int(hi) if hi else int(lo)
        except ValueError:
            raise UsageError(f"--timeline-ranks `{text}`: expected `all` or ranks and ranges like 0-15,64") from None
        if not 0 <= a <= b < nranks:
            raise UsageError(f"--timeline-ranks `{part.strip()}`: ranks run from 0 to {nranks - 1}")
        out += range(a, b + 1)
    return sorted(set(out))


def parse_nodes(text: Optional[str], nodes: int) -> List[int]:
    """`--timeline-nodes`: node indices like `0,5,17` (default: node 0)."""
    if text is None:
        return [0]
    try:
        out = sorted({int(v) for v in text.split(",")})
    except ValueError:
        raise UsageError(f"--timeline-nodes `{text}`: expected node indices like 0,5,17") from None
    if out and not 0 <= out[0] <= out[-1] < nodes:
        raise UsageError(f"--timeline-nodes `{text}`: nodes run from 0 to {nodes - 1}")
    return out


class Timeline:
    """What one run records for its timeline (see the module's doc)."""

    def __init__(self, world: Any, ranks: Sequence[int], nodes: Sequence[int], max_events: int = 2_000_000,
                 max_messages: Optional[int] = None):
        self.world = world
        self.ranks = list(ranks)
        self.watched = set(ranks)
        self.nodes = list(nodes)
        self.max_events = max_events
        #: Slices a rank keeps at most (the same on every process of a job).
        self.per_rank = max(max_events // max(len(self.ranks), 1), 1)
        self.count: Dict[int, int] = {}
        self.us = 1e6 / world.ticks_per_second
        self.events: List[dict] = []
        self.dropped = 0
        self.depth: Dict[int, int] = {}
        #: Link bytes per second of one direction, for utilization.
        self.link_bytes_s = world.ticks_per_second / world.ticks_per_link_byte
        world.record_messages([r in self.watched for r in range(world.nranks)],
                              MESSAGES if max_messages is None else max_messages)
        world.sample_nodes(self.nodes, SAMPLE_PACKETS * world.max_packet_bytes * world.ticks_per_link_byte, SAMPLES)

    # -- recording --

    def now(self, rank: int) -> int:
        return self.world.rank_time(rank)

    def slice(self, rank: int, name: str, cat: str, t0: int, t1: int, args: Optional[dict] = None) -> None:
        if rank not in self.watched:
            return
        n = self.count.get(rank, 0)
        if n >= self.per_rank:
            self.dropped += 1
            return
        self.count[rank] = n + 1
        ev = {"ph": "X", "name": name, "cat": cat, "pid": 0, "tid": rank, "ts": t0 * self.us,
              "dur": max(t1 - t0, 0) * self.us}
        if args:
            ev["args"] = args
        self.events.append(ev)

    def counters(self) -> List[dict]:
        """The chosen nodes' counter events, from the core's samples (read
        once the run has ended)."""
        out: List[dict] = []
        for node, samples in self.world.node_samples():
            prev = None
            for tick, links, fifo in samples:
                ts = tick * self.us
                if prev is not None:
                    dt = (tick - prev[0]) / self.world.ticks_per_second
                    util = {d: round(100.0 * (b - a) / (dt * self.link_bytes_s), 3)
                            for d, a, b in zip(DIRS, prev[1], links)}
                    out.append({"ph": "C", "name": f"node {node} link utilization %", "pid": 1, "ts": ts,
                                "args": util})
                out.append({"ph": "C", "name": f"node {node} injection FIFO bytes", "pid": 1, "ts": ts,
                            "args": {"bytes": fifo}})
                prev = (tick, links)
        return out

    def slices(self) -> tuple:
        """Every watched rank's slices (on the processes of an MPI job,
        gathered from the process that runs each rank) in the order of
        their track and start (the outer first), and how many were left
        out."""
        events, dropped = self.events, self.dropped
        if self.world.process[1] > 1:
            events, dropped = [], 0
            for blob in self.world.share(pickle.dumps((self.events, self.dropped))):
                theirs, d = pickle.loads(blob)
                events += theirs
                dropped += d
        # Stable: a rank's slices come from one process, in its order.
        return sorted(events, key=lambda e: (e["tid"], e["ts"], -e["dur"])), dropped

    # -- writing --

    def trace(self) -> dict:
        """The whole trace: metadata, the recorded slices and counters, and
        the messages' flows and async slices."""
        w = self.world
        meta: List[dict] = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "ranks"}},
                            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "nodes"}}]
        for r in self.ranks:
            x, y, z, t = w.coords(r)
            meta.append({"ph": "M", "name": "thread_name", "pid": 0, "tid": r,
                         "args": {"name": f"rank {r} ({x},{y},{z},{t})"}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": 0, "tid": r, "args": {"sort_index": r}})
        slices, dropped = self.slices()
        counters = self.counters()
        records, past_limit = w.message_log()
        msgs: List[dict] = []
        room = max(self.max_events - len(slices) - len(counters), 0)
        shown = 0
        for i, (src, dst, nbytes, proto, posted, _sent, done) in enumerate(records):
            if 4 * (shown + 1) > room:
                break
            if done == 0:
                continue  # never received (the run ended first)
            name = f"{PROTOCOLS[proto]} {nbytes} B"
            a, b = posted * self.us, done * self.us
            args = {"from": src, "to": dst, "bytes": nbytes, "protocol": PROTOCOLS[proto]}
            if src in self.watched and dst in self.watched:
                # An arrow only between two tracks that are there.
                msgs += [{"ph": "s", "id": i, "name": "message", "cat": "message", "pid": 0, "tid": src, "ts": a},
                         {"ph": "f", "bp": "e", "id": i, "name": "message", "cat": "message", "pid": 0,
                          "tid": dst, "ts": b}]
            side = src if src in self.watched else dst
            msgs += [{"ph": "b", "id": i, "name": name, "cat": "protocol", "pid": 0, "tid": side, "ts": a,
                      "args": args},
                     {"ph": "e", "id": i, "name": name, "cat": "protocol", "pid": 0, "tid": side, "ts": b}]
            shown += 1
        other = {"simulator": "bgsim", "time_unit": "simulated microseconds",
                 "ranks_shown": len(self.ranks), "ranks": w.nranks, "nodes_sampled": self.nodes,
                 "messages_shown": shown, "messages_logged": len(records),
                 "messages_left_out": past_limit + len(records) - shown, "events_dropped": dropped}
        return {"traceEvents": meta + slices + counters + msgs, "displayTimeUnit": "ns", "otherData": other}

    def write(self, path: str) -> None:
        """Writes the trace (every process of an MPI job gathers it; the
        first one writes the file)."""
        text = json.dumps(self.trace(), separators=(",", ":")) + "\n"
        if self.world.process[0] == 0:
            write_atomic(path, text)


#: Methods that only read or set local state: no slice of their own.
_QUIET_PREFIXES = ("Get_", "Set_", "Is_", "get_", "set_", "is_", "Compare", "Shift", "py2f", "f2py", "tomemory",
                   "Call_errhandler")


def _classes() -> List[tuple]:
    """The classes whose MPI methods get slices, with their label."""
    out, seen = [], set()
    for mod, base, label in ((_comm, _comm.Comm, "Comm"), (_requests, _requests.Request, "Request")):
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, base):
                # With the mixins the methods come from (point-to-point, collectives).
                for cls in obj.__mro__:
                    if cls is not object and cls not in seen:
                        seen.add(cls)
                        out.append((cls, label))
    return out


class instrument:
    """``with instrument(timeline):`` every MPI method of the watched ranks
    (communicators' and requests') is a slice on its rank's track; calls
    made inside another call are part of it. The methods are restored on
    leaving."""

    def __init__(self, timeline: Timeline):
        self.tl = timeline
        self.saved: List[tuple] = []

    def __enter__(self) -> "instrument":
        import greenlet
        tl, depth = self.tl, self.tl.depth
        for cls, label in _classes():
            for name, attr in list(vars(cls).items()):
                kind = type(attr) if isinstance(attr, (staticmethod, classmethod)) else None
                f = attr.__func__ if kind else attr
                if name.startswith("_") or name.startswith(_QUIET_PREFIXES) or not callable(f) or isinstance(f, type):
                    continue

                def timed(*args: Any, _f: Any = f, _name: str = f"{label}.{name}", **kw: Any) -> Any:
                    ctx = getattr(greenlet.getcurrent(), "ctx", None)
                    if ctx is None or depth.get(ctx.rank):
                        return _f(*args, **kw)
                    rank = ctx.rank
                    depth[rank] = 1
                    t0 = tl.now(rank)
                    try:
                        return _f(*args, **kw)
                    finally:
                        depth[rank] = 0
                        tl.slice(rank, _name, "mpi", t0, tl.now(rank))
                timed.__name__, timed.__doc__, timed.__wrapped__ = name, f.__doc__, f  # type: ignore[attr-defined]
                self.saved.append((cls, name, attr))
                setattr(cls, name, kind(timed) if kind else timed)
        return self

    def __exit__(self, *exc: Any) -> None:
        for cls, name, f in reversed(self.saved):
            setattr(cls, name, f)
        self.saved.clear()
