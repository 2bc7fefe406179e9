"""``MPI.Status``."""

from __future__ import annotations

from typing import Any, Iterator, Optional

from ..errors import ArgumentTypeError
from .constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from .datatypes import BYTE, DATATYPE_NULL, Datatype
from .errors import ERR_TYPE, SUCCESS, Exception

_FIELDS = ("source", "tag", "error", "_count", "_cancelled")


class _StatusMemory:
    """A status's fields as a sequence of integers that writes through
    (``Status.tomemory()``)."""

    def __init__(self, status: "Status"):
        self._status = status

    def __len__(self) -> int:
        return len(_FIELDS)

    def __getitem__(self, i: int) -> int:
        return int(getattr(self._status, _FIELDS[i]))

    def __setitem__(self, i: int, value: int) -> None:
        setattr(self._status, _FIELDS[i], bool(value) if _FIELDS[i] == "_cancelled" else int(value))

    def __iter__(self) -> Iterator[int]:
        return (self[i] for i in range(len(_FIELDS)))


def _check_type(datatype: Any) -> None:
    if datatype == DATATYPE_NULL:
        raise Exception(ERR_TYPE, "MPI_DATATYPE_NULL")


class Status:
    """The status of a completed receive (or probe)."""

    def __init__(self, status: Optional["Status"] = None):
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = SUCCESS
        self._count = 0
        self._cancelled = False
        if status is not None and not isinstance(status, Status):
            raise ArgumentTypeError(f"Status(): expecting a Status, got {type(status).__name__}")
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
        _check_type(datatype)
        size = datatype.size
        if size == 0:
            return 0
        return self._count // size if self._count % size == 0 else UNDEFINED

    def Get_elements(self, datatype: Datatype) -> int:
        _check_type(datatype)
        return self._count // max(1, datatype.np.itemsize)

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        """Sets the count to `count` elements of `datatype` (MPI_Status_set_elements)."""
        _check_type(datatype)
        self._count = int(count) * max(1, datatype.np.itemsize)

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._cancelled = bool(flag)

    @property
    def count(self) -> int:
        return self._count

    @count.setter
    def count(self, value: int) -> None:
        self._count = int(value)

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        self._cancelled = bool(value)

    def tomemory(self) -> _StatusMemory:
        """The fields (source, tag, error, count, cancelled) as a writable sequence."""
        return _StatusMemory(self)

    def py2f(self) -> list:
        return list(self.tomemory())

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} count={self._count}>"
