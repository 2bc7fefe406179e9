"""`make bench`, ping-pong part: two Python ranks on a 2x1x1 BG/L exchange
an 8-byte numpy array with blocking Send and Recv, 100,000 round trips
(200,000 messages). Prints one JSON line: simulated MPI messages per wall
second, wall time, simulated time. Usage: python scripts/bench_pingpong.py [ROUND_TRIPS]
"""

import json
import sys
import time

import numpy as np

import bgsim
from bgsim import MPI

TRIPS = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000


def main():
    comm = MPI.COMM_WORLD
    r = comm.Get_rank()
    buf = np.zeros(8, dtype="u1")
    other = 1 - r
    for _ in range(TRIPS):
        if r == 0:
            comm.Send(buf, other, 0)
            comm.Recv(buf, other, 0)
        else:
            comm.Recv(buf, other, 0)
            comm.Send(buf, other, 0)
    return MPI.Wtime()


t0 = time.perf_counter()
res = bgsim.run(main, shape="2x1x1")
wall = time.perf_counter() - t0
msgs = res.counters["messages_completed"]
assert msgs == 2 * TRIPS, msgs
print(json.dumps({"benchmark": "pingpong_8B_2ranks", "round_trips": TRIPS, "messages": msgs, "wall_s": wall,
                  "messages_per_s": msgs / wall, "simulated_us": res.time_us}), flush=True)
