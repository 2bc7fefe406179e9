"""The collective operations on buffers and objects, over the algorithms of ``bgsim.mpishim.coll``."""

from __future__ import annotations

import threading as _threading
from typing import Any, List, Optional, Sequence

import numpy as _np

from . import coll as _coll
from . import nbc as _nbc
from .. import runtime as _rt
from .coll.base import _size
from ..errors import UsageError as _ValueError
from .buffers import Same as _Same
from .buffers import _array, _bytes_view, _datatype_view, _dump, _load, _msg, _vmsg, regular
from .constants import BOTTOM, IN_PLACE
from .datatypes import INT, Datatype, _as_datatype
from .errors import ERR_TRUNCATE, Exception
from .ops import BAND, SUM, Op

#: A communicator (``mpishim.comm.Comm``; not imported here: comm imports
#: this module).
Comm = Any


def _lock(comm: Comm, name: str) -> None:
    """The lock a pickle-based collective takes in mpi4py (one per
    communicator and operation, in `MPI._comm_lock_table`); ranks are
    greenlets here, so it is only recorded."""
    table = _comm_lock_table(comm)
    if name not in table:
        table[name] = _threading.Lock()


def _comm_lock_table(comm: Comm) -> dict:
    """mpi4py's per-communicator table of collective locks."""
    table = comm.__dict__.get("_lock_table")
    if table is None:
        table = comm.__dict__["_lock_table"] = {}
    return table


def _byte_view(x: Any) -> memoryview:
    """A C-contiguous buffer as one dimension of bytes."""
    mv = x if x.__class__ is memoryview else memoryview(x)
    return mv if mv.format == "B" and mv.ndim == 1 else mv.cast("B")


def _barrier(comm: Comm) -> None:
    _coll.run("barrier", _coll.Call(comm, "barrier"), nbytes=0)


def _bcast_bytes(c: "_coll.Call", data: Optional[bytes], root: int, nbytes: int) -> bytes:
    return _coll.run("bcast", c, data, root, nbytes, nbytes=nbytes)


def _allgather_bytes(c: "_coll.Call", data: bytes) -> Sequence[Any]:
    return _coll.run("allgather", c, data, nbytes=len(data))


def _obj_reducer(op: Op) -> "_coll.Reducer":
    return _coll.Reducer(op, _dump, _load, op.is_commutative, array=False)


def _array_reducer(op: Op, dt: Datatype) -> "_coll.Reducer":
    return _coll.Reducer(lambda a, b: op._arrays(a, b, dt), lambda a: a.tobytes(), lambda b: _as_array(b, dt),
                         op.is_commutative, array=True, op=op, floating=dt.np.kind == "f")


def _scan(comm: Comm, value: Any, red: "_coll.Reducer", exclusive: bool) -> Any:
    """Linear chain: rank i gets the prefix of ranks 0..i-1 from rank i-1."""
    c = _coll.Call(comm, "exscan" if exclusive else "scan")
    if c.me == 0:
        stats = c.rt.coll_stats.setdefault(c.op, {})
        stats["linear"] = stats.get("linear", 0) + 1
    prefix = None
    if c.me > 0:
        r = c.irecv(c.me - 1)
        c.wait([r])
        prefix = red.load(r._obj)
    mine = value if prefix is None else c.combine(red, prefix, value)
    if c.me + 1 < c.n:
        c.wait([c.isend(red.dump(mine), c.me + 1)])
    return prefix if exclusive else mine


def _as_array(data: bytes, dt: Datatype) -> "_np.ndarray":
    """A read-only array over `data` (no copy: the reductions make new
    arrays, and the one that writes, Rabenseifner's, copies first)."""
    return _np.frombuffer(data, dtype=dt.np)


#: The mask of free context ids MPICH allreduces when it makes a
#: communicator (64 words; the content is not needed, the runtime hands out
#: the ids).
_CONTEXT_MASK = _np.full(64, -1, dtype="i4")
_CONTEXT_MASK.setflags(write=False)


def _context_agreement(comm: Comm, what: str) -> None:
    c = _coll.Call(comm, what)
    _coll.run("allreduce", c, _CONTEXT_MASK, _array_reducer(BAND, INT), nbytes=_CONTEXT_MASK.nbytes,
              elements=len(_CONTEXT_MASK), label=f"{what} (allreduce)")


