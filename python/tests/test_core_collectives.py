"""Collectives the core runs for a rank (`mpi::agent`): the same messages at
the same simulated times as the rank posting them itself. Each test runs
an algorithm as a collective and, on a dup of the communicator, the same
messages posted point to point by the program, in the same order; every
rank's times and data must agree, also when ranks arrive at different
times and go on with point-to-point traffic while others are still in the
collective."""

import numpy as np
import pytest

import bgsim
from bgsim import MPI

B = 704  # bytes per pair: eager on BG/L, blocks 16-byte aligned


def _blocks(n, r):
    return np.concatenate([np.full(B, (r * 31 + d) % 251, dtype="u1") for d in range(n)])


def _late_start(comm, r):
    # Ranks arrive at different times; then, while some ranks are still in
    # the collective, the early finishers trade messages with each other.
    bgsim.compute(seconds=1e-6 * (r % 5))


def _after(comm, r, n):
    peer = r ^ 1
    if peer < n:
        got = np.empty(64, dtype="u1")
        req = comm.Irecv(got, peer, 7)
        comm.Send(np.full(64, r, dtype="u1"), peer, 7)
        req.Wait()


def _manual(pairwise: bool):
    def main():
        comm = MPI.COMM_WORLD.Dup()
        n, r = comm.Get_size(), comm.Get_rank()
        send, recv = _blocks(n, r), np.empty(n * B, dtype="u1")
        _late_start(comm, r)
        t0 = MPI.Wtime()
        recv[r * B:(r + 1) * B] = send[r * B:(r + 1) * B]
        if pairwise:
            for k in range(1, n):
                d, s = (r + k) % n, (r - k) % n
                comm.Sendrecv(send[d * B:(d + 1) * B], d, 0, recv[s * B:(s + 1) * B], s, 0)
        else:
            reqs = [comm.Irecv(recv[i * B:(i + 1) * B], i, 0) for i in range(n) if i != r]
            reqs += [comm.Isend(send[d * B:(d + 1) * B], d, 0) for d in ((r + k) % n for k in range(1, n))]
            MPI.Request.Waitall(reqs)
        t1 = MPI.Wtime()
        _after(comm, r, n)
        return t1 - t0, MPI.Wtime() - t0, recv.tobytes()
    return main


def _collective():
    comm = MPI.COMM_WORLD.Dup()
    n, r = comm.Get_size(), comm.Get_rank()
    send, recv = _blocks(n, r), np.empty(n * B, dtype="u1")
    _late_start(comm, r)
    t0 = MPI.Wtime()
    comm.Alltoall(send, recv)
    t1 = MPI.Wtime()
    _after(comm, r, n)
    return t1 - t0, MPI.Wtime() - t0, recv.tobytes()


@pytest.mark.parametrize("algorithm", ["postall", "pairwise"])
def test_a_collective_run_by_the_core_is_the_program_posting_its_messages(algorithm):
    manual = bgsim.run(_manual(algorithm == "pairwise"), shape="2x2x3")
    coll = bgsim.run(_collective, shape="2x2x3", coll={"alltoall": algorithm})
    assert coll.collectives["alltoall"] == {algorithm: 1}
    n = len(coll.results)
    assert n == 12
    for r in range(n):
        want = b"".join(bytes([(s * 31 + r) % 251]) * B for s in range(n))
        assert coll.results[r][2] == want, f"rank {r}: wrong data"
        assert manual.results[r][2] == want
    # Times of the collective and of what the ranks do after it.
    assert [x[:2] for x in coll.results] == [x[:2] for x in manual.results]
    assert coll.counters["packets_delivered"] == manual.counters["packets_delivered"]


def test_object_alltoall_and_alltoallv_of_a_skeleton_in_the_core():
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        objs = comm.alltoall([(r, d, "x" * d) for d in range(n)])
        assert objs == [(s, r, "x" * r) for s in range(n)]
        # Alltoallv with zero counts: no message where a count is zero.
        sc = [8 * ((r + d) % 3) for d in range(n)]
        rc = [8 * ((s + r) % 3) for s in range(n)]
        send = np.arange(sum(sc), dtype="u1")
        recv = np.zeros(sum(rc), dtype="u1")
        comm.Alltoallv([send, sc], [recv, rc])
        return recv.tobytes()
    res = bgsim.run(main, shape="2x2x2", mode="vn")
    assert len(res.results) == 16
    # What rank r gets from s is the block s sent it: its values are s's
    # offsets of that block.
    for r, got in enumerate(res.results):
        pos = 0
        for s in range(16):
            k = 8 * ((s + r) % 3)
            start = sum(8 * ((s + d) % 3) for d in range(r))
            assert got[pos:pos + k] == bytes(range(start, start + k)), (r, s)
            pos += k


