"""`make bench`, collectives part: MPI_Alltoall of 1 KB per pair on 512
nodes (8x8x8) and MPI_Allreduce of 1 MB on 4,096 nodes (16x16x16), with each
family's algorithm. Prints one JSON line per run: wall time, simulated time,
packets (torus packets delivered plus tree packet-link transfers),
simulated packets per wall second and the run's peak resident memory. The all-to-all moves real
data (numpy buffers, checked); the 1 MB allreduce on 4,096 ranks is a
communication skeleton (sizes without content: 4 GB of data would not fit
beside the simulation). Usage: python scripts/bench_coll.py [--quick]
"""

import json
import sys
import time

import numpy as np

import bgsim
from bgsim import MPI, skeleton

QUICK = "--quick" in sys.argv
A2A_SHAPE = "4x4x4" if QUICK else "8x8x8"
AR_SHAPE = "8x8x8" if QUICK else "16x16x16"


def alltoall_main():
    comm = MPI.COMM_WORLD
    n, r = comm.Get_size(), comm.Get_rank()
    send = np.repeat(((np.arange(n) + r) % 256).astype("u1"), 1024)
    recv = np.empty(n * 1024, dtype="u1")
    comm.Barrier()
    t0 = MPI.Wtime()
    comm.Alltoall(send, recv)
    t = MPI.Wtime() - t0
    ok = all(int(recv[i * 1024]) == (r + i) % 256 for i in range(n))
    return t, ok


def allreduce_main():
    comm = MPI.COMM_WORLD
    comm.Barrier()
    t0 = MPI.Wtime()
    skeleton.allreduce(comm, 1 << 20, 8, floating=True)
    return MPI.Wtime() - t0


def reset_peak():
    """Restarts this process's peak resident memory (Linux: VmHWM) so that
    each row reports its own run's peak."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """Peak resident memory since the last reset_peak(), MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def bench(name, main, shape, coll):
    reset_peak()
    t0 = time.perf_counter()
    r = bgsim.run(main, shape=shape, coll=coll)
    wall = time.perf_counter() - t0
    sim = max(x[0] if isinstance(x, tuple) else x for x in r.results)
    if name.startswith("alltoall"):
        assert all(x[1] for x in r.results), "alltoall data wrong"
    p = r.counters["packets_delivered"] + r.counters["tree_link_packets"]
    print(json.dumps({"benchmark": f"coll_{name}_{shape}", "collective": name, "shape": shape,
                      "algorithms": r.collectives, "wall_s": wall, "simulated_us": sim * 1e6,
                      "packets": p, "packets_per_s": p / wall, "tree_ops": r.counters["tree_operations"],
                      "peak_rss_mb": peak_rss_mb()}),
          flush=True)


for algo in ("generic", "torus_spread", "msglayer"):
    bench(f"alltoall_1KB_{algo}", alltoall_main, A2A_SHAPE, {"alltoall": algo})
for algo in ("reduce_scatter_allgather", "tree"):
    bench(f"allreduce_1MB_{algo}", allreduce_main, AR_SHAPE, {"allreduce": algo})
