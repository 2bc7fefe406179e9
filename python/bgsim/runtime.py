"""Running MPI rank programs on a simulated machine.

Every rank is a greenlet. A rank runs Python code in zero simulated time
until an MPI call has to wait; it then blocks on its requests in the core
(``_core.World.block``) and switches to the scheduler. When every started
rank is blocked or finished, the scheduler lets the core advance simulated
time until some blocked ranks may go on (``World.run``) and resumes them in
rank order. Runs are deterministic: the same program, machine and seed give
the same simulated times and the same output.
"""

from __future__ import annotations

import gc
import itertools
import math
import os
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence

import greenlet
import numpy as np

from . import _core, memory
from . import progress as _progress
from .errors import ArgumentTypeError, DeadlockError, MemoryLimitError, RankError, RankExit, StateError, UsageError


class _RankGreenlet(greenlet.greenlet):
    __slots__ = ("rank", "ctx")


class CollGreenlet(greenlet.greenlet):
    """A nonblocking collective in progress on its rank
    (`bgsim.mpishim.nbc`): it runs inside the rank's MPI calls, and where
    the collective would wait it hands back to the rank's own flow what it
    waits for."""

    __slots__ = ("rank", "ctx")


class _Finished:
    """What a rank's greenlet returns to the hub when its program is done."""

    __slots__ = ("rank",)

    def __init__(self, rank: int) -> None:
        self.rank = rank


@dataclass
class RankContext:
    """What the MPI shim knows about the rank running now."""

    rank: int
    runtime: "Runtime"
    #: The MPI call the rank is in (a string, a function making one, or a
    #: format and its arguments) and the caller's frame; formatted only for
    #: a deadlock report.
    call: Any = ""
    frame: Any = None
    # MPI state the shim keeps per rank (communicator sequence numbers, the
    # attached buffer, the world communicator objects ...).
    state: Dict[str, Any] = field(default_factory=dict)
    finished_at: Optional[int] = None
    cpu_mark: float = 0.0
    result: Any = None
    #: The run's `_core.World` (the same as runtime.world, one lookup less).
    world: Any = None
    #: The rank's nonblocking collectives in progress (`bgsim.mpishim.nbc`;
    #: None until it starts one): while there are some, every wait of the
    #: rank advances them.
    nbcs: Optional[List[Any]] = None


#: How often (wall seconds) a run looks at its resident memory.
MEMORY_CHECK_S = 0.5
#: How many times in a row a waiting rank may run the simulation itself
#: before the scheduler takes a turn (`Runtime.suspend`).
PARK_ROUNDS = 64

#: A rank `World.run` returns with this bit set is in a collective the core
#: runs for it (the core's `mpi::agent::AGENT_RANK`).
AGENT_RANK = _core.AGENT_RANK

#: The context of the rank the scheduler switched to, while MPI calls may
#: take their fast path (no host CPU time to charge); None otherwise.
fast: Optional[RankContext] = None

#: Buffer modes of a run: "full" (messages carry the buffers' contents) or
#: "size-only" (messages of buffer calls carry only their size; receive
#: buffers are left as they are; `bgsim.run(buffers=...)`).
BUFFER_MODES = ("full", "size-only")

#: Whether the running run's buffers are size-only (read at every buffer call).
size_only = False


_current_runtime: Optional["Runtime"] = None


def rank_own(key: str, make: Callable[[], Any], outside: Any) -> Any:
    """The calling rank's own `key` of its state (made by `make()` the
    first time), as a process of its own would hold it; `outside` when no
    rank is running."""
    ctx = getattr(greenlet.getcurrent(), "ctx", None)
    if ctx is None:
        return outside
    v = ctx.state.get(key)
    if v is None:
        v = ctx.state[key] = make()
    return v


