"""Nonblocking and persistent collectives: their results, their progress
(inside the rank's MPI calls only), programs that rely on them advancing
while the rank waits for something else, and their errors."""

import numpy as np
import pytest

import bgsim
from bgsim import MPI


def run(main, **kw):
    kw.setdefault("shape", "2x2x2")
    return bgsim.run(main, **kw)


@pytest.mark.parametrize("machine", ["bgl", "bgp"])
def test_nonblocking_collectives_give_what_the_blocking_ones_give(machine):
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        out = {}
        a = np.arange(6, dtype="i8") * (r + 1)
        s = np.zeros(6, "i8")
        bb = np.arange(5000, dtype="u1") if r == 3 else np.zeros(5000, "u1")
        ag = np.zeros(2 * n, "i4")
        tt = np.zeros(n, "i4")
        rs = np.zeros(2, "f8")
        sc = np.zeros(3, "i8")
        reqs = [comm.Iallreduce(a, s), comm.Ibcast(bb, root=3), comm.Iallgather(np.full(2, r, "i4"), ag),
                comm.Ialltoall(np.arange(n, dtype="i4") + 100 * r, tt),
                comm.Ireduce_scatter_block(np.full(2 * n, float(r)), rs), comm.Iscan(np.full(3, r, "i8"), sc),
                comm.Ibarrier()]
        MPI.Request.Waitall(reqs)
        out["allreduce"] = s.tolist()
        out["bcast"] = bool((bb == np.arange(5000, dtype="u1")).all())
        out["allgather"] = ag.tolist()
        out["alltoall"] = tt.tolist()
        out["reduce_scatter"] = rs.tolist()
        out["scan"] = sc.tolist()
        return out

    res = run(main, machine=machine)
    n = len(res.results)
    for r, got in enumerate(res.results):
        assert got["allreduce"] == (np.arange(6) * sum(range(1, n + 1))).tolist()
        assert got["bcast"]
        assert got["allgather"] == [k // 2 for k in range(2 * n)]
        assert got["alltoall"] == [100 * k + r for k in range(n)]
        assert got["reduce_scatter"] == [float(sum(range(n)))] * 2
        assert got["scan"] == [sum(range(r + 1))] * 3
    # They ran point-to-point algorithms, counted apart from blocking ones.
    assert {"iallreduce", "ibcast", "iallgather", "ialltoall", "ibarrier"} <= set(res.collectives)


def test_a_nonblocking_collective_advances_only_inside_its_ranks_mpi_calls():
    # Rank 0 starts a dissemination barrier of 8 ranks (in round k, rank r
    # hears from rank r - 2^k) and computes 1 ms before it waits. Its first
    # round's message goes at the start; its later rounds' only once its
    # first is done and it is in an MPI call again: ranks 2 and 4, and 6
    # (which hears from 2), cannot leave the barrier before rank 0 waits.
    # Polling with Test while it computes lets them leave early.
    def main(poll):
        comm = MPI.COMM_WORLD
        t0 = MPI.Wtime()
        req = comm.Ibarrier()
        if comm.rank == 0:
            for _ in range(100):
                bgsim.compute(seconds=1e-5)
                if poll:
                    req.Test()
        req.Wait()
        return MPI.Wtime() - t0

    lazy = run(lambda: main(False)).results
    eager = run(lambda: main(True)).results
    assert min(lazy[2], lazy[4], lazy[6]) >= 1e-3
    assert max(lazy[1], lazy[3], lazy[5], lazy[7]) < 1e-4
    assert max(eager[1:]) < 1e-4
    assert lazy[0] >= 1e-3 and eager[0] >= 1e-3


def test_a_rank_waiting_for_something_else_advances_its_collectives():
    # Ranks 1.. wait for the barrier, then send to rank 0, which waits for
    # their messages first (a blocking receive, a Waitany, a blocking
    # Allreduce on the same communicator): each of these must advance rank
    # 0's barrier, or no one goes on.
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        req = comm.Ibarrier()
        buf = np.zeros(4)
        if r == 0:
            comm.Recv(buf, source=1)
            reqs = [comm.Irecv(np.zeros(4), source=k) for k in range(2, n)]
            while MPI.Request.Waitany(reqs) != MPI.UNDEFINED:
                pass
        else:
            req.Wait()
            comm.Send(np.ones(4), dest=0)
        s = np.zeros(1)
        comm.Allreduce(np.ones(1), s)
        req.Wait()
        return float(s[0])

    assert run(main).results == [8.0] * 8


def test_nbx_termination_with_ibarrier():
    # The NBX pattern (Hoefler et al.): synchronous sends to a few ranks,
    # then an Ibarrier once they are received; every rank probes for
    # messages until the barrier completes.
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        dests = [(r + 1) % n, (r + 3) % n]
        sends = [comm.Issend(np.full(1, r, "i4"), dest=d, tag=7) for d in dests]
        got, barrier = [], None
        while True:
            st = MPI.Status()
            if comm.Iprobe(source=MPI.ANY_SOURCE, tag=7, status=st):
                m = np.zeros(1, "i4")
                comm.Recv(m, source=st.Get_source(), tag=7)
                got.append(int(m[0]))
            if barrier is None:
                if MPI.Request.Testall(sends):
                    barrier = comm.Ibarrier()
            elif barrier.Test():
                return sorted(got)

    res = run(main).results
    assert res == [sorted([(r - 1) % 8, (r - 3) % 8]) for r in range(8)]


def test_persistent_collectives_run_once_per_start():
    def main():
        comm = MPI.COMM_WORLD
        a = np.zeros(1)
        s = np.zeros(1)
        p = comm.Allreduce_init(a, s)
        q = comm.Barrier_init()
        sums = []
        for k in range(3):
            a[0] = k + comm.rank
            MPI.Prequest.Startall([p, q])
            MPI.Request.Waitall([p, q])
            sums.append(float(s[0]))
        assert p and p.Test()  # inactive, not freed: a test says done
        p.Free()
        q.Free()
        return sums

    res = run(main, shape="2x2x1").results
    assert res == [[6.0, 10.0, 14.0]] * 4


def test_nonblocking_collective_errors():
    def bad_root():
        with pytest.raises(MPI.Exception) as e:
            MPI.COMM_WORLD.Ibcast(np.zeros(1), root=9)
        assert e.value.Get_error_class() == MPI.ERR_ROOT
        return True

    assert run(bad_root, shape="2x1x1").results == [True, True]

    def restart():
        comm = MPI.COMM_WORLD
        p = comm.Barrier_init()
        p.Start()
        with pytest.raises(MPI.Exception, match="still active"):
            p.Start()
        with pytest.raises(MPI.Exception, match="cannot be cancelled"):
            p.Cancel()
        p.Wait()
        return True

    assert run(restart, shape="2x1x1").results == [True, True]

    def mixed():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Ibarrier().Wait()
        else:
            comm.Barrier()

    with pytest.raises(bgsim.RankError, match="ibarrier.*barrier|barrier.*ibarrier"):
        run(mixed, shape="2x1x1")


def test_a_rank_that_ends_with_a_collective_in_progress_completes_it():
    def main():
        comm = MPI.COMM_WORLD
        req = comm.Ibarrier()
        if comm.rank:
            req.Wait()
        return True

    assert run(main).results == [True] * 8
