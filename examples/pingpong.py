"""Ping-pong between rank 0 and rank 1 with numpy buffers: half round-trip
latency and bandwidth by message size.

    bgsim run --shape 2x1x1 examples/pingpong.py
"""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
iters = 10
if rank == 0:
    print(f"{'bytes':>8} {'half RTT (us)':>14} {'MB/s':>9}")
for size in [1, 64, 1024, 16384, 262144]:
    buf = np.zeros(size, dtype="u1")
    if rank == 0:
        buf[:] = np.arange(size) % 251
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iters):
        if rank == 0:
            comm.Send(buf, dest=1, tag=size)
            comm.Recv(buf, source=1, tag=size)
        elif rank == 1:
            comm.Recv(buf, source=0, tag=size)
            comm.Send(buf, dest=0, tag=size)
    half = (MPI.Wtime() - t0) / iters / 2
    if rank == 0:
        assert (buf == np.arange(size) % 251).all(), "data changed on the way"
        print(f"{size:>8} {half * 1e6:>14.2f} {size / half / 1e6:>9.1f}")