def current() -> RankContext:
    """The context of the calling rank (raises outside a simulated program)."""
    g = greenlet.getcurrent()
    ctx = getattr(g, "ctx", None)
    if ctx is None:
        if _current_runtime is not None and threading.current_thread() is not threading.main_thread():
            raise StateError("bgsim: MPI called from a thread a rank started: the simulated MPI provides "
                             "MPI_THREAD_FUNNELED (only a rank's main flow may call MPI)")
        raise StateError("bgsim: MPI called outside a simulated rank (run the program with `bgsim run` or bgsim.run)")
    return ctx


_ABSENT = object()


class _RankModules:
    """Each rank's own copy of the program's modules (those under the
    program's directory) and of the simulated mpi4py package, as separate
    processes would have: a module's globals set by one rank are never seen
    by another. The modules a rank imported are put in ``sys.modules``
    while it runs and taken out when it waits; other modules are shared.
    Costs one length check per switch for a program that imports none."""

    #: Always the rank's own once imported: mpi4py.MPI, which the simulated
    #: mpi4py's finder gives (`mpi4py_package._Finder`: importing it is the rank's
    #: import of MPI).
    OWN = frozenset(("mpi4py.MPI",))
    #: In sys.modules for every rank until one takes them out or replaces
    #: them (``del sys.modules["mpi4py.rc"]``): then that rank's alone.
    SHARED = ("mpi4py", "mpi4py.rc")

    def __init__(self, directory: str, nranks: int):
        self.prefix = os.path.join(os.path.realpath(directory), "")
        self.saved = {k: m for k, m in sys.modules.items() if self._private(m)}
        for k in self.saved:
            del sys.modules[k]
        self.per_rank: List[Optional[Dict[str, Any]]] = [None] * nranks
        self.known = set(sys.modules)
        #: Each rank's __main__ (a program file run by `bgsim run`), and the
        #: launcher's, put back while no rank runs.
        self.mains: List[Optional[Any]] = [None] * nranks
        self.launcher_main = sys.modules.get("__main__")
        #: The SHARED entries, and what a rank made of them (_ABSENT: removed).
        self.shared = {k: sys.modules[k] for k in self.SHARED if k in sys.modules}
        self.changed: Dict[int, Dict[str, Any]] = {}

    #: bgsim's own package is shared whatever directory the program is in.
    _OWN = os.path.join(os.path.dirname(os.path.realpath(__file__)), "")

    def _private(self, module: Any) -> bool:
        f = getattr(module, "__file__", None)
        if not isinstance(f, str):
            return False
        f = os.path.realpath(f)
        return (f.startswith(self.prefix) and not f.startswith(self._OWN)
                and "site-packages" not in f and "dist-packages" not in f)

    def set_main(self, r: int, module: Any) -> None:
        """Makes `module` rank `r`'s ``__main__`` (it is running)."""
        self.mains[r] = module
        sys.modules["__main__"] = module

    def enter(self, r: int) -> None:
        mine = self.per_rank[r]
        if mine:
            sys.modules.update(mine)
        main = self.mains[r]
        if main is not None:
            sys.modules["__main__"] = main
        if self.changed:
            for k, m in self.changed.get(r, {}).items():
                if m is _ABSENT:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = m

    def leave(self, r: int) -> None:
        if self.mains[r] is not None:
            sys.modules["__main__"] = self.launcher_main
        mine = self.per_rank[r]
        if mine:
            for k in mine:
                sys.modules.pop(k, None)
        if self.changed or len(sys.modules) != len(self.known):
            self._keep_shared(r)
        extra = len(sys.modules) - len(self.known)
        if extra == 0:
            return
        if extra > 0:
            # What the rank imported was added last (sys.modules keeps the
            # order of insertion): that tail is enough unless a module was
            # taken out or put back meanwhile.
            tail = list(itertools.islice(reversed(sys.modules), extra))
            if not any(k in self.known for k in tail):
                self._sort(r, tail)
                if len(sys.modules) == len(self.known):
                    return
        self._sort(r, list(sys.modules.keys() - self.known))
        self.known &= sys.modules.keys()

    def _keep_shared(self, r: int) -> None:
        """Notes which SHARED entries the rank took out or replaced (only
        looked for when sys.modules changed size, or the rank or another
        changed one before) and puts the shared ones back."""
        for k, m in self.shared.items():
            now = sys.modules.get(k, _ABSENT)
            if now is not m:
                self.changed.setdefault(r, {})[k] = now
                sys.modules[k] = m

    def _sort(self, r: int, names: List[str]) -> None:
        """Takes the rank's own of the modules `names` out of sys.modules
        (into its copy); the others are shared from now on."""
        for k in names:
            m = sys.modules[k]
            if k in self.OWN or self._private(m):
                mine = self.per_rank[r]
                if mine is None:
                    mine = self.per_rank[r] = {}
                mine[k] = sys.modules.pop(k)
            else:
                self.known.add(k)

    def close(self) -> None:
        """Puts back the modules of before the run."""
        for mine in self.per_rank:
            for k in mine or ():
                sys.modules.pop(k, None)
        sys.modules.update(self.saved)
        if self.launcher_main is not None:
            sys.modules["__main__"] = self.launcher_main


