import json
import os

import pytest


def test_traffic_prints_summary(cli):
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--load", "0.3", "--measure", "2000", check=True)
    assert "link utilization" in p.stdout and "4x4x4" in p.stdout


def test_traffic_json_and_out_dir(cli, tmp_path):
    out = tmp_path / "run"
    p = cli("traffic", "--pattern", "hot_spot", "--shape", "4x4x4", "--region-size", "1,1,1", "--packets", "2",
            "--json", "--out", str(out), check=True)
    d = json.loads(p.stdout)
    assert d["completed"] and 0 < d["pct_peak"] <= 100
    for f in ("result.json", "links.csv", "vcs.csv", "nodes.csv", "throughput.csv", "throughput.png", "links_z0.png"):
        assert (out / f).exists(), f
    assert not [f for f in os.listdir(out) if f.endswith(".tmp")]
    assert len((out / "nodes.csv").read_text().splitlines()) == 1 + 64


def test_traffic_on_threads(cli):
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--load", "0.5", "--measure", "2000", "--threads", "2",
            "--partitions", "2", "--json", check=True)
    assert (json.loads(p.stdout)["engine"]["partitions"], json.loads(p.stdout)["engine"]["threads"]) == (2, 2)
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--load", "0.5", "--measure", "2000", "--threads", "2",
            "--partitions", "2", check=True)
    assert "(2 partitions on 2 threads)" in p.stdout
    # Without --partitions the engine keeps a run this small (64 nodes at
    # half load) on one thread, and says so.
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--load", "0.5", "--measure", "2000", "--threads", "2",
            "--json", check=True)
    assert (json.loads(p.stdout)["engine"]["partitions"], json.loads(p.stdout)["engine"]["threads"]) == (1, 1)
    assert "threads = 2: 64 nodes at an offered load of 0.5 (32.0 nodes' worth of traffic)" in p.stderr
    assert "stays on one thread" in p.stderr and "--partitions 2" in p.stderr
    p = cli("traffic", "--pattern", "uniform", "--threads", "0")
    assert p.returncode == 2 and "--threads" in p.stderr and "at least 1" in p.stderr


def test_bad_shape_is_refused_before_running(cli):
    p = cli("traffic", "--pattern", "uniform", "--shape", "8x8")
    assert p.returncode == 2
    assert "partition.shape" in p.stderr and "XxYxZ" in p.stderr


def test_bad_setting_and_mode(cli):
    p = cli("machine", "--set", "torus.vc_buffer_bytes=-5")
    assert p.returncode == 2 and "vc_buffer_bytes" in p.stderr
    p = cli("machine", "--mode", "smp")
    assert p.returncode == 2 and "partition.mode" in p.stderr
    p = cli("traffic", "--pattern", "hot_spot", "--region-size", "1,1")
    assert p.returncode == 2 and "region-size" in p.stderr
    p = cli("traffic", "--pattern", "hot_spot", "--packets", "-1")
    assert p.returncode == 2 and "--packets" in p.stderr and "at least 1" in p.stderr


