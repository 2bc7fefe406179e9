"""Requests: non-blocking operations, waits and tests."""

from __future__ import annotations

import sys as _sys
import traceback as _traceback
from typing import Any, List, Optional, Sequence, Tuple

from greenlet import getcurrent as _getcurrent

from .. import runtime as _rt
from .buffers import _Packed, _pack
from .constants import ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED
from .errors import ERR_OTHER, ERR_REQUEST, ERR_TRUNCATE, SUCCESS, Exception
from ..errors import ArgumentTypeError, UsageError
from .groups import Group
from .handles import Handle
from .status import Status


def _ctx() -> "_rt.RankContext":
    return _rt.current()


class Request(Handle):
    """A non-blocking operation (``mpi4py.MPI.Request``). ``Request(req)``
    is a new handle of `req`, equal to it (complete the operation through
    one of them)."""

    # Defaults as class attributes: a request sets only what it needs (this
    # object is made for every message, so it is kept cheap).
    _group: Optional["Group"] = None  # translates world ranks in the status
    _into: Optional[memoryview] = None  # receive buffer (buffer API)
    _finish: Any = None  # called with the status and data once; may return an object
    _status: Optional[tuple] = None
    _obj: Any = None
    _error: Optional[BaseException] = None
    _desc = ""
    _also: tuple = ()  # requests this one completes with (Isendrecv's send)
    _persistent = False
    _alias: Any = None  # the request this is a new handle of
    _coll = False  # a nonblocking collective's (`nbc.CollRequest`): no core request
    _grequest = False  # a generalized request (`Grequest`): no core request

    def __init__(self, rid: Any = -1, kind: str = "null", finish: Any = None, ctx: Any = None, desc: str = "",
                 group: Optional["Group"] = None):
        if isinstance(rid, Request):
            if isinstance(self, Grequest) and not isinstance(rid, Grequest):
                raise ArgumentTypeError(f"Grequest(): expecting a generalized request, got {type(rid).__name__}")
            self.__dict__.update(rid.__dict__)
            self._alias = rid._key()
            return
        self._id = rid
        self._kind = kind
        self._ctx = ctx
        self._done = rid < 0
        if rid < 0:
            # The null request's status is empty; one to PROC_NULL comes from PROC_NULL.
            self._status = (ANY_SOURCE if kind == "null" else PROC_NULL, ANY_TAG, 0, False, False)
        if finish is not None:
            self._finish = finish
        if group is not None:
            self._group = group

    def __bool__(self) -> bool:
        # A request stays one (true) until a Wait or Test that reports it
        # complete, or Free, makes it the null request - also one to
        # PROC_NULL, or one whose operation already finished.
        return self._kind not in ("null", "null-done")

    def _key(self) -> "Request":
        return self._alias if self._alias is not None else self

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, Request):
            return self._key() is other._key() or (not self and not other)
        return NotImplemented

    @property
    def handle(self) -> int:
        return self.toint()

    @classmethod
    def fromhandle(cls, handle: int) -> "Request":
        return cls.fromint(handle)

    __hash__ = object.__hash__

    def __reduce__(self) -> Any:
        # As mpi4py: REQUEST_NULL pickles as itself, a null request as a new
        # one, a request of an operation not at all (it is this run's).
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        if not self and type(self) is Request:
            return (Request, ())
        raise UsageError(f"cannot pickle {type(self).__name__} of an operation (it is this run's)")

    def _complete(self) -> None:
        """Collects a finished core request (data, status) exactly once."""
        if self._done:
            return
        self._finished(self._ctx.runtime.world.finish(self._id))

    def _finished(self, res: tuple) -> None:
        """Takes the status and data the core returned for this request
        (a status alone: no data)."""
        src, tag, count, cancelled, truncated = res[:5]
        data = res[5] if len(res) > 5 else None
        if self._group is not None and src >= 0:
            # World rank -> rank in the receiving communicator.
            src = self._group._index.get(src, src)
        st = self._status = (src, tag, count, cancelled, truncated)
        self._done = True
        into = self._into
        if into is not None:
            if data and not truncated:
                # (into a packed view: MPI's unpack, which costs the
                # waiting rank's core the copy, `buffers._pack`)
                into[: len(data)] = data
                return
            if into.__class__ is _Packed and data is None and not cancelled and not truncated:
                _pack(count)  # size-only buffers: the unpack, without data
        if self._finish is not None and not st[3] and not st[4]:  # not cancelled, not truncated
            try:
                self._obj = self._finish(st, data)
            except BaseException as e:  # raised again from Wait/Test
                self._error = e

    def _poll(self) -> bool:
        if self._also and not all(a._poll() for a in self._also):
            return False
        if self._done:
            return True
        if self._ctx.runtime.world.done(self._id):
            self._complete()
            return True
        return False

    def _fill(self, status: Optional[Status]) -> None:
        if status is not None and self._status is not None:
            s, t, c, canc, trunc = self._status
            status._set(s, t, c, canc, ERR_TRUNCATE if trunc else SUCCESS)

    def _raise(self) -> None:
        if self._error is not None:
            e, self._error = self._error, None
            raise e
        if self._status is not None and self._status[4]:
            raise Exception(ERR_TRUNCATE, f"a message of more bytes than the receive buffer holds from rank {self._status[0]}")

    def Wait(self, status: Optional[Status] = None) -> bool:
        _wait_all([self], "MPI.Request.Wait()")
        self._fill(status)
        self._retire()
        self._raise()
        return True

    def _retire(self) -> None:
        """A completed request reported by Wait / Test becomes null (a
        persistent one stays until freed)."""
        if not self._persistent and self._kind != "null":
            self._kind = "null-done"

    def Test(self, status: Optional[Status] = None) -> bool:
        if self._poll():
            self._fill(status)
            self._retire()
            self._raise()
            return True
        _poll_cost(self, "MPI.Request.Test()")
        return False

    def wait(self, status: Optional[Status] = None) -> Any:
        self.Wait(status)
        return self._obj

    def test(self, status: Optional[Status] = None) -> Tuple[bool, Any]:
        flag = self.Test(status)
        return flag, (self._obj if flag else None)

    def Get_status(self, status: Optional[Status] = None) -> bool:
        flag = self._poll()
        if flag:
            self._fill(status)
        else:
            _poll_cost(self, "MPI.Request.Get_status()")
        return flag

    def get_status(self, status: Optional[Status] = None) -> bool:
        return self.Get_status(status)

    @staticmethod
    def Get_status_all(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        """Whether every request is done, without freeing them (a poll if not)."""
        if all(r._poll() for r in requests):
            for i, r in enumerate(requests):
                r._fill(statuses[i] if statuses is not None and i < len(statuses) else None)
            return True
        _poll_cost(next((r for r in requests if r._ctx is not None), None), "MPI.Request.Get_status_all()")
        return False

    @staticmethod
    def get_status_all(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        return Request.Get_status_all(requests, statuses)

    @staticmethod
    def get_status_any(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool]:
        return Request.Get_status_any(requests, status)

    @staticmethod
    def get_status_some(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        return Request.Get_status_some(requests, statuses)

    @staticmethod
    def Get_status_any(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool]:
        """The first done request (its index), without freeing it."""
        return _first_done(requests, status, "MPI.Request.Get_status_any()")

    @staticmethod
    def Get_status_some(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        """The done requests (their indices), without freeing them."""
        idx = _done(requests, "MPI.Request.Get_status_some()")
        for k, i in enumerate(idx or ()):
            requests[i]._fill(statuses[k] if statuses is not None and k < len(statuses) else None)
        return idx

    def Cancel(self) -> None:
        if self._kind == "null":
            raise Exception(ERR_REQUEST, "Cancel: MPI_REQUEST_NULL")
        if not self._done and self._ctx is not None:
            self._ctx.runtime.world.cancel(self._id)

    def Free(self) -> None:
        if self._kind == "null":
            raise Exception(ERR_REQUEST, "Free: MPI_REQUEST_NULL")
        self._done = True
        self._retire()

    def cancel(self) -> None:
        self.Cancel()

    def free(self) -> None:
        self.Free()

    # -- multiple completions (mpi4py's static methods) --

    @staticmethod
    def Waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        requests = list(requests)
        _wait_all(requests, "MPI.Request.Waitall()")
        if statuses is not None:
            for i, r in enumerate(requests):
                if isinstance(statuses, list):
                    while len(statuses) <= i:
                        statuses.append(Status())
                if i < len(statuses):
                    r._fill(statuses[i])
        for r in requests:
            r._retire()
        for r in requests:
            if r._error is not None or (r._status is not None and r._status[4]):
                r._raise()
        return True

    @staticmethod
    def waitall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> List[Any]:
        Request.Waitall(requests, statuses)
        return [r._obj for r in requests]

    @staticmethod
    def Waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> int:
        i = _wait_some(list(requests), "Request.Waitany", any_one=True)
        if i and i[0] != UNDEFINED:
            requests[i[0]]._fill(status)
            requests[i[0]]._raise()
            requests[i[0]]._kind = "null-done"
            return i[0]
        return UNDEFINED

    @staticmethod
    def waitany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, Any]:
        i = Request.Waitany(requests, status)
        return i, (requests[i]._obj if i != UNDEFINED else None)

    @staticmethod
    def Waitsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        idx = _wait_some(list(requests), "Request.Waitsome", any_one=False)
        if idx == [UNDEFINED]:
            return None
        _retire(requests, idx, statuses)
        return idx

    @staticmethod
    def waitsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[Optional[List[int]], Optional[List[Any]]]:
        idx = Request.Waitsome(requests, statuses)
        return idx, (None if idx is None else [requests[i]._obj for i in idx])

    @staticmethod
    def Testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> bool:
        if all(r._poll() for r in requests):
            Request.Waitall(requests, statuses)
            return True
        _poll_cost(next((r for r in requests if r._ctx is not None), None), "MPI.Request.Testall()")
        return False

    @staticmethod
    def testall(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[bool, Optional[List[Any]]]:
        flag = Request.Testall(requests, statuses)
        return flag, ([r._obj for r in requests] if flag else None)

    @staticmethod
    def Testany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool]:
        i, flag = _first_done(requests, status, "MPI.Request.Testany()")
        if flag and i != UNDEFINED:
            requests[i]._raise()
            requests[i]._kind = "null-done"
        return i, flag

    @staticmethod
    def testany(requests: Sequence["Request"], status: Optional[Status] = None) -> Tuple[int, bool, Any]:
        i, flag = Request.Testany(requests, status)
        return i, flag, (requests[i]._obj if flag and i != UNDEFINED else None)

    @staticmethod
    def Testsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Optional[List[int]]:
        idx = _done(requests, "MPI.Request.Testsome()")
        if idx is not None:
            _retire(requests, idx, statuses)
        return idx

    @staticmethod
    def testsome(requests: Sequence["Request"], statuses: Optional[List[Status]] = None) -> Tuple[Optional[List[int]], Optional[List[Any]]]:
        idx = Request.Testsome(requests, statuses)
        return idx, (None if idx is None else [requests[i]._obj for i in idx])

    @staticmethod
    def Startall(requests: Sequence["Prequest"]) -> None:
        for r in requests:
            r.Start()

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Request {self._kind}{' done' if self._done else ''}>"


class Prequest(Request):
    """A persistent request (``Send_init`` / ``Recv_init``)."""

    _persistent = True

    def __new__(cls, start: Any = None) -> "Prequest":
        # Prequest(preq): the same persistent request (its starts and
        # completions are one operation's).
        if isinstance(start, Prequest):
            return start
        return super().__new__(cls)

    def __init__(self, start: Any):
        if start is self:
            return
        if isinstance(start, Request):
            raise ArgumentTypeError(f"Prequest(): expecting a persistent request, got {type(start).__name__}")
        super().__init__(-1, "persistent")
        self._start = start
        self._active: Optional[Request] = None
        self._done = True
        self._freed = False

    def Start(self) -> None:
        self._active = self._start()
        self._id, self._ctx, self._finish = self._active._id, self._active._ctx, self._active._finish
        self._group = self._active._group
        self._into = self._active._into
        self._done = self._active._done
        self._status = self._active._status
        self._kind = "persistent-active"

    def __bool__(self) -> bool:
        # A persistent request stays a request across its starts and
        # completions, until it is freed.
        return not self._freed

    def Free(self) -> None:
        self._done = True
        self._freed = True
        self._kind = "null"


class Grequest(Request):
    """A generalized request (``MPI_Grequest_start``): an operation of the
    program's own, which it completes with ``Complete`` (``complete(obj)``:
    with the object ``wait`` and ``test`` give). A Test before that finds it
    pending (and costs a poll); a Wait before that would wait for ever (the
    ranks have no other thread to complete it) and is refused. Once
    complete, the Wait or Test that reports it calls ``query_fn(status)``
    for its status, then ``free_fn()``; ``Cancel`` calls
    ``cancel_fn(completed)``. An error in one of them is printed and raised
    as MPI.Exception (its own class, or MPI_ERR_OTHER)."""

    _grequest = True

    @classmethod
    def Start(cls, query_fn: Any = None, free_fn: Any = None, cancel_fn: Any = None, args: Any = None,
              kwargs: Any = None) -> "Grequest":
        g = cls()
        _grequests[0] += 1
        g._kind, g._done, g._status = "grequest", False, None
        g._fns = (query_fn, free_fn, cancel_fn, tuple(args or ()), dict(kwargs or {}))
        g._completed = False
        return g

    def _call(self, fn: Any, *head: Any) -> None:
        if fn is None:
            return
        try:
            fn(*head, *self._fns[3], **self._fns[4])
        except BaseException as e:
            _traceback.print_exc()
            raise (e if isinstance(e, Exception) else Exception(ERR_OTHER, f"{type(e).__name__}: {e}")) from None

    def Complete(self) -> None:
        self._completed = True

    def complete(self, obj: Any = None) -> None:
        self._obj = obj
        self.Complete()

    def _poll(self) -> bool:
        if self._done:
            return True
        if not self._completed:
            return False
        # Reported complete: its status from query_fn, then free_fn.
        self._done = True
        st = Status()
        try:
            self._call(self._fns[0], st)
            self._call(self._fns[1])
        except Exception as e:
            self._error = e
        self._status = (st.source, st.tag, st._count, st._cancelled, False)
        return True

    def _complete(self) -> None:
        self._poll()

    def wait(self, status: Optional[Status] = None) -> Any:
        # The object comes once, with the completion that reports it.
        self.Wait(status)
        obj, self._obj = self._obj, None
        return obj

    def test(self, status: Optional[Status] = None) -> Tuple[bool, Any]:
        if not self.Test(status):
            return False, None
        obj, self._obj = self._obj, None
        return True, obj

    def Cancel(self) -> None:
        if self._kind in ("null", "null-done"):
            raise Exception(ERR_REQUEST, "Cancel: MPI_REQUEST_NULL")
        self._call(self._fns[2], self._completed)

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Grequest{' complete' if self._completed else ''}>"


REQUEST_NULL = Request()


def _poll_cost(req: Optional["Request"], call: str) -> None:
    """A test that found its request(s) not done: the calling rank's core
    spends a poll and the simulation goes on meanwhile."""
    ctx = req._ctx if req is not None and req._ctx is not None else None
    if ctx is None:
        ctx = _rt.current()
    ctx.runtime.poll(ctx, call)


def _active(requests: Sequence[Request]) -> List[int]:
    """Indices of the requests that are not null or retired."""
    return [i for i, r in enumerate(requests) if r._kind not in ("null", "null-done")]


def _first_done(requests: Sequence[Request], status: Optional[Status], call: str) -> Tuple[int, bool]:
    """(index of the first active request that is done, with `status`
    filled, True); (UNDEFINED, True) with none active; else a poll and
    (UNDEFINED, False)."""
    active = _active(requests)
    if not active:
        if status is not None:
            status._set(ANY_SOURCE, ANY_TAG, 0, False, SUCCESS)
        return UNDEFINED, True
    for i in active:
        if requests[i]._poll():
            requests[i]._fill(status)
            return i, True
    _poll_cost(requests[active[0]], call)
    return UNDEFINED, False


def _done(requests: Sequence[Request], call: str) -> Optional[List[int]]:
    """Indices of the active requests that are done (None with none
    active; a poll when none is done)."""
    active = _active(requests)
    if not active:
        return None
    idx = [i for i in active if requests[i]._poll()]
    if not idx:
        _poll_cost(requests[active[0]], call)
    return idx


def _retire(requests: Sequence[Request], idx: List[int], statuses: Optional[List[Status]]) -> None:
    """Fills the statuses of the completed requests `idx` (in order), raises
    their errors and makes them inactive for later Wait/Test calls."""
    for k, i in enumerate(idx):
        if statuses is not None:
            while len(statuses) <= k:
                statuses.append(Status())
            requests[i]._fill(statuses[k])
        requests[i]._raise()
        requests[i]._kind = "null-done"


_new = object.__new__


def _posted(rid: int, kind: str, ctx: Any, group: Optional["Group"] = None) -> Request:
    """The request of a message a fast path posted (`rid` >= 0): what
    ``Request(rid, kind, None, ctx, "", group)`` makes, without the
    constructor's questions (one is made for every message)."""
    r = _new(Request)
    r._id = rid
    r._kind = kind
    r._ctx = ctx
    r._done = False
    if group is not None:
        r._group = group
    return r


#: Requests made with companions (`_also`) so far: `_wait_all` looks for
#: them only once some were made.
_compound = [0]
#: Generalized requests made so far: likewise.
_grequests = [0]


def _wait_all(reqs: List[Request], call: str) -> None:
    if _compound[0] and any(r._also for r in reqs):
        reqs = reqs + [a for r in reqs for a in r._also]
    pending = [r for r in reqs if not r._done]
    if _grequests[0] and pending and any(r._grequest for r in pending):
        for r in pending:
            if r._grequest and not r._poll():
                raise Exception(ERR_REQUEST, f"{call}: a generalized request the program has not completed "
                                             "(Grequest.Complete): nothing else could complete it")
        pending = [r for r in pending if not r._done]
    if pending:
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        ctx.call, ctx.frame = call, _sys._getframe(2)
        if ctx.nbcs and any(r._coll for r in pending):
            colls = [r for r in pending if r._coll]
            pending = [r for r in pending if not r._coll]
            ids = list({r._id for r in pending})
            w = ctx.world

            def until() -> bool:
                return all(c._done for c in colls) and all(w.done(i) for i in ids)
            _rt._nbc_block(ctx, ids, len(ids), until)
            if not pending:
                return
        ids = [r._id for r in pending]
        if len(set(ids)) != len(ids):  # the same request passed twice
            pending = list({r._id: r for r in pending}.values())
            ids = [r._id for r in pending]
        world = ctx.world
        if ctx.runtime.timeline is not None:
            ctx.runtime.wait(ctx, ids, len(ids))
        else:
            ctx.runtime.block(ctx, ids, len(ids))
        # One call into the core collects every request's status and data:
        # a status alone for a request without data, which needs no more
        # than this when it has no group to translate its source through
        # and no function to finish it.
        for r, res in zip(pending, world.finish_all(ids)):
            if len(res) == 5 and r._group is None and r._finish is None:
                r._status = res
                r._done = True
            else:
                r._finished(res)


def _wait_some(reqs: List[Request], call: str, any_one: bool) -> List[int]:
    active = _active(reqs)
    if not active:
        return [UNDEFINED]
    done = [i for i in active if reqs[i]._poll()]
    if not done:
        ctx = _ctx()
        ctx.call, ctx.frame = f"MPI.{call}()", _sys._getframe(2)
        ids = [reqs[i]._id for i in active if not reqs[i]._coll and not reqs[i]._grequest]
        if not ids and not any(reqs[i]._coll for i in active):
            raise Exception(ERR_REQUEST, f"MPI.{call}(): only generalized requests the program has not completed "
                                         "(Grequest.Complete): nothing else could complete them")
        if ctx.nbcs and any(reqs[i]._coll for i in active):
            w = ctx.world
            colls = [reqs[i] for i in active if reqs[i]._coll]

            def until() -> bool:
                return any(c._done for c in colls) or any(w.done(i) for i in ids)
            _rt._nbc_block(ctx, ids, 1, until)
        else:
            ctx.runtime.wait(ctx, ids, 1)
        done = [i for i in active if reqs[i]._poll()]
    return done[:1] if any_one else done
