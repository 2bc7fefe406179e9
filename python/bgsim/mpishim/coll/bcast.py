"""MPI_Bcast: `f(call, data (the root's; None elsewhere), root, nbytes) -> data`."""

from __future__ import annotations

import sys
from typing import List, Optional, Sequence, Tuple

from ... import _core
from ...errors import UsageError
from ..requests import _wait_some
from .base import OWN, PIPELINE_SEGMENT, Call, _cat, _slice, _split, hw_join
from .registry import algorithm, generic


@algorithm("bcast", "generic")
def bcast_generic(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    return generic("bcast", c, data, root, nbytes)


def _binomial_tree(c: Call, root: int) -> Tuple[List[int], List[int]]:
    """This rank's parent (none at the root) and children in the binomial
    tree from `root`, the farthest subtree first."""
    n, rel = c.n, (c.me - root) % c.n
    mask = 1
    parent = []
    while mask < n:
        if rel & mask:
            parent = [(c.me - mask) % n]
            break
        mask <<= 1
    mask >>= 1
    children = []
    while mask > 0:
        if rel + mask < n:
            children.append((c.me + mask) % n)
        mask >>= 1
    return parent, children


def _down_the_tree(c: Call, data: Optional[bytes], root: int, sends_per_step: int, mode: int = 0) -> bytes:
    """The data from the parent, then the children's sends, in steps of
    `sends_per_step` (0: all at once); run by the core."""
    parent, children = _binomial_tree(c, root)
    if not parent and not children:
        return data
    # A child gets what this rank received (None), or the root's data.
    parts = {d: None if parent else data for d in children}
    k = sends_per_step or max(len(children), 1)
    sends = [(0, min(k, len(children) - i)) for i in range(0, len(children), k)]
    got = c.exchange(parts, children, parent, [(1, 0)] * len(parent) + sends, mode=mode, dense=False)
    return got[0][1] if parent else data


@algorithm("bcast", "binomial")
def bcast_binomial(c: Call, data: Optional[bytes], root: int, nbytes: int = 0) -> bytes:
    """The data from the parent, then one blocking send per child, the
    farthest subtree first (MPICH's MPIC_Send: a send of rendezvous size
    holds up the next); run by the core."""
    return _down_the_tree(c, data, root, 1)


@algorithm("bcast", "torus_binomial")
def bcast_torus_binomial(c: Call, data: Optional[bytes], root: int, nbytes: int = 0) -> bytes:
    """BG/P's binomial broadcast (DCMF's, below MPI): the same tree, but a
    rank hands all its children's messages to the message layer at once
    when its data is in, and they go eager at every size (the protocol's
    packets are buffered where they arrive: no rendezvous handshake). Each
    costs the per-message work of a point-to-point message."""
    return _down_the_tree(c, data, root, 0, OWN)


# MPICH's broadcast: below this many bytes a power-of-two communicator
# gathers the scattered parts back by recursive doubling, else by a ring
# (the core's `mpi::coll::BCAST_RING`).
BCAST_LONG_MSG = _core.collective_thresholds()["bcast_ring"]


class _Assembly:
    """The broadcast buffer a rank fills from the parts it gets: bytes at
    their offsets, or, for a skeleton (parts that are sizes), only the size."""

    def __init__(self, nbytes: int):
        self.nbytes, self.buf, self.size_only = nbytes, None, False

    def put(self, offset: int, piece) -> None:
        if isinstance(piece, int):
            self.size_only = self.size_only or piece > 0
        elif len(piece):
            if self.buf is None:
                self.buf = bytearray(self.nbytes)
            self.buf[offset:offset + len(piece)] = piece

    def result(self):
        if self.buf is not None:
            return bytes(self.buf)
        return self.nbytes if self.size_only or self.nbytes else b""


@algorithm("bcast", "scatter_allgather")
def bcast_scatter_allgather(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    """van de Geijn, as MPICH does it: the message cut in n parts of
    ceil(nbytes / n) bytes in rank order relative to the root, a binomial
    scatter (each subtree's parts as one contiguous message; ranks whose
    part lies past the end get nothing), then an allgather on the relative
    ranks: recursive doubling on a power-of-two communicator below
    `BCAST_LONG_MSG`, else a ring."""
    n = c.n
    if n == 1:
        return bcast_binomial(c, data, root)
    rel = (c.me - root) % n
    ss = -(-nbytes // n)

    def at(r: int) -> int:  # where relative rank r's part starts
        return min(r * ss, nbytes)

    def peer(r: int) -> int:
        return (r + root) % n

    # Scatter: this rank ends up with the parts of relative ranks
    # [rel, rel + lowbit(rel)) as one piece starting at at(rel).
    if rel == 0:
        chunk, top = data, 1 << (n - 1).bit_length()
    else:
        top = rel & -rel
        chunk = b""
        if at(rel) < nbytes:
            r = c.irecv(peer(rel - top))
            c.wait([r])
            chunk = r._obj
    mask = top >> 1
    while mask > 0:  # blocking sends, as in the binomial broadcast
        if rel + mask < n and at(rel + mask) < nbytes:
            piece = _slice(chunk, at(rel + mask) - at(rel), at(min(rel + 2 * mask, n)) - at(rel))
            c.wait([c.isend(piece, peer(rel + mask))])
        mask >>= 1
    mine = _slice(chunk, 0, at(rel + 1) - at(rel))
    if nbytes < BCAST_LONG_MSG and n & (n - 1) == 0:
        # Recursive doubling: at step k swap the 2^k parts held with the
        # partner's subtree's.
        held, mask = mine, 1
        while mask < n:
            partner = rel ^ mask
            got = c.sendrecv(held, peer(partner), peer(partner))
            held = _cat([held, got] if partner > rel else [got, held])
            mask <<= 1
        return held
    # Ring, run by the core in one call: at step i pass on to the right the
    # part got from the left.
    out = _Assembly(nbytes)
    out.put(at(rel), mine)
    came = c.exchange(("relay", mine), [peer(rel + 1)] * (n - 1), [peer(rel - 1)] * (n - 1), "pairwise", dense=False)
    j = rel
    for _, last in came:
        j = (j - 1) % n
        out.put(at(j), last)
    return out.result()


def _torus_tree(c: Call, root: int, colour: int) -> Tuple[Optional[int], List[int]]:
    """Parent and children of this rank in colour `colour`'s spanning tree:
    the same edge-disjoint scheme as the message layer's deposit-bit
    broadcast, with chains of point-to-point messages for line packets.
    With m dimensions longer than one, colour c takes the rotation (d0, d1,
    d2) of them starting at the c-th: the root's d0 line (stage 1), d1 lines
    from it (2), d2 lines from that plane (3) - every node off the root's
    d0 plane - then one hop into that plane from its neighbour plane (4).
    Chains run + only on a torus, both ways from the sender on a mesh."""
    w = c.rt.world
    dims = w.shape
    torus = c.rt.torus_dims
    coords = [w.coords(c.world_rank(i))[:3] for i in range(c.n)]
    index = {tuple(x): i for i, x in enumerate(coords)}
    R = coords[root]
    nontrivial = [d for d in range(3) if dims[d] > 1]
    m = len(nontrivial)
    order = [nontrivial[(colour + i) % m] for i in range(m)] if m else []

    def back(x: List[int], d: int) -> List[int]:
        """One step back along a chain of dimension d that started at R[d]."""
        x = list(x)
        if torus[d]:
            x[d] = (x[d] - 1) % dims[d]
        else:
            x[d] += -1 if x[d] > R[d] else 1
        return x

    def parent_of(x: Sequence[int]) -> Optional[Tuple[int, ...]]:
        x = list(x)
        if x == list(R) or not m:
            return None
        d0 = order[0]
        if x[d0] == R[d0]:
            # Stage 4: from the neighbour plane.
            size = dims[d0]
            src = (R[d0] - 1) % size if torus[d0] else (R[d0] + 1 if R[d0] + 1 < size else R[d0] - 1)
            y = list(x)
            y[d0] = src
            return tuple(y)
        for s in range(m - 1, -1, -1):
            d = order[s]
            if all(x[order[t]] == R[order[t]] for t in range(s + 1, m)):
                # x is reached in stage s+1: along order[s] from the node
                # where that line starts (its coordinate order[s] = R's).
                if s > 0 and x[d] == R[d]:
                    continue
                return tuple(back(x, d))
        return None

    parents = [parent_of(x) for x in coords]
    me = c.me
    p = parents[me]
    children = [i for i, q in enumerate(parents) if q is not None and index[q] == me]
    return (index[p] if p is not None else None), children


@algorithm("bcast", "torus_p2p")
def bcast_torus_p2p(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    """One part per dimension longer than one (a colour), each spread along
    its own edge-disjoint tree (`_torus_tree`), pipelined in segments: the
    parts leave the root by different links and use different links all the
    way."""
    ncol = max(1, sum(1 for d in c.rt.world.shape if d > 1))
    parts = _split(data, ncol) if c.me == root else [b""] * ncol
    sizes = _split(nbytes, ncol)
    trees = [_torus_tree(c, root, k) for k in range(ncol)]
    nseg = [max(1, -(-s // PIPELINE_SEGMENT)) for s in sizes]
    got: List[dict] = [{} for _ in range(ncol)]
    pending = []
    # Every (colour, segment) has its own sub-tag, and each node forwards
    # whichever segment comes in first: the colours' pipelines do not wait
    # for each other.
    sub = lambda k, s: (k << 14) | s  # noqa: E731
    incoming = []
    for s in range(max(nseg)):
        for k in range(ncol):
            parent, children = trees[k]
            if s >= nseg[k]:
                continue
            if parent is None:
                seg = _slice(parts[k], s * PIPELINE_SEGMENT, (s + 1) * PIPELINE_SEGMENT)
                got[k][s] = seg
                pending += [c.isend(seg, ch, sub=sub(k, s)) for ch in children]
            else:
                incoming.append((k, s, c.irecv(parent, sub=sub(k, s))))
    while incoming:
        reqs = [r for _, _, r in incoming]
        done = _wait_some(reqs, "MPI.Comm.bcast()", any_one=False)
        for i in sorted(done, reverse=True):
            k, s, r = incoming.pop(i)
            r._raise()
            got[k][s] = r._obj
            pending += [c.isend(r._obj, ch, sub=sub(k, s)) for ch in trees[k][1]]
    got = [[g[s] for s in range(len(g))] for g in got]
    c.wait(pending)
    out = _cat([_cat(g) for g in got])
    return out if isinstance(out, int) else out[:nbytes]


@algorithm("bcast", "torus_deposit")
def bcast_deposit(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    """Message-layer broadcast with deposit-bit line packets (see
    `World.ml_bcast`): the data as three colours, each spread x->y->z,
    y->z->x, z->x->y by line packets, each node forwarding every packet it
    gets into the next dimension as soon as it has read it."""
    rt = c.rt
    # On an MPI job's processes this process's driver sees its own ranks
    # only: the ids are the communicator's context and the call's number
    # (the same on every process), and the root's data goes with its join.
    apart = bool(rt.remote)
    key, rec = c.shared("deposit")
    if c.me == root:
        rec["parts"][root] = data
    if apart:
        bid = deposit_id(c.comm._context, c.seq)
    else:
        bid = rt.deposit_ids.setdefault(key, len(rt.deposit_ids))
    payload = bytes(data) if apart and c.me == root else None
    req = rt.world.ml_bcast(c.ctx.rank, bid, c.world_rank(root), nbytes, payload)
    c.ctx.call, c.ctx.frame = "MPI.Comm.bcast()", sys._getframe(2)
    rt.wait(c.ctx, [req], 1)
    rt.world.finish(req)
    if root not in rec["parts"]:
        rec["parts"][root] = rt.world.ml_bcast_payload(bid)
    out = rec["parts"][root]
    if c.leave(key, rec):
        rt.world.ml_forget(bid)
    return out


#: Bits of a deposit-bit broadcast's id on an MPI job's processes: the
#: communicator (its context / 2) above, the call's number below; ids fit
#: the message layer's 30 bits of a packet's message id.
_CALL_BITS, _ID_BITS = 18, 30


def deposit_id(context: int, seq: int) -> int:
    """The id of deposit-bit broadcast `seq` on the communicator of
    `context`, the same on every process of an MPI job."""
    comm = context // 2
    if seq >= 1 << _CALL_BITS or comm >= 1 << (_ID_BITS - _CALL_BITS):
        raise UsageError(f"deposit-bit broadcasts on the processes of an MPI job: at most {1 << _CALL_BITS} calls on "
                         f"each of {1 << (_ID_BITS - _CALL_BITS)} communicators (this is call {seq} on communicator "
                         f"{comm}); run on one process, or choose another bcast algorithm (--coll bcast=binomial)")
    return comm << _CALL_BITS | seq


@algorithm("bcast", "tree")
def bcast_tree(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    rec = hw_join(c, "bcast", root, nbytes, contribution=data if c.me == root else None)
    return rec["parts"][root]
