"""Datatypes: the predefined ones and their numpy types."""

from __future__ import annotations

import itertools as _itertools
import operator as _operator
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as _np

from ..errors import ArgumentTypeError, DatatypeLookupError, UsageError
from .constants import KEYVAL_INVALID, UNDEFINED
from .errors import ERR_ARG, ERR_COUNT, ERR_KEYVAL, ERR_TYPE, Exception, _guard


class _Type:
    """What a datatype handle stands for: its type map as byte runs, its
    bounds, and how it was built (combiner, contents, constructor
    arguments)."""

    __slots__ = ("name", "np", "runs", "size", "lb", "ub", "true_lb", "true_ub", "align", "combiner", "contents",
                 "decoded", "committed", "idx")

    def __init__(self, name: str, np_dtype: Any, runs: Tuple[Tuple[int, int], ...], lb: int, ub: int,
                 true_lb: int, true_ub: int, align: int, combiner: int, contents: tuple = ((), (), (), ()),
                 decoded: Optional[tuple] = None):
        self.name = name
        self.np = np_dtype
        self.runs = runs
        self.size = sum(n for _, n in runs)
        self.lb, self.ub, self.true_lb, self.true_ub = lb, ub, true_lb, true_ub
        self.align = align
        self.combiner = combiner
        self.contents = contents
        self.decoded = decoded
        self.committed = combiner in (COMBINER_NAMED, COMBINER_F90_INTEGER, COMBINER_F90_REAL, COMBINER_F90_COMPLEX)
        self.idx: Optional[_np.ndarray] = None

    @property
    def contiguous(self) -> bool:
        """One element is `size` bytes from its origin, with no gap, and
        elements follow each other (extent = size, lb = 0)."""
        return self.lb == 0 and self.ub == self.size and (self.runs == ((0, self.size),) or not self.runs)

    def element_bytes(self) -> "_np.ndarray":
        """Byte offsets of one element's data, in type-map order."""
        if self.idx is None:
            self.idx = (_np.concatenate([_np.arange(o, o + n, dtype=_np.int64) for o, n in self.runs])
                        if self.runs else _np.zeros(0, dtype=_np.int64))
        return self.idx


def _named(name: str, np_dtype: Any) -> _Type:
    d = _np.dtype(np_dtype)
    return _Type(name, d, ((0, d.itemsize),), 0, d.itemsize, 0, d.itemsize, max(1, d.alignment), COMBINER_NAMED)


(COMBINER_NAMED, COMBINER_DUP, COMBINER_CONTIGUOUS, COMBINER_VECTOR, COMBINER_HVECTOR, COMBINER_INDEXED,
 COMBINER_HINDEXED, COMBINER_INDEXED_BLOCK, COMBINER_HINDEXED_BLOCK, COMBINER_STRUCT, COMBINER_SUBARRAY,
 COMBINER_DARRAY, COMBINER_F90_REAL, COMBINER_F90_COMPLEX, COMBINER_F90_INTEGER, COMBINER_RESIZED,
 COMBINER_VALUE_INDEX) = range(17)
_COMBINER_NAMES = ["NAMED", "DUP", "CONTIGUOUS", "VECTOR", "HVECTOR", "INDEXED", "HINDEXED", "INDEXED_BLOCK",
                   "HINDEXED_BLOCK", "STRUCT", "SUBARRAY", "DARRAY", "F90_REAL", "F90_COMPLEX", "F90_INTEGER",
                   "RESIZED", "VALUE_INDEX"]
TYPECLASS_INTEGER, TYPECLASS_REAL, TYPECLASS_COMPLEX = 1, 2, 3
#: No logical types of given sizes (MPI_UNDEFINED, as mpi4py has it then).
TYPECLASS_LOGICAL = -32766
ORDER_C, ORDER_FORTRAN = 0, 1
ORDER_F = ORDER_FORTRAN


def _merge(runs: List[Tuple[int, int]]) -> Tuple[Tuple[int, int], ...]:
    out: List[List[int]] = []
    for o, n in runs:
        if n <= 0:
            continue
        if out and out[-1][0] + out[-1][1] == o:
            out[-1][1] += n
        else:
            out.append([o, n])
    return tuple((o, n) for o, n in out)


def _index(value: Any, what: str) -> int:
    try:
        return _operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"Datatype: {what} must be an integer, got {value!r}") from None


