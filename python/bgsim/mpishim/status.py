"""``MPI.Status``."""

from __future__ import annotations

from typing import Optional

from .constants import ANY_SOURCE, ANY_TAG, UNDEFINED
from .datatypes import BYTE, Datatype
from .errors import SUCCESS


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

    def Set_elements(self, datatype: Datatype, count: int) -> None:
        """Sets the count to `count` elements of `datatype` (MPI_Status_set_elements)."""
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

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} count={self._count}>"
