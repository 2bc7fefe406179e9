"""The simulated MPI, with the API of ``mpi4py.MPI``.

During a run (``bgsim run`` or ``bgsim.run``) ``from mpi4py import MPI``
returns this module. Every rank shares it; each call finds the calling rank
from the running greenlet. Point-to-point goes through the simulated message
layer (real data, simulated time); communicators are context ids over world
ranks; collectives are built from point-to-point messages on a separate
context of each communicator.
"""

from __future__ import annotations

import pickle as _pickle
import sys as _sys
from typing import Any, List, Optional, Sequence, Tuple

import numpy as _np
from greenlet import getcurrent as _getcurrent

from . import _core
from .errors import ArgumentTypeError as _TypeError
from .errors import BgsimError as _BgsimError
from .errors import UsageError as _ValueError
from . import coll as _coll
from . import runtime as _rt

_ndarray = _np.ndarray

_MPI4PY_VERSION = "3.1.6"

# ---------------------------------------------------------------- constants

ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
ROOT = -3
UNDEFINED = -32766
KEYVAL_INVALID = -1
TAG_UB = 2**31 - 1
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
CART, GRAPH, DIST_GRAPH = 1, 2, 3
MAX_PROCESSOR_NAME = 256
MAX_ERROR_STRING = 512
BSEND_OVERHEAD = 0
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
VERSION, SUBVERSION = 1, 2

SUCCESS = 0
ERR_BUFFER, ERR_COUNT, ERR_TYPE, ERR_TAG, ERR_COMM, ERR_RANK = 1, 2, 3, 4, 5, 6
ERR_REQUEST, ERR_ROOT, ERR_GROUP, ERR_OP, ERR_TOPOLOGY, ERR_DIMS = 7, 8, 9, 10, 11, 12
ERR_ARG, ERR_UNKNOWN, ERR_TRUNCATE, ERR_OTHER, ERR_INTERN, ERR_IN_STATUS = 13, 14, 15, 16, 17, 18
ERR_PENDING = 19
ERR_LASTCODE = 100

_ERR_NAMES = {
    SUCCESS: ("MPI_SUCCESS", "no error"),
    ERR_BUFFER: ("MPI_ERR_BUFFER", "invalid buffer pointer"),
    ERR_COUNT: ("MPI_ERR_COUNT", "invalid count argument"),
    ERR_TYPE: ("MPI_ERR_TYPE", "invalid datatype"),
    ERR_TAG: ("MPI_ERR_TAG", "invalid tag"),
    ERR_COMM: ("MPI_ERR_COMM", "invalid communicator"),
    ERR_RANK: ("MPI_ERR_RANK", "invalid rank"),
    ERR_REQUEST: ("MPI_ERR_REQUEST", "invalid request"),
    ERR_ROOT: ("MPI_ERR_ROOT", "invalid root"),
    ERR_GROUP: ("MPI_ERR_GROUP", "invalid group"),
    ERR_OP: ("MPI_ERR_OP", "invalid reduce operation"),
    ERR_TOPOLOGY: ("MPI_ERR_TOPOLOGY", "invalid communicator topology"),
    ERR_DIMS: ("MPI_ERR_DIMS", "invalid topology dimension"),
    ERR_ARG: ("MPI_ERR_ARG", "invalid argument of some other kind"),
    ERR_UNKNOWN: ("MPI_ERR_UNKNOWN", "unknown error"),
    ERR_TRUNCATE: ("MPI_ERR_TRUNCATE", "message truncated"),
    ERR_OTHER: ("MPI_ERR_OTHER", "known error not in this list"),
    ERR_INTERN: ("MPI_ERR_INTERN", "internal error"),
    ERR_IN_STATUS: ("MPI_ERR_IN_STATUS", "error code is in status"),
    ERR_PENDING: ("MPI_ERR_PENDING", "pending request"),
}


class Exception(_BgsimError, RuntimeError):  # noqa: A001 - the name mpi4py uses
    """An MPI error (``mpi4py.MPI.Exception``; a ``RuntimeError`` as there, and a ``bgsim.BgsimError``)."""

    def __init__(self, ierr: int = SUCCESS, detail: str = ""):
        self.error_code = ierr
        name, text = _ERR_NAMES.get(ierr, ("MPI_ERR_UNKNOWN", "unknown error"))
        super().__init__(f"{name}: {text}" + (f" ({detail})" if detail else ""))

    def Get_error_code(self) -> int:
        return self.error_code

    def Get_error_class(self) -> int:
        return self.error_code

    def Get_error_string(self) -> str:
        return _ERR_NAMES.get(self.error_code, ("", "unknown error"))[1]

    @property
    def error_class(self) -> int:
        return self.error_code

    @property
    def error_string(self) -> str:
        return self.Get_error_string()


def Get_error_string(errorcode: int) -> str:
    return _ERR_NAMES.get(errorcode, ("", "unknown error"))[1]


# ---------------------------------------------------------------- sentinels


class _Sentinel:
    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


IN_PLACE = _Sentinel("IN_PLACE")
BOTTOM = _Sentinel("BOTTOM")

# ---------------------------------------------------------------- datatypes


