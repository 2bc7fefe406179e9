"""MPI point-to-point on the simulated BG/L: latency by protocol and by
distance, bandwidth of one link and of several links at once. Every program
here is an ordinary mpi4py program run by `bgsim.run`."""

from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

from .. import MPI
from ..api import Machine
from ..errors import WorkloadError
from .base import Context, Curve, Outcome, register, sweep
from .base import size_label as _label

BGL = Machine("bgl")
MHZ = BGL.info["cpu_mhz"]
PROTOCOLS = ["one_packet", "eager", "adaptive_eager", "rendezvous"]


def _pingpong(peer: int, nbytes: int, iters: int, warmup: int = 0, fresh: bool = False):
    """rank 0 <-> `peer`: mean half round trip (seconds) over `iters` after
    `warmup`; `fresh`: a new buffer for every message (out of cache)
    instead of the same one."""
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        if r not in (0, peer):
            return None
        other = peer if r == 0 else 0
        bufs = [bytearray(nbytes) for _ in range(warmup + iters if fresh else 1)]
        t0 = 0.0
        for i in range(warmup + iters):
            buf = bufs[i % len(bufs)]
            if i == warmup:
                t0 = MPI.Wtime()
            if r == 0:
                comm.Send(buf, dest=other, tag=1)
                comm.Recv(buf, source=other, tag=1)
            else:
                comm.Recv(buf, source=other, tag=1)
                comm.Send(buf, dest=other, tag=1)
        return (MPI.Wtime() - t0) / iters / 2
    return main


# ---------------------------------------------------------------- latency by protocol

@register("mpi-latency-protocols", "bgl", "1-byte half round trip between neighbours, per protocol, message layer and MPI",
          published={f"{lvl} {p}, cycles (BG/L calibration)": (v, f"{key}_cycles_{p}")
                     for lvl, key, vals in [("message layer", "msglayer", [1600, 2700, 3300, 12000]),
                                            ("MPI", "mpi", [2350, 4000, 11000, 17500])]
                     for p, v in zip(PROTOCOLS, vals)})
def latency_protocols(ctx: Context) -> Outcome:
    out = Outcome()
    iters = 5 if ctx.quick else 50
    out.setup.append(f"2 nodes, nearest neighbours (2x1x1 mesh); 1-byte ping-pong with Send/Recv, {iters} round trips "
                     "after 2 warm-up ones; each protocol forced with --set mpi.protocol=...; message-layer level = "
                     "the same program with MPI's own per-message costs left out.")
    out.key_metrics = [f"{lvl}_cycles_{p}" for lvl in ("msglayer", "mpi") for p in PROTOCOLS]
    for level in ("msglayer", "mpi"):
        def point(p: str, level: str = level) -> Dict[str, float]:
            r = ctx.run(_pingpong(1, 1, iters, 2), BGL, shape="2x1x1", mesh="xyz", seed=ctx.seed,
                        settings=[f'mpi.protocol="{p}"'], layer=level)
            return {level: r.results[0] * MHZ * 1e6}
        sweep(ctx, out, PROTOCOLS, point, [Curve(level, "half round trip (cycles)", f"{level}_cycles_{{x}}", 1, "latency")],
              x_label="protocol (0 one-packet, 1 eager, 2 adaptive eager, 3 rendezvous)",
              log=lambda p, level=level: f"{level} {p}", plot_xs=range(len(PROTOCOLS)))
    out.notes.append("These eight figures are calibration targets: msglayer.send/recv_message_cycles, "
                     "msglayer.rendezvous_wait_cycles, mpi.message_cycles and mpi.wait_cycles of the bgl preset were "
                     "set so that this ping-pong reproduces them (docs/processor.md, row by row); the network part "
                     "(hop latency, packet read/write, the message layer's per-packet work) comes from the model.")
    return out


# ---------------------------------------------------------------- latency by distance

