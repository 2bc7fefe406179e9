"""MPI collectives on the simulated machine, in three families of algorithms.

- *generic point-to-point* (what a portable MPI does on a crossbar):
  binomial bcast, scatter + allgather bcast, ring and recursive-doubling
  allgather, post-all and pairwise alltoall (and the size switch between
  them), recursive-doubling and reduce-scatter + allgather allreduce,
  dissemination barrier, binomial gather / scatter / reduce;
- *torus-aware*: bcast along edge-disjoint routes of the torus (the message
  cut in three parts, each spread x->y->z, y->z->x, z->x->y, pipelined), and
  alltoall in an evenly spread injection order; *message layer*: alltoall
  whose packets are injected directly, dynamically routed, without
  per-message protocol work;
- *hardware*: the collective network's bcast / reduce / allreduce (integer
  directly, floating-point sums in two passes) and the global-interrupt
  barrier, for communicators spanning the whole partition only.

Every call chooses an algorithm (the machine's `[collectives]` table,
`--coll OP=NAME`, ``bgsim.run(coll=...)``, else the default rule) and the run
records it. Algorithms move real bytes over the communicator's collective
context; each call has its own tag, so consecutive collectives never mix.
"""

from __future__ import annotations

import math
import pickle
import sys
import warnings
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy as np

# Sizes at which the default selection switches (bytes), as a portable MPI
# (MPICH) does; see docs/collectives.md.
BCAST_LONG = 12 * 1024
ALLREDUCE_LONG = 2 * 1024
ALLGATHER_LONG = 80 * 1024
ALLTOALL_LONG = 32 * 1024
PIPELINE_SEGMENT = 16 * 1024

_DIRECT = 4  # send mode: message-layer direct injection


def _dump(obj: Any) -> bytes:
    return pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)


class CollError(Exception):
    pass


class Call:
    """One collective call on one rank: the communicator, the tag of this
    call, and point-to-point helpers on the collective context."""

    def __init__(self, comm: Any, op: str, root: Optional[int] = None, check: Any = None):
        from . import MPI

        self.MPI = MPI
        self.comm = comm
        self.ctx, self.me = comm._me()
        self.n = comm.Get_size()
        self.rt = self.ctx.runtime
        seqs = self.ctx.state.setdefault("coll_seq", {})
        self.seq = seqs.get(comm._context, 0)
        seqs[comm._context] = self.seq + 1
        self.tag = self.seq % MPI.TAG_UB
        self.op = op
        if root is not None and (not isinstance(root, (int, np.integer)) or not 0 <= root < self.n):
            raise MPI.Exception(MPI.ERR_ROOT, f"{op}: root {root} in a communicator of size {self.n}")
        self._check_match(op, root, check)

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
                cls = self.MPI.ERR_ROOT if theirs[0] == op and theirs[1] != root else self.MPI.ERR_ARG
                raise self.MPI.Exception(cls, f"collective call #{self.seq} on this communicator does not match "
                                              f"across ranks: {'; '.join(what)}")

    # -- point-to-point on the collective context --

    def isend(self, data: bytes, dest: int, mode: int = 0, sub: Optional[int] = None):
        return self.comm._isend_bytes(data, dest, self._tag(sub), mode, "collective", ctx_off=1)

    def irecv(self, src: int, sub: Optional[int] = None):
        # A message without content (a skeleton's) arrives as its size.
        return self.comm._irecv_into((1 << 30) - 1, src, self._tag(sub), lambda st, d: d if d or not st[2] else st[2],
                                     ctx_off=1)

    def _tag(self, sub: Optional[int]) -> int:
        """The call's tag, or a sub-tag of it (for algorithms whose messages
        between one pair may complete out of order)."""
        if sub is None:
            return self.tag
        return ((self.seq % (1 << 14)) << 16 | (sub & 0xFFFF)) + (1 << 30)

    def wait(self, reqs: List[Any]) -> None:
        from .MPI import _wait_all
        _wait_all(reqs, f"MPI.Comm.{self.op}()")
        for r in reqs:
            r._raise()

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

    def world_rank(self, r: int) -> int:
        return self.comm._group._ranks[r]


# ---------------------------------------------------------------- selection

