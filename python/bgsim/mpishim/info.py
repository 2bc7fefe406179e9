"""``MPI.Info``: key/value hints (the simulated MPI reads none of them, but
keeps them as MPI does) and memory from ``Alloc_mem``."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import UsageError
from .errors import ERR_ARG, ERR_INFO, ERR_INFO_NOKEY, ERR_SESSION, Exception, _guard


class Info:
    """An ordered set of string keys and values (``mpi4py.MPI.Info``)."""

    def __init__(self, info: Optional["Info"] = None):
        self._d: Dict[str, str] = dict(info._d) if isinstance(info, Info) else {}
        self._null = False

    @classmethod
    def Create(cls, items: Any = None) -> "Info":
        info = cls()
        if items:
            info.update(items)
        return info

    def Free(self) -> None:
        self._d.clear()

    def Dup(self) -> "Info":
        return Info(self)

    def Get(self, key: str) -> Optional[str]:
        return self._d.get(key)

    def Set(self, key: str, value: str) -> None:
        if self._null:
            raise UsageError("MPI.INFO_NULL cannot be changed")
        self._d[str(key)] = str(value)

    def Delete(self, key: str) -> None:
        if key not in self._d:
            raise Exception(ERR_INFO_NOKEY, f"Delete: no key {key!r}")
        del self._d[key]

    def Get_nkeys(self) -> int:
        return len(self._d)

    def Get_nthkey(self, n: int) -> str:
        if not 0 <= n < len(self._d):
            raise Exception(ERR_ARG, f"Get_nthkey: {n} is not from 0 to {len(self._d) - 1}")
        return list(self._d)[n]

    # -- the mapping interface of mpi4py's Info --
    def __len__(self) -> int:
        return len(self._d)

    def __contains__(self, key: object) -> bool:
        return key in self._d

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __getitem__(self, key: str) -> str:
        return self._d[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.Set(key, value)

    def __delitem__(self, key: str) -> None:
        self.Delete(key)

    def __bool__(self) -> bool:
        return not self._null

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Info) and not self._null and not other._null and self._d == other._d)

    def get(self, key: str, default: Any = None) -> Any:
        return self._d.get(key, default)

    def keys(self) -> List[str]:
        return list(self._d)

    def values(self) -> List[str]:
        return list(self._d.values())

    def items(self) -> List[Tuple[str, str]]:
        return list(self._d.items())

    def update(self, other: Any = (), **kw: str) -> None:
        for k, v in (other.items() if hasattr(other, "items") else other):
            self.Set(k, v)
        for k, v in kw.items():
            self.Set(k, v)

    def pop(self, key: str, *default: Any) -> Any:
        return self._d.pop(key, *default)

    def popitem(self) -> Tuple[str, str]:
        return self._d.popitem()

    def copy(self) -> "Info":
        return Info(self)

    def clear(self) -> None:
        self._d.clear()

    def __repr__(self) -> str:
        return "<MPI.INFO_NULL>" if self._null else f"<MPI.Info {self._d}>"


INFO_NULL = Info()
INFO_NULL._null = True
#: The environment's hints (none in the simulated machine).
INFO_ENV = Info()


def Alloc_mem(size: int, info: Info = INFO_NULL) -> Any:
    """`size` bytes of memory, zeroed, as an ``MPI.buffer``."""
    from .membuf import buffer  # noqa: PLC0415 (membuf imports the buffer layer, which imports this module)
    if size < 0:
        raise UsageError(f"Alloc_mem: size {size} is negative")
    return buffer.allocate(size, clear=True)


def Free_mem(mem: Any) -> None:
    """Gives memory from Alloc_mem back."""
    if hasattr(mem, "release"):
        mem.release()


class Session:
    """MPI-4 sessions (``mpi4py.MPI.Session``): not simulated; bgsim's
    programs start in the world model (COMM_WORLD)."""

    def __init__(self, *args: object, **kw: object):
        raise NotImplementedError("MPI sessions (MPI.Session) are not simulated; use MPI.COMM_WORLD")

    @classmethod
    def Init(cls, *args: object, **kw: object) -> "Session":
        raise NotImplementedError("MPI sessions (MPI.Session.Init) are not simulated; use MPI.COMM_WORLD")


SESSION_NULL = object.__new__(Session)


def _session_null(name: str) -> Any:
    def method(self: Session, *args: Any, **kw: Any) -> Any:
        raise Exception(ERR_SESSION, f"{name} on MPI_SESSION_NULL")
    return method


for _name in ("Get_num_psets", "Get_nth_pset", "Get_info", "Get_pset_info", "Create_group", "Get_errhandler",
              "Set_errhandler", "Finalize", "Call_errhandler"):
    setattr(Session, _name, _session_null(_name))

# MPI_INFO_NULL: every call raises MPI_ERR_INFO.
_guard(Info, ("Free", "Dup", "Get", "Set", "Delete", "Get_nkeys", "Get_nthkey"), lambda i: i._null, ERR_INFO,
       "MPI_INFO_NULL")


def Get_hw_resource_info() -> Info:
    """The hardware resources (MPI_Get_hw_resource_info): none described."""
    return Info()
