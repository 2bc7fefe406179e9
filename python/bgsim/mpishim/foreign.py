"""Buffers that are not Python buffers, read as mpi4py reads them: DLPack
producers (``__dlpack__`` / ``__dlpack_device__``, capsule versions 0 and
1) and the CUDA array interface (``__cuda_array_interface__``).

Every simulated rank lives in this process's host memory, so a producer's
memory is read in place, whatever device the producer names: the simulated
MPI is like an MPI built without GPU support, which is handed the pointer
and reads it as host memory. Only host memory works (CPU tensors, or
producers that describe host memory as device memory, as mpi4py's own tests
do); a real GPU pointer cannot be read.

The view keeps the DLPack capsule alive as long as it is used and leaves it
to the producer to release (the capsule's destructor), as mpi4py does.
"""

from __future__ import annotations

import ctypes
import sys
import warnings
from typing import Any, Optional, Tuple

import numpy as _np

from ..errors import ArgumentTypeError as _TypeError
from ..errors import BufferAccessError

#: DLPack's kDLCPU: host memory.
CPU = 1
_READ_ONLY = 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):
    _fields_ = [
        ("version", _Version),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _Tensor),
    ]


_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_is_valid.restype = ctypes.c_int
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_get_pointer.restype = ctypes.c_void_p

# DLPack type codes -> numpy kind letters (bfloat16 and opaque handles are
# moved as bytes).
_KINDS = {0: "i", 1: "u", 2: "f", 5: "c", 6: "b"}


class _Holder:
    """Exposes foreign memory to numpy and keeps its owner alive."""

    def __init__(self, address: int, shape: Tuple[int, ...], typestr: str, readonly: bool, owner: Any):
        self.__array_interface__ = {"version": 3, "data": (address, readonly), "shape": shape, "typestr": typestr}
        self.owner = owner


def is_foreign(obj: Any) -> bool:
    """Whether `obj` offers its memory through DLPack or the CUDA array interface."""
    try:
        return hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")
    except Exception:  # a property that raises: not a buffer we can read
        return False


def memory(obj: Any) -> Optional[memoryview]:
    """A memoryview of `obj`'s memory: a Python buffer's own, or (with the
    element format) a DLPack or CUDA array interface object's; None when it
    offers none of these."""
    got = memory_and_device(obj)
    return None if got is None else got[0]


#: DLPack device types whose memory a CPU may read: none given, kDLCPU,
#: kDLCUDAHost, kDLROCMHost, kDLCUDAManaged.
CPU_ACCESSIBLE = frozenset((0, CPU, 3, 11, 13))
_CUDA = 2


def memory_and_device(obj: Any) -> Optional[Tuple[memoryview, int]]:
    """`memory(obj)` and the DLPack device type the object names for it
    (kDLCPU for a Python buffer, kDLCUDA for the CUDA array interface)."""
    try:
        return memoryview(obj), CPU
    except TypeError:
        pass
    if not is_foreign(obj):
        return None
    if hasattr(obj, "__dlpack__"):
        return _dlpack_view(obj)
    return _cai_view(obj), _CUDA


def _contiguous(shape, strides, itemsize: int, order: str) -> bool:
    """Whether strides (in units of `itemsize`, or bytes when itemsize is
    given as 1 per element) describe a C or Fortran contiguous layout."""
    dims = range(len(shape) - 1, -1, -1) if order == "C" else range(len(shape))
    size = itemsize
    for i in dims:
        if shape[i] > 1 and strides[i] != size:
            return False
        size *= shape[i]
    return True


