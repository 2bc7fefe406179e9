"""MPI_Allgather: `f(call, data) -> every rank's data`."""

from __future__ import annotations

import array
import struct
from typing import Any, List

from .base import Blocks, Call, hw_join
from .registry import algorithm, choose


@algorithm("allgather", "ring")
def allgather_ring(c: Call, data: Any) -> Any:
    """n - 1 steps; at each a rank passes on to its right the block it got
    from its left. Bytes go into one rank-ordered buffer (`Blocks`)."""
    n, me = c.n, c.me
    right, left = (me + 1) % n, (me - 1) % n
    if isinstance(data, int):  # a skeleton's sizes
        sizes: List[Any] = [None] * n
        sizes[me] = data
        for step in range(n - 1):
            sizes[(me - step - 1) % n] = c.sendrecv(sizes[(me - step) % n], right, left)
        return sizes
    size = len(data)
    # Blocks of one size (MPI_Allgather) go straight to their rank's place;
    # the first block of another size (MPI_Allgatherv) switches to start and
    # end offsets per rank.
    buf = bytearray(n * size)
    buf[me * size:(me + 1) * size] = data
    starts = ends = None
    last = data
    for step in range(n - 1):
        i = (me - step - 1) % n
        last = c.sendrecv(last, right, left)
        if starts is None and len(last) == size:
            buf[i * size:(i + 1) * size] = last
            continue
        if starts is None:
            done = [(me - k) % n for k in range(step + 1)]
            starts, ends = array.array("q", bytes(8 * n)), array.array("q", bytes(8 * n))
            for r in done:
                starts[r], ends[r] = r * size, (r + 1) * size
            del buf[(max(done) + 1) * size:]
        starts[i] = len(buf)
        buf += last
        ends[i] = len(buf)
    return Blocks(buf, n, size) if starts is None else Blocks(buf, n, -1, starts, ends)


def allgather_records(c: Call, record: bytes, label: str) -> memoryview:
    """Every rank's `record` (all of one size), in rank order, as one
    read-only buffer that every rank of the call shares, what
    MPI_Comm_split needs. The algorithm is the run's choice for allgather
    (recorded under `label`): its messages have the sizes it sends and cost
    what they cost, but their content goes once into the shared table
    (ranks run in one process: n ranks each holding n records would take
    n^2 memory)."""
    n, me, size = c.n, c.me, len(record)
    key = ("records", c.comm._context, c.seq)
    entry = c.rt.shared.get(key)
    if entry is None:
        entry = c.rt.shared[key] = [bytearray(n * size), 0]
    table = entry[0]
    table[me * size:(me + 1) * size] = record
    algo = choose(c, "allgather", size, elements=n, label=label)
    if algo == "tree":
        hw_join(c, "allreduce", 0, n * size)
    elif algo == "recursive_doubling":
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


@algorithm("allgather", "tree")
def allgather_tree(c: Call, data: bytes) -> Blocks:
    """The collective network: each rank's block at its place and zeros
    elsewhere, OR-ed together by the ALU on the way up, the result down to
    every node: an integer allreduce of all the blocks (`c.total` bytes,
    else n blocks of this rank's size)."""
    n = c.n
    rec = hw_join(c, "allreduce", 0, getattr(c, "total", None) or n * len(data), contribution=bytes(data))
    if "result" not in rec:
        parts = [rec["parts"][i] for i in range(n)]
        rec["result"] = Blocks.from_lengths(b"".join(parts), [len(p) for p in parts])
        rec["parts"].clear()
    return rec["result"]


@algorithm("allgather", "recursive_doubling")
def allgather_recursive_doubling(c: Call, data: bytes) -> Blocks:
    """log2 n steps; at step k a rank swaps its 2^k contiguous blocks with
    its partner's. A message carries the blocks back to back, with their
    lengths only when they differ (the buffer API's blocks are all one
    size): what MPI moves, and memory per rank of the blocks alone."""
    n, me = c.n, c.me
    blk = data
    size, count = len(data), 1  # all `count` blocks of `size` bytes, or size -1 and `lens`
    lens: List[int] = []
    mask = 1
    while mask < n:
        partner = me ^ mask
        head = struct.pack("<qq", size, count)
        got = c.sendrecv(head + (array.array("q", lens).tobytes() if size < 0 else b"") + blk, partner, partner)
        gsize, gcount = struct.unpack_from("<qq", got)
        glens = array.array("q", got[16:16 + 8 * gcount]).tolist() if gsize < 0 else []
        gblk = got[16 + (8 * gcount if gsize < 0 else 0):]
        if size >= 0 and gsize == size:
            count += gcount
        else:
            mine = lens if size < 0 else [size] * count
            theirs = glens if gsize < 0 else [gsize] * gcount
            lens = mine + theirs if me & mask == 0 else theirs + mine
            size, count = -1, len(lens)
        blk = blk + gblk if me & mask == 0 else gblk + blk
        mask <<= 1
    return Blocks(blk, n, size) if size >= 0 else Blocks.from_lengths(blk, lens)
