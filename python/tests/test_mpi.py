"""The simulated MPI through the Python API: data that really moves,
mpi4py semantics, errors, determinism."""

import array
import mmap
import pickle

import numpy as np
import pytest

import bgsim
from bgsim import MPI


def run(main, **kw):
    kw.setdefault("shape", "2x2x2")
    return bgsim.run(main, **kw)


def test_buffer_api_moves_real_data_in_many_buffer_kinds():
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        if r == 0:
            comm.Send(np.arange(100, dtype="d"), dest=1, tag=1)
            comm.Send(bytearray(b"abc" * 10), dest=1, tag=2)
            comm.Send(array.array("i", range(50)), dest=1, tag=3)
            m = mmap.mmap(-1, 64)
            m.write(bytes(range(64)))
            comm.Send(m, dest=1, tag=4)
            comm.Send([np.arange(10, dtype="i"), 4, MPI.INT], dest=1, tag=5)
            comm.Send([np.arange(10, dtype="i"), (3, 5), MPI.INT], dest=1, tag=6)
            comm.Send(np.arange(5000, dtype="i8"), dest=1, tag=7)  # rendezvous
            return None
        if r == 1:
            a = np.empty(100, dtype="d")
            st = MPI.Status()
            comm.Recv(a, source=0, tag=1, status=st)
            b = bytearray(30)
            comm.Recv(b, source=0, tag=2)
            c = array.array("i", [0] * 50)
            comm.Recv(c, source=MPI.ANY_SOURCE, tag=3)
            m = mmap.mmap(-1, 64)
            comm.Recv(m, source=0, tag=4)
            d = np.zeros(10, dtype="i")
            comm.Recv([d, 4, MPI.INT], source=0, tag=5)
            e = np.zeros(10, dtype="i")
            comm.Recv([e, (3, 2), MPI.INT], source=0, tag=6)
            f = np.empty(5000, dtype="i8")
            comm.Recv(f, source=0, tag=7)
            return (a.tolist(), st.Get_count(MPI.DOUBLE), st.Get_source(), st.Get_tag(), bytes(b), list(c),
                    bytes(m[:]), d.tolist(), e.tolist(), bool((f == np.arange(5000)).all()))
    res = run(main).results[1]
    assert res[0] == list(np.arange(100.0))
    assert res[1:4] == (100, 0, 1)
    assert res[4] == b"abc" * 10
    assert res[5] == list(range(50))
    assert res[6] == bytes(range(64))
    assert res[7] == [0, 1, 2, 3, 0, 0, 0, 0, 0, 0]
    assert res[8] == [0, 0, 5, 6, 7, 0, 0, 0, 0, 0]
    assert res[9] is True


def test_pickle_api_and_nonblocking_requests():
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        reqs = [comm.isend({"from": r, "data": list(range(r))}, dest=d, tag=r) for d in range(n) if d != r]
        got = [comm.irecv(source=s, tag=s) for s in range(n) if s != r]
        objs = MPI.Request.waitall(got)
        MPI.Request.Waitall(reqs)
        # waitany / testall
        rq = [comm.irecv(source=MPI.ANY_SOURCE, tag=99)]
        comm.send(r * 10, dest=(r + 1) % n, tag=99)
        idx, val = MPI.Request.waitany(rq)
        flag, _ = MPI.Request.testall([])
        return sorted(o["from"] for o in objs), objs[0]["data"], idx, val, flag
    res = run(main).results
    for r, (froms, data0, idx, val, flag) in enumerate(res):
        assert froms == [s for s in range(8) if s != r]
        assert idx == 0 and val == ((r - 1) % 8) * 10 and flag is True


def test_waitall_with_a_request_named_twice_and_buffers_filled_in_order():
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.rank, comm.size
        bufs = [np.zeros(300, dtype="i4") for _ in range(n)]
        recvs = [comm.Irecv(bufs[s], source=s, tag=7) for s in range(n) if s != r]
        sends = [comm.Isend(np.full(300, r * 100 + d, dtype="i4"), dest=d, tag=7) for d in range(n) if d != r]
        # The same request twice in one Waitall: it completes once.
        MPI.Request.Waitall(recvs + [recvs[0]] + sends)
        return [int(b[0]) for b in bufs], [int(b[-1]) for b in bufs]
    res = run(main).results
    for r, (first, last) in enumerate(res):
        expect = [0 if s == r else s * 100 + r for s in range(8)]
        assert first == expect and last == expect


def test_status_probe_any_source_and_cancel():
    def main():
        comm = MPI.COMM_WORLD
        if comm.rank == 3:
            comm.send("x" * 500, dest=0, tag=42)
        if comm.rank == 0:
            st = MPI.Status()
            comm.Probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
            probed = (st.Get_source(), st.Get_tag(), st.Get_count() == len(pickle.dumps("x" * 500, pickle.HIGHEST_PROTOCOL)))
            msg = comm.recv(source=st.Get_source(), tag=st.Get_tag())
            req = comm.irecv(source=5, tag=1)
            req.Cancel()
            cst = MPI.Status()
            req.Wait(cst)
            return probed, len(msg), cst.Is_cancelled(), comm.iprobe(source=1)
    res = run(main).results[0]
    assert res == ((3, 42, True), 500, True, False)


def test_communicators_split_dup_create_compare_and_groups():
    def main():
        w = MPI.COMM_WORLD
        r = w.rank
        half = w.Split(color=r % 2, key=-r)
        dup = w.Dup()
        g = w.Get_group().Incl([0, 2, 4])
        sub = w.Create(g)
        out = {"half": (half.Get_size(), half.Get_rank()), "cmp_dup": w.Compare(dup), "cmp_self": w.Compare(w)}
        # Messages on different communicators never match each other.
        if r == 0:
            dup.send("dup", dest=2, tag=0)
            w.send("world", dest=2, tag=0)
        if r == 2:
            out["order"] = (w.recv(source=0, tag=0), dup.recv(source=0, tag=0))
        out["sub"] = None if sub == MPI.COMM_NULL else (sub.Get_size(), sub.Get_rank())
        out["half_sum"] = half.allreduce(r)
        out["translate"] = MPI.Group.Translate_ranks(g, [0, 1, 2], w.Get_group())
        out["self"] = (MPI.COMM_SELF.Get_size(), MPI.COMM_SELF.Get_rank())
        return out
    res = run(main).results
    # key = -rank reverses the order inside each half.
    assert res[0]["half"] == (4, 3) and res[6]["half"] == (4, 0)
    assert res[1]["half_sum"] == 1 + 3 + 5 + 7 and res[0]["half_sum"] == 12
    assert res[0]["cmp_dup"] == MPI.CONGRUENT and res[0]["cmp_self"] == MPI.IDENT
    assert res[2]["order"] == ("world", "dup")
    assert res[4]["sub"] == (3, 2) and res[1]["sub"] is None
    assert res[0]["translate"] == [0, 2, 4]
    assert res[5]["self"] == (1, 0)


def test_cartesian_topology():
    def main():
        w = MPI.COMM_WORLD
        dims = MPI.Compute_dims(w.size, [0, 0])
        cart = w.Create_cart(dims, periods=[True, False])
        row = cart.Sub([False, True])
        return dims, cart.Get_coords(cart.rank), cart.Shift(0, 1), cart.Shift(1, 1), row.size, cart.Get_topo()[1]
    res = run(main, shape="4x2x1").results
    assert res[0][0] == [4, 2]
    assert res[3][1] == [1, 1]
    assert res[0][2] == (6, 2)          # periodic: wraps
    assert res[1][3] == (0, MPI.PROC_NULL)  # non-periodic edge
    assert res[0][4] == 2 and res[0][5] == [1, 0]
    assert MPI.Compute_dims(12, 3) == [3, 2, 2]


def test_collectives_compute_what_mpi_computes():
    def main():
        w = MPI.COMM_WORLD
        r, n = w.rank, w.size
        out = {}
        out["bcast"] = w.bcast({"k": 7} if r == 2 else None, root=2)
        out["gather"] = w.gather(r * r, root=1)
        out["scatter"] = w.scatter([i + 100 for i in range(n)] if r == 0 else None, root=0)
        out["allgather"] = w.allgather(r)
        out["alltoall"] = w.alltoall([(r, i) for i in range(n)])
        out["reduce"] = w.reduce(r, op=MPI.MAX, root=3)
        out["scan"] = w.scan(r)
        out["exscan"] = w.exscan(r)
        out["maxloc"] = w.allreduce((r % 3, r), op=MPI.MAXLOC)
        a = np.arange(4, dtype="i") + r
        b = np.zeros(4, dtype="i")
        w.Allreduce(a, b, op=MPI.SUM)
        out["Allreduce"] = b.tolist()
        rb = np.zeros(n, dtype="d")
        w.Allgather(np.array([r * 1.5]), rb)
        out["Allgather"] = rb.tolist()
        sb = np.arange(n, dtype="i") + 10 * r
        ab = np.zeros(n, dtype="i")
        w.Alltoall(sb, ab)
        out["Alltoall"] = ab.tolist()
        buf = np.array([r], dtype="i") if r == 0 else np.zeros(1, dtype="i")
        if r == 0:
            buf[0] = 99
        w.Bcast(buf, root=0)
        out["Bcast"] = int(buf[0])
        cnt = [1, 2, 1, 2, 1, 2, 1, 2]
        gv = np.zeros(sum(cnt), dtype="i") if r == 0 else None
        w.Gatherv(np.full(cnt[r], r, dtype="i"), [gv, cnt, MPI.INT] if r == 0 else None, root=0)
        out["Gatherv"] = gv.tolist() if r == 0 else None
        user = MPI.Op.Create(lambda x, y, dt=None: np.maximum(x, y) if dt is not None else max(x, y), commute=True)
        out["user"] = w.allreduce(r * 2, op=user)
        sc = np.zeros(1, dtype="i")
        w.Scan(np.array([r], dtype="i"), sc)
        out["Scan"] = int(sc[0])
        w.Barrier()
        return out
    res = run(main).results
    n = 8
    for r, o in enumerate(res):
        assert o["bcast"] == {"k": 7}
        assert o["gather"] == ([i * i for i in range(n)] if r == 1 else None)
        assert o["scatter"] == r + 100
        assert o["allgather"] == list(range(n))
        assert o["alltoall"] == [(i, r) for i in range(n)]
        assert o["reduce"] == (n - 1 if r == 3 else None)
        assert o["scan"] == sum(range(r + 1))
        assert o["exscan"] == (None if r == 0 else sum(range(r)))
        assert o["maxloc"] == (2, 2)
        assert o["Allreduce"] == [sum(range(n)) + 4 * 0 + k * n for k in range(4)]
        assert o["Allgather"] == [i * 1.5 for i in range(n)]
        assert o["Alltoall"] == [r + 10 * i for i in range(n)]
        assert o["Bcast"] == 99
        assert o["user"] == 14
        assert o["Scan"] == sum(range(r + 1))
    assert res[0]["Gatherv"] == [0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 7, 7]