def _check_reduction(s: Any, recvbuf: Any, call: str) -> None:
    """mpi4py's local check of a reduction's two messages (where the
    receive buffer counts): the same datatype and count."""
    r = _msg(recvbuf, recv=True)
    if r.dt != s.dt:
        raise _ValueError(f"{call}: mismatch in send and receive MPI datatypes ({s.dt.name} and {r.dt.name})")
    if r.count != s.count:
        raise _ValueError(f"{call}: mismatch in send count {s.count} and receive count {r.count}")


def _reduce_buffers(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, root: Optional[int]) -> None:
    kind = "allreduce" if root is None else "reduce"
    if sendbuf is not IN_PLACE and recvbuf is not None and (root is None or comm.Get_rank() == root):
        _check_reduction(_msg(sendbuf, recv=False), recvbuf, kind.capitalize())
    if _rt.size_only:
        m = _msg(recvbuf if sendbuf is IN_PLACE else sendbuf, recv=sendbuf is IN_PLACE)
        c = _coll.Call(comm, kind, root, check=(op.name, m.nbytes))
        v = _coll.Sized(m.count, m.dt.size)
        red = _coll.sized_reducer(m.dt.size, floating=m.dt.np.kind == "f")
        alu = _coll.tree_ok(op, m.dt.np)
        if root is None:
            _coll.run("allreduce", c, v, red, nbytes=m.nbytes, alu=alu, elements=m.count)
        else:
            _coll.run("reduce", c, v, red, root, nbytes=m.nbytes, alu=alu, elements=m.count)
        return
    if sendbuf is IN_PLACE:
        m = _msg(recvbuf, recv=True)
        data, dt = m.mv.tobytes(), m.dt
    else:
        s = _msg(sendbuf, recv=False)
        data, dt = s.mv.tobytes(), s.dt
    c = _coll.Call(comm, kind, root, check=(op.name, len(data)))
    mine = _as_array(data, dt)
    alu = _coll.tree_ok(op, dt.np)
    red = _array_reducer(op, dt)
    if root is None:
        res = _coll.run("allreduce", c, mine, red, nbytes=len(data), alu=alu, elements=len(mine))
    else:
        res = _coll.run("reduce", c, mine, red, root, nbytes=len(data), alu=alu, elements=len(mine))
    if res is not None:
        m = _msg(recvbuf, recv=True)
        if m.nbytes < res.nbytes:
            raise Exception(ERR_TRUNCATE, f"the receive buffer holds {m.nbytes} bytes, the result has {res.nbytes}")
        # Straight from the result's memory into the buffer (no bytes copy).
        m.mv[: res.nbytes] = memoryview(_np.ascontiguousarray(res).reshape(-1).view(_np.uint8)) \
            if isinstance(m.mv, memoryview) else res.tobytes()


