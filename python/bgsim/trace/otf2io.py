"""OTF2 in and out: Score-P's trace format, through the `otf2` package.

`read(path)` turns an OTF2 archive (its `.otf2` anchor file, or the
directory holding it) into the lines of bgsim's own format, one list per
MPI rank, which `tracefile.load` then checks and replays as any trace.
`write(trace, out_dir)` writes a bgsim trace as an OTF2 archive with the
events Score-P records, so one format serves both ways
(`bgsim record --format otf2`).

What is read, per MPI rank (an MPI location):

- every region whose name starts with `MPI_` is one call, from its Enter to
  its Leave; the MPI events inside it say what the call did: `MpiSend` /
  `MpiRecv` (a blocking send or receive, the sender of a receive as
  matched), `MpiIsend`, `MpiIrecvRequest` and, where a wait or test
  completed it, `MpiIrecv` (source, tag and size as received) and
  `MpiIsendComplete`, or `MpiRequestCancelled` where its cancel succeeded;
  `MpiProbe`; `MpiCollectiveBegin` / `End` (the
  operation, communicator, root and bytes sent and received). The time
  between two calls is compute, as with bgsim's own traces;
- communicators are the archive's MPI communicator definitions: each is
  made, at the start of the replay, as a split of MPI_COMM_WORLD into its
  members (the archive does not say when or from which parent it was
  made);
- a collective's bytes follow Score-P's counting (a rank of an allreduce
  on N ranks "sends" N times its buffer ...); the per-rank counts of a
  v-collective are rebuilt from every member's own event of the same call
  (the k-th collective on that communicator): a gatherv's counts are what
  each member sent, an alltoallv's pairwise counts are split in proportion
  to what each member sent and received in all (the archive holds only
  those totals);
- one-sided calls from their regions and RMA events (`_RmaReader`; what
  is written: `_RmaWriter`);
- a nonblocking collective is its region's `NonBlockingCollectiveRequest`
  (where it starts) and the `NonBlockingCollectiveComplete` (operation,
  communicator, root, bytes) of the wait or test that completes it; the
  members of a nonblocking v-collective are matched by the order of their
  completions.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

from ..errors import UsageError
from .tracefile import RMA, blocking_collective

if TYPE_CHECKING:
    from .tracefile import Trace

#: Score-P's collective operation names -> bgsim's.
_COLL = {"BARRIER": "barrier", "BCAST": "bcast", "GATHER": "gather", "GATHERV": "gatherv", "SCATTER": "scatter",
         "SCATTERV": "scatterv", "ALLGATHER": "allgather", "ALLGATHERV": "allgatherv", "ALLTOALL": "alltoall",
         "ALLTOALLV": "alltoallv", "ALLTOALLW": "alltoallv", "ALLREDUCE": "allreduce", "REDUCE": "reduce",
         "REDUCE_SCATTER": "reduce_scatter", "REDUCE_SCATTER_BLOCK": "reduce_scatter_block", "SCAN": "scan",
         "EXSCAN": "exscan"}
_SENDS = {"MPI_Send": "send", "MPI_Ssend": "ssend", "MPI_Bsend": "bsend", "MPI_Rsend": "rsend"}
_ISENDS = {"MPI_Isend": "isend", "MPI_Issend": "issend", "MPI_Ibsend": "ibsend", "MPI_Irsend": "irsend"}
_ONE = {"MPI_Wait": "wait", "MPI_Test": "test", "MPI_Waitany": "waitany", "MPI_Testany": "testany"}


def _package() -> Any:
    try:
        import otf2
    except ImportError:
        raise UsageError("reading or writing OTF2 needs the `otf2` package (pip install otf2; make installs it)") \
            from None
    return otf2


def anchor(path: str) -> Optional[str]:
    """The anchor file of the OTF2 archive at `path` (the file, or a
    directory holding one `*.otf2`), else None."""
    if os.path.isfile(path) and path.endswith(".otf2"):
        return path
    if os.path.isdir(path):
        found = sorted(f for f in os.listdir(path) if f.endswith(".otf2"))
        if len(found) == 1:
            return os.path.join(path, found[0])
    return None


class _Coll:
    """One rank's v-collective line, filled in once every member's event
    of the same call is known."""

    __slots__ = ("tokens", "kind", "comm", "sent", "recv", "root", "me", "members", "req")

    def __init__(self, tokens: List[str], kind: str, comm: int, sent: int, recv: int, root: int, me: int,
                 members: List[int], req: Optional[int] = None) -> None:
        self.tokens, self.kind, self.comm, self.sent, self.recv, self.root, self.me, self.members = \
            tokens, kind, comm, sent, recv, root, me, members
        self.req = req  # a nonblocking one's request (after COMM in its line)


def read(path: str) -> Tuple[str, Dict[int, List[str]]]:
    """The anchor file read and, per rank, the lines of a format-2 trace."""
    otf2 = _package()
    anchor_file = anchor(path)
    if anchor_file is None:
        raise UsageError(f"trace `{path}`: not an OTF2 archive (no single .otf2 anchor file)")
    try:
        reader = otf2.reader.Reader(anchor_file)
    except Exception as e:  # the package raises its own error types
        raise UsageError(f"{anchor_file}: cannot read the OTF2 archive: {e}") from None
    defs = reader.definitions
    Paradigm, GroupType = otf2.enums.Paradigm, otf2.definitions.GroupType
    # Ranks: the MPI locations group, in rank order.
    mpi_locations = next((g for g in defs.groups if g.group_type == GroupType.COMM_LOCATIONS
                          and g.paradigm == Paradigm.MPI), None)
    if mpi_locations is None:
        raise UsageError(f"{anchor_file}: no MPI locations (the archive holds no MPI program)")
    rank_of = {loc: r for r, loc in enumerate(mpi_locations.members)}
    n = len(rank_of)
    clock = defs.clock_properties
    res, offset = float(clock.timer_resolution), clock.global_offset

    def seconds(t: int) -> float:
        return (t - offset) / res

    # Communicators: WORLD (all ranks in order), SELF, the others numbered from 2.
    comm_id: Dict[Any, int] = {}
    members: Dict[Any, List[int]] = {}
    others: List[Any] = []
    for c in defs.comms:
        g = c.group
        if g.group_type == GroupType.COMM_SELF:
            comm_id[c] = 1
            continue
        ranks = [rank_of[m] for m in g.members] if g.group_type == GroupType.COMM_GROUP else []
        members[c] = ranks
        if ranks == list(range(n)) and 0 not in comm_id.values():
            comm_id[c] = 0
        else:
            comm_id[c] = 2 + len(others)
            others.append(c)
    lines: Dict[int, List[List[str]]] = {r: [] for r in range(n)}
    for r in range(n):
        for c in others:
            ranks = members[c]
            made = ["0", "0", "comm_split", "0"] + ([str(comm_id[c]), str(len(ranks))] + [str(w) for w in ranks]
                                                  if r in ranks else ["-1", "0"])
            lines[r].append(made)

    def where(loc: Any, t: int) -> str:
        return f"{anchor_file}: rank {rank_of.get(loc, '?')} at {seconds(t):.9f} s"

    open_call: Dict[int, Tuple[str, int, List[Any]]] = {}
    hidden = [0.0] * n
    next_req = [1] * n
    req_of: List[Dict[int, int]] = [dict() for _ in range(n)]
    irecv_line: List[Dict[int, List[str]]] = [dict() for _ in range(n)]
    nbc_line: List[Dict[int, Tuple[List[str], int]]] = [dict() for _ in range(n)]
    colls: Dict[Tuple[int, int], Dict[int, _Coll]] = {}
    coll_seq: Dict[Tuple[int, int], int] = {}
    rma = _RmaReader(n, comm_id, members, next_req, rank_of)
    E = otf2.events
    for loc, ev in reader.events:
        if loc not in rank_of:
            continue
        r = rank_of[loc]
        if isinstance(ev, E.Enter):
            name = ev.region.name
            if name.startswith("MPI_") and r not in open_call:
                open_call[r] = (name, ev.time, [])
            continue
        if isinstance(ev, E.Leave):
            call = open_call.get(r)
            if call is None or ev.region.name != call[0]:
                continue
            del open_call[r]
            name, t0, inner = call
            shift = hidden[r]
            head = [f"{seconds(t0) - shift:.9f}", f"{seconds(ev.time) - shift:.9f}"]
            before = len(lines[r])
            if name in _RMA_REGIONS:
                rma.emit(r, name, t0, head, inner, lines[r], lambda t: where(loc, t))
            else:
                _emit(r, name, head, inner, lines[r], next_req, req_of, irecv_line, nbc_line, colls, coll_seq,
                      comm_id, members, n, lambda t: where(loc, t), rma)
            if len(lines[r]) == before:
                # A call with nothing to replay (MPI_Comm_rank, a constructor
                # made at the start ...): its time is neither compute nor
                # a call; the rank's later times close up over it.
                hidden[r] += seconds(ev.time) - seconds(t0)
            continue
        if r in open_call:
            open_call[r][2].append(ev)
    reader.close()
    for r, pending in enumerate(irecv_line):
        if pending:
            raise UsageError(f"{anchor_file}: rank {r}: a receive (MpiIrecvRequest) is never completed by an "
                             "MpiIrecv event")
    for r, pending in enumerate(nbc_line):
        if pending:
            raise UsageError(f"{anchor_file}: rank {r}: a nonblocking collective (NonBlockingCollectiveRequest) "
                             "is never completed by a NonBlockingCollectiveComplete event")
    _fill_collectives(colls, anchor_file)
    return anchor_file, {r: [" ".join(tok) for tok in ls] for r, ls in lines.items()}


def _collective_line(r: int, e: Any, tokens: List[str], req: Optional[int],
                     colls: Dict[Tuple[int, int], Dict[int, "_Coll"]], coll_seq: Dict[Tuple[int, int], int],
                     comm_id: Dict[Any, int], members: Dict[Any, List[int]], n: int, where: Any) -> None:
    """Completes `tokens` (the call's two times) into rank `r`'s line of
    the collective of event `e` (an MpiCollectiveEnd, or the
    NonBlockingCollectiveComplete of request `req`: then the line is the
    nonblocking form, REQ after COMM). A v-collective's counts come once
    every member's event is known (`_fill_collectives`)."""
    op = getattr(e.collective_op, "name", str(e.collective_op)).split(".")[-1]
    what = _COLL.get(op)
    if what is None:
        raise UsageError(f"{where(e.time)}: collective {op} is not read from OTF2 archives")
    if e.communicator not in comm_id:
        raise UsageError(f"{where(e.time)}: an event on a communicator the archive does not define")
    c = comm_id[e.communicator]
    ranks = members.get(e.communicator, [r]) if c != 1 else [r]
    size = len(ranks) if c != 0 else n
    me = ranks.index(r) if c not in (0, 1) else (r if c == 0 else 0)
    sent, recv = int(e.size_sent), int(e.size_received)
    root = int(e.root) if what in ("bcast", "reduce", "gather", "scatter", "gatherv", "scatterv") else 0
    if not 0 <= root < size:
        raise UsageError(f"{where(e.time)}: {what} with root {root} on a communicator of {size} ranks")
    typed = ["b1", "sum"]
    per = {"barrier": None, "bcast": recv, "scatter": recv, "gather": sent, "reduce": sent,
           "allgather": recv // size, "alltoall": recv // size, "allreduce": recv // size,
           "reduce_scatter_block": recv // size, "scan": recv // (me + 1),
           "exscan": (sent + recv) // (size - 1) if size > 1 else 0}
    name = what if req is None else "i" + what
    cr = [str(c)] + ([str(req)] if req is not None else [])
    if what == "barrier":
        tokens += [name] + cr
    elif what in ("bcast", "scatter", "gather", "reduce"):
        tokens += [name, str(root), str(per[what])] + cr + (typed if what == "reduce" else [])
    elif what in ("allgather", "alltoall"):
        tokens += [name, str(per[what])] + cr
    elif what in ("allreduce", "reduce_scatter_block", "scan", "exscan"):
        tokens += [name, str(per[what])] + cr + typed
    else:  # v-collectives: filled in when every member's event is known
        tokens.append(name)
        key = (c if c != 1 else -1 - r, coll_seq.get((c, r), 0))
        colls.setdefault(key, {})[r] = _Coll(tokens, what, c, sent, recv, root, me,
                                              ranks if c != 0 else list(range(n)), req)
    coll_seq[(c, r)] = coll_seq.get((c, r), 0) + 1


def _emit(r: int, name: str, head: List[str], inner: List[Any], out: List[List[str]], next_req: List[int],
          req_of: List[Dict[int, int]], irecv_line: List[Dict[int, List[str]]],
          nbc_line: List[Dict[int, Tuple[List[str], int]]],
          colls: Dict[Tuple[int, int], Dict[int, "_Coll"]], coll_seq: Dict[Tuple[int, int], int],
          comm_id: Dict[Any, int], members: Dict[Any, List[int]], n: int, where: Any, rma: "_RmaReader") -> None:
    """The lines of one MPI call of rank `r` from the events inside it."""
    kinds = [type(e).__name__ for e in inner]

    def cid(comm: Any, t: int) -> int:
        if comm not in comm_id:
            raise UsageError(f"{where(t)}: an event on a communicator the archive does not define")
        return comm_id[comm]

    def new_req(otf2_id: int) -> int:
        ours = next_req[r]
        next_req[r] += 1
        req_of[r][otf2_id] = ours
        return ours

    if name == "MPI_Finalize":
        out.append(head + ["finalize"])
        return
    if "MpiCollectiveEnd" in kinds:
        e = inner[kinds.index("MpiCollectiveEnd")]
        tokens = head[:]
        out.append(tokens)
        _collective_line(r, e, tokens, None, colls, coll_seq, comm_id, members, n, where)
        return
    if "NonBlockingCollectiveRequest" in kinds:  # its line is filled at its completion
        e = inner[kinds.index("NonBlockingCollectiveRequest")]
        tokens = head[:]
        nbc_line[r][e.request_id] = (tokens, new_req(e.request_id))
        out.append(tokens)
        return
    lines: List[List[str]] = []
    done: List[int] = []
    cancelled: List[int] = []
    sends = [e for e in inner if type(e).__name__ == "MpiSend"]
    recvs = [e for e in inner if type(e).__name__ == "MpiRecv"]
    if sends and recvs:
        s, v = sends[0], recvs[0]
        lines.append(head + ["sendrecv", str(s.receiver), str(s.msg_tag), str(s.msg_length), str(v.sender),
                             str(v.msg_tag), str(v.msg_length), str(cid(s.communicator, s.time))])
        sends, recvs = sends[1:], recvs[1:]
    for e in inner:
        k = type(e).__name__
        if k == "MpiSend" and e in sends:
            lines.append(head + [_SENDS.get(name, "send"), str(e.receiver), str(e.msg_tag), str(e.msg_length),
                                 str(cid(e.communicator, e.time))])
        elif k == "MpiRecv" and e in recvs:
            lines.append(head + ["recv", str(e.sender), str(e.msg_tag), str(e.msg_length),
                                 str(cid(e.communicator, e.time))])
        elif k == "MpiIsend":
            lines.append(head + [_ISENDS.get(name, "isend"), str(e.receiver), str(e.msg_tag), str(e.msg_length),
                                 str(cid(e.communicator, e.time)), str(new_req(e.request_id))])
        elif k == "MpiIrecvRequest":
            tokens = head + ["irecv", "?", "?", "?", "?", str(new_req(e.request_id))]
            irecv_line[r][e.request_id] = tokens
            lines.append(tokens)
        elif k in ("MpiIsendComplete", "MpiIrecv"):
            ours = req_of[r].pop(e.request_id, None)
            if ours is None:
                raise UsageError(f"{where(e.time)}: {k} of request {e.request_id}, which was never started")
            if k == "MpiIrecv":
                tokens = irecv_line[r].pop(e.request_id)
                tokens[3:7] = [str(e.sender), str(e.msg_tag), str(e.msg_length), str(cid(e.communicator, e.time))]
            done.append(ours)
        elif k == "NonBlockingCollectiveComplete":
            started = nbc_line[r].pop(e.request_id, None)
            if started is None:
                raise UsageError(f"{where(e.time)}: {k} of request {e.request_id}, which was never started")
            tokens, ours = started
            req_of[r].pop(e.request_id, None)
            # (A nonblocking v-collective's members are matched by the order
            # their completions come on each rank.)
            _collective_line(r, e, tokens, ours, colls, coll_seq, comm_id, members, n, where)
            done.append(ours)
        elif k == "RmaOpCompleteNonBlocking":
            ours = rma.reqs[r].pop((e.win, e.matching_id), None)
            if ours is not None:  # (a blocking operation's, written at a wait: nothing more to do)
                done.append(ours)
        elif k == "MpiRequestCancelled":
            ours = req_of[r].pop(e.request_id, None)
            if ours is None:
                raise UsageError(f"{where(e.time)}: {k} of request {e.request_id}, which was never started")
            tokens = irecv_line[r].pop(e.request_id, None)
            if tokens is not None:  # a receive that got nothing: posted as a wildcard
                tokens[3:7] = ["-1", "-1", "0", "0"]
            done.append(ours)
            cancelled.append(ours)
        elif k == "MpiProbe":
            lines.append(head + ["probe", str(e.sender), str(e.tag), str(cid(e.communicator, e.time))])
    if done:
        if name in _ONE and len(done) == 1:
            lines.append(head + [_ONE[name], str(done[0])])
        else:
            lines.append(head + ["waitall", str(len(done))] + [str(d) for d in done])
        lines += [head[1:] * 2 + ["cancelled", str(d)] for d in cancelled]
    out.extend(lines)


#: The one-sided calls, by region name.
_RMA_REGIONS = {"MPI_Win_create": "win_create", "MPI_Win_allocate": "win_create",
                "MPI_Win_allocate_shared": "win_create", "MPI_Win_free": "win_free", "MPI_Put": "put",
                "MPI_Get": "get", "MPI_Accumulate": "accumulate", "MPI_Get_accumulate": "get_accumulate",
                "MPI_Fetch_and_op": "fetch_and_op", "MPI_Compare_and_swap": "compare_and_swap", "MPI_Rput": "rput",
                "MPI_Rget": "rget", "MPI_Raccumulate": "raccumulate", "MPI_Rget_accumulate": "rget_accumulate",
                "MPI_Win_fence": "win_fence", "MPI_Win_lock": "win_lock", "MPI_Win_unlock": "win_unlock",
                "MPI_Win_lock_all": "win_lock_all", "MPI_Win_unlock_all": "win_unlock_all",
                "MPI_Win_flush": "win_flush", "MPI_Win_flush_local": "win_flush", "MPI_Win_flush_all": "win_flush_all",
                "MPI_Win_flush_local_all": "win_flush_all", "MPI_Win_sync": "win_sync", "MPI_Win_post": "win_post",
                "MPI_Win_start": "win_start", "MPI_Win_complete": "win_complete", "MPI_Win_wait": "win_wait"}


class _RmaReader:
    """One-sided calls read from their regions (the call) and RMA events
    (the window, target, bytes, lock kind, group). A window is numbered per
    rank in the order its RmaWinCreate came; OTF2 keeps neither its size
    nor displacements, so operations replay at displacement 0 of a window
    of bytes (unit 1) as large as the largest operation on it."""

    def __init__(self, n: int, comm_id: Dict[Any, int], members: Dict[Any, List[int]], next_req: List[int],
                 rank_of: Dict[Any, int]) -> None:
        self.n, self.comm_id, self.members, self.next_req, self.rank_of = n, comm_id, members, next_req, rank_of
        self.wins: List[Dict[Any, int]] = [dict() for _ in range(n)]
        self.created: List[Dict[Any, List[str]]] = [dict() for _ in range(n)]  # its win_create line
        self.count = [0] * n
        self.reqs: List[Dict[Tuple[Any, int], int]] = [dict() for _ in range(n)]

    def emit(self, r: int, region: str, start: int, head: List[str], inner: List[Any], out: List[List[str]],
             where: Any) -> None:
        call = _RMA_REGIONS[region]
        e = next((e for e in inner if hasattr(e, "win")), None)
        if e is None:
            raise UsageError(f"{where(start)}: {region} without an RMA event naming its window")
        win = e.win
        if call == "win_create":
            comm = self.comm_id.get(win.comm)
            if comm is None:
                raise UsageError(f"{where(e.time)}: a window on a communicator the archive does not define")
            number = self.wins[r][win] = self.count[r]
            self.count[r] += 1
            tokens = head + ["win_create", str(comm), str(number), "0", "1"]
            self.created[r][win] = tokens
            out.append(tokens)
            return
        number = self.wins[r].get(win)
        if number is None:
            raise UsageError(f"{where(e.time)}: {region} on a window this rank did not create")
        if call == "win_free":
            out.append(head + ["win_free", str(number)])
            del self.wins[r][win]
            return
        kind = type(e).__name__
        target = getattr(e, "remote", _UNDEF)
        if call in ("put", "get", "rput", "rget") or call in _ATOMIC:
            if kind not in ("RmaPut", "RmaGet", "RmaAtomic"):
                raise UsageError(f"{where(e.time)}: {region} without an RmaPut, RmaGet or RmaAtomic event")
            nbytes = int(e.bytes) if kind != "RmaAtomic" else int(e.bytes_received or e.bytes_sent)
            if kind == "RmaAtomic" and call == "compare_and_swap":
                nbytes = int(e.bytes_received)
            created = self.created[r][win]
            created[5] = str(max(int(created[5]), nbytes))
            tokens = head + [call, str(target), "0", str(nbytes), str(number)]
            if call in ("rput", "rget", "raccumulate", "rget_accumulate"):
                ours = self.next_req[r]
                self.next_req[r] += 1
                self.reqs[r][(win, e.matching_id)] = ours
                tokens.append(str(ours))
            if call in _ATOMIC:
                tokens += ["b1", "sum"]
            out.append(tokens)
        elif call in ("win_lock", "win_unlock", "win_flush"):
            if target == _UNDEF:
                raise UsageError(f"{where(e.time)}: {region} without its target rank")
            tokens = head + [call, str(target)]
            if call == "win_lock":
                tokens.append("1" if getattr(e, "lock_type", None) == self._exclusive() else "0")
            out.append(tokens + [str(number)])
        elif call in ("win_post", "win_start"):
            group = getattr(e, "group", None)
            world = [self.rank_of.get(m, m) for m in group.members] if group is not None else []
            on = self.members.get(win.comm, list(range(self.n))) if self.comm_id.get(win.comm) != 0 else \
                list(range(self.n))
            if not set(world) <= set(on):
                raise UsageError(f"{where(e.time)}: {region}: the group's ranks {world} are not all in the window")
            ranks = [on.index(w) for w in world]
            out.append(head + [call, str(number), str(len(ranks))] + [str(x) for x in ranks])
        else:  # fence, lock_all, unlock_all, flush_all, sync, complete, wait
            out.append(head + [call, str(number)])

    @staticmethod
    def _exclusive() -> Any:
        return _package().enums.LockType.EXCLUSIVE


def _fill_collectives(colls: Dict[Tuple[int, int], Dict[int, _Coll]], name: str) -> None:
    """The per-rank counts of every v-collective, from all its members' events."""
    for key, by_rank in colls.items():
        any_c = next(iter(by_rank.values()))
        ranks = any_c.members
        if set(by_rank) != set(ranks):
            raise UsageError(f"{name}: a {any_c.kind} on a communicator of ranks {ranks} has events from ranks "
                             f"{sorted(by_rank)} only")
        kind, size = any_c.kind, len(ranks)
        own = {w: c for w, c in by_rank.items()}
        ordered = [own[w] for w in ranks]
        def comm(c: _Coll) -> List[str]:  # COMM, and a nonblocking one's REQ
            return [str(c.comm)] + ([str(c.req)] if c.req is not None else [])
        if kind in ("gatherv", "scatterv"):
            counts = [c.sent if kind == "gatherv" else c.recv for c in ordered]
            for c in ordered:
                mine = c.sent if kind == "gatherv" else c.recv
                c.tokens += [str(c.root), str(mine)] + comm(c) + ([str(size)] + [str(v) for v in counts]
                                                                 if c.me == c.root else ["0"])
        elif kind == "allgatherv":
            counts = [c.sent // size for c in ordered]
            for c in ordered:
                c.tokens += comm(c) + [str(size)] + [str(v) for v in counts]
        elif kind == "reduce_scatter":
            counts = [c.recv // size for c in ordered]
            for c in ordered:
                c.tokens += comm(c) + [str(size)] + [str(v) for v in counts] + ["b1", "sum"]
        else:  # alltoallv: pairwise bytes in proportion to the totals
            total = sum(c.sent for c in ordered) or 1
            m = [[c.sent * d.recv // total for d in ordered] for c in ordered]
            for i, c in enumerate(ordered):
                c.tokens += comm(c) + [str(size)] + [str(v) for v in m[i]] + [str(m[j][i]) for j in range(size)]



_REGION = {"wait": "MPI_Wait", "test": "MPI_Test", "waitany": "MPI_Waitany", "testany": "MPI_Testany",
           "waitall": "MPI_Waitall", "testall": "MPI_Testall", "waitsome": "MPI_Waitsome", "testsome": "MPI_Testsome",
           "comm_dup": "MPI_Comm_dup", "comm_idup": "MPI_Comm_idup", "comm_split": "MPI_Comm_split", "comm_group": "MPI_Comm_create_group",
           "comm_free": "MPI_Comm_free", "request_free": "MPI_Request_free", "sendrecv": "MPI_Sendrecv",
           "probe": "MPI_Probe", "finalize": "MPI_Finalize", "start": "MPI_Start", "startall": "MPI_Startall",
           "mprobe": "MPI_Mprobe", "mrecv": "MPI_Mrecv", "imrecv": "MPI_Imrecv"}


def _region_name(call: str) -> str:
    if call in _REGION:
        return _REGION[call]
    return "MPI_" + call.capitalize()


def _bytes(c: Any, size: int, me: int) -> Tuple[int, int]:
    """Score-P's (bytes sent, bytes received) for a collective call."""
    a, lst = c.a, c.lst
    what = blocking_collective(c.name)
    b = a.get("bytes", 0)
    root = a.get("root", -1) == me
    if what == "barrier":
        return 0, 0
    if what in ("bcast", "scatter"):
        return (size * b if root else 0), b
    if what in ("gather", "reduce"):
        return b, (size * b if root else 0)
    if what in ("allreduce", "reduce_scatter_block", "allgather", "alltoall"):
        return size * b, size * b
    if what == "scan":
        return (size - me) * b, (me + 1) * b
    if what == "exscan":
        return (size - 1 - me) * b, me * b
    if what == "gatherv":
        return b, (sum(lst) if root else 0)
    if what == "scatterv":
        return (sum(lst) if root else 0), b
    if what == "allgatherv":
        return size * lst[me], sum(lst)
    if what == "reduce_scatter":
        return sum(lst), size * lst[me]
    return sum(lst[:size]), sum(lst[size:])  # alltoallv


#: OTF2's undefined rank (a lock or flush of every target).
_UNDEF = 2**32 - 1
#: The RmaAtomic type each one-sided reduction or atomic is written as.
_ATOMIC = {"accumulate": "ACCUMULATE", "raccumulate": "ACCUMULATE", "get_accumulate": "FETCH_AND_ACCUMULATE",
           "rget_accumulate": "FETCH_AND_ACCUMULATE", "fetch_and_op": "FETCH_AND_ADD",
           "compare_and_swap": "COMPARE_AND_SWAP"}


class _RmaWriter:
    """One rank's one-sided lines as OTF2 RMA events, in the region of the
    call (`MPI_Put`, `MPI_Win_fence` ...; the reader goes by that name):
    RmaWinCreate / RmaWinDestroy between RmaCollectiveBegin and End;
    RmaPut, RmaGet and RmaAtomic (matching id: the request of a
    request-based operation, whose RmaOpCompleteNonBlocking comes with the
    completion that finished it; else RmaOpCompleteBlocking at once); a
    fence as an RmaCollectiveEnd (BARRIER); locks as RmaAcquireLock /
    RmaReleaseLock, flushes and MPI_Win_sync as RmaSync (remote undefined:
    every target), post, start, complete and wait as RmaGroupSync (the
    group's world ranks; empty for the last two).
    OTF2 keeps no window size or displacement: the reader rebuilds them."""

    def __init__(self, otf2: Any, d: Any, ew: Any, wins: Dict[Tuple[Any, int], Any],
                 groups: Dict[Tuple[int, ...], Any]) -> None:
        self.otf2, self.d, self.ew, self.shared, self.groups = otf2, d, ew, wins, groups
        self.wins: Dict[int, Any] = {}  # this rank's window number -> its definition
        self.ranks: Dict[int, List[int]] = {}  # and its communicator's members (world ranks)
        self.made_on: Dict[Any, int] = {}
        self.ops: Dict[int, Any] = {}  # request -> window of a request-based operation
        self.locks: Dict[Tuple[int, int], int] = {}
        self.next_id = 1 << 40  # matching ids of blocking operations (requests stay below)

    def group(self, ranks: List[int]) -> Any:
        key = tuple(ranks)
        if key not in self.groups:
            GroupType, Paradigm = self.otf2.definitions.GroupType, self.otf2.enums.Paradigm
            self.groups[key] = self.d.group(f"RMA group {len(self.groups)}", group_type=GroupType.COMM_GROUP,
                                            paradigm=Paradigm.MPI, members=list(ranks))
        return self.groups[key]

    def line(self, c: Any, t0: int, t1: int, comms: Dict[int, Tuple[Any, List[int]]]) -> None:
        E, a, name, ew = self.otf2.enums, c.a, c.name, self.ew
        if name == "win_create":
            comm = comms[a["comm"]][0]
            k = self.made_on.get(comm, 0)
            self.made_on[comm] = k + 1
            if (comm, k) not in self.shared:
                self.shared[(comm, k)] = self.d.rma_win(f"window {len(self.shared)}", comm)
            win = self.wins[a["win"]] = self.shared[(comm, k)]
            self.ranks[a["win"]] = comms[a["comm"]][1]
            ew.rma_collective_begin(t0)
            ew.rma_win_create(t0, win)
            ew.rma_collective_end(t1, E.CollectiveOp.CREATE_HANDLE, E.RmaSyncLevel.NONE, win, _UNDEF, 0, 0)
            return
        win = self.wins[a["win"]]
        target = a.get("target", _UNDEF)
        target = _UNDEF if target < 0 else target
        mid = a.get("req")
        if mid is None and "bytes" in a:
            mid = self.next_id
            self.next_id += 1
        if name in ("put", "rput"):
            ew.rma_put(t0, win, target, a["bytes"], mid)
        elif name in ("get", "rget"):
            ew.rma_get(t0, win, target, a["bytes"], mid)
        elif name in _ATOMIC:
            fetch = name not in ("accumulate", "raccumulate")
            sent = a["bytes"] * (2 if name == "compare_and_swap" else 1)
            ew.rma_atomic(t0, win, target, getattr(E.RmaAtomicType, _ATOMIC[name]), sent,
                          a["bytes"] if fetch else 0, mid)
        elif name == "win_free":
            ew.rma_collective_begin(t0)
            ew.rma_win_destroy(t0, win)
            ew.rma_collective_end(t1, E.CollectiveOp.DESTROY_HANDLE, E.RmaSyncLevel.NONE, win, _UNDEF, 0, 0)
            del self.wins[a["win"]]
        elif name == "win_fence":
            ew.rma_collective_begin(t0)
            ew.rma_collective_end(t1, E.CollectiveOp.BARRIER, E.RmaSyncLevel.PROCESS, win,
                                  _UNDEF, 0, 0)
        elif name in ("win_lock", "win_lock_all"):
            lock = self.locks[(a["win"], target)] = len(self.locks) + 1
            kind = E.LockType.EXCLUSIVE if a.get("exclusive") else E.LockType.SHARED
            ew.rma_acquire_lock(t1, win, target, lock, kind)
        elif name in ("win_unlock", "win_unlock_all"):
            ew.rma_release_lock(t1, win, target, self.locks.pop((a["win"], target), 0))
        elif name in ("win_flush", "win_flush_all", "win_sync"):
            ew.rma_sync(t1, win, target, E.RmaSyncType.MEMORY)
        else:  # post, start, complete, wait
            ranks = self.ranks[a["win"]]
            ew.rma_group_sync(t1, E.RmaSyncLevel.PROCESS, win, self.group([ranks[i] for i in c.lst]))
        if "bytes" in a and name not in ("win_create",):
            if "req" in a:
                self.ops[a["req"]] = win
            else:
                ew.rma_op_complete_blocking(t1, win, mid)

    def complete(self, req: int, t1: int) -> bool:
        """Writes the completion of request `req` if it is a request-based
        operation's."""
        win = self.ops.pop(req, None)
        if win is None:
            return False
        self.ew.rma_op_complete_non_blocking(t1, win, req)
        return True


def write(trace: "Trace", out_dir: str) -> str:
    """Writes `trace` (a loaded bgsim trace) as an OTF2 archive in
    `out_dir`; returns the anchor file."""
    otf2 = _package()
    GroupType, Paradigm = otf2.definitions.GroupType, otf2.enums.Paradigm
    op_enum = otf2.enums.CollectiveOp
    n = trace.nranks
    if os.path.exists(os.path.join(out_dir, "traces.otf2")):
        raise UsageError(f"{out_dir}: holds an OTF2 archive already (traces.otf2)")
    # (Checked before anything is written: no half archive.)
    for calls in trace.ranks:
        c = next((c for c in calls if c.name.startswith("intercomm_")), None)
        if c is not None:
            raise UsageError(f"{c.where}: {c.name}: bgsim does not write intercommunicators into OTF2; record with "
                             "--format bgsim to keep them")
        c = next((c for c in calls if "neighbor_" in c.name), None)
        if c is not None:
            raise UsageError(f"{c.where}: {c.name}: OTF2 has no neighbourhood collectives; record with "
                             "--format bgsim to keep them")
    with otf2.writer.open(out_dir, timer_resolution=1_000_000_000) as w:
        d = w.definitions
        node = d.system_tree_node("bgsim")
        locs = [d.location("Master thread", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(n)]
        d.group("MPI locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group("MPI_COMM_WORLD", group_type=GroupType.COMM_GROUP,
                                                        paradigm=Paradigm.MPI, members=list(range(n))))
        self_comm = d.comm("MPI_COMM_SELF", group=d.group("MPI_COMM_SELF", group_type=GroupType.COMM_SELF,
                                                           paradigm=Paradigm.MPI, members=[]))
        regions: Dict[str, Any] = {}

        def region(name: str) -> Any:
            if name not in regions:
                regions[name] = d.region(name, paradigm=Paradigm.MPI)
            return regions[name]

        # Global communicators: one per (parent, the k-th constructor on it, members).
        shared: Dict[Tuple[Any, int, Tuple[int, ...]], Any] = {}
        wins: Dict[Tuple[Any, int], Any] = {}  # windows: (communicator, the k-th made on it)
        groups: Dict[Tuple[int, ...], Any] = {}
        for r in range(n):
            ew = w.event_writer_from_location(locs[r])
            rma = _RmaWriter(otf2, d, ew, wins, groups)
            comms: Dict[int, Tuple[Any, List[int]]] = {0: (world, list(range(n))), 1: (self_comm, [r])}
            made_on: Dict[Any, int] = {}
            reqs: Dict[int, Any] = {}
            inits: Dict[int, Any] = {}
            msgs: Dict[int, Any] = {}  # matched messages taken, not yet received
            last = 0

            def at(t: float) -> int:
                nonlocal last
                last = max(last, int(round(t * 1e9)))
                return last

            def collective(c: Any) -> Tuple[Any, Any, int, int, int]:
                """A collective line's (operation, communicator, root, bytes
                sent, bytes received) as Score-P counts them."""
                ranks = comms[c.a["comm"]][1]
                me = ranks.index(r) if r in ranks else 0
                sent, recv = _bytes(c, len(ranks), me)
                op = next(k for k, v in _COLL.items() if v == blocking_collective(c.name))
                return getattr(op_enum, op), comms[c.a["comm"]][0], c.a.get("root", 0), sent, recv

            for c in trace.ranks[r]:
                a = c.a
                t0 = at(c.t0)
                reg = region(_region_name(c.name))
                ew.enter(t0, reg)
                comm = comms.get(a.get("comm", 0), (world, []))[0]
                name = c.name
                if name in ("comm_dup", "comm_idup", "comm_split", "comm_group"):
                    parent, pmembers = comms[a["parent"]]
                    k = made_on.get(parent, 0)
                    made_on[parent] = k + 1
                    if a["new"] >= 0:
                        ranks = list(pmembers) if name in ("comm_dup", "comm_idup") else [pmembers[i] for i in c.lst] \
                            if name == "comm_group" else list(c.lst)
                        key = (parent, k, tuple(ranks))
                        if key not in shared:
                            shared[key] = d.comm(f"comm {len(shared) + 2}", parent=parent,
                                                 group=d.group(f"comm {len(shared) + 2}",
                                                               group_type=GroupType.COMM_GROUP,
                                                               paradigm=Paradigm.MPI, members=ranks))
                        comms[a["new"]] = (shared[key], ranks)
                elif name == "comm_free":
                    comms.pop(a["comm"], None)
                elif name in ("send", "ssend", "bsend", "rsend") and a["dest"] >= 0:
                    ew.mpi_send(t0, a["dest"], comm, a["tag"], a["bytes"])
                elif name in ("isend", "issend", "ibsend", "irsend"):
                    ew.mpi_isend(t0, a["dest"], comm, a["tag"], a["bytes"], a["req"])
                    reqs[a["req"]] = c
                elif name == "irecv":
                    ew.mpi_irecv_request(t0, a["req"])
                    reqs[a["req"]] = c
                elif name.endswith("_init"):
                    inits[a["req"]] = c
                elif name in ("start", "startall"):
                    for req, (peer, tag) in (c.starts or {}).items():
                        init = inits[req]
                        started = type(c)(c.t0, c.t1, "irecv" if init.name == "recv_init" else "isend",
                                          {**init.a, ("src" if init.name == "recv_init" else "dest"): peer,
                                           "tag": tag})
                        if c.cancelled is not None and req in c.cancelled:
                            started.cancelled = {req}
                        on = comms[init.a["comm"]][0]
                        if init.name == "recv_init":
                            ew.mpi_irecv_request(t0, req)
                        else:
                            ew.mpi_isend(t0, peer, on, tag, init.a["bytes"], req)
                        reqs[req] = started
                elif name == "recv" and a["src"] >= 0:
                    ew.mpi_recv(at(c.t1), a["src"], comm, a["tag"], a["bytes"])
                elif name == "sendrecv":
                    if a["dest"] >= 0:
                        ew.mpi_send(t0, a["dest"], comm, a["stag"], a["sbytes"])
                    if a["src"] >= 0:
                        ew.mpi_recv(at(c.t1), a["src"], comm, a["rtag"], a["rbytes"])
                elif name == "mprobe":
                    msgs[a["msg"]] = c
                elif name == "mrecv":
                    m = msgs.pop(a["msg"]).a
                    if m["src"] >= 0:
                        ew.mpi_recv(at(c.t1), m["src"], comms[m["comm"]][0], m["tag"], m["bytes"])
                elif name == "imrecv":
                    ew.mpi_irecv_request(t0, a["req"])
                    m = msgs.pop(a["msg"])
                    reqs[a["req"]] = type(c)(c.t0, c.t1, "irecv", {**m.a, "req": a["req"]})
                elif name == "probe" and a["src"] >= 0:
                    ew.mpi_probe(at(c.t1), a["src"], comm, a["tag"], 2**64 - 1)  # no message id: MPI_Probe
                elif name in ("wait", "test", "waitany", "testany", "waitall", "testall", "waitsome", "testsome"):
                    t1 = at(c.t1)
                    for req in ([a["req"]] if "req" in a else c.lst):
                        made = reqs.pop(req, None)
                        if made is None:  # (cancelled where it started)
                            continue
                        if rma.complete(req, t1):
                            continue
                        if blocking_collective(made.name) is not None:
                            ew.non_blocking_collective_complete(t1, *collective(made), req)
                            continue
                        if made.cancelled is not None and req in made.cancelled:
                            ew.mpi_request_cancelled(t1, req)
                        elif made.name == "irecv":
                            on = comms.get(made.a["comm"], (world, []))[0]
                            ew.mpi_irecv(t1, made.a["src"], on, made.a["tag"], made.a["bytes"], req)
                        else:
                            ew.mpi_isend_complete(t1, req)
                elif name in RMA:
                    rma.line(c, t0, at(c.t1), comms)
                    if "req" in a:
                        reqs[a["req"]] = c
                elif blocking_collective(name) is not None:
                    if "req" in a:  # nonblocking: its event comes with its completion
                        ew.non_blocking_collective_request(t0, a["req"])
                        reqs[a["req"]] = c
                    else:
                        ew.mpi_collective_begin(t0)
                        ew.mpi_collective_end(at(c.t1), *collective(c))
                ew.leave(at(c.t1), reg)
    return os.path.join(out_dir, "traces.otf2")
