"""MPI_Allgather: `f(call, data) -> every rank's data`."""

from __future__ import annotations

import array
import struct
from typing import Any, List, Optional

from .base import Blocks, Call, hw_join
from .registry import IMPLEMENTATIONS, algorithm, choose


@algorithm("allgather", "ring")
def allgather_ring(c: Call, data: Any) -> Any:
    """n - 1 steps; at each a rank passes on to its right the block it got
    from its left. Bytes go into one rank-ordered buffer (`Blocks`)."""
    n, me = c.n, c.me
    right, left = (me + 1) % n, (me - 1) % n
    if isinstance(data, int):  # sizes without content: their total
        total = last = data
        for _ in range(n - 1):
            last = c.sendrecv(last, right, left)
            total += last if isinstance(last, int) else len(last)
        return total
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
    else:
        IMPLEMENTATIONS["allgather"][algo](c, size)
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


class _Run:
    """Consecutive blocks a rank holds in an exchanging allgather: their
    bytes back to back and their lengths (`size` when all are one size,
    else -1 and `lens`), or, for sizes without content (a skeleton's, or
    size-only buffers), their total as an int. A message carries the blocks
    back to back, with their lengths only when they differ (the buffer
    API's blocks are all one size): what MPI moves, and memory per rank of
    the blocks alone."""

    def __init__(self, blk: Any, size: int, count: int, lens: List[int]):
        self.blk, self.size, self.count, self.lens = blk, size, count, lens

    @classmethod
    def one(cls, data: Any) -> "_Run":
        return cls(data, -2 if isinstance(data, int) else len(data), 1, [])

    def lengths(self) -> List[int]:
        return self.lens if self.size < 0 else [self.size] * self.count

    def message(self, first: int = 0, count: Optional[int] = None) -> Any:
        """Blocks first .. first + count - 1 as one message."""
        count = self.count - first if count is None else count
        if self.size == -2:
            return self.blk if (first, count) == (0, self.count) else _Run._share(self.blk, self.count, first, count)
        if self.size >= 0:
            body = self.blk[first * self.size:(first + count) * self.size]
            return struct.pack("<qq", self.size, count) + body
        lens = self.lens[first:first + count]
        a = sum(self.lens[:first])
        return (struct.pack("<qq", -1, count) + array.array("q", lens).tobytes()
                + self.blk[a:a + sum(lens)])

    @staticmethod
    def _share(total: int, count: int, first: int, k: int) -> int:
        """Bytes of blocks first .. first + k - 1 of `count` blocks that
        hold `total` bytes, when only the total is known (blocks as even as
        integers allow)."""
        def upto(i: int) -> int:
            return total * i // count
        return upto(first + k) - upto(first)

    @classmethod
    def parse(cls, got: Any) -> "_Run":
        if isinstance(got, int) or not len(got):  # sizes without content (an empty one arrives as b"")
            return cls(got or 0, -2, 1, [])
        size, count = struct.unpack_from("<qq", got)
        if size >= 0:
            return cls(got[16:], size, count, [])
        lens = array.array("q", got[16:16 + 8 * count]).tolist()
        return cls(got[16 + 8 * count:], -1, count, lens)

    def join(self, other: "_Run") -> "_Run":
        """These blocks, then `other`'s."""
        if self.size == -2 or other.size == -2:
            return _Run(_size_of(self) + _size_of(other), -2, self.count + other.count, [])
        if self.size >= 0 and self.size == other.size:
            return _Run(self.blk + other.blk, self.size, self.count + other.count, [])
        return _Run(self.blk + other.blk, -1, self.count + other.count, self.lengths() + other.lengths())

    def blocks(self, rotate: int = 0) -> Any:
        """The blocks as `Blocks`, the one at position `rotate` first (a
        total for sizes without content)."""
        if self.size == -2:
            return self.blk
        lens = self.lengths()
        cut = sum(lens[:rotate])
        buf = self.blk[cut:] + self.blk[:cut] if rotate else self.blk
        if self.size >= 0:
            return Blocks(buf, self.count, self.size)
        return Blocks.from_lengths(buf, lens[rotate:] + lens[:rotate])


def _size_of(run: _Run) -> int:
    return run.blk if isinstance(run.blk, int) else len(run.blk)


@algorithm("allgather", "recursive_doubling")
def allgather_recursive_doubling(c: Call, data: Any) -> Any:
    """log2 n steps; at step k a rank swaps its 2^k contiguous blocks with
    its partner's."""
    n, me = c.n, c.me
    held = _Run.one(data)
    mask = 1
    while mask < n:
        partner = me ^ mask
        got = _Run.parse(c.sendrecv(held.message(), partner, partner))
        held = held.join(got) if me & mask == 0 else got.join(held)
        mask <<= 1
    return held.blocks()


@algorithm("allgather", "bruck")
def allgather_bruck(c: Call, data: Any) -> Any:
    """Bruck et al.: ceil(log2 n) steps for any n; at step k a rank sends
    the 2^k blocks it holds (its own and the next ranks') to rank me - 2^k
    and gets as many from rank me + 2^k; the last step sends only the
    blocks still missing. The blocks end rotated by the rank's place."""
    n, me = c.n, c.me
    held = _Run.one(data)
    pof2 = 1
    while pof2 < n:
        k = min(pof2, n - pof2)
        got = _Run.parse(c.sendrecv(held.message(0, k), (me - pof2) % n, (me + pof2) % n))
        held = held.join(got)
        pof2 <<= 1
    return held.blocks((n - me) % n)
