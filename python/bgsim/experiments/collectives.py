"""MPI collectives on the simulated BG/L: broadcast and all-to-all in their
algorithm families, and the collective (tree) network. The programs are
communication skeletons (`bgsim.skeleton`): the collectives' messages carry
their sizes, not data, so paper-scale sizes fit in memory; the algorithms
and the simulated network are those of real runs."""

from __future__ import annotations

from typing import Dict, Sequence

from .. import MPI, skeleton
from ..api import Machine
from .base import Context, Curve, Outcome, register, sweep
from .base import size_label as _label

BGL = Machine("bgl")
TPB = BGL.info["ticks_per_link_byte"]
CPU_HZ = BGL.info["cpu_mhz"] * 1e6
LINK_BPS = BGL.info["link_MBps"] * 1e6


def _timed(op, reps: int):
    """Every rank: barrier, then `reps` calls of op(comm); returns the time
    per call from the common start to this rank's end."""
    def main():
        comm = MPI.COMM_WORLD
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(reps):
            op(comm)
        return (MPI.Wtime() - t0) / reps
    return main


def _span(res) -> float:
    """Time of the slowest rank."""
    return max(res.results)


# ---------------------------------------------------------------- bcast

BCAST_ALGOS = {"binomial": "generic", "torus_p2p": "torus_p2p", "torus_deposit": "torus_deposit", "tree": "tree"}


@register("mpi-bcast", "bgl", "MPI_Bcast on a 4x4x2 mesh: generic, torus-aware, deposit-bit, tree network; 1 B..4 MB")
def bcast(ctx: Context) -> Outcome:
    out = Outcome()
    top = 18 if ctx.quick else 22
    sizes = [1 << k for k in range(0, top + 1, 2)]
    out.setup.append("32 nodes (4x4x2 mesh), one rank per node, root rank 0; time = from a common start (after a "
                     "barrier) to the last rank's return, per call; MB/s = message bytes / time. Algorithms: "
                     "binomial = the generic family (binomial tree below 12 KB; above, MPICH's scatter + allgather, "
                     "the allgather by recursive doubling below 512 KB on these 32 ranks, a ring from 512 KB); "
                     "torus_p2p = three parts spread x-y-z / y-z-x / z-x-y over MPI point-to-point, pipelined in "
                     "16 KB segments; torus_deposit = message-layer deposit-bit line packets, three colours, "
                     "forwarded per packet; tree = the collective network.")
    if ctx.quick:
        out.setup.append("quick scale: sizes up to 256 KB.")
    for key, algo in BCAST_ALGOS.items():
        def point(s: int, key: str = key, algo: str = algo) -> Dict[str, float]:
            reps = 4 if s <= 4096 else 1
            res = ctx.run(_timed(lambda comm: skeleton.bcast(comm, s, 0), reps), BGL, shape="4x4x2", mesh="xyz",
                          seed=ctx.seed, coll={"bcast": algo})
            return {key: s / _span(res) / 1e6}
        sweep(ctx, out, sizes, point, [Curve(key, "MB/s", lambda s, key=key: f"MBps_{key}_{_label(s)}"
                                             if _label(s) in ("1KB", "16KB", "256KB", "4MB") else None, 2, "bcast")],
              x_label="message bytes", log=lambda s, key=key: f"{key} {_label(s)}")
    out.key_metrics = [k for k in out.metrics if k.endswith(("_16KB", "_256KB", "_4MB"))]
    out.notes.append("Limits: one torus link carries 154 MB/s of payload one way, so a broadcast cut into parts that "
                     "use several links of the root at once can beat one link; the tree moves 256 payload bytes per "
                     "532 cycles (337 MB/s) on every link at once.")
    return out


# ---------------------------------------------------------------- alltoall

