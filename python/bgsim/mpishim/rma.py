"""One-sided communication (``MPI.Win``): windows, Put / Get / Accumulate
and their relatives, and the three ways to synchronize (Fence, Lock /
Unlock, Post / Start / Complete / Wait).

What the data does and what the time is are kept apart. All ranks live in
one process, so an operation reads and writes the target's window memory
when it is called (a correct MPI program cannot tell: it reads a window
only after the synchronization that ends the epoch). Its time is that of
the messages the machine sends for it, through the simulated message layer:

* put: the data, origin to target; an ack back once it is in (what a
  flush, an unlock or a fence waits for);
* get: a request to the target, the data back;
* accumulate: the data, and an ack; get-accumulate, fetch-and-op,
  compare-and-swap: the data, and the old value back.

On a machine with a DMA engine (BG/P) a put and a get are the engine's
direct put and remote get: no core of the target works on them (send mode
"remote" and "served" of the message layer), only the origin's core posts
a descriptor. The accumulate family needs the target's core, which combines
the data: those are ordinary messages for it. Without an engine (BG/L)
every one-sided operation is an active message the target's core handles,
as the message layer handles any message.

Locks are kept per target in the window's shared state; a lock request
that must wait gets its grant when the holder unlocks. A fence is the
completion of this rank's operations, then a barrier of the window's group.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Dict, List, Optional, Tuple

import numpy as _np

from .. import runtime as _rt
from ..errors import ArgumentTypeError as _TypeError
from ..errors import UsageError as _ValueError
from .buffers import _bytes_view, _datatype_view, _msg, _address
from .constants import KEYVAL_INVALID, PROC_NULL
from .errors import (ERR_ARG, ERR_COMM, ERR_DISP, ERR_KEYVAL, ERR_LOCKTYPE, ERR_RANK, ERR_RMA_SYNC, ERR_WIN, Errhandler,
                     ErrhandlerMethods, Exception, _guard)
from .handles import Handle

LOCK_EXCLUSIVE, LOCK_SHARED = 234, 235
MODE_NOCHECK, MODE_NOSTORE, MODE_NOPUT, MODE_NOPRECEDE, MODE_NOSUCCEED = 1024, 2048, 4096, 8192, 16384
WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL = 1101, 1102, 1103, 1104, 1105
WIN_FLAVOR_CREATE, WIN_FLAVOR_ALLOCATE, WIN_FLAVOR_DYNAMIC, WIN_FLAVOR_SHARED = 1, 2, 3, 4
WIN_SEPARATE, WIN_UNIFIED = 1, 2

# Send modes of the message layer (see `_core.World.isend`).
_STANDARD, _SYNCHRONOUS, _REMOTE, _SERVED = 0, 1, 5, 6
#: Bytes of a request, ack, lock or synchronization message.
_CONTROL = 16
_TAGS = 1 << 30


class _Target:
    """A rank's part of a window: its memory and how it is addressed, and
    its lock."""

    __slots__ = ("mv", "obj", "unit", "size", "holders", "exclusive", "waiting")

    def __init__(self) -> None:
        self.mv: memoryview = memoryview(bytearray())
        self.obj: Any = None
        self.unit = 1
        self.size = 0
        self.holders = 0  # origins holding the lock
        self.exclusive = False
        self.waiting: deque = deque()  # (lock type, origin world rank, tag)


class _Shared:
    """A window as every member sees it."""

    def __init__(self, n: int, ctx_ops: int, ctx_sync: int, flavor: int) -> None:
        self.targets = [_Target() for _ in range(n)]
        self.ctx_ops = ctx_ops  # requests on ctx_ops, replies on ctx_ops + 1
        self.ctx_sync = ctx_sync  # lock requests and PSCW on ctx_sync, grants on ctx_sync + 1
        self.flavor = flavor
        self.freed = 0


class Win(ErrhandlerMethods, Handle):
    """An RMA window (``mpi4py.MPI.Win``)."""

    def __init__(self, win: Any = None):
        if win is None:
            self._sh: Optional[_Shared] = None
            self._name = "MPI_WIN_NULL"
            return
        if not isinstance(win, Win):
            raise _TypeError(f"Win(): expecting a window, got {type(win).__name__}")
        self.__dict__.update(win.__dict__)

    # -- making and freeing --

    @classmethod
    def _make(cls, what: str, memory: Any, disp_unit: int, info: Any, comm: Any, flavor: int,
              size: Optional[int] = None) -> "Win":
        """Window constructor `what` (collective over `comm`, COMM_SELF when
        None); `size`: bytes to allocate for it."""
        from .comm import Comm  # noqa: PLC0415 (comm imports this module's users)
        from .world import COMM_SELF  # noqa: PLC0415
        comm = COMM_SELF if comm is None else comm
        if size is not None and int(size) < 0:
            raise Exception(ERR_ARG, f"Win.{what}: size {size} is negative")
        if not isinstance(comm, Comm) or not comm:
            raise Exception(ERR_COMM, "window on MPI_COMM_NULL")
        ctx, me = comm._me()
        if int(disp_unit) <= 0:
            raise Exception(ERR_ARG, f"Win: displacement unit {disp_unit} must be positive")
        # The window's own communicator (as MPI keeps one): its contexts
        # carry the window's traffic apart from the program's.
        wcomm = comm.Dup()
        # The members name the window by their communicator's context and
        # how many windows they made on it (a one-member communicator's
        # context, COMM_SELF's, is every rank's: the rank tells them apart).
        owner = ctx.rank if comm.Get_size() == 1 else -1
        st = ctx.state.setdefault("windows", {})
        n = st[comm._context] = st.get(comm._context, 0) + 1
        key = ("win", comm._context, owner, n)
        table = ctx.runtime.__dict__.setdefault("rma_windows", {})
        sh = table.get(key)
        if sh is None:
            ops = ctx.runtime.new_context(key + ("ops",))
            sync = ctx.runtime.new_context(key + ("sync",))
            sh = table[key] = _Shared(comm.Get_size(), ops, sync, flavor)
        t = sh.targets[me]
        if size is not None:
            from .membuf import buffer  # noqa: PLC0415
            memory = buffer.allocate(int(size), clear=True)
        if memory is None or memory is _BOTTOM():
            t.mv, t.obj = memoryview(bytearray()), memory
        else:
            mv, _ = _bytes_view(memory, False)
            t.mv, t.obj = mv, memory
        t.unit, t.size = int(disp_unit), len(t.mv)
        w = cls.__new__(cls)
        w._sh, w._comm, w._me, w._key, w._name = sh, wcomm, me, key, ""
        w._info = info
        w._pending: Dict[int, List[int]] = {}
        w._seq = 0
        w._locks: Dict[int, int] = {}
        w._access: Optional[List[int]] = None  # PSCW: targets of Start
        w._exposure: Optional[List[int]] = None  # PSCW: origins of Post
        w._waits: List[int] = []  # PSCW: receives of the origins' Complete
        w._attrs: Dict[int, Any] = {}
        w._errhandler = None
        wcomm.Barrier()
        return w

    @classmethod
    def Create(cls, memory: Any, disp_unit: int = 1, info: Any = None, comm: Any = None) -> "Win":
        return cls._make("Create", memory, disp_unit, info, comm, WIN_FLAVOR_CREATE)

    @classmethod
    def Allocate(cls, size: int, disp_unit: int = 1, info: Any = None, comm: Any = None) -> "Win":
        return cls._make("Allocate", None, disp_unit, info, comm, WIN_FLAVOR_ALLOCATE, size)

    @classmethod
    def Allocate_shared(cls, size: int, disp_unit: int = 1, info: Any = None, comm: Any = None) -> "Win":
        return cls._make("Allocate_shared", None, disp_unit, info, comm, WIN_FLAVOR_SHARED, size)

    @classmethod
    def Create_dynamic(cls, info: Any = None, comm: Any = None) -> "Win":
        return cls._make("Create_dynamic", None, 1, info, comm, WIN_FLAVOR_DYNAMIC)

    def _live(self, what: str) -> _Shared:
        if self._sh is None:
            raise Exception(ERR_WIN, f"{what}: MPI_WIN_NULL")
        return self._sh

    def Free(self) -> None:
        sh = self._live("Free")
        self._complete_all()
        for keyval in list(self._attrs):
            self.Delete_attr(keyval)
        self._comm.Barrier()
        self._comm.Free()
        sh.freed += 1
        if sh.freed == len(sh.targets):
            _rt.current().runtime.__dict__.get("rma_windows", {}).pop(self._key, None)
        self._sh = None
        self._name = "MPI_WIN_NULL"

    def Attach(self, memory: Any) -> None:
        self._live("Attach")

    def Detach(self, memory: Any) -> None:
        self._live("Detach")

    # -- what a window is --

    def __bool__(self) -> bool:
        return self._sh is not None

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Win):
            return NotImplemented
        if self._sh is None or other._sh is None:
            return self._sh is other._sh
        return self._sh is other._sh and self._me == other._me

    def __ne__(self, other: Any) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        return id(self._sh)

    def __reduce__(self) -> Any:
        if self._sh is None:
            return (_null, ())
        raise _ValueError("cannot serialize a window other than MPI.WIN_NULL")

    def Get_group(self) -> Any:
        self._live("Get_group")
        return self._comm.Get_group()

    @property
    def group(self) -> Any:
        return self.Get_group()

    @property
    def group_size(self) -> int:
        return self._comm.Get_size()

    @property
    def group_rank(self) -> int:
        return self._comm.Get_rank()

    def Get_name(self) -> str:
        return self._name

    def Set_name(self, name: str) -> None:
        self._live("Set_name")
        self._name = str(name)

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def Get_info(self) -> Any:
        from .info import Info  # noqa: PLC0415
        self._live("Get_info")
        return Info.Create()

    def Set_info(self, info: Any) -> None:
        self._live("Set_info")

    @property
    def info(self) -> Any:
        return self.Get_info()

    @info.setter
    def info(self, info: Any) -> None:
        self.Set_info(info)

    # -- error handlers (ErrhandlerMethods; on WIN_NULL they raise ERR_WIN) --

    _ERRH_TABLE = "windows"

    def _own_errhandler(self) -> Optional[Errhandler]:
        return self._errhandler

    def _keep_errhandler(self, errhandler: Errhandler) -> None:
        self._errhandler = errhandler

    def Get_attr(self, keyval: int) -> Any:
        sh = self._live("Get_attr")
        t = sh.targets[self._me]
        if keyval == KEYVAL_INVALID:
            raise Exception(ERR_KEYVAL, "Get_attr: MPI_KEYVAL_INVALID")
        if keyval == WIN_BASE:
            return _address(t.mv) if sh.flavor != WIN_FLAVOR_DYNAMIC else 0
        if keyval == WIN_SIZE:
            return t.size
        if keyval == WIN_DISP_UNIT:
            return t.unit
        if keyval == WIN_CREATE_FLAVOR:
            return sh.flavor
        if keyval == WIN_MODEL:
            return WIN_UNIFIED
        held = self._attrs.get(keyval)
        return None if held is None else held[1]

    def Set_attr(self, keyval: int, attrval: Any) -> None:
        """Sets a user key's value (keys are the process's, shared with
        communicators: ``Win.Create_keyval``); a value it replaces goes
        through the key's delete function."""
        self._live("Set_attr")
        if keyval in (WIN_BASE, WIN_SIZE, WIN_DISP_UNIT, WIN_CREATE_FLAVOR, WIN_MODEL, KEYVAL_INVALID):
            raise Exception(ERR_KEYVAL, f"Set_attr: {keyval} is a predefined key")
        key = _rt.current().state.get("keyvals", {}).get(keyval)
        if key is None:
            raise Exception(ERR_KEYVAL, f"Set_attr: {keyval} is not a key of this process")
        if keyval in self._attrs:
            self.Delete_attr(keyval)
        self._attrs[keyval] = (key, attrval)

    def Delete_attr(self, keyval: int) -> None:
        """Deletes a value, calling its key's delete function (one that
        raises is printed and becomes MPI_ERR_OTHER)."""
        from .comm import _callback  # noqa: PLC0415
        self._live("Delete_attr")
        held = self._attrs.pop(keyval, None)
        if held is None:
            raise Exception(ERR_KEYVAL, f"Delete_attr: no attribute {keyval} on this window")
        key, value = held
        if callable(key.delete_fn):
            _callback("delete", key.delete_fn, self, keyval, value)

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:
        from .comm import Comm  # noqa: PLC0415
        return Comm.Create_keyval(copy_fn, delete_fn, nopython)

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:
        from .comm import Comm  # noqa: PLC0415
        return Comm.Free_keyval(keyval)

    @property
    def attrs(self) -> Tuple[int, int, int]:
        return (self.Get_attr(WIN_BASE), self.Get_attr(WIN_SIZE), self.Get_attr(WIN_DISP_UNIT))

    @property
    def flavor(self) -> int:
        return self.Get_attr(WIN_CREATE_FLAVOR)

    @property
    def model(self) -> int:
        return self.Get_attr(WIN_MODEL)

    def tomemory(self) -> Any:
        """This rank's window memory as an ``MPI.buffer``."""
        from .membuf import buffer  # noqa: PLC0415
        sh = self._live("tomemory")
        t = sh.targets[self._me]
        if isinstance(t.obj, buffer):
            return t.obj
        return buffer.frombuffer(t.mv) if len(t.mv) else buffer.allocate(0)

    def Shared_query(self, rank: int) -> Tuple[Any, int]:
        """The memory of member `rank` (MPI.PROC_NULL: the first with any)
        and its displacement unit: every rank's memory is in this process."""
        from .membuf import buffer  # noqa: PLC0415
        sh = self._live("Shared_query")
        if rank == PROC_NULL:
            rank = next((i for i, t in enumerate(sh.targets) if t.size), 0)
        t = self._target(rank)
        mem = t.obj if isinstance(t.obj, buffer) else (buffer.frombuffer(t.mv) if len(t.mv) else buffer.allocate(0))
        return mem, t.unit

    # -- the operations --

    def _target(self, rank: int) -> _Target:
        sh = self._sh
        if not isinstance(rank, (int, _np.integer)) or not 0 <= rank < len(sh.targets):
            raise Exception(ERR_RANK, f"target rank {rank} (the window has {len(sh.targets)} members)")
        return sh.targets[int(rank)]

    def _view(self, rank: int, target: Any, origin_dt: Any, origin_count: int, what: str) -> Any:
        """The target's memory a target spec (None, disp, (disp,), (disp,
        count), (disp, count, datatype)) names, as a byte view."""
        t = self._target(rank)
        disp, count, dt = 0, None, None
        if target is None:
            pass
        elif isinstance(target, (int, _np.integer)):
            disp = int(target)
        elif isinstance(target, (list, tuple)) and 1 <= len(target) <= 3:
            disp = int(target[0])
            if len(target) > 1:
                count = int(target[1])
            if len(target) > 2:
                dt = target[2]
        else:
            raise _ValueError(f"{what}: target must be a displacement or (displacement, count, datatype), got {target!r}")
        if disp < 0:
            raise Exception(ERR_DISP, f"{what}: negative target displacement {disp}")
        if dt is None:
            dt = origin_dt
            if count is None:
                count = origin_count
        elif count is None:
            count = 1
        if isinstance(dt, str):
            from .datatypes import Datatype  # noqa: PLC0415
            dt = Datatype.fromcode(dt)
        try:
            return _datatype_view(t.mv, dt, disp * t.unit, count, True, False), dt, count
        except ValueError as e:
            raise Exception(ERR_ARG, f"{what} on rank {rank}: {e}") from None

    def _ctx_world(self) -> Tuple[Any, Any]:
        """The calling rank's context and the core's World."""
        ctx, _ = self._comm._me()
        return ctx, ctx.runtime.world

    def _ops_traffic(self, rank: int, out: int, back: int, mode_out: int, mode_back: int) -> int:
        """Posts the messages of one operation on target `rank`: `out`
        bytes there, then `back` bytes (or an ack) from there once they are
        in. Returns the request this rank waits for to complete it."""
        sh = self._sh
        ctx, w = self._ctx_world()
        me, them = ctx.rank, self._comm._group._ranks[rank]
        self._seq = tag = (self._seq + 1) % _TAGS
        arrived = w.irecv(them, me, sh.ctx_ops, tag, out, False)
        w.unwatch(w.isend(me, them, sh.ctx_ops, tag, out, mode_out))
        back_req = w.irecv(me, them, sh.ctx_ops + 1, tag, back, False)
        w.isend_after(arrived, them, me, sh.ctx_ops + 1, tag, back, mode_back)
        w.unwatch(arrived)
        self._pending.setdefault(rank, []).append(back_req)
        return back_req

    def _check_epoch(self, rank: int, what: str) -> None:
        if self._sh is None:
            raise Exception(ERR_WIN, f"{what}: MPI_WIN_NULL")
        if self._access is not None and rank not in self._access and rank not in self._locks:
            raise Exception(ERR_RMA_SYNC, f"{what}: rank {rank} is not in the access epoch's group")

    def Put(self, origin: Any, target_rank: int, target: Any = None) -> None:
        self._check_epoch(target_rank, "Put")
        if target_rank == PROC_NULL:
            return
        o = _msg(origin, recv=False)
        view, dt, count = self._view(target_rank, target, o.dt, o.count, "Put")
        data = bytes(o.mv[:])
        if len(data) != dt.size * count:
            raise Exception(ERR_ARG, f"Put: {len(data)} bytes into {count} x {dt.name} ({dt.size * count} bytes)")
        if data:
            view[:len(data)] = data
        self._ops_traffic(target_rank, len(data), 0, _REMOTE, _SERVED)

    def Get(self, origin: Any, target_rank: int, target: Any = None) -> None:
        self._check_epoch(target_rank, "Get")
        if target_rank == PROC_NULL:
            return
        o = _msg(origin, recv=True)
        view, dt, count = self._view(target_rank, target, o.dt, o.count, "Get")
        n = dt.size * count
        if n != len(o.mv):
            raise Exception(ERR_ARG, f"Get: {count} x {dt.name} ({n} bytes) into {len(o.mv)} bytes")
        if n:
            o.mv[:n] = bytes(view[:n])
        self._ops_traffic(target_rank, _CONTROL, n, _REMOTE, _SERVED)

    def _combine(self, origin: Any, rank: int, target: Any, op: Any, result: Any, what: str, fetch: bool) -> None:
        from .ops import NO_OP, Op, REPLACE, SUM  # noqa: PLC0415
        op = SUM if op is None else op
        if not isinstance(op, Op):
            raise _TypeError(f"{what}: op must be an MPI.Op, got {type(op).__name__}")
        if origin is None and op is NO_OP:
            o = _msg(result, recv=True)
            data = None
        else:
            o = _msg(origin, recv=False)
            data = bytes(o.mv[:])
        view, dt, count = self._view(rank, target, o.dt, o.count, what)
        n = dt.size * count
        base = _np.dtype(dt.np)
        old = bytes(view[:n])
        if fetch:
            r = _msg(result, recv=True)
            if len(r.mv) < n:
                raise Exception(ERR_ARG, f"{what}: a result buffer of {len(r.mv)} bytes for {n}")
            r.mv[:n] = old
        if data is not None and op is not NO_OP:
            if len(data) != n:
                raise Exception(ERR_ARG, f"{what}: {len(data)} bytes onto {count} x {dt.name} ({n} bytes)")
            if op is REPLACE:
                view[:n] = data
            elif n:
                a = _np.frombuffer(old, dtype=base).copy()
                b = _np.frombuffer(data, dtype=base)
                # (Overflow wraps and NaN spreads, as in C, without warnings.)
                with _np.errstate(all="ignore"):
                    view[:n] = _np.asarray(op._arrays(a, b, dt), dtype=base).tobytes()
        sent = 0 if data is None else n
        self._ops_traffic(rank, max(sent, _CONTROL), n if fetch else 0, _STANDARD, _STANDARD)

    def Accumulate(self, origin: Any, target_rank: int, target: Any = None, op: Any = None) -> None:
        self._check_epoch(target_rank, "Accumulate")
        if target_rank != PROC_NULL:
            self._combine(origin, target_rank, target, op, None, "Accumulate", False)

    def Get_accumulate(self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Any = None) -> None:
        self._check_epoch(target_rank, "Get_accumulate")
        if target_rank != PROC_NULL:
            self._combine(origin, target_rank, target, op, result, "Get_accumulate", True)

    def Fetch_and_op(self, origin: Any, result: Any, target_rank: int, target_disp: int = 0, op: Any = None) -> None:
        self._check_epoch(target_rank, "Fetch_and_op")
        o, r = _one(origin, False, "Fetch_and_op", "origin"), _one(result, True, "Fetch_and_op", "result")
        _same(o, r, "Fetch_and_op", "result")
        if target_rank != PROC_NULL:
            self._combine(origin, target_rank, (target_disp, 1, r.dt), op, result, "Fetch_and_op", True)

    def Compare_and_swap(self, origin: Any, compare: Any, result: Any, target_rank: int, target_disp: int = 0) -> None:
        self._check_epoch(target_rank, "Compare_and_swap")
        o = _one(origin, False, "Compare_and_swap", "origin")
        c = _one(compare, False, "Compare_and_swap", "compare")
        r = _one(result, True, "Compare_and_swap", "result")
        _same(o, c, "Compare_and_swap", "compare")
        _same(o, r, "Compare_and_swap", "result")
        if target_rank == PROC_NULL:
            return
        view, dt, _ = self._view(target_rank, (target_disp, 1, o.dt), o.dt, 1, "Compare_and_swap")
        n = dt.size
        old = bytes(view[:n])
        r.mv[:n] = old
        if old == bytes(c.mv[:n]):
            view[:n] = bytes(o.mv[:n])
        self._ops_traffic(target_rank, 2 * n, n, _STANDARD, _STANDARD)

    # Request-based operations complete before they return (their request
    # is a completed one): the same data and time, without the overlap.
    def _done(self, rank: int) -> Any:
        from .requests import Request  # noqa: PLC0415
        self._complete(rank)
        return Request(-1, "rma")

    def Rput(self, origin: Any, target_rank: int, target: Any = None) -> Any:
        self.Put(origin, target_rank, target)
        return self._done(target_rank)

    def Rget(self, origin: Any, target_rank: int, target: Any = None) -> Any:
        self.Get(origin, target_rank, target)
        return self._done(target_rank)

    def Raccumulate(self, origin: Any, target_rank: int, target: Any = None, op: Any = None) -> Any:
        self.Accumulate(origin, target_rank, target, op)
        return self._done(target_rank)

    def Rget_accumulate(self, origin: Any, result: Any, target_rank: int, target: Any = None, op: Any = None) -> Any:
        self.Get_accumulate(origin, result, target_rank, target, op)
        return self._done(target_rank)

    # -- completion --

    def _wait(self, reqs: List[int], what: str) -> None:
        if not reqs:
            return
        ctx, _ = self._comm._me()
        ctx.call = f"MPI_Win_{what}"
        ctx.runtime.wait(ctx, reqs, len(reqs), "wait")
        for r in reqs:
            ctx.runtime.world.release(r)

    def _complete(self, rank: int) -> None:
        self._wait(self._pending.pop(rank, []), "flush")

    def _complete_all(self) -> None:
        reqs = [r for rs in self._pending.values() for r in rs]
        self._pending.clear()
        self._wait(reqs, "flush")

    def Fence(self, assertion: int = 0) -> None:
        self._live("Fence")
        self._complete_all()
        if not (assertion & MODE_NOPRECEDE and assertion & MODE_NOSUCCEED):
            self._comm.Barrier()

    def Flush(self, rank: int) -> None:
        self._live("Flush")
        self._complete(rank)

    def Flush_all(self) -> None:
        self._live("Flush_all")
        self._complete_all()

    def Flush_local(self, rank: int) -> None:
        self.Flush(rank)

    def Flush_local_all(self) -> None:
        self.Flush_all()

    def Sync(self) -> None:
        self._live("Sync")

    # -- passive target: locks --

    def Lock(self, rank: int, lock_type: int = LOCK_EXCLUSIVE, assertion: int = 0) -> None:
        sh = self._live("Lock")
        if lock_type not in (LOCK_EXCLUSIVE, LOCK_SHARED):
            raise Exception(ERR_LOCKTYPE, f"Lock: lock type {lock_type} (MPI.LOCK_EXCLUSIVE or MPI.LOCK_SHARED)")
        if rank == PROC_NULL:
            return
        t = self._target(rank)
        if rank in self._locks:
            raise Exception(ERR_RMA_SYNC, f"Lock: rank {rank} is already locked by this rank")
        ctx, w = self._ctx_world()
        me, them = ctx.rank, self._comm._group._ranks[rank]
        self._seq = tag = (self._seq + 1) % _TAGS
        self._locks[rank] = lock_type
        # The request goes to the target's core, which grants the lock now
        # or when it is free.
        asked = w.irecv(them, me, sh.ctx_sync, tag, _CONTROL, False)
        w.unwatch(w.isend(me, them, sh.ctx_sync, tag, _CONTROL, _STANDARD))
        grant = w.irecv(me, them, sh.ctx_sync + 1, tag, _CONTROL, False)
        if _grantable(t, lock_type) and not t.waiting:
            _take(t, lock_type)
            w.isend_after(asked, them, me, sh.ctx_sync + 1, tag, _CONTROL, _STANDARD)
        else:
            # Granted when the holder's release reaches the target.
            t.waiting.append((lock_type, me, tag))
        w.unwatch(asked)
        self._wait([grant], "lock")

    def Unlock(self, rank: int) -> None:
        sh = self._live("Unlock")
        if rank == PROC_NULL:
            return
        t = self._target(rank)
        lock_type = self._locks.pop(rank, None)
        if lock_type is None:
            raise Exception(ERR_RMA_SYNC, f"Unlock: rank {rank} is not locked by this rank")
        self._complete(rank)
        ctx, w = self._ctx_world()
        me, them = ctx.rank, self._comm._group._ranks[rank]
        # The release: one message to the target, whose core then grants
        # the lock to whoever waits.
        self._seq = tag = (self._seq + 1) % _TAGS
        released = w.irecv(them, me, sh.ctx_sync, tag, _CONTROL, False)
        w.unwatch(w.isend(me, them, sh.ctx_sync, tag, _CONTROL, _STANDARD))
        t.holders -= 1
        t.exclusive = False if t.holders == 0 else t.exclusive
        while t.waiting and _grantable(t, t.waiting[0][0]):
            kind, origin, wtag = t.waiting.popleft()
            _take(t, kind)
            w.isend_after(released, them, origin, sh.ctx_sync + 1, wtag, _CONTROL, _STANDARD)
        w.unwatch(released)

    def Lock_all(self, assertion: int = 0) -> None:
        for r in range(len(self._live("Lock_all").targets)):
            self.Lock(r, LOCK_SHARED, assertion)

    def Unlock_all(self) -> None:
        for r in list(self._locks):
            self.Unlock(r)

    # -- active target: post, start, complete, wait --

    def _ranks_of(self, group: Any) -> List[int]:
        me = self._comm._group
        out = []
        for wr in group._ranks:
            r = me._index.get(wr)
            if r is None:
                raise Exception(ERR_RANK, f"a process of the group is not a member of the window ({wr})")
            out.append(r)
        return out

    def Post(self, group: Any, assertion: int = 0) -> None:
        sh = self._live("Post")
        if self._exposure is not None:
            raise Exception(ERR_RMA_SYNC, "Post: an exposure epoch is already open")
        self._exposure = self._ranks_of(group)
        ctx, w = self._ctx_world()
        ranks = self._comm._group._ranks
        # The origins' Complete messages are expected from now on.
        self._waits = [w.irecv(ctx.rank, ranks[r], sh.ctx_sync + 1, 0, _CONTROL, False) for r in self._exposure]
        for r in self._exposure:
            w.unwatch(w.isend(ctx.rank, ranks[r], sh.ctx_sync, 0, _CONTROL, _STANDARD))

    def Start(self, group: Any, assertion: int = 0) -> None:
        sh = self._live("Start")
        if self._access is not None:
            raise Exception(ERR_RMA_SYNC, "Start: an access epoch is already open")
        self._access = self._ranks_of(group)
        ctx, w = self._ctx_world()
        self._wait([w.irecv(ctx.rank, self._comm._group._ranks[r], sh.ctx_sync, 0, _CONTROL, False)
                    for r in self._access], "start")

    def Complete(self) -> None:
        sh = self._live("Complete")
        if self._access is None:
            raise Exception(ERR_RMA_SYNC, "Complete: no access epoch (Start) is open")
        for r in self._access:
            self._complete(r)
        ctx, w = self._ctx_world()
        # Synchronous: done when each target has taken it (its Post posted
        # the receive), so a Test there after this returns sees it.
        done = [w.isend(ctx.rank, self._comm._group._ranks[r], sh.ctx_sync + 1, 0, _CONTROL, _SYNCHRONOUS)
                for r in self._access]
        self._access = None
        self._wait(done, "complete")

    def Wait(self) -> None:
        self._live("Wait")
        if self._exposure is None:
            raise Exception(ERR_RMA_SYNC, "Wait: no exposure epoch (Post) is open")
        self._wait(self._waits, "wait")
        self._waits = None
        self._exposure = None

    def Test(self) -> bool:
        self._live("Test")
        if self._exposure is None:
            raise Exception(ERR_RMA_SYNC, "Test: no exposure epoch (Post) is open")
        reqs = self._waits
        ctx, w = self._ctx_world()
        if all(w.done(r) for r in reqs):
            self._wait(reqs, "test")
            self._waits = None
            self._exposure = None
            return True
        ctx.runtime.poll(ctx, "MPI_Win_test")
        return False

    def __repr__(self) -> str:
        return "<mpi4py.MPI.Win MPI_WIN_NULL>" if self._sh is None else f"<mpi4py.MPI.Win of rank {self._me}>"


