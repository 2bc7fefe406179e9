"""MPI-IO (``MPI.File``): not simulated. Opening a file raises
NotImplementedError naming the feature, as mpi4py programs that probe for
it expect (mpi4py's own tests then skip); the access-mode constants and
``MPI.FILE_NULL`` exist so such programs load."""

from __future__ import annotations

from typing import Any

from .errors import ERR_FILE, Exception
from .handles import NullOnly

_WHY = "MPI-IO (MPI.File) is not simulated by bgsim"

#: Access modes, with MPICH's values.
MODE_CREATE, MODE_RDONLY, MODE_WRONLY, MODE_RDWR = 1, 2, 4, 8
MODE_DELETE_ON_CLOSE, MODE_UNIQUE_OPEN, MODE_EXCL, MODE_APPEND, MODE_SEQUENTIAL = 16, 32, 64, 128, 256


class File(NullOnly):
    """An MPI file; only FILE_NULL exists."""

    _WHY = _WHY

    @classmethod
    def Open(cls, *args: Any, **kwargs: Any) -> "File":
        raise NotImplementedError(_WHY)

    def Close(self) -> None:
        raise Exception(ERR_FILE, "Close: MPI_FILE_NULL")


FILE_NULL = File()
