"""MPI_Gather: `f(call, data, root) -> every rank's data at the root, None elsewhere`."""

from __future__ import annotations

from typing import Any

from .base import BlockRun, Call
from .registry import algorithm


@algorithm("gather", "binomial")
def gather_binomial(c: Call, data: Any, root: int) -> Any:
    """Binomial gather: each rank forwards its subtree's parts, which are
    consecutive in rank order relative to the root, as one message of their
    bytes back to back (`BlockRun`). At the root: every rank's part in rank
    order (`Blocks`; for sizes without content, their total)."""
    n, rel = c.n, (c.me - root) % c.n
    held = BlockRun.one(data)
    mask = 1
    while mask < n:
        if rel & mask:
            c.wait([c.isend(held.message(), (c.me - mask) % n)])
            return None
        if rel + mask < n:
            r = c.irecv((c.me + mask) % n)
            c.wait([r])
            held = held.join(BlockRun.parse(r._obj, min(mask, n - rel - mask)))
        mask <<= 1
    return held.blocks((n - root) % n)
