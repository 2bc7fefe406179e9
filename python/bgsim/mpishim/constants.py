"""Constants of the MPI standard as mpi4py names them, and the IN_PLACE / BOTTOM sentinels."""

from __future__ import annotations

#: The mpi4py version whose API this module follows (its test suite is what
#: `make conformance` runs: scripts/mpi4py_sdist.py pins the same version).
_MPI4PY_VERSION = "4.1.2"





ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
ROOT = -3
UNDEFINED = -32766
KEYVAL_INVALID = -1
TAG_UB = 2**31 - 1
IDENT, CONGRUENT, SIMILAR, UNEQUAL = 0, 1, 2, 3
CART, GRAPH, DIST_GRAPH = 1, 2, 3


class _Weights:
    """MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY (distributed graph constructors)."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


UNWEIGHTED = _Weights("UNWEIGHTED")
WEIGHTS_EMPTY = _Weights("WEIGHTS_EMPTY")
MAX_PROCESSOR_NAME = 256
MAX_ERROR_STRING = 512
BSEND_OVERHEAD = 0


class _BufferAutomatic:
    """MPI_BUFFER_AUTOMATIC: let MPI buffer Bsend messages itself."""

    def __repr__(self) -> str:
        return "MPI.BUFFER_AUTOMATIC"

    def __reduce__(self) -> str:
        return "BUFFER_AUTOMATIC"


BUFFER_AUTOMATIC = _BufferAutomatic()
THREAD_SINGLE, THREAD_FUNNELED, THREAD_SERIALIZED, THREAD_MULTIPLE = 0, 1, 2, 3
#: Attribute keys of COMM_WORLD (Comm.Get_attr).
APPNUM, UNIVERSE_SIZE, LASTUSEDCODE, IO, WTIME_IS_GLOBAL, HOST = 1002, 1003, 1004, 1005, 1006, 1007
#: Communicator split types (Comm.Split_type): every rank of a node shares its memory.
COMM_TYPE_SHARED, COMM_TYPE_HW_UNGUIDED, COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED = 1, 2, 3, 4
VERSION, SUBVERSION = 4, 1


class _Sentinel:
    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


IN_PLACE = _Sentinel("IN_PLACE")
BOTTOM = _Sentinel("BOTTOM")
