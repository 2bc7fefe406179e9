"""Paired timing of two or more builds of `bgsim-bench` on the torus workload.

    python3 scripts/bench_pair.py ROUNDS BIN_A BIN_B [BIN ...]

Runs `BIN --torus-only --runs 1` for every binary, ROUNDS times, one after
the other, the order rotating by one each round (so that no build always
runs first or right after another), and prints each binary's best and
median wall time and the geometric mean, over rounds, of its wall time
divided by BIN_A's in the same round. On a shared machine whose speed
drifts within minutes, only such paired ratios compare builds; a
difference under about 3% needs more than 16 rounds to tell from noise.
Build the binaries as `make bench` does (`RUSTFLAGS="-C target-cpu=native"
cargo build --release -p bgsim --bin bgsim-bench`, then copy
`target/release/bgsim-bench` aside): a build for any x86-64 is several
percent slower.
"""

import json
import math
import statistics
import subprocess
import sys


def wall(binary: str) -> float:
    try:
        out = subprocess.run([binary, "--torus-only", "--runs", "1"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"bench_pair: {binary}: {e}")
    return float(json.loads(out)["wall_s"])


def main() -> None:
    if len(sys.argv) < 4 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: python3 scripts/bench_pair.py ROUNDS BIN_A BIN_B [BIN ...] (ROUNDS at least 1)")
    rounds, bins = int(sys.argv[1]), sys.argv[2:]
    times: dict[int, list[float]] = {i: [] for i in range(len(bins))}
    for r in range(rounds):
        for j in range(len(bins)):
            i = (r + j) % len(bins)
            times[i].append(wall(bins[i]))
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
    base = times[0]
    for i, b in enumerate(bins):
        ratio = math.exp(statistics.fmean(math.log(x / y) for x, y in zip(times[i], base)))
        print(f"{b}: best {min(times[i]):.3f} s, median {statistics.median(times[i]):.3f} s, ratio to {bins[0]} {ratio:.3f}")


if __name__ == "__main__":
    main()
