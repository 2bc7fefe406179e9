"""Collectives on intercommunicators (``Intercomm.Bcast`` ... ``Reduce_scatter``).

Every one moves data from one group to the other, as MPI defines them: a
rooted one between the root (``root=MPI.ROOT``; the rest of its group
passes ``MPI.PROC_NULL``) and every rank of the other group (which passes
the root's rank in the remote group); an all-to-all kind between every
rank and every rank of the other group:

- Bcast: the root sends to the remote group's rank 0, which broadcasts in
  its group (the local group's own communicator), as MPICH does;
- Reduce: the remote group reduces in its group to its rank 0, which sends
  the result to the root, as MPICH does;
- Allreduce and Reduce_scatter(_block): each group reduces to its rank 0,
  the two exchange their results, each broadcasts (or scatters) in its
  group what came from the other, as MPICH does;
- Gather(v), Scatter(v), Allgather(v), Alltoall(v,w): direct messages
  between the ranks of the two groups (MPICH gathers short messages at the
  remote group's rank 0 first; bgsim does not).

Messages go on the intercommunicator's collective context with a tag of
their own per call. Scan and Exscan are not defined on intercommunicators
(MPI_ERR_COMM, as before).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as _np

from .. import _core
from .. import runtime as _rt
from ..errors import UsageError as _ValueError
from . import nbc as _nbc
from .buffers import _dump, _load, _msg, _vmsg
from .collectives import _part_bytes, _part_size, _place_blocks, _wviews
from .constants import IN_PLACE, PROC_NULL, ROOT, TAG_UB
from .errors import ERR_ARG, ERR_ROOT, ERR_TRUNCATE, Exception
from .ops import SUM, Op
from .requests import _wait_all


def _size_or_none(st: tuple, d: Any) -> Any:
    return d if d or not st[2] else st[2]


class InterCollectives:
    """The collectives of ``Intercomm`` (a mixin, ahead of ``Comm``'s)."""

    # -- the exchange every collective is made of --

    def _xchg(self, what: str, sends: Dict[int, Any], recvs: Sequence[int]) -> Dict[int, Any]:
        """Sends sends[r] (bytes, or a size without content) to remote rank
        r and receives from each remote rank of `recvs`, all at once on the
        collective context with this call's tag; returns what came, by
        remote rank."""
        ctx, me = self._me()
        if me == 0 and self._group._ranks[0] < self._remote._ranks[0]:  # once a call
            op = ("i" if _nbc.nonblocking() else "") + what.lower()
            stats = ctx.runtime.coll_stats.setdefault(op, {})
            stats["intercommunicator"] = stats.get("intercommunicator", 0) + 1
        seqs = ctx.state.setdefault("inter_coll_seq", {})
        n = seqs.get(self._context, 0)
        seqs[self._context] = n + 1
        tag = 1 + n % (TAG_UB - 1)  # (0 is the leaders' exchange, `_leaders`)
        got = {r: self._irecv_into(_core.MAX_MESSAGE_BYTES, r, tag, _size_or_none, ctx_off=1, ctx=ctx) for r in recvs}
        sent = [self._isend_bytes(d, r, tag, 0, what, ctx_off=1) for r, d in sends.items()]
        _wait_all(list(got.values()) + sent, f"MPI.Intercomm.{what}()")
        return {r: q._obj for r, q in got.items()}

    def _role(self, root: Any, what: str) -> str:
        """'root', 'idle' (the root's group) or 'leaf' (the other group)."""
        if root == ROOT:
            return "root"
        if root == PROC_NULL:
            return "idle"
        if isinstance(root, (int, _np.integer)) and 0 <= root < len(self._remote._ranks):
            return "leaf"
        raise Exception(ERR_ROOT, f"{what}: root {root} on an intercommunicator: MPI.ROOT at the root, "
                                  f"MPI.PROC_NULL in its group, the root's rank (0 to {len(self._remote._ranks) - 1}) "
                                  "in the other group")

    def _rsize(self) -> int:
        return len(self._remote._ranks)

    @staticmethod
    def _bytes(spec: Any) -> Any:
        m = _msg(spec, recv=False)
        return m.nbytes if _rt.size_only else m.mv.tobytes()

    @staticmethod
    def _into(spec: Any, data: Any, who: str) -> None:
        if _rt.size_only or data is None or data.__class__ is int:
            return
        m = _msg(spec, recv=True)
        if len(data) > m.nbytes:
            raise Exception(ERR_TRUNCATE, f"{who} sent {len(data)} bytes for a buffer of {m.nbytes}")
        m.mv[:len(data)] = data

    # -- rooted --

    def Bcast(self, buf: Any, root: int = 0) -> None:
        role = self._role(root, "Bcast")
        if role == "root":
            self._xchg("Bcast", {0: self._bytes(buf)}, ())
        elif role == "leaf":
            if self._local.Get_rank() == 0:
                self._into(buf, self._xchg("Bcast", {}, (root,))[root], f"root {root}")
            else:
                self._xchg("Bcast", {}, ())
            self._local.Bcast(buf, 0)
        else:
            self._xchg("Bcast", {}, ())

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        role = self._role(root, "bcast")
        if role == "root":
            self._xchg("bcast", {0: _dump(obj)}, ())
            return None
        if role == "leaf":
            got = self._xchg("bcast", {}, (root,) if self._local.Get_rank() == 0 else ())
            return self._local.bcast(_load(got[root]) if got else None, 0)
        self._xchg("bcast", {}, ())
        return None

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        role = self._role(root, "Gather")
        n = self._rsize()
        if role == "root":
            got = self._xchg("Gather", {}, range(n))
            if not _rt.size_only:
                _place_blocks(_vmsg(recvbuf, n, recv=True), [got[r] for r in range(n)], "remote rank")
        elif role == "leaf":
            self._xchg("Gather", {root: self._bytes(sendbuf)}, ())
        else:
            self._xchg("Gather", {}, ())

    Gatherv = Gather

    def gather(self, sendobj: Any, root: int = 0) -> Optional[List[Any]]:
        role = self._role(root, "gather")
        if role == "root":
            got = self._xchg("gather", {}, range(self._rsize()))
            return [_load(got[r]) for r in range(self._rsize())]
        self._xchg("gather", {root: _dump(sendobj)} if role == "leaf" else {}, ())
        return None

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        role = self._role(root, "Scatter")
        n = self._rsize()
        if role == "root":
            smv, sdt, counts, displs = _vmsg(sendbuf, n, recv=False)
            part = _part_size if _rt.size_only else _part_bytes
            self._xchg("Scatter", {r: part(smv, sdt, counts[r], displs[r]) for r in range(n)}, ())
        elif role == "leaf":
            self._into(recvbuf, self._xchg("Scatter", {}, (root,))[root], f"root {root}")
        else:
            self._xchg("Scatter", {}, ())

    Scatterv = Scatter

    def scatter(self, sendobj: Optional[Sequence[Any]] = None, root: int = 0) -> Any:
        role = self._role(root, "scatter")
        if role == "root":
            n = self._rsize()
            if sendobj is None or len(sendobj) != n:
                raise _ValueError(f"scatter: the root needs a sequence of {n} items (the remote group's size), "
                                  f"got {None if sendobj is None else len(sendobj)}")
            self._xchg("scatter", {r: _dump(o) for r, o in enumerate(sendobj)}, ())
            return None
        if role == "leaf":
            return _load(self._xchg("scatter", {}, (root,))[root])
        self._xchg("scatter", {}, ())
        return None

    # -- every rank with every remote rank --

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        n = self._rsize()
        mine = self._bytes(sendbuf)
        got = self._xchg("Allgather", {r: mine for r in range(n)}, range(n))
        if not _rt.size_only:
            _place_blocks(_vmsg(recvbuf, n, recv=True), [got[r] for r in range(n)], "remote rank")

    Allgatherv = Allgather

    def allgather(self, sendobj: Any) -> List[Any]:
        n = self._rsize()
        mine = _dump(sendobj)
        got = self._xchg("allgather", {r: mine for r in range(n)}, range(n))
        return [_load(got[r]) for r in range(n)]

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        n = self._rsize()
        smv, sdt, scounts, sdispls = _vmsg(sendbuf, n, recv=False)
        part = _part_size if _rt.size_only else _part_bytes
        got = self._xchg("Alltoall", {r: part(smv, sdt, scounts[r], sdispls[r]) for r in range(n)}, range(n))
        if not _rt.size_only:
            _place_blocks(_vmsg(recvbuf, n, recv=True), [got[r] for r in range(n)], "remote rank")

    Alltoallv = Alltoall

    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        n = self._rsize()
        sviews = _wviews(sendbuf, n, False)
        rviews = _wviews(recvbuf, n, True)
        got = self._xchg("Alltoallw", {r: len(v) if _rt.size_only else v.tobytes() for r, v in enumerate(sviews)},
                         range(n))
        if _rt.size_only:
            return
        for r in range(n):
            p = got[r]
            if len(p) > len(rviews[r]):
                raise Exception(ERR_TRUNCATE, f"remote rank {r} sent {len(p)} bytes for a slot of {len(rviews[r])} bytes")
            if p:
                rviews[r][:len(p)] = p

    def alltoall(self, sendobj: Sequence[Any]) -> List[Any]:
        n = self._rsize()
        if sendobj is None or len(sendobj) != n:
            raise _ValueError(f"alltoall: expecting a sequence of {n} items (the remote group's size), "
                              f"got {None if sendobj is None else len(sendobj)}")
        got = self._xchg("alltoall", {r: _dump(o) for r, o in enumerate(sendobj)}, range(n))
        return [_load(got[r]) for r in range(n)]

    # -- reductions: each group reduces in itself, then to the other --

    def _reduced(self, sendbuf: Any, op: Op) -> Any:
        """The local group's reduction of `sendbuf` at its rank 0 (a bytes
        object there, or its size; None elsewhere)."""
        if sendbuf is IN_PLACE:
            raise Exception(ERR_ARG, "MPI.IN_PLACE in a reduction on an intercommunicator")
        s = _msg(sendbuf, recv=False)
        leader = self._local.Get_rank() == 0
        tmp = bytearray(s.nbytes) if leader else None
        self._local.Reduce(sendbuf, [tmp, s.count, s.dt] if leader else None, op, 0)
        if not leader:
            return None
        return s.nbytes if _rt.size_only else bytes(tmp)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        role = self._role(root, "Reduce")
        if role == "root":
            self._into(recvbuf, self._xchg("Reduce", {}, (0,))[0], "the remote group")
        elif role == "leaf":
            mine = self._reduced(sendbuf, op)
            self._xchg("Reduce", {root: mine} if mine is not None else {}, ())
        else:
            self._xchg("Reduce", {}, ())

    def reduce(self, sendobj: Any, op: Op = SUM, root: int = 0) -> Any:
        role = self._role(root, "reduce")
        if role == "root":
            return _load(self._xchg("reduce", {}, (0,))[0])
        if role == "leaf":
            mine = self._local.reduce(sendobj, op, 0)
            self._xchg("reduce", {root: _dump(mine)} if self._local.Get_rank() == 0 else {}, ())
        else:
            self._xchg("reduce", {}, ())
        return None

    def _swap(self, what: str, mine: Any) -> Any:
        """The local rank 0's result for the remote rank 0's (None
        elsewhere)."""
        if self._local.Get_rank() == 0:
            return self._xchg(what, {0: mine}, (0,))[0]
        self._xchg(what, {}, ())
        return None

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        theirs = self._swap("Allreduce", self._reduced(sendbuf, op))
        if self._local.Get_rank() == 0:
            self._into(recvbuf, theirs, "the remote group")
        self._local.Bcast(recvbuf, 0)

    def allreduce(self, sendobj: Any, op: Op = SUM) -> Any:
        mine = self._local.reduce(sendobj, op, 0)
        theirs = self._swap("allreduce", _dump(mine) if self._local.Get_rank() == 0 else None)
        return self._local.bcast(_load(theirs) if theirs is not None else None, 0)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        """Each group's reduction of its send buffers (the remote group's
        size times the block) is scattered over the other group in blocks."""
        r = _msg(recvbuf, recv=True)
        self._reduce_scatter(sendbuf, recvbuf, op, [r.count] * self._local.Get_size(), "Reduce_scatter_block")

    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Optional[Sequence[int]] = None,
                       op: Op = SUM) -> None:
        """Each group's reduction (as long as the other group's receive
        counts add up to) is scattered over the other group by its counts."""
        counts = list(recvcounts) if recvcounts is not None else self._local.allgather(_msg(recvbuf, recv=True).count)
        if len(counts) != self._local.Get_size():
            raise _ValueError(f"Reduce_scatter: {len(counts)} receive counts for a group of {self._local.Get_size()} ranks")
        self._reduce_scatter(sendbuf, recvbuf, op, counts, "Reduce_scatter")

    def _reduce_scatter(self, sendbuf: Any, recvbuf: Any, op: Op, counts: List[int], what: str) -> None:
        theirs = self._swap(what, self._reduced(sendbuf, op))
        r = _msg(recvbuf, recv=True)
        whole = None
        if self._local.Get_rank() == 0:
            whole = bytearray(sum(counts) * r.dt.size)
            if theirs is not None and theirs.__class__ is not int:
                if len(theirs) != len(whole):
                    raise _ValueError(f"{what}: the remote group reduced {len(theirs)} bytes, this group's counts "
                                      f"{counts} take {len(whole)}")
                whole[:] = theirs
        self._local.Scatterv([whole, counts, r.dt] if whole is not None else None, recvbuf, 0)
