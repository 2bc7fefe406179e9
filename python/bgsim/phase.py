"""The phase model: communication that is too large for packets, modelled
at the level of messages over the same routes, links and mappings.

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

The model gives no no-token counts: they depend on how full the routers'
buffers get, which a model without packets does not know (two estimators
from link loads were tried and missed the packet tier's counts by 18 to 700
times; `docs/phase.md`). It gives each link's bytes instead.
`docs/phase.md` gives the model's measured error against packets.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

from . import MPI, skeleton
from .mpishim.coll.bcast import BCAST_LONG_MSG
from .api import Machine
from .mapping import order_slots, route_loads
from .program import run


@dataclass(frozen=True)
class Calibration:
    """What the phase model takes from the packet tier, for one machine,
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


#: The smallest exchange the link bandwidth is measured with (smaller
#: messages are a few packets: their time steps with whole packets).
BANDWIDTH_BYTES = 64 * 1024


@lru_cache(maxsize=None)
def calibrate(machine: str, mode: str, nbytes: int) -> Calibration:
    """Measures, on the packet tier, an exchange of `nbytes` between two
    neighbouring nodes (2x1x1 partition; with more tasks per node the other
    tasks stay idle): the time of one message alone; and the link's payload
    bandwidth, the slope between an exchange of max(`nbytes`,
    `BANDWIDTH_BYTES`) and one of twice as much."""
    m = Machine(machine, [f'partition.mode="{mode}"'])
    tpn = m.info["tasks_per_node"]

    with tempfile.TemporaryDirectory() as tmp:
        # Ranks 0 and 1 on the two nodes, the other task slots after them.
        path = os.path.join(tmp, "pair.map")
        with open(path, "w", encoding="utf-8") as f:
            f.write("0 0 0 0\n1 0 0 0\n" + "".join(f"{x} 0 0 {t}\n" for t in range(1, tpn) for x in (0, 1)))

        def exchange(b: int) -> float:
            return run(_exchange_program(b), m, shape="2x1x1", mode=mode, mapping=path).results[0]
        t1 = exchange(nbytes)
        bw = max(nbytes, BANDWIDTH_BYTES)
        slope = (exchange(2 * bw) - (t1 if bw == nbytes else exchange(bw))) / bw
    hop_s = m.info["hop_latency_ticks"] / (m.info["cpu_mhz"] * 1e6 * m.info["ticks_per_cpu_cycle"])
    return Calibration(single_s=t1, link_Bps=1 / slope, payload_per_packet=m.info["max_payload_bytes"], hop_s=hop_s)


@dataclass
class PhaseResult:
    time_s: float
    #: Link loads summed over phases (bytes per link: node * 6 + direction).
    link_bytes: np.ndarray


def phase_time(src_nodes: np.ndarray, dst_nodes: np.ndarray, nbytes: "int | np.ndarray", cal: Calibration,
               shape: Sequence[int], torus: Sequence[bool]) -> tuple:
    """One phase: messages of `nbytes` (one size, or one per message; `cal`
    is the largest's) from node coordinates `src_nodes` to `dst_nodes`
    ([m, 3]; messages within a node take no link) that start together.
    Returns (time in s, bytes per link)."""
    off_node = np.any(src_nodes != dst_nodes, axis=1)
    s, d = src_nodes[off_node], dst_nodes[off_node]
    sizes = np.broadcast_to(np.asarray(nbytes, dtype=np.int64), (len(off_node),))[off_node]
    nbytes = int(np.max(nbytes)) if np.size(nbytes) else 0
    load, hops = route_loads(s, d, sizes, shape, torus)
    busiest = int(load.max()) if len(load) else 0
    extra_hops = max(int(hops.max()) - 1, 0) if len(hops) else 0
    return cal.single_s + max(busiest - nbytes, 0) / cal.link_Bps + extra_hops * cal.hop_s, load


def pairwise_alltoall(slots: np.ndarray, shape: Sequence[int], nbytes: int, cal: Calibration,
                      torus: Sequence[bool] = (True, True, True), progress=None,
                      groups: Optional[np.ndarray] = None) -> PhaseResult:
    """MPI's pairwise-exchange all-to-all of `nbytes` per pair over ranks
    placed at `slots` ([n, 4]: x, y, z, task): m - 1 phases; in phase k
    member i of a communicator sends to member i + k and receives from
    member i - k. `groups` ([g, m] world ranks): g communicators of m ranks
    each running their all-to-alls at once (planes of a Cartesian grid);
    default one, every rank in order."""
    if groups is None:
        groups = np.arange(len(slots))[None, :]
    groups = np.asarray(groups, dtype=np.int64)
    m = groups.shape[1]
    nodes = slots[:, :3].astype(np.int64)
    src = nodes[groups.ravel()]
    total_t = 0.0
    acc = np.zeros(int(np.prod(shape)) * 6, dtype=np.int64)
    for k in range(1, m):
        t, load = phase_time(src, nodes[np.roll(groups, -k, axis=1).ravel()], nbytes, cal, shape, torus)
        acc += load
        total_t += t
        if progress is not None and k % 256 == 0:
            progress(k / (m - 1))
    return PhaseResult(total_t, acc)


