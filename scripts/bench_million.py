"""A halo exchange on 1,048,576 ranks: a 64x64x64 BG/P partition in VN
mode, ranks that are communication skeletons driven by the core
(`bgsim.skeleton.halo_in_core`), a 1024x1024 logical grid, 1 KB to each of
the four neighbours, once. Wall time, peak resident memory and memory per
rank, one JSON line for bench_report.py. Usage: python
scripts/bench_million.py [THREADS] (default 1; more: the machine cut into
that many partitions, one thread each, the same result)."""

from __future__ import annotations

import json
import resource
import sys

from bgsim import skeleton

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
r = skeleton.halo_in_core((1024, 1024), 1024, 1, "bgp", threads=threads, shape="64x64x64", mode="vn")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
name = "million_halo_64x64x64_vn" + (f"_{threads}_threads" if threads > 1 else "")
print(json.dumps({"benchmark": name, "threads": threads, **r, "peak_rss_mb": peak / 2**20,
                  "bytes_per_rank": peak / r["ranks"]}))
