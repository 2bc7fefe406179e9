"""Traces in: a C MPI program run for real under Open MPI with bgsim's PMPI
recorder (`bgsim record`), then replayed on the simulated machine (`bgsim
replay`): the replay sends the messages the real run sent."""

import csv
import json
import os
import shutil
import subprocess

import pytest

from bgsim import trace as bgtrace
from conftest import run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "data", "ring_halo_allreduce.c")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    assert shutil.which("mpicc") and shutil.which("mpirun"), \
        "a real MPI is needed (make test installs Debian's libopenmpi-dev and openmpi-bin)"
    d = tmp_path_factory.mktemp("trace")
    exe = d / "prog"
    subprocess.run(["mpicc", "-O2", "-o", str(exe), PROGRAM], check=True)
    p = run_cli("record", "--out", str(d / "t"), "-n", "4", "--", str(exe))
    assert p.returncode == 0, p.stderr
    assert "sum 6" in p.stdout  # the real run ran
    return d / "t"


def test_the_recorder_writes_every_call_of_every_rank(recorded):
    t = bgtrace.load(str(recorded))
    assert t.nranks == 4
    names = [c.name for c in t.ranks[1]]
    assert names == ["recv", "send", "irecv", "irecv", "isend", "isend", "waitall", "allreduce", "barrier", "finalize"]
    allreduce = t.ranks[1][7]
    assert allreduce.args == [8] and allreduce.dtype == "f8" and allreduce.op == "sum"
    # Ring: 80 bytes to the right; halo: 4 KB each way.
    assert t.messages()[(1, 2)] == [2, 80 + 4096] and t.messages()[(1, 0)] == [1, 4096]


@pytest.mark.parametrize("machine,shape,mode", [("bgl", "2x2x1", "coprocessor"), ("bgp", "1x1x1", "vn")])
def test_the_replay_sends_the_recorded_messages(recorded, tmp_path, machine, shape, mode):
    tm, res = tmp_path / "tm.csv", tmp_path / "r.json"
    p = run_cli("replay", str(recorded), "--machine", machine, "--shape", shape, "--mode", mode,
                "--traffic-matrix", str(tm), "--json", str(res), "--timeline", str(tmp_path / "tl.json"))
    assert p.returncode == 0, p.stderr
    want = {k: v[1] for k, v in bgtrace.load(str(recorded)).messages().items()}
    got = {(int(r["source"]), int(r["destination"])): int(r["bytes"]) for r in csv.DictReader(open(tm))}
    if machine == "bgl":
        # On the whole partition the allreduce and the barrier use the tree and
        # the GI network: the point-to-point messages are the program's own.
        assert got == want
    else:
        # VN mode on one node: collectives go point to point too; the program's
        # messages are all there.
        assert all(got.get(k, 0) >= v for k, v in want.items())
    r = json.loads(res.read_text())
    assert r["nranks"] == 4 and r["time_s"] > 0
    if machine == "bgl":
        assert r["counters"]["messages_completed"] == 12 and r["collectives"] == {"allreduce": {"tree": 1},
                                                                                  "barrier": {"gi": 1}}
    names = {e["name"] for e in json.load(open(tmp_path / "tl.json"))["traceEvents"] if e["ph"] == "X"}
    assert {"Comm.Recv", "Comm.Send", "Request.Waitall", "Comm.Allreduce"} <= names


def test_recorded_compute_is_scaled(recorded):
    import bgsim
    t = bgtrace.load(str(recorded))
    fast = bgsim.run(bgtrace.program(t, 0.0), "bgl", shape="2x2x1")
    slow = bgsim.run(bgtrace.program(t, 1000.0), "bgl", shape="2x2x1")
    gaps = [sum(max(b.t0 - a.t1, 0) for a, b in zip(calls, calls[1:])) for calls in t.ranks]
    # Every rank computes its own gaps; the critical path may chain gaps of
    # several ranks (one computes, then sends to one that then computes),
    # but never more than all of them.
    added = slow.time_s - fast.time_s
    assert 1000 * max(gaps) * 0.99 <= added <= 1000 * sum(gaps) * 1.01


def test_a_trace_the_replay_cannot_do_is_refused_naming_the_line(recorded, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(recorded, bad)
    lines = (bad / "rank-2.trace").read_text().splitlines()
    lines.insert(3, "0.1 0.2 unsupported MPI_Waitany")
    (bad / "rank-2.trace").write_text("\n".join(lines) + "\n")
    p = run_cli("replay", str(bad), "--shape", "2x2x1")
    assert p.returncode == 2 and "rank-2.trace:4: the program called MPI_Waitany" in p.stderr
    shutil.rmtree(bad)
    shutil.copytree(recorded, bad)
    os.remove(bad / "rank-3.trace")
    p = run_cli("replay", str(bad), "--shape", "2x2x1")
    assert p.returncode == 2 and "rank-3.trace is missing (the trace has 4 ranks)" in p.stderr
    p = run_cli("replay", str(tmp_path / "nothing"), "--shape", "2x2x1")
    assert p.returncode == 2 and "not a directory" in p.stderr
