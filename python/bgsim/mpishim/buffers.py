"""Message buffers: the buffer API's ``[data, count, datatype]`` specs, pickled objects, communicator members."""

from __future__ import annotations

import pickle as _pickle
from typing import Any, List, Optional, Tuple

import numpy as _np

from .. import _core
from ..errors import ArgumentTypeError as _TypeError
from ..errors import UsageError as _ValueError
from .constants import BOTTOM
from .datatypes import BYTE, Datatype, _format_datatype


class _Msg:
    """A parsed buffer argument: a writable/readable byte view, the datatype
    and the element count."""

    __slots__ = ("mv", "dt", "count", "obj")

    def __init__(self, mv: memoryview, dt: Datatype, count: int, obj: Any):
        self.mv, self.dt, self.count, self.obj = mv, dt, count, obj

    @property
    def nbytes(self) -> int:
        return self.count * self.dt.size


_FMT_CACHE: dict = {}


def _bytes_view(obj: Any, readonly_ok: bool) -> Tuple[memoryview, Datatype]:
    try:
        mv = memoryview(obj)
    except TypeError:
        raise _TypeError(f"message: expecting a buffer or a list [data, count, datatype], got {type(obj).__name__}") from None
    if not readonly_ok and mv.readonly:
        raise _TypeError("message: the receive buffer is read-only")
    if mv.format == "O" or getattr(getattr(obj, "dtype", None), "hasobject", False):
        # Its bytes are pointers to Python objects of this process: copied
        # to another rank they would point at objects that may be gone.
        raise _TypeError("message: a buffer of Python objects (numpy dtype=object) cannot be sent or received "
                         "through the buffer API; use the lowercase pickle API (comm.send / comm.recv) or a numeric dtype")
    key = (mv.format, mv.itemsize)
    dt = _FMT_CACHE.get(key)
    if dt is None:
        dt = _FMT_CACHE[key] = _format_datatype(mv.format, mv.itemsize)
    if mv.ndim == 1 and mv.format == "B":
        return mv, dt
    if not mv.contiguous:
        raise _ValueError("message: the buffer is not contiguous")
    return mv.cast("B") if (mv.format != "B" or mv.ndim != 1) else mv, dt


def _msg(spec: Any, recv: bool) -> _Msg:
    """Parses buf / [buf, datatype] / [buf, count, datatype] /
    [buf, (count, displ), datatype] / [buf, count]."""
    if spec is None or spec is BOTTOM:
        return _Msg(memoryview(b""), BYTE, 0, spec)
    if isinstance(spec, (list, tuple)):
        if not spec or len(spec) > 3:
            raise _ValueError(f"message: expecting a list of 1 to 3 items [data, count, datatype], got {len(spec)}")
        data = spec[0]
        mv, dt = _bytes_view(data, not recv)
        count = None
        displ = 0
        rest = list(spec[1:])
        if rest and isinstance(rest[-1], Datatype):
            dt = rest.pop()
        if rest:
            c = rest[0]
            if isinstance(c, (tuple, list)):
                if len(c) != 2:
                    raise _ValueError("message: expecting (count, displacement)")
                count, displ = c
            elif c is not None:
                count = c
        if count is None:
            count = len(mv) // max(1, dt.size) - displ
        if not isinstance(count, (int, _np.integer)) or count < 0:
            raise _ValueError(f"message: negative count {count}" if isinstance(count, (int, _np.integer)) else f"message: count must be an integer, got {count!r}")
        start = displ * dt.size
        need = start + count * dt.size
        if need > len(mv):
            raise _ValueError(f"message: buffer is too small for {count} x {dt.name} at displacement {displ} "
                             f"({need} bytes needed, {len(mv)} available)")
        return _Msg(mv[start:need], dt, int(count), data)
    mv, dt = _bytes_view(spec, not recv)
    return _Msg(mv, dt, len(mv) // max(1, dt.size), spec)


def _vmsg(spec: Any, n: int, recv: bool) -> Tuple[memoryview, Datatype, List[int], List[int]]:
    """Parses a vector message [buf, (counts, displs), datatype] /
    [buf, counts, datatype] / [buf, datatype] / buf for `n` peers; counts
    and displacements in elements."""
    counts = displs = None
    if isinstance(spec, (list, tuple)):
        data = spec[0]
        mv, dt = _bytes_view(data, not recv)
        rest = list(spec[1:])
        if rest and isinstance(rest[-1], Datatype):
            dt = rest.pop()
        if rest:
            c = rest[0]
            if isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], (list, tuple, _np.ndarray)):
                counts, displs = list(c[0]), (list(c[1]) if c[1] is not None else None)
            elif c is not None:
                counts = [int(c)] * n if isinstance(c, (int, _np.integer)) else list(c)
            if len(rest) > 1 and rest[1] is not None:
                displs = list(rest[1])
    else:
        mv, dt = _bytes_view(spec, not recv)
    total = len(mv) // max(1, dt.size)
    if counts is None:
        if total % n:
            raise _ValueError(f"message: the buffer of {total} elements does not split evenly over {n} processes")
        counts = [total // n] * n
    if displs is None:
        displs, acc = [], 0
        for c in counts:
            displs.append(acc)
            acc += c
    if len(counts) != n or len(displs) != n:
        raise _ValueError(f"message: expecting {n} counts and displacements, got {len(counts)} and {len(displs)}")
    for c, d in zip(counts, displs):
        if c < 0:
            raise _ValueError(f"message: negative count {c}")
        if (d + c) * dt.size > len(mv):
            raise _ValueError(f"message: buffer is too small for {c} x {dt.name} at displacement {d}")
    return mv, dt, [int(c) for c in counts], [int(d) for d in displs]


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


pickle = Pickle()


def _dump(obj: Any) -> bytes:
    return pickle.dumps(obj)


def _load(b: bytes) -> Any:
    return pickle.loads(b)


_BIG = (1 << 30) - 1

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
    arr = location if isinstance(location, _np.ndarray) else _np.frombuffer(memoryview(location).cast("B"), "u1")
    return int(arr.__array_interface__["data"][0])


def Aint_add(base: int, disp: int) -> int:
    """MPI_Aint_add."""
    return int(base) + int(disp)


def Aint_diff(addr1: int, addr2: int) -> int:
    """MPI_Aint_diff."""
    return int(addr1) - int(addr2)
