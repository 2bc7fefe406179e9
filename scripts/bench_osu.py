"""mpi4py's own `osu_alltoall` demo (the OSU all-to-all latency test, 0 B to
1 MB per pair) on 32 ranks of a 4x4x2 BG/L, run unmodified by `bgsim run`:
wall time and peak resident memory, one JSON line for bench_report.py.

The demo is not part of bgsim: it is taken from mpi4py's source
distribution on PyPI (pinned by version and SHA-256) into .bench-cache/.
`python3 scripts/bench_osu.py [MAX_BYTES]` stops at MAX_BYTES per pair (a
shorter check; default the demo's 1 MB).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tarfile
import time

from mpi4py_sdist import TOP, sdist

MEMBER = TOP + "demo/osu_alltoall.py"
CACHE = ".bench-cache"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def demo() -> str:
    """The demo's path, fetched and checked once."""
    cache = os.path.join(ROOT, CACHE)
    path = os.path.join(cache, "osu_alltoall.py")
    if os.path.exists(path):
        return path
    os.makedirs(cache, exist_ok=True)
    with tarfile.open(sdist()) as t:
        data = t.extractfile(MEMBER).read()
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.replace(path + ".tmp", path)
    return path


def main() -> None:
    src = demo()
    max_bytes = int(sys.argv[1]) if len(sys.argv) > 1 else None
    prog = src
    if max_bytes is not None:
        # The same demo, stopped at a smaller size (its MAX_MSG_SIZE default).
        prog = os.path.join(os.path.dirname(src), f"osu_alltoall_{max_bytes}.py")
        with open(src) as f:
            text = f.read()
        with open(prog, "w") as f:
            f.write(re.sub(r"MAX_MSG_SIZE=1 << 20", f"MAX_MSG_SIZE={max_bytes}", text))
    bgsim = os.path.join(os.path.dirname(sys.executable), "bgsim")
    out = os.path.join(os.path.dirname(src), "osu_result.json")
    t0 = time.perf_counter()
    p = subprocess.run([bgsim, "run", "--quiet", "--shape", "4x4x2", "-n", "32", "--json", out, prog],
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        sys.exit(f"bench_osu: bgsim run failed ({p.returncode}):\n{p.stderr}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    with open(out) as f:
        result = json.load(f)
    table = [l for l in p.stdout.splitlines() if l and not l.startswith("#")]
    print(json.dumps({
        "benchmark": "osu_alltoall_32", "shape": "4x4x2", "ranks": 32, "max_bytes": max_bytes or (1 << 20),
        "wall_s": wall, "peak_rss_mb": peak, "messages": result["counters"]["messages_completed"],
        "packets": result["counters"]["packets_delivered"], "simulated_s": result["time_s"],
        "latency_us_largest": float(table[-1].split()[1]) if table else None,
    }))


if __name__ == "__main__":
    main()
