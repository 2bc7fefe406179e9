"""Traces in: a C MPI program run for real under Open MPI with bgsim's PMPI
recorder (`bgsim record`), then replayed on the simulated machine (`bgsim
replay`): the replay sends the messages the real run sent."""

import csv
import re
import json
import os
import shutil
import subprocess

import pytest

from bgsim import trace as bgtrace
from bgsim.errors import UsageError
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
    assert t.nranks == 4 and t.clock == "cpu"
    names = [c.name for c in t.ranks[1]]
    assert names == ["recv", "send", "irecv", "irecv", "isend", "isend", "waitall", "allreduce", "barrier", "finalize"]
    allreduce = t.ranks[1][7]
    assert allreduce.a == {"bytes": 8, "comm": 0} and allreduce.dtype == "f8" and allreduce.op == "sum"
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
    gaps = [calls[0].t0 + sum(max(b.t0 - a.t1, 0) for a, b in zip(calls, calls[1:])) for calls in t.ranks]
    # Every rank computes its own gaps; the critical path may chain gaps of
    # several ranks (one computes, then sends to one that then computes),
    # but never more than all of them.
    added = slow.time_s - fast.time_s
    assert 1000 * max(gaps) * 0.99 <= added <= 1000 * sum(gaps) * 1.01


def test_a_trace_the_replay_cannot_do_is_refused_naming_the_line(recorded, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(recorded, bad)
    lines = (bad / "rank-2.trace").read_text().splitlines()
    lines.insert(3, "0.1 0.2 unsupported MPI_Intercomm_create (intercommunicators)")
    (bad / "rank-2.trace").write_text("\n".join(lines) + "\n")
    p = run_cli("replay", str(bad), "--shape", "2x2x1")
    assert p.returncode == 2 and "rank-2.trace:4: the program called MPI_Intercomm_create" in p.stderr
    shutil.rmtree(bad)
    shutil.copytree(recorded, bad)
    os.remove(bad / "rank-3.trace")
    p = run_cli("replay", str(bad), "--shape", "2x2x1")
    assert p.returncode == 2 and "rank-3.trace is missing (the trace has 4 ranks)" in p.stderr
    p = run_cli("replay", str(tmp_path / "nothing"), "--shape", "2x2x1")
    assert p.returncode == 2 and "not a directory" in p.stderr


# -- what real codes call: communicators, wildcards, any/some, persistent,
# -- send modes, v-collectives (tests/data/real_mpi.c) --------------------

REAL = os.path.join(HERE, "data", "real_mpi.c")


def _recorded(tmp_path_factory, source, printed):
    """`source` built with mpicc and recorded at 4 ranks; its output
    must hold `printed` (the real run ran)."""
    d = tmp_path_factory.mktemp("rec")
    exe = d / "prog"
    subprocess.run(["mpicc", "-O2", "-o", str(exe), source], check=True)
    p = run_cli("record", "--out", str(d / "t"), "-n", "4", "--", str(exe))
    assert p.returncode == 0, p.stderr
    assert printed in p.stdout
    return d / "t"


def _refuses(trace, tmp_path, old, new, why):
    """rank-0.trace of `trace` with its line `old` replaced by `new` is
    refused at load time, naming that file and line and saying `why`."""
    text0 = (trace / "rank-0.trace").read_text()
    bad = tmp_path / "bad"
    shutil.rmtree(bad, ignore_errors=True)
    shutil.copytree(trace, bad)
    (bad / "rank-0.trace").write_text(text0.replace(old, new, 1))
    lineno = text0.splitlines().index(old) + 1
    with pytest.raises(UsageError, match=re.escape(f"rank-0.trace:{lineno}: ") + ".*" + re.escape(why)):
        bgtrace.load(str(bad))


def _otf2_refuses(trace, tmp_path, why):
    """Writing `trace` as OTF2 is refused (`why`) before anything is written."""
    pytest.importorskip("otf2")
    from bgsim.trace import otf2io
    out = tmp_path / "archive"
    with pytest.raises(UsageError, match=why):
        otf2io.write(bgtrace.load(str(trace)), str(out))
    assert not out.exists() or not any(out.iterdir())


def _replayed(trace, tmp_path, machine, mode):
    """`bgsim replay` of `trace` on 4 ranks of a 2x2x1 partition: the bytes
    per (source, destination) of its traffic matrix, and its JSON result."""
    tm, res = tmp_path / "tm.csv", tmp_path / "r.json"
    p = run_cli("replay", str(trace), "--machine", machine, "--shape", "2x2x1", "--mode", mode, "-n", "4",
                "--traffic-matrix", str(tm), "--json", str(res))
    assert p.returncode == 0, p.stderr
    got = {(int(r["source"]), int(r["destination"])): int(r["bytes"]) for r in csv.DictReader(open(tm))}
    return got, json.loads(res.read_text())


@pytest.fixture(scope="module")
def real(tmp_path_factory):
    return _recorded(tmp_path_factory, REAL, "row sum")


def test_the_recorder_writes_communicators_and_what_wildcards_matched(real):
    t = bgtrace.load(str(real))
    r0 = t.ranks[0]
    names = [c.name for c in r0]
    for name in ("comm_split", "comm_dup", "comm_free", "waitany", "waitsome", "probe", "ssend", "recv_init",
                 "send_init", "startall", "request_free", "allgatherv", "gatherv", "alltoallv", "reduce_scatter",
                 "scan", "gather", "scatter", "alltoall"):
        assert name in names or name in [c.name for c in t.ranks[3]], name
    # The Cartesian grid is the world; its rows are pairs of world ranks.
    splits = [c for c in r0 if c.name == "comm_split"]
    assert splits[0].lst == [0, 1, 2, 3] and splits[1].lst == [0, 1]
    # Rank 0's wildcard receives got the sources and tags they matched:
    # rank s sent tag 10 + s.
    wild = [c for c in r0 if c.name == "irecv" and c.a["comm"] == 0]
    assert len(wild) == 3 and sorted(c.a["src"] for c in wild) == [1, 2, 3]
    assert all(c.a["tag"] == 10 + c.a["src"] for c in wild)
    # The halves of the world, keyed by -rank: rank 3 is rank 0 of {3, 1}.
    half = [c for c in t.ranks[3] if c.name == "comm_split"][-1]
    assert half.lst == [3, 1] and half.a["key"] == 0
    # Gather and scatter on a row of two: 4 doubles a rank, at every rank.
    assert [(c.name, c.a["root"], c.a["bytes"]) for c in r0 if c.name in ("gather", "scatter")] == \
        [("gather", 1, 32), ("scatter", 0, 32)]
    # Rank 3 to rank 0: the Ssend of 30 doubles, 64 doubles to the wildcard
    # receive, and the persistent ring's 128 doubles once per start (3).
    assert t.messages()[(3, 0)] == [5, 240 + 512 + 3 * 1024]


@pytest.mark.parametrize("machine,shape,mode", [("bgl", "2x2x1", "coprocessor"), ("bgp", "1x1x1", "vn")])
def test_a_real_program_replays_on_both_machines(real, tmp_path, machine, shape, mode):
    tm, res, tl = tmp_path / "tm.csv", tmp_path / "r.json", tmp_path / "tl.json"
    p = run_cli("replay", str(real), "--machine", machine, "--shape", shape, "--mode", mode,
                "--traffic-matrix", str(tm), "--json", str(res), "--timeline", str(tl))
    assert p.returncode == 0, p.stderr
    want = {k: v[1] for k, v in bgtrace.load(str(real)).messages().items()}
    got = {(int(r["source"]), int(r["destination"])): int(r["bytes"]) for r in csv.DictReader(open(tm))}
    # Collectives on the sub-communicators add messages of their own.
    assert all(got.get(k, 0) >= v for k, v in want.items())
    r = json.loads(res.read_text())
    assert r["nranks"] == 4 and r["time_s"] > 0
    names = {e["name"] for e in json.load(open(tl))["traceEvents"] if e["ph"] == "X"}
    assert {"Comm.Split", "Comm.Dup", "Comm.Probe", "Comm.Ssend", "Comm.Alltoallv", "Comm.Gatherv",
            "Comm.Reduce_scatter", "Comm.Scan", "Request.Waitall"} <= names


def _trace(tmp_path, ranks, name="t"):
    """A hand-written trace: one list of lines per rank."""
    d = tmp_path / name
    d.mkdir()
    for r, lines in enumerate(ranks):
        (d / f"rank-{r}.trace").write_text(f"# bgsim-trace 2 rank {r} size {len(ranks)}\n" + "\n".join(lines) + "\n")
    return d


def test_a_wildcard_receive_replays_the_message_the_recorded_run_matched(tmp_path):
    import bgsim
    # Rank 1 sends 8 bytes at once, rank 2 4 KB a second later; in the
    # recorded run rank 0's first wildcard receive (4 KB) got rank 2's
    # message and its second (8 bytes) rank 1's. Matched by arrival in
    # the replay, the 4 KB message would land in the 8-byte receive.
    d = _trace(tmp_path, [
        ["0 0 irecv -1 -1 4096 0 1", "0 0 irecv -1 -1 8 0 2", "0 1.1 wait 1", "1.1 1.1 status 1 2 5",
         "1.1 1.1 wait 2", "1.1 1.1 status 2 1 5", "1.2 1.2 finalize"],
        ["0 0 send 0 5 8 0", "0 0 finalize"],
        ["1 1 send 0 5 4096 0", "1 1 finalize"],
    ])
    t = bgtrace.load(str(d))
    assert [(c.a["src"], c.a["tag"]) for c in t.ranks[0][:2]] == [(2, 5), (1, 5)]
    r = bgsim.run(bgtrace.program(t), "bgl", shape="2x2x1", nranks=3)
    assert r.time_s >= 1.0 and r.ranks[0]["end_s"] >= 1.0
    # Edited to say what arrival order would give, the replay refuses to
    # truncate: the resolution is what makes the run above work.
    lines = (d / "rank-0.trace").read_text().replace("status 1 2 5", "status 1 1 5").replace("status 2 1 5",
                                                                                              "status 2 2 5")
    (d / "rank-0.trace").write_text(lines)
    with pytest.raises(Exception, match="truncat"):
        bgsim.run(bgtrace.program(bgtrace.load(str(d))), "bgl", shape="2x2x1", nranks=3)


GOOD = [["0 0.1 send 1 3 8 0", "0.2 0.2 barrier 0", "0.3 0.3 finalize"],
        ["0 0.1 irecv 0 3 8 0 1", "0.1 0.15 wait 1", "0.2 0.2 barrier 0", "0.3 0.3 finalize"]]


@pytest.mark.parametrize("rank,line,index,message", [
    (0, "0 0 send 1 3 -5 0", 1, "bytes -5: bgsim's messages hold 0 to"),
    (0, "0 0 send 1 3 100000000000000000000 0", 1, "bytes 100000000000000000000"),
    (1, "0.16 0.17 wait 99", 3, "request 99 does not exist"),
    (1, "0 0 irecv 0 4 8 0 1", 2, "request 1 is already in use"),
    (1, "0.16 0.17 waitall 2 1 1", 2, "request 1 appears twice"),
    (0, "inf 1 barrier 0", 1, "time inf s"),
    (0, "1e300 1e300 barrier 0", 1, "time 1e+300 s"),
    (0, "nan 0 barrier 0", 1, "time nan s"),
    (0, "0.2 0.1 barrier 0", 1, "the call ends (0.1) before it starts (0.2)"),
    (0, "0 0 send 1 4294967296 8 0", 1, "tag 4294967296: tags are 0 to 2147483647"),
    (0, "0 0 send 2 3 8 0", 1, "dest 2 is not a rank of communicator 0 (2 ranks)"),
    (0, "0 0 send 1 3 8 7", 1, "communicator 7 was not made on this rank"),
    (0, "0 0 allreduce 8 0 zz9 frobnicate", 1, "unknown element type `zz9`"),
    (0, "0 0 allreduce 8 0 f8 frobnicate", 1, "unknown operation `frobnicate`"),
    (0, "0 0 allreduce 8 0 f8 band", 1, "operation band on floating-point elements"),
    (0, "0 0 frobnicate 1 2", 1, "unknown call `frobnicate`"),
    (0, "0 0 send 1 3", 1, "send takes 4 arguments (DEST TAG BYTES COMM), got 2"),
    (0, "0 0 alltoallv 0 3 1 2 3 4 5 6", 1, "alltoallv: 3 counts for communicator 0 of 2 ranks"),
    (0, "0 0 comm_split 0 2 2 0 5", 1, "communicator 2's members [0, 5] are not distinct ranks of communicator 0"),
    (0, "0 0 isend 1 3 8 0 4", 1, "request 4 is never completed"),
    (0, "0.4 0.4 barrier 0", 4, "a call after finalize"),
    (0, "0 0 status 1 1 3", 1, "status of request 1, which the line before did not complete"),
    (0, "0 0 unsupported MPI_Cancel", 1, "the program called MPI_Cancel, which bgsim cannot replay"),
])
def test_a_bad_trace_is_refused_at_load_naming_file_and_line(tmp_path, rank, line, index, message):
    ranks = [list(r) for r in GOOD]
    ranks[rank].insert(index - 1, line)
    d = _trace(tmp_path, ranks)
    from bgsim.errors import UsageError
    with pytest.raises(UsageError) as e:
        bgtrace.load(str(d))
    assert f"rank-{rank}.trace:{index + 1}: {message}" in str(e.value)


@pytest.mark.parametrize("rank,content,message", [
    (1, b"\x00\xff\xfe binary", r"rank-1.trace: not a text trace file"),
    (0, b"# bgsim-trace 2 rank 0 size -3\n",
     r"rank-0.trace:1: expected `# bgsim-trace 2 rank R size N` with N a positive"),
    (2, b"# bgsim-trace 2 rank 2 size 3\n", r"rank-2.trace is beyond the 2 ranks"),
    (0, "\n".join(["# bgsim-trace 2 rank 0 size 2 clock cpu"] + GOOD[0]).encode(),
     r"rank-1.trace:1: expected `# bgsim-trace 2 rank 1 size 2 clock cpu`"),
    (0, b"# bgsim-trace 1 rank 0 size 2\n", r"rank-0.trace:1: trace format 1; this bgsim reads format 2"),
], ids=["binary", "size", "extra", "clock", "format-1"])
def test_bad_trace_files_are_refused_naming_the_file(tmp_path, rank, content, message):
    from bgsim.errors import UsageError
    d = _trace(tmp_path, GOOD)
    bgtrace.load(str(d))  # the base is good
    (d / f"rank-{rank}.trace").write_bytes(content)
    with pytest.raises(UsageError, match=message):
        bgtrace.load(str(d))


def test_every_kind_of_call_replays(tmp_path):
    """A hand-written trace with the calls the C test program does not
    make: the other send modes, MPI_PROC_NULL, Create_group, the other
    completions, nonblocking collectives and the remaining collectives."""
    import bgsim
    both = ["0 0 comm_group 0 2 2 1 0", "0 0 ibarrier 2 1", "0 0 iallreduce 16 0 2 f8 max", "0 0 testall 2 1 2",
            "0 0 reduce_scatter_block 8 2 i4 sum", "0 0 exscan 8 0 i8 prod", "0 0 ialltoallv 0 3 2 4 4 4 4",
            "0 0 testany 3", "0 0 gather 1 16 0", "0 0 scatter 0 16 2", "0 0 allgather 8 0", "0 0 alltoall 8 2",
            "0 0 iscatterv 0 8 0 4 {counts}", "0 0 igatherv 1 8 0 5 {gcounts}", "0 0 waitsome 2 4 5",
            "0 0 reduce 0 12 2 u4 bxor", "0 0 allreduce 10 0 b1 user", "0 0 comm_free 2"]
    r0 = ["0 0 bsend 1 1 100 0", "0 0 rsend 1 2 100 0", "0 0 ibsend 1 3 100 0 9", "0 0 wait 9",
          "0 0 sendrecv -2 0 8 -2 0 8 0", "0 0 ssend_init 1 4 64 0 10", "0 0 start 10", "0 0 test 10",
          "0 0 start 10", "0 0 waitany 10", "0 0 request_free 10"] + \
         [ln.format(counts="2 8 8", gcounts="0") for ln in both] + ["0.001 0.001 finalize"]
    r1 = ["0 0 recv 0 1 100 0", "0 0 recv 0 2 100 0", "0 0 recv 0 3 100 0",
          "0 0 sendrecv -2 0 8 -2 0 8 0", "0 0 recv_init -1 4 64 0 10", "0 0 startall 1 10", "0 0 wait 10",
          "0 0 status 10 0 4", "0 0 start 10", "0 0 testsome 1 10", "0 0 status 10 0 4", "0 0 request_free 10"] + \
         [ln.format(counts="0", gcounts="2 8 8") for ln in both] + ["0.002 0.002 finalize"]
    d = _trace(tmp_path, [r0, r1])
    t = bgtrace.load(str(d))
    assert [c.starts for c in t.ranks[1] if c.name in ("start", "startall")] == [{10: [0, 4]}, {10: [0, 4]}]
    assert t.messages()[(0, 1)] == [5, 3 * 100 + 2 * 64]
    for machine, shape in (("bgl", "2x1x1"), ("bgp", "1x1x1")):
        r = bgsim.run(bgtrace.program(t), machine, shape=shape, nranks=2, mode="vn" if machine == "bgp" else None)
        assert abs(r.time_s - 0.002) < 0.001
        assert {"ibarrier", "iallreduce", "allreduce", "alltoall", "ialltoall", "gather", "scatter", "iscatter",
                "reduce"} <= set(r.collectives)


# -- OTF2 in and out ---------------------------------------------------------

def test_a_program_recorded_as_otf2_replays_with_the_same_messages(real, tmp_path):
    exe = real.parent / "prog"
    p = run_cli("record", "--format", "otf2", "--out", str(tmp_path / "o"), "-n", "4", "--", str(exe))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o" / "traces.otf2").exists() and not list((tmp_path / "o").glob("rank-*.trace"))
    t = bgtrace.load(str(tmp_path / "o"))
    assert t.messages() == bgtrace.load(str(real)).messages()
    tm = tmp_path / "tm.csv"
    p = run_cli("replay", str(tmp_path / "o" / "traces.otf2"), "--shape", "2x2x1", "--traffic-matrix", str(tm))
    assert p.returncode == 0, p.stderr
    got = {(int(r["source"]), int(r["destination"])): int(r["bytes"]) for r in csv.DictReader(open(tm))}
    assert all(got.get(k, 0) >= v[1] for k, v in t.messages().items())


def test_an_otf2_archive_written_with_the_package_replays_its_messages(tmp_path):
    """Score-P's events, written with the otf2 package's own writer: a
    blocking send, a nonblocking one completed by a wait, a wildcard
    nonblocking receive, an allreduce of one double on two ranks (Score-P
    counts 2 x 8 bytes each way), and a millisecond of compute."""
    import otf2
    from otf2.definitions import GroupType
    from otf2.enums import CollectiveOp, Paradigm

    import bgsim
    with otf2.writer.open(str(tmp_path / "a"), timer_resolution=1_000_000) as w:  # microseconds
        d = w.definitions
        node = d.system_tree_node("node")
        locs = [d.location("Master thread", group=d.location_group(f"MPI Rank {r}", system_tree_parent=node))
                for r in range(2)]
        d.group("MPI locations", group_type=GroupType.COMM_LOCATIONS, paradigm=Paradigm.MPI, members=locs)
        world = d.comm("MPI_COMM_WORLD", group=d.group("world", group_type=GroupType.COMM_GROUP,
                                                        paradigm=Paradigm.MPI, members=[0, 1]))
        reg = {n: d.region(n, paradigm=Paradigm.MPI) for n in ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv",
                                                               "MPI_Wait", "MPI_Allreduce", "MPI_Comm_rank",
                                                               "MPI_Finalize")}
        user = d.region("solve")
        e0, e1 = (w.event_writer_from_location(l) for l in locs)
        e0.enter(10, reg["MPI_Comm_rank"]), e0.leave(20, reg["MPI_Comm_rank"])
        e0.enter(20, reg["MPI_Send"]), e0.mpi_send(21, 1, world, 5, 100), e0.leave(30, reg["MPI_Send"])
        e0.enter(30, user), e0.leave(1030, user)  # a millisecond of the program's own work
        e0.enter(1030, reg["MPI_Irecv"]), e0.mpi_irecv_request(1031, 42), e0.leave(1040, reg["MPI_Irecv"])
        e0.enter(1040, reg["MPI_Wait"]), e0.mpi_irecv(1100, 1, world, 7, 200, 42), e0.leave(1101, reg["MPI_Wait"])
        e1.enter(20, reg["MPI_Recv"]), e1.mpi_recv(40, 0, world, 5, 100), e1.leave(41, reg["MPI_Recv"])
        e1.enter(50, reg["MPI_Isend"]), e1.mpi_isend(51, 0, world, 7, 200, 9), e1.leave(60, reg["MPI_Isend"])
        e1.enter(60, reg["MPI_Wait"]), e1.mpi_isend_complete(70, 9), e1.leave(71, reg["MPI_Wait"])
        for e, t in ((e0, 1200), (e1, 1200)):
            e.enter(t, reg["MPI_Allreduce"]), e.mpi_collective_begin(t)
            e.mpi_collective_end(t + 5, CollectiveOp.ALLREDUCE, world, 0, 16, 16), e.leave(t + 6, reg["MPI_Allreduce"])
            e.enter(t + 10, reg["MPI_Finalize"]), e.leave(t + 20, reg["MPI_Finalize"])
    t = bgtrace.load(str(tmp_path / "a"))
    assert t.messages() == {(0, 1): [1, 100], (1, 0): [1, 200]}
    assert [c.name for c in t.ranks[0]] == ["send", "irecv", "wait", "allreduce", "finalize"]
    irecv = t.ranks[0][1]
    assert (irecv.a["src"], irecv.a["tag"], irecv.a["bytes"]) == (1, 7, 200)
    assert t.ranks[0][3].a["bytes"] == 8
    # MPI_Comm_rank's 10 us (the first call) is neither compute nor a call
    # replayed: times close up over it; the user region's millisecond is
    # compute between the send and the receive.
    assert t.ranks[0][0].t0 == pytest.approx(0.0)
    assert t.ranks[0][1].t0 - t.ranks[0][0].t1 == pytest.approx(1e-3)
    r = bgsim.run(bgtrace.program(t), "bgl", shape="2x1x1", nranks=2)
    assert r.counters["messages_completed"] == 2 and 1.0e-3 < r.time_s < 1.2e-3
    assert r.collectives == {"allreduce": {"tree": 1}}