class Runtime:
    """The scheduler of one run."""

    def __init__(self, world: "_core.World", cpu_factor: Optional[float] = None, progress: bool = False,
                 seed: int = 1, memory_limit: Optional[int] = None, private_dir: Optional[str] = None,
                 buffers: str = "full"):
        self.world = world
        if buffers not in BUFFER_MODES:
            raise UsageError(f"buffers = {buffers!r}: allowed {', '.join(BUFFER_MODES)}")
        self.size_only = buffers == "size-only"
        #: Arrays every rank shares (`bgsim.shared_array`), by (shape, dtype, key).
        self.shared_arrays: Dict[Any, Any] = {}
        #: Ranks that called sys.exit with a failure status, in order: (rank, code).
        self.exited: List[tuple] = []
        self.modules = _RankModules(private_dir, world.nranks) if private_dir else None
        self.seed = seed
        #: The memory this process may use (None: not watched).
        self.memory_limit = memory_limit
        #: The machine's hardware components (read once: collectives ask at every call).
        self.components = frozenset(world.components)
        self.faulty_torus = world.faulty_torus
        self.torus_dims = world.torus
        # Collectives: the algorithm per operation ("auto" or a name), what
        # each call used, argument checks across ranks, hardware operations.
        self.coll_choice: Dict[str, str] = dict(world.collectives())
        self.torus_mpi = world.torus_algorithms
        #: Per communicator context: whether it has one rank on every node.
        self.every_node: Dict[int, bool] = {}
        self.coll_stats: Dict[str, Dict[str, int]] = {}
        self.coll_warned: set = set()
        self.coll_checks: Dict[Any, list] = {}
        #: Data every rank of one collective call shares (keyed by the call), e.g. allgather_records.
        self.shared: Dict[Any, list] = {}
        self.hw_data: Dict[Any, dict] = {}
        self._hw_keys: Dict[Any, int] = {}
        self.deposit_ids: Dict[Any, int] = {}
        self.nranks = world.nranks
        self.cpu_factor = cpu_factor
        self.ctxs = [RankContext(r, self, world=world) for r in range(self.nranks)]
        self.greenlets: List[Optional[_RankGreenlet]] = []
        #: Ranks other processes of an MPI job run (`World.local_ranks`).
        self.remote: set = set()
        self.hub: Optional[greenlet.greenlet] = None
        #: Ranks due to run, in order (the scheduler's queue).
        self.runnable: "deque[int]" = deque()
        #: Whether a waiting rank may advance the simulation itself (`suspend`),
        #: and how many times in a row it has.
        self.may_park = False
        self.parked = 0
        #: Whether a parked rank may switch straight to the one rank it
        #: made ready (no per-rank modules to swap, no CPU time to mark).
        self.direct = False
        self.contexts_next = 3  # 0/1: COMM_WORLD (pt2pt, collectives); 2: COMM_SELF
        # Groups of communicators by context, shared by their members.
        self.shared_groups: dict = {}
        self.context_table: Dict[Any, int] = {}
        self.progress = progress
        #: The run's timeline, when one is recorded (bgsim.timeline).
        self.timeline: Optional[Any] = None
        self.ticks_per_second = world.ticks_per_second
        self.alignment = world.alignment
        self.python_wall = 0.0

    # -- used by the shim --

    def new_context(self, key: Any) -> int:
        """A context id pair (pt2pt, collective) for a communicator that the
        ranks creating it all name by the same `key`."""
        c = self.context_table.get(key)
        if c is None:
            c = self.contexts_next
            self.contexts_next += 2
            self.context_table[key] = c
        return c

    def hw_key(self, key: Any) -> int:
        """A dense integer naming a hardware collective operation."""
        k = self._hw_keys.get(key)
        if k is None:
            k = self._hw_keys[key] = len(self._hw_keys)
        return k

    def wait(self, ctx: RankContext, reqs: Sequence[int], need: int, what: str = "wait",
             since: Optional[int] = None, mpi: bool = True) -> None:
        """Blocks the calling rank until `need` of `reqs` are done. On a
        timeline the blocked time is a slice named `what` (wait, or
        compute), from `since` (ticks; default: now). `mpi`: a wait inside
        an MPI call, which advances the rank's nonblocking collectives
        (application compute does not)."""
        tl = self.timeline
        if tl is not None and greenlet.getcurrent().__class__ is CollGreenlet:
            tl = None  # a nonblocking collective's waits overlap its rank's own
        t0 = self.world.rank_time(ctx.rank) if tl is not None and since is None else since
        self.block(ctx, reqs if reqs.__class__ is list else list(reqs), need, mpi)
        if tl is not None:
            t1 = tl.now(ctx.rank)
            if t1 > t0:
                tl.slice(ctx.rank, what, what, t0, t1)

    def block(self, ctx: RankContext, reqs: List[int], need: int, mpi: bool = True) -> None:
        """Returns once `need` of the core requests `reqs` of the calling
        rank are done: the rank waits in the core meanwhile, and, in an
        MPI call (`mpi`), advances its nonblocking collectives in progress
        (`_nbc_block`)."""
        if ctx.nbcs and (mpi or greenlet.getcurrent().__class__ is CollGreenlet):
            _nbc_block(ctx, reqs, need)
        elif self.world.block(ctx.rank, reqs, need):
            self.suspend(ctx.rank)

    def combine(self, ctx: RankContext, nbytes: int) -> None:
        """A reduction's local combine of `nbytes` of result on the calling
        rank's core (`node.combine_bytes_per_cycle`); returns when it is
        done."""
        self._memory_work(ctx, nbytes, "combine")

    def pack(self, ctx: RankContext, nbytes: int) -> None:
        """MPI's pack (or unpack) of `nbytes` of a message whose datatype
        is not contiguous, on the calling rank's core
        (`node.copy_bytes_per_cycle`); returns when it is done."""
        self._memory_work(ctx, nbytes, "pack")

    def _memory_work(self, ctx: RankContext, nbytes: int, what: str) -> None:
        w = self.world
        t0 = w.rank_time(ctx.rank) if self.timeline is not None else None
        req = getattr(w, what)(ctx.rank, nbytes)
        self.wait(ctx, [req], 1, what, t0)
        w.release(req)

    def suspend(self, rank: int, ready: Optional[List[int]] = None) -> None:
        """The one way a rank waits: the calling rank is blocked in the
        core; returns when it may go on. `ready`: what a run of the
        simulation the core already made for it returned (a blocking fast
        call's `Blocked.ready`); else, with no other rank due, the rank
        runs the simulation itself (`may_run`). If that run makes it alone
        ready it goes on at once (a ping-pong's sender, say), without the
        two switches through the scheduler; if it makes one other rank
        alone ready, that rank runs next, switched to directly; else the
        scheduler runs the ranks that are ready, and does its progress and
        memory duties."""
        if ready is None:
            if not self.may_run():
                self.hub.switch()
                return
            try:
                ready = self.world.run()
            except DeadlockError:
                # The scheduler finds it again and reports it.
                self.hub.switch()
                return
        if len(ready) == 1:
            other = ready[0]
            if other == rank:
                return
            if other < AGENT_RANK and self.direct:
                global fast
                c = self.ctxs[other]
                fast = c if not c.nbcs else None
                self.greenlets[other].switch()
                return
        self.runnable.extend(ready)
        self.hub.switch()

    def may_run(self) -> bool:
        """Whether a rank about to wait may run the simulation itself
        (see `suspend`): then it counts as one of at most PARK_ROUNDS runs
        in a row before the scheduler takes a turn."""
        if self.runnable or not self.may_park or self.parked >= PARK_ROUNDS:
            return False
        self.parked += 1
        return True

    def charge_host_cpu(self, ctx: RankContext) -> None:
        """With a CPU factor: charge the host CPU time the rank used since
        its last MPI call as simulated compute."""
        if self.cpu_factor:
            now = time.process_time()
            spent = (now - ctx.cpu_mark) * self.cpu_factor
            if spent > 0:
                t0 = self.world.rank_time(ctx.rank)
                req = self.world.compute(ctx.rank, int(spent * self.ticks_per_second))
                self.wait(ctx, [req], 1, "compute", t0, mpi=False)
                self.world.release(req)
            ctx.cpu_mark = time.process_time()

    def poll(self, ctx: RankContext, call: str) -> None:
        """A poll that found nothing (MPI_Test, MPI_Iprobe ...): the rank's
        core spends the poll's cost and the other ranks run meanwhile, so a
        polling loop ends when what it polls for arrives, as on the machine."""
        self.charge_host_cpu(ctx)
        req = self.world.poll(ctx.rank)
        ctx.call, ctx.frame = call, sys._getframe(2)
        self.wait(ctx, [req], 1)
        self.world.release(req)

    def seconds(self, ticks: int) -> float:
        return ticks / self.ticks_per_second

    # -- the run --

    def run(self, main: Callable[[], Any]) -> None:
        global _current_runtime
        if _current_runtime is not None:
            raise StateError("bgsim: a simulated run is already in progress in this process")
        _current_runtime = self
        global size_only
        size_only = self.size_only
        # Thousands of ranks' greenlets, frames and requests would make each
        # full pass of Python's cycle collector long, and the per-message
        # objects would start one every few hundred messages: the objects
        # that exist once every rank has started are left out of collection
        # (`_run`), and young objects are collected less often (cycles are
        # still collected).
        thresholds = gc.get_threshold()
        gc.set_threshold(max(thresholds[0], 20_000), thresholds[1], thresholds[2])
        try:
            self._run(main)
        finally:
            global fast
            fast = None
            size_only = False
            _current_runtime = None
            if self.modules is not None:
                self.modules.close()
            gc.set_threshold(*thresholds)
            gc.unfreeze()

    def _run(self, main: Callable[[], Any]) -> None:
        self.hub = greenlet.getcurrent()
        # Every rank, unless the ranks run on the processes of an MPI job:
        # then this process's.
        local = self.world.local_ranks if self.world.process[1] > 1 else range(self.nranks)
        self.local = len(local)
        self.remote = set() if len(local) == self.nranks else set(range(self.nranks)) - set(local)
        self.greenlets = [None] * self.nranks
        for r in local:
            g = _RankGreenlet(self._body(main, self.ctxs[r]), parent=self.hub)
            g.rank = r
            g.ctx = self.ctxs[r]
            self.greenlets[r] = g
        started = False
        runnable = self.runnable
        runnable.extend(local)
        finished = 0
        last_report = last_check = time.monotonic()
        cpu = bool(self.cpu_factor)
        bar = _progress.Bar("bgsim run", fraction=False) if _progress.wanted(self.progress) else None
        try:
            self._loop(runnable, started, finished, last_report, last_check, cpu, bar)
        finally:
            if bar is not None:
                bar.close()

    def _loop(self, runnable: "deque[int]", started: bool, finished: int, last_report: float, last_check: float,
              cpu: bool, bar: "Optional[_progress.Bar]") -> None:
        global fast
        fast_path = not self.size_only  # size-only sends take the general path
        while True:
            t0 = time.perf_counter()
            # The core's runs from waiting ranks (`suspend`) are not Python's.
            parked_wall = self.world.run_wall
            while runnable:
                r = runnable.popleft()
                if r >= AGENT_RANK:
                    # In a collective the core runs: advanced there; resumed
                    # here once it is done.
                    r ^= AGENT_RANK
                    if self.world.coll_step(r):
                        continue
                g = self.greenlets[r]
                if cpu:
                    self.ctxs[r].cpu_mark = time.process_time()
                elif fast_path:
                    c = self.ctxs[r]
                    # (The fast calls wait in the core, where a rank's
                    # nonblocking collectives would not advance.)
                    fast = c if not c.nbcs else None
                mods = self.modules
                if mods is not None:
                    mods.enter(r)
                try:
                    done = g.switch()
                except BaseException as e:  # the rank's exception, re-raised in the hub
                    self._abort()
                    if isinstance(e, (KeyboardInterrupt, RankExit)):
                        raise
                    # The rank it came from (a rank switched to by another
                    # one ends in the hub too).
                    failed = getattr(e, "_bgsim_rank", r)
                    tb = e.__traceback__
                    # Start the traceback at the rank's own code.
                    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                        tb = tb.tb_next
                    text = "".join(traceback.format_exception(type(e), e, tb))
                    raise RankError(failed, text) from e
                finally:
                    if mods is not None:
                        mods.leave(r)
                if done.__class__ is _Finished:
                    # A rank's program returned (this one's, or that of a
                    # rank another one switched to).
                    finished += 1
                    self.ctxs[done.rank].finished_at = self.world.rank_time(done.rank)
            fast = None
            if not started:
                # Every rank has run up to its first wait: what exists now
                # (the ranks' greenlets, frames and buffers) stays out of
                # the collector's passes.
                gc.freeze()
                started = True
                # From now on a waiting rank may run the simulation itself
                # (not with a timeline, which times every wait as a slice
                # around the scheduler's turn, nor with host CPU time
                # charged, which that would count).
                self.may_park = self.timeline is None and not cpu
                self.direct = self.may_park and fast_path and self.modules is None
            self.python_wall += time.perf_counter() - t0 - (self.world.run_wall - parked_wall)
            if finished == self.local:
                if self.exited:
                    raise RankExit(*self.exited[0])
                break
            self.parked = 0
            try:
                ready = self.world.run()
            except DeadlockError as e:
                self._abort()
                if self.exited:
                    # The others wait for a rank that exited.
                    raise RankExit(*self.exited[0]) from None
                raise DeadlockError(self._deadlock_message(e)) from None
            runnable.extend(ready)
            if time.monotonic() - last_check > MEMORY_CHECK_S:
                last_check = time.monotonic()
                self._check_memory()
            if bar is not None and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                bar.update(self.seconds(self.world.now()) * 1e6, self.world.events(),
                           note=f"{finished:,}/{self.local:,} ranks finished")
        try:
            # On an MPI job's processes: until every process's ranks are done.
            self.world.drain()
        except DeadlockError as e:
            self._abort()
            raise DeadlockError(self._deadlock_message(e)) from None

    def _check_memory(self) -> None:
        """Stops the run cleanly when the process nears the memory it may
        use (rather than being killed by the kernel)."""
        if self.memory_limit is None:
            return
        rss = memory.rss_bytes()
        if rss > memory.GUARD_SHARE * self.memory_limit:
            self._abort()
            raise MemoryLimitError(memory.guard_message(rss, self.memory_limit, self.seconds(self.world.now()) * 1e6))

    def _body(self, main: Callable[[], Any], ctx: RankContext) -> Callable[[], None]:
        def body() -> "_Finished":
            try:
                ctx.result = main()
                if ctx.nbcs:
                    # Finalize: the rank's nonblocking collectives still in
                    # progress complete (the others may wait for them).
                    _nbc_block(ctx, [], 0, lambda: not ctx.nbcs)
            except SystemExit as e:
                # sys.exit() or sys.exit(0): this rank is done; any other
                # code ends the run with it.
                # Like a process that exits after MPI_Finalize, the rank is
                # done and the others go on; the run ends with its status.
                if e.code is not None and e.code != 0:
                    self.exited.append((ctx.rank, e.code))
            except BaseException as e:
                # Ends in the hub, which names the rank it came from.
                try:
                    e._bgsim_rank = ctx.rank  # type: ignore[attr-defined]
                except AttributeError:
                    pass
                raise
            # What the hub gets from the switch that ran it (see `_loop`).
            return _Finished(ctx.rank)
        return body

    def _abort(self) -> None:
        for g in self.greenlets:
            if g is not None and not g.dead:
                # Drop the rank without running its cleanup code in the hub.
                g.ctx = None
        self.greenlets = []

    def _deadlock_message(self, e: DeadlockError) -> str:
        blocked = e.args[1]
        lines = [f"deadlock: {len(blocked)} rank(s) are blocked and nothing in flight can release them "
                 f"(ranks are COMM_WORLD ranks)"]
        for rank, waits in blocked[:64]:
            c = self.ctxs[rank]
            call = c.call
            if rank in self.remote:
                call = "an MPI call on another process"
            elif callable(call):
                call = call()
            elif call.__class__ is tuple:  # a format and its arguments
                call = call[0].format(*call[1:])
            call = call or "an MPI call"
            if c.frame is not None:
                call += f" at {where_frame(c.frame)}"
            lines.append(f"  rank {rank}: in {call}, waiting for {' and '.join(waits)}")
        if len(blocked) > 64:
            lines.append(f"  ... and {len(blocked) - 64} more")
        done = [c.rank for c in self.ctxs if c.finished_at is not None]
        if done:
            lines.append(f"  ({len(done)} rank(s) had already finished)")
        return "\n".join(lines)


