"""MPI_Allgather: `f(call, data) -> every rank's data`."""

from __future__ import annotations

import array
from typing import Any

from ..errors import UsageError
from .base import BlockRun, Blocks, Call, Layout, _cat, _size, _slice, hw_join
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
            total += _size(last)
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
    n^2 memory). On the processes of an MPI job, where the other processes'
    ranks write no table here, the records travel in the same messages as
    their content (each rank holds n records for the length of the call)."""
    n, me, size = c.n, c.me, len(record)
    if c.rt.world.process[1] > 1:
        algo = choose(c, "allgather", size, elements=n, label=label)
        c.layout = Layout(n, size)
        out = IMPLEMENTATIONS["allgather"][algo](c, record)
        table = out.whole if isinstance(out, Blocks) and out.uniform == size else b"".join(bytes(b) for b in out)
        return memoryview(table).toreadonly()
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
        c.layout = Layout(n, size)  # every rank knows the record size: no header
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


@algorithm("allgather", "recursive_doubling")
def allgather_recursive_doubling(c: Call, data: Any) -> Any:
    """log2 n steps; at step k a rank swaps its 2^k contiguous blocks with
    its partner's. With the counts known (`c.layout`) the messages are the
    blocks' bytes alone; else (objects) a `BlockRun` each."""
    n, me = c.n, c.me
    lay = getattr(c, "layout", None)
    mask = 1
    if lay is None:
        run = BlockRun.one(data)
        while mask < n:
            partner = me ^ mask
            got = BlockRun.parse(c.sendrecv(run.message(), partner, partner), mask)
            run = run.join(got) if me & mask == 0 else got.join(run)
            mask <<= 1
        return run.blocks()
    held = data
    while mask < n:
        partner = me ^ mask
        got = c.sendrecv(held, partner, partner)
        held = _cat([held, got] if me & mask == 0 else [got, held])
        mask <<= 1
    return held if isinstance(held, int) else lay.blocks(held)


@algorithm("allgather", "bruck")
def allgather_bruck(c: Call, data: Any) -> Any:
    """Bruck et al.: ceil(log2 n) steps for any n; at step k a rank sends
    the 2^k blocks it holds (its own and the next ranks') to rank me - 2^k
    and gets as many from rank me + 2^k; the last step sends only the
    blocks still missing. The blocks end rotated by the rank's place.
    Messages as in recursive doubling."""
    n, me = c.n, c.me
    lay = getattr(c, "layout", None)
    pof2 = 1
    if lay is None:
        run = BlockRun.one(data)
        while pof2 < n:
            k = min(pof2, n - pof2)
            run = run.join(BlockRun.parse(c.sendrecv(run.message(0, k), (me - pof2) % n, (me + pof2) % n), k))
            pof2 <<= 1
        return run.blocks((n - me) % n)
    held = data
    while pof2 < n:
        k = min(pof2, n - pof2)
        got = c.sendrecv(_slice(held, 0, lay.span(me, k)), (me - pof2) % n, (me + pof2) % n)
        held = _cat([held, got])
        pof2 <<= 1
    if isinstance(held, int):
        return held
    cut = lay.span(me, n - me)  # ranks me .. n - 1 come first
    return lay.blocks(held[cut:] + held[:cut])
