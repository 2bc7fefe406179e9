"""Blue Gene/P point-to-point characterisation: latency and bandwidth
between nodes and between the cores of a node, with distance and system
size, under congestion, flow-through traffic, several streams, fan-in and
fan-out, and a master talking to every worker. Every program here is an
ordinary mpi4py program run by `bgsim.run` on the `bgp` machine."""

from __future__ import annotations

import os
import tempfile
from typing import Any, Callable, Dict, List, Sequence, Tuple

import numpy as np

from .. import MPI
from ..api import Machine
from ..runtime import shared_array
from .base import Context, Curve, Outcome, register, sweep
from .base import size_label as _label
from .mpi import _pingpong

BGP = Machine("bgp")
MB = 1 << 20

Slot = Tuple[int, int, int, int]

#: Cores in VN mode -> torus shape: the published BG/P partitions from 2,048 cores
#: on, smaller ones for quick runs.
PARTITIONS = {32: "2x2x2", 64: "2x2x4", 128: "4x4x2", 512: "4x4x8", 2048: "8x8x8", 4096: "8x8x16",
              8192: "8x8x32", 16384: "8x16x32", 32768: "8x32x32", 65536: "16x32x32", 131072: "32x32x32"}


def _partitions(*cores: int) -> Dict[int, str]:
    return {c: PARTITIONS[c] for c in cores}


def _mapfile(tmp: str, name: str, slots: Sequence[Slot]) -> str:
    path = os.path.join(tmp, name)
    with open(path, "w", encoding="utf-8") as f:
        for s in slots:
            f.write(" ".join(map(str, s)) + "\n")
    return path


def _streams(pairs: Sequence[Tuple[int, int]], nbytes: int, count: "int | Sequence[int]"):
    """Every (sender, receiver) pair streams `count` messages of `nbytes`
    (or count[i] for pair i) at once (all posted, then one wait); returns at
    each receiver the time from a common start to its last message (s)."""
    counts = [count] * len(pairs) if isinstance(count, int) else list(count)

    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        comm.Barrier()
        t0 = MPI.Wtime()
        reqs = []
        for (s, d), c in zip(pairs, counts):
            if r == s:
                buf = np.zeros(nbytes, "u1")
                reqs += [comm.Isend(buf, dest=d, tag=2) for _ in range(c)]
            if r == d:
                bufs = np.zeros((c, nbytes), "u1")
                reqs += [comm.Irecv(bufs[i], source=s, tag=2) for i in range(c)]
        MPI.Request.Waitall(reqs)
        return MPI.Wtime() - t0
    return main


# ---------------------------------------------------------------- ping-pong

@register("bgp-pingpong", "bgp", "Latency and bandwidth between neighbouring nodes, buffers in and out of cache",
          published={"MPI one-way latency of a small (1-byte) message, neighbours, us (BG/P calibration)": (2.8, None)})
