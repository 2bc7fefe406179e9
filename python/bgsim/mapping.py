"""Rank-to-torus mappings chosen from a program's communication graph.

A mapping places rank r on task slot (x, y, z, t) of the partition. The
default orders (XYZT, TXYZ, ...) ignore what the program does; `optimize`
starts from the better of the given start and XYZT and moves ranks to lower
the hop-bytes (bytes x torus hops, summed over every pair that talks), with
a deterministic (seeded) search: simulated annealing over moves of a rank
next to one of its partners (swapping with whoever is there, or to a free
slot), then greedy sweeps until no such move lowers the total.
"""

from __future__ import annotations

import math
import random
from itertools import permutations, product
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

from . import _core

Slot = Tuple[int, int, int, int]


def order_slots(shape: Sequence[int], tasks: int, nranks: int, order: str = "XYZT") -> List[Slot]:
    """The slots of ranks 0..nranks-1 under a mapping order (first letter
    fastest), as a run places them: the core's placement
    (`machine::Mapping::slots`)."""
    return [tuple(s) for s in _core.order_slots([int(d) for d in shape], int(tasks), int(nranks), order.upper())]


def _dist(a: Slot, b: Slot, shape: Sequence[int], torus: Sequence[bool]) -> int:
    h = 0
    for d in range(3):
        k = abs(a[d] - b[d])
        h += min(k, shape[d] - k) if torus[d] else k
    return h