def choose(call: Call, op: str, nbytes: int, *, hw_ok: bool = True, pow2_only: Sequence[str] = (),
           unsupported: Optional[dict] = None) -> str:
    """The algorithm for this call: the run's choice for `op` if it applies,
    else the default rule; a forced choice that cannot apply (`unsupported`:
    name -> why, for this call) falls back to the default, and the run
    records the fallback."""
    rt = call.rt
    wanted = rt.coll_choice.get(op, "auto")
    default = _default(call, op, nbytes, hw_ok)
    algo, note = wanted, ""
    if wanted == "auto":
        algo = default
    elif wanted in ("tree", "gi") and not (hw_ok and call.spans_partition() and _has(call, wanted)):
        algo = default if default not in ("tree", "gi") else _generic_default(op, nbytes, call.n)
        note = (f"{wanted} needs a communicator spanning the whole partition" if not call.spans_partition()
                else f"{wanted} needs a network this machine does not have" if not _has(call, wanted)
                else f"{wanted} cannot do this operation or datatype")
    elif wanted in ("torus_p2p", "torus_deposit") and not _rectangular(call):
        algo, note = _generic_default(op, nbytes, call.n), f"{wanted} needs one rank per node of the whole partition"
    elif wanted in pow2_only and call.n & (call.n - 1):
        algo, note = _generic_default(op, nbytes, call.n), f"{wanted} needs a power-of-two communicator size"
    elif unsupported and wanted in unsupported:
        algo, note = _generic_default(op, nbytes, call.n), f"{wanted} {unsupported[wanted]}"
    if unsupported and algo in unsupported and not note:
        # The default rule picked what this call cannot do.
        algo = "recursive_doubling" if op == "allreduce" else _generic_default(op, 0, 1)
    if note:
        algo_used = algo
        key = (op, wanted, algo_used, note)
        if key not in rt.coll_warned:
            rt.coll_warned.add(key)
            print(f"bgsim: {op}: `{wanted}` not used ({note}); using `{algo_used}`", file=sys.stderr)
    if call.me == 0:
        name = algo if not note else f"{algo} (fallback from {wanted})"
        stats = rt.coll_stats.setdefault(op, {})
        stats[name] = stats.get(name, 0) + 1
    return algo


def _has(call: Call, algo: str) -> bool:
    """Whether the machine has the network a hardware algorithm runs on."""
    return {"tree": "collective", "gi": "barrier"}[algo] in call.rt.world.components


def _rectangular(call: Call) -> bool:
    w = call.rt.world
    return call.spans_partition() and w.tasks_per_node == 1


def _generic_default(op: str, nbytes: int, n: int) -> str:
    pow2 = n & (n - 1) == 0
    return {
        "barrier": "dissemination",
        "bcast": "scatter_allgather" if nbytes >= BCAST_LONG and n > 2 else "binomial",
        "reduce": "binomial",
        "allreduce": "reduce_scatter_allgather" if nbytes >= ALLREDUCE_LONG and pow2 else "recursive_doubling",
        "allgather": "recursive_doubling" if pow2 and nbytes * n < ALLGATHER_LONG else "ring",
        "alltoall": "generic",
        "gather": "binomial",
        "scatter": "binomial",
    }[op]


def _default(call: Call, op: str, nbytes: int, hw_ok: bool) -> str:
    """bgsim's default: the hardware networks where they apply (whole
    partition, an operation the ALU does), else what a portable MPI does."""
    if hw_ok and call.spans_partition():
        if op == "barrier" and _has(call, "gi"):
            return "gi"
        if op in ("bcast", "reduce", "allreduce") and _has(call, "tree"):
            return "tree"
    return _generic_default(op, nbytes, call.n)


# ---------------------------------------------------------------- generic building blocks

def barrier_dissemination(c: Call) -> None:
    k = 1
    while k < c.n:
        c.sendrecv(b"", (c.me + k) % c.n, (c.me - k) % c.n)
        k *= 2


def bcast_binomial(c: Call, data: Optional[bytes], root: int) -> bytes:
    n, rel = c.n, (c.me - root) % c.n
    mask = 1
    while mask < n:
        if rel & mask:
            r = c.irecv((c.me - mask) % n)
            c.wait([r])
            data = r._obj
            break
        mask <<= 1
    mask >>= 1
    sends = []
    while mask > 0:
        if rel + mask < n:
            sends.append(c.isend(data, (c.me + mask) % n))
        mask >>= 1
    c.wait(sends)
    return data