def test_unwritable_outputs_are_refused_before_running(cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--out", str(blocker / "sub"))
    assert p.returncode == 2 and "--out" in p.stderr and "cannot create" in p.stderr and "Traceback" not in p.stderr
    p = cli("reproduce", "torus-pingpong", "--out", str(blocker))
    assert p.returncode == 2 and "--out" in p.stderr and "Traceback" not in p.stderr
    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\n")
    p = cli("run", "-n", "2", "--json", str(tmp_path / "missing" / "r.json"), str(prog))
    assert p.returncode == 2 and "--json" in p.stderr and "does not exist" in p.stderr
    p = cli("run", "-n", "2", "--json", str(tmp_path), str(prog))
    assert p.returncode == 2 and "is a directory" in p.stderr
    p = cli("run", "-n", "2", "--quiet", "--json", str(tmp_path / "r.json"), str(prog), check=True)
    assert json.loads((tmp_path / "r.json").read_text())["nranks"] == 2


def test_machine_prints_validated_toml(cli):
    p = cli("machine", "--shape", "4x4x2", "--set", "torus.dynamic_vcs=4", check=True)
    assert 'shape = "4x4x2"' in p.stdout and "dynamic_vcs = 4" in p.stdout
    assert "# vcs_per_receiver = 6" in p.stdout  # 4 dynamic + escape + high priority


def test_reproduce_list_and_unknown(cli):
    p = cli("reproduce", "--list", check=True)
    names = [l.split()[0] for l in p.stdout.splitlines()]
    assert len([n for n in names if n.startswith("torus-")]) == 11
    p = cli("reproduce", "torus-nonsense")
    assert p.returncode == 2 and "unknown experiment" in p.stderr


def test_reproduce_json_contract(cli):
    p = cli("reproduce", "torus-line-fill", "--scale", "quick", "--json", check=True)
    d = json.loads(p.stdout)  # stdout holds exactly one JSON object
    assert set(d) == {"experiment", "machine", "scale", "metrics", "series", "wall_s"}
    assert d["experiment"] == "torus-line-fill" and d["machine"] == "bgl" and d["scale"] == "quick"
    assert 50 < d["metrics"]["pct_peak"] <= 100
    for s in d["series"].values():
        assert set(s) == {"x", "y", "x_label", "y_label"} and len(s["x"]) == len(s["y"])
    assert "[torus-line-fill" in p.stderr  # progress went to stderr


def test_help_texts(cli):
    for args in (["--help"], ["traffic", "--help"], ["reproduce", "--help"], ["machine", "--help"]):
        p = cli(*args, check=True)
        assert "usage: bgsim" in p.stdout


# Two values of each pattern option: the second must change the run of a
# pattern that reads the option and leave any other pattern's run as it was.
_OPTION_VALUES = {
    "message_bytes": (240, 1000), "hops": (1, 2), "iters": (1, 2), "load": (0.2, 0.6),
    "warmup_ncycles": (0, 500), "measure_ncycles": (1000, 1500), "drain": (False, True),
    "payload_bytes": (240, 100), "variable_size": (False, True), "region_lo": ([0, 0, 0], [1, 1, 0]),
    "region_size": ([1, 1, 1], [2, 1, 1]), "hot_fraction": (0.25, 0.9), "packets": (1, 2),
    "random_start": (False, True), "backlog_packets": (32, 1),
}
# Options whose effect shows only in some setting: compared there.
_OPTION_CONTEXT = {"backlog_packets": {"load": 4.0}}


def _fingerprint(r):
    return (r.packets, r.latency_histogram, r.data["span_ncycles"], r.data["link_util_pct"])


def test_every_option_a_pattern_declares_changes_its_run_and_the_others_are_refused(cli):
    """The core's table of which pattern reads which option, checked against
    what the model reads, both ways: changing a declared option changes the
    run; any other option is refused by the core (from Python) and the CLI."""
    from bgsim import errors, patterns, run_traffic
    from bgsim.api import pattern_options

    table, common = pattern_options()
    assert set(table) == set(patterns())
    assert set(_OPTION_VALUES) == set().union(*(d["options"] for d in table.values()))
    for pattern, d in table.items():
        reads = d["options"]
        base = {k: v[0] for k, v in _OPTION_VALUES.items() if k in reads}
        ref = _fingerprint(run_traffic(pattern, shape="4x4x2", **base))
        for k, (_, other) in _OPTION_VALUES.items():
            spec = {**base, k: other}
            if k == "variable_size":
                spec.pop("payload_bytes", None)  # the two do not go together
            if k in reads:
                ctx = _OPTION_CONTEXT.get(k, {})
                before = _fingerprint(run_traffic(pattern, shape="4x4x2", **{**base, **ctx})) if ctx else ref
                changed = _fingerprint(run_traffic(pattern, shape="4x4x2", **{**spec, **ctx}))
                assert changed != before, (pattern, k)
            else:
                with pytest.raises(errors.WorkloadError, match=f"`{k}` does not apply to pattern {pattern}"):
                    run_traffic(pattern, shape="4x4x2", **spec)
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x2", "--hops", "2")
    assert p.returncode == 2 and "--hops does not apply to pattern uniform" in p.stderr and "pingpong" in p.stderr
    p = cli("traffic", "--pattern", "pingpong", "--shape", "4x4x2", "--warmup", "10")
    assert p.returncode == 2 and "--warmup" in p.stderr


@pytest.mark.parametrize("body, status, says", [
    ("import sys\nif MPI.COMM_WORLD.Get_rank() == 1:\n    sys.exit(3)\nMPI.COMM_WORLD.Barrier()\n", 3, "rank 1 exited with status 3"),
    ("import sys\nMPI.COMM_WORLD.Barrier()\nsys.exit(0)\n", 0, None),
    ("import sys\nsys.exit()\n", 0, None),
    ("import sys\nif MPI.COMM_WORLD.Get_rank() == 0:\n    sys.exit('giving up')\n", 1, "rank 0 exited: giving up"),
    ("if MPI.COMM_WORLD.Get_rank() == 1:\n    MPI.COMM_WORLD.Abort(7)\nMPI.COMM_WORLD.Barrier()\n", 7, "rank 1 called MPI_Abort with error code 7"),
    ("import os\nif MPI.COMM_WORLD.Get_rank() == 0:\n    os._exit(5)\nMPI.COMM_WORLD.Barrier()\n", 5, "rank 0 exited with status 5"),
    # A rank that exits does not cut the others short: rank 1 still sends
    # to itself and prints before the run ends with rank 0's status.
    ("import sys\nc = MPI.COMM_WORLD\nif c.rank == 0:\n    sys.exit(4)\n"
     "c.send('late', dest=c.rank)\nprint('rank', c.rank, c.recv(source=c.rank))\n", 4, "rank 0 exited with status 4"),
])
def test_exit_codes_pass_through(cli, tmp_path, body, status, says):
    prog = tmp_path / "prog.py"
    prog.write_text("from mpi4py import MPI\n" + body)
    p = cli("run", "--quiet", "--shape", "2x1x1", str(prog))
    assert p.returncode == status, (p.returncode, p.stderr)
    if "late" in body:
        assert "rank 1 late" in p.stdout, p.stdout
    if says:
        assert says in p.stderr, p.stderr
    else:
        assert "failed" not in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("args, says", [
    (["run", "--shape", "2x1x1", "--map", "{bin}", "{ok}"], "not a text file"),
    (["run", "--shape", "2x1x1", "--map", "{dir}", "{ok}"], "Is a directory"),
    (["run", "--shape", "2x1x1", "--cpu-factor", "inf", "{ok}"], "--cpu-factor: `inf`: must be a finite number"),
    (["run", "--shape", "2x1x1", "--cpu-factor", "nan", "{ok}"], "--cpu-factor: `nan`"),
    (["run", "--shape", "2x1x1", "--cpu-factor", "1e300", "{ok}"], "at most 1e6"),
    (["run", "--shape", "2x1x1", "--seed", "-1", "{ok}"], "--seed: `-1`"),
    (["run", "--shape", "2x1x1", "{bad}"], "bad.py:1: syntax error"),
    (["traffic", "--pattern", "uniform", "--shape", "2x2x2", "--load", "nan"], "--load: `nan`: must be a finite number"),
    (["machine", "--set", "clock.cpu_mhz=1e308"], "clock.cpu_mhz` = 1e308: 1 to 100,000 MHz"),
    (["machine", "--set", "clock.cpu_mhz=1e-300"], "clock.cpu_mhz` = 1e-300"),
    (["machine", "--set", "barrier.latency_ns=1e20"], "barrier.latency_ns` = 1e20: 0 to 1e12 ns"),
    (["machine", "--set", "torus.dynamic_vcs=\udcff"], "not valid UTF-8"),
])
def test_bad_input_is_refused_with_a_message_not_a_traceback(cli, tmp_path, args, says):
    (tmp_path / "ok.py").write_text("from mpi4py import MPI\nprint(MPI.COMM_WORLD.Get_rank())\n")
    (tmp_path / "bad.py").write_text("def f(:\n")
    (tmp_path / "bin.map").write_bytes(bytes(range(200, 256)) * 3)
    (tmp_path / "dir.map").mkdir()
    paths = {"ok": tmp_path / "ok.py", "bad": tmp_path / "bad.py", "bin": tmp_path / "bin.map", "dir": tmp_path / "dir.map"}
    args = [a.format(**paths) for a in args]
    p = cli(*args)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, (p.returncode, p.stderr)


def test_the_api_refuses_what_the_cli_refuses():
    import bgsim
    from bgsim import errors
    with pytest.raises(errors.UsageError, match="seed"):
        bgsim.run(lambda: None, shape="2x1x1", seed=-1)
    for f in (float("inf"), float("nan"), 1e300, 0):
        with pytest.raises(errors.UsageError, match="cpu_factor"):
            bgsim.run(lambda: None, shape="2x1x1", cpu_factor=f)
    with pytest.raises(bgsim.WorkloadError, match="load"):
        bgsim.run_traffic("uniform", shape="2x2x2", load=float("nan"))


def test_progress_bar_shows_simulated_time_rate_and_time_left(capsys, monkeypatch):
    from bgsim import progress
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    bar = progress.Bar("bgsim traffic uniform", fraction=True, unit="ncycles")
    bar.update(1000.0, 2_000_000, 0.5)
    bar.close()
    err = capsys.readouterr().err
    assert "bgsim traffic uniform:  50.0%|" in err and "1,000.0 ncycles simulated" in err and "events/s" in err
    assert "<" in err  # elapsed < remaining
    open_ended = progress.Bar("bgsim run", fraction=False)
    open_ended.update(12.5, 10, note="3/8 ranks finished")
    open_ended.close()
    err = capsys.readouterr().err
    assert "bgsim run: [" in err and "12.5 us simulated" in err and "3/8 ranks finished" in err and "%" not in err


def test_no_progress_bar_off_a_terminal_or_when_quiet(cli, monkeypatch):
    import io
    from bgsim import progress

    class Tty(io.StringIO):
        def isatty(self):
            return True
    monkeypatch.setattr("sys.stderr", Tty())
    assert progress.wanted() and not progress.wanted(False)  # --quiet
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not progress.wanted()  # not a terminal
    p = cli("traffic", "--pattern", "uniform", "--shape", "8x8x8", "--load", "0.5", "--measure", "20000", "--quiet")
    assert p.returncode == 0 and "%|" not in p.stderr


def test_the_suite_bar_counts_experiments_and_keeps_their_log_lines_above_it(capsys):
    from bgsim import progress
    from bgsim.experiments import Context
    bar = progress.Suite(3)
    bar.start("torus-pingpong")
    Context(name="torus-pingpong", bar=bar).log("2 nodes")
    bar.done()
    bar.close()
    err = capsys.readouterr().err
    assert "[torus-pingpong" in err and "2 nodes" in err and "1/3" in err and "torus-pingpong]" in err