def _compose(name: str, entries: List[Tuple[int, int, "_Type"]], combiner: int, contents: tuple, decoded: tuple,
             struct: bool = False) -> _Type:
    """A type of `entries` (byte displacement, block length, child type):
    each block is that many children one extent apart."""
    runs: List[Tuple[int, int]] = []
    lbs, ubs, tlbs, tubs = [], [], [], []
    align = 1
    np_types = set()
    for disp, bl, t in entries:
        if bl < 0:
            raise Exception(ERR_COUNT, f"{name}: negative block length {bl}")
        align = max(align, t.align)
        if bl == 0:
            continue
        ext = t.ub - t.lb
        if t.contiguous:
            runs.append((disp, bl * t.size))
        else:
            for k in range(bl):
                base = disp + k * ext
                runs.extend((base + o, n) for o, n in t.runs)
        lbs.append(disp + t.lb)
        ubs.append(disp + (bl - 1) * ext + t.ub)
        if t.size:
            tlbs.append(disp + t.true_lb)
            tubs.append(disp + (bl - 1) * ext + t.true_ub)
        np_types.add(t.np.str if t.np is not None else None)
    lb, ub = (min(lbs), max(ubs)) if lbs else (0, 0)
    if struct and (ub - lb) % align:
        ub += align - (ub - lb) % align
    true_lb, true_ub = (min(tlbs), max(tubs)) if tlbs else (0, 0)
    basic = None
    if len(np_types) == 1 and None not in np_types:
        basic = _np.dtype(next(iter(np_types)))
    return _Type(name, basic, _merge(runs), lb, ub, true_lb, true_ub, align, combiner, contents, decoded)


