"""Streaming bandwidth between ranks 0 and 1, as OSU's osu_bw and osu_bibw
measure it: a window of non-blocking sends (and, with `bi`, as many sends the
other way at once), then a short reply; bandwidth = bytes / time.

    bgsim run --shape 4x4x2 -n 2 examples/stream_bw.py [bi]

The messages of a window are in flight together, so their handshakes and
protocol waits overlap; the per-message work on the cores does not.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
bidir = sys.argv[1:] == ["bi"]
window, iters = 64, 3
peer = 1 - rank
if rank == 0:
    print(f"{'bytes':>8} {'MB/s':>8}  ({'both directions' if bidir else 'rank 0 -> rank 1'}, window {window})")
for size in [1, 16, 64, 256, 1000, 1024, 4096, 16384, 65536, 262144]:
    sbuf = np.zeros(size, "u1")
    rbufs = np.zeros((window, size), "u1")
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(iters):
        if rank == 0 or bidir:
            reqs = [comm.Isend(sbuf, dest=peer, tag=1) for _ in range(window)]
            if bidir:
                reqs += [comm.Irecv(rbufs[i], source=peer, tag=1) for i in range(window)]
            MPI.Request.Waitall(reqs)
            if not bidir:
                comm.Recv(rbufs[0, :1], source=peer, tag=2)
        else:
            MPI.Request.Waitall([comm.Irecv(rbufs[i], source=peer, tag=1) for i in range(window)])
            comm.Send(sbuf[:1], dest=peer, tag=2)
    elapsed = MPI.Wtime() - t0
    if rank == 0:
        moved = size * window * iters * (2 if bidir else 1)
        print(f"{size:>8} {moved / elapsed / 1e6:>8.1f}")