def test_a_rank_that_leaves_a_collective_cannot_hide_a_deadlock():
    def main():
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 3:
            return None  # never joins: the others wait for its messages
        comm.Alltoall(np.zeros(4 * 8, "u1"), np.zeros(4 * 8, "u1"))
    with pytest.raises(bgsim.DeadlockError) as e:
        bgsim.run(main, shape="2x2x1")
    msg = str(e.value)
    assert "rank 0: in MPI.Comm.alltoall() at test_core_collectives.py:" in msg, msg
    assert "waiting for a message from rank 3" in msg, msg


def _binomial_children(me, root, n):
    rel, mask, parent = (me - root) % n, 1, None
    while mask < n:
        if rel & mask:
            parent = (me - mask) % n
            break
        mask <<= 1
    mask >>= 1
    kids = []
    while mask > 0:
        if rel + mask < n:
            kids.append((me + mask) % n)
        mask >>= 1
    return parent, kids


@pytest.mark.parametrize("size", [64, 4096])  # eager, rendezvous
def test_binomial_bcast_and_dissemination_barrier_in_the_core_are_their_messages(size):
    root = 2

    def program(by_hand):
        def main():
            comm = MPI.COMM_WORLD.Dup()
            n, r = comm.Get_size(), comm.Get_rank()
            _late_start(comm, r)
            buf = np.full(size, 9, "u1") if r == root else np.zeros(size, "u1")
            t0 = MPI.Wtime()
            if by_hand:
                parent, kids = _binomial_children(r, root, n)
                if parent is not None:
                    comm.Recv(buf, parent, 0)
                for k in kids:
                    comm.Send(buf, k, 0)
                k = 1
                while k < n:
                    comm.Sendrecv(b"", (r + k) % n, 1, bytearray(0), (r - k) % n, 1)
                    k *= 2
            else:
                comm.Bcast(buf, root)
                comm.Barrier()
            t1 = MPI.Wtime()
            _after(comm, r, n)
            return t1 - t0, MPI.Wtime() - t0, bool((buf == 9).all())
        return main
    coll = {"bcast": "binomial", "barrier": "dissemination"}
    a = bgsim.run(program(False), shape="2x2x3", coll=coll)
    b = bgsim.run(program(True), shape="2x2x3")
    assert a.collectives["bcast"] == {"binomial": 1} and a.collectives["barrier"] == {"dissemination": 1}
    assert all(x[2] for x in a.results)
    assert a.results == b.results


@pytest.mark.parametrize("size", [5, 8, 31])
def test_bgp_binomial_barrier_is_its_messages_and_waits_for_the_last_rank(size):
    # BG/P's MPI runs its binomial barrier on a communicator that is not
    # the whole partition: dissemination rounds among the largest
    # power-of-two set of ranks, each rank beyond it signalling its partner
    # in the set before the rounds and hearing from it after. The same
    # messages sent by hand give the same times; no rank leaves before the
    # last one arrives.
    def program(by_hand):
        def main():
            w = MPI.COMM_WORLD
            comm = w.Split(0 if w.Get_rank() < size else MPI.UNDEFINED, w.Get_rank())
            if comm == MPI.COMM_NULL:
                return None
            n, r = comm.Get_size(), comm.Get_rank()
            _late_start(comm, r)
            arrived = MPI.Wtime()
            if by_hand:
                h = 1 << (n.bit_length() - 1)
                if r >= h:
                    comm.Send(b"", r - h, 1)
                    comm.Recv(bytearray(0), r - h, 1)
                else:
                    if r + h < n:
                        comm.Recv(bytearray(0), r + h, 1)
                    d = 1
                    while d < h:
                        comm.Sendrecv(b"", (r + d) % h, 1, bytearray(0), (r - d) % h, 1)
                        d *= 2
                    if r + h < n:
                        comm.Send(b"", r + h, 1)
            else:
                comm.Barrier()
            left = MPI.Wtime()
            _after(comm, r, n)
            return arrived, left, MPI.Wtime()
        return main
    a = bgsim.run(program(False), "bgp", shape="2x2x2", mode="vn")
    b = bgsim.run(program(True), "bgp", shape="2x2x2", mode="vn")
    assert a.collectives["barrier"] == {"torus_binomial": 1}
    got = [x for x in a.results if x is not None]
    assert len(got) == size
    assert min(x[1] for x in got) > max(x[0] for x in got)
    assert a.results == b.results


def test_an_alltoall_block_longer_than_its_slot_is_a_truncation_error():
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        per = 16 if r == 0 else 8  # rank 0 sends blocks too long for every slot
        recv = np.zeros(8 * n, "u1")
        try:
            comm.Alltoall(np.ones(per * n, "u1"), recv)
        except MPI.Exception as e:
            return e.Get_error_class() == MPI.ERR_TRUNCATE and "rank 0 sent 16 bytes" in str(e), recv.tolist()
        return "no error", recv.tolist()
    res = bgsim.run(main, shape="2x2x2").results
    n = len(res)
    assert res[0][0] is True  # its own block is too long for its slot too
    for r in range(1, n):
        ok, got = res[r]
        assert ok is True, res[r]
        # The other ranks' blocks are in place; rank 0's slot is untouched.
        assert got == [0] * 8 + sum(([0] * 8 if s == r else [1] * 8 for s in range(1, n)), []), (r, got)


