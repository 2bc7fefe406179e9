"""Prints the metrics of a `bgsim reproduce --out DIR` directory as markdown.

    python scripts/results_table.py results/
"""

import glob
import json
import os
import sys


def main() -> None:
    d = sys.argv[1] if len(sys.argv) > 1 else "results"
    files = sorted(glob.glob(os.path.join(d, "*.json")))
    if not files:
        sys.exit(f"results_table: no experiment JSON in {d}")
    for f in files:
        r = json.load(open(f))
        print(f"### {r['experiment']} ({r['scale']} scale, {r['wall_s']:.0f} s)\n")
        print("| metric | value |\n|---|---|")
        for k, v in r["metrics"].items():
            print(f"| `{k}` | {v:g} |")
        print()


if __name__ == "__main__":
    main()
