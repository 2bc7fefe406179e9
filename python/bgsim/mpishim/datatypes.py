"""Datatypes: the predefined ones and their numpy types."""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as _np

from ..errors import DatatypeLookupError, UsageError
from .errors import ERR_COUNT, Exception


class Datatype:
    """A predefined (or contiguous derived) datatype."""

    def __init__(self, name: str, np_dtype: Any, base: Optional["Datatype"] = None, count: int = 1):
        self.name = name
        self.np = _np.dtype(np_dtype)
        self._base = base
        self._count = count
        self._committed = base is None

    @classmethod
    def fromcode(cls, code: str) -> "Datatype":
        """The predefined datatype of a Python struct / numpy type code ('i', 'd', 'f8' ...)."""
        try:
            dt = _np.dtype(code)
        except TypeError:
            raise UsageError(f"cannot map typecode {code!r} to a datatype") from None
        return _NP_TO_DT.get(dt.str) or cls(f"typecode {code!r}", dt)

    @property
    def typechar(self) -> str:
        return self.np.char

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
C_LONG_DOUBLE_COMPLEX = _dt("MPI_C_LONG_DOUBLE_COMPLEX", _np.clongdouble)
LONG_DOUBLE_COMPLEX = C_LONG_DOUBLE_COMPLEX
FLOAT16_T = _dt("MPI_FLOAT16_T", "f2")
C_FLOAT16 = FLOAT16_T
FLOAT32_T = _dt("MPI_FLOAT32_T", "f4")
FLOAT64_T = _dt("MPI_FLOAT64_T", "f8")
#: bfloat16 has no numpy type: 2 opaque bytes (moved, never reduced).
BFLOAT16_T = _dt("MPI_BFLOAT16_T", "V2")
# Fortran's predefined datatypes.
CHARACTER = _dt("MPI_CHARACTER", "S1")
LOGICAL = _dt("MPI_LOGICAL", "i4")
INTEGER = _dt("MPI_INTEGER", "i4")
REAL = _dt("MPI_REAL", "f4")
DOUBLE_PRECISION = _dt("MPI_DOUBLE_PRECISION", "f8")
LOGICAL1, LOGICAL2, LOGICAL4, LOGICAL8 = (_dt(f"MPI_LOGICAL{k}", f"i{k}") for k in (1, 2, 4, 8))
LOGICAL16 = _dt("MPI_LOGICAL16", "V16")
INTEGER1, INTEGER2, INTEGER4, INTEGER8 = (_dt(f"MPI_INTEGER{k}", f"i{k}") for k in (1, 2, 4, 8))
INTEGER16 = _dt("MPI_INTEGER16", "V16")
REAL2, REAL4, REAL8 = (_dt(f"MPI_REAL{k}", f"f{k}") for k in (2, 4, 8))
REAL16 = _dt("MPI_REAL16", _np.longdouble)
COMPLEX4 = _dt("MPI_COMPLEX4", "V4")
COMPLEX8, COMPLEX16 = (_dt(f"MPI_COMPLEX{k}", f"c{k}") for k in (8, 16))
COMPLEX32 = _dt("MPI_COMPLEX32", _np.clongdouble)
# Constructors' combiners and the distribution / order constants of MPI.
(COMBINER_NAMED, COMBINER_DUP, COMBINER_CONTIGUOUS, COMBINER_VECTOR, COMBINER_HVECTOR, COMBINER_INDEXED,
 COMBINER_HINDEXED, COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK, COMBINER_STRUCT, COMBINER_SUBARRAY,
 COMBINER_DARRAY, COMBINER_F90_REAL, COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER, COMBINER_RESIZED,
 COMBINER_VALUE_INDEX) = range(17)
DISTRIBUTE_NONE, DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC = 0, 1, 2
DISTRIBUTE_DFLT_DARG = -49767
ORDER_C, ORDER_FORTRAN = 0, 1
ORDER_F = ORDER_FORTRAN
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
LONG_DOUBLE_INT = _dt("MPI_LONG_DOUBLE_INT", _np.dtype([("v", _np.longdouble), ("i", "i4")], align=True))
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


# Type codes a message spec may give for its datatype (mpi4py's
# MPI._typedict): struct / array characters and numpy's sized codes.
_TYPEDICT = {
    "?": C_BOOL, "c": CHAR, "b": SIGNED_CHAR, "h": SHORT, "i": INT, "l": LONG, "q": LONG_LONG,
    "B": UNSIGNED_CHAR, "H": UNSIGNED_SHORT, "I": UNSIGNED, "L": UNSIGNED_LONG, "Q": UNSIGNED_LONG_LONG,
    "e": FLOAT16_T, "f": FLOAT, "d": DOUBLE, "g": LONG_DOUBLE,
    "F": C_FLOAT_COMPLEX, "D": C_DOUBLE_COMPLEX, "G": C_LONG_DOUBLE_COMPLEX,
    "Zf": C_FLOAT_COMPLEX, "Zd": C_DOUBLE_COMPLEX, "Zg": C_LONG_DOUBLE_COMPLEX,
    "b1": C_BOOL, "i1": INT8_T, "i2": INT16_T, "i4": INT32_T, "i8": INT64_T,
    "u1": UINT8_T, "u2": UINT16_T, "u4": UINT32_T, "u8": UINT64_T,
    "f2": FLOAT16_T, "f4": FLOAT32_T, "f8": FLOAT64_T, "c8": C_FLOAT_COMPLEX, "c16": C_DOUBLE_COMPLEX,
}


def _as_datatype(dtype: Any) -> "Datatype":
    """A message spec's datatype: a Datatype, or a type code of `_TYPEDICT`."""
    if isinstance(dtype, Datatype):
        return dtype
    try:
        return _TYPEDICT[dtype]
    except (KeyError, TypeError):
        raise DatatypeLookupError(f"cannot map {dtype!r} to MPI datatype") from None


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
