"""The HALO benchmark of the NLOM ocean model: every process owns an N x N
subdomain of a 2D grid of processes (ranks in row-major order, periodic in
both directions) and exchanges halos of W rows / columns of doubles with
its four neighbours, with nonblocking sends and receives; the time of one
exchange is averaged over the repetitions.

    bgsim run --machine bgp --mode vn -n 256 examples/nlom_halo.py 16x16 [N] [W] [REPS]
    bgsim map --machine bgp --mode vn --grid 16x16 -o grid.map
    bgsim run --machine bgp --mode vn -n 256 --map grid.map examples/nlom_halo.py 16x16

Ranks sit on the torus as the mapping (--map) puts them: the grid does not
reorder them (as the HALO benchmark runs), so the mapping decides how many
hops a halo travels.
"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
size, rank = comm.Get_size(), comm.Get_rank()
if len(sys.argv) > 1:
    p, q = (int(v) for v in sys.argv[1].lower().split("x"))
else:
    p, q = MPI.Compute_dims(size, 2)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 64
width = int(sys.argv[3]) if len(sys.argv) > 3 else 2
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 2
if p * q != size:
    if rank == 0:
        print(f"the grid {p}x{q} needs {p * q} ranks, the run has {size}", file=sys.stderr)
    sys.exit(2)

i, j = divmod(rank, q)
neighbours = [((i - 1) % p) * q + j, ((i + 1) % p) * q + j, i * q + (j - 1) % q, i * q + (j + 1) % q]
out = [np.full(width * n, rank, dtype="f8") for _ in neighbours]
into = [np.empty(width * n, dtype="f8") for _ in neighbours]

comm.Barrier()
t0 = MPI.Wtime()
for _ in range(reps):
    recvs = [comm.Irecv(into[k], source=nb, tag=k ^ 1) for k, nb in enumerate(neighbours)]
    sends = [comm.Isend(out[k], dest=nb, tag=k) for k, nb in enumerate(neighbours)]
    MPI.Request.Waitall(recvs + sends)
comm.Barrier()
elapsed = (MPI.Wtime() - t0) / reps
for k, nb in enumerate(neighbours):
    assert into[k][0] == nb, (rank, k, into[k][0], nb)
slowest = comm.reduce(elapsed, op=MPI.MAX)
if rank == 0:
    print(f"HALO {p}x{q} processes, {n}x{n} subdomains, halo width {width}: "
          f"{slowest * 1e6:.2f} us per exchange ({width * n * 8} bytes per neighbour)")