# -- one-sided communication (tests/data/one_sided.c) ---------------------

ONE_SIDED = os.path.join(HERE, "data", "one_sided.c")


@pytest.fixture(scope="module")
def one_sided(tmp_path_factory):
    return _recorded(tmp_path_factory, ONE_SIDED, "accumulated 18")  # 3 x (0 + 1 + 2 + 3)


def test_the_recorder_writes_windows_operations_and_synchronization(one_sided):
    t = bgtrace.load(str(one_sided))
    r0 = t.ranks[0]
    names = [c.name for c in r0]
    for name in ("win_create", "win_fence", "put", "get", "accumulate", "win_lock", "fetch_and_op", "win_unlock",
                 "win_start", "win_complete", "win_free"):
        assert name in names, name
    assert "win_post" in [c.name for c in t.ranks[1]] and "win_wait" in [c.name for c in t.ranks[1]]
    create = next(c for c in r0 if c.name == "win_create")
    assert (create.a["bytes"], create.a["unit"]) == (8192, 8)
    put = next(c for c in r0 if c.name == "put")
    assert (put.a["target"], put.a["disp"], put.a["bytes"]) == (1, 0, 4096)
    acc = next(c for c in r0 if c.name == "accumulate")
    assert (acc.a["disp"], acc.a["bytes"], acc.dtype, acc.op) == (1000, 64, "f8", "sum")
    start = next(c for c in r0 if c.name == "win_start")
    assert start.lst == [1]


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_a_one_sided_program_replays_its_operations(one_sided, machine, mode):
    import bgsim
    t = bgtrace.load(str(one_sided))
    r = bgsim.run(bgtrace.program(t), machine, shape="2x2x1", mode=mode, nranks=4, memory_check=False)
    # Rank 1 puts 4 KB to rank 2 and accumulates 64 bytes on rank 0 in each
    # of 3 epochs, and answers rank 2's 2 KB gets: that much data leaves
    # it; the rest is requests, acks and lock and epoch messages of 16 bytes.
    data = 3 * 4096 + 3 * 64 + 3 * 2048
    sent = r.ranks[1]["bytes_sent"]
    assert data <= sent < data + 200 * 16 and (sent - data) % 16 == 0
    assert r.time_s > 0


