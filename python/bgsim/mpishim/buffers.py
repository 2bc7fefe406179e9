"""Message buffers: the buffer API's ``[data, count, datatype]`` specs, pickled objects, communicator members."""

from __future__ import annotations

import collections.abc as _abc
import itertools as _itertools
import operator as _operator
import pickle as _pickle
import sys as _sys
from typing import Any, List, Optional, Tuple

import numpy as _np
from greenlet import getcurrent as _getcurrent

from .. import _core
from .. import runtime as _rt
from ..errors import ArgumentTypeError as _TypeError
from ..errors import BufferAccessError as _BufferError
from ..errors import UsageError as _ValueError
from . import foreign as _foreign
from . import membuf as _membuf
from .constants import BOTTOM
from .datatypes import BYTE, Datatype, _as_datatype, _format_datatype


class _Msg:
    """A parsed buffer argument: a writable/readable byte view, the datatype
    and the element count."""

    __slots__ = ("mv", "dt", "count", "obj")

    def __init__(self, mv: memoryview, dt: Datatype, count: int, obj: Any):
        self.mv, self.dt, self.count, self.obj = mv, dt, count, obj

    @property
    def nbytes(self) -> int:
        return self.count * self.dt.size


def _pack(nbytes: int) -> None:
    """MPI's pack (or unpack) of `nbytes` of a non-contiguous datatype
    between the program's buffer and a contiguous one: the calling rank's
    core copies them (`runtime.pack`). Every read and write of a packed
    view is one, so a message of such a datatype costs it where its data
    move: the send's pack, the receive's unpack, a collective's own."""
    if nbytes > 0:
        ctx = getattr(_getcurrent(), "ctx", None)
        if ctx is not None:
            ctx.runtime.pack(ctx, nbytes)


class _Packed:
    """The data of `count` elements of a non-contiguous datatype, read and
    written as the packed byte stream MPI moves (gaps left out, type-map
    order), over the buffer's own memory. Slices and assignments take
    packed byte positions: element e's bytes sit at e * size.. in the
    stream and at e * extent + the type map's offsets in memory."""

    __slots__ = ("_mem", "_dt", "_base", "_count", "readonly")

    def __init__(self, mem: "_np.ndarray", dt: Datatype, base: int, count: int, readonly: bool):
        self._mem, self._dt, self._base, self._count, self.readonly = mem, dt, base, count, readonly

    def _offsets(self, start: int, stop: int) -> "_np.ndarray":
        size = self._dt.size
        e = _np.arange(start, stop, dtype=_np.int64)
        elem, within = _np.divmod(e, size)
        return self._base + elem * self._dt.extent + self._dt._t.element_bytes()[within]

    def __len__(self) -> int:
        return self._count * self._dt.size

    @property
    def nbytes(self) -> int:
        return len(self)

    def _range(self, item: Any) -> Tuple[int, int]:
        if not isinstance(item, slice) or item.step not in (None, 1):
            raise _TypeError("a packed datatype view takes contiguous slices only")
        start, stop, _ = item.indices(len(self))
        return start, max(start, stop)

    def __getitem__(self, item: Any) -> memoryview:
        start, stop = self._range(item)
        _pack(stop - start)
        return memoryview(self._mem[self._offsets(start, stop)].tobytes())

    def __setitem__(self, item: Any, data: Any) -> None:
        start, stop = self._range(item)
        src = _np.frombuffer(data, dtype=_np.uint8)
        if len(src) != stop - start:
            raise _ValueError(f"packed datatype view: {len(src)} bytes for a slice of {stop - start}")
        _pack(stop - start)
        self._mem[self._offsets(start, stop)] = src

    def tobytes(self) -> bytes:
        return self[:].tobytes()


