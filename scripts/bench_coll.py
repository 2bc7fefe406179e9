"""`make bench`, collectives part: MPI_Alltoall of 1 KB per pair on 512
nodes (8x8x8) and MPI_Allreduce of 1 MB on 4,096 nodes (16x16x16), with each
family's algorithm; the all-to-all also with the torus on its coarse tier,
and a 1 KB all-to-all skeleton (pairwise) on 4,096 ranks on that tier; a
64 KB all-to-all skeleton (pairwise) on 512 BG/P processes in VN mode on
packets and on the message tier. Prints one JSON line per run: wall time, simulated time,
packets (torus packets delivered plus tree packet-link transfers),
simulated packets per wall second and the run's peak resident memory
(each run in a process of its own). The all-to-all moves real
data (numpy buffers, checked); the 1 MB allreduce on 4,096 ranks is a
communication skeleton (sizes without content: 4 GB of data would not fit
beside the simulation). Usage: python scripts/bench_coll.py [--quick] [--one NAME]
"""

import json
import resource
import subprocess
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


def peak_rss_mb() -> float:
    """This process's peak resident memory, MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def skeleton_alltoall_main(nbytes=1024):
    def main():
        comm = MPI.COMM_WORLD
        comm.Barrier()
        t0 = MPI.Wtime()
        skeleton.alltoall(comm, nbytes)
        return MPI.Wtime() - t0
    return main


def bench(name, main, shape, coll, fidelity="packet", machine="bgl", mode=None):
    t0 = time.perf_counter()
    r = bgsim.run(main, machine, shape=shape, mode=mode, coll=coll, fidelity=fidelity)
    wall = time.perf_counter() - t0
    sim = max(x[0] if isinstance(x, tuple) else x for x in r.results)
    if name.startswith("alltoall") and isinstance(r.results[0], tuple):
        assert all(x[1] for x in r.results), "alltoall data wrong"
    p = r.counters["packets_delivered"] + r.counters["tree_link_packets"]
    print(json.dumps({"benchmark": f"coll_{name}_{shape}", "collective": name, "shape": shape, "fidelity": fidelity,
                      "machine": machine, "mode": r.mode, "events": r.counters["events"],
                      "algorithms": r.collectives, "wall_s": wall, "simulated_us": sim * 1e6,
                      "packets": p, "packets_per_s": p / wall, "tree_ops": r.counters["tree_operations"],
                      "peak_rss_mb": peak_rss_mb()}),
          flush=True)


RUNS = {f"alltoall_1KB_{a}": (alltoall_main, A2A_SHAPE, {"alltoall": a}) for a in ("generic", "torus_spread", "msglayer")}
RUNS.update({f"allreduce_1MB_{a}": (allreduce_main, AR_SHAPE, {"allreduce": a}) for a in ("reduce_scatter_allgather", "tree")})
# The all-to-all with the torus on its coarse tier, and the scale issue's
# 4,096-rank 1 KB all-to-all (a skeleton, pairwise) on the coarse tier.
RUNS["alltoall_1KB_generic_coarse"] = (alltoall_main, A2A_SHAPE, {"alltoall": "generic"}, "coarse")
RUNS["alltoall_skeleton_1KB_pairwise_coarse"] = (skeleton_alltoall_main(), "4x4x4" if QUICK else "16x16x16",
                                                 {"alltoall": "pairwise"}, "coarse")
# The message tier (BG/P only) against packets on the same program: the
# 64 KB pairwise all-to-all of 512 processes in VN mode.
for tier in ("packet", "message"):
    RUNS[f"alltoall_skeleton_64KB_pairwise_{tier}"] = (skeleton_alltoall_main(65536), "2x2x2" if QUICK else "4x4x8",
                                                       {"alltoall": "pairwise"}, tier, "bgp", "vn")

if "--one" in sys.argv:
    bench(sys.argv[sys.argv.index("--one") + 1], *RUNS[sys.argv[sys.argv.index("--one") + 1]])
else:
    # Each run in its own process, so that its peak memory is its own.
    for name in RUNS:
        subprocess.run([sys.executable, __file__, "--one", name] + (["--quick"] if QUICK else []), check=True)