def test_a_bad_one_sided_line_is_refused_naming_it(one_sided, tmp_path):
    for old, new, why in (("put 1 0 4096 0", "put 7 0 4096 0", "target 7 is not a rank of window 0 (4 ranks)"),
                          ("put 1 0 4096 0", "put 1 0 4096 5", "window 5 was not made on this rank"),
                          ("put 1 0 4096 0", "put 1 -3 4096 0", "displacement -3: must be 0 or more")):
        bad = tmp_path / "bad"
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(one_sided, bad)
        text = (bad / "rank-0.trace").read_text()
        assert old in text
        (bad / "rank-0.trace").write_text(text.replace(old, new, 1))
        lineno = next(i for i, line in enumerate(text.splitlines(), 1) if old in line)
        with pytest.raises(UsageError, match=re.escape(f"rank-0.trace:{lineno}: {why}")):
            bgtrace.load(str(bad))


def _same_one_sided_replay(trace_dir, tmp_path):
    """The trace written as OTF2 and read back: the same calls on every
    rank (a cancel, which has no OTF2 event, aside) and the same bytes in
    its replay on BG/P."""
    pytest.importorskip("otf2")
    import bgsim
    from bgsim.trace import otf2io
    t = bgtrace.load(str(trace_dir))
    back = bgtrace.load(otf2io.write(t, str(tmp_path / "archive")))
    for mine, theirs in zip(t.ranks, back.ranks):
        assert [c.name for c in mine if c.name != "cancel"] == [c.name for c in theirs]
        ops = [(c.name, c.a.get("target"), c.a.get("bytes"), c.a.get("exclusive"), c.lst) for c in mine
               if c.name.startswith(("r", "put", "get", "acc", "fetch", "compare", "win_l", "win_p", "win_s"))]
        assert ops == [(c.name, c.a.get("target"), c.a.get("bytes"), c.a.get("exclusive"), c.lst) for c in theirs
                       if c.name.startswith(("r", "put", "get", "acc", "fetch", "compare", "win_l", "win_p", "win_s"))]
    runs = [bgsim.run(bgtrace.program(x), "bgp", shape="2x2x1", mode="vn", nranks=4, memory_check=False)
            for x in (t, back)]
    assert [r["bytes_sent"] for r in runs[0].ranks] == [r["bytes_sent"] for r in runs[1].ranks]


