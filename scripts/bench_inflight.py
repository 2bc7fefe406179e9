"""What a posted message costs in memory: an mpi4py program whose every
rank calls MPI_Alltoall of 1 KiB with size-only buffers and shared arrays
(`bgsim.shared_array`), on BG/P in VN mode, which posts every send and
receive at once (n (n - 1) messages in flight), against the same program
with a barrier instead of the all-to-all. Each runs in a process of its
own; the difference of their peak resident memory over the messages is
the bytes per posted message (the core's requests, waiting sends,
matching lists and peer queues, and the allocator's slack). Prints one
JSON line for bench_report.py. Usage: python scripts/bench_inflight.py
[RANKS] (default 1024: 1,047,552 messages, about 35 s); one run: python
scripts/bench_inflight.py --once alltoall|barrier RANKS [THREADS] (the
machine cut into THREADS partitions on as many threads)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time

import bgsim
from bgsim import MPI


def program(kind: str):
    def main():
        comm = MPI.COMM_WORLD
        n = comm.Get_size()
        send = bgsim.shared_array(n * 1024, "u1", key="send")
        recv = bgsim.shared_array(n * 1024, "u1", key="recv")
        if kind == "alltoall":
            comm.Alltoall(send, recv)
        else:
            comm.Barrier()
    return main


def once(kind: str, ranks: int, threads: int = 1) -> None:
    t0 = time.perf_counter()
    r = bgsim.run(program(kind), "bgp", nranks=ranks, mode="vn", buffers="size-only", threads=threads,
                  partitions=threads)
    print(json.dumps({"wall_s": time.perf_counter() - t0, "messages": r.counters["messages_completed"],
                      "simulated_us": r.time_us, "events": r.counters["events"], "threads": threads,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run(kind: str, ranks: int) -> dict:
    p = subprocess.run([sys.executable, __file__, "--once", kind, str(ranks)], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"bench_inflight: {kind} on {ranks} ranks failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--once"]:
        return once(sys.argv[2], int(sys.argv[3]), *map(int, sys.argv[4:5]))
    ranks = int(sys.argv[1]) if len(sys.argv) > 1 else 1024
    a2a, base = run("alltoall", ranks), run("barrier", ranks)
    inflight = ranks * (ranks - 1)
    print(json.dumps({"benchmark": f"inflight_alltoall_{ranks}", "ranks": ranks, "machine": "bgp", "mode": "vn",
                      "messages": a2a["messages"], "in_flight": inflight, "wall_s": a2a["wall_s"],
                      "simulated_us": a2a["simulated_us"], "peak_rss_mb": a2a["peak_rss_mb"],
                      "baseline_rss_mb": base["peak_rss_mb"],
                      "bytes_per_message": (a2a["peak_rss_mb"] - base["peak_rss_mb"]) * 2**20 / inflight}))


if __name__ == "__main__":
    main()
