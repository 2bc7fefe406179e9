"""Replaying a trace: the rank program that makes, on the simulated MPI,
the calls a rank recorded, in its order, with messages of the recorded
sizes (their content zeros) and the time between two calls (and from
MPI_Init to the first) as compute.

How each recorded call replays:

- a new communicator is a split of its parent into the recorded members in
  the recorded order (colour: the smallest member's world rank, key: the
  rank's place), `comm_dup` a Dup and `comm_group` a Create_group over the
  members only, so it costs what the simulated MPI's constructor costs;
  an intercommunicator is the simulated MPI's `Create_intercomm` (the
  same leaders, peer communicator and tag), its merge `Merge` (then a
  split into the recorded order where the simulated one differs);
- a receive, probe or persistent start posted with a wildcard uses the
  source and tag of the message the recorded run matched, so the replay
  makes the program's decisions (which neighbour's data came first)
  whatever the simulated timing;
- a persistent request's start is the nonblocking call of its mode with the
  init's arguments; Waitany / Testany / Test wait for the request the
  recorded run completed, Waitsome / Testsome / Testall for those it did;
- a send or receive whose cancel succeeded in the recorded run (it moved
  no message) is not posted, and its completion is immediate; a cancel
  that did not succeed changes nothing, so `cancel` itself replays as
  nothing;
- a nonblocking collective is the simulated MPI's nonblocking form of its
  collective, started where it was started and completed where it
  completed; it advances inside the rank's later MPI calls (so a
  termination barrier of the NBX kind replays as it ran);
- a neighbourhood collective is the simulated MPI's neighbour exchange
  over the recorded in- and out-neighbours with the recorded sizes;
- a window is a window of the recorded size and displacement unit, its
  operations move the recorded bytes at the recorded displacements, its
  synchronization is as recorded (the simulated MPI's `MPI.Win`); a
  request-based operation (`rput` ...) completes at its request's
  completion;
- a buffer whose data did not lie in one run of bytes (a vector, a
  resized type ...: BYTES:COUNT:EXTENT:TRUE_EXTENT in point to point,
  bcast, reduce, allreduce, scan, exscan, reduce_scatter_block, a put's,
  get's or accumulate's origin; send= and recv= in a gather, scatter, allgather,
  alltoall and their v-forms, a reduce_scatter, a neighbourhood
  collective - there as the pack's cost alone, its messages being sizes)
  is the recorded count of a byte datatype
  of the recorded size with one-byte gaps where the recorded type had
  gaps, so the simulated MPI packs and unpacks it (its cost is
  the bytes', not the layout's); a laid-out reduction reduces those bytes
  with a sum;
- reductions use the recorded element type; a user operation, MAXLOC,
  MINLOC and REPLACE reduce as a sum of the same elements, types the
  simulated MPI has no element for as bytes.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List

import numpy as np

from .. import MPI
from ..mpishim import nbc as _nbc
from ..mpishim import neighbor as _neighbor
from ..mpishim.buffers import _pack
from ..errors import UsageError
from .. import runtime as _rt
from ..runtime import compute
from .tracefile import (ANY, COMPLETES_LIST, COMPLETES_ONE, PROC_NULL, RMA, SEND_MODE, Call, Trace,
                        blocking_collective, neighborhood)

_DTYPES = {"f4": "f4", "f8": "f8", "i1": "i1", "i2": "i2", "i4": "i4", "i8": "i8", "u1": "u1", "u2": "u2",
           "u4": "u4", "u8": "u8", "c8": "c8", "c16": "c16"}


def _ops() -> Dict[str, Any]:
    return {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD, "band": MPI.BAND, "bor": MPI.BOR,
            "bxor": MPI.BXOR, "land": MPI.LAND, "lor": MPI.LOR, "lxor": MPI.LXOR}


def _buf(nbytes: int) -> np.ndarray:
    return np.zeros(nbytes, "u1")


def _elements(c: Call, nbytes: int) -> np.ndarray:
    """`nbytes` of the reduction's recorded element type (bytes if the type
    has no element here or the size does not divide)."""
    dt = np.dtype(_DTYPES.get(c.dtype, "u1"))
    return np.zeros(nbytes // dt.itemsize, dt) if nbytes % dt.itemsize == 0 else np.zeros(nbytes, "u1")


def _vector(counts: List[int]) -> List[Any]:
    """A byte buffer message of `counts` blocks back to back."""
    displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(int).tolist() if counts else []
    return [_buf(sum(counts)), list(counts), displs, MPI.BYTE]


def _peer(v: int) -> int:
    return MPI.PROC_NULL if v == PROC_NULL else MPI.ANY_SOURCE if v == ANY else v


def _tag(v: int) -> int:
    return MPI.ANY_TAG if v == ANY else v


class _Buffers:
    """A replay's messages: zeros of the recorded sizes, and where the
    recorded data did not lie in one run of bytes, datatypes with gaps
    where the recorded ones had them (one byte each: in an element, between
    elements), so that the simulated MPI packs and unpacks them as the
    recorded MPI did (its cost is the bytes', not the layout's)."""

    def __init__(self) -> None:
        # The halo's buffers: one of zeros per size, shared by every rank's
        # sends and receives (a replay's data are zeros whatever arrives),
        # so a message costs no allocation.
        self.zeros: Dict[int, np.ndarray] = {}
        # (size, gap inside, gap between) -> datatype
        self.types: Dict[tuple, Any] = {}

    def zero(self, n: int) -> np.ndarray:
        b = self.zeros.get(n)
        if b is None:
            b = self.zeros[n] = np.zeros(n, "u1")
        return b

    def laid(self, size: int, inside: bool, between: bool) -> Any:
        """A byte datatype of `size` bytes with a one-byte gap in each
        element (`inside`) or after it (`between`)."""
        t = self.types.get((size, inside, between))
        if t is None:
            t = MPI.BYTE.Create_hindexed([size - 1, 1], [0, size]) if inside else MPI.BYTE.Create_contiguous(size)
            if between:
                t = t.Create_resized(0, size + 1)
            t = self.types[size, inside, between] = t.Commit()
        return t

    def data(self, c: Call, key: str, shared: bool = False) -> Any:
        """The message of argument `key` (bytes, sbytes, rbytes): zeros of
        the recorded size, or the recorded count of a datatype laid out as
        recorded (BYTES:COUNT:EXTENT:TRUE_EXTENT). `shared`: a buffer of
        zeros shared by the rank's messages of that size."""
        n = c.a[key]
        lay = c.layout.get(key) if c.layout else None
        t = None if lay is None else self.gapped(n // lay[0], lay[1], lay[2], lay[0] > 1)
        if t is None:
            return self.zero(n) if shared else _buf(n)
        count = lay[0]
        return [self.zero(count * t.extent) if shared else _buf(count * t.extent), count, t]

    def side_type(self, c: Call, side: str) -> Any:
        """The datatype of a collective's `side` (send, recv) laid out as
        recorded (send=SIZE:EXTENT:TRUE_EXTENT ...); None for bytes."""
        lay = c.layout.get(side) if c.layout else None
        return None if lay is None else self.gapped(*lay, True)

    def gapped(self, size: int, extent: int, true_extent: int, many: bool) -> Any:
        """The datatype (`laid`) standing for a recorded one of `size`
        bytes, `extent` and `true_extent`, of which more than one element
        lie side by side where `many`; None where their data lie in one run
        of bytes."""
        inside = true_extent > size and size > 1
        between = many and not inside and (extent != size or true_extent > size)
        return self.laid(size, inside, between) if inside or between else None

    def blocks(self, c: Call, side: str, nbytes: int, k: int) -> Any:
        """A collective's `side` buffer of `k` blocks of `nbytes` each."""
        t = self.side_type(c, side)
        if t is None:
            return _buf(nbytes * k)
        return [_buf(k * (nbytes // t.size) * t.extent), nbytes // t.size, t]

    def vblocks(self, c: Call, side: str, sizes: List[int]) -> Any:
        """A v-collective's `side` buffer of blocks of `sizes` bytes, back
        to back."""
        t = self.side_type(c, side)
        if t is None:
            return _vector(sizes)
        counts = [b // t.size for b in sizes]
        displs = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(int).tolist() if counts else []
        return [_buf(sum(counts) * t.extent), counts, displs, t]


def program(trace: Trace, cpu_factor: float = 1.0) -> Callable[[], Any]:
    """The rank program that replays `trace` (run it with `bgsim.run`):
    the time between two calls is compute, times `cpu_factor`."""
    ops = _ops()
    buffers = _Buffers()
    zeros, zero, data = buffers.zeros, buffers.zero, buffers.data

    def op_of(c: Call) -> Any:
        return ops["sum"] if c.dtype not in _DTYPES else ops.get(c.op, ops["sum"])

    def main() -> None:
        world = MPI.COMM_WORLD
        me = world.Get_rank()
        comms: Dict[int, Any] = {0: world, 1: MPI.COMM_SELF}
        reqs: Dict[int, Any] = {}
        inits: Dict[int, Call] = {}
        freed: List[Any] = []
        wins: Dict[int, Any] = {}
        msgs: Dict[int, Any] = {}  # matched messages taken, not yet received
        last = 0.0  # the recorder's clock starts when MPI_Init returns
        wait_all = MPI.Request.Waitall
        zero_of = zeros.get
        nothing = False  # whether some request stands for nothing (None): a wait skips those
        calls = trace.ranks[me]
        ctx = _rt.current()
        # Rounds run in the core (`_round`) unless a timeline records the calls one by one.
        rounds = ctx.runtime.timeline is None
        skip = 0  # the calls before this index ran in a round
        plain = 0  # no round starts before this index (where the last search stopped)
        for i, c in enumerate(calls):
            if i < skip:
                continue
            if c.t0 > last and cpu_factor > 0:
                compute(seconds=(c.t0 - last) * cpu_factor)
            last = c.t1
            a, name = c.a, c.name
            if c.cancelled is not None and "req" in a:
                reqs[a["req"]] = None  # its cancel succeeded: it moved nothing
                nothing = True
                continue
            # The common calls first: a halo's irecv, isend and waitall.
            if name == "irecv" and rounds and i >= plain and not ctx.nbcs:
                end, found = _round(calls, i, cpu_factor)
                comm = comms[a["comm"]]
                if found is not None and comm._p2p is not None:
                    _run_round(ctx, comm, *found)
                    skip, last = end, calls[end - 1].t1
                    continue
                plain = end
            if name == "irecv":
                src = a["src"]
                buf = zero_of(a["bytes"]) if c.layout is None else data(c, "bytes")
                reqs[a["req"]] = comms[a["comm"]].Irecv(zero(a["bytes"]) if buf is None else buf,
                                                        src if src >= 0 else _peer(src), _tag(a["tag"]))
                continue
            if name == "isend":
                dest = a["dest"]
                buf = zero_of(a["bytes"]) if c.layout is None else data(c, "bytes")
                reqs[a["req"]] = comms[a["comm"]].Isend(zero(a["bytes"]) if buf is None else buf,
                                                        dest if dest >= 0 else _peer(dest), a["tag"])
                continue
            if name in COMPLETES_LIST:
                done = list(map(reqs.pop, c.lst))
                wait_all([r for r in done if r is not None] if nothing else done)
                continue
            if name in COMPLETES_ONE:
                r = reqs.pop(a["req"])
                if r is not None:
                    r.Wait()
                continue
            comm = comms.get(a.get("comm", 0))
            if name in ("send", "ssend", "bsend", "rsend"):
                getattr(comm, name.capitalize())(data(c, "bytes"), _peer(a["dest"]), a["tag"])
            elif name in ("issend", "ibsend", "irsend"):
                reqs[a["req"]] = getattr(comm, "I" + name[1:])(data(c, "bytes"), _peer(a["dest"]), a["tag"])
            elif name == "recv":
                comm.Recv(data(c, "bytes"), _peer(a["src"]), _tag(a["tag"]))
            elif name.endswith("_init"):
                inits[a["req"]] = c
            elif name in ("start", "startall"):
                for req, (peer, tag) in c.starts.items():
                    if c.cancelled is not None and req in c.cancelled:
                        reqs[req] = None
                        nothing = True
                        continue
                    init = inits[req]
                    on = comms[init.a["comm"]]
                    if init.name == "recv_init":
                        reqs[req] = on.Irecv(data(init, "bytes"), _peer(peer), _tag(tag))
                    else:  # the nonblocking call of the init's mode: Isend, Issend ...
                        reqs[req] = getattr(on, "I" + SEND_MODE[init.name])(data(init, "bytes"), _peer(peer), tag)
            elif name == "request_free":
                inits.pop(a["req"], None)
                if a["req"] in reqs:
                    freed.append(reqs.pop(a["req"]))
            elif name == "sendrecv":
                comm.Sendrecv(data(c, "sbytes"), _peer(a["dest"]), a["stag"], data(c, "rbytes"), _peer(a["src"]),
                              _tag(a["rtag"]))
            elif name == "probe":
                comm.Probe(_peer(a["src"]), _tag(a["tag"]))
            elif name == "mprobe":  # the message the recorded one took: its source and tag
                msgs[a["msg"]] = comm.Mprobe(_peer(a["src"]), a["tag"])
            elif name == "mrecv":
                msgs.pop(a["msg"]).Recv(_buf(c.probed.a["bytes"]))
            elif name == "imrecv":
                reqs[a["req"]] = msgs.pop(a["msg"]).Irecv(_buf(c.probed.a["bytes"]))
            elif name == "comm_dup":
                comms[a["new"]] = comms[a["parent"]].Dup()
            elif name == "comm_idup":  # (the simulated MPI's Idup is done on return)
                comms[a["new"]], _ = comms[a["parent"]].Idup()
                reqs[a["req"]] = None
                nothing = True
            elif name == "comm_split":
                made = comms[a["parent"]].Split(a["color"] if a["new"] >= 0 else MPI.UNDEFINED, a["key"])
                if a["new"] >= 0:
                    comms[a["new"]] = made
            elif name == "comm_group":
                parent = comms[a["parent"]]
                comms[a["new"]] = parent.Create_group(parent.Get_group().Incl(c.lst))
            elif name == "intercomm_create":
                peer = comms[a["peer"]] if a["peer"] >= 0 else MPI.COMM_NULL
                comms[a["new"]] = comms[a["local"]].Create_intercomm(a["leader"], peer, max(a["rleader"], 0),
                                                                     max(a["tag"], 0))
            elif name == "intercomm_merge":
                comms[a["new"]] = _merge(comms[a["inter"]], a["high"], c.lst, me)
            elif name == "comm_free":
                comms.pop(a["comm"]).Free()
            elif name == "finalize":
                break
            elif name == "cancel":
                pass
            elif name in RMA:
                made = _rma(c, comms, wins, op_of(c), buffers)
                if "req" in a:
                    reqs[a["req"]] = made
                    nothing = nothing or made is None
            elif "req" in a:  # a nonblocking collective: its blocking form, run as one (`nbc`)
                reqs[a["req"]] = _nbc.start(f"MPI.Comm.{name.capitalize()}()",
                                            lambda c=c, comm=comm, op=op_of(c): _collective(c, comm, op, buffers))
            else:
                _collective(c, comm, op_of(c), buffers)
        if freed:
            MPI.Request.Waitall(freed)
        if any(r is not None for r in reqs.values()):
            raise UsageError(f"trace `{trace.path}`: rank {me} ends with requests never waited for")
    return main


def _round(calls: List[Call], i: int, cpu_factor: float) -> tuple:
    """Whether calls[i:] start with a round of a halo exchange: irecvs
    from ranks of one communicator with one tag, then isends to distinct
    ranks of it with that tag, then a waitall of exactly their requests,
    with no compute between them (no wildcard, PROC_NULL, layout or
    cancel). Returns (the index after the round, (tag, sources,
    destinations, sizes by destination)), or (where the search stopped,
    None)."""
    first = calls[i].a
    comm, tag = first["comm"], first["tag"]
    if tag < 0:  # (a wildcard the recorded status did not resolve)
        return i + 1, None
    srcs: List[int] = []
    dests: List[int] = []
    sizes: Dict[int, int] = {}  # by destination
    reqs = set()
    n, j = len(calls), i
    gaps = cpu_factor > 0
    prev = calls[i].t0
    for kind, key, peers in (("irecv", "src", srcs), ("isend", "dest", dests)):
        sends = kind == "isend"
        while j < n:
            c = calls[j]
            if c.name != kind:
                break
            a = c.a
            peer = a[key]
            if (peer < 0 or (sends and peer in sizes) or a["tag"] != tag or a["comm"] != comm
                    or c.layout is not None or c.cancelled is not None or (gaps and c.t0 > prev)):
                return j + 1, None
            if sends:
                sizes[peer] = a["bytes"]
            peers.append(peer)
            reqs.add(a["req"])
            prev = c.t1
            j += 1
    if j >= n:
        return j, None
    w = calls[j]
    if w.name != "waitall" or (gaps and w.t0 > prev) or len(w.lst) != len(reqs) or reqs.symmetric_difference(w.lst):
        return j + 1, None
    return j + 1, (tag, srcs, dests, sizes)


def _run_round(ctx: Any, comm: Any, tag: int, srcs: List[int], dests: List[int], sizes: Dict[int, int]) -> None:
    """A round (`_round`) as one exchange the core runs for the rank: its
    receives posted, then its sends, then the wait for all of them, on the
    communicator's point-to-point context - the same messages at the same
    simulated times as the calls one by one, without a Python call per
    message. The messages are sizes without content (a replay's are
    zeros)."""
    rt = ctx.runtime
    w = rt.world
    ctx.call, ctx.frame = "MPI.Request.Waitall()", None
    uniform = set(sizes.values())
    parts = uniform.pop() if len(uniform) == 1 else sizes
    if w.coll_exchange(ctx.rank, comm._p2p, tag, parts, dests, srcs, None, 0, False, True):
        rt.suspend(ctx.rank)
    w.coll_discard(ctx.rank)


def _merge(inter: Any, high: int, members: List[int], me: int) -> Any:
    """MPI_Intercomm_merge with the recorded members in the recorded order:
    the simulated Merge, then (where its order differs: both groups asked
    for the same `high`, whose order MPI leaves to the implementation) a
    split of it into the recorded order."""
    merged = inter.Merge(bool(high))
    world = MPI.COMM_WORLD.Get_group()
    group = merged.Get_group()
    order = group.Translate_ranks(list(range(group.Get_size())), world)
    group.Free()
    world.Free()
    if list(order) == list(members):
        return merged
    again = merged.Split(0, members.index(me))
    merged.Free()
    return again


#: Window synchronization calls without arguments: the MPI.Win method of each.
_WIN_SYNC = {"win_fence": "Fence", "win_lock_all": "Lock_all", "win_unlock_all": "Unlock_all",
             "win_flush_all": "Flush_all", "win_sync": "Sync", "win_complete": "Complete", "win_wait": "Wait"}


def _rma(c: Call, comms: Dict[int, Any], wins: Dict[int, Any], op: Any, buffers: _Buffers) -> Any:
    """A one-sided call: the window of the recorded size and displacement
    unit (zeros), operations of the recorded sizes at the recorded
    displacements (as bytes there: the target datatype's layout is not
    recorded; a put's, get's or accumulate's origin laid out as recorded,
    an accumulate then summing bytes),
    synchronization as recorded. Returns a request-based operation's
    request."""
    a, name = c.a, c.name
    if name == "win_create":
        wins[a["win"]] = MPI.Win.Create(_buf(a["bytes"]), a["unit"], comm=comms[a["comm"]])
        return None
    win = wins[a["win"]]
    if "target" in a and "bytes" in a:
        n, target, disp = a["bytes"], _peer(a["target"]), a["disp"]
        if name in ("put", "rput"):  # (at the target: n bytes, whatever the origin's layout)
            return (win.Rput if name == "rput" else win.Put)(buffers.data(c, "bytes"), target, (disp, n, MPI.BYTE))
        elif name in ("get", "rget"):
            return (win.Rget if name == "rget" else win.Get)(buffers.data(c, "bytes"), target, (disp, n, MPI.BYTE))
        elif name == "compare_and_swap":
            one = np.zeros(1, f"u{n}" if n in (1, 2, 4, 8) else "u1")
            win.Compare_and_swap(one, one.copy(), np.empty_like(one), target, disp)
        elif name in ("accumulate", "raccumulate") and c.layout:  # bytes laid out as recorded, summed
            return (win.Raccumulate if name == "raccumulate" else win.Accumulate)(
                buffers.data(c, "bytes"), target, (disp, n, MPI.BYTE), MPI.SUM)
        else:
            x = _elements(c, n)
            if name == "accumulate":
                win.Accumulate(x, target, disp, op)
            elif name == "raccumulate":
                return win.Raccumulate(x, target, disp, op)
            elif name == "get_accumulate":
                win.Get_accumulate(x, np.empty_like(x), target, disp, op)
            elif name == "rget_accumulate":
                return win.Rget_accumulate(x, np.empty_like(x), target, disp, op)
            else:  # one element of the recorded size (bytes: from an OTF2 archive, which keeps no type)
                one = x[:1] if x.itemsize == n or n not in (2, 4, 8) else np.zeros(1, f"u{n}")
                win.Fetch_and_op(one, np.empty_like(one), target, disp, op)
    elif name == "win_free":
        wins.pop(a["win"]).Free()
    elif name in _WIN_SYNC:
        getattr(win, _WIN_SYNC[name])()
    elif name == "win_lock":
        win.Lock(_peer(a["target"]), MPI.LOCK_EXCLUSIVE if a["exclusive"] else MPI.LOCK_SHARED)
    elif name == "win_unlock":
        win.Unlock(_peer(a["target"]))
    elif name == "win_flush":
        win.Flush(_peer(a["target"]))
    elif name in ("win_post", "win_start"):
        group = win.Get_group().Incl(c.lst)
        (win.Post if name == "win_post" else win.Start)(group)


def _collective(c: Call, comm: Any, op: Any, buffers: _Buffers) -> None:
    """A collective (blocking, or the body of a nonblocking one)."""
    data, blocks, vblocks = buffers.data, buffers.blocks, buffers.vblocks
    a, lst = c.a, c.lst
    name = blocking_collective(c.name)
    inter = comm.Is_inter()
    # Per-rank lists run over the remote group of an intercommunicator,
    # whose root is MPI.ROOT (-3 in the trace too) at the root.
    size, rank = comm.Get_remote_size() if inter else comm.Get_size(), comm.Get_rank()
    root = a.get("root")
    at_root = root == MPI.ROOT if inter else rank == root
    if name == "barrier":
        comm.Barrier()
    elif name == "bcast":
        comm.Bcast(data(c, "bytes"), root)
    elif name in ("reduce", "allreduce", "scan", "exscan") and c.layout:  # bytes laid out as recorded, summed
        x, y = data(c, "bytes"), data(c, "bytes")
        if name == "reduce":
            comm.Reduce(x, y, MPI.SUM, root)
        else:
            getattr(comm, name.capitalize())(x, y, MPI.SUM)
    elif name == "reduce":
        x = _elements(c, a["bytes"])
        comm.Reduce(x, np.empty_like(x), op, root)
    elif name in ("allreduce", "scan", "exscan"):
        x = _elements(c, a["bytes"])
        getattr(comm, name.capitalize())(x, np.empty_like(x), op)
    elif name == "reduce_scatter_block" and c.layout:  # bytes laid out as recorded, summed
        mine = data(c, "bytes")
        if isinstance(mine, list):
            _, count, t = mine
            comm.Reduce_scatter_block([_buf(size * count * t.extent), size * count, t], mine, MPI.SUM)
        else:
            comm.Reduce_scatter_block(_buf(mine.size * size), mine, MPI.SUM)
    elif name == "reduce_scatter_block":
        x = _elements(c, a["bytes"])
        comm.Reduce_scatter_block(np.zeros(x.size * size, x.dtype), x, op)
    elif name == "reduce_scatter" and buffers.side_type(c, "recv") is not None:  # laid out as recorded, summed
        t = buffers.side_type(c, "recv")
        counts = [b // t.size for b in lst]
        comm.Reduce_scatter([_buf(sum(counts) * t.extent), sum(counts), t],
                            [_buf(counts[rank] * t.extent), counts[rank], t], counts, MPI.SUM)
    elif name == "reduce_scatter":
        blocks = [_elements(c, b) for b in lst]
        if len({b.dtype for b in blocks}) > 1:  # some block does not divide: bytes throughout
            blocks = [np.zeros(b, "u1") for b in lst]
        counts = [b.size for b in blocks]
        comm.Reduce_scatter(np.zeros(sum(counts), blocks[0].dtype), blocks[rank], counts, op)
    elif name == "allgather":
        comm.Allgather(blocks(c, "send", a["bytes"], 1), blocks(c, "recv", a["bytes"], size))
    elif name == "alltoall":
        comm.Alltoall(blocks(c, "send", a["bytes"], size), blocks(c, "recv", a["bytes"], size))
    elif name == "gather":
        comm.Gather(blocks(c, "send", a["bytes"], 1), blocks(c, "recv", a["bytes"], size) if at_root else None, root)
    elif name == "scatter":
        comm.Scatter(blocks(c, "send", a["bytes"], size) if at_root else None, blocks(c, "recv", a["bytes"], 1), root)
    elif name == "gatherv":
        comm.Gatherv(blocks(c, "send", a["bytes"], 1), vblocks(c, "recv", lst) if at_root else None, root)
    elif name == "scatterv":
        comm.Scatterv(vblocks(c, "send", lst) if at_root else None, blocks(c, "recv", a["bytes"], 1), root)
    elif name == "allgatherv":
        if inter:  # the list ends with this rank's own block
            comm.Allgatherv(blocks(c, "send", lst[-1], 1), vblocks(c, "recv", lst[:-1]))
        else:
            comm.Allgatherv(blocks(c, "send", lst[rank], 1), vblocks(c, "recv", lst))
    elif name == "alltoallv":
        comm.Alltoallv(vblocks(c, "send", lst[:size]), vblocks(c, "recv", lst[size:]))
    elif name.startswith("neighbor_"):  # the recorded neighbours (PROC_NULL is -2 in both), the recorded sizes
        ins, rsizes, outs, sizes = neighborhood(lst)
        # (sizes without content: a laid-out side's pack and unpack are
        # charged as such, a block at a time, as the simulated MPI's are)
        if buffers.side_type(c, "send") is not None:
            for d, b in zip(outs, sizes):
                if d != PROC_NULL:
                    _pack(b)
        _neighbor.exchange(comm, name, sizes, (ins, outs))
        if buffers.side_type(c, "recv") is not None:
            for src, b in zip(ins, rsizes):
                if src != PROC_NULL:
                    _pack(b)
    else:  # the loader knows no other call
        raise UsageError(f"{c.where}: {c.name} has no replay")
