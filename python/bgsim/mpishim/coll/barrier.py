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


@algorithm("barrier", "torus_binomial")
def barrier_torus_binomial(c: Call) -> None:
    """BG/P's binomial barrier (DCMF's, below MPI; run by the core): the
    largest power-of-two set of ranks, 0..h-1, runs dissemination rounds
    (round k: an empty message to rank me + 2^k and one from me - 2^k,
    modulo h); each rank h + i beyond it first tells rank i that it has
    arrived, and rank i waits for that before its rounds and tells it
    after them that everyone has. The messages are empty: one packet each,
    as DCMF's control messages."""
    n, me = c.n, c.me
    h = 1 << (n.bit_length() - 1)
    if me >= h:
        peer = me - h
        c.exchange({peer: b""}, [peer], [peer], [(0, 1), (1, 0)])
        return
    dist = [1 << k for k in range(h.bit_length() - 1)]
    dests, srcs = [(me + d) % h for d in dist], [(me - d) % h for d in dist]
    steps = [(1, 1)] * len(dist)
    if me + h < n:
        # The rank beyond the set that pairs with this one.
        dests, srcs = dests + [me + h], [me + h] + srcs
        steps = [(1, 0)] + steps + [(0, 1)]
    c.exchange({d: b"" for d in dests}, dests, srcs, steps)


@algorithm("barrier", "gi")
def barrier_gi(c: Call) -> None:
    hw_join(c, "barrier")
