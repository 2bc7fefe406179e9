"""MPI_Barrier."""

from __future__ import annotations

from .base import Call, hw_join
from .registry import algorithm


@algorithm("barrier", "dissemination")
def barrier_dissemination(c: Call) -> None:
    k = 1
    while k < c.n:
        c.sendrecv(b"", (c.me + k) % c.n, (c.me - k) % c.n)
        k *= 2


@algorithm("barrier", "gi")
def barrier_gi(c: Call) -> None:
    hw_join(c, "barrier")
