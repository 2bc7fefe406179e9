"""`bgsim reproduce`: runs experiments and writes their JSON, plots and reports."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import Dict, List, Optional

from . import _core, html, plots, progress
from .api import Machine, process_rank, write_atomic
from .errors import ModelError
from .experiments import Context, get, names
from .program import observe


def _finite(metrics: Dict[str, float], name: str) -> Dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool):
            v = int(v)
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ModelError(f"experiment {name}: metric {k} = {v!r} is not a finite number")
        out[k] = v
    return out


#: Key figures of the last runs, by experiment, for the summary table.
_KEYS: Dict[str, List[str]] = {}


def run_one(name: str, scale: str = "paper", seed: int = 1, quiet: bool = False,
            bar: Optional["progress.Suite"] = None, fidelity: str = "auto", threads: int = 1,
            partitions: Optional[int] = None) -> tuple:
    """Runs one experiment; returns (contract JSON object, Outcome)."""
    exp = get(name)
    # Under an MPI launcher the MPI programs run one partition per process.
    ctx = Context(scale=scale, seed=seed, quiet=quiet, name=name, fidelity=fidelity, threads=threads,
                  partitions=partitions, processes=_core.mpi_launched())
    ctx.bar = bar
    t0 = time.time()
    choices: Dict[str, Dict[str, int]] = {}

    def gather(r) -> None:
        for op, algos in r.collectives.items():
            mine = choices.setdefault(op, {})
            for algo, n in algos.items():
                mine[algo] = mine.get(algo, 0) + n
    with observe(gather):
        outcome = exp.run(ctx)
    outcome.collectives = choices
    wall = time.time() - t0
    ctx.log(f"done in {wall:.1f}s")
    _KEYS[name] = [k for k in outcome.key_metrics if k in outcome.metrics]
    result = {
        "experiment": name,
        "machine": exp.machine,
        "scale": scale,
        "metrics": _finite(outcome.metrics, name),
        "series": outcome.series,
        "wall_s": round(wall, 3),
    }
    return result, outcome


def write_outputs(result: dict, outcome, out_dir: str) -> List[str]:
    """Writes NAME.json, one PNG per series group (plus extra figures) and
    NAME.md; returns the PNGs' names."""
    os.makedirs(out_dir, exist_ok=True)
    name = result["experiment"]
    exp = get(name)
    write_atomic(os.path.join(out_dir, f"{name}.json"), json.dumps(result, indent=1) + "\n")
    pngs = []
    for group, members in outcome.groups.items():
        fn = f"{name}_{group}.png"
        plots.series_plot(result["series"], members, os.path.join(out_dir, fn), f"{name}: {group}")
        pngs.append(fn)
    for fig, draw in outcome.figures.items():
        fn = f"{name}_{fig}.png"
        draw(os.path.join(out_dir, fn))
        pngs.append(fn)
    md = [f"# {name}", "", exp.title, "", f"Machine `{result['machine']}`, scale `{result['scale']}`, "
          f"wall time {result['wall_s']:.1f} s.", "", "## What was run", ""]
    md += [f"- {s}" for s in outcome.setup]
    md += ["", "## Figures", "", "| metric | value |", "|---|---|"]
    md += [f"| `{k}` | {v:g} |" for k, v in result["metrics"].items()]
    if exp.published:
        md += ["", "## Published figures beside the model", "", "| published | value | model |", "|---|---|---|"]
        for label, (value, key) in exp.published.items():
            model = result["metrics"].get(key, "") if key else ""
            md.append(f"| {label} | {value:g} | {model} |")
    else:
        md += ["", f"`{exp.machine}.md` gives no published calibration figure for this study; every value above is predicted "
               "from the machine's mechanisms."]
    if outcome.notes:
        md += ["", "## Notes", ""] + [f"- {n}" for n in outcome.notes]
    md += ["", "## Plots", ""] + [f"![{p}]({p})" for p in pngs]
    write_atomic(os.path.join(out_dir, f"{name}.md"), "\n".join(md) + "\n")
    return pngs


def key_figures(result: dict, max_metrics: int = 12) -> str:
    """An experiment's key figures as `name=value, ...` (its first metrics
    when it names none), and how many metrics it has in all."""
    keys = _KEYS.get(result["experiment"]) or list(result["metrics"])[:max_metrics]
    shown = ", ".join(f"{k}={result['metrics'][k]:g}" for k in keys)
    if len(keys) < len(result["metrics"]):
        shown += f" (of {len(result['metrics'])} metrics)"
    return shown


