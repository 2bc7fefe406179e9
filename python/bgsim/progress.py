"""Progress bars for long runs (tqdm, on stderr): simulated time, events
per second and, where the end is known, an estimate of the wall time left.

A bar appears only when asked for (not ``--quiet``), when stderr is a
terminal, and once a run has gone on for `DELAY_S` seconds: short runs and
logs stay clean.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import Optional

from tqdm import tqdm

#: Seconds of wall time before a bar appears.
DELAY_S = 2.0


def wanted(enabled: bool = True) -> bool:
    """Whether a run should show a bar: enabled and stderr a terminal."""
    return enabled and sys.stderr.isatty()


def _rate(events: float, seconds: float) -> str:
    r = events / seconds if seconds > 0 else 0.0
    return f"{r / 1e6:.2f} M" if r >= 1e6 else f"{r / 1e3:.0f} K"


class Bar:
    """One run's bar. `fraction=True`: the run reports how much of it is done
    (0..1) and the bar shows the wall time left; otherwise it counts
    simulated time and shows no estimate (an MPI program's end is not known
    until it comes)."""

    def __init__(self, desc: str, fraction: bool, unit: str = "us"):
        self.desc, self.fraction, self.unit = desc, fraction, unit
        self._t0 = time.monotonic()
        self._bar: Optional[tqdm] = None

    def _open(self) -> tqdm:
        # The terminal's width (terminals that report none: 100 columns).
        cols = shutil.get_terminal_size((100, 20)).columns or 100
        fmt = "{desc}: {percentage:5.1f}%|{bar}| [{elapsed}<{remaining}{postfix}]" if self.fraction else \
            "{desc}: [{elapsed}{postfix}]"
        return tqdm(total=1.0 if self.fraction else None, desc=self.desc, file=sys.stderr, bar_format=fmt,
                    leave=False, ncols=cols)

    def update(self, sim: float, events: int, fraction: Optional[float] = None, note: str = "") -> None:
        """Simulated time `sim` (in the bar's unit), `events` simulated so
        far, the fraction done (bars that know it), and a short note."""
        elapsed = time.monotonic() - self._t0
        if elapsed < DELAY_S:
            return
        if self._bar is None:
            self._bar = self._open()
            self._bar.start_t -= elapsed  # the run started before the bar showed
        post = f"{sim:,.1f} {self.unit} simulated, {_rate(events, elapsed)} events/s" + (f", {note}" if note else "")
        self._bar.set_postfix_str(post, refresh=False)
        if fraction is not None and self.fraction:
            self._bar.n = min(max(fraction, 0.0), 1.0)
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class Suite:
    """The bar of a suite of experiments (bgsim reproduce all): experiments
    done of all, the one running, the wall time left at the rate so far;
    experiments' log lines go above it (`write`)."""

    def __init__(self, total: int, desc: str = "bgsim reproduce"):
        cols = shutil.get_terminal_size((100, 20)).columns or 100
        self._bar = tqdm(total=total, desc=desc, unit="experiment", file=sys.stderr, ncols=cols, leave=False,
                         bar_format="{desc}: {n}/{total} |{bar}| [{elapsed}<{remaining}{postfix}]")

    def start(self, name: str) -> None:
        self._bar.set_postfix_str(name)

    def done(self) -> None:
        self._bar.update(1)
        self._bar.refresh()

    def write(self, line: str) -> None:
        self._bar.write(line, file=sys.stderr)

    def close(self) -> None:
        self._bar.close()
