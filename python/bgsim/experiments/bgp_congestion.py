"""Blue Gene/P congestion under all-to-all traffic: a 64 KB MPI_Alltoall on
the whole machine, all-to-alls within the planes of a logical 3D grid, and
nearest-neighbour exchanges on logical 2D and 3D grids by MPI_Alltoallv and
by point-to-point. The figure of merit is the torus's "no tokens" counter:
events where a node had a packet for a direction and no downstream tokens,
summed over every node and direction, with a heat map of where they
happen.

The programs are communication skeletons (`bgsim.skeleton`): their messages
carry their sizes, not data (a 64 KB all-to-all on n ranks holds 64 KB x n
per rank), and run the same collective algorithms as MPI programs."""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Tuple

import numpy as np

from .. import MPI, phase, mapping, skeleton
from ..program import RunResult
from .base import Context, Outcome, register
from .bgp import BGP, PARTITIONS

KB64 = 64 * 1024

#: The logical 3D grids that machine's MPI returned (published), and the same
#: rule (procs / 64 x 8 x 8) for the quick sizes.
LOGICAL_3D = {128: (2, 8, 8), 512: (8, 8, 8), 2048: (32, 8, 8), 4096: (64, 8, 8), 8192: (128, 8, 8),
              16384: (128, 16, 8), 32768: (128, 32, 8)}


def _timed_program(body: Callable[[], None]) -> Callable[[], float]:
    """A rank program: a barrier, `body`, and the slowest rank's time (s)."""
    def main() -> float:
        world = MPI.COMM_WORLD
        world.Barrier()
        t0 = MPI.Wtime()
        body()
        return world.reduce(MPI.Wtime() - t0, op=MPI.MAX)
    return main


def _record(out: Outcome, r: RunResult, key: str, name: str) -> None:
    """The run's time and no-token count under `key`, and its heat map as
    figure `name` (the last run of a name is drawn)."""
    out.metrics[f"time_us_{key}"] = round(r.results[0] * 1e6, 3)
    out.metrics[f"notokens_{key}"] = int(r.counters["no_token_stalls"])
    out.figures[f"notokens_{name}"] = r.stalls_plot


def _run(main: Callable[[], float], procs: int, ctx: Context) -> RunResult:
    return ctx.run(main, BGP, shape=PARTITIONS[procs], mode="vn", seed=ctx.seed)


def _phase_alltoalls(out: Outcome, ctx: Context, sizes: List[int],
                      groups: Callable[[int], Optional[np.ndarray]]) -> Dict[int, float]:
    """The phase model's 64 KB pairwise all-to-alls (one per row of
    `groups(procs)`, all at once; None: COMM_WORLD) at `sizes` processes:
    phase_time_us_N, and phase_error_pct_N against the packet tier's
    time_us_N where it ran, else time_us_N (`Outcome.add_phase`)."""
    res: Dict[int, float] = {}
    if not sizes:
        return res
    cal = phase.calibrate("bgp", "vn", KB64)
    for procs in sizes:
        ctx.log(f"{procs} processes ({PARTITIONS[procs]}), phase model")
        dims = [int(v) for v in PARTITIONS[procs].split("x")]
        slots = np.array(mapping.order_slots(dims, 4, procs, "XYZT"))
        res[procs] = round(phase.pairwise_alltoall(slots, dims, KB64, cal, groups=groups(procs)).time_s * 1e6, 3)
        out.add_phase(f"time_us_{procs}", res[procs], f"phase_time_us_{procs}", f"phase_error_pct_{procs}")
    out.add_series("time_phase", sorted(res), [res[p] for p in sorted(res)], "processes", "all-to-all time (us)",
                   group="time")
    return res


