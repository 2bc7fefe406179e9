"""MPI_Barrier."""

from __future__ import annotations

from .base import Call, hw_join
from .registry import algorithm


@algorithm("barrier", "dissemination")
def barrier_dissemination(c: Call) -> None:
    """Round k: an empty message to rank me + 2^k, one from me - 2^k (run
    by the core)."""
    n, me = c.n, c.me
    dist = [1 << k for k in range((n - 1).bit_length())]
    c.exchange({(me + d) % n: b"" for d in dist}, [(me + d) % n for d in dist], [(me - d) % n for d in dist], "pairwise")


@algorithm("barrier", "gi")
def barrier_gi(c: Call) -> None:
    hw_join(c, "barrier")
