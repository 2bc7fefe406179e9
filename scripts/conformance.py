"""mpi4py's own test suite on the simulated MPI: `make conformance`.

Runs the 16 MPI-1 core modules, the 3 one-sided ones (rma, rma_nb, win),
7 more (p2p_buf_matched, p2p_obj_matched, request, pickle, address,
mpimem, comm_inter) and the 10 of nonblocking, persistent, neighbourhood
and intercommunicator collectives (cco_nb_buf, cco_nb_vec, cco_pr_buf,
cco_pr_vec, cco_ngh_buf, cco_ngh_obj, cco_pr_ngh_buf, cco_buf_inter,
cco_obj_inter, cco_vec_inter), and errorcode and grequest (user error
classes, generalized requests) of mpi4py 4.1.2's test suite, unmodified
(`test/main.py -i '^test_MODULE.py$'`, the suite's own skip conditions
included), under `bgsim run` at 2 ranks (2x1x1) and at 4 ranks (2x2x1) of
a BG/L, and prints per module and in all how many tests pass, by
unittest's count (a failing subtest counts once each) and counting the
tests that are not skipped. It exits 1 when a total falls below the floor
kept in `scripts/conformance-floor.json` (raise the floor as conformance
improves), so `make test`, which runs it, fails on a regression. Then it
runs mpi4py's demos (`DEMOS`: one-sided, init-fini's mpi4py.rc runs,
reductions, sequential, threads, mpi-ref-v1, compute-pi, helloworld) and
fails if one does not exit 0 or, for cpi-rma, does not print the value its
own formula gives.

The suite is not part of bgsim: it is taken from mpi4py's source
distribution on PyPI (pinned by version and SHA-256,
`scripts/mpi4py_sdist.py`, as `scripts/bench_osu.py` takes its demo) into
.bench-cache/. Each rank
writes unittest-xml-reporting's XML report; this script reads rank 0's.

    python3 scripts/conformance.py [--json] [--module NAME ...] [--ranks 2|4 ...] [--jobs N]

The modules of a rank count run two at a time (`--jobs`), each in its own
process; the demos one after another.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

from mpi4py_sdist import CACHE, TOP, sdist

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLOOR = os.path.join(ROOT, "scripts", "conformance-floor.json")

#: The MPI-1 core of the suite: point-to-point, collectives, communicators,
#: groups, topologies, datatypes, ops, status, attributes, errors; one-sided
#: communication (windows, RMA operations and synchronization); matched
#: probes, requests, pickling of handles, addresses and memory;
#: intercommunicators; nonblocking, persistent, neighbourhood and
#: intercommunicator collectives; user error classes; generalized requests.
MODULES = ["attributes", "cco_buf", "cco_obj", "cco_vec", "comm", "comm_topo", "datatype", "environ",
           "errhandler", "exceptions", "group", "msgspec", "op", "p2p_buf", "p2p_obj", "status",
           "rma", "rma_nb", "win",
           "p2p_buf_matched", "p2p_obj_matched", "request", "pickle", "address", "mpimem", "comm_inter",
           "cco_nb_buf", "cco_nb_vec", "cco_pr_buf", "cco_pr_vec", "cco_ngh_buf", "cco_ngh_obj", "cco_pr_ngh_buf",
           "cco_buf_inter", "cco_obj_inter", "cco_vec_inter", "errorcode", "grequest"]

#: ranks -> partition shape
SHAPES = {2: "2x1x1", 4: "2x2x1"}


def suite() -> str:
    """The suite's test directory, fetched and checked once."""
    testdir = os.path.join(CACHE, "mpi4py-4.1.2-test")
    if os.path.exists(os.path.join(testdir, "main.py")):
        return testdir
    archive = sdist()  # makes the cache directory on a fresh checkout
    tmp = tempfile.mkdtemp(dir=CACHE)
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if m.name.startswith(TOP + "test/") and m.isfile():
                m.name = m.name[len(TOP + "test/"):]
                t.extract(m, tmp, filter="data")
    os.replace(tmp, testdir)
    return testdir