class Datatype:
    """A predefined (or contiguous derived) datatype."""

    def __init__(self, name: str, np_dtype: Any, base: Optional["Datatype"] = None, count: int = 1):
        self.name = name
        self.np = _np.dtype(np_dtype)
        self._base = base
        self._count = count
        self._committed = base is None

    @property
    def size(self) -> int:
        return self.np.itemsize * self._count

    @property
    def extent(self) -> int:
        return self.size

    @property
    def lb(self) -> int:
        return 0

    @property
    def ub(self) -> int:
        return self.size

    def Get_size(self) -> int:
        return self.size

    def Get_extent(self) -> Tuple[int, int]:
        return (0, self.extent)

    def Get_name(self) -> str:
        return self.name

    def Create_contiguous(self, count: int) -> "Datatype":
        if count < 0:
            raise Exception(ERR_COUNT, f"count = {count}")
        return Datatype(f"contiguous({count} x {self.name})", self.np, self, self._count * count)

    def Dup(self) -> "Datatype":
        return Datatype(self.name, self.np, self._base, self._count)

    def Commit(self) -> "Datatype":
        self._committed = True
        return self

    def Free(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Datatype {self.name}>"


def _dt(name: str, np_dtype: Any) -> Datatype:
    return Datatype(name, np_dtype)


DATATYPE_NULL = _dt("MPI_DATATYPE_NULL", "u1")
BYTE = _dt("MPI_BYTE", "u1")
PACKED = _dt("MPI_PACKED", "u1")
CHAR = _dt("MPI_CHAR", "i1")
SIGNED_CHAR = _dt("MPI_SIGNED_CHAR", "i1")
UNSIGNED_CHAR = _dt("MPI_UNSIGNED_CHAR", "u1")
WCHAR = _dt("MPI_WCHAR", "u4")
SHORT = _dt("MPI_SHORT", "i2")
UNSIGNED_SHORT = _dt("MPI_UNSIGNED_SHORT", "u2")
INT = _dt("MPI_INT", "i4")
UNSIGNED = _dt("MPI_UNSIGNED", "u4")
UNSIGNED_INT = UNSIGNED
LONG = _dt("MPI_LONG", "i8")
UNSIGNED_LONG = _dt("MPI_UNSIGNED_LONG", "u8")
LONG_LONG = _dt("MPI_LONG_LONG", "i8")
UNSIGNED_LONG_LONG = _dt("MPI_UNSIGNED_LONG_LONG", "u8")
FLOAT = _dt("MPI_FLOAT", "f4")
DOUBLE = _dt("MPI_DOUBLE", "f8")
LONG_DOUBLE = _dt("MPI_LONG_DOUBLE", _np.longdouble)
C_BOOL = _dt("MPI_C_BOOL", "?")
BOOL = C_BOOL
INT8_T = _dt("MPI_INT8_T", "i1")
INT16_T = _dt("MPI_INT16_T", "i2")
INT32_T = _dt("MPI_INT32_T", "i4")
INT64_T = _dt("MPI_INT64_T", "i8")
UINT8_T = _dt("MPI_UINT8_T", "u1")
UINT16_T = _dt("MPI_UINT16_T", "u2")
UINT32_T = _dt("MPI_UINT32_T", "u4")
UINT64_T = _dt("MPI_UINT64_T", "u8")
C_FLOAT_COMPLEX = _dt("MPI_C_FLOAT_COMPLEX", "c8")
C_DOUBLE_COMPLEX = _dt("MPI_C_DOUBLE_COMPLEX", "c16")
COMPLEX = C_FLOAT_COMPLEX
DOUBLE_COMPLEX = C_DOUBLE_COMPLEX
C_COMPLEX = C_FLOAT_COMPLEX
AINT = _dt("MPI_AINT", "i8")
OFFSET = _dt("MPI_OFFSET", "i8")
COUNT = _dt("MPI_COUNT", "i8")
# Pair types for MAXLOC / MINLOC (C struct layout, with padding).
FLOAT_INT = _dt("MPI_FLOAT_INT", _np.dtype([("v", "f4"), ("i", "i4")], align=True))
DOUBLE_INT = _dt("MPI_DOUBLE_INT", _np.dtype([("v", "f8"), ("i", "i4")], align=True))
LONG_INT = _dt("MPI_LONG_INT", _np.dtype([("v", "i8"), ("i", "i4")], align=True))
SHORT_INT = _dt("MPI_SHORT_INT", _np.dtype([("v", "i2"), ("i", "i4")], align=True))
TWOINT = _dt("MPI_2INT", _np.dtype([("v", "i4"), ("i", "i4")], align=True))
INT_INT = TWOINT

# Buffer format characters (struct / PEP 3118) -> datatype.
_FORMATS = {
    "b": SIGNED_CHAR, "B": BYTE, "c": CHAR, "h": SHORT, "H": UNSIGNED_SHORT,
    "i": INT, "I": UNSIGNED, "l": LONG, "L": UNSIGNED_LONG, "q": LONG_LONG,
    "Q": UNSIGNED_LONG_LONG, "f": FLOAT, "d": DOUBLE, "g": LONG_DOUBLE, "?": C_BOOL,
    "Zf": C_FLOAT_COMPLEX, "Zd": C_DOUBLE_COMPLEX, "n": LONG, "N": UNSIGNED_LONG,
}
_NP_TO_DT = {}
for _d in (SIGNED_CHAR, BYTE, SHORT, UNSIGNED_SHORT, INT, UNSIGNED, LONG, UNSIGNED_LONG, FLOAT, DOUBLE,
           C_BOOL, C_FLOAT_COMPLEX, C_DOUBLE_COMPLEX, LONG_DOUBLE):
    _NP_TO_DT.setdefault(_d.np.str, _d)


def _format_datatype(fmt: str, itemsize: int) -> Datatype:
    f = fmt.lstrip("@=<>!")
    dt = _FORMATS.get(f)
    if dt is None:
        try:
            dt = _NP_TO_DT.get(_np.dtype(fmt).str) or Datatype(f"buffer format {fmt!r}", _np.dtype(fmt))
        except TypeError:
            dt = BYTE
    if dt.size != itemsize and dt is not BYTE:
        dt = Datatype(f"buffer format {fmt!r}", f"V{itemsize}")
    return dt


# ---------------------------------------------------------------- operations


class Op:
    """A reduction operation (predefined or from ``Op.Create``)."""

    def __init__(self, name: str, np_fn: Any = None, py_fn: Any = None, commute: bool = True, user: Any = None):
        self.name = name
        self._np = np_fn
        self._py = py_fn
        self._commute = commute
        self._user = user

    @classmethod
    def Create(cls, function: Any, commute: bool = False) -> "Op":
        """A user-defined operation: ``function(invec, inoutvec, datatype)``
        combines invec into inoutvec in place (pickle API: returns the result)."""
        return cls(f"user:{getattr(function, '__name__', 'op')}", commute=commute, user=function)

    def Is_commutative(self) -> bool:
        return self._commute

    @property
    def is_commutative(self) -> bool:
        return self._commute

    @property
    def is_predefined(self) -> bool:
        return self._user is None

    def Free(self) -> None:
        pass

    def __call__(self, x: Any, y: Any) -> Any:
        """Combines two Python objects (pickle API), x op y."""
        if self._user is not None:
            return self._user(x, y)
        if self._py is None:
            raise Exception(ERR_OP, f"{self.name} on Python objects")
        return self._py(x, y)

    def _arrays(self, a: "_np.ndarray", b: "_np.ndarray", dt: Datatype) -> "_np.ndarray":
        """a op b on arrays (a from the lower rank)."""
        if self._user is not None:
            out = b.copy()
            r = self._user(a, out, dt)
            return out if r is None else _np.asarray(r, dtype=out.dtype)
        if self._np is None:
            raise Exception(ERR_OP, f"{self.name} on {dt.name}")
        return self._np(a, b)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Op {self.name}>"


def _loc(better):
    def py(x, y):
        (vx, ix), (vy, iy) = x, y
        if better(vx, vy) or (vx == vy and ix <= iy):
            return (vx, ix)
        return (vy, iy)

    def arr(a, b):
        pick_a = better(a["v"], b["v"]) | ((a["v"] == b["v"]) & (a["i"] <= b["i"]))
        return _np.where(pick_a, a, b)

    return py, arr


_maxloc_py, _maxloc_np = _loc(lambda a, b: a > b)
_minloc_py, _minloc_np = _loc(lambda a, b: a < b)

OP_NULL = Op("MPI_OP_NULL")
SUM = Op("MPI_SUM", _np.add, lambda x, y: x + y)
PROD = Op("MPI_PROD", _np.multiply, lambda x, y: x * y)
MAX = Op("MPI_MAX", _np.maximum, lambda x, y: y if y > x else x)
MIN = Op("MPI_MIN", _np.minimum, lambda x, y: y if y < x else x)
LAND = Op("MPI_LAND", lambda a, b: _np.logical_and(a, b).astype(a.dtype), lambda x, y: bool(x and y))
LOR = Op("MPI_LOR", lambda a, b: _np.logical_or(a, b).astype(a.dtype), lambda x, y: bool(x or y))
LXOR = Op("MPI_LXOR", lambda a, b: _np.logical_xor(a, b).astype(a.dtype), lambda x, y: bool(x) != bool(y))
BAND = Op("MPI_BAND", _np.bitwise_and, lambda x, y: x & y)
BOR = Op("MPI_BOR", _np.bitwise_or, lambda x, y: x | y)
BXOR = Op("MPI_BXOR", _np.bitwise_xor, lambda x, y: x ^ y)
MAXLOC = Op("MPI_MAXLOC", _maxloc_np, _maxloc_py)
MINLOC = Op("MPI_MINLOC", _minloc_np, _minloc_py)
REPLACE = Op("MPI_REPLACE", lambda a, b: b, lambda x, y: y)
NO_OP = Op("MPI_NO_OP", lambda a, b: a, lambda x, y: x)

# ---------------------------------------------------------------- status


class Status:
    """The status of a completed receive (or probe)."""

    def __init__(self, status: Optional["Status"] = None):
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self._count = 0
        self._cancelled = False
        if status is not None:
            self.source, self.tag, self.error = status.source, status.tag, status.error
            self._count, self._cancelled = status._count, status._cancelled

    def _set(self, source: int, tag: int, count: int, cancelled: bool = False, error: int = SUCCESS) -> None:
        self.source, self.tag, self._count, self._cancelled, self.error = source, tag, count, cancelled, error

    def Get_source(self) -> int:
        return self.source

    def Set_source(self, s: int) -> None:
        self.source = s

    def Get_tag(self) -> int:
        return self.tag

    def Set_tag(self, t: int) -> None:
        self.tag = t

    def Get_error(self) -> int:
        return self.error

    def Set_error(self, e: int) -> None:
        self.error = e

    def Get_count(self, datatype: Datatype = BYTE) -> int:
        size = datatype.size
        if size == 0:
            return 0
        return self._count // size if self._count % size == 0 else UNDEFINED

    def Get_elements(self, datatype: Datatype) -> int:
        return self._count // max(1, datatype.np.itemsize)

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._cancelled = bool(flag)

    @property
    def count(self) -> int:
        return self._count

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} count={self._count}>"


