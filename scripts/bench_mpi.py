"""`make bench`, MPI part: a halo exchange from Python on the simulated machine.

4,096 ranks on a 16x16x16 torus in coprocessor mode; every rank exchanges
ITERS rounds of 1 KB messages with its six neighbours (Irecv x 6, Isend x 6,
Waitall). Prints one JSON line: simulated MPI messages per wall second and
the share of wall time spent in Python (rank programs, the MPI module) vs the
Rust core. Usage: python scripts/bench_mpi.py [ITERS] [SHAPE] [THREADS]
(THREADS: the machine cut into that many partitions on threads; default 1).
"""

import json
import resource
import sys
import time

import numpy as np

import bgsim
from bgsim import MPI

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
SHAPE = sys.argv[2] if len(sys.argv) > 2 else "16x16x16"
THREADS = int(sys.argv[3]) if len(sys.argv) > 3 else 1
NBYTES = 1024


def main():
    comm = MPI.COMM_WORLD
    X, Y, Z = (int(v) for v in SHAPE.split("x"))
    r = comm.Get_rank()
    x, y, z = r % X, (r // X) % Y, r // (X * Y)

    def rank(a, b, c):
        return a % X + X * (b % Y + Y * (c % Z))

    nbrs = [rank(x + 1, y, z), rank(x - 1, y, z), rank(x, y + 1, z), rank(x, y - 1, z), rank(x, y, z + 1), rank(x, y, z - 1)]
    send = np.full(NBYTES, r % 251, dtype="u1")
    recv = [np.empty(NBYTES, dtype="u1") for _ in nbrs]
    for _ in range(ITERS):
        reqs = [comm.Irecv(b, source=n, tag=1) for b, n in zip(recv, nbrs)]
        reqs += [comm.Isend(send, dest=n, tag=1) for n in nbrs]
        MPI.Request.Waitall(reqs)
    assert all(int(b[0]) == n % 251 for b, n in zip(recv, nbrs))


t0 = time.perf_counter()
res = bgsim.run(main, shape=SHAPE, progress=True, threads=THREADS)
wall = time.perf_counter() - t0
msgs = res.counters["messages_completed"]
print(json.dumps({
    "benchmark": f"mpi_halo_{SHAPE}_1KB",
    "ranks": res.nranks, "iters": ITERS, "threads": THREADS, "messages": msgs, "wall_s": wall,
    "messages_per_s": msgs / wall, "python_share": res.python_wall_s / wall,
    "simulated_us": res.time_s * 1e6, "packets": res.counters["packets_delivered"],
    "events": res.counters["events"],
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