def test_one_sided_calls_round_trip_through_otf2(one_sided, tmp_path):
    _same_one_sided_replay(one_sided, tmp_path)


# -- matched probes and MPI_Comm_idup (tests/data/mprobe_idup.c) ------------

MATCHED = os.path.join(HERE, "data", "mprobe_idup.c")


@pytest.fixture(scope="module")
def matched(tmp_path_factory):
    return _recorded(tmp_path_factory, MATCHED, "matched 1 2")


def test_the_recorder_writes_the_messages_matched_probes_take_and_their_receives(matched):
    t = bgtrace.load(str(matched))
    lines = [(c.name, c.a) for c in t.ranks[0] if c.name in ("mprobe", "mrecv", "imrecv")]
    assert [(n, {k: v for k, v in a.items() if k != "comm"}) for n, a in lines] == [
        ("mprobe", {"src": 1, "tag": 5, "bytes": 32, "msg": 1}),
        ("mprobe", {"src": 1, "tag": 5, "bytes": 16384, "msg": 2}),
        ("imrecv", {"msg": 2, "req": lines[2][1]["req"]}),
        ("mrecv", {"msg": 1}),
        ("mprobe", {"src": -2, "tag": 0, "bytes": 0, "msg": 3}),
        ("mrecv", {"msg": 3})]
    for calls in t.ranks:
        idup = next(c for c in calls if c.name == "comm_idup")
        after = [(c.name, c.a) for c in calls[calls.index(idup) + 1:]][:3]
        assert (idup.a["parent"], idup.a["new"]) == (0, 2)
        assert after == [("wait", {"req": idup.a["req"]}), ("barrier", {"comm": 2}), ("comm_free", {"comm": 2})]


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_a_matched_probe_program_replays_its_messages(matched, machine, mode):
    import bgsim
    t = bgtrace.load(str(matched))
    r = bgsim.run(bgtrace.program(t), machine, shape="2x2x1", mode=mode, nranks=4, memory_check=False)
    assert r.ranks[0]["bytes_received"] >= 32 + 16384 and r.ranks[1]["bytes_sent"] >= 32 + 16384