def _reduce_scatter(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, counts: Optional[Sequence[int]],
                    block: bool = False) -> None:
    n = comm.Get_size()
    src = recvbuf if sendbuf is IN_PLACE else sendbuf
    s = _msg(src, recv=False)
    if counts is not None and not block:
        # mpi4py's local checks: the counts add up to what is sent, and
        # this rank's count is what its receive buffer holds.
        counts = [int(k) for k in counts]
        if len(counts) != n:
            raise _ValueError(f"Reduce_scatter: {len(counts)} receive counts for {n} ranks")
        if sum(counts) != s.count:
            raise _ValueError(f"Reduce_scatter: the receive counts {counts} add up to {sum(counts)}, "
                              f"the send count is {s.count}")
        if sendbuf is not IN_PLACE:
            r = _msg(recvbuf, recv=True)
            if r.dt != s.dt:
                raise _ValueError(f"Reduce_scatter: mismatch in send and receive MPI datatypes ({s.dt.name} and {r.dt.name})")
            if r.count != counts[comm.Get_rank()]:
                raise _ValueError(f"Reduce_scatter: mismatch in receive count {r.count} and this rank's count "
                                  f"{counts[comm.Get_rank()]}")
    full = bytearray(s.nbytes)
    if s.dt._t.contiguous:
        _reduce_buffers(comm, [bytearray(s.mv.tobytes()), s.count, s.dt], [full, s.count, s.dt], op, 0)
    else:  # the packed stream of a derived datatype: arrays of its basic element
        _reduce_buffers(comm, _np.frombuffer(bytearray(s.mv.tobytes()), dtype=s.dt.np),
                        _np.frombuffer(full, dtype=s.dt.np), op, 0)
    if counts is None and not block:
        # Each rank's share is what its receive buffer holds (mpi4py's rule).
        mine = s.count // n if sendbuf is IN_PLACE else _msg(recvbuf, recv=True).count
        counts = comm.allgather(mine)
    c = _coll.Call(comm, "scatter", 0)
    if counts is None:
        counts = [s.count // n] * n
    if sum(counts) > s.count:
        raise _ValueError(f"Reduce_scatter: counts {list(counts)} add up to more than the {s.count} elements sent")
    parts, off = [], 0
    for k in counts:
        parts.append(k * s.dt.size if _rt.size_only else bytes(full[off * s.dt.size:(off + k) * s.dt.size]))
        off += k
    mine = _coll.run("scatter", c, parts if c.me == 0 else None, 0, nbytes=0)
    if not _rt.size_only:
        m = _msg(recvbuf, recv=True)
        m.mv[: len(mine)] = mine


def _scan_buffers(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, exclusive: bool) -> None:
    src = recvbuf if sendbuf is IN_PLACE else sendbuf
    s = _msg(src, recv=False)
    if _rt.size_only:
        _scan(comm, _coll.Sized(s.count, s.dt.size), _coll.sized_reducer(s.dt.size), exclusive)
        return
    out = _scan(comm, _as_array(s.mv.tobytes(), s.dt), _array_reducer(op, s.dt), exclusive)
    if out is not None:
        m = _msg(recvbuf, recv=True)
        m.mv[: out.nbytes] = out.tobytes()


def _part_bytes(mv: memoryview, dt: Datatype, count: int, displ: int) -> bytes:
    return mv[displ * dt.size:(displ + count) * dt.size].tobytes()


def _part_size(mv: memoryview, dt: Datatype, count: int, displ: int) -> int:
    return count * dt.size


def _buffer_collective(comm: Comm, kind: str, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
    """Gather(v) / Scatter(v) / Allgather(v) / Alltoall(v) on buffers. With
    size-only buffers the same algorithms run on the blocks' sizes and
    receive buffers are left as they are."""
    c = _coll.Call(comm, "alltoall" if kind == "alltoallv" else kind, root if kind in ("gather", "scatter") else None)
    n, me = c.n, c.me
    sized = _rt.size_only
    part = _part_size if sized else _part_bytes

    def own() -> Any:
        m = _msg(sendbuf, recv=False)
        return m.nbytes if sized else m.mv.tobytes()

    if kind == "gather":
        if me == root:
            rmv, rdt, counts, displs = _vmsg(recvbuf, n, recv=True)
            mine = part(rmv, rdt, counts[me], displs[me]) if sendbuf is IN_PLACE else own()
        else:
            mine = own()
        parts = _coll.run("gather", c, mine, root, nbytes=_size(mine))
        if me == root and not sized:
            for i, p in enumerate(parts):
                _place(rmv, rdt, counts[i], displs[i], p, f"rank {i}")
    elif kind == "scatter":
        parts = None
        if me == root:
            smv, sdt, counts, displs = _vmsg(sendbuf, n, recv=False)
            parts = [part(smv, sdt, counts[i], displs[i]) for i in range(n)]
        mine = _coll.run("scatter", c, parts, root, nbytes=0)
        # The root may leave its own block where it is (IN_PLACE) or drop it (None).
        if not sized and not (me == root and (recvbuf is IN_PLACE or recvbuf is None)):
            m = _msg(recvbuf, recv=True)
            if len(mine) > m.nbytes:
                raise Exception(ERR_TRUNCATE, f"Scatter: {len(mine)} bytes for a buffer of {m.nbytes}")
            m.mv[: len(mine)] = mine
    elif kind == "allgather":
        rmv, rdt, counts, displs = _vmsg(recvbuf, n, recv=True)
        # No send buffer is in place, as in mpi4py.
        mine = part(rmv, rdt, counts[me], displs[me]) if sendbuf is IN_PLACE or sendbuf is None else own()
        c.total = sum(counts) * rdt.size
        c.layout = _coll.Layout.of(counts, rdt.size)
        parts = _coll.run("allgather", c, mine, nbytes=_size(mine), elements=sum(counts))
        if sized:
            return
        size = getattr(parts, "uniform", -1)
        if size > 0 and regular(counts, displs) is not None and size == counts[0] * rdt.size \
                and getattr(rmv, "c_contiguous", False):  # (a packed view's blocks go one by one)
            # Blocks back to back, as the buffer wants them (its bytes, whatever its items).
            _byte_view(rmv)[:n * size] = _byte_view(parts.whole)
        else:
            for i, p in enumerate(parts):
                _place(rmv, rdt, counts[i], displs[i], p, f"rank {i}")
    elif kind in ("alltoall", "alltoallv"):
        rmv, rdt, rcounts, rdispls = _vmsg(recvbuf, n, recv=True)
        if kind == "alltoallv":
            # Which peers send this rank anything (MPICH posts no receive
            # for a zero count, and no send).
            c.expect = [i for i, k in enumerate(rcounts) if k > 0]
        if sendbuf is IN_PLACE:
            smv, sdt, scounts, sdispls = rmv, rdt, rcounts, rdispls
        else:
            smv, sdt, scounts, sdispls = _vmsg(sendbuf, n, recv=False)
        if kind == "alltoall":
            # MPI_Alltoall sends every rank the same block: a count left
            # out must split the buffer evenly (mpi4py's check).
            for what, counts in (("send", scounts), ("receive", rcounts)):
                if not isinstance(counts, _Same):
                    raise _ValueError(f"Alltoall: cannot infer the {what} count: {sum(counts)} entries are not a "
                                      f"multiple of the {n} blocks")
        sc, rc = regular(scounts, sdispls), regular(rcounts, rdispls)
        if (kind == "alltoall" and not sized and sendbuf is not IN_PLACE and sc is not None and rc is not None
                and sc * sdt.size == rc * rdt.size and sc > 0
                and smv.__class__ is memoryview and rmv.__class__ is memoryview):  # (not packed views)
            # Blocks back to back in both buffers (MPI_Alltoall's usual
            # case): the core takes them from the send buffer and writes
            # what arrives into the receive buffer, without a bytes object
            # per block.
            size = sc * sdt.size
            c.into = (rmv, size)
            blocks = _coll.Blocks(smv, n, size)
            _coll.run("alltoall", c, blocks, nbytes=size)
            rmv[me * size:(me + 1) * size] = blocks[me]
            return
        if sized and sc is not None:
            # One size for every peer: no list of n sizes (n ranks each
            # holding one would be n^2 objects).
            parts = _Same(sc * sdt.size, n)
        else:
            parts = [part(smv, sdt, scounts[i], sdispls[i]) for i in range(n)]
        got = _coll.run("alltoall", c, parts, nbytes=max(_size(p) for p in parts))
        if not sized:
            for i, p in enumerate(got):
                _place(rmv, rdt, rcounts[i], rdispls[i], p, f"rank {i}")


def _wviews(b: Any, n: int, recv: bool, call: str = "Alltoallw") -> List[Any]:
    """A w-collective's message for `n` peers: one view per peer of (buf,
    types), (buf, (counts, displs), types) or (buf, counts, displs, types);
    displacements in bytes."""
    if not isinstance(b, (list, tuple)) or len(b) not in (2, 3, 4):
        raise _ValueError(f"{call}: a message is (buffer, [counts, displacements,] datatypes): expecting 2 to 4 items")
    if len(b) == 2:
        data, types = b
        counts = displs = None
    elif len(b) == 3:
        data, (counts, displs), types = b
    else:
        data, counts, displs, types = b
    bottom = data is None or data is BOTTOM
    if bottom and len(b) == 2:
        counts, displs = [1] * n, [0] * n
    if bottom and (counts is None or displs is None):
        raise _ValueError(f"{call}: a BOTTOM buffer needs counts and displacements")
    types = list(types) if isinstance(types, (list, tuple)) else [types] * n
    if len(types) != n:
        raise _ValueError(f"{call}: expecting {n} datatypes, got {len(types)}")
    types = [_as_datatype(t) for t in types]
    # Counts left out are one element each; displacements left out
    # put the blocks back to back (in bytes).
    counts = [1] * n if counts is None else _array(counts, n, "counts")
    if displs is None:
        displs, at = [], 0
        for k, t in zip(counts, types):
            displs.append(at)
            at += k * t.extent
    displs = _array(displs, n, "displacements")
    mv = memoryview(b"") if bottom else _bytes_view(data, not recv)[0].cast("B")
    return [_datatype_view(mv, types[i], displs[i], counts[i], recv, bottom) for i in range(n)]


def _alltoallw(comm: Comm, sendbuf: Any, recvbuf: Any) -> None:
    c = _coll.Call(comm, "alltoall")
    n = c.n
    sviews = _wviews(recvbuf if sendbuf is IN_PLACE else sendbuf, n, False)
    rviews = _wviews(recvbuf, n, True)
    parts = [len(v) if _rt.size_only else v.tobytes() for v in sviews]
    c.expect = [i for i, v in enumerate(rviews) if len(v) > 0]
    got = _coll.run("alltoall", c, parts, nbytes=max(_size(p) for p in parts))
    if _rt.size_only:
        return
    for i, p in enumerate(got):
        if len(p) > len(rviews[i]):
            raise Exception(ERR_TRUNCATE, f"rank {i} sent {len(p)} bytes for a slot of {len(rviews[i])} bytes")
        if p:
            rviews[i][:len(p)] = p


def _place_blocks(view: Any, parts: Sequence[Any], who: str) -> None:
    """parts[k] (None: nothing came) into block k of a vector receive
    buffer parsed by `_vmsg` (`view`); `who`: whom block k came from, as
    an error names it ("remote rank" k ...)."""
    mv, dt, counts, displs = view
    for k, p in enumerate(parts):
        if p is not None:
            _place(mv, dt, counts[k], displs[k], p, f"{who} {k}")


def _place(mv: memoryview, dt: Datatype, count: int, displ: int, data: bytes, who: str) -> None:
    if len(data) > count * dt.size:
        raise Exception(ERR_TRUNCATE, f"{who} sent {len(data)} bytes for a slot of {count} x {dt.name}")
    if data:
        start = displ * dt.size
        mv[start:start + len(data)] = data


class CollectiveCalls:
    """The collective operations of ``Comm`` (a mixin): each builds a
    ``bgsim.mpishim.coll.Call`` and runs the algorithm the registry chooses."""

    # -- collectives (algorithm families in bgsim.mpishim.coll) --

    def Barrier(self) -> None:
        _barrier(self)

    def barrier(self) -> None:
        _lock(self, "barrier")
        _barrier(self)

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        _lock(self, "bcast")
        c = _coll.Call(self, "bcast", root)
        # As mpi4py does: the size first, then the pickled object.
        data = _dump(obj) if c.me == root else None
        size = _coll.bcast.bcast_binomial(c, len(data).to_bytes(8, "little") if c.me == root else None, root)
        out = _bcast_bytes(c, data, root, int.from_bytes(size, "little"))
        return obj if c.me == root else _load(out)

    def Bcast(self, buf: Any, root: int = 0) -> None:
        m = _msg(buf, recv=True)
        c = _coll.Call(self, "bcast", root, check=m.nbytes)
        if _rt.size_only:
            _bcast_bytes(c, m.nbytes if c.me == root else None, root, m.nbytes)
            return
        data = _bcast_bytes(c, m.mv.tobytes() if c.me == root else None, root, m.nbytes)
        if c.me != root:
            m.mv[:] = data

    def gather(self, sendobj: Any, root: int = 0) -> Optional[List[Any]]:
        _lock(self, "gather")
        c = _coll.Call(self, "gather", root)
        parts = _coll.run("gather", c, _dump(sendobj), root, nbytes=0)
        return None if parts is None else [_load(p) for p in parts]

    def scatter(self, sendobj: Optional[Sequence[Any]] = None, root: int = 0) -> Any:
        _lock(self, "scatter")
        c = _coll.Call(self, "scatter", root)
        parts = None
        if c.me == root:
            if sendobj is None or len(sendobj) != c.n:
                raise _ValueError(f"scatter: the root needs a sequence of {c.n} items, got {None if sendobj is None else len(sendobj)}")
            parts = [_dump(o) for o in sendobj]
        return _load(_coll.run("scatter", c, parts, root, nbytes=0))

    def allgather(self, sendobj: Any) -> List[Any]:
        _lock(self, "allgather")
        c = _coll.Call(self, "allgather")
        return [_load(p) for p in _allgather_bytes(c, _dump(sendobj))]

    def alltoall(self, sendobj: Sequence[Any]) -> List[Any]:
        _lock(self, "alltoall")
        c = _coll.Call(self, "alltoall")
        if sendobj is None or len(sendobj) != c.n:
            raise _ValueError(f"alltoall: expecting a sequence of {c.n} items, got {None if sendobj is None else len(sendobj)}")
        parts = [_dump(o) for o in sendobj]
        return [_load(p) for p in _coll.run("alltoall", c, parts, nbytes=max(len(p) for p in parts))]

    def reduce(self, sendobj: Any, op: Op = SUM, root: int = 0) -> Any:
        _lock(self, "reduce")
        c = _coll.Call(self, "reduce", root, check=op.name)
        return _coll.run("reduce", c, sendobj, _obj_reducer(op), root, nbytes=0, alu=False)

    def allreduce(self, sendobj: Any, op: Op = SUM) -> Any:
        _lock(self, "allreduce")
        c = _coll.Call(self, "allreduce", check=op.name)
        return _coll.run("allreduce", c, sendobj, _obj_reducer(op), nbytes=0, alu=False)

    def scan(self, sendobj: Any, op: Op = SUM) -> Any:
        _lock(self, "scan")
        return _scan(self, sendobj, _obj_reducer(op), exclusive=False)

    def exscan(self, sendobj: Any, op: Op = SUM) -> Any:
        _lock(self, "exscan")
        return _scan(self, sendobj, _obj_reducer(op), exclusive=True)

    def Gather(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        _buffer_collective(self, "gather", sendbuf, recvbuf, root=root)

    def Gatherv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        _buffer_collective(self, "gather", sendbuf, recvbuf, root=root)

    def Scatter(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        _buffer_collective(self, "scatter", sendbuf, recvbuf, root=root)

    def Scatterv(self, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
        _buffer_collective(self, "scatter", sendbuf, recvbuf, root=root)

    def Allgather(self, sendbuf: Any, recvbuf: Any) -> None:
        _buffer_collective(self, "allgather", sendbuf, recvbuf)

    def Allgatherv(self, sendbuf: Any, recvbuf: Any) -> None:
        _buffer_collective(self, "allgather", sendbuf, recvbuf)

    def Alltoall(self, sendbuf: Any, recvbuf: Any) -> None:
        _buffer_collective(self, "alltoall", sendbuf, recvbuf)

    def Alltoallv(self, sendbuf: Any, recvbuf: Any) -> None:
        _buffer_collective(self, "alltoallv", sendbuf, recvbuf)

    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        """sendbuf / recvbuf: [buf, (counts, displs), datatypes] with counts
        in elements of each peer's datatype and displacements in bytes."""
        _alltoallw(self, sendbuf, recvbuf)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        _reduce_buffers(self, sendbuf, recvbuf, op, root)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _reduce_buffers(self, sendbuf, recvbuf, op, None)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _reduce_scatter(self, sendbuf, recvbuf, op, None, block=True)

    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Optional[Sequence[int]] = None, op: Op = SUM) -> None:
        _reduce_scatter(self, sendbuf, recvbuf, op, recvcounts)

    def Scan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _scan_buffers(self, sendbuf, recvbuf, op, exclusive=False)

    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _scan_buffers(self, sendbuf, recvbuf, op, exclusive=True)


#: The collectives that have nonblocking (``I...``) and persistent
#: (``..._init``) forms (`nbc`), by the name of their blocking form.
NONBLOCKING = ("Barrier", "Bcast", "Gather", "Gatherv", "Scatter", "Scatterv", "Allgather", "Allgatherv",
               "Alltoall", "Alltoallv", "Alltoallw", "Reduce", "Allreduce", "Reduce_scatter_block",
               "Reduce_scatter", "Scan", "Exscan")


for _name in NONBLOCKING:
    for _fname, _fn in (_nbc.nonblocking_form(_name), _nbc.persistent_form(_name)):
        setattr(CollectiveCalls, _fname, _fn)
del _name, _fname, _fn
