"""Communicators: ``Comm``, ``Intracomm``, ``Cartcomm``."""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple

import traceback as _traceback

import numpy as _np
from greenlet import getcurrent as _getcurrent

from . import coll as _coll
from .. import runtime as _rt
from ..errors import ArgumentTypeError, RankExit, UsageError
from .. import _core
from .buffers import _dump, _load, _members
from .collectives import CollectiveCalls, _context_agreement
from .constants import (ANY_SOURCE, APPNUM, CART, COMM_TYPE_HW_GUIDED, COMM_TYPE_HW_UNGUIDED,
                        COMM_TYPE_RESOURCE_GUIDED, CONGRUENT, DIST_GRAPH, GRAPH, HOST, IDENT, IO, KEYVAL_INVALID,
                        LASTUSEDCODE, PROC_NULL, TAG_UB, UNDEFINED, UNIVERSE_SIZE, UNWEIGHTED, WEIGHTS_EMPTY,
                        WTIME_IS_GLOBAL)
from .errors import (ERR_ARG, ERR_COMM, ERR_DIMS, ERR_GROUP, ERR_KEYVAL, ERR_LASTCODE, ERR_OTHER,
                     ERR_RANK, ErrhandlerMethods, Errhandler, Exception, _guard)
from .groups import Group
from .handles import Handle
from .errors import last_used_code as _last_used_code
from .info import Info
from .intercoll import InterCollectives
from .neighbor import NeighborCalls
from .p2p import PointToPoint
from .requests import Request, _ctx, _wait_all

_ndarray = _np.ndarray


def _shared_group(ctx: Any, context: int, make: Any) -> Group:
    """The group of the communicator with `context`, made once by its first
    member and shared by all (memory per rank stays flat as the machine
    grows: groups never change once made)."""
    groups = ctx.runtime.shared_groups
    g = groups.get(context)
    if g is None:
        g = groups[context] = make()
    return g


def _count(ctx: Any, table: str, key: Any) -> int:
    """How many communicators the calling rank made before under `key`
    (per kind of constructor, `table`), counting this one: ranks that make
    the same communicators in the same order agree on its name."""
    seqs = ctx.state.setdefault(table, {})
    n = seqs.get(key, 0)
    seqs[key] = n + 1
    return n


