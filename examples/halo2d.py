"""Jacobi iterations on a 2D grid split over a Cartesian process grid, with
halo exchange (Sendrecv) and a global residual (Allreduce).

    bgsim run --shape 4x4x2 examples/halo2d.py [N] [ITERS]
"""
import sys

import numpy as np
from mpi4py import MPI

try:  # charge the stencil's compute when running on the simulator
    from bgsim import compute
except ImportError:  # under a real MPI the time is real
    def compute(seconds=None, cycles=None):
        pass

n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 20

comm = MPI.COMM_WORLD
dims = MPI.Compute_dims(comm.Get_size(), 2)
cart = comm.Create_cart(dims, periods=[False, False])
py, px = cart.Get_coords(cart.Get_rank())
ny, nx = n // dims[0], n // dims[1]
u = np.zeros((ny + 2, nx + 2))
if py == 0:
    u[0, :] = 1.0  # hot top boundary
up, down = cart.Shift(0, 1)
left, right = cart.Shift(1, 1)

t0 = MPI.Wtime()
for it in range(iters):
    # Rows are contiguous; columns are copied through a buffer.
    cart.Sendrecv(u[1, :], dest=up, recvbuf=u[ny + 1, :], source=down)
    cart.Sendrecv(u[ny, :], dest=down, recvbuf=u[0, :], source=up)
    col_out, col_in = np.ascontiguousarray(u[:, 1]), np.empty(ny + 2)
    cart.Sendrecv(col_out, dest=left, recvbuf=col_in, source=right)
    if right != MPI.PROC_NULL:
        u[:, nx + 1] = col_in
    col_out = np.ascontiguousarray(u[:, nx])
    cart.Sendrecv(col_out, dest=right, recvbuf=col_in, source=left)
    if left != MPI.PROC_NULL:
        u[:, 0] = col_in
    new = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    compute(cycles=10 * nx * ny)  # about 10 cycles per point on a 700 MHz PowerPC 440
    local = np.array([((new - u[1:-1, 1:-1]) ** 2).sum()])
    u[1:-1, 1:-1] = new
    total = np.zeros(1)
    cart.Allreduce(local, total, op=MPI.SUM)
elapsed = MPI.Wtime() - t0
if cart.Get_rank() == 0:
    print(f"{n}x{n} grid on a {dims[0]}x{dims[1]} process grid, {iters} iterations")
    print(f"final residual {np.sqrt(total[0]):.6e}")
    print(f"time {elapsed * 1e6:.1f} us, {elapsed / iters * 1e6:.2f} us per iteration")
