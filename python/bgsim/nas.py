"""The NAS Parallel Benchmarks (NPB 3, MPI versions) as communication
skeletons: every message each benchmark sends, with its size, partner and
order, and its compute bursts charged to the cores, without the data.

    bgsim run --skeleton bt --class B -n 64 --shape 4x4x4
    bgsim.run(lambda: bgsim.nas.run_rank("bt", "B"), shape="4x4x4", nranks=64)

Sizes, iteration counts and process layouts follow the benchmarks' sources
(their parameter tables and decomposition code); each skeleton's docstring
says which routine sends what. A skeleton simulates a few iterations of the
benchmark's main loop (one warm-up, then `iterations` timed ones) and
reports time per iteration; the benchmark's rate is its own operation count
(the formula it prints Mop/s with) over that time.

Compute between messages is charged at `CYCLES_PER_OP` processor cycles per
operation of the benchmark's count, split over the phases of an iteration
as the `_split` comments say. These costs are not published: they are an
assumption of bgsim (a PowerPC 440 core running compiled Fortran sustains
about 200 Mflop/s, a seventh of its double-FPU peak) that sets the balance
between computing and communicating, the same on every machine and mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from .errors import WorkloadError

CLASSES = ("S", "W", "A", "B", "C")
BENCHMARKS = ("bt", "sp", "lu", "cg", "mg", "ft", "is", "ep")

# Processor cycles per operation of each benchmark's own count (assumed, see
# the module docstring): floating-point operations for the solvers, random
# numbers for EP (a linear congruential step and the Gaussian pair test),
# keys ranked for IS (several integer passes over each key).
CYCLES_PER_OP = {"bt": 3.5, "sp": 3.5, "lu": 3.5, "cg": 3.5, "mg": 3.5, "ft": 3.5, "ep": 25.0, "is": 30.0}

DOUBLE = 8

# Problem sizes by class (NPB 3 parameter tables).
_GRID = {  # bt/sp/lu: grid points per side, iterations
    "bt": {"S": (12, 60), "W": (24, 200), "A": (64, 200), "B": (102, 200), "C": (162, 200)},
    "sp": {"S": (12, 100), "W": (36, 400), "A": (64, 400), "B": (102, 400), "C": (162, 400)},
    "lu": {"S": (12, 50), "W": (33, 300), "A": (64, 250), "B": (102, 250), "C": (162, 250)},
}
_CG = {"S": (1400, 7, 15), "W": (7000, 8, 15), "A": (14000, 11, 15), "B": (75000, 13, 75), "C": (150000, 15, 75)}
_MG = {"S": (32, 4), "W": (128, 4), "A": (256, 4), "B": (256, 20), "C": (512, 20)}
_FT = {"S": ((64, 64, 64), 6), "W": ((128, 128, 32), 6), "A": ((256, 256, 128), 6), "B": ((512, 256, 256), 20),
       "C": ((512, 512, 512), 20)}
_IS = {"S": (16, 11), "W": (20, 16), "A": (23, 19), "B": (25, 21), "C": (27, 23)}  # log2 keys, log2 max key
_EP = {"S": 24, "W": 25, "A": 28, "B": 30, "C": 32}


@dataclass
class Msg:
    """One message of a phase: to `dest`, `nbytes`, or from `src`."""
    peer: int
    nbytes: int


@dataclass
class Phase:
    """What a rank does in one step: compute, then post its receives and
    sends together and wait for them (or run a collective)."""
    compute_ops: float = 0.0
    sends: List[Msg] = field(default_factory=list)
    recvs: List[Msg] = field(default_factory=list)
    collective: Optional[Tuple[str, int]] = None  # (operation, bytes per rank or pair)
    alltoallv: Optional[List[int]] = None  # bytes to every rank (IS key exchange)
    # The sends are waited for only with the next phase's requests (NPB's
    # pipelines: isend, then irecv of the next stage, then wait for both).
    defer_sends: bool = False


@dataclass
class Plan:
    """A benchmark on `nprocs` ranks: one iteration's phases for a rank,
    the iterations the benchmark runs and its operations per iteration."""
    name: str
    cls: str
    nprocs: int
    iterations: int
    ops_per_iteration: float
    layout: str
    phases: Callable[[int], List[Phase]]


def _pow2(p: int) -> bool:
    return p >= 1 and p & (p - 1) == 0


def _need(name: str, ok: bool, what: str, nprocs: int) -> None:
    if not ok:
        raise WorkloadError(f"NAS {name.upper()} runs on {what}; {nprocs} ranks given")


def _split_sizes(n: int, parts: int) -> List[int]:
    """`n` points over `parts`, the first `n % parts` one larger (NPB's rule)."""
    q, r = divmod(n, parts)
    return [q + (1 if i < r else 0) for i in range(parts)]


# ------------------------------------------------------------------ BT, SP

def _multipartition(name: str, cls: str, nprocs: int) -> Plan:
    """BT and SP: the multi-partition scheme (bt/make_set.f, sp/make_set.f).
    sqrt(P) x sqrt(P) ranks; each owns ncells = sqrt(P) cells, one in every
    slab of every direction, cell c of rank (i, j) at ((i+c), (j+c), c) mod
    ncells. An iteration:
    - copy_faces: 6 messages, to the successor and predecessor in each
      direction, each with 2 planes x 5 variables of every cell not on that
      side's boundary;
    - x_solve, y_solve, z_solve: a forward sweep over the ncells stages (at
      stage s > 0 receive from the predecessor, solve the cell, send to the
      successor unless last) and a backward one the other way. BT sends
      MAX_CELL_DIM^2 x (25 + 5) doubles forward and MAX_CELL_DIM^2 x 5 back
      (x_send_solve_info, x_send_backsub_info); SP 22 and 10 doubles per
      face point of the cell, boundary points excluded (x_solve.f).
    Compute: a quarter of the iteration's operations before copy_faces'
    sends (compute_rhs), a quarter per direction, spread over its stages."""
    n, iters = _GRID[name][cls]
    nc = math.isqrt(nprocs)
    _need(name, nc * nc == nprocs, "a square number of ranks", nprocs)
    sizes = _split_sizes(n, nc)
    max_cell = n // nc + 1
    if name == "bt":
        ops = 3478.8 * n ** 3 - 17655.7 * n ** 2 + 28023.7 * n
    else:
        ops = 881.174 * n ** 3 - 4683.91 * n ** 2 + 11484.5 * n - 19272.4

    def rank_of(i: int, j: int) -> int:
        return (i % nc) + nc * (j % nc)

    def cells_of(r: int) -> List[Tuple[int, int, int]]:
        i, j = r % nc, r // nc
        return [((i + c) % nc, (j + c) % nc, c) for c in range(nc)]

    def face_bytes(r: int, d: int, up: bool) -> int:
        """What rank r sends its successor (`up`) or predecessor in direction d."""
        o = [e for e in range(3) if e != d]
        edge = nc - 1 if up else 0
        return DOUBLE * sum(2 * 5 * sizes[c[o[0]]] * sizes[c[o[1]]] for c in cells_of(r) if c[d] != edge)

    def phases(me: int) -> List[Phase]:
        i, j = me % nc, me // nc
        cells = cells_of(me)
        succ = [rank_of(i + 1, j), rank_of(i, j + 1), rank_of(i - 1, j - 1)]
        pred = [rank_of(i - 1, j), rank_of(i, j - 1), rank_of(i + 1, j + 1)]
        out: List[Phase] = []
        faces = Phase(compute_ops=ops / 4 / nprocs)
        if nc > 1:
            for d in range(3):
                faces.sends += [Msg(succ[d], face_bytes(me, d, True)), Msg(pred[d], face_bytes(me, d, False))]
                faces.recvs += [Msg(pred[d], face_bytes(pred[d], d, True)), Msg(succ[d], face_bytes(succ[d], d, False))]
        out.append(faces)
        for d in range(3):
            o = [e for e in range(3) if e != d]
            by_stage = sorted(cells, key=lambda c: c[d])
            stage_ops = ops / 4 / nprocs / nc / 2

            def face_points(c: Tuple[int, int, int]) -> int:
                pts = 1
                for e in o:
                    pts *= sizes[c[e]] - (c[e] == 0) - (c[e] == nc - 1)
                return pts

            def fwd(c: Tuple[int, int, int]) -> int:
                return (max_cell ** 2 * 30 if name == "bt" else 22 * face_points(c)) * DOUBLE

            def back(c: Tuple[int, int, int]) -> int:
                return (max_cell ** 2 * 5 if name == "bt" else 10 * face_points(c)) * DOUBLE

            # The cell this rank's predecessor solves at stage s-1 has the
            # same other coordinates as this rank's cell at stage s.
            for s, c in enumerate(by_stage):
                if s > 0:
                    out.append(Phase(recvs=[Msg(pred[d], fwd(c))]))
                out.append(Phase(compute_ops=stage_ops, sends=[Msg(succ[d], fwd(c))] if s < nc - 1 else [],
                                 defer_sends=True))
            for s in range(nc - 1, -1, -1):
                c = by_stage[s]
                if s < nc - 1:
                    out.append(Phase(recvs=[Msg(succ[d], back(c))]))
                out.append(Phase(compute_ops=stage_ops, sends=[Msg(pred[d], back(c))] if s > 0 else [],
                                 defer_sends=True))
        return out

    return Plan(name, cls, nprocs, iters, ops, f"{nc} x {nc} ranks, {nc} cells each (multi-partition)", phases)


# ------------------------------------------------------------------ LU

def _lu(cls: str, nprocs: int) -> Plan:
    """LU: SSOR on a 2D grid of ranks (lu/proc_grid.f, neighbors.f): xdim =
    2^ceil(log2(P)/2) ranks along x, ydim = P / xdim along y, each with a
    column of the grid through all nz planes. An iteration:
    - rhs: exchange_3, 2 layers x 5 variables of the local faces with the 4
      neighbours (the x neighbours get ny_local x nz points, the y ones
      nx_local x nz);
    - the lower sweep (jacld, blts) over planes k = 2 .. nz-1: receive 5
      values per edge point from the west and south neighbours, compute,
      send to the east and north (exchange_1);
    - the upper sweep (jacu, buts) back over the planes: receive from east
      and north, compute, send to west and south.
    Compute: a fifth of the operations in rhs, the rest spread over the
    planes of the two sweeps."""
    n, iters = _GRID["lu"][cls]
    _need("lu", _pow2(nprocs), "a power of two of ranks", nprocs)
    ndim = nprocs.bit_length() - 1
    xdim = 1 << ((ndim + 1) // 2)
    ydim = nprocs // xdim
    nx, ny = _split_sizes(n, xdim), _split_sizes(n, ydim)
    nz = n
    ops = 1984.77 * n ** 3 - 10923.3 * n ** 2 + 27770.9 * n - 144010.0

    def phases(me: int) -> List[Phase]:
        col, row = me % xdim, me // xdim
        west = me - 1 if col > 0 else None
        east = me + 1 if col < xdim - 1 else None
        south = me - xdim if row > 0 else None
        north = me + xdim if row < ydim - 1 else None
        lx, ly = nx[col], ny[row]
        rhs = Phase(compute_ops=ops / 5 / nprocs)
        for nb, pts in ((west, ly), (east, ly), (south, lx), (north, lx)):
            if nb is not None:
                rhs.sends.append(Msg(nb, 2 * 5 * pts * nz * DOUBLE))
                rhs.recvs.append(Msg(nb, 2 * 5 * pts * nz * DOUBLE))
        out = [rhs]
        plane_ops = ops * 4 / 5 / nprocs / (2 * (nz - 2))
        for upper in (False, True):
            frm = [(east, ly), (north, lx)] if upper else [(west, ly), (south, lx)]
            to = [(west, ly), (south, lx)] if upper else [(east, ly), (north, lx)]
            for _ in range(nz - 2):
                ph = Phase(recvs=[Msg(nb, 5 * pts * DOUBLE) for nb, pts in frm if nb is not None])
                out.append(ph)
                out.append(Phase(compute_ops=plane_ops,
                                 sends=[Msg(nb, 5 * pts * DOUBLE) for nb, pts in to if nb is not None]))
        return out

    return Plan("lu", cls, nprocs, iters, ops, f"{xdim} x {ydim} ranks, columns of {nz} planes", phases)


# ------------------------------------------------------------------ CG

def _cg(cls: str, nprocs: int) -> Plan:
    """CG: conjugate gradient on a 2D grid of ranks (cg/cg.f, setup_proc_info
    and setup_submatrix_info): npcols = nprows = sqrt(P), or npcols = 2
    nprows when log2(P) is odd. One iteration of the outer loop is one
    conj_grad call (25 CG steps plus the residual) and a norm:
    - every matrix-vector product sums the row's partial vectors in
      log2(npcols) exchanges of na/nprows doubles (na/(2 nprows) when
      npcols = 2 nprows) with reduce_exch_proc, then swaps the result with
      the transpose rank (exch_proc, na/npcols doubles); 26 products;
    - every dot product is log2(npcols) exchanges of one double (52 of
      them), the final norm one of two doubles.
    Compute: the operations spread evenly over the 26 products."""
    na, nonzer, niter = _CG[cls]
    _need("cg", _pow2(nprocs), "a power of two of ranks", nprocs)
    ndim = nprocs.bit_length() - 1
    nprows = 1 << (ndim // 2)
    npcols = nprocs // nprows
    l2 = npcols.bit_length() - 1
    ops = 2.0 * na * (3 + nonzer * (nonzer + 1) + 25 * (5 + nonzer * (nonzer + 1)) + 3)
    row_len = na // nprows if npcols == nprows else na // (2 * nprows)
    col_len = na // npcols

    def phases(me: int) -> List[Phase]:
        prow, pcol = me // npcols, me % npcols
        partners = []
        div = npcols
        for _ in range(l2):
            partners.append(prow * npcols + (pcol + div // 2) % div + pcol // div * div)
            div //= 2
        if npcols == nprows:
            transpose = (me % nprows) * nprows + me // nprows
        else:
            transpose = 2 * (((me // 2) % nprows) * nprows + (me // 2) // nprows) + me % 2

        def exchanges(nbytes: int, ops_before: float = 0.0) -> List[Phase]:
            ph = [Phase(compute_ops=ops_before)] if ops_before else []
            ph += [Phase(sends=[Msg(p, nbytes)], recvs=[Msg(p, nbytes)]) for p in partners]
            return ph

        out: List[Phase] = []
        step_ops = ops / nprocs / 26
        out += exchanges(DOUBLE)  # rho = r.r
        for step in range(26):
            out += exchanges(row_len * DOUBLE, step_ops)
            if l2 > 0:
                out.append(Phase(sends=[Msg(transpose, col_len * DOUBLE)], recvs=[Msg(transpose, col_len * DOUBLE)]))
            if step < 25:
                out += exchanges(DOUBLE)  # p.q
                out += exchanges(DOUBLE)  # new rho
            else:
                out += exchanges(DOUBLE)  # residual norm
        out += exchanges(2 * DOUBLE)  # norm_temp1(1:2)
        return out

    return Plan("cg", cls, nprocs, niter, ops, f"{nprows} x {npcols} ranks", phases)


# ------------------------------------------------------------------ MG

def _mg(cls: str, nprocs: int) -> Plan:
    """MG: V-cycle multigrid on a periodic n^3 grid split over a 3D grid of
    ranks (mg/mg.f, setup: log2(P) halvings given to x, y, z in turn). Each
    comm3 exchanges one ghost layer with both neighbours along x, then y,
    then z (give3/take3): faces of m2 x m3, (m1+2) x m3 and (m1+2) x (m2+2)
    doubles for a local m1 x m2 x m3 block. An iteration (mg3P, then resid)
    calls comm3 3 lt - 1 times for lt = log2(n) levels: rprj3 on levels
    lt-1 .. 1, psinv on level 1, resid and psinv on levels 2 .. lt, and the
    final resid on lt. Along a direction with one rank the exchange is a
    local copy. Compute: spread over the comm3 calls in proportion to the
    level's points."""
    n, nit = _MG[cls]
    _need("mg", _pow2(nprocs), "a power of two of ranks", nprocs)
    dims = [1, 1, 1]
    for k in range(nprocs.bit_length() - 1):
        dims[k % 3] *= 2
    lt = n.bit_length() - 1
    ops = 58.0 * n ** 3
    levels = list(range(lt - 1, 0, -1)) + [1] + [k for k in range(2, lt + 1) for _ in (0, 1)] + [lt]
    weight = sum((1 << k) ** 3 for k in levels)

    def phases(me: int) -> List[Phase]:
        c = [me % dims[0], (me // dims[0]) % dims[1], me // (dims[0] * dims[1])]

        def nb(axis: int, step: int) -> int:
            cc = list(c)
            cc[axis] = (cc[axis] + step) % dims[axis]
            return cc[0] + dims[0] * (cc[1] + dims[1] * cc[2])

        out: List[Phase] = []
        for k in levels:
            pts = 1 << k
            m = [max(1, pts // d) for d in dims]
            faces = [m[1] * m[2], (m[0] + 2) * m[2], (m[0] + 2) * (m[1] + 2)]
            out.append(Phase(compute_ops=ops / nprocs * (pts ** 3) / weight))
            for axis in range(3):
                if dims[axis] > 1:
                    b = faces[axis] * DOUBLE
                    out.append(Phase(sends=[Msg(nb(axis, 1), b), Msg(nb(axis, -1), b)],
                                     recvs=[Msg(nb(axis, -1), b), Msg(nb(axis, 1), b)]))
        return out

    return Plan("mg", cls, nprocs, nit, ops, f"{dims[0]} x {dims[1]} x {dims[2]} ranks, {lt} levels", phases)


# ------------------------------------------------------------------ FT

def _ft(cls: str, nprocs: int) -> Plan:
    """FT: 3D FFTs of an nx x ny x nz complex array (ft/ft.f). With P <= nz
    the 1D layout: each inverse FFT is one transpose, an MPI_Alltoall of
    nx ny nz / P^2 double complex per pair; above, the 2D layout of p1 x p2
    ranks transposes twice, within rows (p1 ranks) and columns (p2).
    An iteration: evolve and the inverse FFT (compute), the transpose(s),
    and the checksum, an MPI_Reduce of one double complex to rank 0."""
    (nx, ny, nz), niter = _FT[cls]
    _need("ft", _pow2(nprocs), "a power of two of ranks", nprocs)
    ntotal = nx * ny * nz
    ops = ntotal * (5.23518 + 7.21113 * math.log(ntotal))
    if nprocs <= nz:
        layout, groups = "1D layout", [nprocs]
    else:
        p1 = 1 << ((nprocs.bit_length() - 1) // 2)
        layout, groups = f"2D layout ({p1} x {nprocs // p1})", [p1, nprocs // p1]

    def phases(me: int) -> List[Phase]:
        out = [Phase(compute_ops=ops / nprocs)]
        for k, g in enumerate(groups):
            op = "alltoall" if g == nprocs else ("alltoall/row" if k == 0 else "alltoall/col")
            out.append(Phase(collective=(op, 16 * ntotal // (nprocs * g))))
        out.append(Phase(collective=("reduce", 16)))
        return out

    return Plan("ft", cls, nprocs, niter, ops, layout, phases)


# ------------------------------------------------------------------ IS, EP

def _is(cls: str, nprocs: int) -> Plan:
    """IS: bucket sort of 2^k integer keys (is/is.c, rank()). An iteration:
    count keys per bucket, MPI_Allreduce of the 1,024 bucket counts plus the
    5 test keys (ints), MPI_Alltoall of one int per pair (how many keys go
    where), MPI_Alltoallv of the keys themselves: with the buckets split
    evenly each rank sends keys/P^2 keys of 4 bytes to every rank."""
    lk, _ = _IS[cls]
    _need("is", _pow2(nprocs), "a power of two of ranks", nprocs)
    keys = 1 << lk
    per_pair = 4 * (keys // (nprocs * nprocs))

    def phases(me: int) -> List[Phase]:
        return [Phase(compute_ops=keys / nprocs / 2),
                Phase(collective=("allreduce", 4 * (1024 + 5))),
                Phase(collective=("alltoall", 4)),
                Phase(alltoallv=[per_pair if r != me else 0 for r in range(nprocs)]),
                Phase(compute_ops=keys / nprocs / 2)]

    return Plan("is", cls, nprocs, 10, float(keys), f"{nprocs} ranks, 1,024 buckets", phases)


def _ep(cls: str, nprocs: int) -> Plan:
    """EP: 2^(M+1) random numbers, Gaussian pairs counted in 10 annuli
    (ep/ep.f). One iteration: all the computation, then MPI_Allreduce of sx,
    of sy (one double each) and of the 10 counts."""
    m = _EP[cls]
    ops = float(2 ** (m + 1))

    def phases(me: int) -> List[Phase]:
        return [Phase(compute_ops=ops / nprocs), Phase(collective=("allreduce", DOUBLE)),
                Phase(collective=("allreduce", DOUBLE)), Phase(collective=("allreduce", 10 * DOUBLE))]

    return Plan("ep", cls, nprocs, 1, ops, f"{nprocs} ranks", phases)


def plan(name: str, cls: str, nprocs: int) -> Plan:
    """The skeleton of benchmark `name` (bt, sp, lu, cg, mg, ft, is, ep) at
    class `cls` (S, W, A, B, C) on `nprocs` ranks."""
    name, cls = name.lower(), cls.upper()
    if name not in BENCHMARKS:
        raise WorkloadError(f"unknown NAS benchmark `{name}`; known: {', '.join(BENCHMARKS)}")
    if cls not in CLASSES:
        raise WorkloadError(f"unknown NAS class `{cls}`; known: {', '.join(CLASSES)}")
    if name in ("bt", "sp"):
        return _multipartition(name, cls, nprocs)
    return {"lu": _lu, "cg": _cg, "mg": _mg, "ft": _ft, "is": _is, "ep": _ep}[name](cls, nprocs)


def traffic(p: Plan) -> Dict[Tuple[int, int], int]:
    """Point-to-point bytes per (source, destination) of one iteration
    (collectives left out): the communication graph a mapping is chosen for."""
    out: Dict[Tuple[int, int], int] = {}
    for me in range(p.nprocs):
        for ph in p.phases(me):
            for m in ph.sends:
                out[(me, m.peer)] = out.get((me, m.peer), 0) + m.nbytes
            if ph.alltoallv:
                for r, b in enumerate(ph.alltoallv):
                    if b:
                        out[(me, r)] = out.get((me, r), 0) + b
    return out


# ------------------------------------------------------------------ running

def _run_phase(comm: Any, ph: Phase, cycles_per_op: float, subcomms: Dict[str, Any], pending: List[Any]) -> None:
    from . import skeleton
    from .runtime import compute

    if ph.compute_ops:
        compute(cycles=ph.compute_ops * cycles_per_op)
    if ph.recvs or ph.sends or pending:
        reqs = [skeleton.irecv(comm, m.nbytes, m.peer, 11) for m in ph.recvs]
        sends = [skeleton.isend(comm, m.nbytes, m.peer, 11) for m in ph.sends]
        if ph.defer_sends:
            skeleton.waitall(reqs)
            pending.extend(sends)
        else:
            skeleton.waitall(reqs + sends + pending)
            pending.clear()
    if ph.alltoallv is not None:
        skeleton.alltoallv(comm, ph.alltoallv)
    if ph.collective:
        op, nbytes = ph.collective
        if op == "allreduce":
            skeleton.allreduce(comm, nbytes)
        elif op == "reduce":
            skeleton.reduce(comm, nbytes)
        elif op == "alltoall":
            skeleton.alltoall(comm, nbytes)
        else:  # FT's 2D layout: within rows of p1 consecutive ranks, then columns
            if op not in subcomms:
                rank, size = comm.Get_rank(), comm.Get_size()
                p1 = 1 << ((size.bit_length() - 1) // 2)
                subcomms[op] = comm.Split(rank // p1 if op.endswith("row") else rank % p1, rank)
            skeleton.alltoall(subcomms[op], nbytes)


def run_rank(name: str, cls: str = "B", iterations: int = 2, warmup: int = 1,
             cycles_per_op: Optional[float] = None, comm: Any = None) -> Dict[str, Any]:
    """Runs benchmark `name` on the calling rank (inside `bgsim.run`):
    `warmup` iterations, then `iterations` timed ones. Returns (on every
    rank) the plan's figures and the time per timed iteration, seconds."""
    from . import MPI

    comm = comm if comm is not None else MPI.COMM_WORLD
    p = plan(name, cls, comm.Get_size())
    cpo = CYCLES_PER_OP[p.name] if cycles_per_op is None else cycles_per_op
    if iterations < 1 or warmup < 0:
        raise WorkloadError(f"NAS {name.upper()}: iterations must be >= 1 and warm-up >= 0")
    me = comm.Get_rank()
    phases = p.phases(me)
    subcomms: Dict[str, Any] = {}
    pending: List[Any] = []
    t0 = 0.0
    for it in range(warmup + iterations):
        if it == warmup:
            comm.Barrier()
            t0 = MPI.Wtime()
        for ph in phases:
            _run_phase(comm, ph, cpo, subcomms, pending)
    if pending:
        from . import skeleton
        skeleton.waitall(pending)
    comm.Barrier()
    t = (MPI.Wtime() - t0) / iterations
    return {"benchmark": p.name, "class": p.cls, "nprocs": p.nprocs, "layout": p.layout,
            "iterations": p.iterations, "simulated_iterations": iterations, "s_per_iteration": t,
            "mops_total": p.ops_per_iteration / t / 1e6, "mops_per_proc": p.ops_per_iteration / t / 1e6 / p.nprocs,
            "estimated_benchmark_s": t * p.iterations}


def describe(res: Dict[str, Any]) -> str:
    """One paragraph on a skeleton's run (what `run_rank` returned)."""
    return (f"NAS {res['benchmark'].upper()} class {res['class']} on {res['nprocs']} ranks ({res['layout']}): "
            f"{res['s_per_iteration'] * 1e3:.3f} ms per iteration ({res['simulated_iterations']} simulated of "
            f"{res['iterations']}), {res['mops_total']:.1f} Mop/s in all, {res['mops_per_proc']:.2f} per rank; "
            f"the whole benchmark would take {res['estimated_benchmark_s']:.2f} s")
