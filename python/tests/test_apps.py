"""The proxy applications of examples/traces/ (LULESH, CoMD, miniFE, HPCG,
recorded under Open MPI by scripts/record_apps.py) replay on BG/L and BG/P,
every message of the trace sent, and `bgsim reproduce apps` reports them."""

import copy
import json
import os

import pytest

import bgsim
from bgsim import apps
from bgsim import trace as bgtrace
from bgsim.trace.tracefile import blocking_collective
from conftest import run_cli

#: Kept small: the traces are test data (issue: at most 5 MB compressed in all).
MAX_BYTES = 5 * 1024 * 1024


def test_the_traces_are_there_and_small():
    sizes = [os.path.getsize(os.path.join(apps.TRACES, a.file)) for a in apps.APPS]
    assert len(sizes) == 4 and sum(sizes) <= MAX_BYTES


def _collectives_only(t):
    """The trace with only its communicators and collectives: what the
    collective algorithms send without the program's own messages."""
    keep = {"comm_dup", "comm_split", "comm_group", "comm_free", "finalize"}
    c = copy.copy(t)
    c.ranks = [[call for call in calls if call.name in keep or blocking_collective(call.name)] for calls in t.ranks]
    return c


def _sends(t, machine, shape, mode):
    r = bgsim.run(bgtrace.program(t), machine, shape=shape, mode=mode, nranks=t.nranks, memory_check=False)
    return sum(x["sends"] for x in r.ranks), r


@pytest.mark.parametrize("app", apps.APPS, ids=[a.name for a in apps.APPS])
@pytest.mark.parametrize("which", [1, 3], ids=["bgl-vn", "bgp-vn"])
def test_a_proxy_app_replays_every_message_of_its_trace(app, which):
    t = bgtrace.load(os.path.join(apps.TRACES, app.file))
    label, machine, shape, mode = apps.configs(t.nranks)[which]
    want = sum(m[0] for m in t.messages().values())
    assert want > 1000
    total, r = _sends(t, machine, shape, mode)
    coll, _ = _sends(_collectives_only(t), machine, shape, mode)
    # The program's point-to-point messages are exactly the trace's.
    assert total - coll == want
    assert r.time_s > 0 and r.counters["messages_completed"] == total


def test_reproduce_apps_writes_the_report(tmp_path):
    p = run_cli("reproduce", "apps", "--scale", "quick", "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "applications.md").read_text()
    res = json.loads((tmp_path / "apps.json").read_text())
    assert [r["app"] for r in res] == ["comd"]
    runs = res[0]["runs"]
    assert [r["config"] for r in runs] == ["BG/L coprocessor", "BG/L VN", "BG/P SMP", "BG/P VN"]
    for r in runs:
        parts = r["compute_us"] + r["communication_us"] + r["waiting_us"]
        assert r["compute_us"] > 0 and r["communication_us"] > 0
        assert parts == pytest.approx(r["time_us"], rel=0.2)  # the mean rank ends near the last
        assert r["calls"]["Comm.Sendrecv"]["calls"] == 8064
    mp = res[0]["mapping"]
    assert mp["hop_bytes_optimized"] <= mp["hop_bytes_xyzt"]
    assert "## CoMD" in text and "| BG/P VN | 4x2x2 |" in text and "Top MPI calls" in text


def test_bgsim_replay_reads_an_archive(tmp_path):
    out = tmp_path / "r.json"
    p = run_cli("replay", os.path.join(apps.TRACES, "comd-64.tar.xz"), "--shape", "4x4x2", "--mode", "vn",
                "--quiet", "--json", str(out))
    assert p.returncode == 0, p.stderr
    r = json.loads(out.read_text())
    assert r["nranks"] == 64 and r["counters"]["messages_completed"] >= 8064
    bad = tmp_path / "bad.tar.xz"
    bad.write_bytes(b"not an archive")
    p = run_cli("replay", str(bad), "--shape", "4x4x2")
    assert p.returncode == 2 and "neither a directory of rank-R.trace files nor a tar archive" in p.stderr