# ---------------------------------------------------------------- buffers


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


def _dump(obj: Any) -> bytes:
    return _pickle.dumps(obj, _pickle.HIGHEST_PROTOCOL)


def _load(b: bytes) -> Any:
    return _pickle.loads(b)


_BIG = (1 << 30) - 1

# A run's communicators as the core's fast point-to-point calls know them,
# shared by every rank's copy of a communicator: (context, ranks) -> Members.
_members_cache: dict = {}


def _members(context: int, ranks: tuple) -> "_core.Members":
    key = (context, ranks)
    m = _members_cache.get(key)
    if m is None:
        m = _members_cache[key] = _core.Members(context, ranks)
    return m

# ---------------------------------------------------------------- requests


def _ctx() -> "_rt.RankContext":
    return _rt.current()


class Request:
    """A non-blocking operation (``mpi4py.MPI.Request``)."""

    # Defaults as class attributes: a request sets only what it needs (this
    # object is made for every message, so it is kept cheap).
    _group: Optional["Group"] = None  # translates world ranks in the status
    _into: Optional[memoryview] = None  # receive buffer (buffer API)
    _finish: Any = None  # called with the status and data once; may return an object
    _status: Optional[tuple] = None
    _obj: Any = None
    _error: Optional[BaseException] = None
    _desc = ""

    def __init__(self, rid: int = -1, kind: str = "null", finish: Any = None, ctx: Any = None, desc: str = "",
                 group: Optional["Group"] = None):
        self._id = rid
        self._kind = kind
        self._ctx = ctx
        self._done = rid < 0
        if rid < 0:
            self._status = (PROC_NULL, ANY_TAG, 0, False, False)
        if finish is not None:
            self._finish = finish
        if group is not None:
            self._group = group

    def __bool__(self) -> bool:
        return self._id >= 0 and not self._done

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Request):
            return self is other or (not self and not other)
        return NotImplemented

    __hash__ = object.__hash__

    def _complete(self) -> None:
        """Collects a finished core request (data, status) exactly once."""
        if self._done:
            return
        self._finished(self._ctx.runtime.world.finish(self._id))

    def _finished(self, res: tuple) -> None:
        """Takes the status and data the core returned for this request
        (a status alone: no data)."""
        src, tag, count, cancelled, truncated = res[:5]
        data = res[5] if len(res) > 5 else None
        if self._group is not None and src >= 0:
            # World rank -> rank in the receiving communicator.
            src = self._group._index.get(src, src)
        st = self._status = (src, tag, count, cancelled, truncated)
        self._done = True
        if self._into is not None and data and not truncated:
            self._into[: len(data)] = data
            return
        if self._finish is not None and not st[3] and not st[4]:  # not cancelled, not truncated
            try:
                self._obj = self._finish(st, data)
            except BaseException as e:  # raised again from Wait/Test
                self._error = e

    def _poll(self) -> bool:
        if self._done:
            return True
        if self._ctx.runtime.world.done(self._id):
            self._complete()
            return True
        return False

    def _fill(self, status: Optional[Status]) -> None:
        if status is not None and self._status is not None:
            s, t, c, canc, trunc = self._status
            status._set(s, t, c, canc, ERR_TRUNCATE if trunc else SUCCESS)

    def _raise(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise e
        if self._status is not None and self._status[4]:
            raise Exception(ERR_TRUNCATE, f"a message of more bytes than the receive buffer holds from rank {self._status[0]}")

    def Wait(self, status: Optional[Status] = None) -> bool:
        _wait_all([self], "MPI.Request.Wait()")
        self._fill(status)
        self._raise()
        return True

    def Test(self, status: Optional[Status] = None) -> bool:
        if self._poll():
            self._fill(status)
            self._raise()
            return True
        return False

    def wait(self, status: Optional[Status] = None) -> Any:
        self.Wait(status)
        return self._obj

    def test(self, status: Optional[Status] = None) -> Tuple[bool, Any]:
        flag = self.Test(status)
        return flag, (self._obj if flag else None)

    def Get_status(self, status: Optional[Status] = None) -> bool:
        flag = self._poll()
        if flag:
            self._fill(status)
        return flag

    def Cancel(self) -> None:
        if not self._done and self._ctx is not None:
            self._ctx.runtime.world.cancel(self._id)

    def Free(self) -> None:
        self._done = True

    def cancel(self) -> None:
        self.Cancel()

    def free(self) -> None:
        self.Free()

    # -- multiple completions (mpi4py's static methods) --

    @staticmethod
    def Waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        requests = list(requests)
        _wait_all(requests, "MPI.Request.Waitall()")
        if statuses is not None:
            for i, r in enumerate(requests):
                while len(statuses) <= i:
                    statuses.append(Status())
                r._fill(statuses[i])
        for r in requests:
            if r._error is not None or (r._status is not None and r._status[4]):
                r._raise()
        return True

    @staticmethod
    def waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> List[Any]:
        Request.Waitall(requests, statuses)
        return [r._obj for r in requests]

    @staticmethod
    def Waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> int:
        i = _wait_some(list(requests), "Request.Waitany", any_one=True)
        if i and i[0] != UNDEFINED:
            requests[i[0]]._fill(status)
            requests[i[0]]._raise()
            requests[i[0]]._kind = "null-done"
            return i[0]
        return UNDEFINED

    @staticmethod
    def waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, Any]:
        i = Request.Waitany(requests, status)
        return i, (requests[i]._obj if i != UNDEFINED else None)

    @staticmethod
    def Waitsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        idx = _wait_some(list(requests), "Request.Waitsome", any_one=False)
        if idx == [UNDEFINED]:
            return None
        _retire(requests, idx, statuses)
        return idx

    @staticmethod
    def waitsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[Optional[List[int]], Optional[List[Any]]]:
        idx = Request.Waitsome(requests, statuses)
        return idx, (None if idx is None else [requests[i]._obj for i in idx])

    @staticmethod
    def Testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        if all(r._poll() for r in requests):
            Request.Waitall(requests, statuses)
            return True
        return False

    @staticmethod
    def testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[bool, Optional[List[Any]]]:
        flag = Request.Testall(requests, statuses)
        return flag, ([r._obj for r in requests] if flag else None)

    @staticmethod
    def Testany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool]:
        active = [i for i, r in enumerate(requests) if r._kind not in ("null", "null-done")]
        if not active:
            return UNDEFINED, True
        for i in active:
            if requests[i]._poll():
                requests[i]._fill(status)
                requests[i]._raise()
                requests[i]._kind = "null-done"
                return i, True
        return UNDEFINED, False

    @staticmethod
    def testany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool, Any]:
        i, flag = Request.Testany(requests, status)
        return i, flag, (requests[i]._obj if flag and i != UNDEFINED else None)

    @staticmethod
    def Testsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        active = [i for i, r in enumerate(requests) if r._kind not in ("null", "null-done")]
        if not active:
            return None
        idx = [i for i in active if requests[i]._poll()]
        _retire(requests, idx, statuses)
        return idx

    @staticmethod
    def testsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[Optional[List[int]], Optional[List[Any]]]:
        idx = Request.Testsome(requests, statuses)
        return idx, (None if idx is None else [requests[i]._obj for i in idx])

    @staticmethod
    def Startall(requests: Sequence["Prequest"]) -> None:
        for r in requests:
            r.Start()

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Request {self._kind}{' done' if self._done else ''}>"


