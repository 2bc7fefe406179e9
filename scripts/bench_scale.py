"""Large MPI programs: one round of a 2D halo exchange on a periodic
Cartesian grid (scripts/halo_cart.py: Compute_dims, Create_cart, Shift,
Sendrecv) on every core of a 64x32x32 BG/L (65,536 ranks) and of a 32x32x32
BG/P in VN mode (131,072 ranks). One JSON line per run: wall time and the
peak resident memory of the `bgsim run` process, and per rank."""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BGSIM = os.path.join(os.path.dirname(sys.executable), "bgsim")
RUNS = [("bgl", ["--shape", "64x32x32"], 65536), ("bgp", ["--mode", "vn"], 131072)]


def main() -> None:
    for machine, opts, n in RUNS:
        cmd = [BGSIM, "run", "--quiet", "--machine", machine, *opts, "-n", str(n), os.path.join(HERE, "halo_cart.py")]
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        out, err = p.stdout.read(), p.stderr.read()
        if status != 0 or "halo round done" not in out:
            sys.exit(f"bench_scale: {' '.join(cmd)} failed:\n{out}{err}")
        rss_mb = usage.ru_maxrss / 1024
        print(json.dumps({"benchmark": f"scale_halo_{machine}_{n}", "machine": machine, "ranks": n, "wall_s": wall,
                          "peak_rss_mb": rss_mb, "kb_per_rank": usage.ru_maxrss / n}), flush=True)


if __name__ == "__main__":
    main()
