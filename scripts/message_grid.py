"""The message tier against the packet tier on BG/P in its three node
modes: the programs of `bgsim.phase.GRID` (all-to-all, plane all-to-all,
halo, broadcast; 4 KB and 64 KB; 2x2x2 and 4x4x2, XYZT) run on packets,
on the coarse torus and on the message tier (`fidelity="message"`,
docs/coarse.md), in SMP, DUAL and VN mode: one markdown row per
configuration, then the error ranges and the wall times of each tier.
Usage: python scripts/message_grid.py
"""

import sys
import time

from bgsim import phase

MODES = ("smp", "dual", "vn")


def main() -> None:
    print("| configuration | packets (us) | coarse torus (us) | error | message tier (us) | error |")
    print("|---|---|---|---|---|---|")
    errors = {"coarse": [], "message": []}
    wall = {"packet": 0.0, "coarse": 0.0, "message": 0.0}
    for mode in MODES:
        for cfg in (c for c in phase.GRID if c.machine == "bgp"):
            cfg = phase.Config(cfg.machine, mode, cfg.shape, cfg.pattern, cfg.nbytes)
            us = {}
            for tier in wall:
                t0 = time.perf_counter()
                us[tier] = phase.packet_time(cfg, tier) * 1e6
                wall[tier] += time.perf_counter() - t0
            row = f"| {cfg.label()} | {us['packet']:,.1f} |"
            for tier in ("coarse", "message"):
                e = 100 * (us[tier] - us["packet"]) / us["packet"]
                errors[tier].append(e)
                row += f" {us[tier]:,.1f} | {e:+.1f}% |"
            print(row, flush=True)
    for tier, e in errors.items():
        print(f"{tier}: {len(e)} configurations, error {min(e):+.1f}% to {max(e):+.1f}%, "
              f"mean |error| {sum(abs(x) for x in e) / len(e):.1f}%", file=sys.stderr)
    print("wall: " + ", ".join(f"{k} {v:.1f} s" for k, v in wall.items()), file=sys.stderr)


if __name__ == "__main__":
    main()
