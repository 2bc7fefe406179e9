"""Every exception bgsim raises derives from :class:`BgsimError`, and also
from the standard class a Python user expects for it (``ValueError`` for a
bad value, ``TypeError`` for a wrong type, ...), so both ``except
bgsim.BgsimError`` and ``except ValueError`` catch it. The Rust core's
errors are mapped onto these classes in one place (the binding's
``to_py``). MPI errors inside a simulated program are
``MPI.Exception`` (an MPI error class and ``RuntimeError``, as in mpi4py),
which derives from :class:`BgsimError` too.

This module imports nothing else of bgsim: the binding loads it on the
first error.
"""

from __future__ import annotations


class BgsimError(Exception):
    """Base class of every bgsim error."""


class MachineError(BgsimError, ValueError):
    """The machine description (preset, TOML file, ``--set``, shape, mode) is invalid."""


class WorkloadError(BgsimError, ValueError):
    """A traffic spec, experiment or program argument is invalid, or does not fit the machine."""


class MappingError(BgsimError, ValueError):
    """The rank mapping (order name or mapfile) is invalid."""


class UsageError(BgsimError, ValueError):
    """A bad argument to a bgsim function (``nranks``, ``compute(seconds=-1)`` ...)."""


class ArgumentTypeError(BgsimError, TypeError):
    """An argument of the wrong type."""


class BufferAccessError(BgsimError, BufferError):
    """A buffer that cannot serve as asked: read-only where data must be
    written, not contiguous, or memory the simulated MPI cannot read."""


class StateError(BgsimError, RuntimeError):
    """A call at the wrong time: MPI outside a simulated rank, a run inside a run."""


class ModelError(BgsimError, RuntimeError):
    """A broken invariant of the simulated machine: a bug in bgsim, never in the input."""


class ProgramNotFoundError(BgsimError, FileNotFoundError):
    """The MPI program file cannot be read."""


class UnknownExperimentError(BgsimError, KeyError):
    """No experiment of that name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DatatypeLookupError(BgsimError, KeyError):
    """A type code that names no MPI datatype."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ProgramSyntaxError(BgsimError, SyntaxError):
    """The MPI program does not compile (args as SyntaxError's)."""


class MemoryLimitError(BgsimError, MemoryError):
    """A run that cannot fit in the memory this process may use."""


class DeadlockError(BgsimError):
    """No rank of an MPI program can ever go on. ``args``: (message, [(rank, [what it waits for])])."""


class RankExit(BgsimError):
    """A rank ended the run: ``sys.exit(code)`` with a code other than 0 or
    None, or ``MPI.COMM_WORLD.Abort(code)``. ``status`` is the exit status
    the run ends with (the code; 1 for a message)."""

    def __init__(self, rank: int, code: object, abort: bool = False):
        self.rank, self.code, self.abort = rank, code, abort
        self.status = int(code) if isinstance(code, int) else 1
        if abort:
            msg = f"rank {rank} called MPI_Abort with error code {code}"
        elif isinstance(code, int):
            msg = f"rank {rank} exited with status {self.status}"
        else:
            msg = f"rank {rank} exited: {code}"
        super().__init__(msg)


class RankError(BgsimError):
    """An exception escaped one rank's program; the run stopped.

    ``rank`` is the failing rank, ``traceback`` its formatted traceback
    (the original exception is chained as ``__cause__``)."""

    def __init__(self, rank: int, tb: str):
        super().__init__(f"rank {rank} raised an exception; the run stopped.\n{tb}")
        self.rank = rank
        self.traceback = tb