def counts(xml_dir: str) -> dict:
    """Rank 0's results from its XML reports, by test method (a method
    whose subtests fail is one failed test): tests, skipped, failed
    (failures and errors), passed, and the failing methods' names."""
    status: dict = {}
    for name in sorted(os.listdir(xml_dir)):
        if not name.endswith("-0.xml"):
            continue
        for case in ET.parse(os.path.join(xml_dir, name)).getroot().iter("testcase"):
            # A subtest's entry is named "method (its parameters)".
            test = f"{case.get('classname')}.{case.get('name').split(' (', 1)[0]}"
            if case.find("failure") is not None or case.find("error") is not None:
                status[test] = "failed"
            elif case.find("skipped") is not None:
                status.setdefault(test, "skipped")
            else:
                status.setdefault(test, "passed")
    c = {k: sum(1 for v in status.values() if v == k) for k in ("passed", "skipped", "failed")}
    c["tests"] = len(status)
    c["failing"] = sorted(t for t, v in status.items() if v == "failed")
    return c


def run_module(testdir: str, module: str, ranks: int) -> dict:
    bgsim = os.path.join(ROOT, ".venv", "bin", "bgsim")
    with tempfile.TemporaryDirectory() as xml_dir:
        cmd = [bgsim, "run", "--quiet", "--machine", "bgl", "--shape", SHAPES[ranks], "-n", str(ranks),
               "--no-memory-check", os.path.join(testdir, "main.py"), "-q", "--xml", xml_dir,
               "-i", f"^test_{module}.py$"]
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=testdir, timeout=1800)
        c = counts(xml_dir)
        if c["tests"] == 0:
            c["error"] = (p.stderr.strip().splitlines() or ["no report"])[-1]
        return c


#: The init-fini demo's runs (its run.sh): mpi4py.rc options one at a time,
#: then its programs.
_INIT_FINI = [("init-fini/test_0.py", (opt,)) for opt in (
    "threads=true", "threads=false", "thread_level=single", "thread_level=funneled", "thread_level=serialized",
    "thread_level=multiple", "fast_reduce=true", "fast_reduce=false", "recv_mprobe=true", "recv_mprobe=false",
    "irecv_bufsz=0", "irecv_bufsz=1", "irecv_bufsz=1024", "errors=default", "errors=exception", "errors=abort",
    "errors=fatal")] + [(f"init-fini/{t}.py", ()) for t in
                        ("test_1", "test_2", "test_3", "test_4", "test_5", "test_6", "test_mpi40")]
_MPI_REF = [f"mpi-ref-v1/ex-{n}.py" for n in (
    "2.01", "2.08", "2.16", "2.29", "2.32", "2.34", "2.35", "3.01", "3.02", "3.03", "3.04", "3.05", "3.06", "3.07",
    "3.08", "3.09", "3.11", "3.12", "3.13")]

#: mpi4py's demos: (file under demo/, arguments, ranks, machine, shape,
#: standard input). Each must exit 0 (most check themselves: the nxtval
#: demos their counters, init-fini what mpi4py.rc asked for, reductions
#: and sequential their unittest suites); cpi-rma must print what its own
#: formula gives. threads/sendrecv.py exits 0 saying the thread level is
#: too low: bgsim honours MPI_THREAD_FUNNELED.
DEMOS = ([("compute-pi/cpi-rma.py", (), 4, "bgl", "2x2x1", "100\n0\n"),
          ("compute-pi/cpi-cco.py", (), 4, "bgl", "2x2x1", "100\n0\n"),
          ("nxtval/nxtval-onesided.py", (), 5, "bgp", "2x2x1", ""),
          ("nxtval/nxtval-mpi3.py", (), 5, "bgp", "2x2x1", ""),
          ("nxtval/nxtval-scalable.py", (), 5, "bgl", "2x2x2", ""),
          ("helloworld.py", (), 4, "bgl", "2x2x1", ""),
          ("reductions/test_reductions.py", ("-q",), 4, "bgl", "2x2x1", ""),
          ("sequential/test_seq.py", (), 4, "bgl", "2x2x1", ""),
          ("threads/sendrecv.py", (), 2, "bgl", "2x1x1", "")]
         + [(f, args, 2, "bgl", "2x1x1", "") for f, args in _INIT_FINI]
         + [(f, (), 4, "bgl", "2x2x1", "") for f in _MPI_REF])

#: What of the source distribution's demo/ the demos need.
_DEMO_FILES = ("compute-pi/", "nxtval/", "helloworld.py", "reductions/", "sequential/", "threads/", "init-fini/",
               "mpi-ref-v1/")


def demo_dir() -> str:
    """The demos of `DEMOS`, from the same source distribution."""
    d = os.path.join(CACHE, "mpi4py-4.1.2-demo")
    if all(os.path.exists(os.path.join(d, f)) for f, *_ in DEMOS):
        return d
    archive = sdist()
    tmp = tempfile.mkdtemp(dir=CACHE)
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            name = m.name[len(TOP + "demo/"):]
            if m.isfile() and m.name.startswith(TOP + "demo/") and name.startswith(_DEMO_FILES):
                m.name = name
                t.extract(m, tmp, filter="data")
    if os.path.exists(d):
        import shutil
        shutil.rmtree(d)
    os.replace(tmp, d)
    return d


