"""Computes pi by the midpoint rule on 1/(1+x^2), split over the ranks
(the classic MPI example): bcast the number of intervals, reduce the sums.

    bgsim run --shape 2x2x2 examples/pi.py [INTERVALS]
"""
import math
import sys

from mpi4py import MPI

try:
    from bgsim import compute
except ImportError:
    def compute(seconds=None, cycles=None):
        pass

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
n = comm.bcast(int(sys.argv[1]) if rank == 0 and len(sys.argv) > 1 else 100000, root=0)
h = 1.0 / n
local = sum(4.0 / (1.0 + ((i + 0.5) * h) ** 2) for i in range(rank, n, size)) * h
compute(cycles=20 * len(range(rank, n, size)))  # ~20 cycles per interval
pi = comm.reduce(local, op=MPI.SUM, root=0)
if rank == 0:
    print(f"pi is approximately {pi:.12f}, error {abs(pi - math.pi):.2e}")
    print(f"{size} ranks, {n} intervals, simulated time {MPI.Wtime() * 1e6:.1f} us")
