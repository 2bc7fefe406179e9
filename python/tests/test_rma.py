"""One-sided communication (MPI.Win): what the data does, and what the
time is (see bgsim/mpishim/rma.py)."""

import struct

import numpy as np
import pytest

import bgsim
from bgsim import _core


def _counter_program(kind):
    """Five ranks draw five numbers each from a counter on rank 0, the
    way mpi4py's nxtval demos do; each rank returns what it drew."""
    def main():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        itemsize = MPI.INT.Get_size()
        if kind == "accumulate":
            # nxtval-onesided: each rank owns a slot; it adds one to its own
            # and reads the others' through an indexed datatype.
            if rank == 0:
                mem = MPI.Alloc_mem(itemsize * size)
                mem[:] = struct.pack("i", 0) * size
            else:
                mem = MPI.BOTTOM
            win = MPI.Win.Create(mem, itemsize, MPI.INFO_NULL, comm)
            dt = MPI.INT.Create_indexed([rank, size - rank - 1], [0, rank + 1]).Commit()
            got, mine = [], 0
            for _ in range(5):
                vals = np.zeros(size, "i")
                win.Lock(0)
                win.Accumulate([np.ones(1, "i"), 1, MPI.INT], 0, [rank, 1, MPI.INT], MPI.SUM)
                win.Get([vals, 1, dt], 0, [0, 1, dt])
                win.Unlock(0)
                vals[rank] = mine
                mine += 1
                got.append(int(vals.sum()))
            dt.Free()
        else:
            win = MPI.Win.Allocate(itemsize if rank == 0 else 0, itemsize, MPI.INFO_NULL, comm)
            got = []
            for _ in range(5):
                out = np.zeros(1, "i")
                win.Lock(0)
                if kind == "fetch_and_op":
                    win.Fetch_and_op(np.ones(1, "i"), out, 0)
                else:
                    win.Get_accumulate([np.ones(1, "i"), 1, MPI.INT], [out, 1, MPI.INT], 0, op=MPI.SUM)
                win.Unlock(0)
                got.append(int(out[0]))
        win.Free()
        return got
    return main


@pytest.mark.parametrize("machine,mode", [("bgl", "vn"), ("bgp", "vn"), ("bgp", "smp")])
@pytest.mark.parametrize("kind", ["accumulate", "fetch_and_op", "get_accumulate"])
def test_a_shared_counter_hands_out_every_number_once(machine, mode, kind):
    shape = "2x2x1" if mode == "vn" else "2x2x2"
    r = bgsim.run(_counter_program(kind), machine, shape=shape, mode=mode, nranks=5)
    drawn = sorted(v for rank in range(5) for v in r.results[rank])
    assert drawn == list(range(25))
    assert r.time_s > 0


def test_fence_epochs_put_get_and_accumulate_with_displacement_units():
    def main():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
        mem = np.full(2 * size, -1.0)
        win = MPI.Win.Create(mem, mem.itemsize, comm=comm)
        right = (rank + 1) % size
        win.Fence()
        # Slot `rank` of the right neighbour gets this rank's number...
        win.Put(np.array([float(rank)]), right, rank)
        win.Fence()
        # ... every rank adds its number to slot size + 0 of rank 0 ...
        win.Accumulate(np.array([float(rank)]), 0, size, op=MPI.SUM)
        got = np.zeros(1)
        win.Get(got, right, rank)
        win.Fence()
        win.Free()
        return mem.tolist(), float(got[0])
    size = 4
    r = bgsim.run(main, "bgl", shape="2x2x1", nranks=size)
    for rank in range(size):
        mem, got = r.results[rank]
        left = (rank - 1) % size
        assert mem[left] == left
        assert got == rank  # what this rank put there, read back
        assert mem[size] == (-1.0 + sum(range(size)) if rank == 0 else -1.0)


def test_post_start_complete_wait_and_test():
    def main():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        rank = comm.Get_rank()
        mem = np.zeros(4, "i")
        win = MPI.Win.Create(mem, 4, comm=comm)
        group = comm.Get_group()
        if rank == 0:
            win.Start(group.Incl([1]))
            win.Put(np.arange(4, dtype="i"), 1)
            win.Complete()
            out = None
        else:
            win.Post(group.Incl([0]))
            while not win.Test():
                pass
            out = mem.tolist()
        win.Free()
        return out
    r = bgsim.run(main, "bgp", shape="2x1x1", mode="smp", nranks=2)
    assert r.results[1] == [0, 1, 2, 3]