def _alltoall_bound_s(shape: Sequence[int], torus: Sequence[bool], nbytes: int) -> float:
    """Busiest-link lower bound of an all-to-all of `nbytes` per pair with
    minimal routes spread evenly, counting every packet's wire bytes
    (headers, trailer, gap, and the ack on the reverse link)."""
    n = shape[0] * shape[1] * shape[2]
    payload = BGL.info["max_payload_bytes"]
    full, rest = divmod(nbytes, payload)
    chunk = 32

    def wire(p: int) -> int:
        return -(-(p + 16) // chunk) * chunk + 4 + 2 + 8

    per_msg = full * wire(payload) + (wire(rest) if rest else 0)
    if nbytes == 0:
        per_msg = wire(0)
    worst = 0.0
    for d, k in enumerate(shape):
        if k == 1:
            continue
        # Hops in this dimension over every (src, dest) pair, shared by the
        # dimension's directed links.
        if torus[d]:
            dist = sum(min(x, k - x) for x in range(k))
            links = 2 * n
        else:
            dist = sum(abs(a - b) for a in range(k) for b in range(k)) / k
            links = 2 * n * (k - 1) / k
        hops = n * (n // k) * dist
        worst = max(worst, hops / links)
    return worst * per_msg / LINK_BPS


ALLTOALL_ALGOS = {"generic": "generic", "postall": "postall", "msglayer": "msglayer"}


@register("mpi-alltoall", "bgl", "MPI_Alltoall on 8x8x8: generic, post-all, message-layer injection; 16 B..256 KB per pair")
def alltoall(ctx: Context) -> Outcome:
    out = Outcome()
    shape = (4, 4, 4) if ctx.quick else (8, 8, 8)
    sizes = [16, 64, 256, 1024, 4096] if ctx.quick else [16, 64, 256, 1024, 4096, 16384, 262144]
    sname = "x".join(map(str, shape))
    out.setup.append(f"{sname} torus, one rank per node; MPI_Alltoall of S bytes per pair; % of peak = busiest-link "
                     "bound (minimal routes spread evenly; every wire overhead of every packet) / time from a common "
                     "start to the last rank's return. generic = post-all up to 32 KB per pair, pairwise exchange "
                     "above (MPICH's switch); postall = post every receive and send, then wait; msglayer = packets "
                     "injected directly, dynamically routed, destinations in a random order per node, no "
                     "per-message protocol or MPI work.")
    if ctx.quick:
        out.setup.append("quick scale: 4x4x4, sizes up to 4 KB.")
    else:
        out.setup.append("paper scale: 256 KB per pair is a 68 GB exchange (about 285 million packets) and takes "
                         "about half an hour of wall time per algorithm.")
    for key, algo in ALLTOALL_ALGOS.items():
        def point(s: int, key: str = key, algo: str = algo) -> Dict[str, float]:
            res = ctx.run(_timed(lambda comm: skeleton.alltoall(comm, s), 1), BGL, shape=sname, seed=ctx.seed,
                          coll={"alltoall": algo})
            return {key: 100 * _alltoall_bound_s(shape, (True, True, True), s) / _span(res)}
        sweep(ctx, out, sizes, point, [Curve(key, "% of peak", lambda s, key=key: f"pct_peak_{key}_{_label(s)}"
                                             if _label(s) in ("64B", "1KB", "16KB", "256KB") else None, 2, "pct_peak")],
              x_label="bytes per pair", log=lambda s, key=key: f"{key} {_label(s)}")
    out.key_metrics = list(out.metrics)
    return out


# ---------------------------------------------------------------- tree

@register("mpi-tree", "bgl", "Tree-network MPI_Bcast and MPI_Allreduce (integer sum) on 512 nodes",
          published={"collective network raw link rate, MB/s (published)": (350.0, None)})
def tree(ctx: Context) -> Outcome:
    out = Outcome()
    shape = "4x4x4" if ctx.quick else "8x8x8"
    sizes = [1024, 65536, 1 << 20]
    out.setup.append(f"{shape} (one rank per node); MPI_Bcast from rank 0 and MPI_Allreduce of 64-bit integers "
                     "(sum, done by the tree's ALU in one pass) on the collective network; time from a common start "
                     "to the last rank's return; MB/s = message bytes / time.")
    for op in ("bcast", "allreduce"):
        def point(s: int, op: str = op) -> Dict[str, float]:
            if op == "bcast":
                f = (lambda comm: skeleton.bcast(comm, s, 0))
            else:
                f = (lambda comm: skeleton.allreduce(comm, s, 8, floating=False))
            res = ctx.run(_timed(f, 2), BGL, shape=shape, seed=ctx.seed, coll={op: "tree"})
            return {op: s / _span(res) / 1e6}
        sweep(ctx, out, sizes, point, [Curve(op, "MB/s", lambda s, op=op: f"{op}_MBps_{_label(s)}", 2, "tree")],
              x_label="message bytes", log=lambda s, op=op: f"{op} {_label(s)}")
    out.key_metrics = list(out.metrics)
    out.notes.append("A tree packet carries 256 payload bytes in 266 byte-times at 2 cycles per byte: at most "
                     "700e6 x 256 / 532 = 337 MB/s; small messages pay the tree's depth (pipeline fill) and the "
                     "cores' packet write (50 cycles) and read (204 cycles).")
    return out