@register("bgp-alltoall-congestion", "bgp", "64 KB MPI_Alltoall on every core: time and no-token events", phase=True)
def alltoall_congestion(ctx: Context) -> Outcome:
    out = Outcome()
    packet_sizes = [] if ctx.fidelity == "phase" else ([32, 128] if ctx.quick else [32, 128, 512, 2048])
    phase_sizes = [] if ctx.fidelity == "packet" else \
        ([32, 128] if ctx.quick else [32, 128, 512, 2048, 4096, 8192, 16384, 32768])
    out.setup.append("VN mode, every core a rank (XYZT); one MPI_Alltoall of 64 KB per pair (a communication "
                     "skeleton), the algorithm the run's rules choose (pairwise exchange for 64 KB); the slowest "
                     "rank's time, and the no-token events of every node and direction summed.")
    if phase_sizes:
        out.setup.append(f"Packets at {', '.join(map(str, packet_sizes)) or 'no size'} processes; the phase model "
                         f"(bgsim.phase: n - 1 pairwise phases, each as long as one 64 KB exchange alone plus the "
                         f"busiest link's extra bytes; docs/phase.md) at {', '.join(map(str, phase_sizes))}. "
                         "time_us_N is the packet tier's where it ran, else the phase model's (phase_time_us_N); "
                         "the phase model gives no no-token counts. phase_error_pct_N: its error against packets "
                         "where both ran.")
    times: Dict[int, float] = {}
    tokens: Dict[int, float] = {}
    algos: Dict[str, int] = {}
    for procs in packet_sizes:
        ctx.log(f"{procs} processes ({PARTITIONS[procs]}), packets")
        r = _run(_timed_program(lambda: skeleton.alltoall(MPI.COMM_WORLD, KB64)), procs, ctx)
        _record(out, r, str(procs), "alltoall")
        times[procs] = out.metrics[f"time_us_{procs}"]
        tokens[procs] = out.metrics[f"notokens_{procs}"]
        algos = r.collectives.get("alltoall", {})
    if times:
        out.add_series("time_packet", sorted(times), [times[p] for p in sorted(times)], "processes",
                       "all-to-all time (us)", group="time")
        out.add_series("notokens", sorted(tokens), [tokens[p] for p in sorted(tokens)], "processes",
                       "no-token events (all nodes, directions)")
    _phase_alltoalls(out, ctx, phase_sizes, lambda procs: None)
    if algos:
        out.notes.append("All-to-all algorithm of the largest packet run, calls: " +
                         ", ".join(f"{k} {v}" for k, v in algos.items()))
    last = max(packet_sizes + phase_sizes)
    out.key_metrics = [f"time_us_{last}"] + ([f"notokens_{max(packet_sizes)}"] if packet_sizes else []) + \
        [k for k in out.metrics if k.startswith("phase_error_pct_")]
    return out


@register("bgp-cartesian", "bgp", "64 KB MPI_Alltoall within the planes of a logical 3D grid", phase=True)
def cartesian(ctx: Context) -> Outcome:
    out = Outcome()
    # Packets: the planes' all-to-alls at 8,192 processes are 550 GB.
    sizes = [] if ctx.fidelity == "phase" else ([128] if ctx.quick else [128, 512, 2048, 4096])
    phase_sizes = [] if ctx.fidelity == "packet" else ([128, 512] if ctx.quick else sorted(LOGICAL_3D))
    out.setup.append("VN mode, every core a rank (XYZT); MPI_Cart_create with the logical 3D grid that machine's "
                     "MPI returned (published; procs / 64 x 8 x 8 for the quick sizes), not reordered; "
                     "MPI_Cart_sub keeping the first two dimensions gives one communicator per logical plane; "
                     "every plane runs a 64 KB all-to-all at once (a communication skeleton). Packets up to 4,096 "
                     "processes: at 8,192 the planes' all-to-alls are 550 GB, beyond packets on one core.")
    if phase_sizes:
        out.setup.append(f"The phase model (docs/phase.md: every plane's m - 1 pairwise phases at once) at "
                         f"{', '.join(map(str, phase_sizes))} processes gives phase_time_us_N, its error against "
                         "packets where both ran (phase_error_pct_N) and time_us_N beyond; it gives no no-token "
                         "counts.")

    def main(dims: Tuple[int, int, int]) -> Callable[[], float]:
        def body() -> None:
            cart = MPI.COMM_WORLD.Create_cart(list(dims), periods=[True] * 3)
            plane = cart.Sub([True, True, False])
            MPI.COMM_WORLD.Barrier()
            skeleton.alltoall(plane, KB64)
        return _timed_program(body)

    xs, tokens = [], []
    times: Dict[int, float] = {}
    for procs in sizes:
        dims = LOGICAL_3D[procs]
        ctx.log(f"{procs} processes, logical grid {'x'.join(map(str, dims))} on {PARTITIONS[procs]}")
        r = _run(main(dims), procs, ctx)
        _record(out, r, str(procs), "planes")
        xs.append(procs)
        tokens.append(out.metrics[f"notokens_{procs}"])
        times[procs] = out.metrics[f"time_us_{procs}"]
    if xs:
        out.add_series("notokens", xs, tokens, "processes", "no-token events (all nodes, directions)")
        out.add_series("time_packet", xs, [times[p] for p in xs], "processes", "all-to-all time (us)", group="time")
    # A plane of the first two dimensions: every c-th rank (row-major, the last dimension fastest).
    _phase_alltoalls(out, ctx, phase_sizes,
                      lambda procs: np.arange(procs).reshape(-1, LOGICAL_3D[procs][2]).T)
    out.notes.append("With the ranks in row-major grid order and XYZT placement, a plane of the first two logical "
                     "dimensions is every 8th rank: its members are spread over several physical planes, so the "
                     "planes' all-to-alls share links.")
    last = max(xs + phase_sizes)
    out.key_metrics = ([f"notokens_{xs[-1]}"] if xs else []) + [f"time_us_{last}"] + \
        [k for k in out.metrics if k.startswith("phase_error_pct_")]
    return out


