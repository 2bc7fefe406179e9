"""Reduction operations."""

from __future__ import annotations

from typing import Any

import numpy as _np

from ..errors import UsageError as _ValueError
from .datatypes import Datatype
from .errors import ERR_OP, Exception
from .handles import Handle


class Op(Handle):
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