def _node_at_hops(h: int, dims: Sequence[int]) -> List[int]:
    """Coordinates h hops from the origin on a torus: fill x, then y, then z."""
    c = []
    for d in dims:
        step = min(h, d // 2)
        c.append(step)
        h -= step
    if h:
        raise WorkloadError("too many hops for this torus")
    return c


@register("mpi-latency-hops", "bgl", "MPI 1-byte half round trip from rank 0 to nodes 1..12 hops away (8x8x8)",
          published={"latency at 1 hop, us (BG/L calibration)": (3.35, "latency_us_h1"),
                     "slope, ns per hop (BG/L calibration)": (90.0, "slope_ns_per_hop")})
def latency_hops(ctx: Context) -> Outcome:
    out = Outcome()
    shape = (4, 4, 4) if ctx.quick else (8, 8, 8)
    iters = 5 if ctx.quick else 20
    maxh = sum(d // 2 for d in shape)
    out.setup.append(f"{'x'.join(map(str, shape))} torus, one rank per node (XYZT); rank 0 ping-pongs 1 byte with "
                     f"the node h hops away (x first, then y, then z), {iters} round trips each, default protocol "
                     "(one-packet), deterministic routing.")
    hs = list(range(1, maxh + 1))

    def peer(h: int) -> int:
        x, y, z = _node_at_hops(h, shape)
        return x + shape[0] * (y + shape[1] * z)

    def point(h: int) -> Dict[str, float]:
        r = ctx.run(_pingpong(peer(h), 1, iters, 2), BGL, shape="x".join(map(str, shape)), seed=ctx.seed)
        return {"latency": r.results[0] * 1e6}
    lat = sweep(ctx, out, hs, point, [Curve("latency", "half round trip (us)", "latency_us_h{x}", 4)], x_label="hops",
                log=lambda h: f"{h} hops (rank {peer(h)})")["latency"]
    slope, intercept = np.polyfit(hs, lat, 1)
    out.metrics["slope_ns_per_hop"] = round(slope * 1000, 2)
    out.metrics["intercept_us"] = round(intercept, 4)
    out.key_metrics = ["latency_us_h1", f"latency_us_h{maxh}", "slope_ns_per_hop", "intercept_us"]
    out.notes.append("The per-hop slope is the torus's hop latency (calibrated on the packet layer); the intercept "
                     "is software plus one packet's serialisation.")
    return out


# ---------------------------------------------------------------- one link, both ways

def _exchange(peers: Sequence[int], nbytes: int, iters: int, center: int = 0, window: int = 1):
    """`center` exchanges `window` messages of `nbytes` with every peer at once
    (Isend + Irecv, Waitall), `iters` times; returns the mean time per exchange
    (seconds) at the centre."""
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        comm.Barrier()
        if r != center and r not in peers:
            return None
        partners = list(peers) if r == center else [center]
        sbuf = np.zeros(nbytes, dtype="u1")
        rbufs = [np.empty(nbytes, dtype="u1") for _ in partners for _ in range(window)]
        t0 = MPI.Wtime()
        for _ in range(iters):
            reqs = [comm.Irecv(b, source=partners[i // window], tag=7) for i, b in enumerate(rbufs)]
            reqs += [comm.Isend(sbuf, dest=p, tag=7) for p in partners for _ in range(window)]
            MPI.Request.Waitall(reqs)
        return (MPI.Wtime() - t0) / iters
    return main


@register("mpi-bandwidth-link", "bgl", "MPI bandwidth of one link used both ways at once, 1 B..1 MB",
          published={"raw limit, MB/s (published: 2 x 175)": (350.0, None),
                     "payload limit, MB/s (published: 0.89 x 2 x 175)": (310.0, "peak_MBps")})
def bandwidth_link(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = [1 << k for k in range(0, 21, 2 if ctx.quick else 1)]
    if ctx.quick:
        sizes = [s for s in sizes if s <= 1 << 16] + [1 << 20]
    window = 64
    out.setup.append(f"2 neighbouring nodes (2x1x1 mesh: one link); both stream to each other at once, a window "
                     f"of {window} messages each way in flight (Irecv + Isend + Waitall, as osu_bibw), repeated; "
                     "bandwidth = bytes sent both ways / time; default protocol choice by size.")
    def iters(s: int) -> int:
        return max(2, min(20, (1 << 22) // window // max(s, 1) // (8 if ctx.quick else 1))) if s < (1 << 20) else 1

    def point(s: int) -> Dict[str, float]:
        r = ctx.run(_exchange([1], s, iters(s), window=window), BGL, shape="2x1x1", mesh="xyz", seed=ctx.seed)
        return {"bandwidth": 2 * window * s / r.results[0] / 1e6}
    ys = sweep(ctx, out, sizes, point, [Curve("bandwidth", "MB/s (both directions)", lambda s: f"MBps_{_label(s)}" if _label(s) in ("64B", "1KB", "16KB", "1MB") else None, 2)],
               x_label="message bytes", log=lambda s: f"{_label(s)} x {window} x {iters(s)}")["bandwidth"]
    peak = max(ys)
    out.metrics["peak_MBps"] = round(peak, 2)
    out.metrics["half_bw_B"] = float(next(s for s, y in zip(sizes, ys) if y >= peak / 2))
    out.key_metrics = ["MBps_64B", "MBps_1KB", "MBps_16KB", "MBps_1MB", "peak_MBps", "half_bw_B"]
    out.notes.append("Each 256-byte packet carries 240 payload bytes and costs 262 byte-times on its link plus an "
                     "8-byte ack on the reverse link, so both directions together move at most 2 x 175 x 240/270 "
                     "= 311 MB/s of payload; the cores (one 204-cycle read and one write per packet) must keep up "
                     "with both directions at once.")
    return out


# ---------------------------------------------------------------- several links

MULTI = {
    "eager": ['mpi.protocol="eager"'],
    "adaptive_eager": ['mpi.protocol="adaptive_eager"'],
    "rendezvous": ['mpi.protocol="rendezvous"'],
    "rendezvous_coproc": ['mpi.protocol="rendezvous"', "msglayer.coprocessor_rendezvous=true"],
}


@register("mpi-multilink", "bgl", "One node exchanging with 1..6 neighbours at once, per protocol",
          published={"links the main core keeps up with, eager (BG/L calibration: two)": (2.0, "links_handled_eager"),
                     "links the main core keeps up with, rendezvous (BG/L calibration: two)":
                         (2.0, "links_handled_rendezvous")})
def multilink(ctx: Context) -> Outcome:
    out = Outcome()
    nbytes = (64 << 10) if ctx.quick else (1 << 20)
    iters = 1 if ctx.quick else 2
    center = 1 + 3 * (1 + 3 * 1)
    # Neighbours of (1,1,1) in the order x+, x-, y+, y-, z+, z-.
    nbrs = []
    for k, d in ((0, 1), (0, -1), (1, 1), (1, -1), (2, 1), (2, -1)):
        c = [1, 1, 1]
        c[k] += d
        nbrs.append(c[0] + 3 * (c[1] + 3 * c[2]))
    out.setup.append(f"3x3x3 torus; the centre node exchanges {_label(nbytes)} both ways with 1..6 of its "
                     f"neighbours at once (x+, x-, y+, y-, z+, z-), {iters} time(s); protocol forced; "
                     "aggregate = bytes sent + received by the centre / time. rendezvous_coproc: the second "
                     "core receives the rendezvous data (coprocessor mode).")
    for name, sets in MULTI.items():
        def point(k: int, name: str = name, sets: List[str] = sets) -> Dict[str, float]:
            r = ctx.run(_exchange(nbrs[:k], nbytes, iters, center), BGL, shape="3x3x3", seed=ctx.seed, settings=sets)
            return {name: 2 * k * nbytes / r.results[center] / 1e6}
        ys = sweep(ctx, out, range(1, 7), point, [Curve(name, "aggregate MB/s (in + out)", f"agg_MBps_{name}_l{{x}}", 1,
                                                        "aggregate")],
                   x_label="links used at once", log=lambda k, name=name: f"{name}, {k} link(s)")[name]
        # How many links' worth of traffic the centre sustains at best.
        out.metrics[f"links_handled_{name}"] = round(max(ys) / ys[0], 2)
    out.key_metrics = [f"agg_MBps_{n}_l{k}" for n in MULTI for k in (1, 6)] + [f"links_handled_{n}" for n in MULTI]
    out.notes.append("Link limit: 2 x 155 MB/s of payload per link used both ways. The centre's main core reads "
                     "every arriving packet (204 cycles) and writes every departing one, each with the message "
                     "layer's own per-packet work (msglayer.packet_handler_cycles), so with several links the core, "
                     "not the network, sets the pace - unless the coprocessor receives. The published BG/L statement that the "
                     "main core handles two links with eager and rendezvous, and not even two with adaptive eager, "
                     "calibrated msglayer.packet_handler_cycles and msglayer.adaptive_packet_cycles.")
    return out