def test_errors_are_mpi4py_errors():
    def main():
        w = MPI.COMM_WORLD
        errs = []
        for f in (lambda: w.send(1, dest=8), lambda: w.Send(np.zeros(2), dest=-5), lambda: w.send(1, dest=0, tag=-3)):
            try:
                f()
            except MPI.Exception as e:
                errs.append(e.Get_error_class())
        try:
            w.Send([np.zeros(2), 5, MPI.DOUBLE], dest=1)
        except ValueError as e:
            errs.append("too small" in str(e))
        try:
            w.Send([np.zeros(2), -1, MPI.DOUBLE], dest=1)
        except ValueError as e:
            errs.append("negative count" in str(e))
        if w.rank == 0:
            w.Send(np.zeros(10), dest=1)
        if w.rank == 1:
            try:
                w.Recv(np.zeros(5), source=0)
            except MPI.Exception as e:
                errs.append(e.Get_error_class() == MPI.ERR_TRUNCATE)
        return errs
    res = run(main, shape="2x1x1").results
    assert res[0] == [MPI.ERR_RANK, MPI.ERR_RANK, MPI.ERR_TAG, True, True]
    assert res[1] == [MPI.ERR_RANK, MPI.ERR_RANK, MPI.ERR_TAG, True, True, True]


def test_deadlock_names_every_blocked_rank_and_call():
    def main():
        w = MPI.COMM_WORLD
        if w.rank < 2:
            w.recv(source=1 - w.rank, tag=5)
    with pytest.raises(bgsim.DeadlockError) as e:
        run(main, shape="2x2x1")
    msg = str(e.value)
    assert "rank 0: in MPI.Comm.recv(source=1, tag=5) at test_mpi.py" in msg
    assert "waiting for a message from rank 1 with tag 5" in msg
    assert "rank 1: in MPI.Comm.recv(source=0, tag=5)" in msg
    assert "2 rank(s) had already finished" in msg


def test_rendezvous_send_without_receive_is_a_deadlock_not_a_hang():
    def main():
        if MPI.COMM_WORLD.rank == 0:
            MPI.COMM_WORLD.Send(np.zeros(10000), dest=1)
    with pytest.raises(bgsim.DeadlockError, match="rendezvous: no matching receive"):
        run(main, shape="2x1x1")


def test_exception_in_one_rank_stops_the_run_with_its_traceback():
    def main():
        MPI.COMM_WORLD.barrier()
        if MPI.COMM_WORLD.rank == 3:
            raise KeyError("boom in rank three")
        MPI.COMM_WORLD.barrier()
    with pytest.raises(bgsim.RankError) as e:
        run(main)
    assert e.value.rank == 3
    assert "KeyError: 'boom in rank three'" in e.value.traceback
    assert "test_mpi.py" in e.value.traceback


def test_wtime_compute_and_result_statistics():
    def main():
        t0 = MPI.Wtime()
        bgsim.compute(seconds=1e-3)
        t1 = MPI.Wtime()
        bgsim.compute(cycles=700)
        return t1 - t0, MPI.Wtime() - t1
    r = run(main, shape="2x1x1")
    assert r.results[0][0] == pytest.approx(1e-3)
    assert r.results[0][1] == pytest.approx(1e-6)
    assert r.time_s == pytest.approx(1.001e-3)
    assert r.ranks[0]["core_compute_cycles"] == pytest.approx(700_700)
    assert r.nranks == 2 and r.mode == "coprocessor"


def test_vn_mode_ranks_and_intranode_messages():
    def main():
        w = MPI.COMM_WORLD
        r = w.rank
        other = (r + 2) % 4  # XYZT on 2 nodes: rank r and r+2 share a node
        data = w.sendrecv(np.full(3000, r, dtype="u1").tobytes(), dest=other, source=other)
        return MPI.Get_processor_name(), data == bytes([other]) * 3000
    r = run(main, shape="2x1x1", mode="vn")
    assert r.nranks == 4
    assert r.results[0][0] == r.results[2][0] != r.results[1][0]
    assert all(ok for _, ok in r.results)
    assert r.ranks[0]["msgs_intranode"] == 1



@pytest.mark.parametrize("nbytes, sync", [(64_000, False), (300, True)])
def test_a_vn_tasks_messages_do_not_wait_for_the_other_task_of_its_node(nbytes, sync):
    # XYZT on 2 nodes in VN mode: ranks 0, 1 are the first tasks of nodes 0,
    # 1 and ranks 2, 3 the second. Rank 2 sends to rank 3 a rendezvous
    # message (the receiver's ack goes back to rank 2) or a synchronous
    # one-packet message (its ack likewise) while the first tasks compute.
    # Every packet goes to its own task's reception group and core, so the
    # answer to rank 2 waits for nobody's computation.
    def main(busy):
        comm = MPI.COMM_WORLD
        buf = np.zeros(nbytes, "u1")
        t0 = MPI.Wtime()
        if comm.rank == 2:
            (comm.Ssend if sync else comm.Send)(buf, dest=3)
        elif comm.rank == 3:
            comm.Recv(buf, source=2)
        elif busy:
            bgsim.compute(seconds=0.01)
        return MPI.Wtime() - t0

    idle = run(lambda: main(False), shape="2x1x1", mode="vn")
    busy = run(lambda: main(True), shape="2x1x1", mode="vn")
    assert idle.results[2] < 0.002
    assert busy.results[2] == idle.results[2] and busy.results[3] == idle.results[3]

def test_mapping_places_ranks_and_mapfile_errors_name_the_line(tmp_path):
    def main():
        return MPI.Get_processor_name()
    r = run(main, shape="2x2x1", mode="vn", mapping="TXYZ")
    assert r.results[0] == r.results[1] != r.results[2]
    assert (r.ranks[1]["x"], r.ranks[1]["t"]) == (0, 1)
    f = tmp_path / "map.txt"
    f.write_text("# rank placement\n1 1 0 0\n\n0 0 0 0  # rank 1\n")
    r = run(main, shape="2x2x1", mapping=str(f))
    assert r.nranks == 2 and (r.ranks[0]["x"], r.ranks[0]["y"]) == (1, 1)
    for text, n, msg in [
        ("0 0 0 0\n0 0 0 0\n", None, "map.txt:2: slot 0 0 0 0 is already taken by rank 0"),
        ("0 0 0 0\n5 0 0 0\n", None, "map.txt:2: x = 5 is outside the shape 2x2x1"),
        ("0 0 0 1\n", None, "map.txt:1: t = 1 is beyond the 1 task(s) per node"),
        ("0 0 zero 0\n", None, "map.txt:1: `zero` is not a non-negative integer"),
        ("0 0 0 0\n", 2, "has 1 rank lines, but the run has 2 ranks"),
    ]:
        f.write_text(text)
        with pytest.raises(bgsim.MappingError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            run(main, shape="2x2x1", mapping=str(f), nranks=n)
    with pytest.raises(bgsim.MappingError, match="neither a permutation"):
        run(main, mapping="XYZ")


def test_runs_are_deterministic():
    def main():
        w = MPI.COMM_WORLD
        x = w.allgather(w.rank)
        w.Alltoall(np.arange(8 * 300, dtype="i"), np.zeros(8 * 300, dtype="i"))
        return MPI.Wtime(), x
    a, b = run(main), run(main)
    assert [x[0] for x in a.results] == [x[0] for x in b.results]
    assert a.counters == b.counters


def test_mpi4py_import_is_the_simulated_module_only_during_a_run():
    import sys

    def main():
        from mpi4py import MPI as M
        return M is MPI, M.get_vendor()[0], M.Get_version(), M.Get_library_version()
    res = run(main, shape="1x1x1").results[0]
    assert res[:3] == (True, "bgsim", (4, 1))
    assert "one-sided" in res[3] and "not simulated: dynamic processes" in res[3]
    assert "mpi4py.MPI" not in sys.modules or sys.modules["mpi4py.MPI"] is not MPI


def test_to_dataframe_or_clear_error():
    r = run(lambda: MPI.COMM_WORLD.barrier(), shape="2x1x1")
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            r.to_dataframe()
    else:
        df = r.to_dataframe()
        assert list(df.index) == [0, 1] and "sends" in df.columns
    assert '"nranks": 2' in r.to_json()


def test_65536_ranks_in_one_process():
    def main():
        comm = MPI.COMM_WORLD
        r, n = comm.Get_rank(), comm.Get_size()
        x = comm.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)
        comm.Barrier()
        return x == (r - 1) % n
    res = run(main, shape="64x32x32")
    assert res.nranks == 65536 and all(res.results)
    assert res.collectives["barrier"] == {"gi": 1}


def test_cpu_factor_charges_host_time():
    def main():
        t0 = MPI.Wtime()
        s = 0
        for i in range(200_000):  # some host CPU time between MPI calls
            s += i
        return MPI.Wtime() - t0
    plain = run(main, shape="1x1x1").results[0]
    charged = run(main, shape="1x1x1", cpu_factor=1.0).results[0]
    assert plain == 0.0 and charged > 1e-4


def test_coprocessor_receives_rendezvous_data_and_interrupts_cost():
    def main():
        comm = MPI.COMM_WORLD
        if comm.rank == 0:
            comm.Send(np.zeros(100_000, "u1"), dest=1)
        elif comm.rank == 1:
            comm.Recv(np.zeros(100_000, "u1"), source=0)
        return MPI.Wtime()
    base = run(main, shape="2x1x1")
    co = run(main, shape="2x1x1", settings=["msglayer.coprocessor_rendezvous=true"])
    irq = run(main, shape="2x1x1", settings=["msglayer.interrupts=true"])
    # The main core of the receiver reads nothing when the coprocessor does.
    assert co.ranks[1]["core_read_cycles"] < base.ranks[1]["core_read_cycles"] / 10
    assert irq.ranks[1]["core_interrupt_cycles"] > 400 * 1000
    assert irq.time_s > base.time_s