def bcast_scatter_allgather(slots: np.ndarray, shape: Sequence[int], nbytes: int, machine: str, mode: str,
                            torus: Sequence[bool] = (True, True, True)) -> PhaseResult:
    """MPICH's long MPI_Bcast from rank 0 over the ranks at `slots`, as
    `bgsim.mpishim.coll.bcast.bcast_scatter_allgather` runs it: n parts of
    ceil(nbytes / n) bytes; the binomial scatter as log2 n phases (the
    phase of mask m: every rank that holds parts, a multiple of 2m, sends
    its upper half's parts to rank + m); then the allgather: on a power of
    two below `BCAST_LONG_MSG` (512 KB) recursive doubling (phase k: every rank swaps its 2^k
    parts with rank ^ 2^k), else the ring, n - 1 phases alike (every rank
    passes one part to its right: one phase computed, times n - 1). Each
    phase is calibrated at its largest message."""
    n = len(slots)
    nodes = slots[:, :3].astype(np.int64)
    ss = -(-nbytes // n)
    at = lambda r: np.minimum(np.asarray(r, dtype=np.int64) * ss, nbytes)  # noqa: E731 - part r starts here
    total_t = 0.0
    acc = np.zeros(int(np.prod(shape)) * 6, dtype=np.int64)

    def phase(src: np.ndarray, dst: np.ndarray, sizes: np.ndarray, times: int = 1) -> None:
        nonlocal total_t, acc
        if not len(src):
            return
        cal = calibrate(machine, mode, max(int(sizes.max()), 1))
        t, load = phase_time(nodes[src], nodes[dst], sizes, cal, shape, torus)
        total_t += times * t
        acc += times * load

    m = (1 << (n - 1).bit_length()) >> 1
    while m > 0:
        src = np.arange(0, n, 2 * m)
        dst = src + m
        keep = (dst < n) & (at(dst) < nbytes)
        src, dst = src[keep], dst[keep]
        phase(src, dst, at(np.minimum(dst + m, n)) - at(dst))
        m >>= 1
    ranks = np.arange(n)
    if nbytes < BCAST_LONG_MSG and n & (n - 1) == 0:
        m = 1
        while m < n:
            partner = ranks ^ m
            lo = partner & ~(m - 1)
            phase(partner, ranks, at(lo + m) - at(lo))
            m <<= 1
    elif n > 1:
        phase(ranks, (ranks + 1) % n, np.full(n, ss, dtype=np.int64), times=n - 1)
    return PhaseResult(total_t, acc)


def exchange(slots: np.ndarray, shape: Sequence[int], pairs: np.ndarray, nbytes: int, cal: Calibration,
             torus: Sequence[bool] = (True, True, True)) -> PhaseResult:
    """Every (source rank, destination rank) of `pairs` ([m, 2]) sends
    `nbytes` at once: one phase (a nearest-neighbour halo exchange). A pair
    listed k times is k messages to one peer, which the message layer's
    send queue for that peer sends one after the other: the j-th of them
    goes in phase j."""
    nodes = slots[:, :3].astype(np.int64)
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if not len(pairs):
        return PhaseResult(*phase_time(nodes[pairs[:, 0]], nodes[pairs[:, 1]], nbytes, cal, shape, torus))
    # The j-th occurrence of each pair goes in phase j.
    seen: Dict[Tuple[int, int], int] = {}
    nth = np.empty(len(pairs), dtype=np.int64)
    for i, (s, d) in enumerate(pairs.tolist()):
        nth[i] = seen.get((s, d), 0)
        seen[(s, d)] = nth[i] + 1
    total, load = 0.0, 0
    for j in range(int(nth.max()) + 1):
        sel = pairs[nth == j]
        t, phase_load = phase_time(nodes[sel[:, 0]], nodes[sel[:, 1]], nbytes, cal, shape, torus)
        total += t
        load = load + phase_load
    return PhaseResult(total, load)


# ---------------------------------------------------------------- validation

#: The patterns both tiers run (`compare`): MPI's pairwise all-to-all on
#: COMM_WORLD; the same within the planes of a logical 3D grid (every c-th
#: rank, c = 2: the ranks are row-major, the last dimension fastest, as in
#: `bgp-cartesian`), all planes at once; a 2D periodic halo, every rank
#: sending to its four neighbours at once; MPICH's scatter + allgather
#: broadcast on COMM_WORLD less its last rank (a ring: n - 1 is odd).
PATTERNS = ("alltoall", "planes", "halo", "bcast")


@dataclass(frozen=True)
class Config:
    machine: str
    mode: str
    shape: str
    pattern: str
    nbytes: int

    def label(self) -> str:
        return f"{self.machine} {self.mode} {self.shape} {self.pattern} {self.nbytes // 1024} KB"


#: The grid `docs/phase.md` reports (scripts/phase_grid.py runs it).
GRID = tuple(Config(m, mode, shape, pattern, nbytes)
             for m, mode, shapes in (("bgl", "coprocessor", ("4x4x2", "4x4x4")), ("bgp", "vn", ("2x2x2", "4x4x2")))
             for shape in shapes for pattern in PATTERNS for nbytes in (4096, 65536))


def _grid2d(n: int) -> tuple:
    """The most square rows x cols = n, rows <= cols."""
    rows = int(np.sqrt(n))
    while n % rows:
        rows -= 1
    return rows, n // rows


def _neighbours(r: int, n: int) -> list:
    rows, cols = _grid2d(n)
    i, j = divmod(r, cols)
    return [((i - 1) % rows) * cols + j, ((i + 1) % rows) * cols + j, i * cols + (j - 1) % cols, i * cols + (j + 1) % cols]


def _packet_program(pattern: str, nbytes: int):
    def main() -> float:
        comm = MPI.COMM_WORLD
        r, n = comm.Get_rank(), comm.Get_size()
        sub = comm.Split(r % 2, r) if pattern == "planes" else None
        if pattern == "bcast":
            sub = comm.Create(comm.Get_group().Excl([n - 1]))
        comm.Barrier()
        t0 = MPI.Wtime()
        if pattern == "bcast":
            if sub != MPI.COMM_NULL:
                skeleton.bcast(sub, nbytes, 0)
        elif pattern == "halo":
            peers = _neighbours(r, n)
            reqs = [skeleton.irecv(comm, nbytes, p, k ^ 1) for k, p in enumerate(peers)]
            reqs += [skeleton.isend(comm, nbytes, p, k) for k, p in enumerate(peers)]
            skeleton.waitall(reqs)
        else:
            skeleton.alltoall(sub if sub is not None else comm, nbytes)
        return comm.reduce(MPI.Wtime() - t0, op=MPI.MAX)
    return main


def model_time(cfg: Config) -> float:
    """The phase model's time (s) of `cfg`, under the XYZT mapping."""
    m = Machine(cfg.machine, [f'partition.mode="{cfg.mode}"'])
    dims = [int(v) for v in cfg.shape.split("x")]
    tpn = m.info["tasks_per_node"]
    n = int(np.prod(dims)) * tpn
    slots = np.array(order_slots(dims, tpn, n, "XYZT"))
    cal = calibrate(cfg.machine, cfg.mode, cfg.nbytes)
    if cfg.pattern == "alltoall":
        return pairwise_alltoall(slots, dims, cfg.nbytes, cal).time_s
    if cfg.pattern == "planes":
        return pairwise_alltoall(slots, dims, cfg.nbytes, cal, groups=np.arange(n).reshape(-1, 2).T).time_s
    if cfg.pattern == "bcast":
        return bcast_scatter_allgather(slots[:n - 1], dims, cfg.nbytes, cfg.machine, cfg.mode).time_s
    pairs = np.array([(r, p) for r in range(n) for p in _neighbours(r, n)])
    return exchange(slots, dims, pairs, cfg.nbytes, cal).time_s


def packet_time(cfg: Config, fidelity: str = "packet") -> float:
    """The time (s) of `cfg` run as an MPI program (slowest rank, XYZT
    mapping), on the packet tier or (`fidelity="coarse"`) with the torus
    on its coarse tier (`bgsim.run(fidelity=...)`)."""
    m = Machine(cfg.machine, [])
    return run(_packet_program(cfg.pattern, cfg.nbytes), m, shape=cfg.shape, mode=cfg.mode,
               coll={"alltoall": "pairwise", "bcast": "scatter_allgather"}, fidelity=fidelity).results[0]


def compare(cfg: Config) -> dict:
    """The tiers on `cfg`: the packet tier's time, the phase model's, the
    program's with a coarse torus and (on a machine with a DMA engine) on
    the message tier (us), and their errors (%; the message tier's None
    where it does not run)."""
    p, c, r = packet_time(cfg), model_time(cfg), packet_time(cfg, "coarse")
    m = packet_time(cfg, "message") if "dma" in Machine(cfg.machine).info["components"] else None
    return {"config": cfg.label(), "packet_us": round(p * 1e6, 1), "phase_us": round(c * 1e6, 1),
            "error_pct": round(100 * (c - p) / p, 1), "run_us": round(r * 1e6, 1),
            "run_error_pct": round(100 * (r - p) / p, 1),
            "message_us": None if m is None else round(m * 1e6, 1),
            "message_error_pct": None if m is None else round(100 * (m - p) / p, 1)}