class Prequest(Request):
    """A persistent request (``Send_init`` / ``Recv_init``)."""

    def __init__(self, start: Any):
        super().__init__(-1, "persistent")
        self._start = start
        self._active: Optional[Request] = None
        self._done = True

    def Start(self) -> None:
        self._active = self._start()
        self._id, self._ctx, self._finish = self._active._id, self._active._ctx, self._active._finish
        self._group = self._active._group
        self._into = self._active._into
        self._done = self._active._done
        self._status = self._active._status
        self._kind = "persistent-active"

    def Free(self) -> None:
        self._done = True


REQUEST_NULL = Request()


def _retire(requests: Sequence[Request], idx: List[int], statuses: Optional[List[Status]]) -> None:
    """Fills the statuses of the completed requests `idx` (in order), raises
    their errors and makes them inactive for later Wait/Test calls."""
    for k, i in enumerate(idx):
        if statuses is not None:
            while len(statuses) <= k:
                statuses.append(Status())
            requests[i]._fill(statuses[k])
        requests[i]._raise()
        requests[i]._kind = "null-done"


def _wait_all(reqs: List[Request], call: str) -> None:
    pending = [r for r in reqs if not r._done]
    if pending:
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        ctx.call, ctx.frame = call, _sys._getframe(2)
        ids = [r._id for r in pending]
        if len(set(ids)) != len(ids):  # the same request passed twice
            pending = list({r._id: r for r in pending}.values())
            ids = [r._id for r in pending]
        world = ctx.world
        if world.block(ctx.rank, ids, len(ids)):
            ctx.runtime.hub.switch()
        # One call into the core collects every request's status and data:
        # a status alone for a request without data, which needs no more
        # than this when it has no group to translate its source through
        # and no function to finish it.
        for r, res in zip(pending, world.finish_all(ids)):
            if len(res) == 5 and r._group is None and r._finish is None:
                r._status = res
                r._done = True
            else:
                r._finished(res)


def _wait_some(reqs: List[Request], call: str, any_one: bool) -> List[int]:
    active = [i for i, r in enumerate(reqs) if r._kind not in ("null", "null-done")]
    if not active:
        return [UNDEFINED]
    done = [i for i in active if reqs[i]._poll()]
    if not done:
        ctx = _ctx()
        ctx.call, ctx.frame = f"MPI.{call}()", _sys._getframe(2)
        ctx.runtime.wait(ctx, [reqs[i]._id for i in active], 1)
        done = [i for i in active if reqs[i]._poll()]
    return done[:1] if any_one else done


# ---------------------------------------------------------------- groups


