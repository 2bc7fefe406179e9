"""One page of results: `index.html`, self-contained (styles inline, plots
embedded as PNG data), for `bgsim reproduce --out DIR` and `bgsim run --out
DIR`. A small script at the end of the page checks that every plot decoded
and says so in the page (`#render-check`), which the tests read back from a
headless browser."""

from __future__ import annotations

import base64
import html
import os
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from .api import write_atomic

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { display: inline-block; margin: 0.5em; } figure img { max-width: 34em; border: 1px solid #ddd; }
figcaption { font-size: 0.85em; color: #555; } pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; }
.files a { margin-right: 1em; } #render-check { color: #555; font-size: 0.85em; }
"""

_CHECK = """
<script>
window.addEventListener("load", function () {
  var imgs = document.querySelectorAll("img.plot"), ok = 0;
  imgs.forEach(function (im) {
    var good = im.complete && im.naturalWidth > 0;
    im.setAttribute("data-rendered", good ? "yes" : "no");
    if (good) { ok += 1; }
  });
  document.getElementById("render-check").textContent = ok + " of " + imgs.length + " plots rendered";
});
</script>
"""


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def table(head: Sequence[str], rows: Iterable[Sequence[object]], numeric: Sequence[bool] = ()) -> str:
    """An HTML table; cells are escaped unless they are `Raw`."""
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for row in rows:
        cells = []
        for i, v in enumerate(row):
            cls = ' class="num"' if i < len(numeric) and numeric[i] else ""
            cells.append(f"<td{cls}>{v if isinstance(v, Raw) else esc(_fmt(v))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out) + "</table>"


class Raw(str):
    """HTML that goes into a table cell as it is."""


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:,.6g}" if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v)


def plot(path: str, caption: str) -> str:
    """A PNG file embedded in the page (the page stands alone)."""
    with open(path, "rb") as f:
        data = base64.b64encode(f.read()).decode("ascii")
    name = esc(os.path.basename(path))
    return (f'<figure><img class="plot" alt="{name}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def links(files: Iterable[str]) -> str:
    """Links to the raw files beside the page."""
    return '<p class="files">Raw files: ' + " ".join(f'<a href="{esc(f)}">{esc(f)}</a>' for f in files) + "</p>"


def collectives(choices: Dict[str, Dict[str, int]]) -> str:
    """The collective choices of a run: operation, algorithm, calls."""
    if not choices:
        return "<p>No collective calls.</p>"
    rows = [(op, algo, n) for op, algos in sorted(choices.items()) for algo, n in sorted(algos.items())]
    return table(["operation", "algorithm", "calls"], rows, numeric=(False, False, True))


def machine(name: str, toml_text: str) -> str:
    return f"<details><summary>Machine <code>{esc(name)}</code> (TOML)</summary><pre>{esc(toml_text)}</pre></details>"


def page(title: str, body: List[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>\n"
            f"<h1>{esc(title)}</h1>\n" + "\n".join(body) +
            '\n<p id="render-check">plots not checked (scripts off)</p>\n' + _CHECK + "</body></html>\n")


def write(out_dir: str, title: str, body: List[str]) -> str:
    path = os.path.join(out_dir, "index.html")
    write_atomic(path, page(title, body))
    return path


def experiment_section(result: dict, setup: Sequence[str], notes: Sequence[str], pngs: Sequence[Tuple[str, str]],
                       choices: Dict[str, Dict[str, int]], published: Optional[List[tuple]], out_dir: str) -> List[str]:
    """One experiment of `bgsim reproduce`: what was run, its figures, the
    published ones beside them, its notes, plots, collective choices and
    raw files."""
    name = result["experiment"]
    body = [f'<h2 id="{esc(name)}">{esc(name)}</h2>',
            f"<p>Machine <code>{esc(result['machine'])}</code>, scale <code>{esc(result['scale'])}</code>, "
            f"wall time {result['wall_s']:.1f} s.</p>"]
    body += ["<ul>"] + [f"<li>{esc(s)}</li>" for s in setup] + ["</ul>"]
    body.append(table(["metric", "value"], result["metrics"].items(), numeric=(False, True)))
    if published:
        body.append(table(["published", "value", "model"], published, numeric=(False, True, True)))
    if notes:
        body += ["<ul>"] + [f"<li>{esc(n)}</li>" for n in notes] + ["</ul>"]
    body += [plot(os.path.join(out_dir, f), cap) for f, cap in pngs]
    if choices:
        body += ["<p>Collective algorithms, all runs of the experiment:</p>", collectives(choices)]
    body.append(links([f"{name}.json", f"{name}.md"] + [f for f, _ in pngs]))
    return body
