"""Every exception bgsim raises derives from bgsim.BgsimError and keeps the
standard class a user expects; the core's errors arrive as these classes."""

import ast
import os

import pytest

import bgsim
from bgsim import MPI, errors
from bgsim.experiments import get

PKG = os.path.dirname(os.path.abspath(bgsim.__file__))


def raises(cls, std, fn, *a, **kw):
    with pytest.raises(cls) as e:
        fn(*a, **kw)
    assert isinstance(e.value, bgsim.BgsimError), type(e.value).__mro__
    assert isinstance(e.value, std), type(e.value).__mro__
    return e.value


def test_core_errors_map_to_their_classes():
    e = raises(bgsim.MachineError, ValueError, bgsim.Machine, "bgl", ["torus.dynamic_vcs=9"])
    assert "torus.dynamic_vcs" in str(e)
    raises(bgsim.MachineError, ValueError, bgsim.Machine, "bgl", ['partition.shape="4x4"'])
    raises(bgsim.MachineError, ValueError, bgsim.Machine, "bgp7")
    e = raises(bgsim.WorkloadError, ValueError, bgsim.run_traffic, "uniform", shape="2x2x2", load=-1.0)
    assert "load" in str(e)
    e = raises(bgsim.WorkloadError, ValueError, bgsim.run_traffic, "hot_spot", shape="2x2x2",
               region_lo=[0, 0, 0], region_size=[3, 1, 1])
    assert "region" in str(e)
    raises(bgsim.WorkloadError, ValueError, bgsim.run_traffic, "uniform", shape="2x2x2", lod=0.5)
    raises(bgsim.MappingError, ValueError, bgsim.run, lambda: None, shape="2x1x1", mapping="XYQT")


def test_python_side_errors_keep_their_standard_class():
    raises(errors.UsageError, ValueError, bgsim.run, lambda: None, shape="2x1x1", nranks=0)
    raises(errors.StateError, RuntimeError, lambda: MPI.COMM_WORLD.Get_rank())
    raises(errors.ProgramNotFoundError, FileNotFoundError, bgsim.run_file, "no/such/program.py", shape="2x1x1")
    raises(errors.UnknownExperimentError, KeyError, get, "no-such-experiment")

    def bad_compute():
        bgsim.compute(seconds=-1.0)
    e = raises(bgsim.RankError, bgsim.BgsimError, bgsim.run, bad_compute, shape="2x1x1")
    assert isinstance(e.__cause__, errors.UsageError) and isinstance(e.__cause__, ValueError)


def test_deadlock_and_mpi_errors():
    def stuck():
        MPI.COMM_WORLD.recv(source=MPI.ANY_SOURCE)
    e = raises(bgsim.DeadlockError, bgsim.BgsimError, bgsim.run, stuck, shape="2x1x1")
    assert "rank 0" in str(e) and "rank 1" in str(e)

    def bad_rank():
        MPI.COMM_WORLD.send(1, dest=5)
    e = raises(bgsim.RankError, bgsim.BgsimError, bgsim.run, bad_rank, shape="2x1x1")
    assert isinstance(e.__cause__, MPI.Exception)
    assert isinstance(e.__cause__, bgsim.BgsimError) and isinstance(e.__cause__, RuntimeError)


def test_the_package_raises_no_bare_standard_exception():
    """A `raise ValueError(...)` (or TypeError, RuntimeError, KeyError, ...) in
    the package would escape `except bgsim.BgsimError`."""
    bare = {"ValueError", "TypeError", "RuntimeError", "KeyError", "FileNotFoundError", "Exception", "OSError"}
    found = []
    for root, _, files in os.walk(PKG):
        for f in files:
            if not f.endswith(".py"):
                continue
            path = os.path.join(root, f)
            tree = ast.parse(open(path).read(), path)
            # Where `Exception` is imported from the MPI shim's errors, it is MPI.Exception.
            mpi_exception = any(isinstance(n, ast.ImportFrom) and n.module == "errors" and n.level == 1
                                and any(a.name == "Exception" for a in n.names)
                                for n in tree.body) or (f == "errors.py" and root.endswith("mpishim"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    fn = node.exc.func
                    name = fn.id if isinstance(fn, ast.Name) else None
                    if name in bare and not (mpi_exception and name == "Exception"):
                        found.append(f"{os.path.relpath(path, PKG)}:{node.lineno} raise {name}")
    assert not found, found


# -- the smaller items of the last hostile-input probe: each gives the
# message a user needs

def test_tag_ub_is_the_key_of_the_largest_tag_as_in_mpi4py():
    def main():
        return MPI.COMM_WORLD.Get_attr(MPI.TAG_UB)
    assert bgsim.run(main, shape="2x1x1", nranks=1).results[0] == 2**31 - 1


@pytest.mark.parametrize("kw,says", [
    (dict(seconds=float("inf")), "must be a finite number >= 0"),
    (dict(seconds=float("nan")), "must be a finite number >= 0"),
    (dict(seconds=-1.0), "must be a finite number >= 0"),
    (dict(cycles=1e30), "more than one call can simulate on this machine"),
    (dict(seconds=1e12), "more than one call can simulate on this machine"),
    (dict(seconds="soon"), "must be a number"),
])
def test_compute_refuses_what_no_clock_can_count(kw, says):
    def main():
        bgsim.compute(**kw)
    with pytest.raises(bgsim.RankError, match=says):
        bgsim.run(main, shape="2x1x1", nranks=1)


def test_a_packet_too_small_for_the_metadata_names_every_key_that_sets_it():
    e = raises(bgsim.MachineError, ValueError, bgsim.Machine, "bgl", ["torus.max_packet_chunks=1"])
    assert "msglayer.metadata_bytes" in str(e) and "torus.max_packet_chunks 1" in str(e)
    assert "must be less than the largest packet's payload, 16 bytes" in str(e)


def test_a_size_beyond_the_field_says_the_largest_allowed():
    e = raises(bgsim.WorkloadError, ValueError, bgsim.run_traffic, "alltoall", shape="2x1x1",
               message_bytes=99_999_999_999)
    assert "message_bytes" in str(e) and "at most 4294967295" in str(e)


def test_map_names_the_traffic_matrix_whose_ranks_do_not_fit(tmp_path):
    from conftest import run_cli
    tm = tmp_path / "tm.csv"
    tm.write_text("0,1,100\n1,5,100\n")
    p = run_cli("map", "--traffic-matrix", str(tm), "--shape", "2x1x1", "-o", str(tmp_path / "m.map"))
    assert p.returncode != 0 and "(ranks 0 to 5): 6 ranks do not fit the 2x1x1 partition" in p.stderr
    assert "None" not in p.stderr


def test_more_threads_than_nodes_says_how_many_run(capsys):
    r = bgsim.run_traffic("pingpong", shape="2x1x1", hops=1, threads=16, partitions=16)
    assert r.completed
    assert "threads = 16: a partition is at least a node, so the 2 nodes of 2x1x1 run on 2 threads" \
        in capsys.readouterr().err


def test_a_traffic_run_of_billions_of_packets_says_its_size_first():
    import argparse
    from bgsim.cli import _traffic_size_note
    a = argparse.Namespace(pattern="alltoall", message_bytes=4_000_000_000, iters=None, settings=[], shape="4x4x4",
                           mesh=None, mode=None)
    note = _traffic_size_note(a, bgsim.Machine("bgl"))
    assert "4,000,000,000 bytes per pair on 64 nodes moves 16,128.0 GB" in note and "takes hours" in note
    a.message_bytes = 240
    assert _traffic_size_note(a, bgsim.Machine("bgl")) is None
