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
from itertools import product
from typing import Dict, Iterable, List, Sequence, Tuple

Slot = Tuple[int, int, int, int]


def order_slots(shape: Sequence[int], tasks: int, nranks: int, order: str = "XYZT") -> List[Slot]:
    """The slots of ranks 0..nranks-1 under a mapping order (first letter fastest)."""
    ext = {"X": shape[0], "Y": shape[1], "Z": shape[2], "T": tasks}
    letters = order.upper()
    out: List[Slot] = []
    for idx in product(*(range(ext[c]) for c in reversed(letters))):
        pos = dict(zip(reversed(letters), idx))
        out.append((pos["X"], pos["Y"], pos["Z"], pos["T"]))
        if len(out) == nranks:
            break
    return out


def _dist(a: Slot, b: Slot, shape: Sequence[int], torus: Sequence[bool]) -> int:
    h = 0
    for d in range(3):
        k = abs(a[d] - b[d])
        h += min(k, shape[d] - k) if torus[d] else k
    return h


def hop_bytes(traffic: Dict[Tuple[int, int], int], slots: Sequence[Slot], shape: Sequence[int],
              torus: Sequence[bool] = (True, True, True)) -> int:
    """Bytes times torus hops over every (source, destination) pair."""
    return sum(b * _dist(slots[s], slots[d], shape, torus) for (s, d), b in traffic.items() if s != d)


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
        for _ in range(steps):
            a = talkers[rng.randrange(len(talkers))]
            t = proposal(a)
            if t == slots[a]:
                continue
            d = move_delta(a, t)
            if d < 0 or rng.random() < math.exp(-d / temp):
                apply(a, t)
            temp *= cool
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


def write_mapfile(path: str, slots: Sequence[Slot]) -> None:
    """A mapfile `bgsim run --map FILE` reads: one `x y z t` line per rank."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("# x y z t, one line per rank (written by bgsim.mapping)\n")
        for s in slots:
            f.write(f"{s[0]} {s[1]} {s[2]} {s[3]}\n")