def advance_collectives(ctx: RankContext) -> None:
    """Runs the rank's nonblocking collectives whose waits are over as far
    as each can go now (their progress, made inside the rank's MPI calls,
    as an MPI library without a progress thread makes it). Each is an
    object with `waiting`, the (core requests, how many of them) it waits
    for, and `step()`, which runs it on and takes it out of `ctx.nbcs`
    once it is done (`bgsim.mpishim.nbc`)."""
    w = ctx.world
    moved = True
    while moved and ctx.nbcs:
        moved = False
        for a in list(ctx.nbcs):
            reqs, need = a.waiting
            if _done_count(w, reqs) >= need:
                a.step()
                moved = True


def _done_count(w: Any, reqs: List[int]) -> int:
    return sum(1 for r in reqs if w.done(r))


def _nbc_block(ctx: RankContext, reqs: List[int], need: int, until: Optional[Callable[[], bool]] = None) -> None:
    """`Runtime.block` for a rank with nonblocking collectives in progress.
    In one of them: hands its wait to the rank's own flow, which runs it on
    once `need` of `reqs` are done. In the rank's own flow: advances them
    while it waits, until `need` of `reqs` are done, or, given `until`,
    until `until()` holds (it may look at `reqs` and at the collectives'
    requests: the rank wakes whenever one of `reqs` or one that a
    collective waits for completes)."""
    w = ctx.world
    g = greenlet.getcurrent()
    if g.__class__ is CollGreenlet:
        if _done_count(w, reqs) < need:
            g.parent.switch((reqs, need))
        return
    if until is None:
        def until() -> bool:
            return _done_count(w, reqs) >= need
    while True:
        advance_collectives(ctx)
        if until():
            return
        pending = [r for r in reqs if not w.done(r)]
        for a in ctx.nbcs or ():
            pending.extend(r for r in a.waiting[0] if not w.done(r))
        if not pending:
            raise StateError("bgsim: a wait for nonblocking collectives that nothing in flight can end")
        if w.block(ctx.rank, pending, 1):
            ctx.runtime.suspend(ctx.rank)