def pingpong(ctx: Context) -> Outcome:
    out = Outcome()
    iters = 4 if ctx.quick else 20
    out.setup.append(f"2 neighbouring nodes (2x1x1 torus, SMP mode); MPI ping-pong, {iters} round trips; in cache: "
                     "the same buffer every time; out of cache: a new buffer for every message; bandwidth = "
                     "bytes / half round trip.")
    for label, fresh in (("incache", False), ("outcache", True)):
        for nbytes in (0, 1024, MB):
            ctx.log(f"{label} {_label(nbytes)}")
            r = ctx.run(_pingpong(1, nbytes, iters if nbytes < MB else max(2, iters // 4), fresh=fresh), BGP,
                        shape="2x1x1", mode="smp", seed=ctx.seed)
            half = r.results[0]
            if nbytes < MB:
                out.metrics[f"latency_us_{label}_{_label(nbytes)}"] = round(half * 1e6, 3)
            else:
                out.metrics[f"bw_MBps_{label}_1MB"] = round(nbytes / half / 1e6, 1)
    out.notes.append("Published: BG/P has no paging, every buffer is always pinned, and the DMA engine reads and "
                     "writes memory whatever the caches hold: the model predicts the same figures for both.")
    return out


@register("bgp-intranode", "bgp", "Latency and bandwidth between core 0 and cores 1, 2, 3 of one node (VN)")
def intranode(ctx: Context) -> Outcome:
    out = Outcome()
    iters = 4 if ctx.quick else 20
    out.setup.append(f"2x1x1 torus in VN mode, ranks T-first (ranks 0-3 on node 0, 4-7 on node 1); ping-pong "
                     f"between rank 0 and ranks 1, 2, 3 of its node ({iters} round trips), and rank 4 on the other "
                     "node for the inter-node bandwidth.")
    for c in (1, 2, 3):
        ctx.log(f"core {c}")
        r = ctx.run(_pingpong(c, 0, iters), BGP, shape="2x1x1", mode="vn", mapping="TXYZ", seed=ctx.seed)
        out.metrics[f"latency_us_core{c}_0B"] = round(r.results[0] * 1e6, 3)
        r = ctx.run(_pingpong(c, MB, max(2, iters // 4)), BGP, shape="2x1x1", mode="vn", mapping="TXYZ", seed=ctx.seed)
        out.metrics[f"bw_MBps_core{c}_1MB"] = round(MB / r.results[0] / 1e6, 1)
    r = ctx.run(_pingpong(4, MB, max(2, iters // 4)), BGP, shape="2x1x1", mode="vn", mapping="TXYZ", seed=ctx.seed)
    out.metrics["internode_bw_MBps_1MB"] = round(MB / r.results[0] / 1e6, 1)
    out.notes.append("An intra-node message is a copy by the node's DMA engine (3 bytes per cycle each way, about "
                     "6 links' worth) with the messaging software's per-message work on both cores; which core of "
                     "the node the partner runs on makes no difference in the model (no shared-cache effects).")
    return out


# ---------------------------------------------------------------- distance and size

HOPS_SIZES = {4: "1x1x1", 2048: "8x8x8", 8192: "8x8x32", 32768: "8x32x32", 131072: "32x32x32"}


@register("bgp-hops", "bgp", "Latency and bandwidth between the two farthest nodes, 4 to 131,072 cores")
def hops(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = {4: "1x1x1", 2048: "8x8x8", 8192: "8x8x32"} if ctx.quick else HOPS_SIZES
    iters = 4 if ctx.quick else 10
    out.setup.append("VN mode; two ranks, on the first node and on the node farthest from it (half of every "
                     f"dimension away; with 4 cores, two cores of the one node); ping-pong, {iters} round trips "
                     "for 0 B and 1 KB, bandwidth of 1 MB messages. bw_impact_pct compares inter-node pairs: "
                     "the farthest pair of the largest partition against two neighbouring nodes of the smallest "
                     "one of several nodes (an intra-node pair's bandwidth is the DMA engine's, not a link's).")
    with tempfile.TemporaryDirectory() as tmp:
        def point(cores: int) -> Dict[str, float]:
            shape = sizes[cores]
            dims = [int(x) for x in shape.split("x")]
            far = (0, 0, 0, 1) if cores == 4 else (dims[0] // 2, dims[1] // 2, dims[2] // 2, 0)
            mf = _mapfile(tmp, f"h{cores}.map", [(0, 0, 0, 0), far])
            res = {}
            for nbytes in (0, 1024):
                r = ctx.run(_pingpong(1, nbytes, iters), BGP, shape=shape, mode="vn", mapping=mf, seed=ctx.seed)
                res[f"latency_{_label(nbytes)}"] = r.results[0] * 1e6
            r = ctx.run(_pingpong(1, MB, 2), BGP, shape=shape, mode="vn", mapping=mf, seed=ctx.seed)
            res["bandwidth_1MB"] = MB / r.results[0] / 1e6
            return res
        ys = sweep(ctx, out, sizes, point, [
            Curve(f"latency_{k}", "half round trip (us)", f"latency_us_{{x}}_{k}", 3, "latency") for k in ("0B", "1KB")
        ] + [Curve("bandwidth_1MB", "MB/s", "bw_MBps_{x}_1MB", 1, "bandwidth")],
            x_label="cores in the partition", log=lambda cores: f"{cores} cores ({sizes[cores]})")
        near_cores = next(c for c in sizes if c > 4)
        ctx.log(f"{near_cores} cores ({sizes[near_cores]}), neighbouring nodes")
        mf = _mapfile(tmp, "near.map", [(0, 0, 0, 0), (1, 0, 0, 0)])
        r = ctx.run(_pingpong(1, MB, 2), BGP, shape=sizes[near_cores], mode="vn", mapping=mf, seed=ctx.seed)
        near_bw = MB / r.results[0] / 1e6
        out.metrics["bw_MBps_neighbour_1MB"] = round(near_bw, 1)
    keys = list(sizes)
    for k in ("0B", "1KB"):
        lat = ys[f"latency_{k}"]
        out.metrics[f"degradation_pct_{k}"] = round(100 * (lat[-1] - lat[0]) / lat[0], 1)
    bws = ys["bandwidth_1MB"]
    out.metrics["bw_impact_pct"] = round(100 * (near_bw - bws[-1]) / near_bw, 1)
    out.key_metrics = [f"latency_us_{keys[-1]}_0B", "degradation_pct_0B", "degradation_pct_1KB", "bw_impact_pct"]
    out.notes.append("A hop adds the router's 63 cycles (74 ns); the farthest node of a 32x32x32 torus is 48 hops "
                     "away. Bandwidth does not depend on distance once the pipeline is full.")
    return out


@register("bgp-hotspot", "bgp", "One master runs a latency test with every worker, 4 to 131,072 cores")
def hotspot(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = {4: "1x1x1", 64: "2x2x4", 512: "4x4x8"} if ctx.quick else {4: "1x1x1", 2048: "8x8x8", 8192: "8x8x32",
                                                                       32768: "8x32x32", 131072: "32x32x32"}
    out.setup.append("VN mode, every core a rank; rank 0 (the master) ping-pongs once with every other rank in "
                     "turn at 0 B, 1 KB and 16 KB; the figure is the mean half round trip over the workers.")

    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.Get_rank(), comm.Get_size()
        res = {}
        for nbytes in (0, 1024, 16384):
            buf = np.zeros(nbytes, "u1")
            if r == 0:
                total = 0.0
                for w in range(1, n):
                    t0 = MPI.Wtime()
                    comm.Send(buf, dest=w, tag=3)
                    comm.Recv(buf, source=w, tag=3)
                    total += (MPI.Wtime() - t0) / 2
                res[nbytes] = total / (n - 1)
            else:
                comm.Recv(buf, source=0, tag=3)
                comm.Send(buf, dest=0, tag=3)
        return res
    def point(cores: int) -> Dict[str, float]:
        r = ctx.run(main, BGP, shape=sizes[cores], mode="vn", seed=ctx.seed)
        return {f"latency_{_label(nbytes)}": v * 1e6 for nbytes, v in r.results[0].items()}
    sweep(ctx, out, sizes, point, [Curve(f"latency_{k}", "mean half round trip (us)", f"latency_us_{{x}}_{k}", 3, "latency")
                                   for k in ("0B", "1KB", "16KB")],
          x_label="cores", log=lambda cores: f"{cores} cores ({sizes[cores]})")
    xs = list(sizes)
    out.key_metrics = [f"latency_us_{xs[-1]}_{_label(b)}" for b in (0, 1024, 16384)]
    out.notes.append("The mean grows with the system because the workers are farther on average (a hop adds 74 "
                     "ns); the master's own per-message software is the same for every worker.")
    return out


# ---------------------------------------------------------------- contention

@register("bgp-congestion", "bgp", "Two streams on a line of 4 nodes: disjoint vs shared links")
def congestion(ctx: Context) -> Outcome:
    out = Outcome()
    size, count = (256 << 10, 2) if ctx.quick else (MB, 8)
    out.setup.append(f"8x8x8 torus, SMP mode; ranks 0-3 on nodes (0..3, 0, 0) of one x line; each sender streams "
                     f"{count} messages of {_label(size)}; test 1: 0 -> 3 with 1 -> 2; test 2: 0 -> 2 with 1 -> 3 "
                     "(their paths share the links 1 -> 2); bandwidth per stream = bytes / time to its last message.")
    with tempfile.TemporaryDirectory() as tmp:
        mf = _mapfile(tmp, "line.map", [(i, 0, 0, 0) for i in range(4)])
        for key, pairs in (("nooverlap", [(0, 3)]), ("t1", [(0, 3), (1, 2)]), ("t2", [(0, 2), (1, 3)])):
            ctx.log(key)
            r = ctx.run(_streams(pairs, size, count), BGP, shape="8x8x8", mode="smp", nranks=4, mapping=mf, seed=ctx.seed)
            for s, d in pairs:
                bw = size * count / r.results[d] / 1e6
                name = "bw_MBps_nooverlap" if key == "nooverlap" else f"bw_MBps_p{s}p{d}"
                out.metrics[name] = round(bw, 1)
    out.notes.append("Dynamic routing may spread a stream over several minimal paths only where more than one "
                     "exists; on one x line there is one, so the streams of test 2 share the link 1 -> 2.")
    return out


@register("bgp-multistream", "bgp", "1 to 4 core pairs streaming between the same two nodes (VN)")
def multistream(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = (1024, 16384, MB)
    out.setup.append("2x1x1 torus in VN mode, ranks T-first (0-3 on node 0, 4-7 on node 1); k = 1..4 pairs "
                     "(core i of node 0 -> core i of node 1) stream at once; aggregate MB/s = bytes / time to the "
                     "last message.")
    for s in sizes:
        count = max(2, min(64, (4 * MB if not ctx.quick else MB) // s))
        name = f"aggregate_{_label(s)}"

        def point(k: int, s: int = s, count: int = count, name: str = name) -> Dict[str, float]:
            r = ctx.run(_streams([(i, 4 + i) for i in range(k)], s, count), BGP, shape="2x1x1", mode="vn",
                        mapping="TXYZ", seed=ctx.seed)
            return {name: k * s * count / max(r.results[4 + i] for i in range(k)) / 1e6}
        sweep(ctx, out, (1, 2, 3, 4), point, [Curve(name, "aggregate MB/s", f"agg_MBps_s{{x}}_{_label(s)}", 1, "aggregate")],
              x_label="streams", log=lambda k, s=s: f"{_label(s)}: {k} stream(s)")
    out.notes.append("The two nodes of a 2x1x1 torus are joined by two links (x+ and x-), but a minimal route "
                     "between them is a tie that the fixed rule breaks the same way for every packet of a node "
                     "(+ from an even coordinate): all streams share one link's 389 MB/s of payload.")
    return out


@register("bgp-fan", "bgp", "One process receiving from (fan-in) / sending to (fan-out) 1..6 torus neighbours")
def fan(ctx: Context) -> Outcome:
    out = Outcome()
    size, count = (256 << 10, 2) if ctx.quick else (MB, 4)
    out.setup.append(f"3x3x3 torus, SMP mode; the centre node and its neighbours x+, x-, y+, y-, z+, z-; fan-in: "
                     f"k neighbours each stream {count} messages of {_label(size)} to the centre; fan-out: the "
                     "centre streams as many to each; aggregate Mb/s (10^6 bits/s) at the centre.")
    center = 1 + 3 * (1 + 3 * 1)
    nbrs = []
    for k, d in ((0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1)):
        c = [1, 1, 1]
        c[k] += d
        nbrs.append(c[0] + 3 * (c[1] + 3 * c[2]))
    for way in ("fanin", "fanout"):
        def point(k: int, way: str = way) -> Dict[str, float]:
            pairs = [(n, center) for n in nbrs[:k]] if way == "fanin" else [(center, n) for n in nbrs[:k]]
            r = ctx.run(_streams(pairs, size, count), BGP, shape="3x3x3", mode="smp", seed=ctx.seed)
            return {way: 8 * k * size * count / max(r.results[d] for _, d in pairs) / 1e6}
        sweep(ctx, out, range(1, 7), point, [Curve(way, "aggregate Mb/s", f"{way}_Mbps_n{{x}}", 1, "fan")],
              x_label="neighbours", log=lambda k, way=way: f"{way}: {k} neighbour(s)")
    out.notes.append("Each neighbour has its own link to the centre (389 MB/s of payload, 3,112 Mb/s); the "
                     "centre's DMA engine moves 3 bytes per cycle each way (20,400 Mb/s), enough for all six.")
    return out


@register("bgp-flowthrough", "bgp", "Traffic passing through a node while it runs an intra- or inter-node test")
def flowthrough(ctx: Context) -> Outcome:
    out = Outcome()
    size, count = (256 << 10, 2) if ctx.quick else (MB, 4)
    out.setup.append(f"4x4x4 torus in DUAL mode (2 tasks per node, ranks T-first); node B = (1,0,0) runs (a) a "
                     f"bandwidth test between its two tasks, (b) one from its task 0 to node (1,1,0) on its y link; "
                     f"{count} messages of {_label(size)}; 'flow': meanwhile node (0,0,0) streams to (2,0,0) and "
                     "(2,0,0) to (0,0,0), both through B on the x links.")
    # Ranks are T-first: node (x, y, z) holds ranks 2*(x + 4*(y + 4*z)) + t.
    def rank(x, y, z, t=0):
        return 2 * (x + 4 * (y + 4 * z)) + t
    flow = [(rank(0, 0, 0), rank(2, 0, 0)), (rank(2, 0, 0, 1), rank(0, 0, 0, 1))]
    tests = {"intranode": (rank(1, 0, 0), rank(1, 0, 0, 1)), "internode": (rank(1, 0, 0), rank(1, 1, 0))}
    for name, (s, d) in tests.items():
        for cond in ("idle", "flow"):
            pairs = [(s, d)] + (flow if cond == "flow" else [])
            # The through traffic keeps going for the whole test: longer streams.
            counts = [count] + [4 * count] * (len(pairs) - 1)
            res = ctx.run(_streams(pairs, size, counts), BGP, shape="4x4x4", mode="dual", mapping="TXYZ", seed=ctx.seed)
            bw = size * count / res.results[d] / 1e6
            out.metrics[f"{name}_bw_MBps_{cond}"] = round(bw, 1)
            ctx.log(f"{name} {cond}: {bw:.0f} MB/s")
    out.notes.append("Packets passing through a node use its router only, not its DMA engine (published), and the "
                     "through traffic here runs on B's x links: neither test shares anything with it but the "
                     "router.")
    return out


# ---------------------------------------------------------------- HALO under mappings

@register("bgp-halo", "bgp", "The NLOM HALO exchange on a 2D process grid under five mapping orders and a grid mapfile")
def halo(ctx: Context) -> Outcome:
    from .. import mapping

    out = Outcome()
    # processes -> (process grid, partition shape); VN mode fills every core.
    sizes = {512: ((32, 16), "4x4x8"), 2048: ((64, 32), "8x8x8")} if ctx.quick else \
        {16384: ((128, 128), "8x16x32"), 131072: ((512, 256), "32x32x32")}
    n, width, reps = 64, 2, 1
    nbytes = width * n * 8
    orders = ["XYZT", "TXYZ", "ZYXT", "TZYX", "YXZT"]
    out.setup.append(f"VN mode, every core a rank; an {n}x{n} subdomain per process on a periodic 2D grid of "
                     f"processes (ranks row-major, not reordered), halos of {width} rows / columns of doubles "
                     f"({nbytes} bytes) to the four neighbours with Irecv / Isend / Waitall; the time of one "
                     "exchange, slowest rank. Mappings: five orders of X, Y, Z, T (first fastest) and the mapfile "
                     "`bgsim map --grid PxQ` writes (the grid folded onto the torus).")

    def main(p: int, q: int):
        def body():
            comm = MPI.COMM_WORLD
            rank = comm.Get_rank()
            i, j = divmod(rank, q)
            nbs = [((i - 1) % p) * q + j, ((i + 1) % p) * q + j, i * q + (j - 1) % q, i * q + (j + 1) % q]
            outs = [np.full(width * n, rank, "f8") for _ in nbs]
            ins = [np.empty(width * n, "f8") for _ in nbs]
            comm.Barrier()
            t0 = MPI.Wtime()
            for _ in range(reps):
                reqs = [comm.Irecv(ins[k], source=nb, tag=k ^ 1) for k, nb in enumerate(nbs)]
                reqs += [comm.Isend(outs[k], dest=nb, tag=k) for k, nb in enumerate(nbs)]
                MPI.Request.Waitall(reqs)
            elapsed = (MPI.Wtime() - t0) / reps
            assert all(ins[k][0] == nb for k, nb in enumerate(nbs))
            return comm.reduce(elapsed, op=MPI.MAX)
        return body

    with tempfile.TemporaryDirectory() as tmp:
        for procs, (grid, shape) in sizes.items():
            dims = [int(v) for v in shape.split("x")]
            slots = mapping.grid_mapping(grid, dims, 4, nbytes=nbytes)
            gridmap = _mapfile(tmp, f"grid{procs}.map", slots)
            traffic = mapping.grid_traffic(grid, nbytes)
            times = {}
            for name, mp in [(o.lower(), o) for o in orders] + [("grid", gridmap)]:
                ctx.log(f"{procs} processes, mapping {name}")
                r = ctx.run(main(*grid), BGP, shape=shape, mode="vn", mapping=mp, seed=ctx.seed)
                times[name] = r.results[0] * 1e6
                out.metrics[f"time_us_{name}_{procs}"] = round(times[name], 3)
                used = slots if name == "grid" else mapping.order_slots(dims, 4, procs, mp)
                out.metrics[f"hop_bytes_{name}_{procs}"] = mapping.hop_bytes(traffic, used, dims)
            out.metrics[f"spread_{procs}"] = round(max(times.values()) / min(times.values()), 3)
            out.add_series(f"time_{procs}", list(range(len(times))), list(times.values()),
                           "mapping (" + ", ".join(times) + ")", "time per exchange (us)", group="time")
    last = max(sizes)
    out.key_metrics = [f"time_us_{m}_{last}" for m in ("xyzt", "txyz", "grid")] + [f"spread_{last}"]
    return out


# ---------------------------------------------------------------- collectives on communicators

def _timed(comm: Any, op: Callable[[], None]) -> float:
    """The slowest rank's time for `op` on `comm`, started together (a
    world barrier first; MPI_COMM_WORLD's runs on the barrier network)."""
    MPI.COMM_WORLD.Barrier()
    t0 = MPI.Wtime()
    op()
    return MPI.Wtime() - t0


@register("bgp-barrier", "bgp", "MPI_Barrier on COMM_WORLD, on it less its last process, on a dup, and 1-4 at once "
          "on quarters of it")
def barrier(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = _partitions(64, 512) if ctx.quick else _partitions(2048, 8192, 32768, 131072)
    out.setup.append("VN mode, every core a rank. Each figure is the slowest rank's time for one MPI_Barrier, the "
                     "ranks started together: on COMM_WORLD, on COMM_WORLD less its last process (MPI_Comm_create), "
                     "on a dup of COMM_WORLD, and on 1-4 of the quarters of COMM_WORLD (MPI_Comm_split by rank / "
                     "(n/4)) at the same time. The algorithm each call ran is the run's choice (docs/collectives.md): "
                     "the global-interrupt network for the whole partition, BG/P's binomial barrier otherwise (dissemination "
                     "rounds among the largest power-of-two set of ranks, the ranks beyond it paired with ranks in it).")

    def main():
        world = MPI.COMM_WORLD
        r, n = world.Get_rank(), world.Get_size()
        sub = world.Create(world.Get_group().Excl([n - 1]))
        dup = world.Dup()
        quarter = world.Split(r // (n // 4), r)
        res = {"world": _timed(world, world.Barrier), "dup": _timed(dup, dup.Barrier)}
        res["sub"] = _timed(sub, sub.Barrier) if sub != MPI.COMM_NULL else _timed(world, lambda: None)
        for c in range(1, 5):
            res[f"c{c}"] = _timed(quarter, quarter.Barrier if r // (n // 4) < c else (lambda: None))
        return {k: world.reduce(v, op=MPI.MAX) for k, v in res.items()}

    algos = {}

    def point(cores: int) -> Dict[str, float]:
        nonlocal algos
        r = ctx.run(main, BGP, shape=sizes[cores], mode="vn", seed=ctx.seed)
        algos = r.collectives.get("barrier", {})
        return {(k if k in ("world", "sub", "dup") else f"parallel_{k}"): v * 1e6 for k, v in r.results[0].items()}
    sweep(ctx, out, sizes, point, [Curve(k, "barrier time (us)", f"{k}_us_{{x}}", 3, "barrier") for k in ("world", "sub", "dup")]
          + [Curve(f"parallel_c{c}", "time of c parallel barriers (us)", f"parallel_us_{{x}}_c{c}", 3, "parallel")
             for c in range(1, 5)], x_label="cores", log=lambda cores: f"{cores} cores ({sizes[cores]})")
    xs = list(sizes)
    out.notes.append("Barrier algorithms of the largest run, calls: " + ", ".join(f"{k} {v}" for k, v in algos.items()))
    last = xs[-1]
    out.key_metrics = [f"{k}_us_{last}" for k in ("world", "sub", "dup")] + [f"parallel_us_{last}_c4"]
    return out


@register("bgp-parallel-colls", "bgp", "MPI_Allreduce (16 KB) and MPI_Allgather (4 B) on 1-4 quarters of "
          "COMM_WORLD at once")
def parallel_colls(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = _partitions(64, 512) if ctx.quick else _partitions(2048, 8192, 32768, 131072)
    out.setup.append("VN mode, every core a rank; COMM_WORLD split into quarters by rank / (n/4); c of them "
                     "(c = 1..4) run the collective at the same time: MPI_Allreduce of 16 KB of doubles (MPI_SUM) "
                     "and MPI_Allgather of 4 B per rank. The figure is the slowest participating rank's time. "
                     "The collective network serves the whole partition only: a quarter (one rank on every node) "
                     "reduces with BG/P MPI's torus allreduce (torus_rectangle: partial sums combined on every "
                     "node's core along lines, docs/collectives.md) and gathers with MPICH's recursive doubling. "
                     "Buffers are size-only and shared by the ranks (bgsim.shared_array): "
                     "the same messages and times as full buffers without the data, which at 131,072 cores "
                     "would be 17 GB of allgather results (docs/buffers.md).")

    def main():
        world = MPI.COMM_WORLD
        r, n = world.Get_rank(), world.Get_size()
        color = r // (n // 4)
        quarter = world.Split(color, r)
        send = shared_array(2048, "f8", key="send")
        recv = shared_array(2048, "f8", key="recv")
        one = shared_array(1, "i4", key="one")
        gathered = shared_array(quarter.Get_size(), "i4", key="gathered")
        res = {}
        for c in range(1, 5):
            on = color < c
            res[f"allreduce_c{c}"] = _timed(quarter, (lambda: quarter.Allreduce(send, recv, op=MPI.SUM)) if on
                                            else (lambda: None))
            res[f"allgather_c{c}"] = _timed(quarter, (lambda: quarter.Allgather(one, gathered)) if on
                                            else (lambda: None))
        return {k: world.reduce(v, op=MPI.MAX) for k, v in res.items()}

    def point(cores: int) -> Dict[str, float]:
        r = ctx.run(main, BGP, shape=sizes[cores], mode="vn", seed=ctx.seed, buffers="size-only")
        return {k: v * 1e6 for k, v in r.results[0].items()}
    sweep(ctx, out, sizes, point, [Curve(f"{op}_c{c}", f"{op} time (us)", f"{op}_us_{{x}}_c{c}", 3, op)
                                   for c in range(1, 5) for op in ("allreduce", "allgather")],
          x_label="cores", log=lambda cores: f"{cores} cores ({sizes[cores]})")
    last = list(sizes)[-1]
    out.key_metrics = [f"{op}_us_{last}_c{c}" for op in ("allreduce", "allgather") for c in (1, 4)]
    return out


@register("bgp-bcast", "bgp", "MPI_Bcast on COMM_WORLD vs COMM_WORLD less its last process, and 1-4 at once on "
          "quarters of it")
def bcast(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = _partitions(64, 512) if ctx.quick else _partitions(2048, 8192, 32768, 131072)
    lengths = (4, 16384)
    out.setup.append("VN mode, every core a rank. Each figure is the slowest rank's time for one MPI_Bcast from "
                     "the communicator's rank 0, the ranks started together, of 4 B and of 16 KB: on COMM_WORLD, on "
                     "COMM_WORLD less its last process (MPI_Comm_create), and on 1-4 of the quarters of COMM_WORLD "
                     "(MPI_Comm_split by rank / (n/4)) at the same time. The algorithm each call ran is the run's "
                     "choice (docs/collectives.md), BG/P MPI's own at every size: the collective network for the "
                     "whole partition; on a quarter (one rank on every node) the rectangle broadcast (torus_deposit: "
                     "deposit-bit lines, forwarded by the quarter's core on every node); on COMM_WORLD less its last "
                     "process the binomial broadcast (torus_binomial: every rank sends to all its children at once "
                     "when its data is in, eager at every size).")

    def main():
        def body():
            world = MPI.COMM_WORLD
            r, n = world.Get_rank(), world.Get_size()
            sub = world.Create(world.Get_group().Excl([n - 1]))
            color = r // (n // 4)
            quarter = world.Split(color, r)
            res = {}
            for nbytes in lengths:
                buf = np.full(nbytes, 7 if world.Get_rank() == 0 else 0, "u1")
                res[f"world_{nbytes}"] = _timed(world, lambda: world.Bcast(buf, root=0))
                assert buf[-1] == 7
                res[f"sub_{nbytes}"] = _timed(sub, (lambda: sub.Bcast(buf, root=0)) if sub != MPI.COMM_NULL
                                              else (lambda: None))
                for c in range(1, 5):
                    qbuf = np.full(nbytes, 5 if quarter.Get_rank() == 0 else 0, "u1")
                    on = color < c
                    res[f"c{c}_{nbytes}"] = _timed(quarter, (lambda: quarter.Bcast(qbuf, root=0)) if on
                                                   else (lambda: None))
                    assert not on or qbuf[-1] == 5
            return {k: world.reduce(v, op=MPI.MAX) for k, v in res.items()}
        return body

    xs: List[int] = []
    series: Dict[str, List[float]] = {}
    algos: Dict[str, int] = {}
    for cores, shape in sizes.items():
        ctx.log(f"{cores} cores ({shape})")
        r = ctx.run(main(), BGP, shape=shape, mode="vn", seed=ctx.seed)
        xs.append(cores)
        for k, v in r.results[0].items():
            which, nbytes = k.split("_")
            label = _label(int(nbytes))
            name = f"{which}_us_{cores}_{label}" if which in ("world", "sub") else \
                f"parallel_us_{cores}_{label}_{which}"
            out.metrics[name] = round(v * 1e6, 3)
            series.setdefault(f"{which}_{label}", []).append(v * 1e6)
        algos = r.collectives.get("bcast", {})
    for k, v in series.items():
        which, label = k.split("_")
        out.add_series(k, xs, v, "cores", f"bcast time, {label} (us)", group=f"bcast_{label}" if which in
                       ("world", "sub") else f"parallel_{label}")
    if algos:
        out.notes.append("Broadcast algorithms of the largest run, calls: " +
                         ", ".join(f"{k} {v}" for k, v in algos.items()))
    last = max(xs)
    out.key_metrics = [f"{w}_us_{last}_{_label(b)}" for w in ("world", "sub") for b in lengths] + \
        [f"parallel_us_{last}_16KB_c4"]
    return out
