"""One-sided communication (``MPI.Win``): not simulated. Creating a window
raises NotImplementedError naming the feature, as mpi4py programs that
probe for it expect; ``MPI.WIN_NULL`` exists so they can compare against it."""

from __future__ import annotations

from typing import Any

from .errors import ERR_WIN, Exception

_WHY = "one-sided communication (MPI.Win) is not simulated by bgsim"


class Win:
    """An RMA window; only WIN_NULL exists."""

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

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def unsupported(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(f"Win.{name}: {_WHY}")
        return unsupported

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Win)

    def __hash__(self) -> int:
        return 0


WIN_NULL = Win()