def _datatype_view(mv: memoryview, dt: Datatype, displ_bytes: int, count: int, recv: bool, bottom: bool) -> Any:
    """`count` elements of `dt` from byte `displ_bytes` of `mv` (a BOTTOM
    buffer: from address 0, the type map holding absolute addresses): the
    plain bytes when the datatype is contiguous, else a packed view."""
    t = dt._t
    if count == 0:
        return memoryview(bytearray())
    lo = displ_bytes + t.true_lb
    hi = displ_bytes + (count - 1) * dt.extent + t.true_ub
    if bottom:
        import ctypes  # noqa: PLC0415 (only BOTTOM messages read absolute addresses)
        raw = (ctypes.c_char * (hi - lo)).from_address(lo)
        mem = _np.frombuffer(raw, dtype=_np.uint8)
        return _Packed(mem, dt, displ_bytes - lo, count, False)
    if lo < 0 or hi > len(mv):
        raise _ValueError(f"message: {count} x {dt.name} at byte {displ_bytes} reach bytes {lo}..{hi} "
                          f"outside the buffer of {len(mv)} bytes")
    if t.contiguous:
        return mv[displ_bytes:displ_bytes + count * dt.size]
    mem = _np.frombuffer(mv, dtype=_np.uint8)
    return _Packed(mem, dt, displ_bytes, count, mv.readonly)


_FMT_CACHE: dict = {}


_UNSEEN = object()
#: Buffer format prefixes of the byte order this machine does not use.
_FOREIGN_ORDER = (">", "!") if _sys.byteorder == "little" else ("<",)


def _bytes_view(obj: Any, readonly_ok: bool) -> Tuple[memoryview, Optional[Datatype]]:
    mv = obj._mv if isinstance(obj, _membuf.buffer) else _foreign.memory(obj)
    if mv is None:
        raise _TypeError(f"message: expecting a buffer or a list [data, count, datatype], got {type(obj).__name__}")
    if not readonly_ok and mv.readonly:
        raise _BufferError("message: the receive buffer is read-only")
    if mv.format == "O" or getattr(getattr(obj, "dtype", None), "hasobject", False):
        # Its bytes are pointers to Python objects of this process: copied
        # to another rank they would point at objects that may be gone.
        raise _TypeError("message: a buffer of Python objects (numpy dtype=object) cannot be sent or received "
                         "through the buffer API; use the lowercase pickle API (comm.send / comm.recv) or a numeric dtype")
    key = (mv.format, mv.itemsize)
    dt = _FMT_CACHE.get(key, _UNSEEN)
    if dt is _UNSEEN:
        # Data in the other byte order has no datatype of its own (None):
        # the message must name one.
        dt = _FMT_CACHE[key] = None if mv.format[:1] in _FOREIGN_ORDER else _format_datatype(mv.format, mv.itemsize)
    if mv.ndim == 1 and mv.format == "B":
        return mv, dt
    if not mv.contiguous:
        raise _BufferError("message: the buffer is not contiguous (copy it, e.g. numpy.ascontiguousarray, or "
                           "describe its layout with a derived datatype)")
    if mv.nbytes == 0:
        # (An empty array of several dimensions, (2, 0) say, cannot be cast.)
        return memoryview(b"" if mv.readonly else bytearray()), dt
    if not mv.c_contiguous:
        # Fortran order: its bytes in memory order, the same memory.
        mv = memoryview(_np.asarray(mv).ravel(order="K"))
    return mv.cast("B") if (mv.format != "B" or mv.ndim != 1) else mv, dt


def _is_datatype(obj: Any) -> bool:
    return isinstance(obj, (Datatype, str))


def _split_spec(spec: Any, vector: bool) -> Tuple[Any, Any, Any, Any]:
    """A message spec's parts (buffer, count(s), displacement(s), datatype),
    in the forms mpi4py reads: buf, [buf, datatype], [buf, count],
    [buf, (count, displ)], [buf, count, datatype], [buf, (count, displ),
    datatype], [buf, count, displ, datatype]. A vector message's
    (counts, displs) pair must be a tuple."""
    pair = tuple if vector else (tuple, list)
    if isinstance(spec, (list, tuple)):
        n = len(spec)
        count = displ = dtype = None
        if n == 2:
            buf, count = spec
            if _is_datatype(count):
                count, dtype = None, count
            elif isinstance(count, pair):
                count, displ = count
        elif n == 3:
            buf, count, dtype = spec
            if isinstance(count, pair):
                count, displ = count
        elif n == 4:
            buf, count, displ, dtype = spec
        else:
            raise _ValueError(f"message: expecting 2 to 4 items [data, count, displacement, datatype], got {n}")
        return buf, count, displ, dtype
    return spec, None, None, None