class Datatype:
    """An MPI datatype: predefined, or built by a constructor (contiguous,
    vector, indexed, struct, subarray, resized, ...). Copies made with
    ``Datatype(dt)`` share the handle and compare equal."""

    __slots__ = ("_t",)

    @classmethod
    def Create_keyval(cls, *args: Any, **kwargs: Any) -> int:
        """Attributes on datatypes are not simulated (communicators have them)."""
        raise NotImplementedError("attributes on datatypes are not simulated by bgsim")

    Free_keyval = Create_keyval

    def __init__(self, datatype: Any = None, np_dtype: Any = None):
        if isinstance(datatype, Datatype):
            self._t = datatype._t
        elif datatype is None:
            self._t = _NULL_TYPE
        elif isinstance(datatype, str) and np_dtype is not None:
            self._t = _named(datatype, np_dtype)
        else:
            raise ArgumentTypeError(f"Datatype: expecting a Datatype, got {type(datatype).__name__}")

    @classmethod
    def _of(cls, t: _Type) -> "Datatype":
        d = cls.__new__(cls)
        d._t = t
        return d

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Datatype) and other._t is self._t

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self._t)

    def __bool__(self) -> bool:
        return self._t is not _NULL_TYPE

    def __reduce__(self) -> Any:
        t = self._t
        if t.combiner == COMBINER_NAMED or t is _NULL_TYPE:
            named = _BY_NAME.get(t.name)
            if named is not None:
                return (_named_copy, (t.name,)) if named is not self else t.name.replace("MPI_", "", 1).replace("2INT", "TWOINT")
        oldtype, combiner, params = self.decode()
        return (_create, (oldtype, combiner, params))

    @classmethod
    def fromcode(cls, code: str) -> "Datatype":
        """The predefined datatype of a Python struct / numpy type code ('i', 'd', 'f8' ...)."""
        dt = _TYPEDICT.get(code)
        if dt is not None:
            return dt
        try:
            npd = _np.dtype(code)
        except TypeError:
            raise UsageError(f"cannot map typecode {code!r} to MPI datatype") from None
        return _NP_TO_DT.get(npd.str) or cls(f"typecode {code!r}", npd)

    def tocode(self) -> str:
        """The type code `fromcode` maps back to a datatype of the same kind
        and size: a struct / array character where one names it, else
        numpy's; only for datatypes of one basic element."""
        t = self._basic()
        if t is _NULL_TYPE or t.np is None or t.np.fields is not None or t.combiner not in _BASIC_COMBINERS:
            raise UsageError(f"cannot map MPI datatype {self.name or '(unnamed)'} to a typecode")
        for code, dt in _TYPEDICT.items():
            if dt.typechar == self.typechar and dt.typestr == self.typestr:
                return code
        return self.typestr

    # -- properties --

    @property
    def np(self) -> Any:
        """The numpy type of one basic element (None when the elements differ)."""
        return self._t.np if self._t.np is not None else _np.dtype(f"V{max(1, self._t.size)}")

    @property
    def name(self) -> str:
        return self._t.name

    @name.setter
    def name(self, value: str) -> None:
        self._t.name = value

    def _basic(self) -> "Datatype":
        """What a duplicate duplicates (itself for any other datatype)."""
        t = self._t
        while t.combiner == COMBINER_DUP:
            t = t.contents[3][0]._t
        return t

    @property
    def typechar(self) -> str:
        t = self._basic()
        return t.np.char if t.np is not None and t.combiner in _BASIC_COMBINERS else "V"

    @property
    def typestr(self) -> str:
        t = self._basic()
        if t.np is not None and t.np.fields is None and t.combiner in _BASIC_COMBINERS:
            return t.np.str
        return f"V{t.ub - t.lb}"

    @property
    def size(self) -> int:
        return self._t.size

    @property
    def extent(self) -> int:
        return self._t.ub - self._t.lb

    @property
    def lb(self) -> int:
        return self._t.lb

    @property
    def ub(self) -> int:
        return self._t.ub

    @property
    def true_lb(self) -> int:
        return self._t.true_lb

    @property
    def true_ub(self) -> int:
        return self._t.true_ub

    @property
    def true_extent(self) -> int:
        return self._t.true_ub - self._t.true_lb

    @property
    def combiner(self) -> int:
        return self._t.combiner

    @property
    def envelope(self) -> Tuple[int, int, int, int, int]:
        return self.Get_envelope()

    @property
    def contents(self) -> tuple:
        return self.Get_contents()

    @property
    def is_named(self) -> bool:
        return self._t.combiner == COMBINER_NAMED

    @property
    def is_predefined(self) -> bool:
        return self._t.combiner in (COMBINER_NAMED, COMBINER_F90_INTEGER, COMBINER_F90_REAL, COMBINER_F90_COMPLEX)

    def Get_size(self) -> int:
        return self.size

    def Get_extent(self) -> Tuple[int, int]:
        return (self.lb, self.extent)

    def Get_true_extent(self) -> Tuple[int, int]:
        return (self.true_lb, self.true_extent)

    def Get_name(self) -> str:
        return self._t.name

    def Set_name(self, name: str) -> None:
        self._t.name = name

    def Get_envelope(self) -> Tuple[int, int, int, int, int]:
        i, a, c, d = self._t.contents
        return (len(i), len(a), len(c), len(d), self._t.combiner)

    def Get_contents(self) -> Tuple[List[int], List[int], List[int], List["Datatype"]]:
        if self.is_named:
            raise Exception(ERR_TYPE, "Get_contents: a named datatype has no contents")
        i, a, c, d = self._t.contents
        return (list(i), list(a), list(c), list(d))

    def decode(self) -> Tuple["Datatype", str, dict]:
        """(base datatype, combiner name, constructor arguments), as mpi4py's."""
        t = self._t
        if t.combiner == COMBINER_NAMED:
            return (self, "NAMED", {})
        oldtype, params = t.decoded
        return (oldtype, _COMBINER_NAMES[t.combiner], dict(params))

    def Commit(self) -> "Datatype":
        self._t.committed = True
        return self

    def Free(self) -> None:
        """Frees a derived datatype; a predefined one cannot be freed."""
        if self.is_predefined:
            raise Exception(ERR_TYPE, f"Free: {self.name} is predefined")

    def Get_attr(self, keyval: int) -> Any:
        """Datatypes carry no attributes here (an invalid key is an error)."""
        if keyval == KEYVAL_INVALID:
            raise Exception(ERR_KEYVAL, "Get_attr: MPI_KEYVAL_INVALID")
        return None

    def free(self) -> None:
        self.Free()

    def Dup(self) -> "Datatype":
        t = self._t
        return Datatype._of(_Type(t.name, t.np, t.runs, t.lb, t.ub, t.true_lb, t.true_ub, t.align, COMBINER_DUP,
                                  ((), (), (), (self,)), (self, {})))

    #: mpi4py's alias (the constructor `decode()` names for a DUP type).
    Create_dup = Dup

    # -- constructors --

    def Create_contiguous(self, count: int) -> "Datatype":
        count = _index(count, "count")
        if count < 0:
            raise Exception(ERR_COUNT, f"Create_contiguous: count {count} is negative")
        t = _compose(f"contiguous({count} x {self.name})", [(0, count, self._t)], COMBINER_CONTIGUOUS,
                     ((count,), (), (), (self,)), (self, {"count": count}))
        return Datatype._of(t)

    def Create_vector(self, count: int, blocklength: int, stride: int) -> "Datatype":
        count, bl, stride = _index(count, "count"), _index(blocklength, "blocklength"), _index(stride, "stride")
        ext = self.extent
        t = _compose("vector", [(k * stride * ext, bl, self._t) for k in range(count)], COMBINER_VECTOR,
                     ((count, bl, stride), (), (), (self,)), (self, {"count": count, "blocklength": bl, "stride": stride}))
        return Datatype._of(t)

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> "Datatype":
        count, bl, stride = _index(count, "count"), _index(blocklength, "blocklength"), _index(stride, "stride")
        t = _compose("hvector", [(k * stride, bl, self._t) for k in range(count)], COMBINER_HVECTOR,
                     ((count, bl), (stride,), (), (self,)), (self, {"count": count, "blocklength": bl, "stride": stride}))
        return Datatype._of(t)

    def Create_indexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> "Datatype":
        bls, ds = _ints(blocklengths, "blocklengths"), _ints(displacements, "displacements")
        _same_length(bls, ds)
        ext = self.extent
        t = _compose("indexed", [(d * ext, b, self._t) for b, d in zip(bls, ds)], COMBINER_INDEXED,
                     ((len(bls), *bls, *ds), (), (), (self,)), (self, {"blocklengths": bls, "displacements": ds}))
        return Datatype._of(t)

    def Create_hindexed(self, blocklengths: Sequence[int], displacements: Sequence[int]) -> "Datatype":
        bls, ds = _ints(blocklengths, "blocklengths"), _ints(displacements, "displacements")
        _same_length(bls, ds)
        t = _compose("hindexed", [(d, b, self._t) for b, d in zip(bls, ds)], COMBINER_HINDEXED,
                     ((len(bls), *bls), tuple(ds), (), (self,)), (self, {"blocklengths": bls, "displacements": ds}))
        return Datatype._of(t)

    def Create_indexed_block(self, blocklength: int, displacements: Sequence[int]) -> "Datatype":
        bl, ds = _index(blocklength, "blocklength"), _ints(displacements, "displacements")
        ext = self.extent
        t = _compose("indexed_block", [(d * ext, bl, self._t) for d in ds], COMBINER_INDEXED_BLOCK,
                     ((len(ds), bl, *ds), (), (), (self,)), (self, {"blocklength": bl, "displacements": ds}))
        return Datatype._of(t)

    def Create_hindexed_block(self, blocklength: int, displacements: Sequence[int]) -> "Datatype":
        bl, ds = _index(blocklength, "blocklength"), _ints(displacements, "displacements")
        t = _compose("hindexed_block", [(d, bl, self._t) for d in ds], COMBINER_HINDEXED_BLOCK,
                     ((len(ds), bl), tuple(ds), (), (self,)), (self, {"blocklength": bl, "displacements": ds}))
        return Datatype._of(t)

    @staticmethod
    def Create_struct(blocklengths: Sequence[int], displacements: Sequence[int], datatypes: Sequence["Datatype"]) -> "Datatype":
        bls, ds = _ints(blocklengths, "blocklengths"), _ints(displacements, "displacements")
        types = list(datatypes)
        _same_length(bls, ds)
        _same_length(bls, types)
        for dt in types:
            if not isinstance(dt, Datatype):
                raise ArgumentTypeError(f"Create_struct: expecting Datatypes, got {type(dt).__name__}")
        t = _compose("struct", [(d, b, dt._t) for b, d, dt in zip(bls, ds, types)], COMBINER_STRUCT,
                     ((len(bls), *bls), tuple(ds), (), tuple(types)),
                     (DATATYPE_NULL, {"blocklengths": bls, "displacements": ds, "datatypes": types}), struct=True)
        return Datatype._of(t)

    def Create_subarray(self, sizes: Sequence[int], subsizes: Sequence[int], starts: Sequence[int],
                        order: int = ORDER_C) -> "Datatype":
        sizes, subsizes, starts = _ints(sizes, "sizes"), _ints(subsizes, "subsizes"), _ints(starts, "starts")
        _same_length(sizes, subsizes)
        _same_length(sizes, starts)
        nd = len(sizes)
        for k in range(nd):
            if sizes[k] < 1 or subsizes[k] < 0 or starts[k] < 0 or starts[k] + subsizes[k] > sizes[k]:
                raise Exception(ERR_ARG, f"Create_subarray: dimension {k}: size {sizes[k]}, subsize {subsizes[k]}, start {starts[k]}")
        if order not in (ORDER_C, ORDER_FORTRAN):
            raise Exception(ERR_ARG, f"Create_subarray: order {order} is neither ORDER_C nor ORDER_FORTRAN")
        dims = list(range(nd)) if order == ORDER_FORTRAN else list(range(nd - 1, -1, -1))  # fastest first
        ext = self.extent
        strides = [0] * nd
        acc = 1
        for k in dims:
            strides[k] = acc
            acc *= sizes[k]
        fast = dims[0] if nd else None
        entries = []
        if nd and all(s > 0 for s in subsizes):
            outer = [k for k in dims[1:]]
            for idx in _itertools.product(*[range(starts[k], starts[k] + subsizes[k]) for k in reversed(outer)]):
                off = starts[fast] * strides[fast]
                for k, i in zip(reversed(outer), idx):
                    off += i * strides[k]
                entries.append((off * ext, subsizes[fast], self._t))
        t = _compose("subarray", entries, COMBINER_SUBARRAY,
                     ((nd, *sizes, *subsizes, *starts, order), (), (), (self,)),
                     (self, {"sizes": sizes, "subsizes": subsizes, "starts": starts, "order": order}))
        # A subarray spans the whole array.
        total = acc * ext
        t.lb, t.ub = 0, total
        return Datatype._of(t)

    def Create_darray(self, size: int, rank: int, gsizes: Sequence[int], distribs: Sequence[int],
                      dargs: Sequence[int], psizes: Sequence[int], order: int = ORDER_C) -> "Datatype":
        raise NotImplementedError("Datatype.Create_darray (distributed arrays) is not simulated by bgsim")

    def Create_resized(self, lb: int, extent: int) -> "Datatype":
        lb, extent = _index(lb, "lb"), _index(extent, "extent")
        t = self._t
        return Datatype._of(_Type("resized", t.np, t.runs, lb, lb + extent, t.true_lb, t.true_ub, t.align,
                                  COMBINER_RESIZED, ((), (lb, extent), (), (self,)), (self, {"lb": lb, "extent": extent})))

    @staticmethod
    def Create_f90_integer(r: int) -> "Datatype":
        for digits, dt in ((2, INTEGER1), (4, INTEGER2), (9, INTEGER4), (18, INTEGER8)):
            if r <= digits:
                return _f90(dt, COMBINER_F90_INTEGER, (r,), {"r": r})
        raise Exception(ERR_ARG, f"Create_f90_integer: no integer type has {r} decimal digits")

    @staticmethod
    def Create_f90_real(p: int, r: int) -> "Datatype":
        return _f90(_float_kind(p, r, (REAL4, REAL8, REAL16), "real"), COMBINER_F90_REAL, (p, r), {"p": p, "r": r})

    @staticmethod
    def Create_f90_complex(p: int, r: int) -> "Datatype":
        return _f90(_float_kind(p, r, (COMPLEX8, COMPLEX16, COMPLEX32), "complex"), COMBINER_F90_COMPLEX, (p, r), {"p": p, "r": r})

    @staticmethod
    def Match_size(typeclass: int, size: int) -> "Datatype":
        table = {TYPECLASS_INTEGER: (INTEGER1, INTEGER2, INTEGER4, INTEGER8, INTEGER16),
                 TYPECLASS_REAL: (REAL2, REAL4, REAL8, REAL16), TYPECLASS_COMPLEX: (COMPLEX4, COMPLEX8, COMPLEX16, COMPLEX32)}
        for dt in table.get(typeclass, ()):
            if dt.size == size:
                return dt
        raise Exception(ERR_ARG, f"Match_size: no type of class {typeclass} has {size} bytes")

    @staticmethod
    def Get_value_index(value: "Datatype", index: "Datatype") -> "Datatype":
        """The predefined pair type of (value, index) (MPI_FLOAT_INT ...),
        or DATATYPE_NULL when there is none."""
        for dt, what in ((value, "value"), (index, "index")):
            if dt == DATATYPE_NULL:
                raise Exception(ERR_TYPE, f"Get_value_index: the {what} type is MPI_DATATYPE_NULL")
        if index != INT:
            return DATATYPE_NULL
        pairs = {FLOAT: FLOAT_INT, DOUBLE: DOUBLE_INT, LONG: LONG_INT, INT: TWOINT, SHORT: SHORT_INT,
                 LONG_DOUBLE: LONG_DOUBLE_INT}
        return pairs.get(value, DATATYPE_NULL)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Datatype {self.name}>"