def test_a_matched_receive_of_a_message_not_taken_is_refused(matched, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(matched, bad)
    text = (bad / "rank-0.trace").read_text()
    old = next(line for line in text.splitlines() if " mrecv 1" in line)
    (bad / "rank-0.trace").write_text(text.replace(old, old.replace(" mrecv 1", " mrecv 9"), 1))
    lineno = text.splitlines().index(old) + 1
    with pytest.raises(UsageError, match=re.escape(f"rank-0.trace:{lineno}: message 9 was not taken")):
        bgtrace.load(str(bad))


def test_otf2_output_writes_a_matched_receive_as_the_message_received(matched, tmp_path):
    pytest.importorskip("otf2")
    from bgsim.trace import otf2io
    t = bgtrace.load(str(matched))
    anchor = otf2io.write(t, str(tmp_path / "archive"))
    back = bgtrace.load(anchor)
    recvs = sorted((c.a["src"], c.a["bytes"]) for c in back.ranks[0] if c.name in ("recv", "irecv"))
    assert recvs == [(1, 32), (1, 16384)]


# -- request-based one-sided operations and MPI_Cancel -------------------
# -- (tests/data/rma_requests_cancel.c) ------------------------------------

RMA_CANCEL = os.path.join(HERE, "data", "rma_requests_cancel.c")


@pytest.fixture(scope="module")
def rma_cancel(tmp_path_factory):
    return _recorded(tmp_path_factory, RMA_CANCEL, "cancelled 1 received 1")


def test_the_recorder_writes_request_based_operations_and_cancels(rma_cancel):
    t = bgtrace.load(str(rma_cancel))
    for r, calls in enumerate(t.ranks):
        ops = [(c.name, c.a["target"], c.a["disp"], c.a["bytes"]) for c in calls
               if c.name in ("rput", "rget", "raccumulate", "rget_accumulate")]
        assert ops == [("rput", (r + 1) % 4, 0, 2048), ("rget", (r + 3) % 4, 256, 1024),
                       ("raccumulate", 0, 400, 64), ("rget_accumulate", 0, 500, 64)]
        reqs = [c.a["req"] for c in calls if c.name in ("rput", "rget", "raccumulate", "rget_accumulate")]
        assert next(c for c in calls if c.name == "waitall").lst == reqs
        # The receive no message matched: its cancel succeeded, which loading
        # resolves into the irecv (the `cancelled` line is not a call).
        never = next(c for c in calls if c.name == "irecv" and c.a["tag"] == 99)
        assert never.cancelled == {never.a["req"]}
        assert "cancelled" not in [c.name for c in calls]
    # Rank 1's receive from rank 2 was matched before its cancel: it stays.
    came = next(c for c in t.ranks[1] if c.name == "irecv" and c.a["tag"] == 7)
    assert came.cancelled is None and "cancel" in [c.name for c in t.ranks[1]]
    assert t.messages() == {(2, 1): [1, 256]}


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_request_based_operations_and_cancelled_receives_replay(rma_cancel, machine, mode):
    import bgsim
    t = bgtrace.load(str(rma_cancel))
    # Posted, the cancelled receive (tag 99) would never complete: the
    # replay ends only because it is not posted.
    r = bgsim.run(bgtrace.program(t), machine, shape="2x2x1", mode=mode, nranks=4, memory_check=False)
    # Rank 1 gets rank 2's 256 bytes and answers rank 2's 1 KB get.
    assert r.ranks[1]["bytes_received"] >= 256 and r.ranks[1]["bytes_sent"] >= 1024 + 2048


def test_a_cancelled_line_must_follow_the_completion_of_its_request(rma_cancel, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(rma_cancel, bad)
    lines = (bad / "rank-0.trace").read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if " cancelled " in line)
    req = lines[k].split()[-1]
    lines[k - 1], lines[k] = lines[k], lines[k - 1]  # before its wait
    (bad / "rank-0.trace").write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=re.escape(f"rank-0.trace:{k}: cancelled request {req}, which the line "
                                                   "before did not complete")):
        bgtrace.load(str(bad))


def test_otf2_round_trip_of_a_cancelled_receive(tmp_path):
    pytest.importorskip("otf2")
    from bgsim.trace import otf2io
    src = tmp_path / "t"
    src.mkdir()
    head = "# bgsim-trace 2 rank {} size 2 clock wall\n"
    (src / "rank-0.trace").write_text(head.format(0) + "0.1 0.1 irecv -1 9 64 0 1\n0.1 0.1 cancel 1\n"
                                      "0.1 0.2 wait 1\n0.2 0.2 cancelled 1\n0.2 0.3 recv 1 3 128 0\n"
                                      "0.3 0.3 finalize\n")
    (src / "rank-1.trace").write_text(head.format(1) + "0.1 0.2 send 0 3 128 0\n0.3 0.3 finalize\n")
    anchor = otf2io.write(bgtrace.load(str(src)), str(tmp_path / "archive"))
    back = bgtrace.load(anchor)
    irecv = next(c for c in back.ranks[0] if c.name == "irecv")
    assert irecv.cancelled == {irecv.a["req"]}
    assert back.messages() == {(1, 0): [1, 128]}
    import bgsim
    r = bgsim.run(bgtrace.program(back), "bgl", shape="2x1x1", nranks=2)
    assert r.ranks[0]["bytes_received"] == 128


def test_request_based_operations_and_cancels_round_trip_through_otf2(rma_cancel, tmp_path):
    _same_one_sided_replay(rma_cancel, tmp_path)


# -- intercommunicators (tests/data/intercomm.c) -------------------------

INTERCOMM = os.path.join(HERE, "data", "intercomm.c")


@pytest.fixture(scope="module")
def intercomm(tmp_path_factory):
    return _recorded(tmp_path_factory, INTERCOMM, "merged sum 6")


