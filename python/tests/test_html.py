"""index.html of `bgsim reproduce --out` and `bgsim run --out`, opened in
headless Chromium: every plot decodes and shows (the page's own check, read
back from the DOM), and a screenshot of the page is not blank."""

import os
import re
import shutil
import subprocess

import numpy as np

from conftest import ROOT, run_cli

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def browser(*args):
    assert CHROMIUM, "headless Chromium is needed (make test installs Debian's `chromium`)"
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                       capture_output=True, text=True, timeout=120)
    return p


def check_page(path, plots, tmp_path):
    html = open(path, encoding="utf-8").read()
    # Self-contained: every plot is inside the page.
    assert html.count('<img class="plot"') == plots and 'src="data:image/png;base64,' in html
    dom = browser("--virtual-time-budget=5000", "--dump-dom", f"file://{path}").stdout
    assert re.search(rf'id="render-check">{plots} of {plots} plots rendered<', dom), dom[-500:]
    assert dom.count('data-rendered="yes"') == plots
    shot = tmp_path / "shot.png"
    browser("--window-size=1200,1600", f"--screenshot={shot}", f"file://{path}")
    import matplotlib.image
    img = matplotlib.image.imread(str(shot))
    assert img.shape[0] == 1600 and img.shape[1] == 1200
    # Not a blank page: many distinct colours (plots, text, tables).
    assert len(np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 50


def test_reproduce_writes_a_page_with_every_plot(tmp_path):
    out = tmp_path / "res"
    p = run_cli("reproduce", "bgp-bcast", "--scale", "quick", "--out", str(out))
    assert p.returncode == 0, p.stderr
    pngs = [f for f in os.listdir(out) if f.endswith(".png")]
    assert len(pngs) == 4
    page = out / "index.html"
    text = page.read_text()
    for needed in ("bgp-bcast", "Machines", "Collective algorithms", "Split (allgather)", "bgp-bcast.json",
                   "world_us_512_16KB"):
        assert needed in text, needed
    check_page(str(page), len(pngs), tmp_path)


def test_run_writes_a_page_with_its_plots_and_raw_files(tmp_path):
    out = tmp_path / "run"
    p = run_cli("run", "--quiet", "--shape", "4x4x2", "--out", str(out), os.path.join(ROOT, "examples", "halo2d.py"),
                "32", "3")
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(out)) == ["index.html", "link_util.png", "links.csv", "ranks.csv", "result.json",
                                       "stalls.png"]
    text = (out / "index.html").read_text()
    for needed in ("halo2d.py 32 3", "Create_cart (allreduce)", 'href="ranks.csv"', "[torus]"):
        assert needed in text, needed
    assert len((out / "ranks.csv").read_text().splitlines()) == 33
    check_page(str(out / "index.html"), 2, tmp_path)
