"""COMM_WORLD, COMM_SELF and the module-level functions (time, init, version)."""

from __future__ import annotations

import threading as _threading
from typing import Any, Optional, Tuple

from greenlet import getcurrent as _getcurrent

from .._core import __version__
from .buffers import _members_cache
from .handles import _objects as _handle_objects
from .comm import Intracomm
from .constants import SUBVERSION, THREAD_FUNNELED, THREAD_MULTIPLE, THREAD_SINGLE, VERSION
from . import groups as _groups
from .groups import Group
from .requests import _ctx


class _WorldComm(Intracomm):
    """COMM_WORLD: every rank of the run (resolved at call time)."""

    _per_rank_errhandler = True

    def __init__(self):
        super().__init__(Group(()), 0, "MPI_COMM_WORLD")

    def _me(self):
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        if ctx.runtime.cpu_factor:
            ctx.runtime.charge_host_cpu(ctx)
        return ctx, ctx.rank


class _SelfComm(Intracomm):
    """COMM_SELF: the calling rank alone (its own context per rank)."""

    _per_rank_errhandler = True
    _per_rank_group = True

    def __init__(self):
        super().__init__(Group(()), 2, "MPI_COMM_SELF")

    def _bind(self) -> None:
        self._p2p = None  # the group is the caller's own: the general path
        self._p2p_group = None

    def _me(self):
        ctx = _ctx()
        self._group = Group([ctx.rank])
        ctx.runtime.charge_host_cpu(ctx)
        return ctx, 0

    def Get_size(self) -> int:
        return 1

    def Get_group(self) -> Group:
        return Group([_ctx().rank])


COMM_WORLD = _WorldComm()
COMM_SELF = _SelfComm()


def _reset(nranks: int) -> None:
    """Prepares the module for a new run of `nranks` ranks."""
    _members_cache.clear()
    _handle_objects.clear()
    _groups._DERIVED.clear()
    COMM_WORLD._group = Group(range(nranks))
    COMM_WORLD._bind()


def Wtime() -> float:
    """Simulated time of the calling rank, seconds."""
    ctx = _ctx()
    rt = ctx.runtime
    rt.charge_host_cpu(ctx)
    return rt.seconds(rt.world.rank_time(ctx.rank))


def Wtick() -> float:
    ctx = _ctx()
    return 1.0 / ctx.runtime.ticks_per_second


def Get_processor_name() -> str:
    ctx = _ctx()
    x, y, z, t = ctx.runtime.world.coords(ctx.rank)
    return f"bgsim-node-{x}-{y}-{z}"


def Get_version() -> Tuple[int, int]:
    """The standard whose interface the simulated MPI follows (mpi4py 4.1's);
    what it does not simulate, `Get_library_version` says."""
    return (VERSION, SUBVERSION)


#: What of MPI 4.1 the simulated MPI does not have (each raises
#: NotImplementedError or MPI_ERR_COMM naming itself, or is refused in a
#: trace).
NOT_SIMULATED = "dynamic processes, MPI-IO, sessions, partitioned communication"


def Get_library_version() -> str:
    return (f"bgsim {__version__} simulated MPI (MPI {VERSION}.{SUBVERSION} interface on a simulated Blue Gene: "
            f"point-to-point, collectives, communicators and topologies, datatypes, one-sided; "
            f"not simulated: {NOT_SIMULATED})")


def get_vendor() -> Tuple[str, Tuple[int, int, int]]:
    parts = [int(p) for p in __version__.split(".")[:3] if p.isdigit()]
    return ("bgsim", tuple((parts + [0, 0, 0])[:3]))


#: The highest thread level the simulated MPI honours. Every rank is a
#: greenlet of the simulator's own thread: a rank's program may start threads
#: of its own, but only its main flow may call MPI (a call from another thread
#: is refused, naming this level).
THREAD_PROVIDED = THREAD_FUNNELED


def _start(level: int) -> int:
    """MPI_Init_thread for the calling rank: initialized, at `level` or the
    highest the simulated MPI honours, whichever is lower."""
    provided = max(THREAD_SINGLE, min(int(level), THREAD_PROVIDED))
    st = _rank_state()
    if st is not None and not st.get("initialized", True):
        st["initialized"] = True
        st["thread_level"] = provided
    elif st is not None:
        provided = st.get("thread_level", THREAD_PROVIDED)
    return provided


def Init() -> None:
    _start(THREAD_SINGLE)


def Init_thread(required: int = THREAD_MULTIPLE) -> int:
    return _start(required)


def Query_thread() -> int:
    st = _rank_state()
    return THREAD_PROVIDED if st is None else st.get("thread_level", THREAD_PROVIDED)


def Is_thread_main() -> bool:
    """True in a rank's main flow (a rank's greenlet), False in a thread the
    rank's program started."""
    return getattr(_getcurrent(), "ctx", None) is not None or _threading.current_thread() is _threading.main_thread()


def _imported(initialize: bool, level: int, errors: Any) -> None:
    """What ``from mpi4py import MPI`` does in a rank, as mpi4py.rc asks:
    initializes MPI at `level` (or leaves it to MPI.Init when `initialize`
    is false) and sets the error handler of COMM_SELF, COMM_WORLD and the
    communicators and windows made from them (`errors`: an Errhandler)."""
    st = _rank_state()
    if st is None:
        return
    st["initialized"] = False
    if initialize:
        _start(level)
    st["errhandler_default"] = errors


def _rank_state() -> Optional[dict]:
    """The calling rank's MPI state, None outside a simulated rank."""
    ctx = getattr(_getcurrent(), "ctx", None)
    return None if ctx is None else ctx.state


def Finalize() -> None:
    """Ends the calling rank's use of MPI: `Is_finalized` says so from now
    on (each rank for itself, as each is a process of its own)."""
    st = _rank_state()
    if st is not None:
        st["finalized"] = True


def Is_initialized() -> bool:
    st = _rank_state()
    return True if st is None else st.get("initialized", True)


def Is_finalized() -> bool:
    st = _rank_state()
    return bool(st is not None and st.get("finalized"))


def Attach_buffer(buf: Any) -> None:
    _ctx().state["buffer"] = buf


def Detach_buffer() -> Any:
    return _ctx().state.pop("buffer", None)


def Pcontrol(level: int) -> None:
    pass