def _neighbours(cart: "MPI.Cartcomm", ndims: int) -> List[int]:
    """The 2 x ndims neighbours of this rank in a periodic grid."""
    nbs: List[int] = []
    for d in range(ndims):
        lo, hi = cart.Shift(d, 1)
        nbs += [lo, hi]
    return nbs


@register("bgp-nearest-neighbor", "bgp", "64 KB to every logical 2D / 3D grid neighbour: MPI_Alltoallv with zero "
          "counts vs point-to-point")
def nearest_neighbor(ctx: Context) -> Outcome:
    out = Outcome()
    sizes = (128, 512) if ctx.quick else (2048, 4096, 8192, 16384, 32768)
    out.setup.append("VN mode, every core a rank (XYZT); a periodic logical grid from MPI_Dims_create (2D and 3D), "
                     "not reordered; every rank sends 64 KB to each of its 4 (2D) or 6 (3D) grid neighbours and "
                     "receives as much, (a) by one MPI_Alltoallv whose counts are zero for every other rank, (b) by "
                     "Irecv / Isend to the neighbours and one Waitall (communication skeletons). The figure: no-token "
                     "events of every node and direction, summed.")

    def main(ndims: int, how: str) -> Callable[[], float]:
        def body() -> None:
            world = MPI.COMM_WORLD
            n = world.Get_size()
            cart = world.Create_cart(MPI.Compute_dims(n, [0] * ndims), periods=[True] * ndims)
            nbs = _neighbours(cart, ndims)
            world.Barrier()
            if how == "alltoallv":
                # The nonzero counts only (the zeros are no messages).
                skeleton.alltoallv(cart, {nb: KB64 for nb in nbs})
            else:
                reqs = [skeleton.irecv(cart, KB64, nb, k) for k, nb in enumerate(nbs)]
                reqs += [skeleton.isend(cart, KB64, nb, k ^ 1) for k, nb in enumerate(nbs)]
                skeleton.waitall(reqs)
        return _timed_program(body)

    series: Dict[str, List[float]] = {}
    for procs in sizes:
        for ndims in (2, 3):
            for how in ("alltoallv", "p2p"):
                ctx.log(f"{procs} processes, {ndims}D grid, {how}")
                r = _run(main(ndims, how), procs, ctx)
                _record(out, r, f"{ndims}d_{how}_{procs}", f"{ndims}d_{how}")
                series.setdefault(f"{ndims}d_{how}", []).append(out.metrics[f"notokens_{ndims}d_{how}_{procs}"])
    for k, v in series.items():
        out.add_series(k, sizes, v, "processes", "no-token events (all nodes, directions)", group="notokens")
    out.notes.append("MPICH's MPI_Alltoallv posts a send and a receive only for nonzero counts, so (a) moves the "
                     "same messages as (b); they differ only in the order the sends are posted (rank order from "
                     "the sender vs the neighbours' order).")
    last = sizes[-1]
    out.key_metrics = [f"notokens_{d}d_{h}_{last}" for d in (2, 3) for h in ("alltoallv", "p2p")]
    return out
