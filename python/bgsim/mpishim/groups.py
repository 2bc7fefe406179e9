"""Groups of ranks."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

from .. import runtime as _rt
from ..errors import UsageError
from .constants import IDENT, PROC_NULL, SIMILAR, UNDEFINED, UNEQUAL
from .errors import ERR_GROUP, ERR_RANK, Exception, _guard


#: Groups derived from others in this run: (operation, id of the parent's
#: ranks, arguments) -> (the parent's ranks, the group). Emptied per run.
_DERIVED: dict = {}


class Group:
    """An ordered set of processes (world ranks), as a handle: ``Group()``
    is a null group (falsy, equal to GROUP_NULL), ``Group(group)`` a new
    handle of the same group (equal to it, not it), and bgsim builds its
    own from a sequence of world ranks. Handles compare equal when they
    name the same group; ``Free`` makes a handle null, and no other."""

    def __init__(self, ranks: Any = None):
        if ranks is None:
            self._null = True
            self._ranks: Tuple[int, ...] = ()
            self._index: dict = {}
        elif isinstance(ranks, Group):
            self._null, self._ranks, self._index = ranks._null, ranks._ranks, ranks._index
        else:
            self._null = False
            self._ranks = tuple(ranks)
            self._index = {r: i for i, r in enumerate(self._ranks)}

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Group):
            return NotImplemented
        if self._null or other._null:
            return self._null and other._null
        return self._ranks is other._ranks

    def __hash__(self) -> int:
        return 0 if self._null else id(self._ranks)

    def __bool__(self) -> bool:
        return not self._null

    def __reduce__(self) -> Any:
        # As mpi4py: the predefined groups pickle as themselves, a null or
        # empty handle as a new handle of them, any other not at all.
        if self is GROUP_NULL:
            return "GROUP_NULL"
        if self is GROUP_EMPTY:
            return "GROUP_EMPTY"
        if self._null:
            return (Group, ())
        if self == GROUP_EMPTY:
            return (Group, (GROUP_EMPTY,))
        raise UsageError("cannot pickle a group other than GROUP_NULL and GROUP_EMPTY (its ranks are this run's)")

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
            return Group(hit[1])  # a handle of its own: freeing it frees no other rank's
        g = make()
        _DERIVED[key] = (self._ranks, g)
        return Group(g)

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
        """The ranks of `group` (by default MPI_COMM_WORLD's group) that
        ranks `ranks` of this group (by default all) have."""
        if ranks is None:
            ranks = range(len(self._ranks))
        out = []
        for r in ranks:
            if r == PROC_NULL:
                out.append(PROC_NULL)
                continue
            self._check([r])
            out.append(self._ranks[r] if group is None else group._index.get(self._ranks[r], UNDEFINED))
        return out

    def Compare(self, group: "Group") -> int:
        if self._null or group._null:
            raise Exception(ERR_GROUP, "Compare: MPI_GROUP_NULL")
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
        return Group(self)  # a group never changes once made: a new handle of it

    def Free(self) -> None:
        """Frees this handle: it becomes a null group (other handles of the
        group, other ranks' included, stay valid)."""
        if self is GROUP_EMPTY or self is GROUP_NULL:
            raise Exception(ERR_GROUP, "Free: GROUP_EMPTY and GROUP_NULL cannot be freed")
        self._null, self._ranks, self._index = True, (), {}

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Group size={len(self._ranks)}>"


GROUP_EMPTY = Group(())
GROUP_NULL = Group()

# MPI_GROUP_NULL: its accessors raise MPI_ERR_GROUP.
_guard(Group, ("Get_size", "Get_rank", "Incl", "Excl", "Range_incl", "Range_excl", "Translate_ranks", "Union",
               "Intersection", "Difference", "Dup"), lambda g: g._null, ERR_GROUP, "MPI_GROUP_NULL")
Group.Intersect = Group.Intersection