class Comm(PointToPoint, CollectiveCalls, ErrhandlerMethods, Handle):
    """A communicator: a group of world ranks and a context id."""

    def __new__(cls, *args: Any, **kwargs: Any) -> "Comm":
        # mpi4py's communicator classes take their argument in __new__ too: a
        # subclass may call ``super().__new__(cls, comm)``; __init__ builds.
        return object.__new__(cls)

    def __init__(self, group: Any = None, context: Optional[int] = None, name: str = ""):
        # mpi4py's forms: Comm() is a null communicator, Comm(comm) a new
        # handle of comm; bgsim builds its own from (group, context).
        if group is None and context is None:
            group, context, name = Group(()), -1, "MPI_COMM_NULL"
        elif isinstance(group, Comm) and context is None:
            if group and group._inter != self._inter:
                raise ArgumentTypeError(f"{type(self).__name__}(): expecting an "
                                        f"{'inter' if self._inter else 'intra'}communicator, got "
                                        f"{type(group).__name__}")
            if isinstance(self, Topocomm) and not isinstance(group, type(self)):
                raise ArgumentTypeError(f"{type(self).__name__}(): {type(group).__name__} has another topology")
            # (COMM_SELF is every rank's: a handle of it is the caller's.)
            members = Group([_ctx().rank]) if group._per_rank_group else group._group
            group, context, name = members, group._context, group._name
        elif not isinstance(group, Group) or not isinstance(context, int):
            raise ArgumentTypeError(f"{type(self).__name__}(): expecting a communicator, got {type(group).__name__}")
        self._group = group
        self._context = context
        self._name = name
        self._freed = False
        self._bind()

    @property
    def _peers(self) -> Group:
        """The group the ranks of point-to-point calls are of (an
        intercommunicator's remote group)."""
        return self._group

    def _bind(self) -> None:
        """Points the fast path of Isend / Irecv at the communicator's
        current group and context (called again whenever they change)."""
        self._p2p = None if self._context < 0 or self._freed else _members(self._context, self._group._ranks)
        # The group a receive's source goes through: none when comm rank i
        # is world rank i.
        self._p2p_group = None if self._p2p is not None and self._p2p.identity else self._group

    # -- identity --

    def _me(self) -> "Tuple[_rt.RankContext, int]":
        ctx = getattr(_getcurrent(), "ctx", None) or _ctx()
        r = self._group._index.get(ctx.rank)
        if r is None or self._freed:
            raise Exception(ERR_COMM, "the calling rank is not a member of this communicator" if r is None else "freed communicator")
        if ctx.runtime.cpu_factor:
            ctx.runtime.charge_host_cpu(ctx)
        return ctx, r

    def Get_rank(self) -> int:
        return self._me()[1]

    def Get_size(self) -> int:
        return len(self._group._ranks)

    @property
    def rank(self) -> int:
        return self.Get_rank()

    @property
    def size(self) -> int:
        return self.Get_size()

    def Get_group(self) -> Group:
        # A new handle of the communicator's group (which never changes and
        # whose ranks every rank shares): freeing it frees only the handle.
        return Group(self._group)

    @property
    def group(self) -> Group:
        return self.Get_group()

    def Get_name(self) -> str:
        return self._name

    def Set_name(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @name.setter
    def name(self, v: str) -> None:
        self._name = v

    #: Whether communicators of this class are inter-communicators.
    _inter = False

    def Is_inter(self) -> bool:
        return self._inter

    def Is_intra(self) -> bool:
        return not self._inter

    @property
    def is_inter(self) -> bool:
        return self._inter

    @property
    def is_intra(self) -> bool:
        return not self._inter

    def Get_topology(self) -> int:
        return UNDEFINED

    @property
    def topology(self) -> int:
        return self.Get_topology()

    @property
    def is_topo(self) -> bool:
        return self.Get_topology() != UNDEFINED

    # -- hints and parents --

    def Get_info(self) -> Info:
        return Info(getattr(self, "_info", None))

    def Set_info(self, info: Info) -> None:
        self._info = Info(info)

    @property
    def info(self) -> Info:
        return self.Get_info()

    @info.setter
    def info(self, info: Info) -> None:
        self.Set_info(info)

    @staticmethod
    def Get_parent() -> "Intercomm":
        """The parent of spawned processes: a null intercommunicator (equal
        to COMM_NULL); bgsim runs no dynamic processes."""
        return Intercomm()

    def Compare(self, comm: "Comm") -> int:
        if self._context < 0 or comm._context < 0:
            raise Exception(ERR_COMM, "Compare: MPI_COMM_NULL")
        if self._context == comm._context:
            return IDENT
        c = self._group.Compare(comm._group)
        return CONGRUENT if c == IDENT else c

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Comm) and self._context == other._context

    __hash__ = object.__hash__

    def __reduce__(self) -> Any:
        # As mpi4py: the predefined communicators pickle as themselves, a
        # new handle of one as a new handle, any other not at all (its
        # context is this run's).
        from .world import COMM_SELF, COMM_WORLD
        for name, comm in (("COMM_NULL", COMM_NULL), ("COMM_WORLD", COMM_WORLD), ("COMM_SELF", COMM_SELF)):
            if self is comm:
                return name
        if not self:
            return (type(self), ())
        if self._context in (0, 2):
            return (type(self), (COMM_WORLD if self._context == 0 else COMM_SELF,))
        raise UsageError("cannot pickle a communicator other than COMM_NULL, COMM_SELF and COMM_WORLD "
                         "(its context is this run's)")

    def __bool__(self) -> bool:
        return self._context >= 0

    def _world_rank(self, r: int, what: str, allow_null: bool = True, allow_any: bool = False) -> int:
        if r.__class__ is int and 0 <= r < len(self._group._ranks):
            return self._group._ranks[r]
        if allow_null and r == PROC_NULL:
            return PROC_NULL
        if allow_any and r == ANY_SOURCE:
            return ANY_SOURCE
        if not isinstance(r, (int, _np.integer)) or not 0 <= r < len(self._group._ranks):
            raise Exception(ERR_RANK, f"{what} {r} in a communicator of size {len(self._group._ranks)}")
        return self._group._ranks[r]

    # -- communicator management --

    def _next_key(self, kind: str) -> Tuple:
        n = _count(_ctx(), "comm_seq", self._context)
        # A one-member communicator (COMM_SELF, and what comes of it) has
        # one context on every rank but is every rank's own.
        own = (self._group._ranks[0],) if len(self._group._ranks) == 1 else ()
        return (self._context, kind, n) + own

    def _sync(self, what: str) -> None:
        """What a communicator constructor costs: MPICH agrees on the new
        context id with an allreduce (bitwise AND) of its 64-word mask of
        free ids over the parent communicator, recorded as `WHAT
        (allreduce)` (the collective network's ALU on the whole partition)."""
        _context_agreement(self, what)

    def Dup(self, info: Any = None) -> "Comm":
        self._sync("Dup")
        key = self._next_key("dup")
        c = self._clone(self._group, _ctx().runtime.new_context(key))
        c._name = self._name
        self._copy_attrs(c)
        return self._inherit_errhandler(c)

    Clone = Dup

    def Dup_with_info(self, info: Info) -> "Comm":
        c = self.Dup()
        c.Set_info(info)
        return c

    def Idup(self, info: Any = None) -> Tuple["Comm", Request]:
        """A duplicate and its (complete) request: the duplicate is made at once."""
        c = self.Dup(info)
        if info is not None:
            c.Set_info(info)
        return c, Request()

    def Idup_with_info(self, info: Info) -> Tuple["Comm", Request]:
        return self.Idup(info)

    def _clone(self, group: Group, context: int) -> "Comm":
        return Intracomm(group, context)

    def Split(self, color: int = 0, key: int = 0) -> "Comm":
        ctx, me = self._me()
        if color != UNDEFINED and (not isinstance(color, (int, _np.integer)) or color < 0):
            raise Exception(ERR_ARG, f"color {color} (must be >= 0 or MPI.UNDEFINED)")
        seqkey = self._next_key("split")
        c = _coll.Call(self, "Split")
        # (color, key) of every rank as one array: n records, not n objects.
        table = _np.frombuffer(_coll.allgather.allgather_records(c, _np.array([color, key], "<i8").tobytes(),
                                                                 "Split (allgather)"), "<i8")
        if color == UNDEFINED:
            return COMM_NULL
        context = ctx.runtime.new_context(seqkey + (int(color),))

        def make() -> Group:
            colors, keys = table[0::2], table[1::2]
            idx = _np.flatnonzero(colors == color)
            order = idx[_np.lexsort((idx, keys[idx]))]  # by key, then by rank
            return Group([self._group._ranks[i] for i in order.tolist()])
        return self._inherit_errhandler(Intracomm(_shared_group(ctx, context, make), context))

    def Split_type(self, split_type: int, key: int = 0, info: Any = None) -> "Comm":
        """Splits by node: COMM_TYPE_SHARED (and any implementation type);
        HW_GUIDED and RESOURCE_GUIDED when `info` asks for
        mpi_hw_resource_type "mpi_shared_memory" (else COMM_NULL: the
        node is the one level of hardware there is); HW_UNGUIDED when the
        node holds fewer of the members than all (else COMM_NULL), saying
        so in `info`."""
        ctx, me = self._me()
        w = ctx.runtime.world
        node = w.node_of(ctx.rank)
        color = node
        if split_type == UNDEFINED:
            color = UNDEFINED
        elif split_type in (COMM_TYPE_HW_GUIDED, COMM_TYPE_RESOURCE_GUIDED):
            asked = None
            if info is not None and info:
                asked = info.Get("mpi_hw_resource_type")
            if asked != "mpi_shared_memory":
                color = UNDEFINED
        elif split_type == COMM_TYPE_HW_UNGUIDED:
            ranks = self._group._ranks
            # (A communicator larger than a node's tasks cannot be on one.)
            if len(ranks) > w.tasks_per_node or any(w.node_of(r) != node for r in ranks):
                if info is not None and info:
                    info.Set("mpi_hw_resource_type", "mpi_shared_memory")
            else:
                color = UNDEFINED
        return self.Split(color, key)

    def Create(self, group: Group) -> "Comm":
        ctx, me = self._me()
        seqkey = self._next_key("create")
        self._sync("Create")
        if ctx.rank not in group._index:
            return COMM_NULL
        return self._inherit_errhandler(Intracomm(group, ctx.runtime.new_context(seqkey + (group._ranks,))))

    def Create_group(self, group: Group, tag: int = 0) -> "Comm":
        ctx, me = self._me()
        if ctx.rank not in group._index:
            raise Exception(ERR_GROUP, "the calling rank is not in the group")
        sub = Intracomm(group, -1)
        k = (self._context, group._ranks, tag)
        n = _count(ctx, "group_seq", k)
        sub._context = ctx.runtime.new_context(("create_group",) + k + (n,))
        sub._bind()
        sub._sync("Create_group")
        return sub

    def Free(self) -> None:
        """Frees the communicator; the handle becomes COMM_NULL."""
        if self._context in (0, 2):
            raise Exception(ERR_COMM, "Free: COMM_WORLD and COMM_SELF cannot be freed")
        if self._context >= 0:
            self._delete_attrs()
        self._freed = True
        self._context = -1
        self._bind()

    # -- error handlers (ErrhandlerMethods): bgsim raises MPI.Exception whatever is set --

    #: COMM_WORLD and COMM_SELF are one object for all ranks: the error
    #: handler set on them is each rank's own.
    _per_rank_errhandler = False
    #: COMM_SELF: its group is the calling rank's.
    _per_rank_group = False

    def _own_errhandler(self) -> Optional[Errhandler]:
        """The handler set on (or inherited by) this communicator, if any."""
        if self._per_rank_errhandler:
            return _ctx().state.get("predefined_errhandlers", {}).get(self._context)
        return self.__dict__.get("_errhandler")

    def _keep_errhandler(self, errhandler: Errhandler) -> None:
        if self._per_rank_errhandler:
            _ctx().state.setdefault("predefined_errhandlers", {})[self._context] = errhandler
        else:
            self.__dict__["_errhandler"] = errhandler

    def _inherit_errhandler(self, new: "Comm") -> "Comm":
        """A communicator made from this one inherits its error handler."""
        eh = self._own_errhandler()
        if eh is not None:
            new.__dict__["_errhandler"] = eh
        return new

    def Disconnect(self) -> None:
        self.Free()

    # -- buffered sends (MPI-4.1: per communicator) --

    def Attach_buffer(self, buf: Any) -> None:
        self.__dict__["_bsend_buffer"] = buf

    def Detach_buffer(self) -> Any:
        return self.__dict__.pop("_bsend_buffer", None)

    def Flush_buffer(self) -> None:
        """Buffered sends here complete locally at once: nothing to flush."""

    def Iflush_buffer(self) -> "Request":
        return Request(-1, "flush")

    def Abort(self, errorcode: int = 0) -> None:
        """Ends the run with `errorcode` (the exit status of ``bgsim run``)."""
        raise RankExit(_ctx().rank, errorcode, abort=True)

    # -- attributes: the predefined ones, and the user's keyvals, which each
    # rank keeps for itself (as separate processes would) --

    @classmethod
    def Create_keyval(cls, copy_fn: Any = None, delete_fn: Any = None, nopython: bool = False) -> int:
        """A new attribute key of the calling rank. `copy_fn(comm, keyval,
        value)` gives a Dup's value (None or False: not copied, True: the
        same value, NotImplemented returned: not copied); `delete_fn(comm,
        keyval, value)` is called when the value is deleted, replaced or its
        communicator freed."""
        st = _ctx().state
        k = st.get("next_keyval", _FIRST_USER_KEYVAL)
        st["next_keyval"] = k + 1
        st.setdefault("keyvals", {})[k] = _Keyval(copy_fn, delete_fn)
        return k

    @classmethod
    def Free_keyval(cls, keyval: int) -> int:
        """Frees a key (values set with it stay until deleted); returns
        KEYVAL_INVALID."""
        if _ctx().state.get("keyvals", {}).pop(keyval, None) is None:
            raise Exception(ERR_KEYVAL, f"Free_keyval: {keyval} is not a key of this process")
        return KEYVAL_INVALID

    def _attrs(self) -> dict:
        """This rank's attributes of this communicator: keyval -> (key, value)."""
        if self._context < 0:
            raise Exception(ERR_COMM, "attribute of MPI_COMM_NULL")
        return _ctx().state.setdefault("attrs", {}).setdefault(self._context, {})

    def Get_attr(self, keyval: int) -> Any:
        """The predefined attributes: the largest tag, the world's size as the
        universe, the last error code, any rank may do I/O, the clock (the
        simulated one) is global; APPNUM is not set. Then the user's keys."""
        if keyval == KEYVAL_INVALID:
            raise Exception(ERR_KEYVAL, "Get_attr: MPI_KEYVAL_INVALID")
        if keyval == UNIVERSE_SIZE:
            return _ctx().runtime.world.nranks
        if keyval == LASTUSEDCODE:
            return _last_used_code()
        if keyval in _PREDEFINED:
            return _PREDEFINED[keyval]
        held = self._attrs().get(keyval)
        return None if held is None else held[1]

    def Set_attr(self, keyval: int, attrval: Any) -> None:
        if keyval in _PREDEFINED or keyval in (UNIVERSE_SIZE, APPNUM):
            raise Exception(ERR_KEYVAL, f"Set_attr: {keyval} is a predefined key")
        key = _ctx().state.get("keyvals", {}).get(keyval)
        if key is None:
            raise Exception(ERR_KEYVAL, f"Set_attr: {keyval} is not a key of this process")
        attrs = self._attrs()
        if keyval in attrs:
            self.Delete_attr(keyval)
        attrs[keyval] = (key, attrval)

    def Delete_attr(self, keyval: int) -> None:
        held = self._attrs().pop(keyval, None)
        if held is None:
            raise Exception(ERR_KEYVAL, f"Delete_attr: no attribute {keyval} on this communicator")
        key, value = held
        if callable(key.delete_fn):
            _callback("delete", key.delete_fn, self, keyval, value)

    def _copy_attrs(self, dup: "Comm") -> None:
        """Gives `dup` the attributes its keys' copy functions copy."""
        for keyval, (key, value) in list(self._attrs().items()):
            fn = key.copy_fn
            if fn is None or fn is False:
                continue
            new = value if fn is True else _callback("copy", fn, self, keyval, value)
            if new is not NotImplemented:
                dup._attrs()[keyval] = (key, new)

    def _delete_attrs(self) -> None:
        for keyval in list(self._attrs()):
            self.Delete_attr(keyval)

    def Create_cart(self, dims: Sequence[int], periods: Optional[Sequence[bool]] = None, reorder: bool = False) -> "Cartcomm":
        ctx, me = self._me()
        dims = [int(d) for d in dims]
        if any(d <= 0 for d in dims):
            raise Exception(ERR_DIMS, f"dims {dims}")
        if periods is None or isinstance(periods, (bool, int, _np.integer)):
            periods = [bool(periods)] * len(dims)  # one flag for every dimension, as mpi4py takes it
        periods = [bool(p) for p in periods]
        if len(periods) != len(dims):
            raise UsageError(f"Create_cart: {len(periods)} periods for {len(dims)} dimensions")
        n = 1
        for d in dims:
            n *= d
        if n > self.Get_size():
            raise Exception(ERR_DIMS, f"a grid of {n} processes does not fit in a communicator of {self.Get_size()}")
        seqkey = self._next_key("cart")
        self._sync("Create_cart")
        if me >= n:
            return COMM_NULL
        context = ctx.runtime.new_context(seqkey)
        group = self._group if n == self.Get_size() else _shared_group(ctx, context, lambda: Group(self._group._ranks[:n]))
        return Cartcomm(group, context, dims, periods)

    def Cart_map(self, dims: Sequence[int], periods: Optional[Sequence[bool]] = None) -> int:
        """The caller's rank in a Cartesian grid of `dims` made from this
        communicator (ranks keep their order; UNDEFINED outside the grid)."""
        n = 1
        for d in dims:
            n *= int(d)
        me = self.Get_rank()
        return me if me < n else UNDEFINED

    def Graph_map(self, index: Sequence[int], edges: Sequence[int]) -> int:
        """The caller's rank in a graph of len(index) nodes made from this
        communicator (ranks keep their order; UNDEFINED outside it)."""
        me = self.Get_rank()
        nnodes = len(index) - 1 if len(index) and index[0] == 0 and len(index) > 1 else len(index)
        return me if me < nnodes else UNDEFINED

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.{type(self).__name__} size={len(self._group._ranks)} context={self._context}>"