def _split(data: Any, parts: int) -> List[Any]:
    """`data` in `parts` pieces (a skeleton's size: the sizes of the pieces)."""
    if isinstance(data, int):
        size = -(-data // parts) if data else 0
        return [max(0, min(size, data - i * size)) for i in range(parts)]
    size = -(-len(data) // parts) if data else 0
    return [data[i * size:(i + 1) * size] for i in range(parts)]


def _cat(parts: List[Any]) -> Any:
    """Pieces joined (a skeleton's pieces - sizes, or empty bytes - summed)."""
    if any(isinstance(p, int) for p in parts):
        return sum(p if isinstance(p, int) else len(p) for p in parts)
    return b"".join(parts)


def _size(data: Any) -> int:
    return data if isinstance(data, int) else len(data)


def _slice(data: Any, a: int, b: int) -> Any:
    if isinstance(data, int):
        return max(0, min(b, data) - a)
    return data[a:b]


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


def gather_binomial(c: Call, data: bytes, root: int) -> Optional[List[bytes]]:
    """Binomial gather: each rank forwards its subtree's parts in one message."""
    n, rel = c.n, (c.me - root) % c.n
    held = {rel: data}
    mask = 1
    while mask < n:
        if rel & mask:
            c.wait([c.isend(_dump(held), (c.me - mask) % n)])
            return None
        if rel + mask < n:
            r = c.irecv((c.me + mask) % n)
            c.wait([r])
            held.update(pickle.loads(r._obj))
        mask <<= 1
    return [held[(i - root) % n] for i in range(n)]


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


def bcast_scatter_allgather(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    """van de Geijn: scatter the message in n parts (binomial), then a ring allgather."""
    parts = _split(data, c.n) if c.me == root else None
    mine = scatter_binomial(c, parts, root)
    out = _cat(allgather_ring(c, mine))
    return out if isinstance(out, int) else out[:nbytes]


def alltoall_postall(c: Call, parts: List[bytes], order: Optional[Sequence[int]] = None, mode: int = 0) -> List[bytes]:
    n, me = c.n, c.me
    dests = list(order) if order is not None else [(me + k) % n for k in range(1, n)]
    recvs = {i: c.irecv(i) for i in range(n) if i != me}
    sends = [c.isend(parts[d], d, mode) for d in dests]
    c.wait(list(recvs.values()) + sends)
    return [parts[i] if i == me else recvs[i]._obj for i in range(n)]


def alltoall_pairwise(c: Call, parts: List[bytes]) -> List[bytes]:
    n, me = c.n, c.me
    out = list(parts)
    for k in range(1, n):
        dest, src = (me + k) % n, (me - k) % n
        out[src] = c.sendrecv(parts[dest], dest, src)
    return out


def alltoall(c: Call, parts: List[bytes], algo: str) -> List[bytes]:
    if algo == "generic":
        algo = "pairwise" if max((_size(p) for p in parts), default=0) > ALLTOALL_LONG else "postall"
    if algo == "pairwise":
        return alltoall_pairwise(c, parts)
    if algo == "torus_spread":
        # Every rank visits its destinations in its own random order, so the
        # injections of all ranks spread evenly over the links.
        rng = np.random.default_rng([c.rt.seed, c.world_rank(c.me), c.seq])
        order = [int(d) for d in rng.permutation(c.n) if d != c.me]
        return alltoall_postall(c, parts, order)
    if algo == "msglayer":
        rng = np.random.default_rng([c.rt.seed, c.world_rank(c.me), c.seq])
        order = [int(d) for d in rng.permutation(c.n) if d != c.me]
        return alltoall_postall(c, parts, order, mode=_DIRECT)
    return alltoall_postall(c, parts)


# ---------------------------------------------------------------- reductions

class Reducer:
    """How to combine contributions: `combine(a, b)` = a op b with a from the
    lower ranks; `dump` / `load` move a value; `split` / `join` cut arrays."""

    def __init__(self, combine: Callable[[Any, Any], Any], dump: Callable[[Any], bytes], load: Callable[[bytes], Any],
                 commute: bool, array: bool):
        self.combine, self.dump, self.load, self.commute, self.array = combine, dump, load, commute, array


def reduce_binomial(c: Call, value: Any, red: Reducer, root: int) -> Any:
    """Binomial tree to rank 0 in rank order (also right for non-commutative
    operations), then to the root."""
    n, me = c.n, c.me
    acc = value
    mask = 1
    while mask < n:
        if me & mask:
            c.wait([c.isend(red.dump(acc), me - mask)])
            acc = None
            break
        if me + mask < n:
            r = c.irecv(me + mask)
            c.wait([r])
            acc = red.combine(acc, red.load(r._obj))
        mask <<= 1
    if root != 0:
        if me == 0:
            c.wait([c.isend(red.dump(acc), root)])
            acc = None
        elif me == root:
            r = c.irecv(0)
            c.wait([r])
            acc = red.load(r._obj)
    return acc if me == root else None


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
            value = red.combine(red.load(r._obj), value)
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


def allreduce_recursive_doubling(c: Call, value: Any, red: Reducer) -> Any:
    pof2, rem, new = _fold(c)
    value = _fold_in(c, value, red, rem)
    if new >= 0:
        mask = 1
        while mask < pof2:
            partner = _old(new ^ mask, rem)
            got = red.load(c.sendrecv(red.dump(value), partner, partner))
            value = red.combine(got, value) if (new ^ mask) < new else red.combine(value, got)
            mask <<= 1
    return _fold_out(c, value, red, rem)


def allreduce_rabenseifner(c: Call, value: np.ndarray, red: Reducer) -> np.ndarray:
    """Reduce-scatter by recursive halving, then allgather by recursive
    doubling (arrays; non-power-of-two sizes fold first)."""
    pof2, rem, new = _fold(c)
    value = _fold_in(c, value, red, rem)
    if new >= 0:
        count = len(value)
        bounds = [count * i // pof2 for i in range(pof2 + 1)]
        lo, hi = 0, pof2  # block range this rank is responsible for
        value = value.copy()
        mask = pof2 >> 1
        steps = []
        while mask > 0:
            partner_new = new ^ mask
            partner = _old(partner_new, rem)
            mid = (lo + hi) // 2
            if new < partner_new:
                keep, give = (lo, mid), (mid, hi)
            else:
                keep, give = (mid, hi), (lo, mid)
            out = value[bounds[give[0]]:bounds[give[1]]]
            got = red.load(c.sendrecv(red.dump(out), partner, partner))
            mine = value[bounds[keep[0]]:bounds[keep[1]]]
            value[bounds[keep[0]]:bounds[keep[1]]] = red.combine(got, mine) if partner_new < new else red.combine(mine, got)
            steps.append((partner, keep, give))
            lo, hi = keep
            mask >>= 1
        for partner, keep, give in reversed(steps):
            got = red.load(c.sendrecv(red.dump(value[bounds[keep[0]]:bounds[keep[1]]]), partner, partner))
            value[bounds[give[0]]:bounds[give[1]]] = got
    return _fold_out(c, value, red, rem)


# ---------------------------------------------------------------- torus-aware bcast

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
    from .MPI import _wait_some
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


# ---------------------------------------------------------------- hardware

#: Operations the tree's ALU does, by MPI op name and numpy kind ('i','u','f').
TREE_OPS = {"MPI_SUM": "iuf", "MPI_MAX": "iu", "MPI_MIN": "iu", "MPI_BAND": "iu", "MPI_BOR": "iu", "MPI_BXOR": "iu"}


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
    key = ("hw", c.comm._context, c.seq)
    rec = rt.hw_data.setdefault(key, {"parts": {}, "left": c.n})
    if contribution is not None:
        rec["parts"][c.me] = contribution
    hkey = rt.hw_key(key)
    try:
        req = rt.world.hw_collective(c.ctx.rank, hkey, c.n, kind, c.world_rank(root), nbytes, two_pass)
    except ValueError as e:
        raise c.MPI.Exception(c.MPI.ERR_ARG, str(e)) from None
    c.ctx.call, c.ctx.frame = f"MPI.Comm.{c.op}()", sys._getframe(2)
    rt.wait(c.ctx, [req], 1)
    rt.world.finish(req)
    rec["left"] -= 1
    if rec["left"] == 0:
        del rt.hw_data[key]
    return rec


def bcast_deposit(c: Call, data: Optional[bytes], root: int, nbytes: int) -> bytes:
    """Message-layer broadcast with deposit-bit line packets (see
    `World.ml_bcast`): the data as three colours, each spread x->y->z,
    y->z->x, z->x->y by line packets, each node forwarding every packet it
    gets into the next dimension as soon as it has read it."""
    rt = c.rt
    key = ("deposit", c.comm._context, c.seq)
    rec = rt.hw_data.setdefault(key, {"parts": {}, "left": c.n})
    if c.me == root:
        rec["parts"][root] = data
    if key not in rt.deposit_ids:
        rt.deposit_ids[key] = len(rt.deposit_ids)
    req = rt.world.ml_bcast(c.ctx.rank, rt.deposit_ids[key], c.world_rank(root), nbytes)
    c.ctx.call, c.ctx.frame = "MPI.Comm.bcast()", sys._getframe(2)
    rt.wait(c.ctx, [req], 1)
    rt.world.finish(req)
    rec["left"] -= 1
    out = rec["parts"][root]
    if rec["left"] == 0:
        del rt.hw_data[key]
    return out
