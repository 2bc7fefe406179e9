"""Traffic runs on the processes of a real MPI job (`mpirun -n 2`): each
process runs one partition of the windowed engine, and the result is the
one a single process gives, field for field (make test builds bgsim with
MPI: `make build-mpi`)."""

import json
import os
import shutil
import subprocess
import sys

from conftest import ROOT, run_cli

HOST = ("wall_s", "events_per_s", "hops_per_s", "sim_us_per_wall_s", "partitions", "threads", "packet_slots")


def mpirun(n, *args):
    assert shutil.which("mpirun"), "a real MPI is needed (make test installs Debian's openmpi-bin)"
    cmd = ["mpirun", "-n", str(n), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    p = subprocess.run(cmd + [sys.executable, "-m", "bgsim.cli", *args], capture_output=True, text=True, cwd=ROOT,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    return p


def without_host(d):
    for k in HOST:
        d["engine"].pop(k)
    return d


def test_traffic_on_two_processes_is_the_traffic_on_one():
    args = ("traffic", "--pattern", "hot_region", "--shape", "4x4x4", "--load", "0.9", "--measure", "3000", "--json",
            "--quiet")
    two = json.loads(mpirun(2, *args).stdout)  # one JSON document: process 0 prints
    assert (two["engine"]["partitions"], two["engine"]["threads"]) == (2, 1)
    one = json.loads(run_cli(*args, check=True).stdout)
    assert without_host(two) == without_host(one)


def test_a_torus_experiment_on_two_processes_has_the_same_figures(tmp_path):
    out = tmp_path / "two"
    mpirun(2, "reproduce", "torus-hot-region", "--scale", "quick", "--out", str(out))
    two = json.loads((out / "torus-hot-region.json").read_text())
    one = json.loads(run_cli("reproduce", "torus-hot-region", "--scale", "quick", "--json", check=True).stdout)
    assert two["metrics"] == one["metrics"] and two["series"] == one["series"]


def test_threads_under_mpirun_are_refused():
    cmd = ["mpirun", "-n", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    p = subprocess.run(cmd + [sys.executable, "-m", "bgsim.cli", "traffic", "--pattern", "uniform", "--shape", "4x4x4",
                              "--measure", "100", "--threads", "2"], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode != 0 and "one partition on one thread" in p.stderr


HALO = """
import json, bgsim
from bgsim import skeleton
r = skeleton.halo_in_core((8, 8), {nbytes}, 2, "bgp", shape="4x2x2", mode="vn")
if bgsim.api.process_rank() == 0:
    print(json.dumps({{k: r[k] for k in ("ranks", "messages", "simulated_s", "events")}}))
"""


def test_a_core_driven_halo_on_two_processes_is_the_halo_on_one():
    # Each process runs the ranks of its own partition; one-packet, eager
    # and rendezvous messages, some between two tasks of a node.
    from bgsim import skeleton
    for nbytes in (64, 3000, 20000):
        cmd = ["mpirun", "-n", "2", "--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        p = subprocess.run(cmd + [sys.executable, "-c", HALO.format(nbytes=nbytes)], capture_output=True, text=True,
                           cwd=ROOT, timeout=600)
        assert p.returncode == 0, p.stderr
        two = json.loads(p.stdout)
        one = skeleton.halo_in_core((8, 8), nbytes, 2, "bgp", shape="4x2x2", mode="vn")
        assert two == {k: one[k] for k in two}, nbytes