def _pairs(traffic: Dict[Tuple[int, int], int]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A traffic dict as arrays: sources, destinations, bytes."""
    src = np.fromiter((s for s, _ in traffic), dtype=np.int64, count=len(traffic))
    dst = np.fromiter((d for _, d in traffic), dtype=np.int64, count=len(traffic))
    return src, dst, np.fromiter(traffic.values(), dtype=np.int64, count=len(traffic))


def _hop_bytes(pairs: Tuple[np.ndarray, np.ndarray, np.ndarray], slots: np.ndarray, shape: Sequence[int],
               torus: Sequence[bool]) -> int:
    """Bytes times torus hops of `pairs` (see `_pairs`) with ranks on
    `slots` (an array of x, y, z, t rows)."""
    src, dst, nb = pairs
    a, b = slots[src], slots[dst]
    hops = np.zeros(len(src), dtype=np.int64)
    for k in range(3):
        d = np.abs(a[:, k] - b[:, k])
        if torus[k]:
            d = np.minimum(d, shape[k] - d)
        hops += d
    return int((hops * nb).sum())


def hop_bytes(traffic: Dict[Tuple[int, int], int], slots: Sequence[Slot], shape: Sequence[int],
              torus: Sequence[bool] = (True, True, True)) -> int:
    """Bytes times torus hops over every (source, destination) pair."""
    if not traffic:
        return 0
    return _hop_bytes(_pairs(traffic), np.asarray(slots, dtype=np.int64).reshape(-1, 4), shape, torus)


def optimize(traffic: Dict[Tuple[int, int], int], shape: Sequence[int], tasks: int, nranks: int,
             torus: Sequence[bool] = (True, True, True), start: Iterable[Slot] = (), seed: int = 1,
             passes: int = 20) -> List[Slot]:
    """A mapping of `nranks` ranks with lower hop-bytes for `traffic` (bytes
    per (source, destination)); `passes` sweeps over the ranks at most."""
    shape, torus = list(shape), list(torus)
    cand = [list(start)] if start else []
    cand.append(order_slots(shape, tasks, nranks))
    slots = min(cand, key=lambda s: hop_bytes(traffic, s, shape, torus))
    slots = list(slots)
    nbrs: List[Dict[int, int]] = [dict() for _ in range(nranks)]
    for (s, d), b in traffic.items():
        if s != d:
            nbrs[s][d] = nbrs[s].get(d, 0) + b
            nbrs[d][s] = nbrs[d].get(s, 0) + b
    where: Dict[Slot, int] = {sl: r for r, sl in enumerate(slots)}
    free = [sl for sl in product(range(shape[0]), range(shape[1]), range(shape[2]), range(tasks)) if sl not in where]
    rng = random.Random(seed)

    def cost(r: int, at: Slot, skip: int = -1, skip_at: Slot = (0, 0, 0, 0)) -> int:
        c = 0
        for o, b in nbrs[r].items():
            c += b * _dist(at, skip_at if o == skip else slots[o], shape, torus)
        return c

    def near(sl: Slot) -> List[Slot]:
        out = []
        for d in range(3):
            for step in (-1, 1):
                c = list(sl)
                c[d] += step
                if torus[d]:
                    c[d] %= shape[d]
                elif not 0 <= c[d] < shape[d]:
                    continue
                for t in range(tasks):
                    c[3] = t
                    out.append((c[0], c[1], c[2], c[3]))
        return out

    def move_delta(a: int, t: Slot) -> int:
        here = slots[a]
        b = where.get(t)
        if b is None:
            return cost(a, t) - cost(a, here)
        return (cost(a, t, b, here) + cost(b, here, a, t)) - (cost(a, here) + cost(b, t))

    def apply(a: int, t: Slot) -> None:
        here = slots[a]
        b = where.get(t)
        if b is None:
            free.remove(t)
            free.append(here)
            del where[here]
        else:
            slots[b] = here
            where[here] = b
        slots[a] = t
        where[t] = a

    def proposal(a: int) -> Slot:
        if free and rng.random() < 0.1:
            return free[rng.randrange(len(free))]
        o = rng.choice(list(nbrs[a]))
        cands = near(slots[o])
        return cands[rng.randrange(len(cands))]

    # Simulated annealing: moves towards a partner's neighbourhood, a worse
    # placement kept with probability exp(-delta / T) while T cools to zero,
    # then greedy sweeps until nothing improves.
    talkers = [r for r in range(nranks) if nbrs[r]]
    if talkers:
        samples = [abs(move_delta(a, proposal(a))) for a in (rng.choice(talkers) for _ in range(200))]
        samples = sorted(x for x in samples if x) or [1]
        temp = samples[len(samples) // 2]
        steps = passes * len(talkers) * 10
        cool = (1e-3) ** (1.0 / steps)
        total, best_total, best_slots = 0, 0, list(slots)  # hop-bytes relative to the start
        for _ in range(steps):
            a = talkers[rng.randrange(len(talkers))]
            t = proposal(a)
            if t == slots[a]:
                continue
            d = move_delta(a, t)
            if d < 0 or rng.random() < math.exp(-d / temp):
                apply(a, t)
                total += d
                if total < best_total:  # annealing wanders: keep the best placement it passed
                    best_total, best_slots = total, list(slots)
            temp *= cool
        if best_total < total:
            for r, sl in enumerate(best_slots):
                slots[r] = sl
            where.clear()
            where.update({sl: r for r, sl in enumerate(slots)})
            free[:] = [sl for sl in product(range(shape[0]), range(shape[1]), range(shape[2]), range(tasks))
                       if sl not in where]
    for _ in range(passes):
        improved = False
        order = list(range(nranks))
        rng.shuffle(order)
        for a in order:
            if not nbrs[a]:
                continue
            here = slots[a]
            best, best_t = 0, None
            for t in sorted({t for o in nbrs[a] for t in near(slots[o])}):
                if t != here:
                    d = move_delta(a, t)
                    if d < best:
                        best, best_t = d, t
            if best_t is not None:
                apply(a, best_t)
                improved = True
        if not improved:
            break
    return slots


def mapfile_text(slots: Sequence[Slot]) -> str:
    """A mapfile `bgsim run --map FILE` reads: one `x y z t` line per rank."""
    lines = ["# x y z t, one line per rank (written by bgsim.mapping)"]
    lines += [f"{s[0]} {s[1]} {s[2]} {s[3]}" for s in slots]
    return "\n".join(lines) + "\n"


def write_mapfile(path: str, slots: Sequence[Slot]) -> None:
    """Writes `mapfile_text(slots)` to `path`, whole or not at all."""
    from .api import write_atomic
    write_atomic(path, mapfile_text(slots))


# ------------------------------------------------------------ logical grids

def grid_traffic(grid: Sequence[int], nbytes: int, periodic: bool = True) -> Dict[Tuple[int, int], int]:
    """The messages of one halo exchange on a logical 2D grid (ranks in
    row-major order): each rank sends `nbytes` to its four neighbours."""
    p, q = grid
    out: Dict[Tuple[int, int], int] = {}
    for r in range(p * q):
        i, j = divmod(r, q)
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            a, b = i + di, j + dj
            if periodic:
                a, b = a % p, b % q
            elif not (0 <= a < p and 0 <= b < q):
                continue
            d = a * q + b
            if d != r:
                out[(r, d)] = out.get((r, d), 0) + nbytes
    return out


def _snake(sizes: Sequence[int]) -> List[Tuple[int, ...]]:
    """Every point of a box of `sizes` (first fastest) in an order where
    consecutive points differ by one step in one coordinate (reflected
    counting, as a boustrophedon)."""
    pts: List[Tuple[int, ...]] = [()]
    for size in sizes:
        grown: List[Tuple[int, ...]] = []
        for k in range(size):
            block = pts if k % 2 == 0 else pts[::-1]
            grown.extend(p + (k,) for p in block)
        pts = grown
    return pts


def _extents(total: int, caps: Sequence[int]) -> List[Tuple[int, ...]]:
    """Every tuple of sizes, one per cap (each from 1 to its cap), whose
    product is `total`."""
    if not caps:
        return [()] if total == 1 else []
    out = []
    for e in range(1, caps[0] + 1):
        if total % e == 0:
            out.extend((e,) + rest for rest in _extents(total // e, caps[1:]))
    return out


#: An axis of a fold: (partition dimension 0..3 = x y z t, size, stride):
#: stepping along it moves that coordinate by `stride`.
Axis = Tuple[int, int, int]


def _axis_sets(dims: Sequence[int]) -> List[List[Axis]]:
    """The ways to cut the partition's four dimensions into axes: each whole,
    or one of them split into an outer part (stride = the inner size) and an
    inner part (stride 1), so that a grid dimension can take a share of it."""
    whole = [(k, dims[k], 1) for k in range(4)]
    out = [whole]
    for k in range(4):
        for inner in range(2, dims[k]):
            if dims[k] % inner == 0:
                out.append([a for a in whole if a[0] != k] + [(k, dims[k] // inner, inner), (k, inner, 1)])
    return out


def grid_mapping(grid: Sequence[int], shape: Sequence[int], tasks: int, torus: Sequence[bool] = (True, True, True),
                 nbytes: int = 1, periodic: bool = True) -> List[Slot]:
    """A mapping of a logical P x Q grid (ranks row-major) onto the
    partition that folds each grid dimension onto a set of axes of x, y, z
    and the node's tasks, walked in reflected order so that grid neighbours
    sit on the same node or one hop apart wherever the sizes allow. Tried:
    every split of the axes into two groups whose boxes hold P and Q slots
    (a partition dimension whole, or cut in two between the groups; a box
    may leave part of a whole dimension unused), every order within each
    group; the one with the lowest hop-bytes for the grid's halo exchange
    wins (XYZT order when none does better)."""
    p, q = grid
    dims = [shape[0], shape[1], shape[2], tasks]
    pairs = _pairs(grid_traffic(grid, nbytes, periodic))

    def cost_of(slots: np.ndarray) -> int:
        return _hop_bytes(pairs, slots, shape, torus)

    best = order_slots(shape, tasks, p * q)
    best_cost = cost_of(np.array(best, dtype=np.int64))
    tried = set()
    for axes in _axis_sets(dims):
        n = len(axes)
        cut = {ax for ax in axes if sum(o[0] == ax[0] for o in axes) > 1}
        for mask in range(1 << n):
            a = [axes[i] for i in range(n) if mask >> i & 1]
            b = [axes[i] for i in range(n) if not mask >> i & 1]
            # The parts of a cut dimension are used whole; a whole one may
            # be trimmed to a box.
            for ea in _extents(p, [x[1] for x in a]):
                if any(e != x[1] for e, x in zip(ea, a) if x in cut):
                    continue
                for eb in _extents(q, [x[1] for x in b]):
                    if any(e != x[1] for e, x in zip(eb, b) if x in cut):
                        continue
                    ga = [(x[0], e, x[2]) for x, e in zip(a, ea) if e > 1]
                    gb = [(x[0], e, x[2]) for x, e in zip(b, eb) if e > 1]
                    for pa in permutations(ga):
                        for pb in permutations(gb):
                            key = (pa, pb)
                            if key in tried:
                                continue
                            tried.add(key)
                            rows, cols = _walk(pa), _walk(pb)
                            slots = (rows[:, None, :] + cols[None, :, :]).reshape(-1, 4)
                            cost = cost_of(slots)
                            if cost < best_cost:
                                best, best_cost = [tuple(int(v) for v in sl) for sl in slots], cost
    return best


def _walk(axes: Sequence[Axis]) -> np.ndarray:
    """The slot offsets (x, y, z, t) of the reflected walk over `axes`."""
    if not axes:  # a grid dimension of size 1: one slot, where it starts
        return np.zeros((1, 4), dtype=np.int64)
    pts = np.array(_snake([x[1] for x in axes]) or [()], dtype=np.int64).reshape(-1, len(axes))
    out = np.zeros((len(pts), 4), dtype=np.int64)
    for i, (k, _, stride) in enumerate(axes):
        out[:, k] += pts[:, i] * stride
    return out


# ------------------------------------------------------------ link loads

def link_loads(traffic: Dict[Tuple[int, int], int], slots: Sequence[Slot], shape: Sequence[int],
               torus: Sequence[bool] = (True, True, True)) -> np.ndarray:
    """Bytes each torus link carries (array [x, y, z, direction]; directions
    x+ x- y+ y- z+ z-) when every message goes by the deterministic route
    (`route_loads`)."""
    X, Y, Z = shape
    if not traffic:
        return np.zeros((X, Y, Z, 6), dtype=np.int64)
    pairs = np.array([(slots[s][0], slots[s][1], slots[s][2], slots[d][0], slots[d][1], slots[d][2], b)
                      for (s, d), b in traffic.items()], dtype=np.int64)
    load, _ = route_loads(pairs[:, 0:3], pairs[:, 3:6], pairs[:, 6], shape, torus)
    return load.reshape(Z, Y, X, 6).transpose(2, 1, 0, 3)


def route_loads(src: np.ndarray, dst: np.ndarray, nbytes: np.ndarray, shape: Sequence[int],
                torus: Sequence[bool] = (True, True, True)) -> Tuple[np.ndarray, np.ndarray]:
    """Bytes per link (flat: node * 6 + direction, node = x + X (y + Y z))
    of the messages from node coordinates `src` to `dst` ([n, 3] arrays) of
    `nbytes` each, and each message's hop count, when every message goes by
    the deterministic route: x, then y, then z, the shorter way round
    (even-size ties split by the source's parity, as the model's hint bits
    do)."""
    X, Y, Z = (int(v) for v in shape)
    nlinks = X * Y * Z * 6
    cur = np.array(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    nbytes = np.asarray(nbytes, dtype=np.int64)
    load = np.zeros(nlinks, dtype=np.int64)
    hops = np.zeros(len(cur), dtype=np.int64)
    for k in range(3):
        n = (X, Y, Z)[k]
        a, b = cur[:, k], dst[:, k]
        off = b - a
        if torus[k] and n > 1:
            half = n // 2
            off = np.where(off > half, off - n, off)
            off = np.where(off < -half, off + n, off)
            tie = (np.abs(off) == half) & (n % 2 == 0)
            off = np.where(tie & (a % 2 == 1), -half, np.where(tie, half, off))
        steps = np.abs(off)
        hops += steps
        # One entry per hop: the node it leaves and its direction.
        rep = np.repeat(np.arange(len(off)), steps)
        if len(rep):
            first = np.cumsum(steps) - steps
            hop = np.arange(len(rep)) - np.repeat(first, steps)
            plus = off[rep] > 0
            pos = (a[rep] + np.where(plus, hop, -hop)) % n
            node = cur[rep]
            coord = [node[:, 0], node[:, 1], node[:, 2]]
            coord[k] = pos
            idx = (coord[0] + X * (coord[1] + Y * coord[2])) * 6 + 2 * k + np.where(plus, 0, 1)
            load += np.bincount(idx, weights=nbytes[rep], minlength=nlinks).astype(np.int64)
        cur[:, k] = b
    return load, hops