def test_unaligned_receive_buffers_cost_a_realignment_copy():
    def main(offset):
        def prog():
            comm = MPI.COMM_WORLD
            if comm.rank == 0:
                comm.Send(np.arange(50_000, dtype="u1"), dest=1)
            elif comm.rank == 1:
                raw = np.zeros(50_000 + 16, dtype="u1")
                base = (-raw.__array_interface__["data"][0]) % 16
                view = raw[base + offset: base + offset + 50_000]
                comm.Recv(view, source=0)
                return bool((view == np.arange(50_000, dtype="u1")).all())
        return prog
    aligned = run(main(0), shape="2x1x1")
    unaligned = run(main(3), shape="2x1x1")
    assert aligned.results[1] and unaligned.results[1]
    assert aligned.ranks[1]["core_copy_cycles"] == 0
    # Half of a 50,000-byte copy at 4.3 bytes per cycle.
    assert unaligned.ranks[1]["core_copy_cycles"] == pytest.approx(50_000 / 4.3 / 2, rel=0.01)
    assert unaligned.time_s > aligned.time_s


def test_numpy_fast_path_and_general_path_agree():
    """Isend / Irecv / Send / Recv of numpy arrays take a one-call path into
    the core; other buffers the general one. Both must give the same data,
    statuses and simulated times."""

    def halo(kind):
        def main():
            comm = MPI.COMM_WORLD
            r, n = comm.Get_rank(), comm.Get_size()
            nbrs = [(r + 1) % n, (r - 1) % n, (r + 3) % n]
            make = (lambda k: np.full(k, r % 251, dtype="u1")) if kind == "numpy" else (lambda k: bytearray([r % 251]) * k)
            empty = (lambda k: np.zeros(k, dtype="u1")) if kind == "numpy" else bytearray
            got = []
            for size in (8, 600, 3000):  # one packet, eager, rendezvous
                recv = [empty(size + 5) for _ in nbrs]
                reqs = [comm.Irecv(b, source=MPI.ANY_SOURCE if i == 2 else s, tag=size) for i, (b, s) in enumerate(zip(recv, nbrs))]
                reqs += [comm.Isend(make(size), dest=d, tag=size) for d in reversed(nbrs)]
                statuses = []
                MPI.Request.Waitall(reqs, statuses)
                got.append([(bytes(b[:3]), bytes(b[-5:]), st.Get_source(), st.Get_tag(), st.Get_count()) for b, st in zip(recv, statuses)])
            return got
        return main

    fast, general = run(halo("numpy")), run(halo("bytes"))
    assert fast.results == general.results
    assert fast.time_s == general.time_s
    assert fast.counters == general.counters
    r = 5
    left, right = (r + 1) % 8, (r - 1) % 8
    assert fast.results[r][1][0] == (bytes([left] * 3), bytes(5), left, 600, 600)
    assert fast.results[r][1][1] == (bytes([right] * 3), bytes(5), right, 600, 600)


def test_numpy_fast_path_of_any_dtype_into_split_communicators():
    def main():
        w = MPI.COMM_WORLD
        sub = w.Split(color=w.rank % 2, key=-w.rank)  # reversed order
        me, n = sub.Get_rank(), sub.Get_size()
        out = np.full(7, -1.0)
        req = sub.Irecv(out, source=MPI.ANY_SOURCE, tag=4)
        sub.Send(np.arange(5, dtype="d") + w.rank, dest=(me + 1) % n, tag=4)
        st = MPI.Status()
        req.Wait(st)
        return me, st.Get_source(), st.Get_count(MPI.DOUBLE), out.tolist()

    res = run(main).results
    for wr, (me, src, count, data) in enumerate(res):
        peers = [r for r in range(8) if r % 2 == wr % 2][::-1]  # comm rank -> world rank
        sender = peers[src]
        assert peers[me] == wr and (src + 1) % 4 == me
        assert count == 5 and data == [float(sender + i) for i in range(5)] + [-1.0, -1.0]


def test_numpy_fast_path_errors_cancel_and_proc_null():
    def main():
        w = MPI.COMM_WORLD
        errs = []
        for f in (lambda: w.Isend(np.zeros(2), dest=2), lambda: w.Isend(np.zeros(2), dest=0, tag=-3),
                  lambda: w.Irecv(np.zeros(2), source=7), lambda: w.Irecv(np.zeros(2), tag=-5)):
            try:
                f()
            except MPI.Exception as e:
                errs.append(e.Get_error_class())
        assert w.Isend(np.zeros(2), dest=MPI.PROC_NULL).Test()
        st = MPI.Status()
        w.Recv(np.zeros(2), source=MPI.PROC_NULL, status=st)
        errs.append(st.Get_source())
        # A cancelled receive leaves its buffer alone.
        keep = np.full(4, 9, dtype="i")
        req = w.Irecv(keep, source=1 - w.rank, tag=99)
        req.Cancel()
        req.Wait(st)
        errs.append((st.Is_cancelled(), keep.tolist()))
        # Truncation: the error, and the buffer untouched.
        small = np.full(3, 7, dtype="u1")
        if w.rank == 0:
            w.Send(np.arange(10, dtype="u1"), dest=1, tag=5)
        else:
            try:
                w.Recv(small, source=0, tag=5)
            except MPI.Exception as e:
                errs.append((e.Get_error_class() == MPI.ERR_TRUNCATE, small.tolist()))
        sub = w.Dup()
        sub.Free()
        try:
            sub.Isend(np.zeros(1), dest=0)
        except MPI.Exception as e:
            errs.append(e.Get_error_class() == MPI.ERR_COMM)
        return errs

    res = run(main, shape="2x1x1").results
    common = [MPI.ERR_RANK, MPI.ERR_TAG, MPI.ERR_RANK, MPI.ERR_TAG, MPI.PROC_NULL, (True, [9, 9, 9, 9])]
    assert res[0] == common + [True]
    assert res[1] == common + [(True, [7, 7, 7]), True]


@pytest.mark.parametrize("api", ["Send", "Isend", "Sendrecv", "Bcast", "Allreduce"])
def test_object_arrays_are_refused_by_the_buffer_api_not_copied_as_pointers(api):
    """The bytes of a dtype=object array are pointers into the sender's
    process: copied to a receiver they crashed it once the sender's objects
    were freed (exit 139). mpi4py refuses such buffers; so does bgsim."""
    def main():
        c = MPI.COMM_WORLD
        objs = np.array([object(), "x", 3], dtype=object)
        other = 1 - c.Get_rank()
        if api == "Send":
            if c.Get_rank() == 0:
                c.Send(objs, dest=1)
            else:
                c.Recv(np.empty(3, dtype=object), source=0)
        elif api == "Isend":
            r = c.Irecv(np.empty(3, dtype=object), source=other) if c.Get_rank() else c.Isend(objs, dest=other)
            r.Wait()
        elif api == "Sendrecv":
            c.Sendrecv(objs, dest=other, recvbuf=np.empty(3, dtype=object), source=other)
        elif api == "Bcast":
            c.Bcast(objs, root=0)
        else:
            c.Allreduce(objs, np.empty(3, dtype=object))

    with pytest.raises(bgsim.RankError) as e:
        bgsim.run(main, shape="2x1x1")
    assert isinstance(e.value.__cause__, TypeError) and "dtype=object" in str(e.value.__cause__), e.value
    # Numeric buffers still go the fast path.
    def ok():
        c = MPI.COMM_WORLD
        a = np.arange(4.0) if c.Get_rank() == 0 else np.zeros(4)
        c.Bcast(a, root=0)
        return a.sum()
    assert bgsim.run(ok, shape="2x1x1").results == [6.0, 6.0]


def _no_hang(seconds):
    """Fails the test (instead of hanging the suite) if it runs too long."""
    import signal

    def alarm(*_):
        raise TimeoutError(f"still running after {seconds} s: the polling loop does not progress")
    signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)


@pytest.mark.parametrize("how", ["test", "Test", "Testall", "Testany", "Testsome", "Get_status", "Iprobe", "iprobe"])
def test_a_polling_loop_progresses_the_simulation(how):
    """Rank 0 polls until rank 1's message arrives: each poll costs rank 0's
    core a poll and lets the others run (it hung at 100% CPU before)."""
    def main():
        c = MPI.COMM_WORLD
        if c.Get_rank() == 1:
            bgsim.compute(seconds=5e-6)
            c.send("hi", dest=0, tag=5)
            return None
        polls = 0
        if how in ("Iprobe", "iprobe"):
            probe = c.Iprobe if how == "Iprobe" else c.iprobe
            while not probe(source=1, tag=5):
                polls += 1
            return c.recv(source=1, tag=5), polls, MPI.Wtime()
        r = c.irecv(source=1, tag=5)
        while True:
            if how == "test":
                done, msg = r.test()
            elif how == "Test":
                done = r.Test()
            elif how == "Testall":
                done = MPI.Request.Testall([r])
            elif how == "Testany":
                done = MPI.Request.Testany([r])[1]
            elif how == "Testsome":
                done = bool(MPI.Request.Testsome([r]))
            else:
                done = r.Get_status()
            if done:
                break
            polls += 1
        return r.wait(), polls, MPI.Wtime()

    _no_hang(60)
    try:
        r = bgsim.run(main, shape="2x1x1")
    finally:
        import signal
        signal.alarm(0)
    msg, polls, t = r.results[0]
    assert msg == "hi" and polls > 10 and t > 5e-6, r.results[0]
    # The polls are the core's poll time: 30 cycles each on bgl.
    assert r.ranks[0]["core_poll_cycles"] >= 30 * polls


def test_a_small_standard_send_to_ones_own_rank_completes_before_the_receive():
    """MPI buffers small standard-mode sends: a blocking send to oneself with
    no receive posted returns (it waited forever, and every later call of
    mpi4py's own test modules failed); a synchronous one still waits."""
    def main():
        c = MPI.COMM_WORLD
        me = c.Get_rank()
        c.send({"k": me}, dest=me, tag=1)
        c.Send(np.arange(10, dtype="i4") * me, dest=me, tag=2)
        big = np.arange(100_000, dtype="u1")
        r = c.Isend(big, dest=me, tag=3)  # rendezvous size: completes once received
        got = np.empty(10, dtype="i4")
        c.Recv(got, source=me, tag=2)
        back = np.empty_like(big)
        c.Recv(back, source=me, tag=3)
        r.Wait()
        return c.recv(source=me, tag=1), got.tolist(), bool((back == big).all())

    r = bgsim.run(main, shape="2x1x1")
    assert r.results == [({"k": 0}, [0] * 10, True), ({"k": 1}, list(range(0, 10)), True)]

    def sync_to_self():
        MPI.COMM_WORLD.ssend(1, dest=MPI.COMM_WORLD.Get_rank())
    with pytest.raises(bgsim.DeadlockError, match="no matching receive"):
        bgsim.run(sync_to_self, shape="2x1x1")