def summary_table(results: List[dict], max_metrics: int = 12) -> str:
    lines = ["| experiment | wall s | key figures |", "|---|---|---|"]
    for r in results:
        lines.append(f"| {r['experiment']} | {r['wall_s']:.1f} | {key_figures(r, max_metrics)} |")
    return "\n".join(lines)


def _html_section(result: dict, outcome, pngs: List[str], out_dir: str) -> List[str]:
    """An experiment's part of index.html (its plots are read from out_dir)."""
    name = result["experiment"]
    exp = get(name)
    published = [(label, value, result["metrics"].get(key, "") if key else "")
                 for label, (value, key) in exp.published.items()]
    captions = [(p, p[len(name) + 1:-len(".png")].replace("_", " ")) for p in pngs]
    return html.experiment_section(result, outcome.setup, outcome.notes, captions, outcome.collectives,
                                   published or None, out_dir)


def write_index_html(out_dir: str, scale: str, seed: int, results: List[dict], sections: Dict[str, List[str]],
                     failed: List[str]) -> str:
    """index.html: the summary table (each experiment linked to its section),
    the machines' descriptions, then every experiment's section."""
    rows = []
    for r in results:
        rows.append((html.Raw(f'<a href="#{html.esc(r["experiment"])}">{html.esc(r["experiment"])}</a>'),
                     r["machine"], r["wall_s"], key_figures(r)))
    body = [f"<p>Scale <code>{html.esc(scale)}</code>, seed {seed}; {len(results)} experiments.</p>",
            html.table(["experiment", "machine", "wall s", "key figures"], rows, numeric=(False, False, True, False))]
    if failed:
        body.append("<p>Failed: " + ", ".join(html.esc(n) for n in failed) + "</p>")
    body.append("<h2>Machines</h2>")
    body += [html.machine(m, Machine(m).toml) for m in sorted({r["machine"] for r in results})]
    for r in results:
        body += sections.get(r["experiment"], [])
    return html.write(out_dir, "bgsim reproduce", body)


def _finish_one(result: dict, outcome, out_dir: Optional[str], as_json: bool, results: List[dict],
                sections: Dict[str, List[str]]) -> None:
    """Keeps an experiment's result and writes its files."""
    results.append(result)
    if out_dir:
        pngs = write_outputs(result, outcome, out_dir)
        sections[result["experiment"]] = _html_section(result, outcome, pngs, out_dir)
    if as_json:
        print(json.dumps(result))


def reproduce(target: str, scale: str, out_dir: Optional[str], seed: int, as_json: bool, fidelity: str = "auto",
              threads: int = 1, partitions: Optional[int] = None) -> int:
    todo = names() if target == "all" else [target]
    get(todo[0])  # unknown names fail before anything runs
    # Under an MPI launcher every process runs the suite (the torus
    # experiments' traffic and the MPI programs split among them, the rest
    # whole); process 0 writes and prints.
    lead = process_rank() == 0
    if not lead:
        out_dir, as_json = None, False
    results = []
    failed = []
    sections: Dict[str, List[str]] = {}
    bar = progress.Suite(len(todo)) if lead and target == "all" and progress.wanted(not as_json) else None
    try:
        for name in todo:
            if bar is not None:
                bar.start(name)
            try:
                result, outcome = run_one(name, scale, seed, quiet=not lead, bar=bar, fidelity=fidelity, threads=threads,
                                          partitions=partitions)
            except Exception as e:  # one failed experiment does not lose the others
                if target != "all":
                    raise
                msg = f"[{name}] FAILED: {e}"
                if lead:
                    bar.write(msg) if bar is not None else print(msg, file=sys.stderr)
                failed.append(name)
                continue
            finally:
                if bar is not None:
                    bar.done()
            _finish_one(result, outcome, out_dir, as_json, results, sections)
    finally:
        if bar is not None:
            bar.close()

    if out_dir and target == "all":
        idx = ["# bgsim reproduce", "", f"Scale `{scale}`, seed {seed}.", "", summary_table(results), "",
               "## Reports", ""] + [f"- [{r['experiment']}]({r['experiment']}.md)" for r in results]
        if failed:
            idx += ["", "## Failed", ""] + [f"- {n}" for n in failed]
        write_atomic(os.path.join(out_dir, "index.md"), "\n".join(idx) + "\n")
    if out_dir:
        write_index_html(out_dir, scale, seed, results, sections, failed)
    if lead and not as_json:
        print(summary_table(results))
        if out_dir:
            print(f"\nReports, JSON and plots in {out_dir} (index.html" + (", index.md)" if target == "all" else ")"))
    if failed:
        if lead:
            print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
