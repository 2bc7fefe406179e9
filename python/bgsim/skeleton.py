"""Communication skeletons: MPI collectives of a given size without data.

Inside a rank program, these run the same algorithms as the MPI module's
collectives (chosen the same way, recorded the same way), but the messages
carry only their size: for studies of communication at scales where the
data would not fit in one process's memory (e.g. an all-to-all of 256 KB per
pair on 512 nodes). Results are sizes, not data.
"""

from __future__ import annotations

from typing import Any

from . import coll as _coll


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


def _reducer(itemsize: int, floating: bool = False) -> _coll.Reducer:
    def load(x: Any) -> Sized:
        return Sized((x if isinstance(x, int) else len(x)) // itemsize, itemsize)
    return _coll.Reducer(lambda a, b: a, lambda a: a.nbytes, load, True, True, floating=floating)


def barrier(comm: Any) -> None:
    comm.Barrier()


def bcast(comm: Any, nbytes: int, root: int = 0) -> int:
    """MPI_Bcast of `nbytes` from `root`."""
    from .mpishim.collectives import _bcast_bytes
    c = _coll.Call(comm, "bcast", root, check=nbytes)
    return _bcast_bytes(c, nbytes if c.me == root else None, root, nbytes)


def alltoall(comm: Any, nbytes: int) -> None:
    """MPI_Alltoall of `nbytes` per pair."""
    c = _coll.Call(comm, "alltoall", check=nbytes)
    _coll.run("alltoall", c, [nbytes] * c.n, nbytes=nbytes)


def allreduce(comm: Any, nbytes: int, itemsize: int = 8, floating: bool = False) -> None:
    """MPI_Allreduce (a sum) of `nbytes` of `itemsize`-byte elements, integer
    or (`floating`) floating point: two passes on the tree."""
    c = _coll.Call(comm, "allreduce", check=nbytes)
    v = Sized(nbytes // itemsize, itemsize)
    _coll.run("allreduce", c, v, _reducer(itemsize, floating), nbytes=nbytes, alu=True, elements=v.n)