def _basic(buf: Any, dtype: Any, recv: bool) -> Tuple[memoryview, Datatype]:
    """The bytes and datatype of a message buffer: None and BOTTOM are
    empty and need an explicit datatype."""
    if buf is None or buf is BOTTOM:
        if dtype is None:
            raise _ValueError("message: a None or BOTTOM buffer needs an explicit datatype")
        return memoryview(b""), _as_datatype(dtype)
    mv, dt = _bytes_view(buf, not recv)
    if dtype is None and dt is None:
        raise _BufferError("message: the buffer's byte order is not this machine's; give its datatype "
                           "([buf, MPI.INT] ...)")
    return mv, (dt if dtype is None else _as_datatype(dtype))


def _index(value: Any, what: str) -> int:
    try:
        return _operator.index(value)
    except TypeError:
        raise _TypeError(f"message: {what} must be an integer, got {value!r}") from None


def _msg(spec: Any, recv: bool, blocks: int = 1) -> _Msg:
    """Parses a message spec (see `_split_spec`); `blocks`: the buffer holds
    that many equal blocks when the count is left out."""
    if spec is None or spec is BOTTOM:
        return _Msg(memoryview(b""), BYTE, 0, spec)
    if not isinstance(spec, (list, tuple)) and not _is_buffer(spec) and not _foreign.is_foreign(spec):
        raise _TypeError(f"message: expecting a buffer or a list/tuple [data, count, displacement, datatype], got {type(spec).__name__}")
    buf, count, displ, dtype = _split_spec(spec, vector=False)
    mv, dt = _basic(buf, dtype, recv)
    extent = dt.extent
    length, offset = len(mv), 0
    if displ is not None:
        displ = _index(displ, "displacement")
        if displ < 0:
            raise _ValueError(f"message: negative displacement {displ}")
        if displ > 0:
            if extent <= 0:
                raise _ValueError(f"message: cannot handle displacement, datatype extent {extent}")
            if displ * extent > length:
                raise _ValueError(f"message: displacement {displ} out of bounds, number of datatype entries {length // extent}")
            offset = displ * extent
            length -= offset
    if count is not None:
        count = _index(count, "count")
        if count < 0:
            raise _ValueError(f"message: negative count {count}")
        if count > 0 and buf is None:
            raise _ValueError(f"message: buffer is None but count is {count}")
    elif length > 0:
        if extent <= 0:
            raise _ValueError(f"message: cannot infer count, datatype extent {extent}")
        if length % extent:
            raise _ValueError(f"message: cannot infer count, buffer length {length} is not a multiple of datatype extent {extent}")
        count = length // extent
        if blocks > 1:
            if count % blocks:
                raise _ValueError(f"message: cannot infer count, number of entries {count} is not a multiple of required number of blocks {blocks}")
            count //= blocks
    else:
        count = 0
    total = count * max(blocks, 1)
    if not dt._t.contiguous or (buf is BOTTOM and total > 0):
        return _Msg(_datatype_view(mv, dt, offset, total, recv, buf is BOTTOM), dt, int(count), buf)
    need = offset + count * max(extent, 0) * max(blocks, 1)
    if need > len(mv):
        raise _ValueError(f"message: buffer is too small for {count} x {dt.name} at displacement {displ or 0} "
                          f"({need} bytes needed, {len(mv)} available)")
    return _Msg(mv[offset:offset + count * extent * max(blocks, 1)], dt, int(count), buf)


def _array(value: Any, n: int, what: str) -> List[int]:
    try:
        items = list(value)
    except TypeError:
        raise _TypeError(f"message: {what} must be a sequence of integers, got {type(value).__name__}") from None
    if len(items) != n:
        raise _ValueError(f"message: expecting {n} {what}, got {len(items)}")
    return [_index(v, what) for v in items]


