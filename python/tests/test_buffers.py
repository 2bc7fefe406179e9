"""Size-only buffers (`bgsim.run(buffers="size-only")`, `bgsim run
--buffers size-only`): the same messages, algorithms and simulated time as
full buffers, receive buffers left as they are; `bgsim.shared_array`."""

import json

import numpy as np
import pytest

import bgsim
from bgsim import MPI
from conftest import run_cli


def program():
    """Every buffer call kind, on COMM_WORLD and on a split half; returns
    whether the receive buffers still hold their -1s."""
    w = MPI.COMM_WORLD
    r = w.Get_rank()
    half = w.Split(r % 2, r)
    out = []
    for c in (w, half):
        me, m = c.Get_rank(), c.Get_size()
        send = np.arange(64, dtype="i4") + me
        recv = np.full(64, -1, "i4")
        many = np.full(64 * m, -1, "i4")
        c.Sendrecv(send, (me + 1) % m, 0, recv, (me - 1) % m, 0)
        out.append(recv.copy())
        buf = send.copy() if me == 0 else np.full(64, -1, "i4")
        c.Bcast(buf, root=0)
        out.append(buf if me else None)
        c.Bcast(np.full(8192, me, "i4") if me == 0 else np.full(8192, -1, "i4"), root=0)
        c.Allreduce(send, recv, op=MPI.SUM)
        out.append(recv.copy())
        c.Reduce(send, recv if me == 1 % m else None, op=MPI.MAX, root=1 % m)
        c.Allgather(send[:4], many[:4 * m])
        out.append(many.copy())
        counts = [k % 3 + 1 for k in range(m)]
        displs = list(np.cumsum([0] + counts[:-1]))
        c.Allgatherv(send[:counts[me]], [many, counts, displs, MPI.INT])
        out.append(many.copy())
        c.Gather(send[:4], many[:4 * m] if me == 0 else None, root=0)
        c.Scatter(many[:4 * m] if me == 0 else None, recv[:4], root=0)
        c.Alltoall(np.tile(send[:2], m), many[:2 * m])
        out.append(many.copy())
        c.Alltoallv([np.tile(send[:1], m), [1] * m, list(range(m)), MPI.INT], [many, [1] * m, list(range(m)), MPI.INT])
        c.Reduce_scatter_block(np.tile(send[:2], m), recv[:2], op=MPI.SUM)
        c.Scan(send[:4], recv[:4], op=MPI.SUM)
        c.Exscan(send[:4], recv[:4], op=MPI.SUM)
        c.Alltoallw([send, ([1] * m, [0] * m), [MPI.INT] * m], [many, ([1] * m, [4 * i for i in range(m)]), [MPI.INT] * m])
        req = [c.Isend(send, (me + 1) % m, 7), c.Irecv(recv, (me - 1) % m, 7)]
        MPI.Request.Waitall(req)
        c.Sendrecv_replace(recv, (me + 1) % m, 3, (me - 1) % m, 3)
        out.append(recv.copy())
        c.Barrier()
    kept = all(x is None or (x == -1).all() for x in out)
    return kept, w.allreduce(r)  # an object call still carries its object


@pytest.mark.parametrize("shape,nranks,coll", [
    ("2x2x2", 8, None),
    ("2x2x2", 7, None),
    ("2x2x2", 8, {"allgather": "ring", "bcast": "scatter_allgather", "allreduce": "recursive_doubling"}),
    ("2x2x2", 6, {"allgather": "bruck", "alltoall": "pairwise"}),
    ("2x2x2", 7, {"allreduce": "reduce_scatter_allgather"}),
])
def test_size_only_buffers_cost_what_full_buffers_cost(shape, nranks, coll):
    full = bgsim.run(program, shape=shape, nranks=nranks, coll=coll)
    sized = bgsim.run(program, shape=shape, nranks=nranks, coll=coll, buffers="size-only")
    assert sized.buffers == "size-only" and full.buffers == "full"
    assert sized.time_s == full.time_s
    for key in ("messages_completed", "packets_sent", "payload_bytes_delivered", "tree_operations", "events"):
        assert sized.counters[key] == full.counters[key], key
    assert sized.collectives == full.collectives
    total = nranks * (nranks - 1) // 2
    assert [k for k, _ in full.results] == [False] * nranks  # full buffers got data
    assert sized.results == [(True, total)] * nranks  # size-only: untouched; objects still travel
    assert "size-only buffers" in sized.summary()


