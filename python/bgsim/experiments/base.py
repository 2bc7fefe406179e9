"""Experiment registry and the objects experiments exchange with the runner."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..errors import UnknownExperimentError

SCALES = ("quick", "paper")


def size_label(b: int) -> str:
    """A size as the keys of docs/experiments.md write it: 64B, 1KB, 16KB, 1MB."""
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return f"{b >> 20}MB"
    if b >= 1024 and b % 1024 == 0:
        return f"{b >> 10}KB"
    return f"{b}B"


@dataclass
class Context:
    """What an experiment run gets: the scale, the seed, and a way to report progress."""

    scale: str = "paper"
    seed: int = 1
    quiet: bool = False
    name: str = ""
    #: `auto`: packets where they fit, the phase model beyond (experiments
    #: that have one, `bgsim.phase`); `packet` or `phase`: that one only.
    fidelity: str = "auto"
    #: Threads (and partitions) of the experiment's runs, torus traffic
    #: and MPI programs alike; the figures are the same for every count.
    threads: int = 1
    #: Partitions to cut every run's machine into whatever its size (at
    #: least `threads`); None: the engine chooses (one thread for runs too
    #: small to pay).
    partitions: Optional[int] = None
    #: In a process of an MPI job (`mpirun -n P bgsim reproduce`): the MPI
    #: programs run one partition per process, each process its own ranks.
    processes: bool = False
    _t0: float = field(default_factory=time.time)

    def run(self, main: Callable[[], Any], machine: Any, **kw: Any) -> Any:
        """`bgsim.run(main, machine, **kw)` on this run's threads or
        processes: the same figures on any number. A machine of fewer
        nodes than the job has processes runs whole on every process (a
        process runs at least a node)."""
        from .. import _core
        from ..api import Machine
        from ..program import run
        processes = self.processes
        if processes:
            m = machine if isinstance(machine, Machine) else Machine(machine)
            processes = m.with_settings(shape=kw.get("shape")).nodes >= _core.mpi_size()
        return run(main, machine, threads=self.threads, partitions=self.partitions, processes=processes, **kw)

    @property
    def quick(self) -> bool:
        return self.scale == "quick"

    def log(self, msg: str) -> None:
        """Progress goes to stderr, never stdout (stdout may carry --json),
        above the suite's progress bar when there is one."""
        if not self.quiet:
            line = f"[{self.name} {time.time() - self._t0:6.1f}s] {msg}"
            if self.bar is not None:
                self.bar.write(line)
            else:
                print(line, file=sys.stderr, flush=True)

    #: The suite's progress bar (bgsim reproduce all on a terminal), if any.
    bar: Any = None


@dataclass
class Outcome:
    """What an experiment produced."""

    metrics: Dict[str, float] = field(default_factory=dict)
    series: Dict[str, dict] = field(default_factory=dict)
    #: Plot groups: PNG name -> series names drawn together.
    groups: Dict[str, List[str]] = field(default_factory=dict)
    #: Extra figures: PNG name -> function(path) that draws it.
    figures: Dict[str, Callable[[str], None]] = field(default_factory=dict)
    #: Lines for the report: what was run, at which sizes.
    setup: List[str] = field(default_factory=list)
    #: Findings worth a sentence in the report.
    notes: List[str] = field(default_factory=list)
    #: The metrics the summary table shows (all when empty).
    key_metrics: List[str] = field(default_factory=list)
    #: Collective algorithms chosen over all the experiment's MPI runs:
    #: operation -> algorithm -> calls (gathered by `bgsim reproduce`).
    collectives: Dict[str, Dict[str, int]] = field(default_factory=dict)

    def add_phase(self, figure: str, value: float, phase_name: str, error_name: str) -> None:
        """A figure of the phase model: `phase_name`; where the packet tier
        gave `figure`, the tier's error against it (%) as `error_name`, else
        `figure` itself."""
        self.metrics[phase_name] = value
        packets = self.metrics.get(figure)
        if packets is None:
            self.metrics[figure] = value
        else:
            self.metrics[error_name] = round(100 * (value - packets) / packets, 1)

    def add_series(self, name: str, x, y, x_label: str, y_label: str, group: Optional[str] = None) -> None:
        self.series[name] = {"x": [float(v) for v in x], "y": [float(v) for v in y], "x_label": x_label, "y_label": y_label}
        self.groups.setdefault(group or name, []).append(name)


@dataclass(frozen=True)
class Curve:
    """One series of a sweep, and the metric each of its points gives."""

    name: str
    y_label: str
    #: The metric of the point at x: a format string of `x`, or a function
    #: of x (None where that point gives no metric); None: the curve gives
    #: no metrics.
    metric: "str | Callable[[Any], str] | None" = None
    #: Decimal places the metric keeps (the series keeps every digit).
    digits: int = 3
    group: Optional[str] = None
    #: False: the curve gives its metrics only, no series.
    plot: bool = True


def sweep(ctx: Context, out: Outcome, xs, measure: Callable[[Any], Dict[str, float]], curves: List[Curve], *,
          x_label: str, log: "str | Callable[[Any], str]" = "{x}", plot_xs=None) -> Dict[str, List[float]]:
    """The loop every experiment runs, declared once: at every x (logged as
    `log`), `measure(x)` gives a value per curve name; each value is its
    curve's metric at x, rounded to the curve's digits, and a point of its
    series, plotted over `plot_xs` (default `xs`). Returns each curve's
    values, for figures derived from them (`measure` may also add metrics
    of its own to `out`)."""
    xs = list(xs)
    ys: Dict[str, List[float]] = {c.name: [] for c in curves}
    for x in xs:
        ctx.log(log(x) if callable(log) else log.format(x=x))
        values = measure(x)
        for c in curves:
            v = values[c.name]
            ys[c.name].append(v)
            name = c.metric(x) if callable(c.metric) else None if c.metric is None else c.metric.format(x=x)
            if name is not None:
                out.metrics[name] = round(v, c.digits)
    for c in curves:
        if c.plot:
            out.add_series(c.name, xs if plot_xs is None else plot_xs, ys[c.name], x_label, c.y_label, group=c.group)
    return ys


@dataclass
class Experiment:
    name: str
    machine: str
    title: str
    run: Callable[[Context], Outcome]
    #: Published figures (docs/parameters.md) to show beside the results: label -> (value, metric key or None).
    published: Dict[str, tuple] = field(default_factory=dict)
    #: It can run sizes on the phase model (`--fidelity`).
    phase: bool = False


REGISTRY: Dict[str, Experiment] = {}


def register(name: str, machine: str, title: str, published: Optional[Dict[str, tuple]] = None,
             phase: bool = False):
    def deco(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        REGISTRY[name] = Experiment(name, machine, title, fn, published or {}, phase)
        return fn
    return deco


def names() -> List[str]:
    return list(REGISTRY)


def get(name: str) -> Experiment:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownExperimentError(f"unknown experiment {name!r}; `bgsim reproduce --list` lists them: {', '.join(REGISTRY)}") from None
