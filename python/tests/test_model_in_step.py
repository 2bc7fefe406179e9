"""What the Python tools compute from the model must be the model's: the
mapping planner's placement is the core's (it calls it), and its
vectorised route loads (`mapping.route_loads`, used by `bgsim map` and the
phase model of `reproduce --fidelity phase`) follow the core's
deterministic routes link for link."""

import random

import numpy as np
import pytest

import bgsim
from bgsim import _core, mapping
from bgsim.mpishim.coll import bcast


@pytest.mark.parametrize("order", ["XYZT", "TXYZ", "ZYXT", "TZYX"])
def test_the_planner_places_ranks_where_a_run_does(order):
    r = bgsim.run(lambda: None, machine="bgl", shape="4x2x2", mode="vn", nranks=28, mapping=order)
    placed = [(rk["x"], rk["y"], rk["z"], rk["t"]) for rk in r.ranks]
    assert mapping.order_slots((4, 2, 2), 2, 28, order) == placed


def test_dead_nodes_are_passed_over_as_a_run_passes_them():
    slots = _core.order_slots([2, 2, 1], 1, 3, "XYZT", [[1, 0, 0]])
    assert [tuple(s) for s in slots] == [(0, 0, 0, 0), (0, 1, 0, 0), (1, 1, 0, 0)]


@pytest.mark.parametrize("shape,torus", [((4, 4, 2), (True, True, True)), ((5, 3, 4), (True, True, True)),
                                         ((4, 6, 3), (False, True, False)), ((8, 2, 1), (True, True, True))])
def test_route_loads_follow_the_cores_deterministic_routes(shape, torus):
    rng = random.Random(7)
    X, Y, Z = shape
    nodes = X * Y * Z
    pairs = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(300)]
    coords = lambda n: (n % X, (n // X) % Y, n // (X * Y))  # noqa: E731
    src = np.array([coords(a) for a, _ in pairs])
    dst = np.array([coords(b) for _, b in pairs])
    nbytes = np.array([rng.randrange(1, 1000) for _ in pairs])
    load, hops = mapping.route_loads(src, dst, nbytes, shape, torus)
    want = np.zeros(nodes * 6, dtype=np.int64)
    for (a, b), n, h in zip(pairs, nbytes, hops):
        route = _core.deterministic_route(list(shape), list(torus), a, b)
        assert len(route) == h, (a, b)
        for node, d in route:
            want[node * 6 + d] += n
    assert (load == want).all()


def test_the_broadcasts_switch_size_is_the_cores():
    assert bcast.BCAST_LONG_MSG == _core.collective_thresholds()["bcast_ring"] == 512 * 1024