class Group:
    """An ordered set of processes (world ranks)."""

    def __init__(self, ranks: Sequence[int] = ()):
        self._ranks = tuple(ranks)
        self._index = {r: i for i, r in enumerate(self._ranks)}

    def Get_size(self) -> int:
        return len(self._ranks)

    def Get_rank(self) -> int:
        return self._index.get(_ctx().rank, UNDEFINED)

    @property
    def size(self) -> int:
        return self.Get_size()

    @property
    def rank(self) -> int:
        return self.Get_rank()

    def _check(self, ranks: Sequence[int]) -> None:
        for r in ranks:
            if not 0 <= r < len(self._ranks):
                raise Exception(ERR_RANK, f"rank {r} is not in a group of {len(self._ranks)}")

    def Incl(self, ranks: Sequence[int]) -> "Group":
        ranks = list(ranks)
        self._check(ranks)
        if len(set(ranks)) != len(ranks):
            raise Exception(ERR_RANK, "ranks appear twice")
        return Group([self._ranks[r] for r in ranks])

    def Excl(self, ranks: Sequence[int]) -> "Group":
        ranks = set(ranks)
        self._check(ranks)
        return Group([w for i, w in enumerate(self._ranks) if i not in ranks])

    def Range_incl(self, ranges: Sequence[Tuple[int, int, int]]) -> "Group":
        out = []
        for first, last, stride in ranges:
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return self.Incl(out)

    def Range_excl(self, ranges: Sequence[Tuple[int, int, int]]) -> "Group":
        out = []
        for first, last, stride in ranges:
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return self.Excl(out)

    def Translate_ranks(self, ranks: Optional[Sequence[int]] = None, group: Optional["Group"] = None) -> List[int]:
        if ranks is None:
            ranks = range(len(self._ranks))
        out = []
        for r in ranks:
            if r == PROC_NULL:
                out.append(PROC_NULL)
                continue
            self._check([r])
            out.append(UNDEFINED if group is None else group._index.get(self._ranks[r], UNDEFINED))
        return out

    def Compare(self, group: "Group") -> int:
        if self._ranks == group._ranks:
            return IDENT
        if set(self._ranks) == set(group._ranks):
            return SIMILAR
        return UNEQUAL

    def Union(self, group: "Group") -> "Group":
        return Group(list(self._ranks) + [r for r in group._ranks if r not in self._index])

    def Intersection(self, group: "Group") -> "Group":
        return Group([r for r in self._ranks if r in group._index])

    Intersect = Intersection

    def Difference(self, group: "Group") -> "Group":
        return Group([r for r in self._ranks if r not in group._index])

    def Dup(self) -> "Group":
        return Group(self._ranks)

    def Free(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group size={len(self._ranks)}>"


GROUP_EMPTY = Group()
GROUP_NULL = Group()

# ---------------------------------------------------------------- communicators


def _check_tag(tag: int, recv: bool) -> int:
    if tag.__class__ is int and 0 <= tag <= TAG_UB:
        return tag
    if not isinstance(tag, (int, _np.integer)):
        raise _TypeError(f"tag must be an integer, got {type(tag).__name__}")
    if (recv and tag == ANY_TAG) or 0 <= tag <= TAG_UB:
        return int(tag)
    raise Exception(ERR_TAG, f"tag {tag}")


class Comm:
    """A communicator: a group of world ranks and a context id."""

    def __init__(self, group: Group, context: int, name: str = ""):
        self._group = group
        self._context = context
        self._name = name
        self._freed = False
        self._bind()

    def _bind(self) -> None:
        """Points the fast path of Isend / Irecv at the communicator's
        current group and context (called again whenever they change)."""
        self._p2p = None if self._context < 0 or self._freed else _members(self._context, self._group._ranks)
        # The group a receive's source goes through: none when comm rank i
        # is world rank i.
        self._p2p_group = None if self._p2p is not None and self._p2p.identity else self._group

    # -- identity --

    def _me(self) -> "Tuple[_rt.RankContext, int]":
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        r = self._group._index.get(ctx.rank)
        if r is None or self._freed:
            raise Exception(ERR_COMM, "the calling rank is not a member of this communicator" if r is None else "freed communicator")
        if ctx.runtime.cpu_factor:
            ctx.runtime.charge_host_cpu(ctx)
        return ctx, r

    def Get_rank(self) -> int:
        return self._me()[1]

    def Get_size(self) -> int:
        return len(self._group._ranks)

    @property
    def rank(self) -> int:
        return self.Get_rank()

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_group(self) -> Group:
        return Group(self._group._ranks)

    @property
    def group(self) -> Group:
        return self.Get_group()

    def Get_name(self) -> str:
        return self._name

    def Set_name(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, v: str) -> None:
        self._name = v

    def Is_inter(self) -> bool:
        return False

    def Is_intra(self) -> bool:
        return True

    @property
    def is_inter(self) -> bool:
        return False

    @property
    def is_intra(self) -> bool:
        return True

    def Get_topology(self) -> int:
        return UNDEFINED

    @property
    def topology(self) -> int:
        return self.Get_topology()

    def Compare(self, comm: "Comm") -> int:
        if self._context == comm._context:
            return IDENT
        c = self._group.Compare(comm._group)
        return CONGRUENT if c == IDENT else c

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Comm) and self._context == other._context

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return self._context >= 0

    def _world_rank(self, r: int, what: str, allow_null: bool = True, allow_any: bool = False) -> int:
        if r.__class__ is int and 0 <= r < len(self._group._ranks):
            return self._group._ranks[r]
        if allow_null and r == PROC_NULL:
            return PROC_NULL
        if allow_any and r == ANY_SOURCE:
            return ANY_SOURCE
        if not isinstance(r, (int, _np.integer)) or not 0 <= r < len(self._group._ranks):
            raise Exception(ERR_RANK, f"{what} {r} in a communicator of size {len(self._group._ranks)}")
        return self._group._ranks[r]

    # -- point-to-point core --

    def _isend_bytes(self, data: bytes, dest: int, tag: int, mode: int, call: str, ctx_off: int = 0) -> Request:
        ctx, me = self._me()
        wdest = self._world_rank(dest, "dest")
        tag = _check_tag(tag, False) if ctx_off == 0 else tag
        if wdest == PROC_NULL:
            return Request(-1, "send")
        if data.__class__ is int:  # a skeleton's message: a size, no content
            rid = ctx.runtime.world.isend(ctx.rank, wdest, self._context + ctx_off, tag, b"", mode, None, data)
        else:
            rid = ctx.runtime.world.isend(ctx.rank, wdest, self._context + ctx_off, tag, data, mode)
        return Request(rid, "send", None, ctx)

    def _irecv_into(self, capacity: int, source: int, tag: int, finish: Any, ctx_off: int = 0,
                    unaligned: bool = False, ctx: Any = None) -> Request:
        if ctx is None:
            ctx, me = self._me()
        wsrc = self._world_rank(source, "source", allow_any=True)
        tag = _check_tag(tag, True) if ctx_off == 0 else tag
        if wsrc == PROC_NULL:
            r = Request(-1, "recv")
            r._obj = finish((PROC_NULL, ANY_TAG, 0, False, False), b"") if finish else None
            return r
        rid = ctx.runtime.world.irecv(ctx.rank, wsrc, self._context + ctx_off, tag, capacity, unaligned)
        return Request(rid, "recv", finish, ctx, "", self._group)

    def _send_buf(self, buf: Any, dest: int, tag: int, mode: int, call: str) -> Request:
        cls = buf.__class__
        if cls is _ndarray:
            data = buf.tobytes()  # C order, also for a non-contiguous view
        elif cls is bytes:
            data = buf
        else:
            data = _msg(buf, recv=False).mv.tobytes()
        return self._isend_bytes(data, dest, tag, mode, call)

    def _recv_buf(self, buf: Any, source: int, tag: int) -> Request:
        mv = None
        if buf.__class__ is _ndarray:
            try:
                mv = memoryview(buf).cast("B")
                nbytes = len(mv)
                # An array that owns its data starts 16-byte aligned (numpy's
                # allocator); a view may not.
                addr = 0 if buf.base is None else buf.__array_interface__["data"][0]
            except TypeError:  # not contiguous: the general path explains
                mv = None
        if mv is None or mv.readonly:
            m = _msg(buf, recv=True)
            mv, nbytes = m.mv, m.nbytes
            addr = _address(mv)
        ctx, me = self._me()
        req = self._irecv_into(nbytes, source, tag, None, unaligned=addr % ctx.runtime.alignment != 0, ctx=ctx)
        req._into = mv
        return req

    def _wait(self, req: Request, status: Optional[Status], call: str) -> Any:
        if not req._poll():
            ctx = _ctx()
            ctx.call, ctx.frame = call, _sys._getframe(2)
            ctx.runtime.wait(ctx, [req._id], 1)
            req._complete()
        req._fill(status)
        req._raise()
        return req._obj

    # -- buffer API --

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self.Isend(buf, dest, tag), None, lambda: f"MPI.Comm.Send(dest={dest}, tag={tag})")

    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 1, "Ssend"), None, lambda: f"MPI.Comm.Ssend(dest={dest}, tag={tag})")

    def Rsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 2, "Rsend"), None, lambda: f"MPI.Comm.Rsend(dest={dest}, tag={tag})")

    def Bsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 3, "Bsend"), None, lambda: f"MPI.Comm.Bsend(dest={dest}, tag={tag})")

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        # The common case (a numpy array to a rank of this communicator) in
        # one call into the core; anything else, errors included, goes the
        # general way.
        ctx = _rt.fast
        if ctx is not None and buf.__class__ is _ndarray and self._p2p is not None:
            rid = ctx.world.isend_fast(ctx.rank, self._p2p, dest, tag, buf.tobytes())
            if rid >= 0:
                return Request(rid, "send", None, ctx)
        return self._send_buf(buf, dest, tag, 0, "Isend")

    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 1, "Issend")

    def Irsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 2, "Irsend")

    def Ibsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 3, "Ibsend")

    def Recv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        self._wait(self.Irecv(buf, source, tag), status, lambda: f"MPI.Comm.Recv(source={source}, tag={tag})")

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        # As Isend: the core copies the message straight into `buf`.
        ctx = _rt.fast
        if ctx is not None and buf.__class__ is _ndarray and self._p2p is not None:
            rid = ctx.world.irecv_fast(ctx.rank, self._p2p, source, tag, buf)
            if rid >= 0:
                return Request(rid, "recv", None, ctx, "", self._p2p_group)
        return self._recv_buf(buf, source, tag)

    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return Prequest(lambda: self._send_buf(buf, dest, tag, 0, "Send_init"))

    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        return Prequest(lambda: self._recv_buf(buf, source, tag))

    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        r = self.Irecv(recvbuf, source, recvtag)
        s = self.Isend(sendbuf, dest, sendtag)
        _wait_all([s, r], "MPI.Comm.Sendrecv()")
        r._fill(status)
        r._raise()

    def Sendrecv_replace(self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                         recvtag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        m = _msg(buf, recv=True)
        data = m.mv.tobytes()
        r = self._recv_buf(buf, source, recvtag)
        s = self._isend_bytes(data, dest, sendtag, 0, "Sendrecv_replace")
        _wait_all([s, r], "MPI.Comm.Sendrecv_replace()")
        r._fill(status)
        r._raise()

    def _probe_req(self, source: int, tag: int) -> Request:
        ctx, me = self._me()
        wsrc = self._world_rank(source, "source", allow_any=True)
        tag = _check_tag(tag, True)
        if wsrc == PROC_NULL:
            return Request(-1, "probe")
        rid = ctx.runtime.world.probe(ctx.rank, wsrc, self._context, tag)
        return Request(rid, "probe", None, ctx, "", self._group)

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        self._wait(self._probe_req(source, tag), status, lambda: f"MPI.Comm.Probe(source={source}, tag={tag})")
        return True

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        req = self._probe_req(source, tag)
        if req._poll():
            req._fill(status)
            return True
        if req._id >= 0:
            req._ctx.runtime.world.cancel(req._id)
            req._ctx.runtime.world.release(req._id)
        return False

    # -- pickle API --

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 0, "send"), None, lambda: f"MPI.Comm.send(dest={dest}, tag={tag})")

    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 1, "ssend"), None, lambda: f"MPI.Comm.ssend(dest={dest}, tag={tag})")

    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 3, "bsend"), None, lambda: f"MPI.Comm.bsend(dest={dest}, tag={tag})")

    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 0, "isend")

    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 1, "issend")

    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 3, "ibsend")

    def _irecv_obj(self, buf: Any, source: int, tag: int) -> Request:
        cap = _BIG if buf is None else len(memoryview(buf).cast("B"))
        return self._irecv_into(cap, source, tag, lambda st, data: None if st[0] == PROC_NULL else _load(data))

    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> Any:
        return self._wait(self._irecv_obj(buf, source, tag), status, lambda: f"MPI.Comm.recv(source={source}, tag={tag})")

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv_obj(buf, source, tag)

    def sendrecv(self, sendobj: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status: Optional[Status] = None) -> Any:
        r = self._irecv_obj(recvbuf, source, recvtag)
        s = self._isend_bytes(_dump(sendobj), dest, sendtag, 0, "sendrecv")
        _wait_all([s, r], "MPI.Comm.sendrecv()")
        r._fill(status)
        r._raise()
        return r._obj

    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        return self.Probe(source, tag, status)

    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        return self.Iprobe(source, tag, status)

    # -- communicator management --

    def _next_key(self, kind: str) -> Tuple:
        ctx = _ctx()
        seqs = ctx.state.setdefault("comm_seq", {})
        n = seqs.get(self._context, 0)
        seqs[self._context] = n + 1
        return (self._context, kind, n)

    def _sync(self, what: str) -> None:
        """The synchronisation a communicator constructor does (a barrier)."""
        _coll.barrier.barrier_dissemination(_coll.Call(self, what))

    def Dup(self, info: Any = None) -> "Comm":
        self._sync("Dup")
        key = self._next_key("dup")
        c = self._clone(Group(self._group._ranks), _ctx().runtime.new_context(key))
        c._name = self._name
        return c

    Clone = Dup

    def _clone(self, group: Group, context: int) -> "Comm":
        return Intracomm(group, context)

    def Split(self, color: int = 0, key: int = 0) -> "Comm":
        ctx, me = self._me()
        if color != UNDEFINED and (not isinstance(color, (int, _np.integer)) or color < 0):
            raise Exception(ERR_ARG, f"color {color} (must be >= 0 or MPI.UNDEFINED)")
        seqkey = self._next_key("split")
        c = _coll.Call(self, "Split")
        mine = _dump((int(color), int(key)))
        parts = (_coll.allgather.allgather_recursive_doubling(c, mine) if c.n & (c.n - 1) == 0 else _coll.allgather.allgather_ring(c, mine))
        pairs = [_load(p) for p in parts]
        if color == UNDEFINED:
            return COMM_NULL
        members = sorted((k, i) for i, (c, k) in enumerate(pairs) if c == color)
        group = Group([self._group._ranks[i] for _, i in members])
        return Intracomm(group, ctx.runtime.new_context(seqkey + (int(color),)))

    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> "Comm":
        ctx, me = self._me()
        node = ctx.runtime.world.node_of(ctx.rank)
        return self.Split(node if split_type != UNDEFINED else UNDEFINED, key)

    def Create(self, group: Group) -> "Comm":
        ctx, me = self._me()
        seqkey = self._next_key("create")
        self._sync("Create")
        if ctx.rank not in group._index:
            return COMM_NULL
        return Intracomm(Group(group._ranks), ctx.runtime.new_context(seqkey + (group._ranks,)))

    def Create_group(self, group: Group, tag: int = 0) -> "Comm":
        ctx, me = self._me()
        if ctx.rank not in group._index:
            raise Exception(ERR_GROUP, "the calling rank is not in the group")
        sub = Intracomm(Group(group._ranks), -1)
        seqs = ctx.state.setdefault("group_seq", {})
        k = (self._context, group._ranks, tag)
        n = seqs.get(k, 0)
        seqs[k] = n + 1
        sub._context = ctx.runtime.new_context(("create_group",) + k + (n,))
        sub._bind()
        sub._sync("Create_group")
        return sub

    def Free(self) -> None:
        self._freed = True
        self._bind()

    def Abort(self, errorcode: int = 0) -> None:
        raise SystemExit(f"MPI_Abort called by rank {_ctx().rank} with error code {errorcode}")

    def Get_attr(self, keyval: int) -> Any:
        return {TAG_UB_KEYVAL: TAG_UB}.get(keyval)

    def Create_cart(self, dims: Sequence[int], periods: Optional[Sequence[bool]] = None, reorder: bool = False) -> "Cartcomm":
        ctx, me = self._me()
        dims = [int(d) for d in dims]
        if any(d <= 0 for d in dims):
            raise Exception(ERR_DIMS, f"dims {dims}")
        periods = [bool(p) for p in (periods if periods is not None else [False] * len(dims))]
        if len(periods) != len(dims):
            raise Exception(ERR_ARG, "periods and dims differ in length")
        n = 1
        for d in dims:
            n *= d
        if n > self.Get_size():
            raise Exception(ERR_DIMS, f"a grid of {n} processes does not fit in a communicator of {self.Get_size()}")
        seqkey = self._next_key("cart")
        self._sync("Create_cart")
        if me >= n:
            return COMM_NULL
        return Cartcomm(Group(self._group._ranks[:n]), ctx.runtime.new_context(seqkey), dims, periods)

    # -- collectives (algorithm families in bgsim.coll) --

    def Barrier(self) -> None:
        _barrier(self)

    def barrier(self) -> None:
        _barrier(self)

    def bcast(self, obj: Any = None, root: int = 0) -> Any:
        c = _coll.Call(self, "bcast", root)
        # As mpi4py does: the size first, then the pickled object.
        data = _dump(obj) if c.me == root else None
        size = _coll.bcast.bcast_binomial(c, len(data).to_bytes(8, "little") if c.me == root else None, root)
        out = _bcast_bytes(c, data, root, int.from_bytes(size, "little"))
        return obj if c.me == root else _load(out)

    def Bcast(self, buf: Any, root: int = 0) -> None:
        m = _msg(buf, recv=True)
        c = _coll.Call(self, "bcast", root, check=m.nbytes)
        data = _bcast_bytes(c, m.mv.tobytes() if c.me == root else None, root, m.nbytes)
        if c.me != root:
            m.mv[:] = data

    def gather(self, sendobj: Any, root: int = 0) -> Optional[List[Any]]:
        c = _coll.Call(self, "gather", root)
        parts = _coll.run("gather", c, _dump(sendobj), root, nbytes=0)
        return None if parts is None else [_load(p) for p in parts]

    def scatter(self, sendobj: Optional[Sequence[Any]] = None, root: int = 0) -> Any:
        c = _coll.Call(self, "scatter", root)
        parts = None
        if c.me == root:
            if sendobj is None or len(sendobj) != c.n:
                raise _ValueError(f"scatter: the root needs a sequence of {c.n} items, got {None if sendobj is None else len(sendobj)}")
            parts = [_dump(o) for o in sendobj]
        return _load(_coll.run("scatter", c, parts, root, nbytes=0))

    def allgather(self, sendobj: Any) -> List[Any]:
        c = _coll.Call(self, "allgather")
        return [_load(p) for p in _allgather_bytes(c, _dump(sendobj))]

    def alltoall(self, sendobj: Sequence[Any]) -> List[Any]:
        c = _coll.Call(self, "alltoall")
        if sendobj is None or len(sendobj) != c.n:
            raise _ValueError(f"alltoall: expecting a sequence of {c.n} items, got {None if sendobj is None else len(sendobj)}")
        parts = [_dump(o) for o in sendobj]
        return [_load(p) for p in _coll.run("alltoall", c, parts, nbytes=max(len(p) for p in parts))]

    def reduce(self, sendobj: Any, op: Op = SUM, root: int = 0) -> Any:
        c = _coll.Call(self, "reduce", root, check=op.name)
        return _coll.run("reduce", c, sendobj, _obj_reducer(op), root, nbytes=0, alu=False)

    def allreduce(self, sendobj: Any, op: Op = SUM) -> Any:
        c = _coll.Call(self, "allreduce", check=op.name)
        return _coll.run("allreduce", c, sendobj, _obj_reducer(op), nbytes=0, alu=False)

    def scan(self, sendobj: Any, op: Op = SUM) -> Any:
        return _scan(self, sendobj, _obj_reducer(op), exclusive=False)

    def exscan(self, sendobj: Any, op: Op = SUM) -> Any:
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
        _buffer_collective(self, "alltoall", sendbuf, recvbuf)

    def Alltoallw(self, sendbuf: Any, recvbuf: Any) -> None:
        """sendbuf / recvbuf: [buf, (counts, displs), datatypes] with counts
        in elements of each peer's datatype and displacements in bytes."""
        _alltoallw(self, sendbuf, recvbuf)

    def Reduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM, root: int = 0) -> None:
        _reduce_buffers(self, sendbuf, recvbuf, op, root)

    def Allreduce(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _reduce_buffers(self, sendbuf, recvbuf, op, None)

    def Reduce_scatter_block(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _reduce_scatter(self, sendbuf, recvbuf, op, None)

    def Reduce_scatter(self, sendbuf: Any, recvbuf: Any, recvcounts: Optional[Sequence[int]] = None, op: Op = SUM) -> None:
        _reduce_scatter(self, sendbuf, recvbuf, op, recvcounts)

    def Scan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _scan_buffers(self, sendbuf, recvbuf, op, exclusive=False)

    def Exscan(self, sendbuf: Any, recvbuf: Any, op: Op = SUM) -> None:
        _scan_buffers(self, sendbuf, recvbuf, op, exclusive=True)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{type(self).__name__} size={len(self._group._ranks)} context={self._context}>"


class Intracomm(Comm):
    """An intra-communicator."""


class Topocomm(Intracomm):
    pass


class Cartcomm(Topocomm):
    """A communicator with a Cartesian topology (row-major ranks)."""

    def __init__(self, group: Group, context: int, dims: Sequence[int], periods: Sequence[bool]):
        super().__init__(group, context)
        self._dims = list(dims)
        self._periods = list(periods)

    def _clone(self, group: Group, context: int) -> "Comm":
        return Cartcomm(group, context, self._dims, self._periods)

    def Get_topology(self) -> int:
        return CART

    def Get_dim(self) -> int:
        return len(self._dims)

    @property
    def dim(self) -> int:
        return len(self._dims)

    ndim = dim

    @property
    def dims(self) -> List[int]:
        return list(self._dims)

    @property
    def periods(self) -> List[int]:
        return [int(p) for p in self._periods]

    @property
    def coords(self) -> List[int]:
        return self.Get_coords(self.Get_rank())

    @property
    def topo(self) -> Tuple[List[int], List[int], List[int]]:
        return self.Get_topo()

    def Get_topo(self) -> Tuple[List[int], List[int], List[int]]:
        return list(self._dims), [int(p) for p in self._periods], self.Get_coords(self.Get_rank())

    def Get_coords(self, rank: int) -> List[int]:
        if not 0 <= rank < self.Get_size():
            raise Exception(ERR_RANK, f"rank {rank}")
        out = []
        for d in reversed(self._dims):
            out.append(rank % d)
            rank //= d
        return out[::-1]

    def Get_cart_rank(self, coords: Sequence[int]) -> int:
        if len(coords) != len(self._dims):
            raise Exception(ERR_ARG, f"{len(coords)} coordinates for {len(self._dims)} dimensions")
        r = 0
        for c, d, p in zip(coords, self._dims, self._periods):
            if p:
                c %= d
            elif not 0 <= c < d:
                raise Exception(ERR_RANK, f"coordinate {c} outside a non-periodic dimension of {d}")
            r = r * d + c
        return r

    def Shift(self, direction: int, disp: int) -> Tuple[int, int]:
        if not 0 <= direction < len(self._dims):
            raise Exception(ERR_DIMS, f"direction {direction}")
        me = self.Get_coords(self.Get_rank())

        def at(delta: int) -> int:
            c = list(me)
            c[direction] += delta
            d = self._dims[direction]
            if self._periods[direction]:
                c[direction] %= d
            elif not 0 <= c[direction] < d:
                return PROC_NULL
            return self.Get_cart_rank(c)

        return at(-disp), at(disp)

    def Sub(self, remain_dims: Sequence[bool]) -> "Cartcomm":
        if len(remain_dims) != len(self._dims):
            raise Exception(ERR_ARG, "remain_dims and dims differ in length")
        me = self.Get_coords(self.Get_rank())
        color = 0
        for c, d, keep in zip(me, self._dims, remain_dims):
            if not keep:
                color = color * d + c
        key = 0
        for c, d, keep in zip(me, self._dims, remain_dims):
            if keep:
                key = key * d + c
        sub = self.Split(color, key)
        dims = [d for d, k in zip(self._dims, remain_dims) if k]
        periods = [p for p, k in zip(self._periods, remain_dims) if k]
        return Cartcomm(sub._group, sub._context, dims or [1], periods or [False])


def Compute_dims(nnodes: int, dims: Any) -> List[int]:
    """MPI_Dims_create: a balanced grid of `nnodes` in len(dims) dimensions
    (or `dims` dimensions if an int); nonzero entries are kept."""
    dims = [0] * dims if isinstance(dims, int) else list(dims)
    fixed = 1
    for d in dims:
        if d < 0:
            raise Exception(ERR_DIMS, f"negative dimension {d}")
        if d:
            fixed *= d
    free = [i for i, d in enumerate(dims) if d == 0]
    if nnodes % fixed:
        raise Exception(ERR_DIMS, f"{nnodes} is not divisible by the fixed dimensions' product {fixed}")
    rest = nnodes // fixed
    if not free:
        if rest != 1:
            raise Exception(ERR_DIMS, f"dims {dims} do not multiply to {nnodes}")
        return dims
    # Prime factors, largest first, each to the currently smallest dimension.
    factors, n, p = [], rest, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    sizes = [1] * len(free)
    for f in sorted(factors, reverse=True):
        i = sizes.index(min(sizes))
        sizes[i] *= f
    sizes.sort(reverse=True)
    for i, s in zip(free, sizes):
        dims[i] = s
    return dims


TAG_UB_KEYVAL = 1001

# ---------------------------------------------------------------- collectives


def _barrier(comm: Comm) -> None:
    _coll.run("barrier", _coll.Call(comm, "barrier"), nbytes=0)


def _bcast_bytes(c: "_coll.Call", data: Optional[bytes], root: int, nbytes: int) -> bytes:
    return _coll.run("bcast", c, data, root, nbytes, nbytes=nbytes)


def _allgather_bytes(c: "_coll.Call", data: bytes) -> List[bytes]:
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
    mine = value if prefix is None else red.combine(prefix, value)
    if c.me + 1 < c.n:
        c.wait([c.isend(red.dump(mine), c.me + 1)])
    return prefix if exclusive else mine


def _as_array(data: bytes, dt: Datatype) -> "_np.ndarray":
    return _np.frombuffer(bytearray(data), dtype=dt.np)


def _reduce_buffers(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, root: Optional[int]) -> None:
    kind = "allreduce" if root is None else "reduce"
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
    out = None if res is None else res.tobytes()
    if out is not None:
        m = _msg(recvbuf, recv=True)
        if m.nbytes < len(out):
            raise Exception(ERR_TRUNCATE, f"the receive buffer holds {m.nbytes} bytes, the result has {len(out)}")
        m.mv[: len(out)] = out


def _reduce_scatter(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, counts: Optional[Sequence[int]]) -> None:
    n = comm.Get_size()
    src = recvbuf if sendbuf is IN_PLACE else sendbuf
    s = _msg(src, recv=False)
    full = bytearray(s.nbytes)
    _reduce_buffers(comm, [bytearray(s.mv.tobytes()), s.count, s.dt], [full, s.count, s.dt], op, 0)
    c = _coll.Call(comm, "scatter", 0)
    if counts is None:
        counts = [s.count // n] * n
    if sum(counts) > s.count:
        raise _ValueError(f"Reduce_scatter: counts {list(counts)} add up to more than the {s.count} elements sent")
    parts, off = [], 0
    for k in counts:
        parts.append(bytes(full[off * s.dt.size:(off + k) * s.dt.size]))
        off += k
    mine = _coll.run("scatter", c, parts if c.me == 0 else None, 0, nbytes=0)
    m = _msg(recvbuf, recv=True)
    m.mv[: len(mine)] = mine


def _scan_buffers(comm: Comm, sendbuf: Any, recvbuf: Any, op: Op, exclusive: bool) -> None:
    src = recvbuf if sendbuf is IN_PLACE else sendbuf
    s = _msg(src, recv=False)
    out = _scan(comm, _as_array(s.mv.tobytes(), s.dt), _array_reducer(op, s.dt), exclusive)
    if out is not None:
        m = _msg(recvbuf, recv=True)
        m.mv[: out.nbytes] = out.tobytes()


def _buffer_collective(comm: Comm, kind: str, sendbuf: Any, recvbuf: Any, root: int = 0) -> None:
    """Gather(v) / Scatter(v) / Allgather(v) / Alltoall(v) on buffers."""
    c = _coll.Call(comm, kind, root if kind in ("gather", "scatter") else None)
    n, me = c.n, c.me
    if kind == "gather":
        if me == root:
            rmv, rdt, counts, displs = _vmsg(recvbuf, n, recv=True)
            mine = (rmv[displs[me] * rdt.size:(displs[me] + counts[me]) * rdt.size].tobytes()
                    if sendbuf is IN_PLACE else _msg(sendbuf, recv=False).mv.tobytes())
        else:
            mine = _msg(sendbuf, recv=False).mv.tobytes()
        parts = _coll.run("gather", c, mine, root, nbytes=len(mine))
        if me == root:
            for i, p in enumerate(parts):
                _place(rmv, rdt, counts[i], displs[i], p, f"rank {i}")
    elif kind == "scatter":
        parts = None
        if me == root:
            smv, sdt, counts, displs = _vmsg(sendbuf, n, recv=False)
            parts = [smv[displs[i] * sdt.size:(displs[i] + counts[i]) * sdt.size].tobytes() for i in range(n)]
        mine = _coll.run("scatter", c, parts, root, nbytes=0)
        if not (me == root and recvbuf is IN_PLACE):
            m = _msg(recvbuf, recv=True)
            if len(mine) > m.nbytes:
                raise Exception(ERR_TRUNCATE, f"Scatter: {len(mine)} bytes for a buffer of {m.nbytes}")
            m.mv[: len(mine)] = mine
    elif kind == "allgather":
        rmv, rdt, counts, displs = _vmsg(recvbuf, n, recv=True)
        mine = (rmv[displs[me] * rdt.size:(displs[me] + counts[me]) * rdt.size].tobytes()
                if sendbuf is IN_PLACE else _msg(sendbuf, recv=False).mv.tobytes())
        parts = _allgather_bytes(c, mine)
        for i, p in enumerate(parts):
            _place(rmv, rdt, counts[i], displs[i], p, f"rank {i}")
    elif kind == "alltoall":
        rmv, rdt, rcounts, rdispls = _vmsg(recvbuf, n, recv=True)
        if sendbuf is IN_PLACE:
            smv, sdt, scounts, sdispls = rmv, rdt, rcounts, rdispls
        else:
            smv, sdt, scounts, sdispls = _vmsg(sendbuf, n, recv=False)
        parts = [smv[sdispls[i] * sdt.size:(sdispls[i] + scounts[i]) * sdt.size].tobytes() for i in range(n)]
        got = _coll.run("alltoall", c, parts, nbytes=max(len(p) for p in parts))
        for i, p in enumerate(got):
            _place(rmv, rdt, rcounts[i], rdispls[i], p, f"rank {i}")


def _alltoallw(comm: Comm, sendbuf: Any, recvbuf: Any) -> None:
    c = _coll.Call(comm, "alltoall")
    n = c.n

    def spec(b: Any, recv: bool):
        data, (counts, displs), types = b
        mv, _ = _bytes_view(data, not recv)
        types = list(types) if isinstance(types, (list, tuple)) else [types] * n
        return mv, list(counts), list(displs), types

    smv, sc, sd, st = spec(sendbuf, False)
    rmv, rc, rd, rtyp = spec(recvbuf, True)
    parts = [smv[sd[i]:sd[i] + sc[i] * st[i].size].tobytes() for i in range(n)]
    got = _coll.run("alltoall", c, parts, nbytes=max(len(p) for p in parts))
    for i, p in enumerate(got):
        if len(p) > rc[i] * rtyp[i].size:
            raise Exception(ERR_TRUNCATE, f"rank {i} sent {len(p)} bytes for a slot of {rc[i]} x {rtyp[i].name}")
        rmv[rd[i]:rd[i] + len(p)] = p


def _place(mv: memoryview, dt: Datatype, count: int, displ: int, data: bytes, who: str) -> None:
    if len(data) > count * dt.size:
        raise Exception(ERR_TRUNCATE, f"{who} sent {len(data)} bytes for a slot of {count} x {dt.name}")
    start = displ * dt.size
    mv[start:start + len(data)] = data


# ---------------------------------------------------------------- module-level

COMM_NULL = Intracomm(Group(), -1, "MPI_COMM_NULL")


class _WorldComm(Intracomm):
    """COMM_WORLD: every rank of the run (resolved at call time)."""

    def __init__(self):
        super().__init__(Group(), 0, "MPI_COMM_WORLD")

    def _me(self):
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        if ctx.runtime.cpu_factor:
            ctx.runtime.charge_host_cpu(ctx)
        return ctx, ctx.rank


class _SelfComm(Intracomm):
    """COMM_SELF: the calling rank alone (its own context per rank)."""

    def __init__(self):
        super().__init__(Group(), 2, "MPI_COMM_SELF")

    def _bind(self) -> None:
        self._p2p = None  # the group is the caller's own: the general path
        self._p2p_group = None

    def _me(self):
        ctx = _ctx()
        self._group = Group([ctx.rank])
        ctx.runtime.charge_host_cpu(ctx)
        return ctx, 0

    def Get_size(self) -> int:
        return 1

    def Get_group(self) -> Group:
        return Group([_ctx().rank])


COMM_WORLD = _WorldComm()
COMM_SELF = _SelfComm()


def _reset(nranks: int) -> None:
    """Prepares the module for a new run of `nranks` ranks."""
    _members_cache.clear()
    COMM_WORLD._group = Group(range(nranks))
    COMM_WORLD._bind()
    _state.update(initialized=True, finalized=False, buffer=None)


_state = {"initialized": True, "finalized": False, "buffer": None}


def Wtime() -> float:
    """Simulated time of the calling rank, seconds."""
    ctx = _ctx()
    rt = ctx.runtime
    rt.charge_host_cpu(ctx)
    return rt.seconds(rt.world.rank_time(ctx.rank))


def Wtick() -> float:
    ctx = _ctx()
    return 1.0 / ctx.runtime.ticks_per_second


def Get_processor_name() -> str:
    ctx = _ctx()
    x, y, z, t = ctx.runtime.world.coords(ctx.rank)
    return f"bgsim-node-{x}-{y}-{z}"


def Get_version() -> Tuple[int, int]:
    return (VERSION, SUBVERSION)


def Get_library_version() -> str:
    from . import __version__
    return f"bgsim {__version__} simulated MPI (MPI {VERSION}.{SUBVERSION} point-to-point and collectives on a simulated Blue Gene)"


def get_vendor() -> Tuple[str, Tuple[int, int, int]]:
    from . import __version__
    parts = [int(p) for p in __version__.split(".")[:3] if p.isdigit()]
    return ("bgsim", tuple((parts + [0, 0, 0])[:3]))


def Init() -> None:
    _state["initialized"] = True


def Init_thread(required: int = THREAD_MULTIPLE) -> int:
    _state["initialized"] = True
    return THREAD_SINGLE


def Query_thread() -> int:
    return THREAD_SINGLE


def Is_thread_main() -> bool:
    return True


def Finalize() -> None:
    pass


def Is_initialized() -> bool:
    return _state["initialized"]


def Is_finalized() -> bool:
    return _state["finalized"]


def Attach_buffer(buf: Any) -> None:
    _ctx().state["buffer"] = buf


def Detach_buffer() -> Any:
    return _ctx().state.pop("buffer", None)


def Pcontrol(level: int) -> None:
    pass
