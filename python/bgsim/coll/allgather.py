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


def allgather_records(c: Call, record: bytes) -> memoryview:
    """Every rank's `record` (all of one size), in rank order, as one
    read-only buffer that every rank of the call shares: recursive doubling
    over contiguous blocks on a power-of-two communicator, a ring otherwise.
    The messages have the sizes those algorithms send, and cost what they
    cost; their content goes once into the shared table (ranks run in one
    process: n ranks each holding n records would take n^2 memory). What
    MPI_Comm_split needs."""
    n, me, size = c.n, c.me, len(record)
    key = ("records", c.comm._context, c.seq)
    entry = c.rt.shared.get(key)
    if entry is None:
        entry = c.rt.shared[key] = [bytearray(n * size), 0]
    table = entry[0]
    table[me * size:(me + 1) * size] = record
    if n & (n - 1) == 0:
        held, mask = 1, 1
        while mask < n:
            partner = me ^ mask
            c.sendrecv(held * size, partner, partner)
            held *= 2
            mask <<= 1
    else:
        right, left = (me + 1) % n, (me - 1) % n
        for _ in range(n - 1):
            c.sendrecv(size, right, left)
    entry[1] += 1
    if entry[1] == n:
        del c.rt.shared[key]
    return memoryview(table).toreadonly()


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
