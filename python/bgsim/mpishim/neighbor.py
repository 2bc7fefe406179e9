"""Neighbourhood collectives (MPI_Neighbor_allgather(v), MPI_Neighbor_alltoall(v,w),
their nonblocking and persistent forms, and mpi4py's object forms) on
communicators with a topology.

Each rank receives one block from each of its in-neighbours and sends one
block to each of its out-neighbours (`Topocomm.inedges` / `outedges`), all
posted at once on the communicator's collective context, then waits for
them: what MPICH does. A neighbour that is PROC_NULL (off the edge of a
non-periodic Cartesian dimension) moves nothing and leaves its block of the
receive buffer as it was. On a Cartesian grid the block a rank sends
towards +1 in a dimension is the one its neighbour there receives from -1
(each direction is told apart by its own sub-tag, so a periodic dimension
of size 1 or 2, where both neighbours are one rank, still pairs them so);
on a graph, several edges between one pair are matched in their order.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from . import coll as _coll
from . import nbc as _nbc
from .. import runtime as _rt
from ..errors import UsageError as _ValueError
from .buffers import _dump, _load, _msg, _vmsg
from .collectives import _part_bytes, _part_size, _place_blocks, _wviews
from .constants import PROC_NULL
from .errors import ERR_TRUNCATE, Exception


def exchange(comm: Any, op: str, parts: Sequence[Any], edges: Optional[tuple] = None) -> List[Any]:
    """Sends parts[k] (bytes, or a size without content) to out-neighbour k
    and receives from every in-neighbour: what came from in-neighbour k
    (None from PROC_NULL). `edges`: (in-neighbours, out-neighbours) of a
    communicator without a topology (a trace's replay); default: the
    communicator's own."""
    ins, outs = comm._inout() if edges is None else edges
    c = _coll.Call(comm, op)
    cart = edges is None and comm._cart
    if c.me == 0:
        stats = c.rt.coll_stats.setdefault(f"i{op}" if c.nonblocking else op, {})
        stats["direct"] = stats.get("direct", 0) + 1
    # On a grid in-edge k (from -1 or +1 in a dimension) takes what that
    # neighbour sent on its out-edge towards this rank (k ^ 1).
    recvs = [(k, c.irecv(src, (k ^ 1) if cart else None)) for k, src in enumerate(ins) if src != PROC_NULL]
    sends = [c.isend(parts[k], dst, sub=k if cart else None) for k, dst in enumerate(outs) if dst != PROC_NULL]
    c.wait([r for _, r in recvs] + sends)
    got: List[Any] = [None] * len(ins)
    for k, r in recvs:
        got[k] = r._obj
    return got


def _blocks(comm: Any, op: str, parts: Sequence[Any], recvbuf: Any) -> None:
    """An exchange whose blocks land in a vector receive buffer."""
    indeg = len(comm._inout()[0])
    if _rt.size_only:
        exchange(comm, op, parts)
        return
    view = _vmsg(recvbuf, indeg, recv=True)
    _place_blocks(view, exchange(comm, op, parts), "in-neighbour")


class NeighborCalls:
    """The neighbourhood collectives of ``Topocomm`` (a mixin)."""

    _cart = False  # Cartesian: directions told apart (see the module)

    def Neighbor_allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        m = _msg(sendbuf, recv=False)
        mine = m.nbytes if _rt.size_only else m.mv.tobytes()
        _blocks(self, "neighbor_allgather", [mine] * len(self._inout()[1]), recvbuf)

    def Neighbor_allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        self.Neighbor_allgather(sendbuf, recvbuf)

    def Neighbor_alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        outdeg = len(self._inout()[1])
        smv, sdt, counts, displs = _vmsg(sendbuf, outdeg, recv=False)
        part = _part_size if _rt.size_only else _part_bytes
        _blocks(self, "neighbor_alltoall", [part(smv, sdt, counts[k], displs[k]) for k in range(outdeg)], recvbuf)

    def Neighbor_alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        self.Neighbor_alltoall(sendbuf, recvbuf)

    def Neighbor_alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        """sendbuf / recvbuf: [buf, (counts, displs), datatypes] with one
        datatype per neighbour and displacements in bytes."""
        ins, outs = self._inout()
        sviews = _wviews(sendbuf, len(outs), False, "Neighbor_alltoallw")
        rviews = _wviews(recvbuf, len(ins), True, "Neighbor_alltoallw")
        got = exchange(self, "neighbor_alltoall", [len(v) if _rt.size_only else v.tobytes() for v in sviews])
        if _rt.size_only:
            return
        for k, p in enumerate(got):
            if p is None or p.__class__ is int:
                continue
            if len(p) > len(rviews[k]):
                raise Exception(ERR_TRUNCATE, f"in-neighbour {k} sent {len(p)} bytes for a slot of {len(rviews[k])} bytes")
            if p:
                rviews[k][:len(p)] = p

    def neighbor_allgather(self, sendobj: Any) -> List[Any]:
        data = _dump(sendobj)
        return [None if d is None else _load(d) for d in
                exchange(self, "neighbor_allgather", [data] * len(self._inout()[1]))]

    def neighbor_alltoall(self, sendobj: Optional[Sequence[Any]]) -> List[Any]:
        outdeg = len(self._inout()[1])
        if sendobj is None or len(sendobj) != outdeg:
            raise _ValueError(f"neighbor_alltoall: expecting a sequence of {outdeg} items (one per out-neighbour), "
                              f"got {None if sendobj is None else len(sendobj)}")
        return [None if d is None else _load(d) for d in
                exchange(self, "neighbor_alltoall", [_dump(o) for o in sendobj])]


def _forms() -> None:
    for name in ("Neighbor_allgather", "Neighbor_allgatherv", "Neighbor_alltoall", "Neighbor_alltoallv",
                 "Neighbor_alltoallw"):
        for fname, fn in (_nbc.nonblocking_form(name), _nbc.persistent_form(name)):
            setattr(NeighborCalls, fname, fn)


_forms()
