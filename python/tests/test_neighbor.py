"""Neighbourhood collectives on Cartesian grids (periodic or not, with
dimensions of size 2, where both neighbours are one rank) and graphs: who
gets which block, PROC_NULL neighbours, the object and persistent forms."""

import numpy as np
import pytest

import bgsim
from bgsim import MPI


@pytest.mark.parametrize("dims,periods", [([4, 2], [True, True]), ([8], [False]), ([2, 2, 2], [True, False, True])])
def test_a_cartesian_neighbourhood_pairs_each_direction(dims, periods):
    def main():
        comm = MPI.COMM_WORLD
        r = comm.rank
        cart = comm.Create_cart(dims, periods=periods)
        ins, outs = cart.inoutedges
        got = {}
        rb = np.full((len(ins), 2), -1, "i4")
        cart.Neighbor_allgather(np.full(2, r, "i4"), rb)
        got["allgather"] = rb[:, 0].tolist()
        # Block k goes to out-neighbour k and says (sender, k): the block
        # from in-neighbour k is the one it sent this way, k ^ 1.
        rb = np.full((len(ins), 2), -1, "i4")
        cart.Ineighbor_alltoall(np.array([[r, k] for k in range(len(outs))], "i4"), rb).Wait()
        got["alltoall"] = rb.tolist()
        got["objects"] = cart.neighbor_alltoall([(r, k) for k in range(len(outs))])
        cart.Free()
        return ins, got

    for r, (ins, got) in enumerate(bgsim.run(main, shape="2x2x2").results):
        assert got["allgather"] == [-1 if i == MPI.PROC_NULL else i for i in ins]
        assert got["alltoall"] == [[-1, -1] if i == MPI.PROC_NULL else [i, k ^ 1] for k, i in enumerate(ins)]
        assert got["objects"] == [None if i == MPI.PROC_NULL else (i, k ^ 1) for k, i in enumerate(ins)]


def test_a_graph_neighbourhood_matches_repeated_edges_in_order():
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        g = comm.Create_dist_graph_adjacent([(r - 1) % n] * 2, [(r + 1) % n] * 2)
        rb = np.zeros(2, "i4")
        p = g.Neighbor_alltoall_init(np.array([10 * r, 10 * r + 1], "i4"), rb)
        out = []
        for _ in range(2):
            p.Start()
            p.Wait()
            out.append(rb.tolist())
        counts = np.zeros(2, "i4")
        g.Neighbor_alltoallv([np.array([r, -1, r + 100], "i4"), [1, 1], [0, 2], MPI.INT],
                             [counts, [1, 1], [0, 1], MPI.INT])
        got = counts.tolist()
        with pytest.raises(MPI.Exception, match="in-neighbour 1 sent 8 bytes for a slot of 1 x MPI_INT"):
            g.Neighbor_alltoallv([np.zeros(3, "i4"), [1, 2], [0, 1], MPI.INT], [counts, [1, 1], [0, 1], MPI.INT])
        p.Free()
        return out, got

    res = bgsim.run(main, shape="2x2x1", machine="bgp", mode="smp").results
    for r, (out, counts) in enumerate(res):
        left = (r - 1) % len(res)
        assert out == [[10 * left, 10 * left + 1]] * 2
        assert counts == [left, left + 100]


def test_neighbourhood_collectives_are_counted_and_must_match():
    def main():
        comm = MPI.COMM_WORLD
        cart = comm.Create_cart([comm.size], periods=[True])
        if comm.rank == 0:
            cart.Neighbor_allgather(np.zeros(1), np.zeros(2))
        else:
            cart.Neighbor_alltoall(np.zeros(2), np.zeros(2))

    with pytest.raises(bgsim.RankError, match="neighbor_allgather.*neighbor_alltoall|neighbor_alltoall.*neighbor_allgather"):
        bgsim.run(main, shape="2x1x1")

    def ok():
        cart = MPI.COMM_WORLD.Create_cart([MPI.COMM_WORLD.size], periods=[True])
        cart.Neighbor_allgather(np.zeros(1), np.zeros(2))

    assert bgsim.run(ok, shape="2x1x1").collectives["neighbor_allgather"] == {"direct": 1}