def _dlpack_view(obj: Any) -> Tuple[memoryview, int]:
    try:
        device = obj.__dlpack_device__
    except AttributeError:
        raise _TypeError(f"dlpack: {type(obj).__name__} has __dlpack__ but no __dlpack_device__") from None
    device_type, device_id = device()
    if not isinstance(device_type, int) or not isinstance(device_id, int):
        raise _TypeError(f"dlpack: __dlpack_device__ must return two integers, got ({device_type!r}, {device_id!r})")
    # Device memory is asked for with stream -1 (no synchronisation), as
    # mpi4py asks for it.
    stream = {} if device_type == CPU else {"stream": -1}
    try:
        capsule = obj.__dlpack__(max_version=(1, 0), copy=False, **stream)
        name, versioned = b"dltensor_versioned", True
    except TypeError:
        capsule = obj.__dlpack__(**stream)
        name, versioned = b"dltensor", False
    if not _is_valid(capsule, name):
        raise BufferAccessError("dlpack: invalid capsule object")
    pointer = _get_pointer(capsule, name)
    readonly = False
    if versioned:
        managed = _ManagedVersioned.from_address(pointer)
        if managed.version.major < 1:
            raise BufferAccessError("dlpack: unexpected version")
        readonly = bool(managed.flags & _READ_ONLY)
    else:
        managed = _Managed.from_address(pointer)
    t = managed.dl_tensor
    ndim = t.ndim
    if ndim < 0:
        raise BufferAccessError("dlpack: number of dimensions is negative")
    if ndim > 0 and not t.shape:
        raise BufferAccessError("dlpack: shape is NULL")
    shape = tuple(t.shape[i] for i in range(ndim))
    if any(s < 0 for s in shape):
        raise BufferAccessError("dlpack: shape item is negative")
    if t.strides:
        strides = tuple(t.strides[i] for i in range(ndim))
        if any(s < 0 for s in strides):
            raise BufferAccessError("dlpack: strides item is negative")
        if not (_contiguous(shape, strides, 1, "C") or _contiguous(shape, strides, 1, "F")):
            raise BufferAccessError("dlpack: buffer is not contiguous")
    count = 1
    for s in shape:
        count *= s
    bits, lanes, code = t.dtype.bits, t.dtype.lanes, t.dtype.code
    itemsize = (bits * lanes + 7) // 8
    if lanes == 1 and code in _KINDS and bits in (8, 16, 32, 64, 128, 256):
        typestr = f"{sys.byteorder == 'little' and '<' or '>'}{_KINDS[code]}{bits // 8}"
        elements = (count,)
    elif lanes == 2 and code == 2 and bits in (32, 64, 128):  # pairs of floats: complex
        typestr = f"{sys.byteorder == 'little' and '<' or '>'}c{2 * bits // 8}"
        elements = (count,)
    else:
        typestr, elements = "|u1", (count * itemsize,)
    address = (t.data or 0) + t.byte_offset
    return memoryview(_np.asarray(_Holder(address, elements, typestr, readonly, capsule))), device_type


def _cai_view(obj: Any) -> memoryview:
    cai = obj.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise _TypeError(f"__cuda_array_interface__: expecting a dict, got {type(cai).__name__}")
    # A missing mandatory key is a KeyError, as in mpi4py.
    data, typestr, shape = cai["data"], cai["typestr"], tuple(cai["shape"])
    descr = cai.get("descr")
    if descr is not None and not isinstance(descr, list):
        raise _TypeError(f"__cuda_array_interface__: 'descr' must be a list, got {type(descr).__name__}")
    address, readonly = data
    count = 1
    for s in shape:
        count *= s
    if address is None and count == 0:
        address = 0
    if cai.get("mask") is not None:
        raise BufferAccessError("__cuda_array_interface__: cannot handle masked arrays")
    if count < 0:
        raise BufferAccessError(f"__cuda_array_interface__: buffer with negative size (shape:{shape}, size:{count})")
    order = typestr[:1]
    if order not in "<>|" or (order == "<" and sys.byteorder != "little") or (order == ">" and sys.byteorder != "big"):
        raise BufferAccessError(f"__cuda_array_interface__: typestr {typestr!r} with non-native or unrecognized byte order")
    itemsize = int(typestr[2:])
    strides: Optional[tuple] = cai.get("strides")
    if strides is not None and not (_contiguous(shape, strides, itemsize, "C") or _contiguous(shape, strides, itemsize, "F")):
        raise BufferAccessError(f"__cuda_array_interface__: buffer is not contiguous (shape:{shape}, strides:{strides}, itemsize:{itemsize})")
    if descr is not None and (len(descr) != 1 or tuple(descr[0]) != ("", typestr)):
        # A structured layout: read as its bytes, as mpi4py does.
        warnings.warn("__cuda_array_interface__: ignoring 'descr' key", RuntimeWarning, stacklevel=2)
    try:
        dtype = _np.dtype(typestr)
    except TypeError:
        dtype = _np.dtype("|u1")
        count *= itemsize
    return memoryview(_np.asarray(_Holder(address, (count,), dtype.str, bool(readonly), obj)))
