"""Nonblocking and persistent collectives (MPI_Ibarrier, MPI_Iallreduce ...,
MPI_Barrier_init ...).

A nonblocking collective runs the same algorithm as its blocking form, on
the collective context of its communicator with the call's own number (so
several may be in progress on one communicator), in a greenlet of its own
(`runtime.CollGreenlet`). It starts inside the call that starts it and runs
until its first wait; from then on it advances only inside its rank's MPI
calls (a test, a wait, a poll, any call that waits), each time as far as it
can go, as an MPI library without a progress thread advances its
collective schedules. Every cost it has is its rank's: its messages' and
its combines' on the rank's core, while the rank is in an MPI call.

It runs the algorithm the default rule picks when no hardware network is
offered and the communicator is not taken to fill the partition (a
point-to-point algorithm: `coll.registry.choose`), never the hardware
networks: these serve one collective at a time per rank, and Blue Gene's
own MPI had no nonblocking collectives.
"""

from __future__ import annotations

import builtins as _builtins
import sys as _sys
from typing import Any, Callable, Optional

from greenlet import getcurrent as _getcurrent

from .. import runtime as _rt
from .constants import ANY_SOURCE, ANY_TAG
from .errors import ERR_REQUEST, Exception
from .requests import Request

#: What a finished collective's status says (MPI leaves it empty).
_EMPTY_STATUS = (ANY_SOURCE, ANY_TAG, 0, False, False)


def nonblocking() -> bool:
    """Whether the calling code runs inside a nonblocking collective."""
    return _getcurrent().__class__ is _rt.CollGreenlet


class _Agent:
    """One nonblocking collective in progress on its rank: its greenlet and
    the (core requests, how many) it waits for (`runtime.advance_collectives`)."""

    __slots__ = ("g", "req", "ctx", "waiting")

    def __init__(self, req: "CollRequest", ctx: "_rt.RankContext", body: Callable[[], Any]):
        self.req, self.ctx = req, ctx
        self.g = _rt.CollGreenlet(body)
        self.g.ctx, self.g.rank = ctx, ctx.rank
        self.waiting: tuple = ((), 0)

    def step(self) -> None:
        """Runs the collective until it waits again or is done."""
        g = self.g
        g.parent = _getcurrent()  # the rank's own flow, which it hands its waits to
        try:
            got = g.switch()
        except _builtins.Exception as e:  # the collective's error: raised by the Wait or Test that completes it
            self._end(e)
            return
        if g.dead:
            self._end(None)
        else:
            self.waiting = got

    def _end(self, error: Optional[BaseException]) -> None:
        self.ctx.nbcs.remove(self)
        req = self.req
        req._agent = None
        req._status = _EMPTY_STATUS
        req._error = error
        req._done = True


class CollRequest(Request):
    """The request of a nonblocking collective (or an active persistent
    one): complete once the collective is done on this rank."""

    _coll = True
    _agent: Optional[_Agent] = None

    def __init__(self, what: str):
        super().__init__(-1, "collective")
        self._done = False
        self._status = None
        self._desc = what

    def _launch(self, ctx: "_rt.RankContext", body: Callable[[], Any]) -> None:
        """Starts the collective `body()` on the calling rank: it runs until
        its first wait (an error before it is raised here, as the call's)."""
        self._done, self._status, self._error = False, None, None
        a = self._agent = _Agent(self, ctx, body)
        if ctx.nbcs is None:
            ctx.nbcs = []
        ctx.nbcs.append(a)
        # The fast point-to-point calls wait in the core, where this
        # collective would not advance (the scheduler says the same at the
        # rank's next turn, `Runtime._loop`).
        _rt.fast = None
        a.step()
        if self._done and self._error is not None:
            e, self._error = self._error, None
            raise e

    def _poll(self) -> bool:
        if not self._done:
            _rt.advance_collectives(self._ctx)
        return self._done

    def _complete(self) -> None:
        pass

    def Cancel(self) -> None:
        if self._kind == "null":
            raise Exception(ERR_REQUEST, "Cancel: MPI_REQUEST_NULL")
        raise Exception(ERR_REQUEST, f"Cancel: the request of a collective ({self._desc}) cannot be cancelled")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Request {self._desc}{' done' if self._done else ''}>"


def start(call: str, body: Callable[[], Any]) -> CollRequest:
    """Starts nonblocking collective `call` ("MPI.Comm.Ibarrier()" ...),
    which runs `body()` (its blocking form) on the calling rank."""
    ctx = _rt.current()
    req = CollRequest(call)
    req._ctx = ctx
    ctx.call, ctx.frame = call, _sys._getframe(2)
    req._launch(ctx, body)
    return req


class CollPrequest(CollRequest):
    """A persistent collective (``Barrier_init`` ...): each ``Start`` runs
    the collective once more, as a nonblocking one."""

    _persistent = True

    def __init__(self, what: str, body: Callable[[], Any]):
        super().__init__(what)
        self._body = body
        self._kind = "persistent"
        self._done = True
        self._freed = False
        self._ctx = _rt.current()

    def Start(self) -> None:
        if self._freed:
            raise Exception(ERR_REQUEST, f"Start: a freed request ({self._desc})")
        if not self._done:
            raise Exception(ERR_REQUEST, f"Start: {self._desc} is still active")
        self._kind = "persistent-active"
        self._launch(self._ctx, self._body)

    def __bool__(self) -> bool:
        return not self._freed

    def Free(self) -> None:
        if not self._done:
            raise Exception(ERR_REQUEST, f"Free: {self._desc} is still active")
        self._freed = True
        self._kind = "null"


def persistent(call: str, body: Callable[[], Any]) -> CollPrequest:
    """A persistent collective `call` ("MPI.Comm.Barrier_init()" ...), inactive
    until started; each start runs `body()`."""
    return CollPrequest(call, body)


def nonblocking_form(name: str) -> Any:
    """(I`name`, the method starting blocking collective `name` as a
    nonblocking one) for a communicator class."""
    iname = "I" + name.lower()

    def method(self: Any, *args: Any, **kw: Any) -> CollRequest:
        blocking = getattr(self, name)
        return start(f"MPI.Comm.{iname}()", lambda: blocking(*args, **kw))
    method.__name__ = method.__qualname__ = iname
    method.__doc__ = f"Nonblocking {name}: a request, complete once the collective is done on this rank."
    return iname, method


def persistent_form(name: str) -> Any:
    """(`name`_init, the method making the persistent form of blocking
    collective `name`) for a communicator class."""
    pname = name + "_init"

    def init(self: Any, *args: Any, info: Any = None, **kw: Any) -> CollPrequest:
        blocking = getattr(self, name)
        self._me()  # a member of the communicator
        return persistent(f"MPI.Comm.{pname}()", lambda: blocking(*args, **kw))
    init.__name__ = init.__qualname__ = pname
    init.__doc__ = f"Persistent {name}: an inactive request; each Start runs the collective once, as I{name.lower()}."
    return pname, init