def test_protocol_waits_overlap_and_only_core_time_serialises():
    """A rendezvous message's latency is mostly waiting (the handshake's and
    MPI's): a window of such messages overlaps it, so streaming moves several
    times what one message at a time moves, and the receiver's core is busy
    for far less than the time one message takes."""
    def stream(window):
        def main():
            comm = MPI.COMM_WORLD
            buf = np.zeros((window, 1024), "u1")
            t0 = MPI.Wtime()
            for _ in range(64 // window):
                if comm.rank == 0:
                    MPI.Request.Waitall([comm.Isend(buf[i], dest=1) for i in range(window)])
                else:
                    MPI.Request.Waitall([comm.Irecv(buf[i], source=0) for i in range(window)])
            return MPI.Wtime() - t0
        return main
    one = run(stream(1), shape="4x4x2", nranks=2)
    many = run(stream(64), shape="4x4x2", nranks=2)
    assert one.results[0] > 2.5 * many.results[0]
    r = one.ranks[1]
    busy = r["core_read_cycles"] + r["core_protocol_cycles"] + r["core_inject_cycles"]
    # 64 rendezvous messages of 17,500 cycles of MPI latency each, one after
    # the other; the receiving core works well under half of that time.
    assert busy < 0.4 * one.time_s * 700e6
    assert r["msgs_rendezvous"] == 0 and one.ranks[0]["msgs_rendezvous"] == 64


@pytest.mark.parametrize("machine,clock", [("bgl", 700e6), ("bgp", 850e6)])
@pytest.mark.parametrize("nbytes", [64, 512, 4096])
@pytest.mark.parametrize("both", [False, True], ids=["one-way", "both-ways"])
def test_a_core_never_works_longer_than_the_run(machine, clock, nbytes, both):
    """Windows of one-packet, eager and rendezvous messages, one way and both
    ways: every core's busy time (reads, writes, protocol work, polls,
    copies) fits in the simulated time. Work software does between a core's
    packets (starting the next message of a peer's queue costs the
    per-message work) comes before the packets it queues, never on top of
    a write already under way."""
    def main():
        comm = MPI.COMM_WORLD
        peer = 1 - comm.rank
        out, into = np.zeros(nbytes, "u1"), np.zeros((64, nbytes), "u1")
        reqs = []
        if comm.rank == 0 or both:
            reqs += [comm.Isend(out, dest=peer, tag=1) for _ in range(64)]
        if comm.rank == 1 or both:
            reqs += [comm.Irecv(into[i], source=peer, tag=1) for i in range(64)]
        MPI.Request.Waitall(reqs)
    r = run(main, machine=machine, shape="2x1x1", mode="smp" if machine == "bgp" else None, nranks=2)
    for rank in r.ranks:
        busy = sum(v for k, v in rank.items() if k.startswith("core_") and k.endswith("_cycles"))
        assert 0 < busy <= r.time_s * clock + 1, (rank["rank"], busy, r.time_s * clock)


def test_streaming_bandwidth_does_not_fall_at_the_eager_to_rendezvous_switch():
    """osu_bw's pattern (a window of 64 non-blocking sends, one way) on BG/L
    at its sizes around the eager limit (1,000 B): 1 KB and larger go by
    rendezvous, and each size moves at least 95% of what the size before it
    moves. The scouts of a window's later messages take turns with the data
    of its earlier ones, so the handshakes stay ahead of the data; when the
    data of acked messages had every turn, the window's later handshakes
    came late and the link waited (1 KB: 121 MB/s against 133 at 512 B)."""
    sizes = [256, 512, 1024, 2048, 4096]

    def main():
        comm = MPI.COMM_WORLD
        rates = []
        for nbytes in sizes:
            out, into = np.zeros(nbytes, "u1"), np.zeros((64, nbytes), "u1")
            comm.Barrier()
            t0 = MPI.Wtime()
            for _ in range(2):
                if comm.rank == 0:
                    MPI.Request.Waitall([comm.Isend(out, dest=1, tag=1) for _ in range(64)])
                    comm.Recv(into[0, :1], source=1, tag=2)
                else:
                    MPI.Request.Waitall([comm.Irecv(into[i], source=0, tag=1) for i in range(64)])
                    comm.Send(out[:1], dest=0, tag=2)
            rates.append(2 * 64 * nbytes / (MPI.Wtime() - t0) / 1e6)
        return rates
    r = run(main, shape="4x4x2", nranks=2)
    rates = r.results[0]
    assert r.ranks[0]["msgs_rendezvous"] == 2 * 64 * 3
    for (a, ra), (b, rb) in zip(zip(sizes, rates), zip(sizes[1:], rates[1:])):
        assert rb >= 0.95 * ra, (a, ra, b, rb)


def test_a_peers_rendezvous_messages_send_their_data_one_after_the_other():
    """Eight 16 KB messages posted at once to one peer: the message layer's
    send queue for that peer sends one message's data after the other (the
    handshakes of the later ones overlap it), so the receives complete
    spread over the transfer, the first after about an eighth of it - what
    lets a pipelined broadcast forward a segment as soon as it is in. (Sent
    round-robin, all eight completed at the end.)"""
    def main():
        comm = MPI.COMM_WORLD
        bufs = np.zeros((8, 16384), "u1")
        comm.Barrier()
        t0 = MPI.Wtime()
        if comm.rank == 0:
            MPI.Request.Waitall([comm.Isend(bufs[i], dest=1, tag=i) for i in range(8)])
            return None
        reqs = [comm.Irecv(bufs[i], source=0, tag=i) for i in range(8)]
        done = {}
        while len(done) < 8:
            i = MPI.Request.Waitany(reqs)
            done[i] = MPI.Wtime() - t0
        return done
    r = run(main, shape="2x1x1", nranks=2)
    done = r.results[1]
    assert sorted(done, key=done.get) == list(range(8))
    last = done[7]
    assert done[0] < 0.3 * last
    assert all(done[i + 1] - done[i] > 0.05 * last for i in range(7))


def test_communicators_share_their_groups_so_memory_per_rank_stays_flat():
    """Create_cart, Dup, Split and Get_group on thousands of ranks: every
    member's group handle holds the same ranks (a communicator's group
    costs memory once, not once per member; a handle is a few words), and
    Split orders by key, then by rank."""
    def main():
        c = MPI.COMM_WORLD
        cart = c.Create_cart(MPI.Compute_dims(c.size, 2), periods=[True, True])
        dup = cart.Dup()
        split = c.Split(c.rank % 4, -c.rank)  # keys reverse the order
        sub = c.Create_cart([c.size // 2], periods=[False])
        return (id(cart.Get_group()._ranks), id(dup.Get_group()._ranks), id(split.Get_group()._ranks), split.rank,
                id(sub.Get_group()._ranks) if sub != MPI.COMM_NULL else None)
    r = run(main, shape="16x16x8")
    res = r.results
    n = len(res)
    assert n == 2048
    assert len({x[0] for x in res}) == 1 and len({x[1] for x in res}) == 1
    assert len({x[2] for x in res}) == 4
    assert len({x[4] for x in res if x[4] is not None}) == 1 and sum(x[4] is None for x in res) == n // 2
    # Within a colour the highest world rank has the smallest key: rank 0.
    assert res[n - 1][3] == 0 and res[n - 4][3] == 0 and res[3][3] == n // 4 - 1


def test_waiting_envelopes_keep_mpi_order_between_protocols():
    """A rendezvous message's envelope waits (the handshake's and MPI's
    waiting); an eager message sent after it on the same tag must still
    match the second receive, not overtake it."""
    def main():
        c = MPI.COMM_WORLD
        if c.rank == 0:
            a, b = np.full(4096, 1, "u1"), np.full(100, 2, "u1")
            MPI.Request.Waitall([c.Isend(a, dest=1, tag=9), c.Isend(b, dest=1, tag=9)])
        elif c.rank == 1:
            x, y = np.zeros(4096, "u1"), np.zeros(4096, "u1")
            s1, s2 = MPI.Status(), MPI.Status()
            r1, r2 = c.Irecv(x, source=0, tag=9), c.Irecv(y, source=0, tag=9)
            r1.Wait(s1)
            r2.Wait(s2)
            return s1.Get_count(MPI.BYTE), s2.Get_count(MPI.BYTE), int(x[0]), int(y[0])
    assert run(main, shape="2x1x1").results[1] == (4096, 100, 1, 2)


def test_reduce_local_addresses_and_integer_handles():
    def main():
        a, b = np.arange(4, dtype="i4"), np.ones(4, dtype="i4")
        MPI.SUM.Reduce_local(a, b)
        MPI.MAX.Reduce_local([np.full(4, 3, "i4"), MPI.INT], [b, MPI.INT])
        cart = MPI.COMM_WORLD.Create_cart([MPI.COMM_WORLD.size], periods=[True])
        return (b.tolist(), MPI.Get_address(a) == a.ctypes.data, MPI.Aint_diff(MPI.Get_address(a[2:]), MPI.Get_address(a)),
                MPI.Aint_add(8, 4), MPI.Get_address(None), MPI.Comm.fromint(cart.toint()) is cart,
                type(MPI.Comm.f2py(cart.py2f())) is MPI.Cartcomm, MPI.Op.fromint(MPI.MAX.toint()) is MPI.MAX)
    assert run(main, shape="2x1x1").results[0] == ([3, 3, 3, 4], True, 8, 12, 0, True, True, True)
    with pytest.raises(bgsim.RankError, match="not a handle of this run"):
        run(lambda: MPI.Comm.fromint(10 ** 6), shape="1x1x1")


def test_graph_and_distributed_graph_topologies():
    def main():
        c = MPI.COMM_WORLD
        n, r = c.size, c.rank
        index, edges = [], []
        for i in range(n):
            edges += [(i - 1) % n, (i + 1) % n]
            index.append(len(edges))
        g = c.Create_graph(index, edges)
        g0 = c.Create_graph([0] + index, edges)  # a leading 0 is accepted
        adj = c.Create_dist_graph_adjacent([(r - 1) % n], [(r + 1) % n, (r + 2) % n], [5], [6, 7])
        gen = c.Create_dist_graph([r], [1], [(r + 1) % n], MPI.UNWEIGHTED)
        cart = c.Create_cart([2, n // 2], periods=[True, False])
        return (g.topology == MPI.GRAPH, g.dims, g.neighbors, g.Get_neighbors(0), g0.index == g.index,
                adj.topology == MPI.DIST_GRAPH, adj.Get_dist_neighbors_count(), adj.Get_dist_neighbors(),
                gen.inoutedges, cart.inedges)
    res = run(main, shape="4x1x1").results
    assert res[1][:6] == (True, (4, 8), [0, 2], [3, 1], True, True)
    assert res[1][6] == (1, 2, True) and res[1][7] == ([0], [2, 3], ([5], [6, 7]))
    assert res[1][8] == ([0], [2])
    # Cartesian neighbours in MPI's order: per dimension, -1 then +1 (none off a non-periodic edge).
    assert res[1][9] == [3, 3, 0, MPI.PROC_NULL]


class _DLPackHost:
    """A minimal DLPack (v0 capsule) producer over a numpy array, the
    protocol numpy itself implements."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class _CAIHost:
    def __init__(self, a, readonly=False):
        self.a = a
        self.__cuda_array_interface__ = {"version": 3, "data": (a.ctypes.data, readonly), "typestr": a.dtype.str,
                                         "shape": a.shape, "strides": None}


def test_dlpack_cai_and_mpi_buffer_messages_and_every_spec_form():
    def main():
        c = MPI.COMM_WORLD
        peer = 1 - c.rank
        out = {}
        src = np.arange(6, dtype="i4") + 10 * c.rank
        # DLPack (numpy arrays are producers too), CUDA array interface over host memory, MPI.buffer.
        dst = np.zeros(6, dtype="i4")
        c.Sendrecv(_DLPackHost(src), peer, recvbuf=_CAIHost(dst), source=peer)
        out["dlpack_to_cai"] = dst.tolist()
        mem = MPI.buffer.allocate(24)
        c.Sendrecv(MPI.buffer.frombuffer(src), peer, recvbuf=mem, source=peer)
        out["buffer"] = np.frombuffer(mem.tobytes(), "i4").tolist()
        # [buf, count, displ, datatype] with a type code, [buf, (count, displ), datatype], [buf, datatype].
        dst = np.zeros(6, dtype="i4")
        c.Sendrecv([src, 2, 1, "i"], peer, recvbuf=[dst, (2, 3), MPI.INT], source=peer)
        out["count_displ"] = dst.tolist()
        c.Sendrecv([src, "i"], peer, recvbuf=[dst, MPI.INT], source=peer)
        out["typecode"] = dst.tolist()
        # Alltoallv with counts left out: split as evenly as it goes.
        recv = np.zeros(6, dtype="i4")
        c.Alltoallv([src, None, None, MPI.INT], [recv, MPI.INT])
        out["alltoallv"] = recv.tolist()
        errors = []
        for bad, kind in (([src, 0, "\0"], KeyError), ([src, -1, "i"], ValueError), ([src, 0, 7, "i"], ValueError),
                          ([src, 1, 2, 3, 4], ValueError), (_CAIHost(src, readonly=True), BufferError)):
            try:
                c.Sendrecv(src, peer, recvbuf=bad, source=peer)
            except kind:
                errors.append(kind.__name__)
        out["errors"] = errors
        win = MPI.Win.Allocate(16, 1, MPI.INFO_NULL, MPI.COMM_SELF)
        out["win"] = bool(win) and win != MPI.WIN_NULL and not MPI.WIN_NULL and win.Get_attr(MPI.WIN_SIZE) == 16
        win.Free()
        out["win"] = out["win"] and win == MPI.WIN_NULL
        return out

    r = run(main, shape="2x1x1").results[0]
    assert r["dlpack_to_cai"] == [10, 11, 12, 13, 14, 15]
    assert r["buffer"] == [10, 11, 12, 13, 14, 15]
    assert r["count_displ"] == [0, 0, 0, 11, 12, 0]
    assert r["typecode"] == [10, 11, 12, 13, 14, 15]
    assert r["alltoallv"] == [0, 1, 2, 10, 11, 12]
    assert r["errors"] == ["KeyError", "ValueError", "ValueError", "ValueError", "BufferError"]
    assert r["win"] is True


def test_device_memory_goes_to_mpi_calls_but_not_to_python_access():
    # Memory a producer calls device memory (here host memory named CUDA)
    # is taken by MPI calls; MPI.buffer refuses to read or write it from
    # Python, as mpi4py's does. A 'descr' that is not a list is refused; a
    # structured one is ignored with a warning.
    import warnings

    class _DLPackCUDA(_DLPackHost):
        def __dlpack_device__(self):
            return (2, 0)

    def main():
        c = MPI.COMM_WORLD
        peer = 1 - c.rank
        src = np.arange(4, dtype="f8") + 10 * c.rank
        refused = []
        for obj in (_CAIHost(src), _DLPackCUDA(src)):
            b = MPI.buffer.frombuffer(obj)
            for access in (lambda: b.cast("B"), lambda: b.tobytes(), lambda: b[0], lambda: b.__setitem__(0, 1)):
                try:
                    access()
                    refused.append(False)
                except BufferError:
                    refused.append(True)
        dst = np.zeros(4, "f8")
        c.Sendrecv(MPI.buffer.frombuffer(_DLPackCUDA(src)), peer, recvbuf=_CAIHost(dst), source=peer)
        host = MPI.buffer.frombuffer(src)
        readable = host.cast("d")[1] == src[1] and host[0:8].tobytes() == src[:1].tobytes()
        bad = _CAIHost(np.zeros(4, "f8"))
        bad.__cuda_array_interface__["descr"] = 42
        try:
            c.Sendrecv(src, peer, recvbuf=bad, source=peer)
            descr_refused = False
        except TypeError:
            descr_refused = True
        pairs = _CAIHost(np.zeros(4, "f8"))
        pairs.__cuda_array_interface__.update(shape=(2,), strides=(16,), typestr="|V16", descr=[("", "<f8")] * 2)
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            c.Sendrecv(src, peer, recvbuf=pairs, source=peer)
        return refused, dst.tolist(), readable, descr_refused, [str(w.message) for w in seen], pairs.a.tolist()

    for r, (refused, got, readable, descr_refused, warned, pairs) in enumerate(run(main, shape="2x1x1").results):
        assert refused == [True] * 8 and readable and descr_refused
        assert got == [10.0 * (1 - r) + i for i in range(4)]
        assert warned == ["__cuda_array_interface__: ignoring 'descr' key"]
        assert pairs == got


def test_a_matched_probe_takes_its_message_out_of_the_matching():
    # Rank 1 sends A then B with one tag; rank 0's Mprobe takes A, so a
    # wildcard receive after it gets B, and the Message gives A - with the
    # buffer API (a rendezvous-sized one too) and the pickle API.
    def main():
        c = MPI.COMM_WORLD
        if c.rank == 1:
            for n in (8, 4096):
                c.Send(np.full(n, 1, "i4"), 0, 5)
                c.Send(np.full(n, 2, "i4"), 0, 5)
            c.send("A", 0, 6)
            c.send("B", 0, 6)
            return None
        got = []
        for n in (8, 4096):
            st = MPI.Status()
            m = c.Mprobe(MPI.ANY_SOURCE, 5, st)
            first, second = np.zeros(n, "i4"), np.zeros(n, "i4")
            c.Recv(second, MPI.ANY_SOURCE, 5)
            taken_is_null_after = (bool(m), m.Irecv(first).Wait() and not m)
            got.append((st.Get_count(MPI.INT), int(first[0]), int(second[0]), taken_is_null_after))
        while (m := c.Improbe(1, 6)) is None:
            pass
        later = c.recv(source=1, tag=6)
        small = np.zeros(1, "i4")
        try:
            c.Mprobe(MPI.PROC_NULL).Recv(small)
            noproc = True
        except MPI.Exception:
            noproc = False
        return got, m.recv(), later, noproc, c.Improbe(1, 6) is None, c.Mprobe(MPI.PROC_NULL) == MPI.MESSAGE_NO_PROC

    got, first, later, noproc, none_left, is_noproc = run(main, shape="2x1x1").results[0]
    assert got == [(8, 1, 2, (True, True)), (4096, 1, 2, (True, True))]
    assert (first, later, noproc, none_left, is_noproc) == ("A", "B", True, True, True)


def test_derived_datatypes_move_exactly_their_bytes():
    def main():
        c = MPI.COMM_WORLD
        peer = 1 - c.rank
        a = np.arange(20, dtype="i4") + 100 * c.rank
        vec = MPI.INT.Create_vector(3, 2, 4).Commit()
        b = np.full(20, -1, dtype="i4")
        c.Sendrecv([a, 1, vec], peer, recvbuf=[b, 1, vec], source=peer)
        sub = MPI.INT.Create_subarray([4, 5], [2, 2], [1, 1]).Commit()
        d = np.full(20, -1, dtype="i4")
        c.Sendrecv([a, 1, sub], peer, recvbuf=[d, 1, sub], source=peer)
        # A vector sent is received as plain ints: the packed stream.
        packed = np.full(6, -1, dtype="i4")
        c.Sendrecv([a, 1, vec], peer, recvbuf=packed, source=peer)
        # Alltoallw on absolute addresses (BOTTOM) with struct types.
        s = np.arange(4, dtype="f8") + 10 * c.rank
        r = np.zeros(4, dtype="f8")
        st = [MPI.Datatype.Create_struct([2], [MPI.Get_address(s) + 16 * i], [MPI.DOUBLE]).Commit() for i in range(2)]
        rt = [MPI.Datatype.Create_struct([2], [MPI.Get_address(r) + 16 * i], [MPI.DOUBLE]).Commit() for i in range(2)]
        c.Alltoallw((MPI.BOTTOM, ([1, 1], [0, 0]), st), (MPI.BOTTOM, ([1, 1], [0, 0]), rt))
        return b.tolist(), d.tolist(), packed.tolist(), r.tolist()

    b, d, packed, r = run(main, shape="2x1x1").results[0]
    assert b == [100, 101, -1, -1, 104, 105, -1, -1, 108, 109] + [-1] * 10
    assert d == [-1] * 6 + [106, 107] + [-1] * 3 + [111, 112] + [-1] * 7
    assert packed == [100, 101, 104, 105, 108, 109]
    assert r == [0.0, 1.0, 10.0, 11.0]


def test_a_non_contiguous_datatype_costs_its_pack_and_unpack_on_the_cores():
    """MPI packs a message of a non-contiguous datatype into a contiguous
    buffer before it sends it and unpacks it into the program's buffer
    when it is received: each side's core copies its bytes once more
    (`node.copy_bytes_per_cycle`), the sender's in the send, the
    receiver's in the wait that completes the receive. The same bytes as
    plain arrays cost no copy."""
    n = 4000  # doubles: 32,000 bytes, every other one of 8,000

    def main(vector):
        c = MPI.COMM_WORLD
        buf = np.zeros(2 * n if vector else n, "f8")
        msg = [buf, 1, MPI.DOUBLE.Create_vector(n, 1, 2).Commit()] if vector else buf
        c.Barrier()
        t0 = MPI.Wtime()
        if c.rank == 0:
            c.Send(msg, 1, tag=1)
        else:
            c.Irecv(msg, 0, tag=1).Wait()
        return MPI.Wtime() - t0

    for machine in ("bgl", "bgp"):
        plain = run(lambda: main(False), machine=machine, shape="2x1x1", nranks=2)
        vec = run(lambda: main(True), machine=machine, shape="2x1x1", nranks=2)
        copy = -(-n * 8 // 4.3)  # cycles
        clock = 700e6 if machine == "bgl" else 850e6
        for r in (0, 1):
            extra = vec.ranks[r]["core_copy_cycles"] - plain.ranks[r]["core_copy_cycles"]
            assert extra == pytest.approx(copy, abs=1), (machine, r, extra)
        # The receiver's wait ends later by both copies: the sender's pack
        # delays the data, its own unpack follows it.
        late = (vec.results[1] - plain.results[1]) * clock
        assert late == pytest.approx(2 * copy, rel=0.05), (machine, late, copy)


def test_allgather_and_alltoall_take_a_non_contiguous_datatype():
    """Blocks of a resized type (4 bytes of data in 5) gathered and
    exchanged land at the type's extents, the gaps left as they were. (The
    block-at-once paths took the packed view for plain memory and
    raised.)"""
    def main():
        c = MPI.COMM_WORLD
        t = MPI.BYTE.Create_contiguous(4).Create_resized(0, 5).Commit()
        mine = np.full(15, c.rank + 1, "u1")
        got, swapped = np.full(30, 9, "u1"), np.full(30, 9, "u1")
        c.Allgather([mine, 3, t], [got, 3, t])
        c.Alltoall([np.full(30, c.rank + 1, "u1"), 3, t], [swapped, 3, t])
        return got.tolist(), swapped.tolist()

    want = ([1, 1, 1, 1, 9] * 3 + [2, 2, 2, 2, 9] * 3)
    for got, swapped in run(main, shape="2x1x1").results:
        assert got == want
        assert swapped == want


def test_reduce_scatter_takes_a_non_contiguous_datatype():
    """Every other int reduced and scattered: the packed elements reduce
    as ints. (The reduction took the packed bytes for the derived type's
    own layout and raised.)"""
    def main():
        c = MPI.COMM_WORLD
        t = MPI.INT.Create_resized(0, 8).Commit()
        s = np.arange(8, dtype="i4") * 10 + c.rank
        block, v = np.full(2, -1, "i4"), np.full(2, -1, "i4")
        c.Reduce_scatter_block([s, 2, t], [block, 1, t], MPI.SUM)
        c.Reduce_scatter([s, 2, t], [v, 1, t], [1, 1], MPI.SUM)
        return block.tolist(), v.tolist()

    assert run(main, shape="2x1x1").results == [([1, -1], [1, -1]), ([41, -1], [41, -1])]


def test_a_collective_on_a_non_contiguous_datatype_costs_its_packs_too():
    """A Bcast and an Allreduce of a vector datatype: the root packs the
    broadcast and every other rank unpacks it; every rank packs its
    allreduce contribution and unpacks the result - a copy of the bytes
    each time, on the rank's core, beside the same collectives on plain
    arrays."""
    n = 1000  # doubles, every other one of 2,000

    def main(vector):
        c = MPI.COMM_WORLD
        a, b = np.ones(2 * n if vector else n), np.zeros(2 * n if vector else n)
        t = MPI.DOUBLE.Create_vector(n, 1, 2).Commit()
        c.Bcast([a, 1, t] if vector else a, root=1)
        c.Allreduce([a, 1, t] if vector else a, [b, 1, t] if vector else b, MPI.SUM)
        return b[::2 if vector else 1].sum()

    copy = -(-n * 8 // 4.3)
    for machine in ("bgl", "bgp"):
        plain = run(lambda: main(False), machine=machine, shape="2x2x1", nranks=4)
        vec = run(lambda: main(True), machine=machine, shape="2x2x1", nranks=4)
        assert vec.results == plain.results == [4.0 * n] * 4
        extra = [v["core_copy_cycles"] - p["core_copy_cycles"] for v, p in zip(vec.ranks, plain.ranks)]
        # (The packs move the timing: on BG/P a message of the allreduce
        # that one rank found unexpected, and copied out of a temporary
        # buffer, another finds so instead.)
        assert sum(extra) == pytest.approx(4 * 3 * copy, abs=8), (machine, extra)
        assert extra == pytest.approx([3 * copy] * 4, rel=0.1), (machine, extra)


def test_datatype_bounds_contents_and_pickling():
    import pickle
    v = MPI.INT.Create_vector(3, 2, 4)
    assert (v.size, v.extent, v.Get_true_extent()) == (24, 40, (0, 40))
    assert v.decode() == (MPI.INT, "VECTOR", {"count": 3, "blocklength": 2, "stride": 4})
    assert v.Get_envelope() == (3, 0, 0, 1, MPI.COMBINER_VECTOR) and v.Get_contents() == ([3, 2, 4], [], [], [MPI.INT])
    s = MPI.Datatype.Create_struct([1, 1], [0, 8], [MPI.DOUBLE, MPI.CHAR])
    assert (s.size, s.extent) == (9, 16)  # padded to the double's alignment, as C would
    rz = MPI.INT.Create_resized(-4, 12)
    assert (rz.lb, rz.ub, rz.extent, rz.true_lb, rz.true_extent) == (-4, 8, 12, 0, 4)
    assert pickle.loads(pickle.dumps(MPI.DOUBLE)) is MPI.DOUBLE
    copy = pickle.loads(pickle.dumps(v))
    assert copy.decode() == v.decode() and copy != v
    assert MPI.Datatype(MPI.INT) == MPI.INT and MPI.Datatype(MPI.INT) is not MPI.INT
    assert MPI.BYTE.Create_contiguous(2 ** 31 - 1).size == 2 ** 31 - 1  # no per-byte map until used
    assert MPI.Datatype.Create_f90_integer(4) .size == 2 and MPI.Datatype.Match_size(MPI.TYPECLASS_REAL, 8) == MPI.REAL8


def test_each_rank_has_its_own_copy_of_the_programs_modules(cli, tmp_path):
    (tmp_path / "state.py").write_text("value = None\n")
    prog = tmp_path / "prog.py"
    prog.write_text("from mpi4py import MPI\nimport state\n"
                    "state.value = MPI.COMM_WORLD.rank\nMPI.COMM_WORLD.Barrier()\n"
                    "assert state.value == MPI.COMM_WORLD.rank, (state.value, MPI.COMM_WORLD.rank)\n"
                    "vals = MPI.COMM_WORLD.gather(state.value)\n"
                    "if MPI.COMM_WORLD.rank == 0:\n    print('values', vals)\n")
    p = cli("run", "--shape", "2x2x1", str(prog), check=True)
    assert "values [0, 1, 2, 3]" in p.stdout


def test_mpi4py_package_util_pkl5_and_dtlib(cli, tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(
        "import numpy as np, mpi4py\nfrom mpi4py import MPI\nfrom mpi4py.util import dtlib, pkl5\n"
        "assert mpi4py.__path__ and mpi4py.get_config() and mpi4py.rc.initialize\n"
        "rec = np.dtype([('x', 'f8'), ('n', 'i4')])\n"
        "dt = dtlib.from_numpy_dtype(rec).Commit()\n"
        "assert dtlib.to_numpy_dtype(dt).itemsize == rec.itemsize == dt.extent\n"
        "c = pkl5.Intracomm(MPI.COMM_WORLD)\n"
        "a = np.zeros(2, rec); a['x'] = c.rank + 0.5; a['n'] = c.rank\n"
        "b = np.zeros(2, rec)\n"
        "c.Sendrecv([a, 2, dt], 1 - c.rank, recvbuf=[b, 2, dt], source=1 - c.rank)\n"
        "print('rank', c.rank, b['x'].tolist(), b['n'].tolist(), c.allgather(c.rank))\n")
    p = cli("run", "--quiet", "--shape", "2x1x1", str(prog), check=True)
    assert "rank 0 [1.5, 1.5] [1, 1] [0, 1]" in p.stdout, p.stdout


def _ping_pong(trips, fail_rank=None, fail_at=None):
    def main():
        comm = MPI.COMM_WORLD
        r = comm.Get_rank()
        buf = np.zeros(8, dtype="u1")
        for i in range(trips):
            if r == fail_rank and i == fail_at:
                raise KeyError(f"rank {r} trip {i}")
            if r == 0:
                buf[:] = i % 256
                comm.Send(buf, 1, 0)
                comm.Recv(buf, 1, 0)
                assert buf[0] == (i + 1) % 256
            else:
                comm.Recv(buf, 0, 0)
                buf[:] = (int(buf[0]) + 1) % 256
                comm.Send(buf, 0, 0)
        return r, MPI.Wtime()
    return main


def test_blocked_ranks_hand_over_to_each_other_and_every_end_is_counted(tmp_path):
    """A ping-pong runs rank to rank (a parked rank switches straight to
    the one rank it made ready): both ranks finish, with their results and
    finish times, and more than the scheduler's turns' worth of trips."""
    r = bgsim.run(_ping_pong(500), shape="2x1x1")
    assert [x[0] for x in r.results] == [0, 1]
    assert r.counters["messages_completed"] == 1000
    # Rank 1 sends the last message, rank 0 receives it after.
    assert 0 < r.results[1][1] < r.results[0][1]
    # The same run with the scheduler taking every turn (a timeline on)
    # gives the same simulated times.
    t = bgsim.run(_ping_pong(500), shape="2x1x1", timeline=str(tmp_path / "t.json"))
    assert [x[1] for x in t.results] == [x[1] for x in r.results]


@pytest.mark.parametrize("rank", [0, 1])
def test_an_error_in_a_rank_switched_to_by_another_names_that_rank(rank):
    with pytest.raises(bgsim.RankError) as e:
        bgsim.run(_ping_pong(300, fail_rank=rank, fail_at=150), shape="2x1x1")
    assert e.value.rank == rank
    assert f"rank {rank} trip 150" in str(e.value)


def test_a_deadlock_after_fast_blocking_calls_names_each_ranks_call():
    """Blocking Send/Recv run the simulation themselves when no other rank
    is due; a deadlock found there is still reported by the scheduler,
    with each rank's call and line."""
    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        b = np.zeros(4)
        for _ in range(100):
            if r == 0:
                c.Send(b, 1, 0)
                c.Recv(b, 1, 0)
            else:
                c.Recv(b, 0, 0)
                c.Send(b, 0, 0)
        c.Recv(b, 1 - r, 5)
    with pytest.raises(bgsim.DeadlockError) as e:
        bgsim.run(main, shape="2x1x1")
    for r in (0, 1):
        assert f"rank {r}: in MPI.Comm.Recv(source={1 - r}, tag=5) at test_mpi.py:" in str(e.value)


def test_attributes_and_finalize_are_each_ranks_own():
    # Each rank is a process of its own: its keys, its attributes on the
    # same communicator, and its Finalize.
    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        deleted = []
        k = MPI.Comm.Create_keyval(copy_fn=True, delete_fn=lambda comm, key, v: deleted.append(v))
        c.Set_attr(k, f"rank {r}")
        d = c.Dup()
        copied = d.Get_attr(k)
        d.Free()
        c.Barrier()
        mine = c.Get_attr(k)
        c.Delete_attr(k)
        assert c.Get_attr(k) is None and MPI.Comm.Free_keyval(k) == MPI.KEYVAL_INVALID
        before = MPI.Is_finalized()
        if r == 0:
            MPI.Finalize()
        return mine, copied, deleted, before, MPI.Is_finalized(), c.Get_attr(MPI.TAG_UB)

    res = bgsim.run(main, shape="2x1x1", nranks=2).results
    for r, (mine, copied, deleted, before, after, tag_ub) in enumerate(res):
        assert mine == copied == f"rank {r}"
        assert deleted == [f"rank {r}", f"rank {r}"]  # the Dup's copy when it was freed, then its own
        assert not before and after == (r == 0) and tag_ub == 2**31 - 1


def test_a_users_error_handler_is_called_and_handles_free_to_null():
    def main():
        c = MPI.COMM_WORLD.Dup()
        seen = []
        eh = MPI.Comm.Create_errhandler(lambda comm, code: seen.append((comm == c, code)))
        c.Set_errhandler(eh)
        c.Call_errhandler(MPI.SUCCESS)
        c.Call_errhandler(MPI.ERR_OTHER)
        c.Set_errhandler(MPI.ERRORS_RETURN)
        c.Call_errhandler(MPI.ERR_OTHER)  # returns
        got = c.Get_errhandler()
        same = got == MPI.ERRORS_RETURN and got is not MPI.ERRORS_RETURN
        got.Free()
        c.Set_errhandler(MPI.ERRORS_ARE_FATAL)
        try:
            c.Call_errhandler(MPI.ERR_OTHER)
            raised = False
        except MPI.Exception as e:
            raised = e.Get_error_class() == MPI.ERR_OTHER
        c.Free()
        return seen, same, got == MPI.ERRHANDLER_NULL, bool(MPI.ERRORS_RETURN), raised

    assert bgsim.run(main, shape="2x1x1", nranks=1).results[0] == ([(True, MPI.ERR_OTHER)], True, True, True, True)


def test_recv_into_a_buffer_warns_as_mpi4py_4_does():
    import warnings

    def main():
        c = MPI.COMM_WORLD
        req = c.isend("42", 0)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            obj = c.recv(bytearray(64), 0)
        req.wait()
        return obj, [str(x.message) for x in w if issubclass(x.category, UserWarning)]

    assert bgsim.run(main, shape="2x1x1", nranks=1).results[0] == ("42", ["the 'buf' argument is deprecated"])


def test_group_and_communicator_handles_free_pickle_and_stay_each_ranks_own():
    import pickle

    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        g = c.Get_group()
        h = MPI.Group(g)
        same = (h == g, h is not g, MPI.Group() == MPI.GROUP_NULL, bool(MPI.GROUP_NULL), bool(MPI.GROUP_EMPTY),
                MPI.GROUP_EMPTY != MPI.GROUP_NULL)
        if r == 0:
            g.Free()  # this handle only: rank 1's, and rank 0's other one, stay
        c.Barrier()
        sizes = (g == MPI.GROUP_NULL, h.Get_size(), c.Get_group().Get_size())
        try:
            MPI.GROUP_NULL.Get_size()
            null_raises = False
        except MPI.Exception as e:
            null_raises = e.Get_error_class() == MPI.ERR_GROUP
        world = g.Translate_ranks() if r else h.Translate_ranks()
        pickled = (pickle.loads(pickle.dumps(MPI.COMM_WORLD)) is MPI.COMM_WORLD,
                   pickle.loads(pickle.dumps(MPI.GROUP_NULL)) is MPI.GROUP_NULL,
                   pickle.loads(pickle.dumps(MPI.Intracomm(MPI.COMM_SELF))) == MPI.COMM_SELF)
        d = c.Dup()
        try:
            pickle.dumps(d)
            refused = False
        except ValueError:
            refused = True
        d.Free()
        # COMM_SELF is every rank's own: its Split keeps each rank alone.
        s = MPI.COMM_SELF.Split(0, 0)
        alone = (s.Get_size(), s.Get_rank())
        s.Free()
        return same, sizes, null_raises, world, pickled, refused, alone, isinstance(MPI.Comm.Get_parent(), MPI.Intercomm)

    for r, res in enumerate(bgsim.run(main, shape="2x1x1", nranks=2).results):
        same, sizes, null_raises, world, pickled, refused, alone, parent = res
        assert same == (True, True, True, False, True, True)
        assert sizes == ((r == 0), 2, 2)
        assert null_raises and world == [0, 1] and pickled == (True, True, True) and refused
        assert alone == (1, 0) and parent


def test_user_ops_are_counted_per_rank_and_buffers_keep_their_layout():
    import numpy as np

    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        # Each rank may hold its own 32 user-defined operations.
        ops = [MPI.Op.Create(lambda a, b, t: b) for _ in range(MPI_MAX_OPS)]
        try:
            MPI.Op.Create(lambda a, b, t: b)
            over = False
        except MPI.Exception:
            over = True
        for o in ops:
            o.Free()
        # A Fortran-ordered array goes in memory order; data in the other
        # byte order needs its datatype named; a strided view is refused.
        f = np.asfortranarray(np.arange(6, dtype="f8").reshape(3, 2)) if r == 0 else np.zeros((2, 3), "f8").T
        if r == 0:
            c.Send(f, dest=1)
        else:
            c.Recv(f, source=0)
        swapped = np.zeros(3, ">i4")
        errors = []
        for buf in (swapped, np.zeros((3, 2))[:, 0]):
            try:
                c.Sendrecv(buf, dest=r, sendtag=5, recvbuf=np.zeros(buf.shape, buf.dtype), source=r, recvtag=5)
            except BufferError as e:
                errors.append(str(e))
        c.Sendrecv([swapped, MPI.INT], dest=r, sendtag=6, recvbuf=[np.zeros(3, ">i4"), MPI.INT], source=r, recvtag=6)
        return over, f.ravel(order="K").tolist(), errors

    MPI_MAX_OPS = 32
    res = bgsim.run(main, shape="2x1x1", nranks=2).results
    assert [x[0] for x in res] == [True, True]
    assert res[1][1] == res[0][1] == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    for _, _, errors in res:
        assert "byte order" in errors[0] and "not contiguous" in errors[1]


UNITTEST_PROGRAM = """
import sys
import unittest
from mpi4py import MPI


class Point:
    def __init__(self, x):
        self.x = x


class T(unittest.TestCase):
    def test_neighbour(self):
        c = MPI.COMM_WORLD
        # pickle finds Point in this rank's __main__ (sent and received).
        got = c.sendrecv(Point(c.rank), dest=(c.rank + 1) % c.size, source=(c.rank - 1) % c.size)
        self.assertEqual(got.x, (c.rank - 1) % c.size)
        self.assertIs(sys.modules["__main__"].Point, Point)


if __name__ == "__main__":
    unittest.main()
"""


def test_each_rank_runs_the_program_as_its_own_main(cli, tmp_path):
    prog = tmp_path / "t.py"
    prog.write_text(UNITTEST_PROGRAM)
    p = cli("run", "--shape", "2x1x1", "-n", "2", str(prog), check=True)
    assert p.stderr.count("Ran 1 test") == 2 and "FAILED" not in p.stderr
    # In this process too, and the launcher's __main__ is back after the run.
    import sys
    from bgsim.program import run_file
    before = sys.modules["__main__"]
    run_file(str(prog), shape="2x1x1", nranks=2)
    assert sys.modules["__main__"] is before


def test_the_simulated_mpi4py_reports_the_version_whose_suite_make_conformance_runs():
    import os
    import re

    def main():
        import mpi4py
        return mpi4py.__version__, mpi4py.get_config()["mpi4py"]

    pinned = open(os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "mpi4py_sdist.py")).read()
    version = re.search(r'TOP = "mpi4py-([0-9.]+)/"', pinned).group(1)
    assert bgsim.run(main, shape="1x1x1", nranks=1).results[0] == (version, version)


def test_mpi4py_rc_and_the_pickle_are_each_ranks_own():
    import fractions
    import marshal

    def main():
        import mpi4py
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        if r == 0:
            mpi4py.rc.threads = False
            mpi4py.rc(irecv_bufsz=1)
            MPI.pickle.__init__(marshal.dumps, marshal.loads)  # marshal cannot carry a Fraction
            MPI.pickle.PROTOCOL = 2
        c.Barrier()
        got = c.sendrecv({"r": r} if r == 0 else fractions.Fraction(1, 3), dest=r, source=r)
        try:
            mpi4py.rc.no_such_option = 1
            refused = False
        except TypeError:  # as mpi4py's
            refused = True
        return mpi4py.rc.threads, mpi4py.rc.irecv_bufsz, MPI.pickle.PROTOCOL, got, refused

    res = bgsim.run(main, shape="2x1x1", nranks=2).results
    assert res[0] == (False, 1, 2, {"r": 0}, True)
    assert res[1] == (True, 32768, pickle.HIGHEST_PROTOCOL, fractions.Fraction(1, 3), True)


RC_PROGRAM = """
import os
import sys
import warnings

import mpi4py

mpi4py.rc.initialize = False
mpi4py.rc.errors = "bogus"
os.environ["MPI4PY_RC_THREAD_LEVEL"] = "SERIALIZED"
os.environ["MPI4PY_PICKLE_PROTOCOL"] = "3"
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    from mpi4py import MPI
before = MPI.Is_initialized()
c = MPI.COMM_WORLD
r = c.Get_rank()
# Rank 0 initializes with threads, rank 1 without; rank 0 then takes away its
# package's rc and makes its COMM_WORLD's errors fatal: rank 1 sees neither.
level = MPI.Init_thread(MPI.THREAD_MULTIPLE) if r == 0 else (MPI.Init(), MPI.Query_thread())[1]
if r == 0:
    del mpi4py.rc
    del sys.modules["mpi4py.rc"]
    c.Set_errhandler(MPI.ERRORS_ARE_FATAL)
c.Barrier()
import mpi4py.MPI
eh = c.Get_errhandler()
print(r, before, MPI.Is_initialized(), level, MPI.Query_thread(), [str(w.message) for w in seen],
      getattr(mpi4py, "rc", None) is not None and "mpi4py.rc" in sys.modules,
      eh == MPI.ERRORS_RETURN, c.Dup().Get_errhandler() == eh, MPI.Win.Create(None, comm=MPI.COMM_SELF).Get_errhandler() == MPI.ERRORS_RETURN,
      MPI.pickle.PROTOCOL, mpi4py.rc.thread_level if r else "-", MPI.Is_thread_main(), mpi4py.MPI is MPI, flush=True)
"""


def test_a_thread_a_rank_starts_runs_but_may_not_call_mpi():
    import threading

    def main():
        seen = {}

        def work():
            seen["main"] = MPI.Is_thread_main()
            try:
                MPI.COMM_WORLD.Get_rank()
            except bgsim.errors.StateError as e:
                seen["refused"] = str(e)

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return MPI.Query_thread(), MPI.Is_thread_main(), seen

    level, main, seen = bgsim.run(main, shape="1x1x1", nranks=1).results[0]
    assert level == MPI.THREAD_FUNNELED and main and seen["main"] is False
    assert "MPI_THREAD_FUNNELED" in seen["refused"]


def test_a_ranks_import_of_mpi_does_what_mpi4py_rc_asks_each_rank_for_itself(cli, tmp_path):
    prog = tmp_path / "rc.py"
    prog.write_text(RC_PROGRAM)
    p = cli("run", "--quiet", "--shape", "2x1x1", "-n", "2", str(prog), check=True)
    lines = sorted(p.stdout.splitlines())
    warned = repr(["mpi4py.rc.errors: unexpected value 'bogus'"])
    # Not initialized until Init; the environment's thread level asked for,
    # THREAD_FUNNELED (1) provided to rank 0, THREAD_SINGLE (0) to rank 1.
    assert lines == [f"0 False True 1 1 {warned} False False True True 3 - True True",
                     f"1 False True 0 0 {warned} True True True True 3 serialized True True"]


def test_buffer_collectives_refuse_messages_that_do_not_match_as_mpi4py_does():
    def main():
        c = MPI.COMM_WORLD
        s, r = np.zeros(2, "i"), np.zeros(2, "f")
        refused = []
        for call in (lambda: c.Allreduce(s, r),  # datatypes differ
                     lambda: c.Allreduce(s, np.zeros(3, "i")),  # counts differ
                     lambda: c.Reduce_scatter([np.zeros(4, "i"), MPI.INT], [np.zeros(2, "i"), MPI.INT], [2, 1]),
                     lambda: c.Reduce_scatter([np.zeros(4, "i"), MPI.INT], [np.zeros(1, "i"), MPI.INT], [2, 2]),
                     lambda: c.Alltoall([np.zeros(3, "i"), None, "i"], [np.zeros(4, "i"), MPI.INT])):
            try:
                call()
                refused.append(False)
            except ValueError as e:
                refused.append("mismatch" in str(e) or "add up" in str(e) or "multiple" in str(e))
        # Empty vector messages are fine; counts left out of Alltoallw are one each.
        c.Alltoallv([None, 0, "B"], [None, 0, "B"])
        sb, rb = bytearray(b"ab"), bytearray(2)
        c.Alltoallw([sb, None, None, [MPI.CHAR] * 2], [rb, [MPI.CHAR] * 2])
        return refused, bytes(rb)

    for r, (refused, got) in enumerate(bgsim.run(main, shape="2x1x1", nranks=2).results):
        assert refused == [True] * 5
        assert got == bytes([b"ab"[r]]) * 2  # element r of each rank's "ab", back to back


def test_intercommunicator_collectives_move_data_between_the_groups():
    # Groups of unequal size: world ranks 0..3 and 4, 5. Each group's
    # reductions end up in the other group.
    def main():
        w = MPI.COMM_WORLD
        r = w.rank
        color = int(r >= 4)
        local = w.Split(color, r)
        ic = local.Create_intercomm(0, w, 4 if color == 0 else 0)
        me, theirs_n = ic.rank, ic.Get_remote_size()
        out = {}
        s = np.zeros(3)
        ic.Allreduce(np.full(3, float(r)), s)
        out["allreduce"] = s.tolist()
        req = ic.Iallreduce(np.full(2, r, "i8"), t := np.zeros(2, "i8"), op=MPI.MAX)
        req.Wait()
        out["iallreduce"] = t.tolist()
        # Reduce_scatter_block: each vector is the other group's size times the block.
        blk = np.zeros(2)
        ic.Reduce_scatter_block(np.arange(2 * theirs_n, dtype="f8") + r, blk)
        out["rsb"] = blk.tolist()
        g = np.full(theirs_n, -1, "i4")
        ic.Allgather(np.full(1, r, "i4"), g)
        out["allgather"] = g.tolist()
        b = np.full(4, -1, "i4")
        if color == 0:
            ic.Bcast(np.arange(4, dtype="i4") + 40, root=MPI.ROOT if me == 1 else MPI.PROC_NULL)
        else:
            ic.Bcast(b, root=1)
        out["bcast"] = b.tolist()
        out["reduce"] = ic.reduce(r, op=MPI.SUM, root=MPI.ROOT if (color, me) == (1, 0) else
                                  (MPI.PROC_NULL if color == 1 else 0))
        return out

    res = bgsim.run(main, shape="2x2x2", nranks=6).results
    for r, o in enumerate(res):
        other = [4, 5] if r < 4 else [0, 1, 2, 3]
        assert o["allreduce"] == [float(sum(other))] * 3
        assert o["iallreduce"] == [max(other)] * 2
        me = r if r < 4 else r - 4
        assert o["rsb"] == [float(sum(2 * me + k + q for q in other)) for k in range(2)]
        assert o["allgather"] == other
        assert o["bcast"] == ([40, 41, 42, 43] if r >= 4 else [-1] * 4)
        assert o["reduce"] == (sum(range(4)) if r == 4 else None)


def test_intercommunicators_point_to_point_barrier_dup_and_merge():
    def main():
        w = MPI.COMM_WORLD
        r = w.rank
        color = r % 2
        local = w.Split(color, r)
        # Leaders: each group's rank 0 (world ranks 0 and 1); only they
        # give the peer communicator and tag.
        ic = local.Create_intercomm(0, w if local.rank == 0 else MPI.COMM_NULL, 1 - color, tag=12)
        me = ic.rank
        got = ic.sendrecv(r, dest=me, source=me)
        buf = np.zeros(4, "i4")
        ic.Sendrecv(np.full(4, r, "i4"), dest=me, recvbuf=buf, source=me)
        ic.Barrier()
        st = MPI.Status()
        wild = None
        if color == 0:
            ic.send(r, dest=(me + 1) % ic.Get_remote_size(), tag=5)
        else:
            wild = (ic.recv(source=MPI.ANY_SOURCE, tag=5, status=st), st.source)
        d = ic.Dup()
        d.Barrier()
        # Split by world rank // 2: {0} with {1}, {2} with {3}.
        sp = ic.Split(r // 2, 0)
        split_peer = sp.sendrecv(r, dest=0, source=0)
        merged = ic.Merge(high=bool(color))
        try:  # MPI defines no scan on an intercommunicator
            ic.Scan(np.ones(1), np.zeros(1))
            refused = None
        except MPI.Exception as e:
            refused = e.Get_error_class()
        out = dict(inter=ic.Is_inter(), size=ic.size, remote=ic.Get_remote_group().Translate_ranks(
            [0, 1], w.Get_group()), got=got, buf=int(buf[0]), wild=wild, merged=(merged.rank, merged.size),
            refused=refused == MPI.ERR_COMM, sum=merged.allreduce(r), split=(sp.size, sp.Get_remote_size(), split_peer))
        try:  # a handle of an intercommunicator is no intracommunicator
            MPI.Intracomm(ic)
            out["typed"] = False
        except TypeError:
            out["typed"] = True
        d.Free()
        ic.Free()
        return out

    res = run(main, shape="2x2x1").results
    for r, o in enumerate(res):
        assert o["inter"] and o["size"] == 2 and o["refused"]
        assert o["remote"] == ([1, 3] if r % 2 == 0 else [0, 2])
        partner = r + 1 if r % 2 == 0 else r - 1  # the remote rank of the same index
        assert o["got"] == partner and o["buf"] == partner
        # The group that asked for high=False comes first: 0, 2, then 1, 3.
        assert o["merged"] == ([0, 2, 1, 3].index(r), 4) and o["sum"] == 6
        assert o["split"] == (1, 1, r ^ 1)
    # Rank 2 (local rank 1 of the even group) sent to remote rank 0 = world 1,
    # whose status names the sender by its remote rank, 1.
    assert res[1]["wild"] == (2, 1) and res[3]["wild"] == (0, 0)
    assert all(o["typed"] for o in res)


def test_generalized_requests_and_user_error_classes():
    def main():
        seen = []
        g = MPI.Grequest.Start(lambda st: st.Set_tag(9), lambda: seen.append("free"), None)
        pending = g.Test()
        with pytest.raises(MPI.Exception, match="generalized request the program has not completed"):
            g.Wait()  # nothing but the program could complete it
        g.complete("done")
        st = MPI.Status()
        got = g.wait(st)
        cls = MPI.Add_error_class()
        code = MPI.Add_error_code(cls)
        MPI.Add_error_string(code, "my error")
        e = MPI.Exception(code)
        return (pending, got, st.Get_tag(), seen, cls > MPI.ERR_LASTCODE, MPI.Get_error_class(code) == cls,
                e.Get_error_string(), str(e), MPI.COMM_WORLD.Get_attr(MPI.LASTUSEDCODE) == code)

    for r in run(main, shape="2x1x1").results:
        assert r == (False, "done", 9, ["free"], True, True, "my error", "my error", True)
