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


def allgather_records(c: Call, record: bytes) -> bytes:
    """Every rank's `record` (all of one size), in rank order, as one bytes
    object: recursive doubling over contiguous blocks on a power-of-two
    communicator, a ring otherwise. (What MPI_Comm_split needs: memory per
    rank is the n records, not n Python objects.)"""
    n, me, size = c.n, c.me, len(record)
    if n & (n - 1) == 0:
        block = record
        mask = 1
        while mask < n:
            partner = me ^ mask
            got = c.sendrecv(block, partner, partner)
            block = block + got if me & mask == 0 else got + block
            mask <<= 1
        return block
    out = bytearray(n * size)
    out[me * size:(me + 1) * size] = record
    right, left = (me + 1) % n, (me - 1) % n
    for step in range(n - 1):
        s, r = (me - step) % n, (me - step - 1) % n
        out[r * size:(r + 1) * size] = c.sendrecv(bytes(out[s * size:(s + 1) * size]), right, left)
    return bytes(out)


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
