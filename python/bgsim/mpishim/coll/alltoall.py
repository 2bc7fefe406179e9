"""MPI_Alltoall: `f(call, parts (one per rank)) -> the parts every rank sent this one`."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

from .base import DIRECT, Call
from .registry import algorithm, generic


@algorithm("alltoall", "generic")
def alltoall_generic(c: Call, parts: Any) -> Any:
    if getattr(c, "expect", None) is not None:
        # MPI_Alltoallv / Alltoallw: MPICH posts every nonzero send and
        # receive at once, whatever the sizes.
        return alltoall_postall(c, parts)
    return generic("alltoall", c, parts)


@algorithm("alltoall", "postall")
def alltoall_postall(c: Call, parts: Any, order: Optional[Sequence[int]] = None, mode: int = 0) -> Any:
    """Every send and receive posted, then one wait (run by the core:
    `Call.exchange`). In MPI_Alltoallv and Alltoallw a zero count is no
    message, as in MPICH: `c.expect` lists the ranks that send this one
    anything, and `parts` may be a dict of the nonzero parts only (a
    skeleton's sparse exchange: then so is the result, and nothing here is
    as long as the communicator)."""
    n, me = c.n, c.me
    expect = getattr(c, "expect", None)
    if expect is None:
        # (The lists go straight to the core, which copies them: nothing
        # here holds them while the exchange runs.)
        got = c.exchange(parts, list(order) if order is not None else [(me + k) % n for k in range(1, n)],
                         [i for i in range(n) if i != me], mode=mode)
        got[me] = parts[me]
        return got
    sparse = isinstance(parts, dict)
    nonzero = [d for d in parts if parts[d]] if sparse else [d for d in range(n) if parts[d]]
    if order is not None:
        wanted = set(nonzero)
        dests = [d for d in order if d in wanted]
    else:
        dests = sorted((d for d in nonzero if d != me), key=lambda d: (d - me) % n)
    srcs = [i for i in expect if i != me]
    if sparse:
        got = dict(c.exchange(parts, dests, srcs, mode=mode, dense=False))
        if parts.get(me):
            got[me] = parts[me]
        return got
    got = c.exchange(parts, dests, srcs, mode=mode)
    return [parts[i] if i == me else b"" if got[i] is None else got[i] for i in range(n)]


@algorithm("alltoall", "pairwise")
def alltoall_pairwise(c: Call, parts: List[bytes]) -> List[bytes]:
    """Step k sends to rank me + k and receives from me - k (run by the core)."""
    n, me = c.n, c.me
    got = c.exchange(parts, [(me + k) % n for k in range(1, n)], [(me - k) % n for k in range(1, n)], "pairwise")
    got[me] = parts[me]
    return got


def _random_order(c: Call) -> List[int]:
    """Every rank visits its destinations in its own random order, so the
    injections of all ranks spread evenly over the links."""
    rng = np.random.default_rng([c.rt.seed, c.world_rank(c.me), c.seq])
    return [int(d) for d in rng.permutation(c.n) if d != c.me]


@algorithm("alltoall", "torus_spread")
def alltoall_torus_spread(c: Call, parts: List[bytes]) -> List[bytes]:
    return alltoall_postall(c, parts, _random_order(c))


@algorithm("alltoall", "msglayer")
def alltoall_msglayer(c: Call, parts: List[bytes]) -> List[bytes]:
    return alltoall_postall(c, parts, _random_order(c), mode=DIRECT)
