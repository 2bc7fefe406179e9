"""bgsim - a simulator of Blue Gene/L- and Blue Gene/P-class torus machines.

The simulation core is Rust (``bgsim._core``); this package is its typed
Python facade: machines, traffic runs and their results, MPI programs run on
the simulated machine (``bgsim.run``, with ``bgsim.MPI`` standing in for
``mpi4py.MPI``), the ``bgsim`` command line, the ``bgsim reproduce``
experiment suite and plots.
"""

from ._core import __version__
from . import errors
from .errors import BgsimError, DeadlockError, MachineError, MappingError, RankError, RankExit, WorkloadError
from .api import Machine, TrafficResult, patterns, routings, run_traffic
from .program import RunResult, collective_algorithms, run, run_file
from .runtime import compute, shared_array

__all__ = [
    "BgsimError",
    "errors",
    "DeadlockError",
    "MappingError",
    "RankError",
    "RankExit",
    "RunResult",
    "collective_algorithms",
    "compute",
    "run",
    "run_file",
    "shared_array",
    "MachineError",
    "WorkloadError",
    "Machine",
    "TrafficResult",
    "patterns",
    "routings",
    "run_traffic",
    "__version__",
]
