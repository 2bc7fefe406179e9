"""bgsim - a simulator of Blue Gene/L- and Blue Gene/P-class torus machines.

The simulation core is Rust (``bgsim._core``); this package is its typed
Python facade: machines, traffic runs and their results, MPI programs run on
the simulated machine (``bgsim.run``, with ``bgsim.MPI`` standing in for
``mpi4py.MPI``), the ``bgsim`` command line, the ``bgsim reproduce``
experiment suite and plots.
"""

from ._core import BgsimError, DeadlockError, MachineError, MappingError, WorkloadError, __version__
from .api import Machine, TrafficResult, patterns, routings, run_traffic
from .runtime import RankError, RunResult, collective_algorithms, compute, run, run_file

__all__ = [
    "BgsimError",
    "DeadlockError",
    "MappingError",
    "RankError",
    "RunResult",
    "collective_algorithms",
    "compute",
    "run",
    "run_file",
    "MachineError",
    "WorkloadError",
    "Machine",
    "TrafficResult",
    "patterns",
    "routings",
    "run_traffic",
    "__version__",
]