def _vmsg(spec: Any, n: int, recv: bool) -> Tuple[memoryview, Datatype, List[int], List[int]]:
    """Parses a vector message for `n` peers (see `_split_spec`): counts
    and displacements in elements; counts left out split the buffer as
    evenly as it goes, a single count applies to every peer, a single
    displacement is a stride."""
    if spec is None or spec is BOTTOM:
        return memoryview(b""), BYTE, [0] * n, [0] * n
    if not isinstance(spec, (list, tuple)) and not _is_buffer(spec) and not _foreign.is_foreign(spec):
        raise _TypeError(f"message: expecting a buffer or a list/tuple [data, counts, displacements, datatype], got {type(spec).__name__}")
    buf, counts, displs, dtype = _split_spec(spec, vector=True)
    mv, dt = _basic(buf, dtype, recv)
    extent = dt.extent
    if counts is None:
        total = 0
        if len(mv) > 0:
            if extent <= 0:
                raise _ValueError(f"message: cannot infer count, datatype extent {extent}")
            if len(mv) % extent:
                raise _ValueError(f"message: cannot infer count, buffer length {len(mv)} is not a multiple of datatype extent {extent}")
            total = len(mv) // extent
        counts = Same(total // n, n) if total % n == 0 else [total // n + (total % n > i) for i in range(n)]
    elif _integral(counts):
        counts = Same(_operator.index(counts), n)
    else:
        counts = _array(counts, n, "counts")
    if displs is None:
        if isinstance(counts, Same):
            displs = _stride(counts.value, n)
        else:
            displs, acc = [], 0
            for c in counts:
                displs.append(acc)
                acc += c
    elif _integral(displs):
        displs = _stride(_operator.index(displs), n)
    else:
        displs = _array(displs, n, "displacements")
    if isinstance(counts, Same):
        if counts.value < 0:
            raise _ValueError(f"message: negative count {counts.value}")
    else:
        for c in counts:
            if c < 0:
                raise _ValueError(f"message: negative count {c}")
    # (count, displacement) pairs that bound the layout: all of them, or
    # the two ends of a regular one.
    ends = zip(counts, displs) if not (isinstance(counts, Same) and isinstance(displs, (range, Same))) else \
        ([(counts.value, displs[0]), (counts.value, displs[-1])] if n else [])
    if not dt._t.contiguous or buf is BOTTOM:
        ends = list(ends)
        # Displacements count extents: element e of the view is element e
        # of the buffer, its bytes at e * size in the packed stream.
        end = max((d + c for c, d in ends if c > 0), default=0)
        low = min((d for c, d in ends if c > 0), default=0)
        if low < 0:
            raise _ValueError(f"message: negative displacement {low}")
        return _datatype_view(mv, dt, 0, end, recv, buf is BOTTOM), dt, counts, displs
    for c, d in ends:
        if (d + c) * extent > len(mv):
            raise _ValueError(f"message: buffer is too small for {c} x {dt.name} at displacement {d}")
    return mv, dt, counts, displs


class Same(_abc.Sequence):
    """n copies of one value in O(1) memory: the counts of a regular vector
    message (n ranks of one process each holding n counts would be n^2)."""

    __slots__ = ("value", "n")

    def __init__(self, value: int, n: int):
        self.value, self.n = value, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self.value] * len(range(*i.indices(self.n)))
        if not -self.n <= i < self.n:
            raise IndexError(i)
        return self.value

    def __iter__(self):
        return _itertools.repeat(self.value, self.n)

    def __eq__(self, other: Any) -> bool:
        return list(self) == list(other) if isinstance(other, _abc.Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"[{self.value}] * {self.n}"


def _stride(step: int, n: int) -> "range | Same":
    """Displacements 0, step, 2 step, ... for n peers, in O(1) memory."""
    return range(0, step * n, step) if step else Same(0, n)


def regular(counts: Any, displs: Any) -> Optional[int]:
    """The one count of a layout whose blocks lie back to back in peer order
    (displacement i * count), else None."""
    if isinstance(counts, Same) and isinstance(displs, range) and displs.start == 0 and \
            displs.step == counts.value:
        return counts.value
    return None


def _integral(obj: Any) -> bool:
    try:
        _operator.index(obj)
        return True
    except TypeError:
        return False


def _is_buffer(obj: Any) -> bool:
    """Whether `obj` exports the buffer protocol."""
    if isinstance(obj, (bytes, bytearray, memoryview, _np.ndarray, _membuf.buffer)):
        return True
    try:
        memoryview(obj).release()
        return True
    except TypeError:
        return False


def _address(mv: memoryview) -> int:
    """Address of a buffer's first byte (0 if it has none)."""
    if len(mv) == 0:
        return 0
    return _np.frombuffer(mv, dtype=_np.uint8).__array_interface__["data"][0]


class Pickle:
    """How the lowercase API serializes objects (``mpi4py.MPI.Pickle``):
    `dumps` and `loads` functions and a protocol; ``MPI.pickle`` is the one
    every call uses, and ``MPI.pickle.__init__(dumps, loads, protocol)``
    changes it."""

    def __init__(self, dumps: Any = None, loads: Any = None, protocol: Optional[int] = None):
        self._dumps = dumps or _pickle.dumps
        self._loads = loads or _pickle.loads
        self._protocol = protocol
        self.PROTOCOL = _pickle.HIGHEST_PROTOCOL if protocol is None else protocol
        self.THRESHOLD = 1024 ** 2 * 256

    def dumps(self, obj: Any) -> bytes:
        if self._dumps is _pickle.dumps:
            return _pickle.dumps(obj, self.PROTOCOL)
        return self._dumps(obj, self._protocol) if self._protocol is not None else self._dumps(obj)

    def loads(self, data: bytes) -> Any:
        return self._loads(data)


class _RankPickle(Pickle):
    """``MPI.pickle``: each rank's own `Pickle`, as a process of its own
    has one (``MPI.pickle.__init__(dumps, loads)``, ``MPI.pickle.PROTOCOL =
    4`` on one rank leave the others as they were). Outside a rank, one
    shared by the caller."""

    def _mine(self) -> Pickle:
        return _rt.rank_own("pickle", Pickle, _OUTSIDE_RANKS)

    def __init__(self, dumps: Any = None, loads: Any = None, protocol: Optional[int] = None):
        self._mine().__init__(dumps, loads, protocol)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mine(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._mine(), name, value)


_OUTSIDE_RANKS = Pickle()
pickle = object.__new__(_RankPickle)
_HIGHEST = _pickle.HIGHEST_PROTOCOL


def _dump(obj: Any) -> bytes:
    ctx = getattr(_getcurrent(), "ctx", None)
    p = ctx.state.get("pickle") if ctx is not None else _OUTSIDE_RANKS
    if p is None:  # the rank kept the default
        return _pickle.dumps(obj, _HIGHEST)
    return p.dumps(obj)


def _load(b: bytes) -> Any:
    # An empty message (a buffer send of no bytes) is None, as in mpi4py.
    if not b:
        return None
    ctx = getattr(_getcurrent(), "ctx", None)
    p = ctx.state.get("pickle") if ctx is not None else _OUTSIDE_RANKS
    return _pickle.loads(b) if p is None else p.loads(b)


#: The largest message (the core's `msglayer::MAX_MESSAGE_BYTES`): the
#: capacity of a receive that takes whatever comes.
_BIG = _core.MAX_MESSAGE_BYTES

# A run's communicators as the core's fast point-to-point calls know them,
# shared by every rank's copy of a communicator: (context, id of the ranks
# tuple) -> (ranks, Members). Ranks' copies share one tuple (groups are
# shared), so the key costs nothing to hash however large the group.
_members_cache: dict = {}


def _members(context: int, ranks: tuple) -> "_core.Members":
    key = (context, id(ranks))
    hit = _members_cache.get(key)
    if hit is None or hit[0] is not ranks:
        hit = _members_cache[key] = (ranks, _core.Members(context, ranks))
    return hit[1]


def Get_address(location: Any) -> int:
    """MPI_Get_address: the address of a buffer in this process's memory
    (0 for None / BOTTOM)."""
    if location is None or location is BOTTOM:
        return 0
    if isinstance(location, _np.ndarray):
        return int(location.__array_interface__["data"][0])
    return _address(_bytes_view(location, True)[0])


def Aint_add(base: int, disp: int) -> int:
    """MPI_Aint_add."""
    return int(base) + int(disp)


def Aint_diff(addr1: int, addr2: int) -> int:
    """MPI_Aint_diff."""
    return int(addr1) - int(addr2)
