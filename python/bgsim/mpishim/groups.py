"""Groups of ranks."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from .. import runtime as _rt
from .constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from .errors import ERR_RANK, Exception


#: Groups derived from others in this run: (operation, id of the parent's
#: ranks, arguments) -> (the parent's ranks, the group). Emptied per run.
_DERIVED: dict = {}


class Group:
    """An ordered set of processes (world ranks)."""

    def __init__(self, ranks: Sequence[int] = ()):
        self._ranks = tuple(ranks)
        self._index = {r: i for i, r in enumerate(self._ranks)}

    def Get_size(self) -> int:
        return len(self._ranks)

    def Get_rank(self) -> int:
        return self._index.get(_rt.current().rank, UNDEFINED)

    @property
    def size(self) -> int:
        return self.Get_size()

    @property
    def rank(self) -> int:
        return self.Get_rank()

    def _check(self, ranks: Sequence[int]) -> None:
        for r in ranks:
            if not 0 <= r < len(self._ranks):
                raise Exception(ERR_RANK, f"rank {r} is not in a group of {len(self._ranks)}")

    def _derived(self, op: str, arg: tuple, make: "Any") -> "Group":
        """The group `make()` builds from this one, made once for every rank
        that asks the same of the same group (ranks run in one process: a
        group of n ranks made by each of n ranks would take n^2 memory)."""
        key = (op, id(self._ranks), arg)
        hit = _DERIVED.get(key)
        if hit is not None and hit[0] is self._ranks:
            return hit[1]
        g = make()
        _DERIVED[key] = (self._ranks, g)
        return g

    def Incl(self, ranks: Sequence[int]) -> "Group":
        ranks = list(ranks)
        self._check(ranks)
        if len(set(ranks)) != len(ranks):
            raise Exception(ERR_RANK, "ranks appear twice")
        return self._derived("incl", tuple(ranks), lambda: Group([self._ranks[r] for r in ranks]))

    def Excl(self, ranks: Sequence[int]) -> "Group":
        ranks = set(ranks)
        self._check(ranks)
        return self._derived("excl", tuple(sorted(ranks)),
                             lambda: Group([w for i, w in enumerate(self._ranks) if i not in ranks]))

    def Range_incl(self, ranges: Sequence[Tuple[int, int, int]]) -> "Group":
        out = []
        for first, last, stride in ranges:
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return self.Incl(out)

    def Range_excl(self, ranges: Sequence[Tuple[int, int, int]]) -> "Group":
        out = []
        for first, last, stride in ranges:
            out.extend(range(first, last + (1 if stride > 0 else -1), stride))
        return self.Excl(out)

    def Translate_ranks(self, ranks: Optional[Sequence[int]] = None, group: Optional["Group"] = None) -> List[int]:
        if ranks is None:
            ranks = range(len(self._ranks))
        out = []
        for r in ranks:
            if r == PROC_NULL:
                out.append(PROC_NULL)
                continue
            self._check([r])
            out.append(UNDEFINED if group is None else group._index.get(self._ranks[r], UNDEFINED))
        return out

    def Compare(self, group: "Group") -> int:
        if self._ranks == group._ranks:
            return IDENT
        if set(self._ranks) == set(group._ranks):
            return SIMILAR
        return UNEQUAL

    def Union(self, group: "Group") -> "Group":
        return Group(list(self._ranks) + [r for r in group._ranks if r not in self._index])

    def Intersection(self, group: "Group") -> "Group":
        return Group([r for r in self._ranks if r in group._index])

    Intersect = Intersection

    def Difference(self, group: "Group") -> "Group":
        return Group([r for r in self._ranks if r not in group._index])

    def Dup(self) -> "Group":
        return self  # groups never change once made

    def Free(self) -> None:
        pass

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group size={len(self._ranks)}>"


GROUP_EMPTY = Group()
GROUP_NULL = Group()
