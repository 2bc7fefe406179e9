"""Reduction operations."""

from __future__ import annotations

from typing import Any

import numpy as _np

from .. import runtime as _rt
from ..errors import ArgumentTypeError
from ..errors import UsageError as _ValueError
from .datatypes import Datatype
from .errors import ERR_OP, Exception
from .handles import Handle


#: User-defined operations that may exist at once in a process (as in Open
#: MPI and MPICH builds of mpi4py): every rank counts its own.
MAX_USER_OPS = 32
_user_ops = [0]  # outside any rank


def _user_op_count() -> list:
    """The calling rank's count of user-defined operations (a one-item list)."""
    return _rt.rank_own("user_ops", lambda: [0], _user_ops)


class Op(Handle):
    """A reduction operation (predefined or from ``Op.Create``). ``Op()`` is
    a null operation, ``Op(op)`` a new handle of `op` (equal to it)."""

    def __init__(self, name: Any = None, np_fn: Any = None, py_fn: Any = None, commute: bool = True, user: Any = None):
        if isinstance(name, Op):
            self.__dict__.update({k: v for k, v in name.__dict__.items() if k != "_handle"})
            return
        if name is None:
            name = "MPI_OP_NULL"
        elif not isinstance(name, str):
            raise ArgumentTypeError(f"Op(): expecting an Op, got {type(name).__name__}")
        self.name = name
        self._np = np_fn
        self._py = py_fn
        self._commute = commute
        self._user = user
        self._key = name if user is None else object()

    @classmethod
    def Create(cls, function: Any, commute: bool = False) -> "Op":
        """A user-defined operation: ``function(invec, inoutvec, datatype)``
        combines invec into inoutvec in place (objects: datatype None, and it
        returns the result)."""
        count = _user_op_count()
        if count[0] >= MAX_USER_OPS:
            raise Exception(ERR_OP, f"Op.Create: at most {MAX_USER_OPS} user-defined operations at once in a process "
                                    "(Free some)")
        count[0] += 1
        return cls(f"user:{getattr(function, '__name__', 'op')}", commute=commute, user=function)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Op) and other._key is self._key

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(id(self._key)) if self._user is not None else hash(self._key)

    def __bool__(self) -> bool:
        return self.name != "MPI_OP_NULL"

    _clone = False  # a handle got back from its integer (fromint / f2py)

    @classmethod
    def fromint(cls, handle: int) -> "Op":
        """The operation of integer handle `handle`; a user-defined one comes
        back as a new handle that does not carry its Python function (as in
        mpi4py: it works, but does not pickle)."""
        op = super().fromint(handle)
        if op._user is None:
            return op
        clone = object.__new__(cls)
        clone.__dict__.update(op.__dict__)
        clone._clone = True
        return clone

    def __reduce__(self) -> Any:
        if self._clone:
            raise _ValueError("cannot pickle a user-defined operation got back from its integer handle")
        if self._user is not None:
            return (Op.Create, (self._user, self._commute))
        named = globals().get(self.name.replace("MPI_", "", 1))
        if named is self:
            return self.name.replace("MPI_", "", 1)
        return (Op, (named,))

    def Is_commutative(self) -> bool:
        return self._commute

    @property
    def is_commutative(self) -> bool:
        return self._commute

    @property
    def is_predefined(self) -> bool:
        return self._user is None

    def Free(self) -> None:
        if self._user is None:
            raise Exception(ERR_OP, f"Free: {self.name} is {'null' if not self else 'predefined'}")
        if self.name != "MPI_OP_NULL":
            count = _user_op_count()
            count[0] = max(0, count[0] - 1)
            self.name = "MPI_OP_NULL"

    def __call__(self, x: Any, y: Any) -> Any:
        """Combines two Python objects (pickle API), x op y."""
        if self._user is not None:
            return self._user(x, y, None)
        if self._py is None:
            raise _ValueError(f"{self.name} cannot combine Python objects")
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

    def Reduce_local(self, inbuf: Any, inoutbuf: Any) -> None:
        """MPI_Reduce_local: inoutbuf = inbuf op inoutbuf, on this rank only."""
        from .buffers import _msg
        a, b = _msg(inbuf, recv=False), _msg(inoutbuf, recv=True)
        if a.nbytes != b.nbytes:
            raise _ValueError(f"Reduce_local: {a.count} x {a.dt.name} into a buffer of {b.count} x {b.dt.name} "
                              f"({a.nbytes} and {b.nbytes} bytes)")
        x = _np.frombuffer(a.mv, dtype=a.dt.np)[:a.count]
        y = _np.frombuffer(b.mv, dtype=b.dt.np)[:b.count]
        y[...] = self._arrays(x, y.copy(), b.dt)

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
