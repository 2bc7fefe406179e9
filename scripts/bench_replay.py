"""`make bench`, replay part: the halo of scripts/bench_mpi.py as a trace.

Writes the trace a C program doing bench_mpi.py's halo would leave (4,096
ranks on a 16x16x16 torus, ITERS rounds of Irecv x 6, Isend x 6 of 1 KB
and a Waitall; no compute between calls), replays it, and prints one JSON
line: simulated MPI messages per wall second of the replay (loading the
trace included, writing it not), to set against bench_mpi.py's figure for
the same program written for mpi4py. Usage:
python scripts/bench_replay.py [ITERS] [SHAPE]
"""

import json
import os
import resource
import sys
import tempfile
import time

import bgsim
from bgsim import trace as bgtrace

ITERS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
SHAPE = sys.argv[2] if len(sys.argv) > 2 else "16x16x16"
NBYTES = 1024


def write(d: str) -> int:
    X, Y, Z = (int(v) for v in SHAPE.split("x"))
    n = X * Y * Z

    def rank(a, b, c):
        return a % X + X * (b % Y + Y * (c % Z))

    for r in range(n):
        x, y, z = r % X, (r // X) % Y, r // (X * Y)
        nbrs = [rank(x + 1, y, z), rank(x - 1, y, z), rank(x, y + 1, z), rank(x, y - 1, z), rank(x, y, z + 1),
                rank(x, y, z - 1)]
        lines = [f"# bgsim-trace 2 rank {r} size {n} clock cpu"]
        req = 0
        for _ in range(ITERS):
            ids = []
            for nb in nbrs:
                req += 1
                ids.append(req)
                lines.append(f"0 0 irecv {nb} 1 {NBYTES} 0 {req}")
            for nb in nbrs:
                req += 1
                ids.append(req)
                lines.append(f"0 0 isend {nb} 1 {NBYTES} 0 {req}")
            lines.append(f"0 0 waitall {len(ids)} " + " ".join(map(str, ids)))
        lines.append("0 0 finalize")
        with open(os.path.join(d, f"rank-{r}.trace"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return n


with tempfile.TemporaryDirectory() as d:
    n = write(d)
    t0 = time.perf_counter()
    t = bgtrace.load(d)
    load_s = time.perf_counter() - t0
    res = bgsim.run(bgtrace.program(t), shape=SHAPE, nranks=n, progress=True)
    wall = time.perf_counter() - t0
msgs = res.counters["messages_completed"]
print(json.dumps({
    "benchmark": f"replay_halo_{SHAPE}_1KB",
    "ranks": res.nranks, "iters": ITERS, "messages": msgs, "wall_s": wall, "load_s": load_s,
    "messages_per_s": msgs / wall, "python_share": res.python_wall_s / wall,
    "simulated_us": res.time_s * 1e6,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
