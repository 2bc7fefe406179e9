"""A Python MPI program on the machine cut into partitions on threads
(`bgsim.run(threads=N)`): 512 ranks on an 8x8x8 BG/L, each exchanging
256 KB with the rank half the machine away (Sendrecv, rendezvous; the
network's share of the run is large), a ring of 8-byte messages around
all ranks, 300 times (the driver's share is large), a pairwise
all-to-all skeleton of 1 KB (511 steps the core runs for each rank,
inside the partitions), and MPI_Alltoall of 1 KiB as the machine's MPI
runs it (every send and receive posted at once; shared arrays,
size-only buffers). Runs each on 1
and on THREADS threads (default 2) in alternation, PAIRS times (default
3), each run a process of its own, checks that the figures are the same
and prints one JSON line for bench_report.py with the wall times. Usage:
python scripts/bench_threads.py [THREADS] [PAIRS]; one run:
python scripts/bench_threads.py --once NAME THREADS [SHAPE] (SHAPE: another
BG/L partition than 8x8x8; the machine is cut into THREADS partitions
whatever its size)."""

from __future__ import annotations

import hashlib
import json
import resource
import subprocess
import sys
import time

import numpy as np

import bgsim
from bgsim import MPI, skeleton

SOFTWARE = {"barrier": "dissemination", "allreduce": "recursive_doubling", "alltoall": "pairwise"}


def far():
    c = MPI.COMM_WORLD
    r, n = c.Get_rank(), c.Get_size()
    a = np.zeros(256 * 1024, dtype=np.uint8)
    b = np.empty_like(a)
    for it in range(2):
        c.Sendrecv(a, dest=(r + n // 2 + it) % n, recvbuf=b, source=(r - n // 2 - it) % n)


def ring():
    c = MPI.COMM_WORLD
    r, n = c.Get_rank(), c.Get_size()
    x = np.zeros(1)
    y = np.empty(1)
    for _ in range(300):
        c.Sendrecv(x, dest=(r + 1) % n, recvbuf=y, source=(r - 1) % n)
    c.Barrier()


def a2a():
    skeleton.alltoall(MPI.COMM_WORLD, 1024)


def posted():
    c = MPI.COMM_WORLD
    n = c.Get_size()
    c.Alltoall(bgsim.shared_array(n * 1024, "u1", key="send"), bgsim.shared_array(n * 1024, "u1", key="recv"))


PROGRAMS = {"far": far, "ring": ring, "a2a": a2a, "posted": posted}
#: How each runs: software collectives (the skeleton's pairwise all-to-all
#: among them), except the posted all-to-all (the machine's own algorithm).
RUN = {"posted": dict(buffers="size-only")}


def once(name: str, threads: int, shape: str = "8x8x8") -> None:
    """One run, in this process: prints its wall time and figures."""
    t0 = time.perf_counter()
    r = bgsim.run(PROGRAMS[name], "bgl", shape=shape, threads=threads, partitions=threads,
                  **RUN.get(name, dict(coll=SOFTWARE)))
    wall = time.perf_counter() - t0
    d = r.to_dict()
    for k in ("wall_s", "python_wall_s", "threads", "partitions", "threaded_share"):
        d.pop(k)
    figures = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()
    print(json.dumps({"wall_s": wall, "python_wall_s": r.python_wall_s, "figures": figures,
                      "threaded_share": r.threaded_share,
                      "events": r.counters["events"], "simulated_us": r.time_us,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run(name: str, threads: int) -> dict:
    p = subprocess.run([sys.executable, __file__, "--once", name, str(threads)], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"bench_threads: {name} on {threads} threads failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--once"]:
        return once(sys.argv[2], int(sys.argv[3]), *sys.argv[4:5])
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    out = {"benchmark": f"python_threads_{threads}", "threads": threads, "shape": "8x8x8", "ranks": 512}
    for name in PROGRAMS:
        walls = {1: [], threads: []}
        peak = {1: 0.0, threads: 0.0}
        for _ in range(pairs):
            for t in (1, threads):
                r = run(name, t)
                walls[t].append(r["wall_s"])
                peak[t] = max(peak[t], r["peak_rss_mb"])
                if t == threads:  # (the same every run on threads: it counts simulated time)
                    share = r["threaded_share"]
                first = out.setdefault(name, {"events": r["events"], "simulated_us": r["simulated_us"],
                                              "python_wall_s": r["python_wall_s"], "figures": r["figures"]})
                if r["figures"] != first["figures"]:
                    sys.exit(f"bench_threads: {name}: the figures on {t} threads differ")
        ratios = sorted(a / b for a, b in zip(walls[1], walls[threads]))
        out[name].update({"threaded_share": share,
                          "wall_s_1": sorted(walls[1]), f"wall_s_{threads}": sorted(walls[threads]),
                          "ratios": ratios, "peak_rss_mb_1": peak[1], f"peak_rss_mb_{threads}": peak[threads]})
        del out[name]["figures"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
