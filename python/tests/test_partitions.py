"""MPI programs on a machine cut into partitions run on threads
(`bgsim.run(threads=N)`, `bgsim run --threads N`): the same run as on one,
bit for bit - every figure of the result, every rank's return value, the
program's output in the same order - with software collectives, with
the collective and barrier networks and with deposit-bit broadcasts, and
clear errors for what does not run on partitions yet."""

import json

import numpy as np
import pytest

import bgsim
from bgsim import MPI
from bgsim.errors import DeadlockError, UsageError
from bgsim.runtime import compute
from conftest import run_cli

# Software algorithms: the hardware ones do not run on partitions yet.
SOFTWARE = {"barrier": "dissemination", "allreduce": "recursive_doubling", "bcast": "binomial",
            "reduce": "binomial", "allgather": "ring"}
HOST = ("wall_s", "python_wall_s", "threads", "partitions", "threaded_share", "processes")


def program():
    """Point-to-point of every protocol (one packet, eager, rendezvous),
    wildcards, probes, compute, and collectives the core runs."""
    comm = MPI.COMM_WORLD
    r, n = comm.Get_rank(), comm.Get_size()
    seen = []
    for size, tag in ((8, 1), (250, 2), (6000, 3)):
        a = np.full(size, r, dtype="d")
        b = np.empty(size, dtype="d")
        reqs = [comm.Isend(a, dest=(r + 7) % n, tag=tag), comm.Irecv(b, source=(r - 7) % n, tag=tag)]
        MPI.Request.Waitall(reqs)
        seen.append(float(b[0]))
    # Any source and any tag, after a probe.
    if r % 2 == 0:
        comm.send(("hello", r), dest=(r + 1) % n, tag=10 + r)
    else:
        st = MPI.Status()
        comm.probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
        seen.append((comm.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG), st.Get_source(), st.Get_tag()))
    compute(seconds=1e-6 * (r % 5))
    comm.Barrier()
    seen.append(comm.allreduce(r))
    seen.append(comm.alltoall([r * 100 + i for i in range(n)])[r ^ 1])
    seen.append(comm.bcast({"root": r} if r == 3 else None, root=3))
    seen.append(comm.allgather(r * r)[-1])
    x = np.empty(n, dtype="i8")
    comm.Alltoall(np.arange(n, dtype="i8") + r, x)
    seen.append(int(x.sum()))
    if r % 16 == 0:
        print(f"rank {r} at {MPI.Wtime():.9f}")
    return seen, MPI.Wtime()


def figures(result):
    d = result.to_dict()
    for k in HOST:
        d.pop(k, None)
    return json.dumps(d, sort_keys=True)


@pytest.mark.parametrize("machine,shape,mode,coll,fidelity", [
    ("bgl", "4x4x2", None, SOFTWARE, "packet"), ("bgp", "4x2x2", "vn", SOFTWARE, "packet"),
    ("bgl", "4x4x2", None, None, "packet"), ("bgp", "4x2x2", "vn", None, "packet"),
    ("bgl", "4x4x2", None, None, "coarse"), ("bgp", "4x2x2", "vn", SOFTWARE, "coarse"),
    ("bgp", "4x2x2", "vn", SOFTWARE, "message"), ("bgp", "4x2x2", "vn", None, "message")])
def test_a_program_on_partitions_is_the_program_on_one(machine, shape, mode, coll, fidelity, capsys):
    # coll None: the machine's own choices, the collective and barrier
    # networks among them. On the coarse tier a packet's head crosses to
    # the next partition's node, which books its next link there.
    one = bgsim.run(program, machine, shape=shape, mode=mode, coll=coll, fidelity=fidelity)
    out_one = capsys.readouterr().out
    assert one.to_dict()["counters"]["messages_completed"] > 0
    assert "rank 16 at" in out_one
    if coll is None:
        assert one.counters["tree_operations"] > 0 and "gi" in one.collectives["barrier"]
    for threads in (2, 3, 4):
        cut = bgsim.run(program, machine, shape=shape, mode=mode, coll=coll, threads=threads, partitions=threads, fidelity=fidelity)
        assert cut.fidelity == fidelity
        assert figures(cut) == figures(one), threads
        assert cut.threads == threads
        assert cut.results == one.results, threads
        assert capsys.readouterr().out == out_one, threads