def test_the_recorder_writes_intercommunicators_and_their_merge(intercomm):
    t = bgtrace.load(str(intercomm))
    for r, calls in enumerate(t.ranks):
        make = next(c for c in calls if c.name == "intercomm_create")
        leader = r in (0, 1)
        assert (make.a["leader"], make.a["peer"], make.a["rleader"], make.a["tag"]) == \
            ((0, 0, 1 - r % 2, 7) if leader else (0, -1, -1, -1))
        assert make.lst == ([1, 3] if r % 2 == 0 else [0, 2])
        merge = next(c for c in calls if c.name == "intercomm_merge")
        assert (merge.a["inter"], merge.a["high"], merge.lst) == (make.a["new"], r % 2, [0, 2, 1, 3])
        # Messages on the intercommunicator name ranks of the remote group.
        isend = next(c for c in calls if c.name == "isend")
        assert (isend.a["comm"], isend.a["dest"]) == (make.a["new"], 0 if r < 2 else 1)
    # Each even rank sends 4 KB to its odd partner and back, and one int to
    # an odd rank over the dup.
    assert t.messages() == {(0, 1): [1, 4096], (1, 0): [1, 4096], (2, 3): [1, 4096], (3, 2): [1, 4096],
                            (0, 3): [1, 4], (2, 1): [1, 4]}


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_an_intercommunicator_program_replays_its_messages(intercomm, machine, mode):
    import bgsim
    t = bgtrace.load(str(intercomm))
    r = bgsim.run(bgtrace.program(t), machine, shape="2x2x1", mode=mode, nranks=4, memory_check=False)
    for rank in range(4):
        assert r.ranks[rank]["bytes_received"] >= 4096


def test_bad_intercommunicator_lines_are_refused_naming_them(intercomm, tmp_path):
    text0 = (intercomm / "rank-0.trace").read_text()
    create = next(line for line in text0.splitlines() if " intercomm_create " in line)
    barrier = next(line for line in text0.splitlines() if line.split()[2] == "barrier" and line.split()[3] != "0")
    for old, new, why in ((create, create.rsplit(" ", 1)[0] + " 2", "remote group [1, 2] is empty or overlaps"),
                          (barrier, barrier.replace(" barrier ", " scan 8 ") + " f8 sum",
                           "scan on intercommunicator 3: MPI does not define it there")):
        _refuses(intercomm, tmp_path, old, new, why)


def test_otf2_output_refuses_intercommunicators_before_writing_anything(intercomm, tmp_path):
    _otf2_refuses(intercomm, tmp_path, "intercomm_create: bgsim does not write intercommunicators")


# -- nonblocking collectives (tests/data/nbx.c) ------------------------------

NBX = os.path.join(HERE, "data", "nbx.c")


@pytest.fixture(scope="module")
def nbx(tmp_path_factory):
    return _recorded(tmp_path_factory, NBX, "word 42")


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_nonblocking_collectives_replay_where_they_started_and_completed(nbx, tmp_path, machine, mode):
    # The NBX exchange's barrier is started before some of the rank's
    # receives are posted: run as a blocking barrier where it started, the
    # replay deadlocks (a synchronous send waits for a receive its rank's
    # barrier holds back).
    t = bgtrace.load(str(nbx))
    names = [c.name for c in t.ranks[0]]
    assert names.index("ibarrier") < names.index("recv")  # rank 0 receives once its barrier started
    got, r = _replayed(nbx, tmp_path, machine, mode)
    want = {k: v[1] for k, v in t.messages().items()}
    assert all(got.get(k, 0) >= v for k, v in want.items())
    assert {"ibarrier", "iallreduce", "ibcast"} <= set(r["collectives"])


# -- neighbourhood collectives (tests/data/neighbor.c) -----------------------

NEIGHBOR = os.path.join(HERE, "data", "neighbor.c")


@pytest.fixture(scope="module")
def neighbor(tmp_path_factory):
    return _recorded(tmp_path_factory, NEIGHBOR, "neighbor rank 3")


def _neighbor_bytes(t):
    """(world source, world destination) -> bytes the recorded
    neighbourhood collectives sent (their communicators are the world's
    ranks in order)."""
    want = {}
    for r, calls in enumerate(t.ranks):
        for c in calls:
            if "neighbor_" in c.name:
                _, _, outs, sizes = bgtrace.neighborhood(c.lst)
                for d, b in zip(outs, sizes):
                    if d >= 0:
                        want[(r, d)] = want.get((r, d), 0) + b
    return want


def test_the_recorder_writes_each_neighbourhood_with_its_sizes(neighbor):
    t = bgtrace.load(str(neighbor))
    calls = {c.name: c for c in t.ranks[0] if "neighbor_" in c.name}
    assert set(calls) == {"neighbor_alltoallv", "neighbor_allgather", "ineighbor_alltoall"}
    # 2x2 periodic grid: -x, +x are rank 2, -y, +y rank 1; 100 (k + 1)
    # doubles towards direction k, and from direction k what was sent the
    # other way.
    assert bgtrace.neighborhood(calls["neighbor_alltoallv"].lst) == \
        ([2, 2, 1, 1], [1600, 800, 3200, 2400], [2, 2, 1, 1], [800, 1600, 2400, 3200])
    # The non-periodic line: rank 0 has no left neighbour.
    assert bgtrace.neighborhood(calls["neighbor_allgather"].lst) == ([-2, 1], [4, 4], [-2, 1], [4, 4])
    assert bgtrace.neighborhood(calls["ineighbor_alltoall"].lst) == ([3], [8192], [1], [8192])


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_neighbourhood_collectives_replay_their_recorded_messages(neighbor, tmp_path, machine, mode):
    got, r = _replayed(neighbor, tmp_path, machine, mode)
    want = _neighbor_bytes(bgtrace.load(str(neighbor)))
    if machine == "bgl":
        assert got == want  # the splits' allgathers ride the tree
    else:
        assert all(got.get(k, 0) >= v for k, v in want.items())
    assert {"neighbor_alltoallv", "neighbor_allgather", "ineighbor_alltoall"} <= set(r["collectives"])


def test_bad_neighbourhood_lines_are_refused_naming_them(neighbor, tmp_path):
    text0 = (neighbor / "rank-0.trace").read_text()
    line = next(ln for ln in text0.splitlines() if " neighbor_allgather " in ln)
    head = line.split(" neighbor_allgather ")[0]
    for bad_line, why in ((f"{head} neighbor_allgather 3 10 2 -2 7 4 4 2 -2 1 4 4",
                           "neighbour 7 is not a rank of communicator 3"),
                          (f"{head} neighbor_allgather 3 6 2 -2 1 4 4 5", "expected OUT"),
                          (f"{head} neighbor_allgather 3 10 2 -2 1 -4 4 2 -2 1 4 4", "bytes -4")):
        _refuses(neighbor, tmp_path, line, bad_line, why)


def test_otf2_output_refuses_neighbourhood_collectives_before_writing_anything(neighbor, tmp_path):
    _otf2_refuses(neighbor, tmp_path, "OTF2 has no neighbourhood collectives")


# -- collectives on an intercommunicator (tests/data/intercomm_coll.c) ------

INTERCOMM_COLL = os.path.join(HERE, "data", "intercomm_coll.c")


@pytest.fixture(scope="module")
def intercomm_coll(tmp_path_factory):
    return _recorded(tmp_path_factory, INTERCOMM_COLL, "intercoll rank 3")