def _ints(values: Any, what: str) -> List[int]:
    try:
        items = list(values)
    except TypeError:
        raise ArgumentTypeError(f"Datatype: {what} must be a sequence of integers, got {type(values).__name__}") from None
    return [_index(v, what) for v in items]


def _same_length(a: Sequence[Any], b: Sequence[Any]) -> None:
    if len(a) != len(b):
        raise UsageError(f"Datatype: sequences of different lengths ({len(a)} and {len(b)})")


def _float_kind(p: int, r: int, kinds: Tuple["Datatype", ...], what: str) -> "Datatype":
    p = 0 if p == UNDEFINED else p
    r = 0 if r == UNDEFINED else r
    for dt, (digits, exponent) in zip(kinds, ((6, 37), (15, 307), (33, 4931))):
        if p <= digits and r <= exponent:
            return dt
    raise Exception(ERR_ARG, f"Create_f90_{what}: no {what} type has precision {p} and range {r}")


def _f90(dt: "Datatype", combiner: int, ints: tuple, params: dict) -> "Datatype":
    t = dt._t
    return Datatype._of(_Type(t.name, t.np, t.runs, t.lb, t.ub, t.true_lb, t.true_ub, t.align, combiner,
                              (ints, (), (), ()), (DATATYPE_NULL, params)))