def test_a_file_program_on_partitions_through_the_cli(tmp_path):
    prog = tmp_path / "ring.py"
    prog.write_text(
        "from mpi4py import MPI\n"
        "c = MPI.COMM_WORLD\n"
        "r, n = c.Get_rank(), c.Get_size()\n"
        "x = c.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)\n"
        "if r == 0:\n"
        "    print('got', x, 'at', MPI.Wtime())\n")
    outs = []
    for threads in ("1", "2"):
        js = tmp_path / f"r{threads}.json"
        r = run_cli("run", "--shape", "2x2x4", "--threads", threads, "--partitions", threads, "--json", str(js), str(prog))
        assert r.returncode == 0, r.stderr
        d = json.loads(js.read_text())
        for k in HOST:
            d.pop(k, None)
        outs.append((r.stdout, d))
    assert outs[0] == outs[1]
    assert "got 15 at" in outs[0][0]


@pytest.mark.parametrize("fidelity", ["packet", "coarse"])
def test_deposit_bit_broadcasts_on_partitions_are_the_broadcasts_on_one(fidelity):
    # Line packets forwarded by nodes whose ranks have not joined yet (the
    # root's partition tells the others), from several roots, one after
    # another and several in flight at once.
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        got = []
        for root in (0, 21, 37, 63):
            compute(seconds=1e-7 * ((r * 7 + root) % 11))
            got.append(comm.bcast(bytes(range(256)) * (3 + root) if r == root else None, root=root)[-1])
        return got, MPI.Wtime()

    one = bgsim.run(main, "bgl", shape="4x4x4", coll={"bcast": "torus_deposit"}, fidelity=fidelity)
    assert one.collectives["bcast"] == {"torus_deposit": 4}
    for threads in (2, 4):
        cut = bgsim.run(main, "bgl", shape="4x4x4", coll={"bcast": "torus_deposit"}, threads=threads, partitions=threads,
                        fidelity=fidelity)
        assert figures(cut) == figures(one) and cut.results == one.results, threads


def test_torus_allreduces_on_partitions_are_the_allreduces_on_one():
    # BG/P's torus allreduce on the quarters of a VN partition, two roots
    # (the first and the last node), ranks joining at different times:
    # partial sums cross partitions and wait at nodes whose ranks have not
    # joined; the way down is a deposit-bit broadcast.
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.Get_rank(), comm.Get_size()
        got = []
        for key in (r, -r):
            sub = comm.Split(r // (n // 4), key)
            compute(seconds=1e-7 * ((r * 7 + key) % 11))
            x = np.arange(700, dtype="f8") * (sub.Get_rank() + 1)
            y = np.empty_like(x)
            sub.Allreduce(x, y)
            got.append(float(y[-1]))
        return got, MPI.Wtime()

    one = bgsim.run(main, "bgp", shape="4x4x2", mode="vn")
    assert one.collectives["allreduce"] == {"torus_rectangle": 8}
    assert one.results[0][0] == [699.0 * 32 * 33 / 2] * 2
    for threads in (2, 4):
        cut = bgsim.run(main, "bgp", shape="4x4x2", mode="vn", threads=threads, partitions=threads)
        assert figures(cut) == figures(one) and cut.results == one.results, threads


def test_a_deadlock_on_partitions_names_the_same_ranks():
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        if r in (3, 12):
            comm.recv(source=(r + 5) % comm.Get_size(), tag=99)

    msgs = []
    for threads in (1, 2):
        with pytest.raises(DeadlockError) as e:
            bgsim.run(main, "bgl", shape="2x2x4", threads=threads, partitions=threads)
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]
    assert "rank 3" in msgs[0] and "rank 12" in msgs[0]


