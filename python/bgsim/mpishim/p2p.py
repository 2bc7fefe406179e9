"""Point-to-point communication of a communicator: the buffer API (Send,
Recv, Isend ...), the pickle API (send, recv, isend ...), probes. A mixin of
``Comm``, which provides the identity (``_me``, ``_world_rank``, the
context and the core's fast path ``_p2p``)."""

from __future__ import annotations

import sys as _sys
import warnings as _warnings
from typing import Any, Optional, Tuple

import numpy as _np

from .. import runtime as _rt
from ..errors import ArgumentTypeError as _TypeError
from . import message as _message
from .buffers import _BIG, _Packed, _address, _bytes_view, _dump, _load, _msg, _pack
from .constants import ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB
from .errors import ERR_TAG, ERR_TRUNCATE, Exception
from .requests import Prequest, Request, _compound, _ctx, _posted, _wait_all
from .status import Status

_ndarray = _np.ndarray


def _plain(buf: Any) -> bool:
    """Whether `buf` is a numpy array whose bytes are its elements as
    they stand: C-contiguous, in this machine's byte order, no Python
    objects (the fast paths take its bytes as they are; anything else goes
    the general way, which explains what it cannot take)."""
    if buf.__class__ is not _ndarray:
        return False
    d = buf.dtype
    return d.isnative and not d.hasobject and buf.flags.c_contiguous


def _suspend(ctx: Any, blocked: Any, call: Any) -> None:
    """The rank of a blocking fast call that answered `blocked` (a
    `_core.Blocked` that waits) waits in MPI call `call` (for a deadlock
    report, with its caller's frame): returns when it runs again."""
    ctx.call, ctx.frame = call, _sys._getframe(2)
    ctx.runtime.suspend(ctx.rank, blocked.ready)


def _check_tag(tag: int, recv: bool) -> int:
    if tag.__class__ is int and 0 <= tag <= TAG_UB:
        return tag
    if not isinstance(tag, (int, _np.integer)):
        raise _TypeError(f"tag must be an integer, got {type(tag).__name__}")
    if (recv and tag == ANY_TAG) or 0 <= tag <= TAG_UB:
        return int(tag)
    raise Exception(ERR_TAG, f"tag {tag}")