def cpi_expected(n: int, nprocs: int) -> str:
    """cpi-rma's line for `n` intervals: its ranks' partial sums, added up."""
    h = 1.0 / n
    pi = 0.0
    for rank in range(nprocs):
        s = 0.0
        for i in range(rank + 1, n + 1, nprocs):
            x = h * (i - 0.5)
            s += 4.0 / (1.0 + x**2)
        pi += s * h
    import math
    return "pi is approximately %.16f, error is %.16f" % (pi, abs(pi - math.pi))


def run_demos() -> list:
    """Runs `DEMOS`; returns the failures, each with why."""
    d = demo_dir()
    bgsim = os.path.join(ROOT, ".venv", "bin", "bgsim")
    failed = []
    for f, args, ranks, machine, shape, stdin in DEMOS:
        cmd = [bgsim, "run", "--quiet", "--machine", machine, "--shape", shape, "-n", str(ranks), os.path.join(d, f),
               *args]
        # Each runs in its own directory, as its makefile runs it (reductions
        # and sequential import their modules from there).
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=os.path.join(d, os.path.dirname(f)),
                           timeout=600)
        why = None
        if p.returncode != 0:
            why = f"exit status {p.returncode}: " + ((p.stderr.strip().splitlines() or [""])[-1])
        elif f.endswith("cpi-rma.py") and cpi_expected(100, ranks) not in p.stdout:
            why = f"expected {cpi_expected(100, ranks)!r}, got {p.stdout.strip()!r}"
        shown = " ".join((f, *args))
        print(f"  demo {shown} ({ranks} ranks, {machine} {shape}): {'ok' if why is None else 'FAILED: ' + why}")
        if why is not None:
            failed.append(f"demo {shown}: {why}")
    return failed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    ap.add_argument("--ranks", action="append", type=int, choices=sorted(SHAPES), help="only this rank count")
    ap.add_argument("--json", action="store_true", help="print the counts as one JSON object")
    ap.add_argument("--no-floor", action="store_true", help="report only; do not compare with the floor")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="modules run at once, each its own process (default: 2, or 1 on one core)")
    a = ap.parse_args()
    import importlib.util
    if importlib.util.find_spec("xmlrunner") is None:
        print("conformance: the suite's reports need unittest-xml-reporting in this Python "
              "(pip install 'unittest-xml-reporting>=3'; `make conformance` installs it)", file=sys.stderr)
        return 2
    testdir = suite()
    modules = a.module or MODULES
    out: dict = {}
    failed_floor = []
    floor = json.load(open(FLOOR)) if os.path.exists(FLOOR) and not a.no_floor else {}
    for ranks in a.ranks or sorted(SHAPES):
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            per = dict(zip(modules, pool.map(lambda m: run_module(testdir, m, ranks), modules)))
        total = {k: sum(c[k] for c in per.values()) for k in ("tests", "skipped", "failed", "passed")}
        out[str(ranks)] = {"modules": per, "total": total, "wall_s": round(time.time() - t0, 1)}
        if not a.json:
            print(f"mpi4py 4.1.2 test suite, {ranks} ranks ({SHAPES[ranks]} BG/L):")
            print(f"  {'module':<16} {'passed':>6} {'of run':>6} {'of all':>6}")
            for m, c in per.items():
                note = f"  ({c['error']})" if "error" in c else ""
                print(f"  {m:<16} {c['passed']:>6} {c['tests'] - c['skipped']:>6} {c['tests']:>6}{note}")
            print(f"  {'all':<16} {total['passed']:>6} {total['tests'] - total['skipped']:>6} {total['tests']:>6}"
                  f"   ({out[str(ranks)]['wall_s']} s)")
        want = floor.get(str(ranks))
        if want is not None and not a.module and total["passed"] < want:
            failed_floor.append(f"{ranks} ranks: {total['passed']} passed, below the floor of {want}")
    if a.json:
        print(json.dumps(out, indent=1))
    elif not a.module:
        print(f"mpi4py 4.1.2 demos ({len(DEMOS)} runs):")
        failed_floor += run_demos()
    for f in failed_floor:
        print(f"conformance: {f} ({os.path.relpath(FLOOR, ROOT)})", file=sys.stderr)
    return 1 if failed_floor else 0


if __name__ == "__main__":
    sys.exit(main())
