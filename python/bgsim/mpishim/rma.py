"""One-sided communication (``MPI.Win``): not simulated. Creating a window
raises NotImplementedError naming the feature, as mpi4py programs that
probe for it expect; ``MPI.WIN_NULL`` exists so they can compare against it."""

from __future__ import annotations

from typing import Any

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
        """Freeing WIN_NULL does nothing."""

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
