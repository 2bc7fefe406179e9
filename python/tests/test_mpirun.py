"""Traffic runs on the processes of a real MPI job (`mpirun -n 2`): each
process runs one partition of the windowed engine, and the result is the
one a single process gives, field for field (make test builds bgsim with
MPI: `make build`)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

HOST = ("wall_s", "events_per_s", "hops_per_s", "sim_us_per_wall_s", "partitions", "threads", "packet_slots")


def launch(n, *args):
    """`bgsim ARGS` on `n` processes under a real mpirun, as it ended."""
    assert shutil.which("mpirun"), "a real MPI is needed (make test installs Debian's openmpi-bin)"
    cmd = ["mpirun", "-n", str(n), "--oversubscribe"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-run-as-root")
    return subprocess.run(cmd + [sys.executable, "-m", "bgsim.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def mpirun(n, *args):
    p = launch(n, *args)
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


#: MPI experiments whose programs then run one partition per process:
#: deposit-bit broadcasts among others, MPI_Comm_split, the coarse tier,
#: and machines of fewer nodes than processes (run whole on each).
MPI_EXPERIMENTS = ("mpi-bcast", "bgp-parallel-colls", "bgp-cartesian", "mpi-latency-hops")


@pytest.mark.parametrize("name", MPI_EXPERIMENTS)
def test_an_mpi_experiment_on_two_processes_has_the_golden_figures(tmp_path, name):
    from test_golden import GOLDEN, first_difference, strip
    mpirun(2, "reproduce", name, "--scale", "quick", "--out", str(tmp_path))
    two = strip(json.loads((tmp_path / f"{name}.json").read_text()))
    golden = json.loads((Path(GOLDEN) / "quick" / f"{name}.json").read_text())
    for k in ("metrics", "series"):
        assert first_difference(golden[k], two[k], k) is None
    assert golden["metrics"]


def test_threads_under_mpirun_are_refused():
    p = launch(2, "traffic", "--pattern", "uniform", "--shape", "4x4x4", "--measure", "100", "--threads", "2")
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


PROGRAM = """
import sys
from mpi4py import MPI
import numpy as np
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
x = c.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)
a = np.full(5000, r, dtype="d")
b = np.empty_like(a)
c.Sendrecv(a, dest=(r + 3) % n, recvbuf=b, source=(r - 3) % n)
st = MPI.Status()
if r % 2 == 0:
    c.send(("hi", r), dest=r + 1, tag=5)
else:
    c.probe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=st)
    c.recv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
c.Barrier()
s = c.allreduce(r)
t = c.alltoall([r * n + i for i in range(n)])
v = np.full(4, r, dtype="i8")
w = np.empty_like(v)
c.Allreduce(v, w, op=MPI.SUM)
g = c.bcast({"from": r} if r == 3 else None, root=3)
if r in (0, 17):
    # One write per line: the launcher forwards each process's output as
    # it comes, and two processes' buffered output may interleave mid-line.
    sys.stdout.write(f"rank {r} got {x} {b[0]} {s} {t[5]} {w[0]} {g} at {MPI.Wtime()}\\n")
    sys.stdout.flush()
