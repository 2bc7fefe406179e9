"""MPI_Scatter: `f(call, parts (the root's; None elsewhere), root) -> this rank's part`."""

from __future__ import annotations

import pickle
from typing import List, Optional

from .base import Call, _dump
from .registry import algorithm


@algorithm("scatter", "binomial")
def scatter_binomial(c: Call, parts: Optional[List[bytes]], root: int) -> bytes:
    """Binomial scatter: each subtree's share travels as one message."""
    n, rel = c.n, (c.me - root) % c.n
    # `held` maps relative rank -> its part, for the subtree this rank holds.
    held = {i: parts[(i + root) % n] for i in range(n)} if rel == 0 else None
    mask = 1
    while mask < n:
        if rel & mask:
            r = c.irecv((c.me - mask) % n)
            c.wait([r])
            held = pickle.loads(r._obj)
            break
        mask <<= 1
    mask >>= 1
    sends = []
    while mask > 0:
        if rel + mask < n:
            sub = {i: held.pop(i) for i in list(held) if rel + mask <= i < min(rel + 2 * mask, n)}
            sends.append(c.isend(_dump(sub), (c.me + mask) % n))
        mask >>= 1
    c.wait(sends)
    return held[rel]