def test_the_recorder_writes_intercommunicator_roots_and_remote_lists(intercomm_coll):
    t = bgtrace.load(str(intercomm_coll))
    calls = [{c.name: c for c in t.ranks[r]} for r in range(4)]
    # Rank 0 is group 0's root of the broadcast (-3, MPI_ROOT), rank 2 the
    # rest of that group (-2, MPI_PROC_NULL); group 1 names remote rank 0.
    assert [calls[r]["bcast"].a["root"] for r in range(4)] == [-3, 0, -2, 0]
    assert [calls[r]["gather"].a["root"] for r in range(4)] == [1, -2, 1, -3]
    assert calls[3]["gather"].a["bytes"] == 24 and calls[0]["gather"].a["bytes"] == 24
    # allgatherv: what each remote rank sends (1 and 2 ints), then this rank's own.
    assert calls[0]["allgatherv"].lst == [4, 8, 4] and calls[3]["allgatherv"].lst == [4, 8, 8]


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
def test_intercommunicator_collectives_replay(intercomm_coll, tmp_path, machine, mode):
    got, r = _replayed(intercomm_coll, tmp_path, machine, mode)
    # The broadcast's 4,000 bytes go from rank 0 to group 1's rank 0 (world
    # 1); the gather's 24 bytes from each of group 0 to its root (world 3).
    assert got[(0, 1)] >= 4000 and got[(0, 3)] >= 24 and got[(2, 3)] >= 24
    colls = r["collectives"]
    for op in ("bcast", "gather", "allreduce", "allgather", "alltoall", "reduce_scatter_block", "iallreduce"):
        assert colls[op].get("intercommunicator") == 1, op


def test_nonblocking_collectives_round_trip_through_otf2(nbx, tmp_path):
    # Written as NonBlockingCollectiveRequest where they start and
    # NonBlockingCollectiveComplete where they complete; read back into the
    # same calls, and the archive replays (the NBX barrier included).
    pytest.importorskip("otf2")
    from bgsim.trace import otf2io
    t = bgtrace.load(str(nbx))
    back = bgtrace.load(otf2io.write(t, str(tmp_path / "archive")))

    def colls(trace, r):
        return [(c.name, c.a.get("bytes"), c.a.get("root"), c.a["comm"]) for c in trace.ranks[r]
                if bgtrace.tracefile.blocking_collective(c.name)]

    for r in range(4):
        assert colls(back, r) == colls(t, r)
        assert [c.name for c in back.ranks[r] if c.name.startswith("i") and "req" in c.a][:1] == ["issend"]
    assert back.messages() == t.messages()
    import bgsim
    res = bgsim.run(bgtrace.program(back), "bgp", shape="2x2x1", mode="vn", nranks=4, memory_check=False)
    assert {"ibarrier", "iallreduce", "ibcast"} <= set(res.collectives)


# -- derived datatypes (tests/data/derived.c) -------------------------------

DERIVED = os.path.join(HERE, "data", "derived.c")


@pytest.fixture(scope="module")
def derived(tmp_path_factory):
    return _recorded(tmp_path_factory, DERIVED, "received sum")


def test_the_recorder_writes_how_a_derived_datatypes_data_lie(derived):
    """A point-to-point buffer whose data do not lie in one run of bytes
    carries its count, extent and true extent; a contiguous derived type's
    does not."""
    calls = bgtrace.load(str(derived)).ranks[0]
    laid = [(c.name, c.a.get("bytes", c.a.get("sbytes")), c.layout) for c in calls
            if c.name in ("send", "recv", "irecv", "isend", "sendrecv", "recv_init", "send_init")]
    column = (1, 8 * 64 * 63 + 8, 8 * 64 * 63 + 8)  # 64 doubles a row apart
    rows = (1, 8 * 64 * 63, 8 * 64 * 63)  # 32 rows of 64 doubles, every other one
    particles = (100, 16, 12)  # a double and an int, in 16 bytes
    assert laid == [("send", 512, {"bytes": column}), ("recv", 512, {"bytes": column}),
                    ("irecv", 16384, {"bytes": rows}), ("irecv", 1024, None),
                    ("isend", 16384, {"bytes": rows}), ("isend", 1024, None),
                    ("sendrecv", 1200, {"sbytes": particles, "rbytes": particles}),
                    ("recv_init", 512, {"bytes": column}), ("send_init", 512, {"bytes": column})]
    coll = [(c.name, c.a.get("bytes", c.lst), c.layout) for c in calls
            if c.name in ("bcast", "allreduce", "alltoall", "gather", "allgatherv")]
    assert coll == [("bcast", 1200, {"bytes": particles}), ("allreduce", 512, {"bytes": column}),
                    # 16 doubles into a column of a 16 x 4 matrix, resized to one double
                    ("alltoall", 128, {"recv": (128, 8, 8 * 4 * 15 + 8)}),
                    ("gather", 512, {"send": (512, column[1], column[2])}),
                    ("allgatherv", [512] * 4, {"send": (512, column[1], column[2])})]
    rest = [(c.name, c.a["bytes"], c.layout) for c in calls
            if c.name in ("reduce_scatter_block", "put", "get", "accumulate")]
    assert rest == [("reduce_scatter_block", 128, {"bytes": (1, 8 * 64 * 15 + 8, 8 * 64 * 15 + 8)}),
                    ("put", 512, {"bytes": column}), ("get", 512, {"bytes": column}),
                    ("accumulate", 512, {"bytes": column})]
    col16 = (128, 8 * 64 * 15 + 8, 8 * 64 * 15 + 8)
    assert [(c.name, c.layout) for c in calls if c.name in ("reduce_scatter", "neighbor_alltoall")] == [
        ("reduce_scatter", {"send": col16, "recv": col16}), ("neighbor_alltoall", {"send": col16})]