"""
SOFTWARE = ("--coll", "barrier=dissemination", "--coll", "allreduce=recursive_doubling")
RUN_HOST = ("wall_s", "python_wall_s", "processes")


def same_on_two_processes(tmp_path, program, *args):
    """`bgsim run ARGS` of `program` (its text) under `mpirun -n 2` and on
    one process: the same JSON (host fields aside) and the same lines of
    output, in some order (each process prints its own ranks' lines).
    Returns both runs and both JSON documents."""
    prog = tmp_path / "prog.py"
    prog.write_text(program)
    two_json, one_json = tmp_path / "two.json", tmp_path / "one.json"
    two = mpirun(2, "run", *args, "--json", str(two_json), str(prog))
    one = run_cli("run", *args, "--json", str(one_json), str(prog), check=True)
    d2, d1 = json.loads(two_json.read_text()), json.loads(one_json.read_text())
    assert (d2["processes"], d1["processes"]) == (2, 1)
    assert {k: v for k, v in d2.items() if k not in RUN_HOST} == {k: v for k, v in d1.items() if k not in RUN_HOST}
    assert sorted(two.stdout.splitlines()) == sorted(one.stdout.splitlines())
    return two, one, d1


@pytest.mark.parametrize("coll", [SOFTWARE, (), ("--fidelity", "coarse")], ids=["software", "hardware", "coarse"])
def test_a_python_program_on_two_processes_is_the_program_on_one(tmp_path, coll):
    # () : the machine's own choices, the barrier and collective networks
    # among them (their contributions travel with the joins). The coarse
    # tier's packets go to the next partition with their heads.
    # Rank 0's and rank 17's lines come from different processes.
    two, one, d1 = same_on_two_processes(tmp_path, PROGRAM, "--shape", "4x4x2", *coll)
    assert "on 2 processes" in two.stderr and two.stderr.count("simulated time") == 1
    if coll != SOFTWARE:
        assert d1["counters"]["tree_operations"] > 0 and "gi" in d1["collectives"]["barrier"]
    assert d1["fidelity"] == ("coarse" if "coarse" in coll else "packet")


def test_a_deadlock_across_processes_is_reported_once_with_every_rank(tmp_path):
    prog = tmp_path / "dead.py"
    prog.write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\nr = c.Get_rank()\n"
                    "if r in (3, 28):\n    c.recv(source=(r + 1) % c.Get_size(), tag=9)\n")
    p = launch(2, "run", "--shape", "4x4x2", str(prog))
    assert p.returncode != 0
    assert p.stderr.count("deadlock: 2 rank(s)") == 1, p.stderr
    assert "rank 3:" in p.stderr and "rank 28:" in p.stderr


def test_a_failing_rank_ends_every_process(tmp_path):
    prog = tmp_path / "fail.py"
    prog.write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\nr = c.Get_rank()\n"
                    "if r == 20:\n    raise ValueError('rank twenty gives up')\nc.recv(source=20)\n")
    p = launch(2, "run", "--shape", "4x4x2", str(prog))
    assert p.returncode != 0
    assert "rank 20 failed" in p.stderr and "rank twenty gives up" in p.stderr


SPLIT = """
import sys
from mpi4py import MPI
w = MPI.COMM_WORLD
r = w.Get_rank()
half = w.Split(r % 2, -r)
quarter = half.Split(half.Get_rank() // 4, 0)
none = w.Split(MPI.UNDEFINED if r == 5 else 0, r)
node = w.Split_type(MPI.COMM_TYPE_SHARED)
s = quarter.allreduce(r)
half.Barrier()
if r in (0, 5, 17, 30):
    sys.stdout.write(f"rank {r}: half {half.Get_rank()}/{half.Get_size()} quarter {quarter.Get_rank()} sum {s} "
                     f"none {none == MPI.COMM_NULL} node {node.Get_size()} at {MPI.Wtime()}\\n")
    sys.stdout.flush()
"""


@pytest.mark.parametrize("coll", [SOFTWARE + ("--coll", "allgather=ring"), ()], ids=["software", "hardware"])
def test_comm_split_on_two_processes_is_comm_split_on_one(tmp_path, coll):
    # The ranks' (color, key) records travel in the allgather's messages
    # (on one process they go into one shared table): the same groups,
    # times and figures.
    _, one, _ = same_on_two_processes(tmp_path, SPLIT, "--shape", "4x4x2", "--mode", "vn", "--machine", "bgp", *coll)
    assert "rank 5: half 61/64 quarter 1 sum" in one.stdout and "none True node 4" in one.stdout
    assert ("Split (allgather): ring" if coll else "Split (allgather): tree") in one.stderr


DEPOSIT = """
import sys
from mpi4py import MPI
from bgsim.runtime import compute
w = MPI.COMM_WORLD
r = w.Get_rank()
got = []
for root in (0, 21, 30, 5):
    compute(seconds=1e-7 * ((r * 7 + root) % 11))
    got.append(w.bcast(bytes(range(256)) * (3 + root) if r == root else None, root=root)[-7:].hex())
sub = w.Dup()
got.append(sub.bcast({"from": r} if r == 9 else None, root=9)["from"])
if r in (0, 5, 17, 31):
    sys.stdout.write(f"rank {r} got {got} at {MPI.Wtime()}\\n")
    sys.stdout.flush()
"""


def test_deposit_bit_broadcasts_on_two_processes_are_the_broadcasts_on_one(tmp_path):
    # Line packets that nodes of the other process forward before their
    # ranks join, from several roots, on two communicators; the root's data
    # goes with its join to the other process.
    _, one, d1 = same_on_two_processes(tmp_path, DEPOSIT, "--shape", "4x4x2", "--coll", "bcast=torus_deposit")
    assert d1["collectives"]["bcast"] == {"torus_deposit": 5}
    assert "rank 17 got ['f9fafbfcfdfeff'" in one.stdout and ", 9] at" in one.stdout


RECTANGLE = """
import sys
import numpy as np
from mpi4py import MPI
from bgsim.runtime import compute
w = MPI.COMM_WORLD
r, n = w.Get_rank(), w.Get_size()
sub = w.Split(r // (n // 4), -r)
compute(seconds=1e-7 * ((r * 7) % 11))
x = np.arange(300, dtype="i8") * (sub.Get_rank() + 1) + r
y = np.empty_like(x)
sub.Allreduce(x, y, op=MPI.SUM)
if r in (0, 5, 17, 31, 100):
    sys.stdout.write(f"rank {r} got {y[:3].tolist()} {y[-1]} at {MPI.Wtime()}\\n")
    sys.stdout.flush()
"""


def test_torus_allreduces_on_two_processes_are_the_allreduces_on_one(tmp_path):
    # BG/P's torus allreduce on the quarters of a VN partition: partial sums
    # cross to the other process, each rank's contribution goes with its
    # join, and every process combines the same contributions.
    _, one, d1 = same_on_two_processes(tmp_path, RECTANGLE, "--machine", "bgp", "--shape", "4x4x2", "--mode", "vn")
    assert d1["collectives"]["allreduce"] == {"torus_rectangle": 4}
    # Rank 5 is in the first quarter (ranks 0-31): sum of 1..32 times i, plus the ranks' sum.
    assert "rank 5 got [496, 1024, 1552] 158368 at" in one.stdout


def test_a_timeline_on_two_processes_is_the_timeline_on_one(tmp_path):
    # Each process times its own ranks' calls and samples its own nodes
    # (0 and 31 are in different processes); process 0 writes the file.
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    args = ("run", "--quiet", "--shape", "4x4x2", *SOFTWARE, "--timeline-ranks", "0-2,16-18", "--timeline-nodes", "0,31")
    mpirun(2, *args, "--timeline", str(tmp_path / "two.json"), str(prog))
    run_cli(*args, "--timeline", str(tmp_path / "one.json"), str(prog), check=True)
    two, one = (tmp_path / "two.json").read_text(), (tmp_path / "one.json").read_text()
    assert two == one
    trace = json.loads(one)
    assert {e["tid"] for e in trace["traceEvents"] if e["ph"] == "X"} == {0, 1, 2, 16, 17, 18}
    assert {e["name"] for e in trace["traceEvents"] if e["ph"] == "C"} >= {"node 31 injection FIFO bytes"}
    assert trace["otherData"]["messages_shown"] > 0
