"""Integer handles of MPI objects (``toint`` / ``fromint``, ``py2f`` /
``f2py``): an object gets one the first time it is asked for, and the
integer gives back that very object."""

from __future__ import annotations

from typing import Any, Dict

from .errors import ERR_ARG, Exception

_objects: Dict[int, Any] = {}


class Handle:
    """Mixin: integer handles for an MPI object class."""

    def toint(self) -> int:
        h = self.__dict__.get("_handle")
        if h is None:
            h = self.__dict__["_handle"] = len(_objects) + 1
            _objects[h] = self
        return h

    def py2f(self) -> int:
        return self.toint()

    @classmethod
    def fromint(cls, handle: int) -> Any:
        obj = _objects.get(int(handle))
        if obj is None or not isinstance(obj, cls):
            raise Exception(ERR_ARG, f"{cls.__name__}.fromint({handle}): not a handle of this run")
        return obj

    @classmethod
    def f2py(cls, handle: int) -> Any:
        return cls.fromint(handle)


class NullOnly:
    """Base of an MPI object kind bgsim does not simulate (windows, files):
    only its null handle exists, falsy and equal to any of its kind, and
    every other method raises NotImplementedError naming the feature
    (`_WHY`)."""

    _WHY = "not simulated by bgsim"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)

        def unsupported(*args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError(f"{type(self).__name__}.{name}: {self._WHY}")
        return unsupported

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, type(self))

    def __hash__(self) -> int:
        return 0