class Intracomm(Comm):
    """An intra-communicator."""


class Topocomm(NeighborCalls, Intracomm):
    """A communicator with a topology: its neighbours in and out, and the
    neighbourhood collectives over them (`neighbor`)."""

    def _inout(self) -> Tuple[List[int], List[int]]:
        raise NotImplementedError

    @property
    def indegree(self) -> int:
        return len(self._inout()[0])

    @property
    def outdegree(self) -> int:
        return len(self._inout()[1])

    @property
    def inedges(self) -> List[int]:
        return self._inout()[0]

    @property
    def outedges(self) -> List[int]:
        return self._inout()[1]

    @property
    def inoutedges(self) -> Tuple[List[int], List[int]]:
        return self._inout()


def _topo_group(comm: Comm, ctx: Any, context: int, n: int) -> Group:
    """The group of a topology communicator of the first `n` ranks."""
    return comm._group if n == comm.Get_size() else _shared_group(ctx, context, lambda: Group(comm._group._ranks[:n]))


def _create_graph(self: Comm, index: Sequence[int], edges: Sequence[int], reorder: bool = False) -> Any:
    """MPI_Graph_create: node i's neighbours are edges[index[i-1]:index[i]]
    (index cumulative; a leading 0 is accepted too)."""
    ctx, me = self._me()
    index, edges = [int(i) for i in index], [int(e) for e in edges]
    if len(index) > 1 and index[0] == 0:
        index = index[1:]
    n = len(index)
    if n > self.Get_size() or any(b < a for a, b in zip([0] + index, index)) or (index and index[-1] != len(edges)):
        raise Exception(ERR_ARG, f"graph index {index} with {len(edges)} edges on {self.Get_size()} ranks")
    if any(not 0 <= e < n for e in edges):
        raise Exception(ERR_RANK, f"graph edges {edges} name a node outside 0..{n - 1}")
    seqkey = self._next_key("graph")
    self._sync("Create_graph")
    if me >= n:
        return COMM_NULL
    context = ctx.runtime.new_context(seqkey)
    return Graphcomm(_topo_group(self, ctx, context, n), context, index, edges)