def _create(oldtype: "Datatype", combiner: str, params: dict) -> "Datatype":
    """Rebuilds a datatype from `decode()`'s parts (for pickling)."""
    if combiner == "DUP":
        return oldtype.Dup()
    return getattr(oldtype, f"Create_{combiner.lower()}")(**params).Commit()


def _named_copy(name: str) -> "Datatype":
    """A new handle of a named datatype (``MPI.Datatype(MPI.INT)``, pickled)."""
    return Datatype(_BY_NAME[name])



_BY_NAME: Dict[str, Datatype] = {}


def _dt(name: str, np_dtype: Any) -> Datatype:
    dt = Datatype(name, np_dtype)
    _BY_NAME[name] = dt
    return dt


_NULL_TYPE = _Type("MPI_DATATYPE_NULL", _np.dtype("u1"), (), 0, 0, 0, 0, 1, COMBINER_NAMED)
DATATYPE_NULL = Datatype._of(_NULL_TYPE)
_BY_NAME["MPI_DATATYPE_NULL"] = DATATYPE_NULL
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
DISTRIBUTE_NONE, DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC = 0, 1, 2
DISTRIBUTE_DFLT_DARG = -49767
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
    "Zf": C_FLOAT_COMPLEX, "Zd": C_DOUBLE_COMPLEX, "Zg": C_LONG_DOUBLE_COMPLEX, "e": FLOAT16_T,
    "n": LONG, "N": UNSIGNED_LONG,
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


#: Datatypes of one basic element: the named ones and Fortran's sized ones.
_BASIC_COMBINERS = (COMBINER_NAMED, COMBINER_F90_INTEGER, COMBINER_F90_REAL, COMBINER_F90_COMPLEX)


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


# MPI_DATATYPE_NULL: constructors and Commit / Free raise MPI_ERR_TYPE.
_guard(Datatype, ("Dup", "Commit", "Create_contiguous", "Create_vector", "Create_hvector", "Create_indexed",
                  "Create_hindexed", "Create_indexed_block", "Create_hindexed_block", "Create_subarray",
                  "Create_resized", "Get_attr"),
       lambda d: d._t is _NULL_TYPE, ERR_TYPE, "MPI_DATATYPE_NULL")
