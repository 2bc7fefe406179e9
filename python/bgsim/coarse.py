"""The coarse tier: communication that is too large for packets, modelled at
the level of messages over the same routes, links and mappings.

A communication *phase* is a set of messages that start together (one step
of a pairwise all-to-all, a nearest-neighbour exchange). Each message goes
by the deterministic route (x, then y, then z, the shorter way round:
`mapping.route_loads`); the bytes every torus link carries in the
phase follow. The phase takes what one such message takes alone on the
packet tier - measured there, on the same machine, for the same size - plus
the time the busiest link needs for the bytes beyond one message's, at the
link's payload bandwidth, also measured on the packet tier (the slope of a
neighbour exchange's time over its size). Nothing is fitted to an
experiment: the two measurements are the packet tier's own primitives.

The tier gives no no-token counts: they depend on how full the routers'
buffers get, which a model without packets does not know (two estimators
from link loads were tried and missed the packet tier's counts by 18 to 700
times; `docs/coarse.md`). It gives each link's bytes instead.
`docs/coarse.md` gives the tier's measured error against packets.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from . import MPI, skeleton
from .api import Machine
from .mapping import route_loads
from .program import run

FIDELITIES = ("packet", "coarse")


@dataclass(frozen=True)
class Calibration:
    """What the coarse tier takes from the packet tier, for one machine,
    node mode and message size."""

    #: One message between neighbouring nodes, both ways at once (s).
    single_s: float
    #: Payload bytes per second of one link (the slope over message size).
    link_Bps: float
    payload_per_packet: int
    hop_s: float


def _exchange_program(nbytes: int):
    def main() -> float:
        comm = MPI.COMM_WORLD
        peer = 1 - comm.Get_rank() if comm.Get_rank() < 2 else None
        comm.Barrier()
        t0 = MPI.Wtime()
        if peer is not None:
            reqs = [skeleton.irecv(comm, nbytes, peer, 0), skeleton.isend(comm, nbytes, peer, 0)]
            skeleton.waitall(reqs)
        return comm.reduce(MPI.Wtime() - t0, op=MPI.MAX)
    return main


@lru_cache(maxsize=None)
def calibrate(machine: str, mode: str, nbytes: int) -> Calibration:
    """Measures, on the packet tier, an exchange of `nbytes` between two
    neighbouring nodes (2x1x1 partition; with more tasks per node the other
    tasks stay idle) and of twice as much: the time of one message alone,
    and the link's payload bandwidth."""
    m = Machine(machine, [f'partition.mode="{mode}"'])
    tpn = m.info["tasks_per_node"]

    with tempfile.TemporaryDirectory() as tmp:
        # Ranks 0 and 1 on the two nodes, the other task slots after them.
        path = os.path.join(tmp, "pair.map")
        with open(path, "w", encoding="utf-8") as f:
            f.write("0 0 0 0\n1 0 0 0\n" + "".join(f"{x} 0 0 {t}\n" for t in range(1, tpn) for x in (0, 1)))

        def exchange(b: int) -> float:
            return run(_exchange_program(b), m, shape="2x1x1", mode=mode, mapping=path).results[0]
        t1, t2 = exchange(nbytes), exchange(2 * nbytes)
    hop_s = m.info["hop_latency_ticks"] / (m.info["cpu_mhz"] * 1e6 * m.info["ticks_per_cpu_cycle"])
    return Calibration(single_s=t1, link_Bps=nbytes / (t2 - t1), payload_per_packet=m.info["max_payload_bytes"],
                       hop_s=hop_s)


@dataclass
class PhaseResult:
    time_s: float
    #: Link loads summed over phases (bytes per link: node * 6 + direction).
    link_bytes: np.ndarray


def pairwise_alltoall(slots: np.ndarray, shape: Sequence[int], nbytes: int, cal: Calibration,
                      torus: Sequence[bool] = (True, True, True), progress=None) -> PhaseResult:
    """MPI's pairwise-exchange all-to-all of `nbytes` per pair over ranks
    placed at `slots` ([n, 4]: x, y, z, task): n - 1 phases, in phase k
    rank r sends to r + k and receives from r - k."""
    n = len(slots)
    nodes = slots[:, :3].astype(np.int64)
    ranks = np.arange(n)
    total_t = 0.0
    acc = np.zeros(int(np.prod(shape)) * 6, dtype=np.int64)
    for k in range(1, n):
        dst = (ranks + k) % n
        off_node = np.any(nodes != nodes[dst], axis=1)
        src_n, dst_n = nodes[off_node], nodes[dst[off_node]]
        sizes = np.full(len(src_n), nbytes, dtype=np.int64)
        load, hops = route_loads(src_n, dst_n, sizes, shape, torus)
        acc += load
        busiest = int(load.max()) if len(load) else 0
        extra_hops = max(int(hops.max()) - 1, 0) if len(hops) else 0
        total_t += cal.single_s + max(busiest - nbytes, 0) / cal.link_Bps + extra_hops * cal.hop_s
        if progress is not None and k % 256 == 0:
            progress(k / (n - 1))
    return PhaseResult(total_t, acc)