def _create_dist_graph_adjacent(self: Comm, sources: Any, destinations: Any, sourceweights: Any = None,
                                destweights: Any = None, info: Any = None, reorder: bool = False) -> Any:
    """MPI_Dist_graph_create_adjacent: every rank names its own in- and
    out-neighbours (and their weights)."""
    ctx, me = self._me()
    src = [int(s) for s in (sources or [])]
    dst = [int(d) for d in (destinations or [])]
    for r in src + dst:
        if not 0 <= r < self.Get_size():
            raise Exception(ERR_RANK, f"neighbour {r} on {self.Get_size()} ranks")
    seqkey = self._next_key("dist_graph")
    self._sync("Create_dist_graph_adjacent")
    context = ctx.runtime.new_context(seqkey)
    def given(w: Any) -> bool:
        return w is not None and w is not UNWEIGHTED
    weighted = given(sourceweights) or given(destweights)
    for w, edges, what in ((sourceweights, src, "sources"), (destweights, dst, "destinations")):
        if w is WEIGHTS_EMPTY and edges:
            raise UsageError(f"Create_dist_graph_adjacent: WEIGHTS_EMPTY with {len(edges)} {what}")
    sw = [] if sourceweights is WEIGHTS_EMPTY or not given(sourceweights) else list(sourceweights)
    dw = [] if destweights is WEIGHTS_EMPTY or not given(destweights) else list(destweights)
    sw, dw = (sw, dw) if weighted else (None, None)
    return Distgraphcomm(self._group, context, src, dst, sw, dw)