@pytest.mark.parametrize("fidelity", ["packet", "coarse"])
def test_a_timeline_on_partitions_is_the_timeline_on_one(tmp_path, monkeypatch, fidelity):
    # Few samples a node and few messages logged: the nodes' intervals
    # double and the partitions' logs are cut at the limit, the same way
    # for every cut. Nodes 0 and 31 are in different partitions.
    monkeypatch.setattr(bgsim.timeline, "SAMPLES", 6)
    monkeypatch.setattr(bgsim.timeline, "MESSAGES", 150)
    files = []
    for threads in (1, 2, 4):
        path = tmp_path / f"t{threads}.json"
        bgsim.run(program, "bgl", shape="4x4x2", coll=SOFTWARE, fidelity=fidelity, threads=threads,
                  partitions=threads, timeline=str(path), timeline_ranks="0-3,16-19,30,31", timeline_nodes="0,9,31")
        files.append(path.read_text())
    assert files[1] == files[0] and files[2] == files[0]
    trace = json.loads(files[0])
    other = trace["otherData"]
    assert other["messages_logged"] == 150 and other["messages_left_out"] > 0
    fifo = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "node 31 injection FIFO bytes"]
    # At most 6 samples and the one at the run's end, on a grid that
    # doubled from 4 packets' time (5.85 us on BG/L) past 100 us.
    assert 3 <= len(fifo) <= 7
    gaps = {round(b["ts"] - a["ts"], 6) for a, b in zip(fifo[:-1], fifo[1:-1])}
    assert len(gaps) == 1 and gaps.pop() > 100
    util = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "node 0 link utilization %"]
    assert any(v > 0 for e in util for v in e["args"].values())


def test_bad_thread_counts_are_refused_clearly():
    def barrier():
        MPI.COMM_WORLD.Barrier()

    for bad in (0, -1, 1.5, True):
        with pytest.raises(UsageError, match="threads"):
            bgsim.run(barrier, "bgl", shape="2x2x2", threads=bad)


@pytest.mark.parametrize("name", ["mpi-bcast", "bgp-parallel-colls", "bgp-cartesian", "mpi-tree"])
def test_an_mpi_experiment_on_threads_has_the_golden_figures(name):
    # `bgsim reproduce --threads 2`: the experiment's MPI programs on two
    # partitions (deposit-bit broadcasts, MPI_Comm_split, the coarse tier,
    # the collective network), figures as stored on one.
    from bgsim.reproduce import run_one
    from test_golden import check
    res, _ = run_one(name, "quick", seed=1, quiet=True, threads=2, partitions=2)
    check("quick", name, res)


def test_collectives_the_core_runs_go_on_inside_their_partitions():
    # Multi-step collectives run by the core (pairwise all-to-all, ring
    # allgather, dissemination barrier) advance inside each partition
    # without stopping for the driver, while ranks of other partitions run
    # their Python at the same ticks: the result is the one-thread result.
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        compute(seconds=1e-6 * (r % 3))
        send = np.repeat(np.arange(n, dtype="u1") + r, 64)
        recv = np.empty(n * 64, dtype="u1")
        comm.Alltoall(send, recv)
        t1 = MPI.Wtime()
        if r % 4 == 0:
            # Early finishers trade messages while others are still in it.
            comm.send(r, dest=(r + 4) % n, tag=3)
            comm.recv(source=(r - 4) % n, tag=3)
        got = np.empty(n * 8, dtype="u1")
        comm.Allgather(np.full(8, r, dtype="u1"), got)
        comm.Barrier()
        return t1, MPI.Wtime(), recv.tobytes(), got.tobytes()

    coll = {"alltoall": "pairwise", "allgather": "ring", "barrier": "dissemination"}
    one = bgsim.run(main, "bgl", shape="4x4x2", coll=coll, fidelity="coarse")
    assert one.collectives["alltoall"] == {"pairwise": 1}
    for threads in (2, 3):
        cut = bgsim.run(main, "bgl", shape="4x4x2", coll=coll, fidelity="coarse", threads=threads,
                        partitions=threads)
        assert cut.results == one.results and figures(cut) == figures(one), threads


def test_size_only_reductions_the_core_runs_are_the_same_on_partitions():
    # Recursive doubling and Rabenseifner's allreduce on sizes without
    # content, and recursive doubling's allgather, run by the core with a
    # combine on the rank's core after each step.
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        compute(seconds=1e-6 * (r % 3))
        half = comm.Split(r % 2, r)
        a, b = bgsim.shared_array(4096, "f8", key="a"), bgsim.shared_array(4096, "f8", key="b")
        for c in (comm, half):
            c.Allreduce(a[:64], b[:64], op=MPI.SUM)
            c.Allreduce(a, b, op=MPI.SUM)
            c.Allgather(a[:2], b[:2 * c.Get_size()])
        return MPI.Wtime()

    coll = {"allreduce": "auto"}
    one = bgsim.run(main, "bgp", shape="4x2x2", mode="vn", coll=coll, buffers="size-only")
    assert set(one.collectives["allreduce"]) == {"recursive_doubling", "reduce_scatter_allgather", "tree"}
    cut = bgsim.run(main, "bgp", shape="4x2x2", mode="vn", coll=coll, buffers="size-only", threads=2, partitions=2)
    assert cut.results == one.results and figures(cut) == figures(one)