def where(depth: int = 2) -> str:
    """`file:line` of the user's code that made the current MPI call."""
    return where_frame(sys._getframe(depth))


def where_frame(f: Any) -> str:
    """`file:line` of the first frame at or above `f` outside bgsim."""
    here = os.path.dirname(__file__) + os.sep
    while f is not None and f.f_code.co_filename.startswith(here):
        f = f.f_back
    if f is None:
        return "?"
    return f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"


#: The longest compute one `compute` call charges, in ticks: a run's clock
#: counts ticks in 64 bits, and stays far from their end.
MAX_COMPUTE_TICKS = 1 << 60


def compute(seconds: Optional[float] = None, cycles: Optional[float] = None) -> None:
    """Charges application compute to the calling rank's core: `seconds` of
    simulated time or `cycles` processor cycles."""
    if (seconds is None) == (cycles is None):
        raise ArgumentTypeError("bgsim.compute: give exactly one of seconds= or cycles=")
    ctx = current()
    rt = ctx.runtime
    key, value, per = ("seconds", seconds, rt.ticks_per_second) if seconds is not None else \
        ("cycles", cycles, rt.world.ticks_per_cycle)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"bgsim.compute: {key} = {value!r} must be a number") from None
    if not (value >= 0 and math.isfinite(value)):
        raise UsageError(f"bgsim.compute: {key} = {value} must be a finite number >= 0")
    most = MAX_COMPUTE_TICKS / per
    if value > most:
        raise UsageError(f"bgsim.compute: {key} = {value:g} is more than one call can simulate on this machine "
                         f"(at most {most:.4g} {key})")
    ticks = int(round(value * per))
    rt.charge_host_cpu(ctx)
    t0 = rt.world.rank_time(ctx.rank)
    req = rt.world.compute(ctx.rank, ticks)
    ctx.call, ctx.frame = "bgsim.compute()", sys._getframe(1)
    rt.wait(ctx, [req], 1, "compute", t0, mpi=False)
    rt.world.release(req)
    if rt.cpu_factor:
        ctx.cpu_mark = time.process_time()


def shared_array(shape: Any, dtype: Any = "u1", key: Any = None) -> Any:
    """A numpy array that every rank of the run asking for the same
    (`shape`, `dtype`, `key`) gets, as SMPI's shared malloc: one copy in
    memory instead of one per rank. Its contents are whatever the ranks
    last wrote: use it for buffers whose contents the program does not
    read, with ``buffers="size-only"`` (docs/buffers.md). Zeros at first."""
    ctx = current()
    try:
        dt = np.dtype(dtype)
        dims = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
    except (TypeError, ValueError) as e:
        raise UsageError(f"bgsim.shared_array: shape {shape!r}, dtype {dtype!r}: {e}") from None
    if any(d < 0 for d in dims):
        raise UsageError(f"bgsim.shared_array: shape {shape!r} has a negative dimension")
    table = ctx.runtime.shared_arrays
    k = (dims, dt.str, key)
    arr = table.get(k)
    if arr is None:
        arr = table[k] = np.zeros(dims, dt)
    return arr