def test_wrong_synchronization_and_arguments_are_refused():
    def main():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(8, 1, comm=comm)
        errors = []
        for call in (lambda: win.Unlock(0), lambda: win.Complete(), lambda: win.Wait(),
                     lambda: win.Lock(0, 99), lambda: win.Put(np.zeros(2, "u1"), 5)):
            try:
                call()
            except MPI.Exception as e:
                errors.append(e.Get_error_class())
        try:
            win.Fetch_and_op(bytearray(4), bytearray(1), 0)
        except ValueError:
            errors.append("one element")
        win.Free()
        return errors
    r = bgsim.run(main, "bgl", shape="2x1x1", nranks=2)
    from bgsim import MPI
    assert r.results[0] == [MPI.ERR_RMA_SYNC, MPI.ERR_RMA_SYNC, MPI.ERR_RMA_SYNC, MPI.ERR_LOCKTYPE,
                            MPI.ERR_RANK, "one element"]


def _put_time(nbytes):
    def main():
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        win = MPI.Win.Allocate(nbytes, 1, comm=comm)
        data = np.zeros(nbytes, "u1")
        win.Fence()
        t0 = MPI.Wtime()
        if comm.Get_rank() == 0:
            win.Put(data, 1)
        win.Fence()
        t = MPI.Wtime() - t0
        win.Free()
        return t
    return bgsim.run(main, "bgp", shape="2x1x1", mode="smp", nranks=2).results[0]


def test_a_put_moves_its_bytes_at_the_links_rate():
    extra = _put_time(256 << 10) - _put_time(64 << 10)
    # A link carries 425 MB/s of 256-byte packets, 240 bytes of payload each.
    link = 425e6 * 240 / 256
    assert extra == pytest.approx((192 << 10) / link, rel=0.1)


@pytest.mark.parametrize("mode,target_core_needed", [(0, True), (5, False), (6, False)])
def test_on_bgp_a_put_or_a_gets_reply_needs_no_core_at_the_receiver(mode, target_core_needed):
    # Rank 1's core computes for 1 ms; a 16 KB message reaches it
    # meanwhile. A standard message waits for the core to read its packets
    # from the memory FIFO; a put (mode 5) or a get's reply (mode 6) is
    # written into memory by the DMA engine alone.
    w = _core.World("bgp", ['partition.shape="2x1x1"', 'partition.mode="smp"'], 2, "XYZT", None, 1, True,
                    "packet", 1, False)
    busy = int(1e-3 * w.ticks_per_second)
    w.compute(1, busy)
    r = w.irecv(1, 0, 100, 7, 16 << 10, False)
    w.isend(0, 1, 100, 7, 16 << 10, mode)
    assert w.block(1, [r], 1)
    while not w.done(r):
        w.run()
    assert (w.now() >= busy) == target_core_needed
    assert w.now() < busy + busy // 10


def _one_way(nbytes):
    w = _core.World("bgl", ['partition.shape="2x1x1"'], 2, "XYZT", None, 1, True, "packet", 1, False)
    b = w.irecv(0, 1, 100, 2, nbytes, False)
    w.unwatch(w.isend(1, 0, 100, 2, nbytes, 0))
    assert w.block(0, [b], 1)
    while not w.done(b):
        w.run()
    return w.now()


def test_a_send_chained_to_a_request_leaves_when_it_completes():
    w = _core.World("bgl", ['partition.shape="2x1x1"'], 2, "XYZT", None, 1, True, "packet", 1, False)
    r = w.irecv(1, 0, 100, 1, 64, False)
    back = w.irecv(0, 1, 100, 2, 1024, False)
    w.isend_after(r, 1, 0, 100, 2, 1024, 0)
    w.unwatch(r)
    w.unwatch(w.isend(0, 1, 100, 1, 64, 0))
    assert w.block(0, [back], 1)
    while not w.done(back):
        w.run()
    assert w.status(back)[2] == 1024
    # The reply left once the request was in: the pair takes the two
    # one-way trips one after the other.
    assert w.now() == pytest.approx(_one_way(64) + _one_way(1024), rel=0.05)
