"""A halo exchange on 1,048,576 ranks: a 64x64x64 BG/P partition in VN
mode, ranks that are communication skeletons driven by the core
(`bgsim.skeleton.halo_in_core`), a 1024x1024 logical grid, 1 KB to each of
the four neighbours, once. Wall time, peak resident memory and memory per
rank, one JSON line for bench_report.py."""

from __future__ import annotations

import json
import resource

from bgsim import skeleton

r = skeleton.halo_in_core((1024, 1024), 1024, 1, "bgp", shape="64x64x64", mode="vn")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"benchmark": "million_halo_64x64x64_vn", **r, "peak_rss_mb": peak / 2**20,
                  "bytes_per_rank": peak / r["ranks"]}))
