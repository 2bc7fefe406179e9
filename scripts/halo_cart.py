"""One round of a 2D halo exchange on a periodic Cartesian grid from
MPI.Compute_dims and Create_cart (scripts/bench_scale.py runs it on every
core of a large machine)."""
import numpy as np
from mpi4py import MPI
c = MPI.COMM_WORLD
dims = MPI.Compute_dims(c.size, 2)
cart = c.Create_cart(dims, periods=[True, True])
buf = np.zeros(128, "f8"); out = np.empty_like(buf)
for d in (0, 1):
    src, dst = cart.Shift(d, 1)
    cart.Sendrecv(buf, dest=dst, recvbuf=out, source=src)
    cart.Sendrecv(buf, dest=src, recvbuf=out, source=dst)
if c.rank == 0:
    print("halo round done on", c.size, "ranks, grid", dims)
