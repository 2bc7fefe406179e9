"""MPI_Allgather: `f(call, data) -> every rank's data`."""

from __future__ import annotations

import pickle
from typing import List, Optional

from .base import Call, _dump
from .registry import algorithm


@algorithm("allgather", "ring")
def allgather_ring(c: Call, data: bytes) -> List[bytes]:
    n, me = c.n, c.me
    out: List[Optional[bytes]] = [None] * n
    out[me] = data
    right, left = (me + 1) % n, (me - 1) % n
    for step in range(n - 1):
        send_i = (me - step) % n
        recv_i = (me - step - 1) % n
        out[recv_i] = c.sendrecv(out[send_i], right, left)
    return out  # type: ignore[return-value]


@algorithm("allgather", "recursive_doubling")
def allgather_recursive_doubling(c: Call, data: bytes) -> List[bytes]:
    n, me = c.n, c.me
    held = {me: data}
    mask = 1
    while mask < n:
        partner = me ^ mask
        got = pickle.loads(c.sendrecv(_dump(held), partner, partner))
        held.update(got)
        mask <<= 1
    return [held[i] for i in range(n)]
