"""bgsim - a simulator of Blue Gene/L- and Blue Gene/P-class torus machines.

The simulation core is Rust (``bgsim._core``); this package is its typed
Python facade: machines, traffic runs and their results, the ``bgsim``
command line, the ``bgsim reproduce`` experiment suite and plots.
"""

from ._core import BgsimError, MachineError, WorkloadError, __version__
from .api import Machine, TrafficResult, patterns, run_traffic

__all__ = [
    "BgsimError",
    "MachineError",
    "WorkloadError",
    "Machine",
    "TrafficResult",
    "patterns",
    "run_traffic",
    "__version__",
]
