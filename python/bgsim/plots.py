"""Plots (matplotlib, PNG): series groups, heat maps."""

from __future__ import annotations

import io
from typing import Dict, List, Sequence


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _atomic_save(fig, path: str) -> None:
    """Saves a figure as PNG, whole or not at all (`api.write_atomic`)."""
    from .api import write_atomic
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    write_atomic(path, buf.getvalue())


def series_plot(series: Dict[str, dict], names: Sequence[str], path: str, title: str) -> None:
    """Draws the named series of one group on one set of axes."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    xs_all: List[float] = []
    for n in names:
        s = series[n]
        ax.plot(s["x"], s["y"], marker="o", markersize=3, label=n)
        xs_all += [x for x in s["x"] if x > 0]
    first = series[names[0]]
    ax.set_xlabel(first["x_label"])
    ax.set_ylabel(first["y_label"])
    if xs_all and max(xs_all) / max(min(xs_all), 1e-12) > 200:
        ax.set_xscale("log", base=2)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(names) > 1:
        ax.legend(fontsize=8)
    _atomic_save(fig, path)
    plt.close(fig)


def heatmap(grid: List[List[float]], path: str, title: str, label: str) -> None:
    """A heat map of values on a torus plane (rows = y, columns = x)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 5))
    im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, label=label)
    _atomic_save(fig, path)
    plt.close(fig)