def test_an_alltoall_of_small_blocks_in_large_buffers_takes_and_writes_only_the_blocks():
    """mpi4py's osu_alltoall sends [buffer, size, BYTE] with buffers sized
    for its largest size: only the first n blocks are sent, only the first
    n slots written, the rest of the receive buffer left as it was."""
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        size = 3
        send = np.full(64 * n, 255, "u1")
        for d in range(n):
            send[d * size:(d + 1) * size] = (r * n + d) % 251
        recv = np.full(64 * n, 7, "u1")
        comm.Alltoall([send, size, MPI.BYTE], [recv, size, MPI.BYTE])
        blocks = [recv[s * size:(s + 1) * size].tolist() for s in range(n)]
        return blocks, bool((recv[n * size:] == 7).all())
    res = bgsim.run(main, shape="2x2x2").results
    n = len(res)
    for r, (blocks, tail_kept) in enumerate(res):
        assert blocks == [[(s * n + r) % 251] * 3 for s in range(n)], r
        assert tail_kept, r


@pytest.mark.parametrize("size", [64, 4096])  # eager, rendezvous
def test_a_ring_allgather_in_the_core_is_its_messages(size):
    # Each step passes on to the right the block that came from the left at
    # the step before, in one call into the core.
    def program(by_hand):
        def main():
            comm = MPI.COMM_WORLD.Dup()
            n, r = comm.Get_size(), comm.Get_rank()
            _late_start(comm, r)
            mine = np.full(size, r * 7 % 251, "u1")
            got = np.zeros(n * size, "u1")
            t0 = MPI.Wtime()
            if by_hand:
                got[r * size:(r + 1) * size] = mine
                for step in range(n - 1):
                    out, into = (r - step) % n, (r - step - 1) % n
                    comm.Sendrecv(got[out * size:(out + 1) * size], (r + 1) % n, 0,
                                  got[into * size:(into + 1) * size], (r - 1) % n, 0)
            else:
                comm.Allgather(mine, got)
            t1 = MPI.Wtime()
            _after(comm, r, n)
            return t1 - t0, MPI.Wtime() - t0, got.tobytes()
        return main
    a = bgsim.run(program(False), shape="2x2x3", coll={"allgather": "ring"})
    b = bgsim.run(program(True), shape="2x2x3")
    assert a.collectives["allgather"] == {"ring": 1}
    want = b"".join(bytes([s * 7 % 251]) * size for s in range(12))
    assert all(x[2] == want for x in a.results)
    assert a.results == b.results
    assert a.counters["packets_delivered"] == b.counters["packets_delivered"]


def _bgp_alltoall(manual: bool, get: bool):
    """A post-all 1 KB all-to-all with size-only buffers on BG/P (VN, 128
    ranks: 127 sends each, more than the DMA work FIFO's 64 descriptors,
    so the core holds most of them). With `get`, rank 0 first reads rank
    1's window, whose engine answers while rank 1 is in the all-to-all
    with sends still held."""
    def main():
        comm = MPI.COMM_WORLD.Dup()
        n, r = comm.Get_size(), comm.Get_rank()
        win = MPI.Win.Create(np.zeros(4096, "u1"), 1, MPI.INFO_NULL, comm) if get else None
        send, recv = np.zeros(n * 1024, "u1"), np.zeros(n * 1024, "u1")
        _late_start(comm, r)
        t0 = MPI.Wtime()
        if get and r == 0:
            bgsim.compute(seconds=3e-6)  # rank 1 is in the all-to-all by now
            win.Lock(1)
            win.Get(np.zeros(4096, "u1"), 1)
            win.Unlock(1)
        if manual:
            reqs = [comm.Irecv(recv[i * 1024:(i + 1) * 1024], i, 0) for i in range(n) if i != r]
            reqs += [comm.Isend(send[d * 1024:(d + 1) * 1024], d, 0) for d in ((r + k) % n for k in range(1, n))]
            MPI.Request.Waitall(reqs)
        else:
            comm.Alltoall(send, recv)
        t1 = MPI.Wtime()
        _after(comm, r, n)
        return t1 - t0, MPI.Wtime() - t0
    return main


@pytest.mark.parametrize("get", [False, True])
def test_a_bgp_alltoall_whose_sends_the_core_holds_is_the_program_posting_them(get):
    # The core holds a post-all exchange's receives as one group and the
    # sends that wait for the core or the work FIFO as one list
    # (`msglayer::group`): the same events in the same order as the
    # program posting every message itself.
    kw = dict(machine="bgp", shape="4x4x2", mode="vn", buffers="size-only")
    manual = bgsim.run(_bgp_alltoall(True, get), **kw)
    coll = bgsim.run(_bgp_alltoall(False, get), coll={"alltoall": "postall"}, **kw)
    assert coll.collectives["alltoall"] == {"postall": 1}
    assert len(coll.results) == 128
    assert coll.results == manual.results
    assert coll.counters == manual.counters
    assert coll.counters["dma_work_fifo_full"] > 128 * 40, coll.counters
