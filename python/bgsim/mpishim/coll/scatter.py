"""MPI_Scatter: `f(call, parts (the root's; None elsewhere), root) -> this rank's part`."""

from __future__ import annotations

from typing import Any, List, Optional

from .base import BlockRun, Call
from .registry import algorithm


@algorithm("scatter", "binomial")
def scatter_binomial(c: Call, parts: Optional[List[Any]], root: int) -> Any:
    """Binomial scatter: each subtree's parts, consecutive in rank order
    relative to the root, travel as one message of their bytes back to back
    (`BlockRun`). Parts that are sizes without content travel as their
    total; a rank below the root splits the total it gets evenly over its
    subtree."""
    n, rel = c.n, (c.me - root) % c.n
    held: Optional[BlockRun] = None
    if rel == 0:
        held = BlockRun.of([parts[(i + root) % n] for i in range(n)])
    mask = 1
    while mask < n:
        if rel & mask:
            r = c.irecv((c.me - mask) % n)
            c.wait([r])
            held = BlockRun.parse(r._obj, min(mask, n - rel))
            break
        mask <<= 1
    mask >>= 1
    while mask > 0:  # one blocking send per child, the farthest subtree first (MPICH's MPIC_Send)
        if rel + mask < n:
            c.wait([c.isend(held.message(mask, min(mask, n - rel - mask)), (c.me + mask) % n)])
        mask >>= 1
    return held.message(0, 1) - BlockRun.HEADER if held.size == -2 else held.blocks()[0]
