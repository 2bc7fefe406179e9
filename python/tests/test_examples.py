"""The example programs, run as their README says, give their expected output;
`bgsim run` reports errors the way users need."""

import os
import re

import pytest

from conftest import ROOT, run_cli

EXAMPLES = re.findall(r"`bgsim run (--quiet [^`]*?examples/(\w+)\.py[^`]*)`", open(os.path.join(ROOT, "examples", "README.md")).read())


def test_every_example_is_listed():
    listed = {name for _, name in EXAMPLES}
    present = {f[:-3] for f in os.listdir(os.path.join(ROOT, "examples")) if f.endswith(".py")}
    assert listed == present and len(listed) >= 4


@pytest.mark.parametrize("args,name", EXAMPLES, ids=[n for _, n in EXAMPLES])
def test_example_output(args, name):
    p = run_cli("run", *args.split(), check=True)
    with open(os.path.join(ROOT, "examples", "expected", f"{name}.out")) as f:
        assert p.stdout == f.read()


def test_run_summary_json_and_program_arguments(tmp_path):
    out = tmp_path / "r.json"
    p = run_cli("run", "--shape", "2x2x2", "--json", str(out), "examples/pi.py", "1000", check=True)
    assert "8 ranks, 1000 intervals" in p.stdout
    assert "bgsim: 8 ranks on 2x2x2 (coprocessor): simulated time" in p.stderr
    import json
    d = json.loads(out.read_text())
    assert d["nranks"] == 8 and len(d["ranks"]) == 8 and d["counters"]["messages_completed"] > 0


def test_run_errors(tmp_path):
    p = run_cli("run", "nonexistent.py")
    assert p.returncode == 2 and "program `nonexistent.py` not found" in p.stderr
    p = run_cli("run", "--map", "QXYZ", "examples/ring.py")
    assert p.returncode == 2 and "mapping `QXYZ`" in p.stderr
    p = run_cli("run", "--shape", "2x2x2", "-n", "9", "examples/ring.py")
    assert p.returncode == 2 and "9 ranks do not fit" in p.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("from mpi4py import MPI\nif MPI.COMM_WORLD.rank == 1:\n    raise ValueError('bad input 42')\n")
    p = run_cli("run", "--shape", "2x1x1", str(bad))
    assert p.returncode == 1 and "rank 1 failed" in p.stderr and "ValueError: bad input 42" in p.stderr
    assert "bad.py\", line 3" in p.stderr
    dl = tmp_path / "dl.py"
    dl.write_text("from mpi4py import MPI\nMPI.COMM_WORLD.recv(source=0)\n")
    p = run_cli("run", "--shape", "2x1x1", str(dl))
    assert p.returncode == 1 and "deadlock: 2 rank(s) are blocked" in p.stderr
    assert "rank 0: in MPI.Comm.recv(source=0, tag=-1) at dl.py:2" in p.stderr
    p = run_cli("run", "--mode", "smp", "examples/ring.py")
    assert p.returncode == 2 and "partition.mode" in p.stderr


def test_run_coll_option_is_recorded():
    p = run_cli("run", "--shape", "2x2x2", "--coll", "bcast=binomial", "--coll", "barrier=dissemination",
                "examples/pi.py", "1000", check=True)
    assert "bgsim: collectives: bcast: binomial x1; reduce: binomial x1" in p.stderr
    p = run_cli("run", "--shape", "2x2x2", "--coll", "bcast=quickest", "examples/pi.py")
    assert p.returncode == 2 and "collectives.bcast" in p.stderr and "one of auto, generic" in p.stderr
