"""MPI_Reduce: `f(call, value, reducer, root) -> the combination at the root, None elsewhere`."""

from __future__ import annotations

from typing import Any

from .base import Call, Reducer, tree_reduce
from .registry import algorithm


@algorithm("reduce", "binomial")
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
            acc = c.combine(red, acc, red.load(r._obj))
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


@algorithm("reduce", "tree")
def reduce_tree(c: Call, value: Any, red: Reducer, root: int) -> Any:
    return tree_reduce(c, "reduce", value, red, root)
