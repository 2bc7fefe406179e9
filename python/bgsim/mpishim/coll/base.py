"""What every collective algorithm uses: the call (its communicator, tag
and point-to-point helpers on the collective context), reductions, pieces of
messages (bytes, or a skeleton's sizes), and the hardware networks' join.
"""

from __future__ import annotations

import array
import itertools
import math
import pickle
import struct
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

from greenlet import getcurrent as _getcurrent

from ... import _core
from ... import runtime as _rt
from ..buffers import Same, _members
from ..constants import TAG_UB
from ..errors import ERR_ARG, ERR_COMM, ERR_ROOT, ERR_TRUNCATE
from ..errors import Exception as MPIException
from ..requests import _wait_all

PIPELINE_SEGMENT = 16 * 1024
DIRECT = 4  # send mode: message-layer direct injection
OWN = 7  # send mode: a message of the machine's own collective protocols (eager at every size)


def _dump(obj: Any) -> bytes:
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


class CollError(Exception):
    pass


class Call:
    """One collective call on one rank: the communicator, the tag of this
    call, and point-to-point helpers on the collective context."""

    def __init__(self, comm: Any, op: str, root: Optional[int] = None, check: Any = None):
        if comm._inter:
            # (The collectives MPI defines on one are `intercoll`'s.)
            raise MPIException(ERR_COMM, f"{op} on an intercommunicator: MPI does not define it there")
        self.comm = comm
        self.ctx, self.me = comm._me()
        #: Inside a nonblocking collective (`nbc`): point-to-point algorithms only.
        self.nonblocking = _getcurrent().__class__ is _rt.CollGreenlet
        self.n = comm.Get_size()
        self.rt = self.ctx.runtime
        seqs = self.ctx.state.setdefault("coll_seq", {})
        self.seq = seqs.get(comm._context, 0)
        seqs[comm._context] = self.seq + 1
        self.tag = self.seq % TAG_UB
        self.op = op
        if root is not None and (not isinstance(root, (int, np.integer)) or not 0 <= root < self.n):
            raise MPIException(ERR_ROOT, f"{op}: root {root} in a communicator of size {self.n}")
        # (A nonblocking collective matches only its own kind.)
        self._check_match(f"i{op}" if self.nonblocking else op, root, check)

    def _check_match(self, op: str, root: Optional[int], check: Any) -> None:
        """Collective calls must agree across ranks (same operation, root and,
        where MPI requires it, size): the first rank to arrive records them,
        every other rank compares."""
        if self.n == 1:
            return
        table = self.rt.coll_checks
        key = (self.comm._context, self.seq)
        mine = (op, root, check)
        entry = table.get(key)
        if entry is None:
            table[key] = [mine, self.me, 1]
        else:
            (theirs, who, count) = entry
            entry[2] = count + 1
            if entry[2] == self.n:
                del table[key]
            if theirs != mine:
                what = []
                if theirs[0] != op:
                    what.append(f"rank {who} called {theirs[0]}, rank {self.me} calls {op}")
                elif theirs[1] != root:
                    what.append(f"root {theirs[1]} on rank {who}, root {root} on rank {self.me}")
                else:
                    what.append(f"{theirs[2]} on rank {who}, {check} on rank {self.me}")
                cls = ERR_ROOT if theirs[0] == op and theirs[1] != root else ERR_ARG
                raise MPIException(cls, f"collective call #{self.seq} on this communicator does not match "
                                              f"across ranks: {'; '.join(what)}")

    # -- point-to-point on the collective context --

    def isend(self, data: bytes, dest: int, mode: int = 0, sub: Optional[int] = None):
        return self.comm._isend_bytes(data, dest, self._tag(sub), mode, "collective", ctx_off=1)

    def irecv(self, src: int, sub: Optional[int] = None):
        # A message without content (a skeleton's) arrives as its size.
        return self.comm._irecv_into(_core.MAX_MESSAGE_BYTES, src, self._tag(sub), lambda st, d: d if d or not st[2] else st[2],
                                     ctx_off=1)

    def _tag(self, sub: Optional[int]) -> int:
        """The call's tag, or a sub-tag of it (for algorithms whose messages
        between one pair may complete out of order)."""
        if sub is None:
            return self.tag
        return ((self.seq % (1 << 14)) << 16 | (sub & 0xFFFF)) + (1 << 30)

    def combine(self, red: "Reducer", a: Any, b: Any) -> Any:
        """a op b (a from the lower ranks), on this rank's core: an array
        reduction's combine costs it `node.combine_bytes_per_cycle` per byte
        of the result (a pickled object's operation is not costed: what a
        Python operation on objects would cost is not known)."""
        out = red.combine(a, b)
        if red.array:
            nbytes = getattr(out, "nbytes", 0)
            if nbytes:
                self.rt.combine(self.ctx, int(nbytes))
        return out

    def wait(self, reqs: List[Any]) -> None:
        _wait_all(reqs, f"MPI.Comm.{self.op}()")
        for r in reqs:
            r._raise()

    def exchange(self, parts: Any, dests: Sequence[int], srcs: Sequence[int], steps: Any = None, mode: int = 0,
                 dense: bool = True, packed: bool = False, combine: Sequence[int] = ()) -> Any:
        """Runs an exchange in the core (`mpi::agent`), one call for the
        whole of it: receives from every rank of `srcs` and sends `parts[d]`
        to every rank of `dests` (bytes, an int: a size without content, or
        None: what this rank received last; `parts` a `Same`: every send
        that size without content; `("relay", first)`: the first send
        `first`, every later one what this rank received last; `("grow", n)`:
        every send n bytes and as many as received so far, without content;
        `("sizes", list)`: send k that many bytes without content),
        in steps that each post their receives, then their sends, then wait
        for all of them. `steps`:
        None, one step; "pairwise", the k-th receive and send as step k; or
        a list of (receives, sends) per step. `combine[k]`: bytes of result
        the rank's core combines once step k is done (a reduction's local
        work, `Call.combine`), before the next. The same messages at the same
        simulated times as posting them from here. Returns what arrived: a
        list by rank (None where nothing came), or (`dense` false) a list of
        (source, data) in the order of `srcs`, or (`packed`) the bytes of
        every message in the order of `srcs` as one bytes object and where
        each ends in it (None if a message was a size without content)."""
        ctx, rt = self.ctx, self.rt
        w = rt.world
        ctx.call, ctx.frame = f"MPI.Comm.{self.op}()", sys._getframe(2)
        if parts.__class__ is Same:  # one size for every send: the core needs no list
            parts = parts.value
        elif parts.__class__ is Blocks and parts.uniform >= 0:  # blocks of one buffer: no bytes objects
            # Only the blocks' bytes (the buffer may be far larger: the
            # core copies what it is given).
            parts = (parts.whole, parts.uniform)
        tl = rt.timeline
        if ctx.nbcs or (combine and tl is not None):
            # The core's run of it would wait where the rank's nonblocking
            # collectives do not advance (`nbc`), and a timeline shows a
            # combine apart from the wait: the same messages posted from
            # here.
            return self._exchange_here(parts, dests, srcs, steps, mode, dense, packed, combine)
        t0 = w.rank_time(ctx.rank) if tl is not None else 0
        members = self.comm._p2p
        if members is None:  # COMM_SELF: the calling rank's own group
            members = _members(self.comm._context, self.comm._group._ranks)
        started = w.coll_exchange(ctx.rank, members, self.tag, parts, dests, srcs, steps, mode, packed, False,
                                  list(combine))
        # The core has its own copy of the ranks: a waiting rank holds no
        # list as long as the communicator.
        del dests, srcs
        if started:
            rt.suspend(ctx.rank)
        # Done waiting: the caller's frame, kept for a deadlock report,
        # would otherwise keep its locals (what this call returns, as long
        # as the communicator) until the rank's next call.
        ctx.frame = None
        if tl is not None:
            t1 = tl.now(ctx.rank)
            if t1 > t0:
                tl.slice(ctx.rank, "wait", "wait", t0, t1)
        if packed:
            return w.coll_result_packed(ctx.rank)
        into = getattr(self, "into", None)
        if into is not None and dense:
            # Straight into the receive buffer (`Call.into`: the buffer and
            # the size of a rank's block in it).
            long = w.coll_result_into(ctx.rank, into[0][:self.n * into[1]], into[1])
            if long is not None:
                raise MPIException(ERR_TRUNCATE, f"rank {long[0]} sent {long[1]} bytes for a slot of {into[1]} bytes")
            return [None] * self.n
        return w.coll_result(ctx.rank, self.n if dense else None)

    def _exchange_here(self, parts: Any, dests: Sequence[int], srcs: Sequence[int], steps: Any, mode: int,
                       dense: bool, packed: bool, combine: Sequence[int] = ()) -> Any:
        """`exchange` by this rank's own point-to-point calls, step by
        step: each step posts its receives, then its sends, then waits for
        all of them (`parts` as `exchange` hands them to the core)."""
        if steps is None:
            plan = [(len(srcs), len(dests))]
        elif steps == "pairwise":
            plan = [(int(k < len(srcs)), int(k < len(dests))) for k in range(max(len(srcs), len(dests)))]
        else:
            plan = steps
        tagged = parts[0] if parts.__class__ is tuple and len(parts) == 2 and parts[0].__class__ is str else None
        relay, grow = tagged == "relay", tagged == "grow"
        last: Any = None  # what this rank received last
        held = 0  # bytes received so far

        def part(k: int, d: int) -> Any:
            if grow:
                return parts[1] + held
            if tagged == "sizes":
                return parts[1][k]
            if relay:
                p = parts[1] if k == 0 else last
            elif isinstance(parts, int):
                return parts
            elif parts.__class__ is tuple:  # (buffer, block size): block d
                whole, size = parts
                p = whole[d * size:(d + 1) * size]
            else:
                p = parts[d]
                if p is None:
                    p = last
            return p if p.__class__ in (bytes, int) else bytes(p)

        got: List[Tuple[int, Any]] = []
        ri = si = 0
        for step, (nr, ns) in enumerate(plan):
            rs = [self.irecv(srcs[ri + k]) for k in range(nr)]
            ss = [self.isend(part(si + k, dests[si + k]), dests[si + k], mode) for k in range(ns)]
            self.wait(rs + ss)
            for k, r in enumerate(rs):
                got.append((srcs[ri + k], r._obj))
                last = r._obj
                held += _size(last)
            if step < len(combine) and combine[step]:
                self.rt.combine(self.ctx, combine[step])
            ri += nr
            si += ns
        if packed:
            if any(d.__class__ is int for _, d in got):
                return None
            ends = list(itertools.accumulate(len(d) for _, d in got))
            return b"".join(d for _, d in got), ends
        if not dense:
            return got
        into = getattr(self, "into", None)
        if into is not None:
            buf, size = into
            if not (buf.__class__ is memoryview and buf.format == "B" and buf.ndim == 1):
                buf = memoryview(buf).cast("B")
            for src, d in got:
                if d.__class__ is int:
                    continue
                if len(d) > size:
                    raise MPIException(ERR_TRUNCATE, f"rank {src} sent {len(d)} bytes for a slot of {size} bytes")
                buf[src * size:src * size + len(d)] = d
            return [None] * self.n
        out: List[Any] = [None] * self.n
        for src, d in got:
            out[src] = d
        return out

    def sendrecv(self, data: bytes, dest: int, src: int) -> bytes:
        r = self.irecv(src)
        s = self.isend(data, dest)
        self.wait([s, r])
        return r._obj

    # -- the partition --

    def spans_partition(self) -> bool:
        """Whether the communicator holds every task slot of the partition
        (COMM_WORLD and its dups on a full machine)."""
        w = self.rt.world
        slots = w.shape[0] * w.shape[1] * w.shape[2] * w.tasks_per_node
        return self.n == w.nranks == slots

    def every_node(self) -> bool:
        """Whether the communicator has exactly one rank on every node of
        the partition (worked out once per communicator)."""
        rt = self.rt
        ctx = self.comm._context
        got = rt.every_node.get(ctx)
        if got is None:
            w = rt.world
            nodes = w.shape[0] * w.shape[1] * w.shape[2]
            got = self.n == nodes and len({w.node_of(r) for r in self.comm._group._ranks}) == nodes
            rt.every_node[ctx] = got
        return got

    def world_rank(self, r: int) -> int:
        return self.comm._group._ranks[r]

    def shared(self, kind: str) -> Tuple[tuple, dict]:
        """The record this call of a core-run collective shares with the
        communicator's members run by this process (on an MPI job's
        processes, its own ranks only), made by the first to ask: its key
        (`kind`, the context, the call's number) and the record, with the
        members' parts and how many have yet to leave it (`leave`)."""
        rt = self.rt
        key = (kind, self.comm._context, self.seq)
        rec = rt.hw_data.get(key)
        if rec is None:
            left = self.n if not rt.remote else sum(1 for i in range(self.n) if self.world_rank(i) not in rt.remote)
            rec = rt.hw_data[key] = {"parts": {}, "left": left}
        return key, rec

    def leave(self, key: tuple, rec: dict) -> bool:
        """This member is done with the shared record (`shared`); True for
        the last, which forgets it."""
        rec["left"] -= 1
        if rec["left"]:
            return False
        del self.rt.hw_data[key]
        return True