def test_shared_array_is_one_array_per_shape_dtype_and_key():
    def main():
        a = bgsim.shared_array(1 << 20, "f8")
        b = bgsim.shared_array((1 << 20,), np.float64)
        c = bgsim.shared_array(1 << 20, "f8", key="other")
        a[MPI.COMM_WORLD.Get_rank()] = 1
        MPI.COMM_WORLD.Barrier()
        return id(a), a is b, a is c, float(a[:8].sum())
    res = bgsim.run(main, shape="2x2x2")
    assert len({r[0] for r in res.results}) == 1
    assert all(r[1] and not r[2] and r[3] == 8 for r in res.results)


def test_bad_buffer_modes_and_shapes_are_refused():
    with pytest.raises(bgsim.errors.UsageError, match="allowed full, size-only"):
        bgsim.run(lambda: None, shape="1x1x1", buffers="none")
    with pytest.raises(bgsim.errors.RankError, match="shape \\(2, -1\\) has a negative dimension"):
        bgsim.run(lambda: bgsim.shared_array((2, -1)), shape="1x1x1")
    with pytest.raises(bgsim.errors.StateError, match="outside a simulated rank"):
        bgsim.shared_array(4)


def test_the_command_line_runs_a_program_with_size_only_buffers(tmp_path):
    """`bgsim run --buffers size-only`: the halo example gives the same
    simulated time and messages as with full buffers, and says how it ran."""
    out = {}
    for mode in ("full", "size-only"):
        path = tmp_path / f"{mode}.json"
        p = run_cli("run", "--shape", "2x2x2", "--buffers", mode, "--json", str(path), "examples/halo2d.py")
        assert p.returncode == 0, p.stderr
        out[mode] = json.loads(path.read_text())
        assert ("size-only buffers" in p.stderr) == (mode == "size-only")
    assert out["size-only"]["buffers"] == "size-only"
    assert out["size-only"]["time_s"] == out["full"]["time_s"]
    assert out["size-only"]["counters"] == out["full"]["counters"]
    p = run_cli("run", "--buffers", "none", "examples/halo2d.py")
    assert p.returncode == 2 and "invalid choice: 'none'" in p.stderr


def _python_peak(program, nranks: int) -> int:
    """Peak of what Python itself allocates during a run (tracemalloc:
    the core's own memory is not counted)."""
    import tracemalloc
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        bgsim.run(program, "bgp", nranks=nranks, mode="vn", buffers="size-only")
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_size_only_alltoall_holds_nothing_per_message_in_python():
    # Every rank posts n - 1 sends and receives at once; with size-only
    # buffers one size and the ranks go to the core, which holds the
    # messages (each waiting rank held a list of n sizes, and each rank
    # that had finished its call the n sizes it received, until its next
    # call: 29 bytes of Python per message at 256 ranks).
    def program(kind):
        def main():
            comm = MPI.COMM_WORLD
            n = comm.Get_size()
            send = bgsim.shared_array(n * 256, "u1", key="send")
            recv = bgsim.shared_array(n * 256, "u1", key="recv")
            if kind == "alltoall":
                comm.Alltoall(send, recv)
            else:
                comm.Barrier()
        return main

    n = 512
    extra = _python_peak(program("alltoall"), n) - _python_peak(program("barrier"), n)
    # (What is left is per rank: its call's frames, about 1.5 KB.)
    assert extra / (n * (n - 1)) < 8, f"{extra / (n * (n - 1)):.1f} bytes of Python per message"
