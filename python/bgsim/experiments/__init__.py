"""The `bgsim reproduce` suite: every published measurement or simulation
study bgsim must reproduce, as named experiments with a quick and a paper
scale. See `docs/experiments.md` for the contract."""

from .base import REGISTRY, Context, Experiment, Outcome, get, names
from . import torus  # noqa: F401  (registers the torus-* experiments)
from . import mpi  # noqa: F401  (registers the mpi-* point-to-point experiments)
from . import collectives  # noqa: F401  (registers mpi-bcast, mpi-alltoall, mpi-tree)
from . import nas  # noqa: F401  (registers mpi-modes, mpi-mapping-bt)
from . import bgp  # noqa: F401  (registers the bgp-* point-to-point experiments)
from . import bgp_congestion  # noqa: F401  (registers bgp-alltoall-congestion, bgp-cartesian, bgp-nearest-neighbor)

__all__ = ["REGISTRY", "Context", "Experiment", "Outcome", "get", "names"]
