"""MPI_Gather: `f(call, data, root) -> every rank's data at the root, None elsewhere`."""

from __future__ import annotations

import pickle
from typing import List, Optional

from .base import Call, _dump
from .registry import algorithm


@algorithm("gather", "binomial")
def gather_binomial(c: Call, data: bytes, root: int) -> Optional[List[bytes]]:
    """Binomial gather: each rank forwards its subtree's parts in one message."""
    n, rel = c.n, (c.me - root) % c.n
    held = {rel: data}
    mask = 1
    while mask < n:
        if rel & mask:
            c.wait([c.isend(_dump(held), (c.me - mask) % n)])
            return None
        if rel + mask < n:
            r = c.irecv((c.me + mask) % n)
            c.wait([r])
            held.update(pickle.loads(r._obj))
        mask <<= 1
    return [held[(i - root) % n] for i in range(n)]
