"""MPI_Allreduce: `f(call, value, reducer) -> the combination of every rank's value`."""

from __future__ import annotations

import pickle
import sys
from typing import Any, List, Tuple

import numpy as np

from .base import Call, Reducer, Sized, _fold, _fold_in, _fold_out, _folded_sized, _old, tree_reduce
from .bcast import deposit_id
from .registry import algorithm


@algorithm("allreduce", "recursive_doubling")
def allreduce_recursive_doubling(c: Call, value: Any, red: Reducer) -> Any:
    pof2, rem, new = _fold(c)
    partners = [] if new < 0 else [_old(new ^ (1 << k), rem) for k in range(pof2.bit_length() - 1)]
    if value.__class__ is Sized:  # no content: the core runs the steps
        _folded_sized(c, value.nbytes, rem, new, [(p, value.nbytes, value.nbytes) for p in partners])
        return value
    value = _fold_in(c, value, red, rem)
    for partner in partners:
        got = red.load(c.sendrecv(red.dump(value), partner, partner))
        value = c.combine(red, got, value) if partner < c.me else c.combine(red, value, got)
    return _fold_out(c, value, red, rem)


def _halving(pof2: int, rem: int, new: int) -> List[Tuple[int, Tuple[int, int], Tuple[int, int]]]:
    """Recursive halving's steps for (new) rank `new` of `pof2`: (partner,
    the block range kept, the range given), the kept range halved at each."""
    lo, hi = 0, pof2
    mask = pof2 >> 1
    steps = []
    while mask > 0:
        partner_new = new ^ mask
        mid = (lo + hi) // 2
        keep, give = ((lo, mid), (mid, hi)) if new < partner_new else ((mid, hi), (lo, mid))
        steps.append((_old(partner_new, rem), keep, give))
        lo, hi = keep
        mask >>= 1
    return steps


@algorithm("allreduce", "reduce_scatter_allgather")
def allreduce_rabenseifner(c: Call, value: np.ndarray, red: Reducer) -> np.ndarray:
    """Reduce-scatter by recursive halving, then allgather by recursive
    doubling (arrays; non-power-of-two sizes fold first)."""
    pof2, rem, new = _fold(c)
    count = len(value)

    def at(i: int) -> int:
        """Where block i starts (blocks as even as count / pof2 allows;
        worked out when needed: a list of pof2 bounds per rank is
        n^2 memory over the ranks of one process)."""
        return count * i // pof2

    steps = _halving(pof2, rem, new) if new >= 0 else []
    if value.__class__ is Sized:  # no content: the core runs the steps
        size = value.itemsize

        def nbytes(r: Tuple[int, int]) -> int:
            return (at(r[1]) - at(r[0])) * size
        middle = [(p, nbytes(give), nbytes(keep)) for p, keep, give in steps]
        middle += [(p, nbytes(keep), 0) for p, keep, _ in reversed(steps)]
        _folded_sized(c, value.nbytes, rem, new, middle)
        return value
    value = _fold_in(c, value, red, rem)
    if new >= 0:
        value = value.copy()
        for partner, keep, give in steps:
            out = value[at(give[0]):at(give[1])]
            got = red.load(c.sendrecv(red.dump(out), partner, partner))
            mine = value[at(keep[0]):at(keep[1])]
            value[at(keep[0]):at(keep[1])] = c.combine(red, got, mine) if partner < c.me else c.combine(red, mine, got)
        for partner, keep, give in reversed(steps):
            got = red.load(c.sendrecv(red.dump(value[at(keep[0]):at(keep[1])]), partner, partner))
            value[at(give[0]):at(give[1])] = got
    return _fold_out(c, value, red, rem)


@algorithm("allreduce", "tree")
def allreduce_tree(c: Call, value: Any, red: Reducer) -> Any:
    return tree_reduce(c, "allreduce", value, red)


@algorithm("allreduce", "torus_rectangle")
def allreduce_rectangle(c: Call, value: Any, red: Reducer) -> Any:
    """The message layer's line reduction on the torus (see
    `World.ml_allreduce`): per packet colour, partial sums combined on
    every node's core along lines to rank 0's node, and spread back with
    deposit-bit line packets. The result is the combination in rank order
    (a op b with a from the lower ranks), the same on every rank."""
    rt = c.rt
    # On an MPI job's processes the ids are the communicator's context and
    # the call's number, and every rank's contribution goes with its join.
    apart = bool(rt.remote)
    content = red.op is not None and value.__class__ is not Sized
    key, rec = c.shared("rectangle")
    if content:
        rec["parts"][c.me] = value
    bid = deposit_id(c.comm._context, c.seq) if apart else rt.deposit_ids.setdefault(key, len(rt.deposit_ids))
    payload = pickle.dumps((c.me, value)) if apart and content else None
    req = rt.world.ml_allreduce(c.ctx.rank, bid, c.world_rank(0), c.nbytes, payload)
    c.ctx.call, c.ctx.frame = "MPI.Comm.allreduce()", sys._getframe(2)
    rt.wait(c.ctx, [req], 1)
    rt.world.finish(req)
    if content and "result" not in rec:
        if apart:
            for b in rt.world.ml_allreduce_payloads(bid):
                me, part = pickle.loads(b)
                rec["parts"][me] = part
        acc = rec["parts"][0]
        for i in range(1, c.n):
            acc = red.combine(acc, rec["parts"][i])
        rec["result"] = acc
    out = rec.get("result")
    if c.leave(key, rec):
        rt.world.ml_forget(bid)
    return out if content else (value if value.__class__ is Sized else None)