class PointToPoint:
    """Sends, receives and probes of ``Comm``."""

    # -- point-to-point core --

    def _isend_bytes(self, data: bytes, dest: int, tag: int, mode: int, call: str, ctx_off: int = 0) -> Request:
        ctx, me = self._me()
        wdest = self._world_rank(dest, "dest")
        tag = _check_tag(tag, False) if ctx_off == 0 else tag
        if wdest == PROC_NULL:
            return Request(-1, "send")
        # `data`: bytes, or a skeleton's message (a size, no content).
        rid = ctx.runtime.world.isend(ctx.rank, wdest, self._context + ctx_off, tag, data, mode)
        return Request(rid, "send", None, ctx)

    def _irecv_into(self, capacity: int, source: int, tag: int, finish: Any, ctx_off: int = 0,
                    unaligned: bool = False, ctx: Any = None) -> Request:
        if ctx is None:
            ctx, me = self._me()
        wsrc = self._world_rank(source, "source", allow_any=True)
        tag = _check_tag(tag, True) if ctx_off == 0 else tag
        if wsrc == PROC_NULL:
            r = Request(-1, "recv")
            r._obj = finish((PROC_NULL, ANY_TAG, 0, False, False), b"") if finish else None
            return r
        rid = ctx.runtime.world.irecv(ctx.rank, wsrc, self._context + ctx_off, tag, capacity, unaligned)
        return Request(rid, "recv", finish, ctx, "", self._peers)

    def _send_buf(self, buf: Any, dest: int, tag: int, mode: int, call: str) -> Request:
        cls = buf.__class__
        if _plain(buf) and not _rt.size_only:
            data = buf.tobytes()  # C order, also for a non-contiguous view
        elif cls is bytes and not _rt.size_only:
            data = buf
        else:
            data = self._send_data(_msg(buf, recv=False), dest)
        return self._isend_bytes(data, dest, tag, mode, call)

    def _send_data(self, m: Any, dest: int) -> Any:
        """What a send of message `m` hands the core: its bytes, or with
        size-only buffers its size. MPI packs a non-contiguous datatype's
        data before it sends them: reading them from the packed view costs
        the rank's core the copy (`buffers._pack`); with size-only buffers,
        which read nothing, it is charged here."""
        if not _rt.size_only:
            return m.mv.tobytes()
        if m.mv.__class__ is _Packed and dest != PROC_NULL:
            _pack(m.nbytes)
        return m.nbytes

    def _recv_buf(self, buf: Any, source: int, tag: int) -> Request:
        mv, nbytes, addr = self._recv_view(buf)
        ctx, me = self._me()
        req = self._irecv_into(nbytes, source, tag, None, unaligned=addr % ctx.runtime.alignment != 0, ctx=ctx)
        req._into = mv
        return req

    def _recv_view(self, buf: Any) -> Tuple[Any, int, int]:
        """A receive buffer's memory, its size in bytes and its address."""
        mv = None
        if _plain(buf):
            try:
                mv = memoryview(buf).cast("B")
                nbytes = len(mv)
                # An array that owns its data starts 16-byte aligned (numpy's
                # allocator); a view may not.
                addr = 0 if buf.base is None else buf.__array_interface__["data"][0]
            except TypeError:  # not contiguous: the general path explains
                mv = None
        if mv is None or mv.readonly:
            m = _msg(buf, recv=True)
            mv, nbytes = m.mv, m.nbytes
            addr = _address(mv) if isinstance(mv, memoryview) else 0
        return mv, nbytes, addr

    def _wait(self, req: Request, status: Optional[Status], call: str) -> Any:
        if not req._poll():
            ctx = req._ctx or _ctx()  # the rank that made the request waits for it
            ctx.call, ctx.frame = call, _sys._getframe(2)
            ctx.runtime.wait(ctx, [req._id], 1)
            req._complete()
        req._fill(status)
        req._raise()
        return req._obj

    # -- buffer API --

    def Send(self, buf: Any, dest: int, tag: int = 0) -> None:
        # The common case in one call into the core, which also blocks the
        # rank (see Isend).
        ctx = _rt.fast
        if (ctx is not None and self._p2p is not None and _plain(buf)
                and ctx.runtime.timeline is None):
            w = ctx.world
            rt = ctx.runtime
            b = w.send_fast(ctx.rank, self._p2p, dest, tag, buf.tobytes(), rt.may_run())
            if b is True:  # done
                return
            if b is not False:  # a _core.Blocked
                if b.waits:
                    _suspend(ctx, b, ("MPI.Comm.Send(dest={}, tag={})", dest, tag))
                w.release(b.req)
                return
        self._wait(self.Isend(buf, dest, tag), None, lambda: f"MPI.Comm.Send(dest={dest}, tag={tag})")

    def Ssend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 1, "Ssend"), None, lambda: f"MPI.Comm.Ssend(dest={dest}, tag={tag})")

    def Rsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 2, "Rsend"), None, lambda: f"MPI.Comm.Rsend(dest={dest}, tag={tag})")

    def Bsend(self, buf: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._send_buf(buf, dest, tag, 3, "Bsend"), None, lambda: f"MPI.Comm.Bsend(dest={dest}, tag={tag})")

    def Isend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        # The common case (a numpy array to a rank of this communicator) in
        # one call into the core; anything else, errors included, goes the
        # general way.
        ctx = _rt.fast
        if ctx is not None and self._p2p is not None and _plain(buf):
            rid = ctx.world.isend_fast(ctx.rank, self._p2p, dest, tag, buf.tobytes())
            if rid >= 0:
                return _posted(rid, "send", ctx)
        return self._send_buf(buf, dest, tag, 0, "Isend")

    def Issend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 1, "Issend")

    def Irsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 2, "Irsend")

    def Ibsend(self, buf: Any, dest: int, tag: int = 0) -> Request:
        return self._send_buf(buf, dest, tag, 3, "Ibsend")

    def Recv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        # As Send: the common case without a status in one call into the core.
        ctx = _rt.fast
        if (status is None and ctx is not None and self._p2p is not None and _plain(buf)
                and ctx.runtime.timeline is None):
            w = ctx.world
            rt = ctx.runtime
            b = w.recv_fast(ctx.rank, self._p2p, source, tag, buf, rt.may_run())
            if b is True:  # done
                return
            if b is not False:  # a _core.Blocked
                if b.waits:
                    _suspend(ctx, b, ("MPI.Comm.Recv(source={}, tag={})", source, tag))
                st = w.finish(b.req)
                if st[4]:  # truncated
                    g = self._p2p_group
                    src = st[0] if g is None else g._index.get(st[0], st[0])
                    raise Exception(ERR_TRUNCATE, f"a message of more bytes than the receive buffer holds from rank {src}")
                return
        self._wait(self.Irecv(buf, source, tag), status, lambda: f"MPI.Comm.Recv(source={source}, tag={tag})")

    def Irecv(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        # As Isend: the core copies the message straight into `buf`.
        ctx = _rt.fast
        if ctx is not None and self._p2p is not None and _plain(buf):
            rid = ctx.world.irecv_fast(ctx.rank, self._p2p, source, tag, buf)
            if rid >= 0:
                return _posted(rid, "recv", ctx, self._p2p_group)
        return self._recv_buf(buf, source, tag)

    def Send_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return Prequest(lambda: self._send_buf(buf, dest, tag, 0, "Send_init"))

    def Ssend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return Prequest(lambda: self._send_buf(buf, dest, tag, 1, "Ssend_init"))

    def Rsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return Prequest(lambda: self._send_buf(buf, dest, tag, 2, "Rsend_init"))

    def Bsend_init(self, buf: Any, dest: int, tag: int = 0) -> Prequest:
        return Prequest(lambda: self._send_buf(buf, dest, tag, 3, "Bsend_init"))

    def Recv_init(self, buf: Any, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        return Prequest(lambda: self._recv_buf(buf, source, tag))

    def _post_sendrecv(self, sendbuf: Any, dest: int, sendtag: int, recvbuf: Any, source: int,
                       recvtag: int) -> Tuple[Request, Request]:
        """Posts Sendrecv's receive, then its send: (receive, send). One
        call: a send that cannot start takes back the receive."""
        r = self.Irecv(recvbuf, source, recvtag)
        try:
            s = self.Isend(sendbuf, dest, sendtag)
        except BaseException:
            r.Cancel()
            raise
        return r, s

    def _post_sendrecv_replace(self, buf: Any, dest: int, sendtag: int, source: int, recvtag: int,
                               call: str) -> Tuple[Request, Request]:
        """Posts Sendrecv_replace's receive and send (the message sent is
        taken from `buf` first): (receive, send)."""
        data = self._send_data(_msg(buf, recv=True), dest)
        r = self._recv_buf(buf, source, recvtag)
        return r, self._isend_bytes(data, dest, sendtag, 0, call)

    @staticmethod
    def _with_send(r: Request, s: Request) -> Request:
        """`r`, completing only once `s` has too (Isendrecv's request)."""
        r._also = (s,)
        _compound[0] += 1
        return r

    def Sendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        r, s = self._post_sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag)
        _wait_all([s, r], "MPI.Comm.Sendrecv()")
        r._fill(status)
        r._raise()

    def Isendrecv(self, sendbuf: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int = ANY_SOURCE,
                  recvtag: int = ANY_TAG) -> Request:
        """Sendrecv as one request, complete when both parts are."""
        return self._with_send(*self._post_sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag))

    def Isendrecv_replace(self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                          recvtag: int = ANY_TAG) -> Request:
        """Sendrecv_replace as one request."""
        return self._with_send(*self._post_sendrecv_replace(buf, dest, sendtag, source, recvtag, "Isendrecv_replace"))

    def Sendrecv_replace(self, buf: Any, dest: int, sendtag: int = 0, source: int = ANY_SOURCE,
                         recvtag: int = ANY_TAG, status: Optional[Status] = None) -> None:
        r, s = self._post_sendrecv_replace(buf, dest, sendtag, source, recvtag, "Sendrecv_replace")
        _wait_all([s, r], "MPI.Comm.Sendrecv_replace()")
        r._fill(status)
        r._raise()

    def _probe_req(self, source: int, tag: int) -> Request:
        ctx, me = self._me()
        wsrc = self._world_rank(source, "source", allow_any=True)
        tag = _check_tag(tag, True)
        if wsrc == PROC_NULL:
            return Request(-1, "probe")
        rid = ctx.runtime.world.probe(ctx.rank, wsrc, self._context, tag)
        return Request(rid, "probe", None, ctx, "", self._peers)

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        self._wait(self._probe_req(source, tag), status, lambda: f"MPI.Comm.Probe(source={source}, tag={tag})")
        return True

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        req = self._probe_req(source, tag)
        if req._poll():
            req._fill(status)
            return True
        self._probe_missed(req, f"MPI.Comm.Iprobe(source={source}, tag={tag})")
        return False

    @staticmethod
    def _probe_missed(req: Request, call: str) -> None:
        """A nonblocking probe that found nothing: its request goes, the
        rank's core spends a poll."""
        if req._id >= 0:
            req._ctx.runtime.world.cancel(req._id)
            req._ctx.runtime.world.release(req._id)
        ctx = _rt.current()
        ctx.runtime.poll(ctx, call)

    # -- matched probes (mpishim/message.py) --

    def _matched(self, req: Request, status: Optional[Status]) -> "_message.Message":
        """The Message of a completed probe request: its receive is posted now."""
        req._fill(status)
        src, tag, count = req._status[:3]
        return _message.taken(self, src, tag, count)

    def Mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> "_message.Message":
        req = self._probe_req(source, tag)
        self._wait(req, None, lambda: f"MPI.Comm.Mprobe(source={source}, tag={tag})")
        return self._matched(req, status)

    def Improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG,
                status: Optional[Status] = None) -> "Optional[_message.Message]":
        req = self._probe_req(source, tag)
        if req._poll():
            return self._matched(req, status)
        self._probe_missed(req, f"MPI.Comm.Improbe(source={source}, tag={tag})")
        return None

    def mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> "_message.Message":
        return self.Mprobe(source, tag, status)

    def improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG,
                status: Optional[Status] = None) -> "Optional[_message.Message]":
        return self.Improbe(source, tag, status)

    # -- pickle API --

    def send(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 0, "send"), None, lambda: f"MPI.Comm.send(dest={dest}, tag={tag})")

    def ssend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 1, "ssend"), None, lambda: f"MPI.Comm.ssend(dest={dest}, tag={tag})")

    def bsend(self, obj: Any, dest: int, tag: int = 0) -> None:
        self._wait(self._isend_bytes(_dump(obj), dest, tag, 3, "bsend"), None, lambda: f"MPI.Comm.bsend(dest={dest}, tag={tag})")

    def isend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 0, "isend")

    def issend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 1, "issend")

    def ibsend(self, obj: Any, dest: int, tag: int = 0) -> Request:
        return self._isend_bytes(_dump(obj), dest, tag, 3, "ibsend")

    def _irecv_obj(self, buf: Any, source: int, tag: int) -> Request:
        # A buffer, or (mpi4py 4) an int: the size of one.
        cap = _BIG if buf is None else (buf if isinstance(buf, int) else len(_bytes_view(buf, False)[0]))
        return self._irecv_into(cap, source, tag, lambda st, data: None if st[0] == PROC_NULL else _load(data))

    def recv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> Any:
        if buf is not None:
            _warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=2)  # as mpi4py 4 says
        return self._wait(self._irecv_obj(buf, source, tag), status, lambda: f"MPI.Comm.recv(source={source}, tag={tag})")

    def irecv(self, buf: Any = None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv_obj(buf, source, tag)

    def sendrecv(self, sendobj: Any, dest: int, sendtag: int = 0, recvbuf: Any = None, source: int = ANY_SOURCE,
                 recvtag: int = ANY_TAG, status: Optional[Status] = None) -> Any:
        r = self._irecv_obj(recvbuf, source, recvtag)
        s = self._isend_bytes(_dump(sendobj), dest, sendtag, 0, "sendrecv")
        _wait_all([s, r], "MPI.Comm.sendrecv()")
        r._fill(status)
        r._raise()
        return r._obj

    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        return self.Probe(source, tag, status)

    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status: Optional[Status] = None) -> bool:
        return self.Iprobe(source, tag, status)
