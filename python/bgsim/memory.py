"""Memory: how much a run will need, how much the process may use, and the
check that refuses a run that cannot fit (naming the estimate and the limit)
instead of dying of an allocation failure or the kernel's OOM killer.

The estimate counts the simulator's own memory, measured on this code
(``make bench`` and a 4,096-rank run): about 3.3 KB per node for a traffic
run (routers, cores, packets in flight, counters; `router_bytes_per_node`
of it fixed) and about 17 KB per rank for an MPI program (its greenlet and
frames, the message layer's state), on top of what the process holds. A
machine cut into partitions on threads holds a copy of every node's state
per partition (4,096 nodes: 14.6 MB on one thread, 28.2 MB on two, 55.5 MB
on four). A message posted and not yet received costs about 240 bytes
(`MESSAGE_BYTES`: its two requests, its waiting send, its place in the
matching lists and peer queues), counted where a run's messages are
known beforehand (`halo_in_core`, which posts them one by one; a trace's
replay); one of a collective's post-all exchange, which the core holds
whole, about 40 (`scripts/bench_inflight.py`). What a
program allocates and posts itself is not known beforehand: an MPI run
also watches its resident memory and stops cleanly when it nears the
limit.
"""

from __future__ import annotations

import os
from typing import Optional

from .errors import MemoryLimitError

NODE_BYTES = 3400
RANK_BYTES = 17 << 10
#: A rank that is a skeleton driven by the core (no greenlet, no Python
#: objects), its messages apart: the 1,048,576-rank halo of
#: `scripts/bench_million.py` (four messages in flight per rank) peaked at
#: 3.08 GB on 262,144 nodes (2026-11-28), about 2.25 KB per rank beside the
#: nodes, 1.2 KB of it without the messages.
CORE_RANK_BYTES = 3 << 9
PER_LINK_BYTES = 6 * 24
#: One message in flight (posted by itself, not yet received), as the
#: 1,024-rank all-to-all of `scripts/bench_inflight.py` measured it when
#: its messages were posted one by one: 232 bytes.
MESSAGE_BYTES = 240
#: One message of a collective's post-all exchange, which the core holds
#: whole (`msglayer::group`): 40 bytes at 1,024 ranks, 24 at 4,096
#: (`scripts/bench_inflight.py`, 2026-11-29).
EXCHANGE_MESSAGE_BYTES = 40


def _read_int(path: str) -> Optional[int]:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


#: Share of the memory a process may use at which the core's watch stops
#: an MPI run, whatever it is doing (`World.watch_memory`); the runtime's
#: clean stop comes first, at `GUARD_SHARE`, when it gets to look.
WATCH_SHARE = 0.96
GUARD_SHARE = 0.92


def rss_bytes() -> int:
    """Resident memory of this process now."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def limit_bytes() -> Optional[int]:
    """What this process may use in all, as far as the system says: the
    memory it holds plus what is available to it (the machine's available
    memory, and its control group's limit where one is set). None when
    unknown."""
    own = rss_bytes()
    avail = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024 + own
    except (OSError, ValueError):
        pass
    for max_path, cur_path in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                               ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        cap, used = _read_int(max_path), _read_int(cur_path)
        if cap is not None and cap < 1 << 60:
            room = cap - (used or 0) + own
            avail = room if avail is None else min(avail, room)
    return avail


def estimate_bytes(nodes: int, ranks: int = 0, per_link: bool = False, rank_bytes: int = RANK_BYTES,
                   messages: int = 0, exchange_messages: int = 0) -> int:
    """The memory a run on `nodes` nodes with `ranks` MPI ranks (0: a
    traffic run) adds to the process's (`rank_bytes` per rank: a Python
    rank's by default, CORE_RANK_BYTES for skeletons driven by the core),
    with at most `messages` posted one by one and `exchange_messages` by
    collectives' exchanges in flight at once, where those are known."""
    return (nodes * (NODE_BYTES + (PER_LINK_BYTES if per_link else 0)) + ranks * rank_bytes
            + messages * MESSAGE_BYTES + exchange_messages * EXCHANGE_MESSAGE_BYTES)


def _gb(b: float) -> str:
    return f"{b / 2**30:.1f} GB"


def check(nodes: int, ranks: int = 0, per_link: bool = False, what: str = "this run",
          rank_bytes: int = RANK_BYTES, messages: int = 0, exchange_messages: int = 0) -> None:
    """Refuses a run whose estimate exceeds what the process may use."""
    need = estimate_bytes(nodes, ranks, per_link, rank_bytes, messages, exchange_messages)
    held = rss_bytes()
    limit = limit_bytes()
    if limit is not None and held + need > limit:
        flying = messages + exchange_messages
        parts = f"{nodes:,} nodes" + (f" and {ranks:,} ranks" if ranks else "") + \
            (f" with up to {flying:,} messages in flight" if flying else "")
        raise MemoryLimitError(
            f"{what} needs about {_gb(need)} ({parts}) beside the {_gb(held)} this process holds, but it may use "
            f"about {_gb(limit)} in all; use a smaller partition, or run anyway with --no-memory-check "
            "(memory_check=False)")


def guard_message(rss: int, limit: int, sim_us: float) -> str:
    return (f"the run stopped at {sim_us:,.1f} us simulated: it holds {_gb(rss)} of the about {_gb(limit)} this process "
            "may use, and would have been killed for lack of memory; use fewer ranks or smaller buffers")