def test_a_derived_datatypes_replay_packs_and_unpacks_it(derived, tmp_path):
    """Replayed with their layouts, the non-contiguous messages cost each
    rank's core a copy of their bytes (pack on the sending side, unpack on
    the receiving one) that the same trace without layouts does not: per
    rank a column sent and received blocking and twice persistent, the
    rows both ways, the particles both ways, the particles broadcast (the
    root packs them, the others unpack them), a column's allreduce (its
    send packed, its result unpacked), an all-to-all's blocks unpacked
    into columns, a column packed for a gather and one for an allgatherv,
    four packed for each reduce-scatter and its result unpacked, four
    packed for a neighbour exchange, a column put, one got and one
    accumulated. (`test_mpi`
    checks the
    pack's cost exactly, on both machines.)"""
    machine, mode = "bgl", "coprocessor"
    _, laid = _replayed(derived, tmp_path, machine, mode)
    plain = tmp_path / "plain"
    shutil.copytree(derived, plain)
    for f in plain.glob("rank-*.trace"):
        f.write_text(re.sub(r" (send|recv)=\S+", "", re.sub(r"(?<= \d)(\d*):[-\d:]+", r"\1", f.read_text())))
    assert ":" not in "".join(f.read_text() for f in plain.glob("rank-*.trace")).replace("# ", "")
    _, flat = _replayed(plain, tmp_path, machine, mode)

    def copy(n):  # cycles at node.copy_bytes_per_cycle
        return -(-n // 4.3)
    want = 15 * copy(512) + 10 * copy(128) + 2 * copy(16384) + 3 * copy(1200)
    # A message that arrives before its receive is posted is copied out of
    # a temporary buffer; the packs move the timing, and with it which
    # messages do (an eager message or two more or less).
    for a, b in zip(laid["ranks"], flat["ranks"]):
        assert abs(a["core_copy_cycles"] - b["core_copy_cycles"] - want) <= 2 * copy(1200), (a["rank"], want)
    assert laid["time_s"] > flat["time_s"]


@pytest.mark.parametrize("old,new,why", [
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512:0:32264:32264 0", "COUNT of 1 or more that divides BYTES"),
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512:3:8:8 0", "COUNT of 1 or more that divides BYTES"),
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512:1:32264:500 0", "true extent 500 is less than the datatype's size 512"),
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512:1:99999999999:32264 0", "extents are at most"),
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512:1:x:32264 0", "may be BYTES:COUNT:EXTENT:TRUE_EXTENT"),
    ("send 1 1 512:1:32264:32264 0", "send 1:1:1:1 1 512 0", "may be BYTES:COUNT:EXTENT:TRUE_EXTENT"),
    ("send 1 1 512:1:32264:32264 0", "gather 0 512:1:32264:32264 0", "may be BYTES:COUNT:EXTENT:TRUE_EXTENT"),
    ("gather 0 512 0 send=512:32264:32264", "gather 0 512 0 send=500:32264:32264", "are not whole elements of 500"),
    ("gather 0 512 0 send=512:32264:32264", "gather 0 512 0 send=512:32264:8", "a true extent no less than it"),
    ("gather 0 512 0 send=512:32264:32264", "gather 0 512 0 send=1:1:1 send=1:1:1", "once each"),
    ("gather 0 512 0 send=512:32264:32264", "gather 0 512 0 both=1:1:1", "only a gather, scatter"),
    ("send 1 1 512:1:32264:32264 0", "send 1 1 512 0 send=1:1:1", "only a gather, scatter"),
    ("allgatherv 0 4 512 512 512 512 send=512:32264:32264", "allgatherv 0 4 512 100 512 512 recv=8:8:8",
     "blocks of [512, 100, 512] bytes are not whole elements of 8 bytes"),
])
def test_a_bad_layout_is_refused_at_load_time(derived, tmp_path, old, new, why):
    line = next(ln for ln in (derived / "rank-0.trace").read_text().splitlines() if ln.endswith(old))
    _refuses(derived, tmp_path, line, line.replace(old, new), why)


def test_the_halo_lines_fast_reading_gives_what_the_general_one_does(real, derived, tmp_path, monkeypatch):
    """The loader reads a halo's irecv, isend and waitall lines in one go
    (`_Rank.fast`); with that off, every line goes through the general
    reading and checks, and the calls, their state and the messages counted
    are the same - for the recorded programs and for a halo with a
    wildcard, a PROC_NULL, a layout and a persistent request in it."""
    from bgsim.trace import tracefile
    halo = tmp_path / "halo"
    halo.mkdir()
    for r in range(2):
        p = 1 - r
        (halo / f"rank-{r}.trace").write_text("\n".join([
            f"# bgsim-trace 2 rank {r} size 2 clock cpu",
            f"0.1 0.2 irecv {p} 7 64 0 1", f"0.2 0.3 isend {p} 7 64 0 2", "0.3 0.4 waitall 2 1 2",
            "0.4 0.5 irecv -1 7 8 0 3", f"0.5 0.5 isend {p} 7 8 0 4", "0.5 0.6 waitall 2 3 4",
            f"0.6 0.6 status 3 {p} 7",
            "0.6 0.7 isend -2 1 8 0 5", f"0.7 0.7 irecv {p} 2 512:1:1024:1016 0 6",
            f"0.7 0.7 isend {p} 2 512:2:300:256 0 7", "0.7 0.8 waitall 3 5 6 7",
            f"0.8 0.8 recv_init {p} 3 8 0 8", f"0.8 0.8 send_init {p} 3 8 0 9", "0.8 0.8 startall 2 8 9",
            "0.8 0.9 waitall 2 8 9", "0.9 0.9 request_free 8", "0.9 0.9 request_free 9",
            "1.0 1.0 finalize"]) + "\n")
    for trace in (real, derived, halo):
        fast = bgtrace.load(str(trace))
        monkeypatch.setattr(tracefile._Rank, "fast", lambda self, line, lineno: None)
        slow = bgtrace.load(str(trace))
        monkeypatch.undo()
        assert fast.ranks == slow.ranks
        assert fast.sent == slow.sent
    assert sum(c.name in ("irecv", "isend", "waitall") for c in fast.ranks[0]) == 11


def test_a_replays_halo_rounds_run_in_the_core_with_the_same_results(tmp_path, monkeypatch):
    """A round of irecvs, isends and their waitall, with no compute
    between them, runs as one exchange in the core (`replay._round`): the
    same simulated times, messages and per-rank figures as the calls one
    by one - on a halo of uniform sizes, of sizes by direction, and with a
    round the rules keep out (a send to PROC_NULL) and compute between
    rounds."""
    import bgsim
    from bgsim.trace import replay
    n = 8
    for r in range(n):
        lines = [f"# bgsim-trace 2 rank {r} size {n} clock cpu"]
        req, t = 0, 0.0
        for it in range(4):
            nb = [(r + 1) % n, (r - 1) % n, (r + 2) % n, (r - 2) % n]
            ids = []
            for k, p in enumerate(nb):
                req += 1
                ids.append(req)
                src = -2 if it == 2 and k == 2 else p  # (the other end of the send to PROC_NULL below)
                lines.append(f"{t:.6f} {t:.6f} irecv {src} 5 4096 0 {req}")
            for k, p in enumerate(nb):
                req += 1
                ids.append(req)
                size = 4096 if it % 2 == 0 else 1024 * (k + 1) if k < 2 else 4096
                dest = -2 if it == 2 and k == 3 else p  # a round kept out
                lines.append(f"{t:.6f} {t:.6f} isend {dest} 5 {size} 0 {req}")
            lines.append(f"{t:.6f} {t + 1e-6:.6f} waitall {len(ids)} " + " ".join(map(str, ids)))
            t += 2e-5  # compute between rounds
        lines.append(f"{t:.6f} {t:.6f} finalize")
        (tmp_path / f"rank-{r}.trace").write_text("\n".join(lines) + "\n")
    trace = bgtrace.load(str(tmp_path))
    ran = []
    real_round = replay._run_round
    monkeypatch.setattr(replay, "_run_round", lambda *a: (ran.append(1), real_round(*a)))
    for machine in ("bgl", "bgp"):
        ran.clear()
        rounds = bgsim.run(replay.program(trace), machine=machine, shape="2x2x2", nranks=n)
        assert len(ran) == 3 * n  # the PROC_NULL round went call by call
        with monkeypatch.context() as m:
            m.setattr(replay, "_round", lambda calls, i, f: (i + 1, None))
            calls = bgsim.run(replay.program(trace), machine=machine, shape="2x2x2", nranks=n)
        assert rounds.time_s == calls.time_s
        assert rounds.ranks == calls.ranks
        assert rounds.counters == calls.counters
