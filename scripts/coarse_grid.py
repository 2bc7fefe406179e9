"""The coarse tier against the packet tier on `bgsim.coarse.GRID` (both
machines, two partitions each, all-to-all / plane all-to-all / halo / broadcast, 4 KB
and 64 KB): one markdown row per configuration, then the error range.
`docs/coarse.md` holds its output. Usage: python scripts/coarse_grid.py
"""

import sys
import time

from bgsim import coarse


def main() -> None:
    t0 = time.perf_counter()
    print("| configuration | packets (us) | coarse (us) | error |")
    print("|---|---|---|---|")
    errors = []
    for cfg in coarse.GRID:
        row = coarse.compare(cfg)
        errors.append(row["error_pct"])
        print(f"| {row['config']} | {row['packet_us']:,.1f} | {row['coarse_us']:,.1f} | {row['error_pct']:+.1f}% |",
              flush=True)
    print(f"\n{len(errors)} configurations: error {min(errors):+.1f}% to {max(errors):+.1f}%, "
          f"mean |error| {sum(abs(e) for e in errors) / len(errors):.1f}%; {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)


if __name__ == "__main__":
    main()