def _create_dist_graph(self: Comm, sources: Sequence[int], degrees: Sequence[int], destinations: Sequence[int],
                       weights: Any = None, info: Any = None, reorder: bool = False) -> Any:
    """MPI_Dist_graph_create: any rank may name edges of any rank; each rank
    learns its in- and out-neighbours from everyone's lists."""
    ctx, me = self._me()
    edges, k = [], 0
    for s, deg in zip(sources, degrees):
        for j in range(deg):
            w = None if weights is None or weights is WEIGHTS_EMPTY or weights is UNWEIGHTED else weights[k + j]
            edges.append((int(s), int(destinations[k + j]), w))
        k += deg
    every = self.allgather(edges)
    src = [(s, w) for part in every for (s, d, w) in part if d == me]
    dst = [(d, w) for part in every for (s, d, w) in part if s == me]
    weighted = weights is not None and weights is not UNWEIGHTED
    return _create_dist_graph_adjacent(self, [s for s, _ in src], [d for d, _ in dst],
                                       [w for _, w in src] if weighted else None,
                                       [w for _, w in dst] if weighted else None)


Intracomm.Create_graph = _create_graph
Intracomm.Create_dist_graph_adjacent = _create_dist_graph_adjacent
Intracomm.Create_dist_graph = _create_dist_graph


class Graphcomm(Topocomm):
    """A communicator with a general graph topology (MPI_Graph_create)."""

    def __init__(self, group: Group, context: int, index: Sequence[int], edges: Sequence[int]):
        super().__init__(group, context)
        self._gindex, self._gedges = list(index), list(edges)

    def _clone(self, group: Group, context: int) -> "Comm":
        return Graphcomm(group, context, self._gindex, self._gedges)

    def Get_topology(self) -> int:
        return GRAPH

    def Get_dims(self) -> Tuple[int, int]:
        return len(self._gindex), len(self._gedges)

    dims = property(Get_dims)

    @property
    def nnodes(self) -> int:
        return len(self._gindex)

    @property
    def nedges(self) -> int:
        return len(self._gedges)

    @property
    def index(self) -> List[int]:
        return list(self._gindex)

    @property
    def edges(self) -> List[int]:
        return list(self._gedges)

    def Get_topo(self) -> Tuple[List[int], List[int]]:
        return list(self._gindex), list(self._gedges)

    topo = property(Get_topo)

    def Get_neighbors(self, rank: int) -> List[int]:
        if not 0 <= rank < len(self._gindex):
            raise Exception(ERR_RANK, f"rank {rank} in a graph of {len(self._gindex)} nodes")
        lo = self._gindex[rank - 1] if rank else 0
        return self._gedges[lo:self._gindex[rank]]

    def Get_neighbors_count(self, rank: int) -> int:
        return len(self.Get_neighbors(rank))

    @property
    def neighbors(self) -> List[int]:
        return self.Get_neighbors(self.Get_rank())

    @property
    def nneighbors(self) -> int:
        return len(self.neighbors)

    def _inout(self) -> Tuple[List[int], List[int]]:
        n = self.neighbors
        return n, list(n)


class Distgraphcomm(Topocomm):
    """A communicator with a distributed graph topology."""

    def __init__(self, group: Group, context: int, sources: Sequence[int], destinations: Sequence[int],
                 sourceweights: Any, destweights: Any):
        super().__init__(group, context)
        self._src, self._dst = list(sources), list(destinations)
        self._sw, self._dw = sourceweights, destweights

    def _clone(self, group: Group, context: int) -> "Comm":
        return Distgraphcomm(group, context, self._src, self._dst, self._sw, self._dw)

    def Get_topology(self) -> int:
        return DIST_GRAPH

    def Get_dist_neighbors_count(self) -> Tuple[int, int, bool]:
        return len(self._src), len(self._dst), self._sw is not None

    def Get_dist_neighbors(self) -> Tuple[List[int], List[int], Any]:
        weights = None if self._sw is None else (list(self._sw), list(self._dw or []))
        return list(self._src), list(self._dst), weights

    def _inout(self) -> Tuple[List[int], List[int]]:
        return list(self._src), list(self._dst)


def _create_from_group(cls: Any, group: Group, stringtag: str = "org.mpi4py", info: Any = None,
                       errhandler: Any = None) -> Intracomm:
    """A communicator of the ranks of `group`, made by those ranks alone
    (MPI_Comm_create_from_group); `stringtag` tells concurrent creations
    apart."""
    ctx = _ctx()
    if ctx.rank not in group._index:
        raise Exception(ERR_GROUP, "the calling rank is not in the group")
    k = (group._ranks, str(stringtag))
    n = _count(ctx, "from_group_seq", k)
    sub = Intracomm(Group(group._ranks), ctx.runtime.new_context(("create_from_group",) + k + (n,)))
    sub._bind()
    sub._sync("Create_from_group")
    return sub


