"""Communication skeletons: MPI collectives of a given size without data.

Inside a rank program, these run the same algorithms as the MPI module's
collectives (chosen the same way, recorded the same way), but the messages
carry only their size: for studies of communication at scales where the
data would not fit in one process's memory (e.g. an all-to-all of 256 KB per
pair on 512 nodes). Results are sizes, not data.
"""

from __future__ import annotations

import json
import time
from typing import Any, Optional

from . import _core, api
from .mpishim import coll as _coll
from . import memory
from .api import Machine
from .errors import UsageError
from .program import make_world


def barrier(comm: Any) -> None:
    comm.Barrier()


def bcast(comm: Any, nbytes: int, root: int = 0) -> int:
    """MPI_Bcast of `nbytes` from `root`."""
    from .mpishim.collectives import _bcast_bytes
    c = _coll.Call(comm, "bcast", root, check=nbytes)
    return _bcast_bytes(c, nbytes if c.me == root else None, root, nbytes)


def alltoall(comm: Any, nbytes: int) -> None:
    """MPI_Alltoall of `nbytes` per pair."""
    from .mpishim.buffers import Same
    c = _coll.Call(comm, "alltoall", check=nbytes)
    # n sizes in O(1) memory (n ranks each holding n of them would be n^2).
    _coll.run("alltoall", c, Same(nbytes, c.n), nbytes=nbytes)


def allreduce(comm: Any, nbytes: int, itemsize: int = 8, floating: bool = False) -> None:
    """MPI_Allreduce (a sum) of `nbytes` of `itemsize`-byte elements, integer
    or (`floating`) floating point: two passes on the tree."""
    c = _coll.Call(comm, "allreduce", check=nbytes)
    v = _coll.Sized(nbytes // itemsize, itemsize)
    _coll.run("allreduce", c, v, _coll.sized_reducer(itemsize, floating), nbytes=nbytes, alu=True, elements=v.n)


def reduce(comm: Any, nbytes: int, root: int = 0, itemsize: int = 8, floating: bool = False) -> None:
    """MPI_Reduce (a sum) of `nbytes` to `root`."""
    c = _coll.Call(comm, "reduce", root, check=nbytes)
    v = _coll.Sized(nbytes // itemsize, itemsize)
    _coll.run("reduce", c, v, _coll.sized_reducer(itemsize, floating), root, nbytes=nbytes, alu=True, elements=v.n)


def isend(comm: Any, nbytes: int, dest: int, tag: int = 0) -> Any:
    """MPI_Isend of a message of `nbytes` (no content) to `dest`."""
    return comm._isend_bytes(int(nbytes), dest, tag, 0, "Isend")


def irecv(comm: Any, nbytes: int, source: int, tag: int = 0) -> Any:
    """MPI_Irecv of a message of up to `nbytes` (no content) from `source`."""
    return comm._irecv_into(int(nbytes), source, tag, None)


def waitall(requests: Any) -> None:
    """MPI_Waitall."""
    from .mpishim.requests import Request
    if requests:
        Request.Waitall(list(requests))


def alltoallv(comm: Any, send_bytes: Any, recv_bytes: Any = None) -> None:
    """MPI_Alltoallv sending `send_bytes[r]` to rank r and receiving
    `recv_bytes[r]` (by default the same counts: a symmetric exchange) from
    it, through the same algorithm choice as the MPI module's Alltoallv
    (MPICH's: every nonzero receive and send posted at once, then one
    wait). The counts are sequences of one per rank, or dicts of the
    nonzero ones (rank -> bytes: nothing as long as the communicator, for
    sparse exchanges on large machines)."""
    n = comm.Get_size()

    def counts(spec: Any, what: str) -> Any:
        if isinstance(spec, dict):
            bad = [r for r in spec if not 0 <= r < n]
            if bad:
                raise UsageError(f"alltoallv: {what} counts for rank {bad[0]}, not one of the {n} ranks")
            return {int(r): int(b) for r, b in spec.items() if b}
        out = [int(b) for b in spec]
        if len(out) != n:
            raise UsageError(f"alltoallv: {len(out)} {what} counts for {n} ranks")
        return out
    sends = counts(send_bytes, "send")
    recvs = sends if recv_bytes is None else counts(recv_bytes, "receive")
    c = _coll.Call(comm, "alltoall")
    c.expect = sorted(recvs) if isinstance(recvs, dict) else [r for r, b in enumerate(recvs) if b > 0]
    largest = max(sends.values() if isinstance(sends, dict) else sends, default=0)
    _coll.run("alltoall", c, sends, nbytes=largest)


def halo_in_core(grid: Any, nbytes: int = 1024, iters: int = 1, machine: Any = "bgp", threads: int = 1,
                 partitions: Optional[int] = None, **world: Any) -> dict:
    """A periodic halo exchange whose ranks are skeletons driven by the core
    itself - no Python per rank, for a million ranks and more: on the
    logical grid `grid` (e.g. (1024, 1024); rank-major, as MPI_Cart_create
    orders ranks) every rank receives from and sends `nbytes` to each of
    its 2 x len(grid) neighbours, then waits for all, `iters` times. It
    makes the Irecv / Isend / Waitall calls a Python program would make, so
    it gives the same simulated time. `threads` > 1: the machine is cut
    into that many partitions, each a copy of the world running its own
    nodes on a thread of its own - the same result, bit for bit (packet
    tier only; memory grows with the copies); as for `bgsim.run`, a
    machine of fewer than 512 nodes or ranks stays on one thread unless
    `partitions` (at least `threads`) says how to cut it. Under an MPI launcher
    (`mpirun -n P`, a bgsim built with `make build`) every process
    makes the same call and runs one partition; each gets the result.
    `world`: `make_world`'s
    shape, mode, mapping, seed, memory_check. Returns ranks, messages,
    simulated_s, events, wall_s, build_s, threads, partitions."""
    grid = [int(g) for g in grid]
    if not grid or any(g < 1 for g in grid):
        raise UsageError(f"halo grid {grid}: every dimension must be at least 1")
    api.check_threads(threads, partitions)
    n = 1
    for g in grid:
        n *= g
    m = machine if isinstance(machine, Machine) else Machine(machine)
    m = m.with_settings(shape=world.get("shape"), mode=world.get("mode"))
    threads, parts = api.mpi_threads_that_pay(m, n, threads, partitions, _core.mpi_launched())
    if world.pop("memory_check", True):
        # With partitions: the world and one copy of it per partition.
        copies = 1 if parts == 1 else parts + 1
        # Every rank posts a receive from and a send to each neighbour.
        memory.check(m.nodes * copies, n * copies,
                     what=f"a halo of {n:,} skeleton ranks on {'x'.join(map(str, m.shape))}"
                     + (f" in {parts} partitions" if parts > 1 else ""),
                     rank_bytes=memory.CORE_RANK_BYTES, messages=n * 2 * len(grid) * copies)
    t0 = time.perf_counter()
    w = make_world(machine, nranks=n, memory_check=False, **world)
    built = time.perf_counter() - t0
    if _core.mpi_launched():
        api.register_mpi_finalize()
    r = json.loads(w.skeleton_halo(grid, int(nbytes), int(iters), threads, parts))
    r["wall_s"] = time.perf_counter() - t0
    r["build_s"] = built
    r["threads"], r["partitions"] = threads, parts
    return r
