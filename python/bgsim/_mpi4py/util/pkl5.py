"""``mpi4py.util.pkl5`` on the simulated MPI: communicators whose
pickle-based calls handle large objects (pickle protocol 5). The simulated
MPI has no message-size limit to work around, so these wrap a communicator
and pass its lowercase calls through, with the same results and costs."""

from __future__ import annotations

from typing import Any

from bgsim.errors import ArgumentTypeError
from bgsim.mpishim.comm import Comm as _Comm


class Comm:
    """A pkl5 communicator over `comm` (any attribute is the wrapped one's)."""

    def __init__(self, comm: Any = None):
        from bgsim import MPI  # noqa: PLC0415 (MPI imports the shim, which this module is part of)
        self.comm = MPI.COMM_NULL if comm is None else (comm.comm if isinstance(comm, Comm) else comm)
        if not isinstance(self.comm, _Comm):
            raise ArgumentTypeError(f"pkl5.{type(self).__name__}: expecting a communicator, got {type(comm).__name__}")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.comm, name)

    def __eq__(self, other: Any) -> bool:
        return self.comm == (other.comm if isinstance(other, Comm) else other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        return bool(self.comm)

    def Dup(self, *args: Any) -> "Comm":
        return type(self)(self.comm.Dup(*args))

    def Split(self, *args: Any, **kw: Any) -> "Comm":
        return type(self)(self.comm.Split(*args, **kw))


class Intracomm(Comm):
    """A pkl5 intracommunicator."""


class Intercomm(Comm):
    """A pkl5 intercommunicator."""