Intracomm.Create_from_group = classmethod(_create_from_group)


class Cartcomm(Topocomm):
    """A communicator with a Cartesian topology (row-major ranks)."""

    _cart = True

    def __init__(self, group: Group, context: int, dims: Sequence[int], periods: Sequence[bool]):
        super().__init__(group, context)
        self._dims = list(dims)
        self._periods = list(periods)

    def _clone(self, group: Group, context: int) -> "Comm":
        return Cartcomm(group, context, self._dims, self._periods)

    def Get_topology(self) -> int:
        return CART

    def Get_dim(self) -> int:
        return len(self._dims)

    @property
    def dim(self) -> int:
        return len(self._dims)

    ndim = dim

    @property
    def dims(self) -> List[int]:
        return list(self._dims)

    @property
    def periods(self) -> List[int]:
        return [int(p) for p in self._periods]

    @property
    def coords(self) -> List[int]:
        return self.Get_coords(self.Get_rank())

    @property
    def topo(self) -> Tuple[List[int], List[int], List[int]]:
        return self.Get_topo()

    def Get_topo(self) -> Tuple[List[int], List[int], List[int]]:
        return list(self._dims), [int(p) for p in self._periods], self.Get_coords(self.Get_rank())

    def Get_coords(self, rank: int) -> List[int]:
        if not 0 <= rank < self.Get_size():
            raise Exception(ERR_RANK, f"rank {rank}")
        out = []
        for d in reversed(self._dims):
            out.append(rank % d)
            rank //= d
        return out[::-1]

    def Get_cart_rank(self, coords: Sequence[int]) -> int:
        if len(coords) != len(self._dims):
            raise Exception(ERR_ARG, f"{len(coords)} coordinates for {len(self._dims)} dimensions")
        r = 0
        for c, d, p in zip(coords, self._dims, self._periods):
            if p:
                c %= d
            elif not 0 <= c < d:
                raise Exception(ERR_RANK, f"coordinate {c} outside a non-periodic dimension of {d}")
            r = r * d + c
        return r

    def Shift(self, direction: int, disp: int) -> Tuple[int, int]:
        if not 0 <= direction < len(self._dims):
            raise Exception(ERR_DIMS, f"direction {direction}")
        me = self.Get_coords(self.Get_rank())

        def at(delta: int) -> int:
            c = list(me)
            c[direction] += delta
            d = self._dims[direction]
            if self._periods[direction]:
                c[direction] %= d
            elif not 0 <= c[direction] < d:
                return PROC_NULL
            return self.Get_cart_rank(c)

        return at(-disp), at(disp)

    def _inout(self) -> Tuple[List[int], List[int]]:
        """Per dimension, the neighbour at -1 then at +1 (PROC_NULL off a
        non-periodic edge): the order of MPI's Cartesian neighbourhood."""
        out = []
        for i in range(len(self._dims)):
            src, dst = self.Shift(i, 1)
            out += [src, dst]
        return out, list(out)

    def Sub(self, remain_dims: Sequence[bool]) -> "Cartcomm":
        if len(remain_dims) != len(self._dims):
            raise Exception(ERR_ARG, "remain_dims and dims differ in length")
        me = self.Get_coords(self.Get_rank())
        color = 0
        for c, d, keep in zip(me, self._dims, remain_dims):
            if not keep:
                color = color * d + c
        key = 0
        for c, d, keep in zip(me, self._dims, remain_dims):
            if keep:
                key = key * d + c
        sub = self.Split(color, key)
        dims = [d for d, k in zip(self._dims, remain_dims) if k]
        periods = [p for p, k in zip(self._periods, remain_dims) if k]
        return Cartcomm(sub._group, sub._context, dims or [1], periods or [False])


def Compute_dims(nnodes: int, dims: Any) -> List[int]:
    """MPI_Dims_create: a balanced grid of `nnodes` in len(dims) dimensions
    (or `dims` dimensions if an int); nonzero entries are kept."""
    dims = [0] * dims if isinstance(dims, int) else list(dims)
    fixed = 1
    for d in dims:
        if d < 0:
            raise Exception(ERR_DIMS, f"negative dimension {d}")
        if d:
            fixed *= d
    free = [i for i, d in enumerate(dims) if d == 0]
    if nnodes % fixed:
        raise Exception(ERR_DIMS, f"{nnodes} is not divisible by the fixed dimensions' product {fixed}")
    rest = nnodes // fixed
    if not free:
        if rest != 1:
            raise Exception(ERR_DIMS, f"dims {dims} do not multiply to {nnodes}")
        return dims
    # Prime factors, largest first, each to the currently smallest dimension.
    factors, n, p = [], rest, 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    if n > 1:
        factors.append(n)
    sizes = [1] * len(free)
    for f in sorted(factors, reverse=True):
        i = sizes.index(min(sizes))
        sizes[i] *= f
    sizes.sort(reverse=True)
    for i, s in zip(free, sizes):
        dims[i] = s
    return dims


TAG_UB_KEYVAL = 1001

#: The predefined attributes of every communicator (UNIVERSE_SIZE is the run's).
_PREDEFINED = {TAG_UB_KEYVAL: TAG_UB, LASTUSEDCODE: ERR_LASTCODE, IO: ANY_SOURCE, WTIME_IS_GLOBAL: True,
               HOST: PROC_NULL}

#: The user error handlers a process may hold (mpi4py's callback table).

#: The first key Create_keyval hands out (above the predefined ones).
_FIRST_USER_KEYVAL = 2000


class _Keyval:
    """An attribute key's callbacks."""

    __slots__ = ("copy_fn", "delete_fn")

    def __init__(self, copy_fn: Any, delete_fn: Any) -> None:
        self.copy_fn, self.delete_fn = copy_fn, delete_fn


