"""MPI collectives on the simulated machine: one module per operation
(barrier, bcast, reduce, allreduce, allgather, alltoall, gather, scatter),
each registering its algorithms' implementations under the names the core's
registry declares (`mpi::coll`: name, description, what a call needs, the
default rule). Three families:

- *generic point-to-point* (what a portable MPI does on a crossbar);
- *torus-aware* and *message layer* (edge-disjoint torus lines, spread
  injection orders, direct injection);
- *hardware*: the collective network and the global-interrupt barrier.

Every call goes through `run(op, call, ...)`: the core chooses the
algorithm (the machine's `[collectives]` table, `--coll OP=NAME`,
``bgsim.run(coll=...)``, else the default rule), the run records it, and
the implementation moves real bytes over the communicator's collective
context; each call has its own tag. `python -m bgsim.mpishim.coll` prints the
registry as the table of docs/collectives.md.
"""

from __future__ import annotations

from . import allgather, allreduce, alltoall, barrier, bcast, gather, reduce, scatter  # noqa: F401 - they register
from .base import Blocks, Call, CollError, Layout, Reducer, Sized, sized_reducer, tree_ok
from .registry import IMPLEMENTATIONS, choose, markdown, registry, run

__all__ = ["Blocks", "Call", "CollError", "Layout", "Reducer", "Sized", "sized_reducer", "tree_ok", "IMPLEMENTATIONS", "choose", "markdown", "registry", "run"]
