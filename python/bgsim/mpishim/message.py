"""Matched probes (``MPI_Mprobe`` / ``MPI_Improbe``) and the message they
take: ``mpi4py.MPI.Message``.

A matched probe takes the message it finds out of the matching: no other
receive can get it, only the ``Message``'s own ``Recv`` / ``Irecv`` /
``recv`` / ``irecv``, once. The simulated MPI does this by posting, as soon
as the probe has found the message, a receive for exactly its source, tag
and size: messages between two ranks on one communicator and tag do not
overtake each other, so that receive matches the probed message and no
later one, before the rank can post any other. The receive names its buffer
(or, for ``recv``, unpickles) when the program calls it; a rendezvous
message's data therefore starts moving at the probe, as an MPI that
receives eagerly into its own buffer would have it.
"""

from __future__ import annotations

from typing import Any, Optional

from ..errors import ArgumentTypeError, UsageError
from .buffers import _load
from .constants import ANY_SOURCE, ANY_TAG, PROC_NULL
from .errors import ERR_REQUEST, ERR_TRUNCATE, Exception
from .handles import Handle
from .requests import Request
from .status import Status


class _Taken:
    """What the handles of one probed message share."""

    __slots__ = ("comm", "req")

    def __init__(self, comm: Any, req: Request):
        self.comm, self.req = comm, req


class Message(Handle):
    """A message a matched probe took. ``Message()`` is MESSAGE_NULL,
    ``Message(m)`` a new handle of `m` (equal to it); receiving through a
    handle makes it MESSAGE_NULL (the predefined MESSAGE_NO_PROC stays)."""

    def __init__(self, message: Optional["Message"] = None):
        if message is None:
            self._taken: Any = None  # None: null; "noproc"; or a _Taken
        elif isinstance(message, Message):
            self._taken = message._taken
        else:
            raise ArgumentTypeError(f"Message(): expecting a message, got {type(message).__name__}")

    def __bool__(self) -> bool:
        return self._taken is not None

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return self._taken is other._taken

    __hash__ = object.__hash__

    def __reduce__(self) -> Any:
        # As mpi4py: the predefined messages pickle as themselves, a new
        # handle of one as a new handle, a probed message not at all.
        if self is MESSAGE_NULL:
            return "MESSAGE_NULL"
        if self is MESSAGE_NO_PROC:
            return "MESSAGE_NO_PROC"
        if self._taken is None:
            return (Message, (MESSAGE_NULL,))
        if self._taken == "noproc":
            return (Message, (MESSAGE_NO_PROC,))
        raise UsageError("cannot pickle a probed message (it is this run's)")

    # -- probing --

    @classmethod
    def Probe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG,
              status: Optional[Status] = None) -> "Message":
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(cls, comm: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG,
               status: Optional[Status] = None) -> Optional["Message"]:
        return comm.Improbe(source, tag, status)

    probe = Probe
    iprobe = Iprobe

    # -- receiving --

    def _take(self, what: str) -> Any:
        """The message this handle names; the handle becomes null (not
        the predefined MESSAGE_NO_PROC itself)."""
        taken = self._taken
        if taken is None:
            raise Exception(ERR_REQUEST, f"Message.{what}: MPI_MESSAGE_NULL")
        if self is not MESSAGE_NO_PROC:
            self._taken = None
        return taken

    def _request(self, buf: Any, what: str) -> Request:
        taken = self._take(what)
        if taken == "noproc":
            return Request(-1, "recv")
        req = taken.req
        if buf is not None:
            mv, nbytes, _ = taken.comm._recv_view(buf)
            if nbytes < req._count:
                req._error = Exception(ERR_TRUNCATE, f"Message.{what}: a message of {req._count} bytes into a "
                                                     f"buffer of {nbytes}")
            else:
                req._into = mv
        elif req._count:
            req._error = Exception(ERR_TRUNCATE, f"Message.{what}: a message of {req._count} bytes into no buffer")
        return req

    def Recv(self, buf: Any, status: Optional[Status] = None) -> None:
        req = self._request(buf, "Recv")
        req.Wait(status)

    def Irecv(self, buf: Any) -> Request:
        return self._request(buf, "Irecv")

    def _obj_request(self, what: str) -> Request:
        taken = self._take(what)
        if taken == "noproc":
            return Request(-1, "recv")
        req = taken.req
        req._finish = lambda st, data: _load(data)
        return req

    def recv(self, status: Optional[Status] = None) -> Any:
        req = self._obj_request("recv")
        req.Wait(status)
        return req._obj

    def irecv(self) -> Request:
        return self._obj_request("irecv")

    def __repr__(self) -> str:
        if self is MESSAGE_NULL:
            return "<mpi4py.MPI.Message MESSAGE_NULL>"
        if self is MESSAGE_NO_PROC:
            return "<mpi4py.MPI.Message MESSAGE_NO_PROC>"
        return f"<mpi4py.MPI.Message {'null' if self._taken is None else 'taken'}>"


def taken(comm: Any, source: int, tag: int, count: int) -> Message:
    """The Message of a probe that found a message of `count` bytes from
    `source` (a rank of `comm`, or PROC_NULL) with `tag`: its receive is
    posted now (see the module's doc)."""
    if source == PROC_NULL:
        return Message(MESSAGE_NO_PROC)
    req = comm._irecv_into(count, source, tag, None)
    req._count = count
    m = Message()
    m._taken = _Taken(comm, req)
    return m


MESSAGE_NULL = Message()
MESSAGE_NO_PROC = Message()
MESSAGE_NO_PROC._taken = "noproc"
