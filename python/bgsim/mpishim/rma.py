"""One-sided communication (``MPI.Win``): not simulated. Creating a window
raises NotImplementedError naming the feature, as mpi4py programs that
probe for it expect; ``MPI.WIN_NULL`` exists so they can compare against it."""

from __future__ import annotations

from typing import Any

from .errors import ERR_WIN, Exception
from .handles import NullOnly

_WHY = "one-sided communication (MPI.Win) is not simulated by bgsim"


class Win(NullOnly):
    """An RMA window; only WIN_NULL exists."""

    _WHY = _WHY

    @classmethod
    def Create(cls, *args: Any, **kwargs: Any) -> "Win":
        raise NotImplementedError(_WHY)

    Allocate = Create
    Allocate_shared = Create
    Create_dynamic = Create

    def Free(self) -> None:
        raise Exception(ERR_WIN, "Free: MPI_WIN_NULL")

    def Get_errhandler(self) -> Any:
        raise Exception(ERR_WIN, "Get_errhandler: MPI_WIN_NULL")

    def Set_errhandler(self, errhandler: Any) -> None:
        raise Exception(ERR_WIN, "Set_errhandler: MPI_WIN_NULL")

    def Call_errhandler(self, errorcode: int) -> None:
        raise Exception(ERR_WIN, "Call_errhandler: MPI_WIN_NULL")


WIN_NULL = Win()
