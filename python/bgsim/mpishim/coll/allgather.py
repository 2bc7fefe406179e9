"""MPI_Allgather: `f(call, data) -> every rank's data`."""

from __future__ import annotations

import array
from typing import Any

import numpy as np

from ...errors import UsageError
from .base import BlockRun, Blocks, Call, Layout, _cat, _size, _slice, hw_join
from .registry import IMPLEMENTATIONS, algorithm, choose


@algorithm("allgather", "ring")
def allgather_ring(c: Call, data: Any) -> Any:
    """n - 1 steps; at each a rank passes on to its right the block it got
    from its left, the core running the ring in one call. Bytes go into
    one rank-ordered buffer (`Blocks`)."""
    n, me = c.n, c.me
    ring = (("relay", data), [(me + 1) % n] * (n - 1), [(me - 1) % n] * (n - 1), "pairwise")
    if isinstance(data, int):  # sizes without content: their total
        return data + sum(_size(got) for _, got in c.exchange(*ring, dense=False)) if n > 1 else data
    size = len(data)
    if n == 1:
        return Blocks(bytearray(data), n, size)
    # What came at step k is rank me - 1 - k's block, in one buffer.
    got = c.exchange(*ring, packed=True)
    if got is None:
        raise UsageError(f"MPI.Comm.{c.op}(): a rank sent a size without content where this one sent data")
    came, ends = got
    if all(e == (k + 1) * size for k, e in enumerate(ends)):
        # Blocks of one size (MPI_Allgather) go to their ranks' places:
        # the steps' blocks in reverse are those of ranks me + 1 .. me - 1.
        buf = bytearray(n * size)
        buf[me * size:(me + 1) * size] = data
        if size:
            out = np.frombuffer(buf, dtype="u1").reshape(n, size)
            out[(me + 1 + np.arange(n - 1)) % n] = np.frombuffer(came, dtype="u1").reshape(n - 1, size)[::-1]
        return Blocks(buf, n, size)
    # Blocks of other sizes (MPI_Allgatherv): this rank's, then the others'
    # in the order they came, with start and end offsets per rank.
    starts, ends_at = array.array("q", bytes(8 * n)), array.array("q", bytes(8 * n))
    starts[me], ends_at[me] = 0, size
    at = 0
    for k, end in enumerate(ends):
        i = (me - 1 - k) % n
        starts[i], ends_at[i] = size + at, size + end
        at = end
    return Blocks(bytearray(data) + came, n, -1, starts, ends_at)


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
    blocks' bytes alone (sizes without content: the core runs the steps in
    one call, each send as large as all the rank holds); else (objects) a
    `BlockRun` each."""
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
    if isinstance(data, int):  # sizes without content: the core runs the steps
        partners = [me ^ (1 << k) for k in range(n.bit_length() - 1)]
        got = c.exchange(("grow", data), partners, partners, "pairwise", dense=False)
        return data + sum(_size(g) for _, g in got)
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