def _one(spec: Any, recv: bool, what: str, name: str) -> Any:
    """A buffer of exactly one element, as a fetch-and-op or a
    compare-and-swap takes."""
    m = _msg(spec, recv=recv)
    if m.count != 1:
        raise _ValueError(f"{what}: the {name} buffer must hold one element, it holds {m.count} x {m.dt.name}")
    return m


def _same(a: Any, b: Any, what: str, name: str) -> None:
    if a.dt.size != b.dt.size or _np.dtype(a.dt.np) != _np.dtype(b.dt.np):
        raise _ValueError(f"{what}: the {name} buffer's datatype {b.dt.name} is not the origin's {a.dt.name}")


def _grantable(t: _Target, kind: int) -> bool:
    return t.holders == 0 or (kind == LOCK_SHARED and not t.exclusive)


def _take(t: _Target, kind: int) -> None:
    t.holders += 1
    t.exclusive = kind == LOCK_EXCLUSIVE


def _BOTTOM() -> Any:
    from .constants import BOTTOM  # noqa: PLC0415
    return BOTTOM


def _null() -> "Win":
    return WIN_NULL


WIN_NULL = Win()


_guard(Win, ("Get_errhandler", "Set_errhandler", "Call_errhandler"), lambda w: w._sh is None, ERR_WIN, "MPI_WIN_NULL")
