"""The phase model against the packet tier on `bgsim.phase.GRID` (both
machines, two partitions each, all-to-all / plane all-to-all / halo / broadcast, 4 KB
and 64 KB): one markdown row per configuration - the packet tier, the phase
model, the program run with the torus on its coarse tier
(`fidelity="coarse"`) and on the message tier (`fidelity="message"`, BG/P
only: it needs a DMA engine; docs/coarse.md) - then the error ranges.
`docs/phase.md` and `docs/coarse.md` hold its output. Usage: python
scripts/phase_grid.py
"""

import sys
import time

from bgsim import phase


def main() -> None:
    t0 = time.perf_counter()
    print("| configuration | packets (us) | phase model (us) | error | coarse torus (us) | error | message tier (us) | error |")
    print("|---|---|---|---|---|---|---|---|")
    errors, run_errors, message_errors = [], [], []
    for cfg in phase.GRID:
        row = phase.compare(cfg)
        errors.append(row["error_pct"])
        run_errors.append(row["run_error_pct"])
        message = "| - | - |"
        if row["message_us"] is not None:
            message_errors.append(row["message_error_pct"])
            message = f"| {row['message_us']:,.1f} | {row['message_error_pct']:+.1f}% |"
        print(f"| {row['config']} | {row['packet_us']:,.1f} | {row['phase_us']:,.1f} | {row['error_pct']:+.1f}% "
              f"| {row['run_us']:,.1f} | {row['run_error_pct']:+.1f}% {message}", flush=True)
    for name, e in (("phase model", errors), ("coarse torus", run_errors), ("message tier", message_errors)):
        print(f"{name}: {len(e)} configurations, error {min(e):+.1f}% to {max(e):+.1f}%, "
              f"mean |error| {sum(abs(x) for x in e) / len(e):.1f}%", file=sys.stderr)
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
