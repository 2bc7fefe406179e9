"""`make bench`, the flow-model comparison: the same MPI programs on SimGrid's
SMPI (a flow model of the network, `smpirun`) and on bgsim, timed in
alternating runs (SMPI, then each bgsim variant, round after round), whole
processes from start to exit. Prints one JSON line per case with the median
wall times and the median of the per-round ratios (SMPI / bgsim: above 1,
bgsim is faster).

- `alltoall_1KB_512`: MPI_Alltoall of 1 KiB per pair on 512 ranks. SMPI: a C
  program on an 8x8x8 torus cluster (BG/L's links: 175 MB/s, 0.1 us), its
  pairwise algorithm (`smpi/alltoall:pair`). bgsim: the same call from a
  Python program (`bgsim run`) on BG/L 8x8x8 with its default algorithm and
  with `--coll alltoall=pairwise` (packets and the coarse torus), and on BG/P
  8x8x8 in SMP mode on the message tier.
- `pingpong_8B`: 100,000 round trips of 8 bytes between two ranks, blocking
  send and receive.

SMPI comes from Debian's `libsimgrid-dev` (`smpicc`, `smpirun`); without it
the script prints a line saying so and stops. Usage:
python scripts/bench_smpi.py [ROUNDS]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
BGSIM = [sys.executable, "-m", "bgsim.cli"]

A2A_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n, r, bytes = 1024;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    char *s = calloc((size_t)n, bytes), *d = malloc((size_t)n * bytes);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Alltoall(s, bytes, MPI_CHAR, d, bytes, MPI_CHAR, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, tmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (r == 0) printf("%.3f\n", tmax * 1e6);
    MPI_Finalize();
    return 0;
}
"""

PINGPONG_C = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int r;
    char b[8] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    double t0 = MPI_Wtime();
    for (int i = 0; i < 100000; i++) {
        if (r == 0) {
            MPI_Send(b, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(b, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(b, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(b, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (r == 0) printf("%.3f\n", (MPI_Wtime() - t0) * 1e6);
    MPI_Finalize();
    return 0;
}
"""

A2A_PY = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
n = comm.Get_size()
s = np.zeros(n * 1024, "u1")
d = np.empty(n * 1024, "u1")
comm.Barrier()
t0 = MPI.Wtime()
comm.Alltoall(s, d)
t = comm.reduce(MPI.Wtime() - t0, op=MPI.MAX)
if comm.Get_rank() == 0:
    print(f"{t * 1e6:.3f}")
"""

PINGPONG_PY = """
import numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
r = comm.Get_rank()
b = np.zeros(8, "u1")
t0 = MPI.Wtime()
for _ in range(100000):
    if r == 0:
        comm.Send(b, 1)
        comm.Recv(b, 1)
    else:
        comm.Recv(b, 0)
        comm.Send(b, 0)
if r == 0:
    print(f"{(MPI.Wtime() - t0) * 1e6:.3f}")
"""

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="world" routing="Full">
    <cluster id="torus" prefix="node-" suffix="" radical="0-511" speed="700Mf" bw="175MBps" lat="0.1us"
             topology="TORUS" topo_parameters="8,8,8"/>
  </zone>
</platform>
"""


def timed(cmd, cwd):
    """Wall seconds of `cmd` from start to exit, and its last line of output."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        why = f"`{' '.join(cmd)}` failed ({p.returncode}): {p.stderr.strip()[-500:]}"
        if cmd[0] == "smpirun":
            raise RuntimeError(why)  # SimGrid's side: the comparison is skipped
        sys.exit(f"bench_smpi: {why}")  # bgsim's side: a failure of bgsim
    return wall, p.stdout.strip().splitlines()[-1]


def compare(name, smpi, variants, cwd):
    """SMPI and every bgsim variant in turn, ROUNDS rounds; one JSON line."""
    walls = {"smpi": []}
    walls.update({v: [] for v in variants})
    sim = {}
    for _ in range(ROUNDS):
        w, out = timed(smpi, cwd)
        walls["smpi"].append(w)
        sim["smpi"] = float(out)
        for v, cmd in variants.items():
            w, out = timed(cmd, cwd)
            walls[v].append(w)
            sim[v] = float(out)
    ratio = {v: statistics.median(s / b for s, b in zip(walls["smpi"], walls[v])) for v in variants}
    print(json.dumps({"benchmark": f"smpi_{name}", "rounds": ROUNDS,
                      "wall_s": {k: statistics.median(v) for k, v in walls.items()},
                      "simulated_us": sim, "smpi_over_bgsim": ratio,
                      "commands": {"smpi": " ".join(smpi),
                                   **{v: " ".join(["bgsim"] + c[len(BGSIM):]) for v, c in variants.items()}}}),
          flush=True)


def skipped(why):
    """The line that says the comparison did not run, and why: the rest of
    `make bench` goes on."""
    print(json.dumps({"benchmark": "smpi", "skipped": why}), flush=True)


def main():
    if not (shutil.which("smpicc") and shutil.which("smpirun")):
        return skipped("smpicc/smpirun not found (Debian: libsimgrid-dev)")
    try:
        compare_all()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        skipped(str(e))


def compare_all():
    with tempfile.TemporaryDirectory(prefix="bgsim-smpi-") as d:
        for name, text in (("a2a.c", A2A_C), ("pingpong.c", PINGPONG_C), ("a2a.py", A2A_PY),
                           ("pingpong.py", PINGPONG_PY), ("torus.xml", PLATFORM),
                           ("hosts", "".join(f"node-{i}\n" for i in range(512)))):
            with open(os.path.join(d, name), "w") as f:
                f.write(text)
        for prog in ("a2a", "pingpong"):
            subprocess.run(["smpicc", "-O2", "-o", prog, f"{prog}.c"], cwd=d, check=True, capture_output=True)
        smpi = ["smpirun", "-platform", "torus.xml", "-hostfile", "hosts", "--log=root.thres:critical"]
        run = BGSIM + ["run", "--quiet"]
        compare("alltoall_1KB_512", smpi + ["-np", "512", "--cfg=smpi/alltoall:pair", "./a2a"], {
            "bgl_default": run + ["--shape", "8x8x8", "a2a.py"],
            "bgl_pairwise": run + ["--shape", "8x8x8", "--coll", "alltoall=pairwise", "a2a.py"],
            "bgl_pairwise_coarse": run + ["--shape", "8x8x8", "--coll", "alltoall=pairwise", "--fidelity", "coarse",
                                          "a2a.py"],
            "bgp_smp_pairwise_message": run + ["--machine", "bgp", "--mode", "smp", "--shape", "8x8x8", "--coll",
                                               "alltoall=pairwise", "--fidelity", "message", "a2a.py"],
        }, d)
        compare("pingpong_8B", smpi + ["-np", "2", "./pingpong"],
                {"bgl": run + ["-n", "2", "--shape", "2x2x2", "pingpong.py"]}, d)


if __name__ == "__main__":
    main()
