"""``MPI.buffer`` (mpi4py 4; ``MPI.memory`` in mpi4py 3): a view of a block
of memory, usable wherever the simulated MPI takes a message buffer.

Python 3.11 classes cannot export the buffer protocol, so other libraries
(``numpy.frombuffer``, ``memoryview``) read it through ``.cast("B")`` or
``.tobytes()``; the simulated MPI's own calls take it as it is.
"""

from __future__ import annotations

import ctypes
from typing import Any, Optional

import numpy as _np

from ..errors import ArgumentTypeError as _TypeError
from ..errors import BufferAccessError as _BufferError
from ..errors import UsageError as _ValueError
from . import foreign as _foreign


class buffer:
    """A view of memory: of a buffer-like object, or allocated."""

    #: _kind: the DLPack device type of the memory (kDLCPU unless a
    #: DLPack or CUDA array interface object named another). The simulated
    #: MPI's calls take any; Python-side access (cast, tobytes, indexing)
    #: refuses memory a CPU cannot read, as mpi4py's does.
    __slots__ = ("_mv", "_obj", "_kind")

    def __init__(self, obj: Any = None):
        self._kind = _foreign.CPU
        if obj is None:
            self._mv, self._obj = memoryview(b""), None
        elif isinstance(obj, buffer):
            self._mv, self._obj, self._kind = obj._mv, obj._obj, obj._kind
        else:
            got = _foreign.memory_and_device(obj)
            if got is None:
                raise _TypeError(f"buffer: expecting a buffer-like object, got {type(obj).__name__}")
            mv, self._kind = got
            if not mv.contiguous:
                raise _BufferError("buffer: the object's memory is not contiguous")
            self._mv, self._obj = mv.cast("B"), obj

    def _host(self) -> memoryview:
        """The memory, for Python-side access: refused for device memory."""
        if self._kind not in _foreign.CPU_ACCESSIBLE:
            raise _BufferError(f"buffer is not CPU-accessible (DLPack device type {self._kind})")
        return self._mv

    def _view(self, mv: memoryview) -> "buffer":
        b = buffer.__new__(buffer)
        b._mv, b._obj, b._kind = mv, self._obj, self._kind
        return b

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> "buffer":
        if nbytes < 0:
            raise _ValueError(f"buffer.allocate: size {nbytes} is negative")
        b = buffer.__new__(buffer)
        b._mv, b._obj, b._kind = memoryview(bytearray(nbytes)), None, _foreign.CPU
        return b

    @staticmethod
    def frombuffer(obj: Any, readonly: bool = False) -> "buffer":
        b = buffer(obj)
        if not readonly and b._mv.readonly:
            raise _BufferError("buffer.frombuffer: the object is read-only")
        if readonly:
            b._mv = b._mv.toreadonly()
        return b

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> "buffer":
        if nbytes < 0:
            raise _ValueError(f"buffer.fromaddress: size {nbytes} is negative")
        if address == 0 and nbytes > 0:
            raise _ValueError("buffer.fromaddress: a null address with a positive size")
        b = buffer.__new__(buffer)
        raw = (ctypes.c_char * nbytes).from_address(address) if nbytes else bytearray()
        b._mv, b._obj, b._kind = memoryview(raw).cast("B"), None, _foreign.CPU
        if readonly:
            b._mv = b._mv.toreadonly()
        return b

    @property
    def address(self) -> int:
        if len(self._mv) == 0:
            return 0
        return int(_np.frombuffer(self._mv, dtype=_np.uint8).__array_interface__["data"][0])

    @property
    def obj(self) -> Any:
        return self._obj

    @property
    def nbytes(self) -> int:
        return self._mv.nbytes

    @property
    def readonly(self) -> bool:
        return self._mv.readonly

    @property
    def format(self) -> str:
        return "B"

    @property
    def itemsize(self) -> int:
        return 1

    def cast(self, format: str, shape: Optional[Any] = None) -> memoryview:
        mv = self._host()
        return mv.cast(format) if shape is None else mv.cast(format, shape)

    def tobytes(self, order: Optional[str] = None) -> bytes:
        return self._host().tobytes()

    def toreadonly(self) -> "buffer":
        return self._view(self._mv.toreadonly())

    def release(self) -> None:
        self._mv = memoryview(b"")
        self._obj = None
        self._kind = _foreign.CPU

    def __len__(self) -> int:
        return len(self._mv)

    def __getitem__(self, item: Any) -> Any:
        got = self._host()[item]
        return self._view(got) if isinstance(got, memoryview) else got

    def __setitem__(self, item: Any, value: Any) -> None:
        mv = self._host()
        if mv.readonly:
            raise _TypeError("buffer: cannot modify read-only memory")
        if isinstance(item, slice) and isinstance(value, int):
            # mpi4py fills a slice with one byte value (``mem[:] = 0``).
            start, stop, step = item.indices(len(mv))
            mv[item] = bytes([value]) * len(range(start, stop, step))
            return
        mv[item] = value._host() if isinstance(value, buffer) else value

    def __repr__(self) -> str:
        return f"<MPI.buffer of {self.nbytes} bytes>"


memory = buffer