def _callback(what: str, fn: Any, comm: "Comm", keyval: int, value: Any) -> Any:
    """Calls an attribute's copy or delete function; what it raises is
    printed and becomes MPI_ERR_OTHER, as an MPI library reports a failed
    callback."""
    try:
        return fn(comm, keyval, value)
    except BaseException:
        _traceback.print_exc()
        raise Exception(ERR_OTHER, f"the {what} function of attribute {keyval} raised") from None


COMM_NULL = Intracomm(Group(()), -1, "MPI_COMM_NULL")


class Intercomm(InterCollectives, Comm):
    """An inter-communicator: a local group (the calling rank's; its rank
    and size) and a remote group, the ranks of point-to-point calls.
    Made by ``Intracomm.Create_intercomm``; ``Merge`` makes an
    intra-communicator of both groups. Point-to-point calls, ``Barrier``,
    ``Dup``, ``Split``, ``Merge``, ``Create_from_groups``, ``Free`` and the
    collectives MPI defines on one (`intercoll`; their nonblocking and
    persistent forms too) are simulated; ``Scan`` and ``Exscan``, which it
    does not define, raise MPI_ERR_COMM. ``Intercomm()`` is a null handle."""

    _inter = True

    def __init__(self, comm: Any = None):
        if isinstance(comm, Intercomm):
            super().__init__(comm._group, comm._context, comm._name)
            self._remote, self._local = comm._remote, comm._local
            self._bind()
            return
        if comm is not None and not (isinstance(comm, Comm) and not comm):
            raise ArgumentTypeError(f"Intercomm(): expecting an intercommunicator, got {type(comm).__name__}")
        self._remote, self._local = Group(()), None
        super().__init__()

    @classmethod
    def _make(cls, local: Group, remote: Group, context: int, local_context: int) -> "Intercomm":
        ic = cls()
        ic._group, ic._remote, ic._context, ic._name = local, remote, context, ""
        # The local group's own communicator, for what a collective does
        # within a group (its context: the next pair).
        ic._local = Intracomm(local, local_context)
        ic._bind()
        return ic

    def _bind(self) -> None:
        # The general point-to-point path, with the remote group's ranks.
        self._p2p = None
        self._p2p_group = getattr(self, "_remote", None)

    @property
    def _peers(self) -> Group:
        return self._remote

    def _world_rank(self, r: int, what: str, allow_null: bool = True, allow_any: bool = False) -> int:
        ranks = self._remote._ranks
        if r.__class__ is int and 0 <= r < len(ranks):
            return ranks[r]
        if allow_null and r == PROC_NULL:
            return PROC_NULL
        if allow_any and r == ANY_SOURCE:
            return ANY_SOURCE
        raise Exception(ERR_RANK, f"{what} {r} in an intercommunicator whose remote group has {len(ranks)} ranks")

    def Get_remote_group(self) -> Group:
        if self._context < 0:
            raise Exception(ERR_COMM, "Get_remote_group on MPI_COMM_NULL")
        return Group(self._remote)

    @property
    def remote_group(self) -> Group:
        return self.Get_remote_group()

    def Get_remote_size(self) -> int:
        if self._context < 0:
            raise Exception(ERR_COMM, "Get_remote_size on MPI_COMM_NULL")
        return len(self._remote._ranks)

    @property
    def remote_size(self) -> int:
        return self.Get_remote_size()

    def _leaders(self, what: str, data: Any) -> Any:
        """Local rank 0 trades `data` with the remote group's rank 0 (on the
        collective context); every local rank gets the remote side's by a
        broadcast in its group. Entered by every rank of both groups."""
        ctx, me = self._me()
        got = None
        if me == 0:
            req = self._irecv_into(_core.MAX_MESSAGE_BYTES, 0, 0, lambda st, d: d, ctx_off=1, ctx=ctx)
            send = self._isend_bytes(_dump(data), 0, 0, 0, what, ctx_off=1)
            _wait_all([req, send], f"MPI.Intercomm.{what}()")
            got = _load(req._obj)
        return self._local.bcast(got, 0)

    def Barrier(self) -> None:
        """Every rank of both groups has entered before any leaves: a
        barrier in each group, the leaders' exchange, a broadcast."""
        self._local.Barrier()
        self._leaders("Barrier", None)

    def barrier(self) -> None:
        self.Barrier()

    def _agree(self, what: str, key: Tuple) -> Tuple[int, int]:
        """The context of a communicator made from this one (the same on
        both sides: named by this one's context and how many were made
        from it), and of its local group's own communicator."""
        self._local._sync(what)
        self._leaders(what, None)
        n = _count(_ctx(), "comm_seq", self._context)
        rt = _ctx().runtime
        return rt.new_context((self._context, what, n) + key), rt.new_context((self._context, what, n, "local") + key
                                                                              + (self._group._ranks,))

    def Dup(self, info: Any = None) -> "Intercomm":
        if self._context < 0:
            raise Exception(ERR_COMM, "Dup on MPI_COMM_NULL")
        context, local = self._agree("Dup", ())
        c = Intercomm._make(self._group, self._remote, context, local)
        c._name = self._name
        self._copy_attrs(c)
        return self._inherit_errhandler(c)

    Clone = Dup

    def Split(self, color: int = 0, key: int = 0) -> "Intercomm":
        """Each group split by colour and key (its own Split); a new
        intercommunicator joins the part of each group with the same
        colour (COMM_NULL where either side has none of it). The leaders
        trade their groups' (colour, key) tables, then broadcast them."""
        if self._context < 0:
            raise Exception(ERR_COMM, "Split on MPI_COMM_NULL")
        ctx, me = self._me()
        mine = self._local.allgather((int(color), int(key)))
        theirs = self._leaders("Split", mine)
        part = self._local.Split(color, key)
        n = _count(ctx, "comm_seq", self._context)
        if color == UNDEFINED:
            return COMM_NULL
        remote = [w for (c, k), w in sorted(((ck, w) for ck, w in zip(theirs, self._remote._ranks)
                                             if ck[0] == color), key=lambda t: (t[0][1], self._remote._index[t[1]]))]
        if not remote:
            part.Free()
            return COMM_NULL
        context = ctx.runtime.new_context((self._context, "split", n, int(color)))
        remote_group = _shared_group(ctx, ("remote", context, part._group._ranks), lambda: Group(remote))
        return self._inherit_errhandler(Intercomm._make(part._group, remote_group, context, part._context))

    def Merge(self, high: bool = False) -> "Intracomm":
        """An intra-communicator of both groups: the group that asked for
        `high` false first; if both asked the same, the group whose rank 0
        has the lower world rank."""
        if self._context < 0:
            raise Exception(ERR_COMM, "Merge on MPI_COMM_NULL")
        self._local._sync("Merge")
        theirs = self._leaders("Merge", bool(high))
        mine = bool(high)
        if mine != theirs:
            first = not mine
        else:
            first = self._group._ranks[0] < self._remote._ranks[0]
        order = self._group._ranks + self._remote._ranks if first else self._remote._ranks + self._group._ranks
        n = _count(_ctx(), "comm_seq", self._context)
        context = _ctx().runtime.new_context((self._context, "merge", n))
        return self._inherit_errhandler(Intracomm(_shared_group(_ctx(), context, lambda: Group(order)), context))

    def Free(self) -> None:
        if self._context >= 0:
            self._delete_attrs()
        self._freed = True
        self._context = -1
        self._bind()

    def __repr__(self) -> str:
        return (f"<mpi4py.MPI.Intercomm size={len(self._group._ranks)} remote_size={len(self._remote._ranks)} "
                f"context={self._context}>")