def _far():
    # 256 KB half the machine away: long stretches of network alone.
    c = MPI.COMM_WORLD
    r, n = c.Get_rank(), c.Get_size()
    a = np.zeros(256 * 1024, dtype=np.uint8)
    b = np.empty_like(a)
    c.Sendrecv(a, dest=(r + n // 2) % n, recvbuf=b, source=(r - n // 2) % n)


def _ring():
    # One-packet messages around the ranks: ranks act every few windows.
    c = MPI.COMM_WORLD
    r, n = c.Get_rank(), c.Get_size()
    x, y = np.zeros(1), np.empty(1)
    for _ in range(30):
        c.Sendrecv(x, dest=(r + 1) % n, recvbuf=y, source=(r - 1) % n)


def test_a_run_on_threads_says_how_much_of_it_ran_on_them():
    one = bgsim.run(_far, "bgl", shape="4x4x2")
    assert one.threaded_share == 0.0 and "threads" not in one.summary()
    far = bgsim.run(_far, "bgl", shape="4x4x2", threads=2, partitions=2)
    ring = bgsim.run(_ring, "bgl", shape="4x4x2", threads=2, partitions=2)
    assert far.time_s == one.time_s
    # The engine starts its threads for the network's long stretches, and
    # keeps to one thread while ranks act every few windows.
    assert far.threaded_share > 0.5, far.threaded_share
    assert ring.threaded_share < 0.2, ring.threaded_share
    assert f"in 2 partitions on 2 threads ({far.threaded_share:.0%} of the simulated time on threads)" in far.summary()
    assert far.to_dict()["threaded_share"] == far.threaded_share


def test_a_run_too_small_for_threads_stays_on_one_and_says_so(capsys):
    # Fewer than 512 nodes or ranks: the engine keeps to one thread and
    # says why on stderr; `partitions` cuts the machine anyway; 512 nodes
    # and ranks are cut as asked. The figures are the same every way.
    def barrier():
        MPI.COMM_WORLD.Barrier()
        return MPI.Wtime()

    bgsim.api._SAID.clear()
    small = bgsim.run(barrier, "bgl", shape="4x4x2", threads=2)
    err = capsys.readouterr().err
    assert (small.threads, small.partitions) == (1, 1)
    assert "threads = 2: 32 nodes and 32 ranks: too small a run for partitions to pay (from 512)" in err
    assert "stays on one thread" in err and "partitions=2" in err
    forced = bgsim.run(barrier, "bgl", shape="4x4x2", threads=2, partitions=2)
    assert (forced.threads, forced.partitions) == (2, 2) and forced.results == small.results
    assert "partitions to pay" not in capsys.readouterr().err
    one_thread = bgsim.run(barrier, "bgl", shape="4x4x2", partitions=2)
    assert (one_thread.threads, one_thread.partitions) == (1, 2) and one_thread.results == small.results
    few = bgsim.run(barrier, "bgl", shape="8x8x8", nranks=64, threads=2)
    assert (few.threads, few.partitions) == (1, 1)
    assert "512 nodes and 64 ranks" in capsys.readouterr().err
    big = bgsim.run(barrier, "bgl", shape="8x8x8", threads=2)
    assert (big.threads, big.partitions) == (2, 2)
    assert "partitions to pay" not in capsys.readouterr().err
    with pytest.raises(UsageError, match="partitions = 1: a whole number, at least threads"):
        bgsim.run(barrier, "bgl", shape="4x4x2", threads=2, partitions=1)


def test_traffic_too_small_for_threads_stays_on_one(capsys):
    # Nodes times offered load under 128: one thread, and a note.
    bgsim.api._SAID.clear()
    spec = dict(shape="8x8x8", warmup_ncycles=200, measure_ncycles=1000)
    low = bgsim.run_traffic("uniform", load=0.1, threads=2, **spec)
    assert (low.data["engine"]["threads"], low.data["engine"]["partitions"]) == (1, 1)
    assert "512 nodes at an offered load of 0.1 (51.2 nodes' worth of traffic)" in capsys.readouterr().err
    high = bgsim.run_traffic("uniform", load=0.25, threads=2, **spec)
    assert (high.data["engine"]["threads"], high.data["engine"]["partitions"]) == (2, 2)
    assert capsys.readouterr().err == ""
