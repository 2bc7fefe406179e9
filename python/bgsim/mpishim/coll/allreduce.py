"""MPI_Allreduce: `f(call, value, reducer) -> the combination of every rank's value`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Call, Reducer, _fold, _fold_in, _fold_out, _old, tree_reduce
from .registry import algorithm


@algorithm("allreduce", "recursive_doubling")
def allreduce_recursive_doubling(c: Call, value: Any, red: Reducer) -> Any:
    pof2, rem, new = _fold(c)
    value = _fold_in(c, value, red, rem)
    if new >= 0:
        mask = 1
        while mask < pof2:
            partner = _old(new ^ mask, rem)
            got = red.load(c.sendrecv(red.dump(value), partner, partner))
            value = c.combine(red, got, value) if (new ^ mask) < new else c.combine(red, value, got)
            mask <<= 1
    return _fold_out(c, value, red, rem)


@algorithm("allreduce", "reduce_scatter_allgather")
def allreduce_rabenseifner(c: Call, value: np.ndarray, red: Reducer) -> np.ndarray:
    """Reduce-scatter by recursive halving, then allgather by recursive
    doubling (arrays; non-power-of-two sizes fold first)."""
    pof2, rem, new = _fold(c)
    value = _fold_in(c, value, red, rem)
    if new >= 0:
        count = len(value)

        def at(i: int) -> int:
            """Where block i starts (blocks as even as count / pof2 allows;
            worked out when needed: a list of pof2 bounds per rank is
            n^2 memory over the ranks of one process)."""
            return count * i // pof2

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
            out = value[at(give[0]):at(give[1])]
            got = red.load(c.sendrecv(red.dump(out), partner, partner))
            mine = value[at(keep[0]):at(keep[1])]
            value[at(keep[0]):at(keep[1])] = c.combine(red, got, mine) if partner_new < new else c.combine(red, mine, got)
            steps.append((partner, keep, give))
            lo, hi = keep
            mask >>= 1
        for partner, keep, give in reversed(steps):
            got = red.load(c.sendrecv(red.dump(value[at(keep[0]):at(keep[1])]), partner, partner))
            value[at(give[0]):at(give[1])] = got
    return _fold_out(c, value, red, rem)


@algorithm("allreduce", "tree")
def allreduce_tree(c: Call, value: Any, red: Reducer) -> Any:
    return tree_reduce(c, "allreduce", value, red)