def _create_intercomm(self: Comm, local_leader: int, peer_comm: Comm, remote_leader: int, tag: int = 0) -> Intercomm:
    """MPI_Intercomm_create: the local leader trades its group's world
    ranks with the remote leader over `peer_comm` (tag `tag`), then
    broadcasts the remote group in the local communicator."""
    ctx, me = self._me()
    n = self.Get_size()
    if not isinstance(local_leader, (int, _np.integer)) or not 0 <= local_leader < n:
        raise Exception(ERR_RANK, f"Create_intercomm: local_leader {local_leader} in a communicator of size {n}")
    told = None
    if me == local_leader:
        if not isinstance(peer_comm, Comm) or not peer_comm:
            raise Exception(ERR_COMM, "Create_intercomm: the local leader needs a peer communicator")
        told = (peer_comm.sendrecv(list(self._group._ranks), remote_leader, tag, None, remote_leader, tag), tag)
    # (peer_comm, remote_leader and tag count at the local leader only.)
    remote, tag = self.bcast(told, local_leader)
    mine = tuple(self._group._ranks)
    if set(mine) & set(remote):
        raise Exception(ERR_COMM, "Create_intercomm: the local and remote groups overlap")
    low, high = sorted((mine, tuple(remote)))
    k = (low, high, tag)
    count = _count(ctx, "intercomm_seq", k)
    context = ctx.runtime.new_context(("intercomm",) + k + (count,))
    local = ctx.runtime.new_context(("intercomm local",) + k + (count, mine))
    remote_group = _shared_group(ctx, ("remote", context, mine), lambda: Group(list(remote)))
    return self._inherit_errhandler(Intercomm._make(self._group, remote_group, context, local))


Intracomm.Create_intercomm = _create_intercomm


def _intercomm_from_groups(cls: Any, local_group: Group, local_leader: int, remote_group: Group,
                           remote_leader: int, stringtag: str = "org.mpi4py", info: Any = None,
                           errhandler: Any = None) -> Intercomm:
    """MPI_Intercomm_create_from_groups: the local group's communicator
    made from its group (Create_from_group), then the leaders' exchange;
    every rank names both groups, so the new context needs no more."""
    ctx = _ctx()
    for name, g in (("local", local_group), ("remote", remote_group)):
        if not isinstance(g, Group) or not g:
            raise Exception(ERR_GROUP, f"Create_from_groups: the {name} group is null")
    n = len(local_group._ranks)
    if not isinstance(local_leader, (int, _np.integer)) or not 0 <= local_leader < n:
        raise Exception(ERR_RANK, f"Create_from_groups: local_leader {local_leader} in a group of {n}")
    if not isinstance(remote_leader, (int, _np.integer)) or not 0 <= remote_leader < len(remote_group._ranks):
        raise Exception(ERR_RANK, f"Create_from_groups: remote_leader {remote_leader} in a group of "
                                  f"{len(remote_group._ranks)}")
    mine, theirs = tuple(local_group._ranks), tuple(remote_group._ranks)
    if set(mine) & set(theirs):
        raise Exception(ERR_GROUP, "Create_from_groups: the local and remote groups overlap")
    local = _create_from_group(Intracomm, local_group, stringtag)
    low, high = sorted((mine, theirs))
    k = ("groups", low, high, str(stringtag))
    count = _count(ctx, "intercomm_seq", k)
    context = ctx.runtime.new_context(("intercomm",) + k + (count,))
    ic = Intercomm._make(local._group, _shared_group(ctx, ("remote", context, mine), lambda: Group(list(theirs))),
                         context, local._context)
    ic._leaders("Create_from_groups", None)
    return ic


Intercomm.Create_from_groups = classmethod(_intercomm_from_groups)


# MPI_COMM_NULL: every call raises MPI_ERR_COMM.
_guard(Comm, ("Free", "Get_size", "Get_rank", "Is_inter", "Is_intra", "Get_group", "Get_topology", "Get_attr",
              "Get_errhandler", "Set_errhandler", "Dup", "Create", "Split", "Disconnect"),
       lambda c: c._context < 0, ERR_COMM, "MPI_COMM_NULL")