def _split(data: Any, parts: int) -> List[Any]:
    """`data` in `parts` pieces (a skeleton's size: the sizes of the pieces)."""
    if isinstance(data, int):
        size = -(-data // parts) if data else 0
        return [max(0, min(size, data - i * size)) for i in range(parts)]
    size = -(-len(data) // parts) if data else 0
    return [data[i * size:(i + 1) * size] for i in range(parts)]


class Blocks:
    """Every rank's block of an allgather, in rank order, over one buffer:
    one object per rank instead of n (n ranks each holding n small bytes
    objects is n^2 objects in this process). Blocks are zero-copy
    memoryviews; `uniform` is the one block size when all blocks are that
    size and lie back to back in rank order (then `whole` is all of them)."""

    __slots__ = ("_mv", "n", "uniform", "_starts", "_ends")

    def __init__(self, buf: Any, n: int, size: int = -1, starts: Any = None, ends: Any = None):
        self._mv = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
        self.n = n
        self.uniform = size
        self._starts, self._ends = starts, ends

    @classmethod
    def from_lengths(cls, buf: Any, lengths: Sequence[int]) -> "Blocks":
        """Blocks of these lengths back to back in rank order in `buf`."""
        n = len(lengths)
        if all(length == lengths[0] for length in lengths):
            return cls(buf, n, lengths[0] if n else 0)
        starts, ends = array.array("q", bytes(8 * n)), array.array("q", bytes(8 * n))
        pos = 0
        for i, length in enumerate(lengths):
            starts[i], pos = pos, pos + length
            ends[i] = pos
        return cls(buf, n, -1, starts, ends)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> memoryview:
        if not -self.n <= i < self.n:
            raise IndexError(i)
        i %= self.n
        if self.uniform >= 0:
            return self._mv[i * self.uniform:(i + 1) * self.uniform]
        return self._mv[self._starts[i]:self._ends[i]]

    def __iter__(self):
        return (self[i] for i in range(self.n))

    @property
    def whole(self) -> memoryview:
        """All blocks back to back (uniform blocks only)."""
        assert self.uniform >= 0
        return self._mv[:self.n * self.uniform]


class Layout:
    """Where every rank's block of an allgather lies, when every rank knows
    the counts (the buffer API): one block size, or prefix offsets. The
    algorithms then move the blocks' bytes alone, as MPI does."""

    def __init__(self, n: int, size: int = -1, offsets: Optional[np.ndarray] = None):
        self.n, self.size, self.offsets = n, size, offsets

    @classmethod
    def of(cls, counts: Sequence[int], itemsize: int) -> "Layout":
        if isinstance(counts, Same):  # n copies of one count
            return cls(len(counts), counts.value * itemsize)
        sizes = np.asarray(counts, dtype=np.int64) * itemsize
        if len(sizes) and (sizes == sizes[0]).all():
            return cls(len(sizes), int(sizes[0]))
        return cls(len(sizes), -1, np.concatenate(([0], np.cumsum(sizes))))

    def span(self, lo: int, k: int) -> int:
        """Bytes of the blocks of ranks lo .. lo + k - 1 (modulo n)."""
        if self.size >= 0:
            return k * self.size
        off, n = self.offsets, self.n
        if lo + k <= n:
            return int(off[lo + k] - off[lo])
        return int(off[n] - off[lo] + off[lo + k - n])

    def blocks(self, buf: Any) -> "Blocks":
        """`buf` (every block in rank order) as `Blocks`."""
        if self.size >= 0:
            return Blocks(buf, self.n, self.size)
        return Blocks(buf, self.n, -1, self.offsets[:-1], self.offsets[1:])


class BlockRun:
    """Consecutive blocks a rank holds in an allgather, gather or scatter: their
    bytes back to back and their lengths (`size` when all are one size,
    else -1 and `lens`), or, for sizes without content (a skeleton's, or
    size-only buffers), their total as an int. A message carries a 16-byte
    header (block size and count), then the blocks back to back, with their
    lengths only when they differ (the buffer API's blocks are all one
    size): what MPI moves plus the header, and memory per rank of the
    blocks alone. A message of sizes is as long as the same message of
    bytes of one block size."""

    HEADER = 16

    def __init__(self, blk: Any, size: int, count: int, lens: List[int]):
        self.blk, self.size, self.count, self.lens = blk, size, count, lens

    @classmethod
    def one(cls, data: Any) -> "BlockRun":
        return cls(data, -2 if isinstance(data, int) else len(data), 1, [])

    @classmethod
    def of(cls, parts: Sequence[Any]) -> "BlockRun":
        """Parts in this order as one run (sizes without content: their total)."""
        if any(isinstance(p, int) for p in parts):
            return cls(_cat(parts), -2, len(parts), [])
        lens = [len(p) for p in parts]
        blk = b"".join(parts)
        if all(x == lens[0] for x in lens):
            return cls(blk, lens[0] if lens else 0, len(parts), [])
        return cls(blk, -1, len(parts), lens)

    def lengths(self) -> List[int]:
        return self.lens if self.size < 0 else [self.size] * self.count

    def message(self, first: int = 0, count: Optional[int] = None) -> Any:
        """Blocks first .. first + count - 1 as one message."""
        count = self.count - first if count is None else count
        if self.size == -2:
            return self.HEADER + BlockRun._share(self.blk, self.count, first, count)
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
    def parse(cls, got: Any, count: int) -> "BlockRun":
        """A message of `count` blocks."""
        if isinstance(got, int):  # sizes without content
            return cls(got - cls.HEADER, -2, count, [])
        size, count = struct.unpack_from("<qq", got)
        if size >= 0:
            return cls(got[16:], size, count, [])
        lens = array.array("q", got[16:16 + 8 * count]).tolist()
        return cls(got[16 + 8 * count:], -1, count, lens)

    def join(self, other: "BlockRun") -> "BlockRun":
        """These blocks, then `other`'s."""
        if self.size == -2 or other.size == -2:
            return BlockRun(_size(self.blk) + _size(other.blk), -2, self.count + other.count, [])
        if self.size >= 0 and self.size == other.size:
            return BlockRun(self.blk + other.blk, self.size, self.count + other.count, [])
        return BlockRun(self.blk + other.blk, -1, self.count + other.count, self.lengths() + other.lengths())

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


def _cat(parts: Any) -> Any:
    """Pieces joined (a skeleton's pieces - sizes, or empty bytes - summed)."""
    if isinstance(parts, Blocks):
        return parts.whole.tobytes() if parts.uniform >= 0 else b"".join(parts)
    if any(isinstance(p, int) for p in parts):
        return sum(p if isinstance(p, int) else len(p) for p in parts)
    return b"".join(parts)


def _size(data: Any) -> int:
    return data if isinstance(data, int) else len(data)


def _slice(data: Any, a: int, b: int) -> Any:
    if isinstance(data, int):
        return max(0, min(b, data) - a)
    return data[a:b]


class Reducer:
    """How to combine contributions: `combine(a, b)` = a op b with a from the
    lower ranks; `dump` / `load` move a value; `split` / `join` cut arrays.
    `op` (the MPI operation, for the tree's ALU; None for a skeleton) and
    `floating` (two passes on the tree) describe array reductions."""

    def __init__(self, combine: Callable[[Any, Any], Any], dump: Callable[[Any], bytes], load: Callable[[bytes], Any],
                 commute: bool, array: bool, op: Any = None, floating: bool = False):
        self.combine, self.dump, self.load, self.commute, self.array = combine, dump, load, commute, array
        self.op, self.floating = op, floating


def _fold(c: Call) -> Tuple[int, int, int]:
    """Non-power-of-two sizes: the first 2*rem ranks pair up, odd ones go on.
    Returns (pof2, rem, newrank or -1)."""
    pof2 = 1 << (c.n.bit_length() - 1)
    rem = c.n - pof2
    if c.me < 2 * rem:
        return pof2, rem, (c.me // 2 if c.me % 2 else -1)
    return pof2, rem, c.me - rem


def _fold_in(c: Call, value: Any, red: Reducer, rem: int) -> Any:
    """The first 2*rem ranks pair up: even ones hand their value to the odd
    one above, which goes on with the combination."""
    if c.me < 2 * rem:
        if c.me % 2 == 0:
            c.wait([c.isend(red.dump(value), c.me + 1)])
        else:
            r = c.irecv(c.me - 1)
            c.wait([r])
            value = c.combine(red, red.load(r._obj), value)
    return value


def _fold_out(c: Call, value: Any, red: Reducer, rem: int) -> Any:
    """The odd ranks of the first 2*rem give the result back to their pair."""
    if c.me < 2 * rem:
        if c.me % 2:
            c.wait([c.isend(red.dump(value), c.me - 1)])
        else:
            r = c.irecv(c.me + 1)
            c.wait([r])
            value = red.load(r._obj)
    return value


def _old(newrank: int, rem: int) -> int:
    return newrank * 2 + 1 if newrank < rem else newrank + rem


def _folded_sized(c: Call, nbytes: int, rem: int, new: int, middle: Sequence[Tuple[int, int, int]]) -> None:
    """A reduction of `nbytes` without content whose steps the core runs in
    one call (`Call.exchange`), as `_fold_in`, the steps, then `_fold_out`
    post them: `middle` lists each step's (partner, bytes sent, bytes
    combined once it is done)."""
    me = c.me
    if new < 0:  # hands its vector to the odd rank above, gets the result back
        c.exchange(("sizes", [nbytes]), [me + 1], [me + 1], [(0, 1), (1, 0)], dense=False)
        return
    dests, srcs, sizes, steps, combine = [], [], [], [], []
    if me < 2 * rem:  # first combines its even neighbour's vector
        srcs.append(me - 1)
        steps.append((1, 0))
        combine.append(nbytes)
    for partner, out, combined in middle:
        dests.append(partner)
        srcs.append(partner)
        sizes.append(out)
        steps.append((1, 1))
        combine.append(combined)
    if me < 2 * rem:
        dests.append(me - 1)
        sizes.append(nbytes)
        steps.append((0, 1))
    c.exchange(("sizes", sizes), dests, srcs, steps, dense=False, combine=combine)


# ---------------------------------------------------------------- hardware

#: Operations the tree's ALU does, by MPI op name and numpy kind ('i','u','f').
TREE_OPS = {"MPI_SUM": "iuf", "MPI_MAX": "iu", "MPI_MIN": "iu", "MPI_BAND": "iu", "MPI_BOR": "iu", "MPI_BXOR": "iu"}


class Sized:
    """A vector of `n` elements of `itemsize` bytes with no content."""

    __slots__ = ("n", "itemsize")

    def __init__(self, n: int, itemsize: int = 8):
        self.n, self.itemsize = n, itemsize

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, s: slice) -> "Sized":
        return Sized(len(range(*s.indices(self.n))), self.itemsize)

    def __setitem__(self, s: slice, v: Any) -> None:
        pass

    def copy(self) -> "Sized":
        return Sized(self.n, self.itemsize)

    @property
    def nbytes(self) -> int:
        return self.n * self.itemsize


def sized_reducer(itemsize: int, floating: bool = False) -> "Reducer":
    """The reduction of `Sized` vectors: sizes travel, nothing is combined."""
    def load(x: Any) -> Sized:
        return Sized((x if isinstance(x, int) else len(x)) // itemsize, itemsize)
    return Reducer(lambda a, b: a, lambda a: a.nbytes, load, True, True, floating=floating)


def tree_ok(op: Any, dtype: Optional[np.dtype]) -> bool:
    return dtype is not None and dtype.fields is None and op.name in TREE_OPS and dtype.kind in TREE_OPS[op.name]


def tree_float_sum(arrays: List[np.ndarray]) -> np.ndarray:
    """The collective network's two-pass floating-point sum: pass 1 finds
    every element's largest exponent (an integer max); pass 2 sums every
    contribution's mantissa aligned to it as 64-bit integers. Each addend is
    truncated (toward zero) to a multiple of 2**(emax - 62 + ceil(log2 n)),
    which leaves the headroom for n additions: the result is the same in any
    order, and differs from the exact sum by less than n units of that grid."""
    stack = np.stack([np.asarray(a, dtype=np.float64) for a in arrays])
    n = len(arrays)
    _, exps = np.frexp(stack)
    emax = np.where(np.any(stack != 0, axis=0), exps.max(axis=0), 0)
    shift = 62 - int(math.ceil(math.log2(max(n, 2)))) - emax  # bits kept below emax
    scaled = np.trunc(np.ldexp(stack, shift[None, ...])).astype(np.int64)
    total = scaled.sum(axis=0, dtype=np.int64)
    out = np.ldexp(total.astype(np.float64), -shift)
    return out.astype(stack.dtype if stack.dtype.kind == "f" else np.float64)


def tree_combine(arrays: List[np.ndarray], op: Any) -> np.ndarray:
    a0 = arrays[0]
    if a0.dtype.kind == "f":
        return tree_float_sum(arrays).astype(a0.dtype)
    fn = {"MPI_SUM": np.add, "MPI_MAX": np.maximum, "MPI_MIN": np.minimum, "MPI_BAND": np.bitwise_and,
          "MPI_BOR": np.bitwise_or, "MPI_BXOR": np.bitwise_xor}[op.name]
    acc = a0.copy()
    for a in arrays[1:]:
        acc = fn(acc, a).astype(a0.dtype)
    return acc


def hw_join(c: Call, kind: str, root: int = 0, nbytes: int = 0, two_pass: bool = False, contribution: Any = None) -> Any:
    """Takes part in a hardware collective; returns the shared record of the
    operation (its contributions, keyed by rank) once this rank is done."""
    rt = c.rt
    # On an MPI job's processes this process's driver sees its own ranks
    # only: the contributions travel with the joins (`World.hw_payloads`).
    apart = bool(rt.remote)
    key, rec = c.shared("hw")
    if contribution is not None:
        rec["parts"][c.me] = contribution
    # The same on every process: the communicator's context and the call's number.
    hkey = rt.hw_key(key) if not apart else c.comm._context << 32 | c.seq
    payload = pickle.dumps((c.me, contribution)) if apart and contribution is not None else None
    try:
        req = rt.world.hw_collective(c.ctx.rank, hkey, c.n, kind, c.world_rank(root), nbytes, two_pass, payload)
    except ValueError as e:
        raise MPIException(ERR_ARG, str(e)) from None
    c.ctx.call, c.ctx.frame = f"MPI.Comm.{c.op}()", sys._getframe(2)
    rt.wait(c.ctx, [req], 1)
    rt.world.finish(req)
    if apart and "fetched" not in rec:
        for _, b in rt.world.hw_payloads(hkey) or ():
            if b:  # a rank that contributes nothing sends nothing
                me, part = pickle.loads(b)
                rec["parts"][me] = part
        rec["fetched"] = True
    if c.leave(key, rec) and apart:
        rt.world.hw_forget(hkey)
    return rec


def tree_reduce(c: Call, kind: str, value: Any, red: Reducer, root: int = 0) -> Any:
    """A reduce or allreduce on the collective network: the combined value
    where the operation delivers it (None elsewhere, and for a skeleton)."""
    rec = hw_join(c, kind, root, c.nbytes, red.floating, contribution=value if red.op is not None else None)
    if red.op is None or (kind == "reduce" and c.me != root):
        return None
    if "result" not in rec:
        rec["result"] = tree_combine([rec["parts"][i] for i in range(c.n)], red.op)
    return rec["result"]
