"""Results do not move by accident: 20 traffic configurations, three MPI
programs and every experiment at quick scale give the results stored under
``golden/``, field for field. Only wall-clock fields are left out.

A change that moves a figure on purpose regenerates the files:

    BGSIM_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q python/tests/test_golden.py

and its commit says which figures moved and why.
"""

import json
import os

import pytest

import bgsim
from bgsim.experiments import names
from bgsim.reproduce import run_one

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")
UPDATE = os.environ.get("BGSIM_UPDATE_GOLDEN") == "1"

#: Fields that measure the host, not the simulated machine.
WALL = {"wall_s", "python_wall_s", "events_per_s", "hops_per_s", "sim_us_per_wall_s"}

#: name -> (pattern, run_traffic keyword arguments). Every pattern, both
#: routings, the three arbitrations, the three escape schemes, both bubble
#: accountings, virtual node mode, a mesh, variable sizes, a drained run.
TRAFFIC = {
    "pingpong_3hops_1KB": ("pingpong", dict(shape="4x4x4", hops=3, message_bytes=1024)),
    "pingpong_mesh_det": ("pingpong", dict(shape="2x2x2", mesh="xyz", hops=3, routing="deterministic", message_bytes=4096)),
    "uniform_dyn_0.6": ("uniform", dict(shape="4x4x4", load=0.6)),
    "uniform_det_0.9": ("uniform", dict(shape="4x4x4", load=0.9, routing="deterministic")),
    "uniform_random_arb": ("uniform", dict(shape="4x4x4", load=0.8, settings=["torus.arbitration=random"])),
    "uniform_slq": ("uniform", dict(shape="4x4x4", load=0.8, settings=["torus.arbitration=slq"])),
    "uniform_dateline_dim": ("uniform", dict(shape="8x4x4", load=0.9, settings=['torus.escape="dateline_dim"'])),
    "uniform_dateline_dir": ("uniform", dict(shape="8x4x4", load=0.9, settings=['torus.escape="dateline_dir"'])),
    "uniform_vn_varsize_drain": ("uniform", dict(shape="4x4x2", mode="vn", load=0.7, variable_size=True, drain=True)),
    "uniform_4vc_seed7": ("uniform", dict(shape="4x4x4", load=0.95, seed=7, settings=["torus.dynamic_vcs=4"])),
    "hot_region": ("hot_region", dict(shape="8x8x4", load=0.5, region_lo=[2, 2, 1], region_size=[2, 2, 2], hot_fraction=0.4)),
    "hot_spot": ("hot_spot", dict(shape="4x4x4", region_lo=[1, 1, 1], region_size=[2, 2, 2], packets=8)),
    "hot_spot_actual_size": ("hot_spot", dict(shape="4x4x4", region_lo=[0, 0, 0], region_size=[1, 1, 1], packets=16,
                                              settings=['torus.bubble_accounting="actual_size"'])),
    "alltoall_4x4x2": ("alltoall", dict(shape="4x4x2", message_bytes=2400)),
    "alltoall_det_random_start": ("alltoall", dict(shape="4x4x4", message_bytes=960, routing="deterministic", random_start=True)),
    "alltoall_stream": ("alltoall_stream", dict(shape="8x4x4")),
    "line_fill": ("line_fill", dict(shape="8x2x2", message_bytes=16384)),
    "plane_fill": ("plane_fill", dict(shape="4x4x2", message_bytes=16384)),
    "nearest_neighbor": ("nearest_neighbor", dict(shape="4x4x4", packets=32)),
    "nearest_neighbor_mesh_vn": ("nearest_neighbor", dict(shape="4x4x2", mesh="z", mode="vn", packets=16, variable_size=True)),
}

#: name -> (program, argv, run_file keyword arguments).
MPI_RUNS = {
    "ring": ("ring.py", [], dict(shape="4x4x2")),
    "halo2d_vn": ("halo2d.py", ["32", "5"], dict(shape="4x2x2", mode="vn")),
    "pingpong": ("pingpong.py", [], dict(shape="2x1x1")),
}


def strip(x):
    """The value without its wall-clock fields."""
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k not in WALL}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x


def first_difference(a, b, path="$"):
    """The path of the first place two JSON values differ, with both values."""
    if type(a) is not type(b):
        return f"{path}: {a!r} != {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'golden' if k in a else 'this run'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (u, v) in enumerate(zip(a, b)):
            d = first_difference(u, v, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: golden {a!r}, this run {b!r}"


def check(kind, name, value):
    """Compares value (after a JSON round trip) with golden/KIND/NAME.json, or writes it when updating."""
    value = strip(json.loads(json.dumps(value)))
    path = os.path.join(GOLDEN, kind, f"{name}.json")
    if UPDATE:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(value, f, indent=1, sort_keys=True)
            f.write("\n")
        return
    assert os.path.exists(path), f"no golden file {path}; BGSIM_UPDATE_GOLDEN=1 writes it"
    with open(path) as f:
        golden = json.load(f)
    d = first_difference(golden, value)
    assert d is None, f"{kind}/{name} moved: {d}"


def check_invariants(name, d):
    """Conservation and sanity at the end of a run."""
    p = d["packets"]
    assert sum(v["packets"] for v in d["vcs"]) == p["hops"], f"{name}: per-VC packets do not add up to the hops"
    assert 0 <= d["pct_peak"] <= 100, f"{name}: {d['pct_peak']}% of peak"
    assert (p["injected"] + p["in_flight_at_start"] == p["delivered"] - p["deposit_copies"] + p["in_flight_at_end"]), \
        f"{name}: packets unaccounted for: {p}"
    if d["spec"]["pattern"] in ("uniform", "hot_region", "alltoall_stream"):
        return
    assert d["completed"], name
    assert p["created"] == p["injected"], f"{name}: created {p['created']}, injected {p['injected']}"
    assert p["delivered"] == p["injected"] + p["deposit_copies"] and p["in_flight_at_end"] == 0, f"{name}: {p}"


@pytest.mark.parametrize("name", sorted(TRAFFIC))
def test_traffic_configuration(name):
    pattern, kw = TRAFFIC[name]
    kw = dict(kw)
    r = bgsim.run_traffic(pattern, per_link=True, **kw)
    check_invariants(name, r.data)
    check("traffic", name, r.data)


@pytest.mark.parametrize("name", sorted(MPI_RUNS))
def test_mpi_program(name, capsys):
    prog, argv, kw = MPI_RUNS[name]
    r = bgsim.run_file(os.path.join(EXAMPLES, prog), argv, **kw)
    out = capsys.readouterr().out
    check("mpi", name, {"result": r.to_dict(), "stdout": out})


@pytest.mark.parametrize("name", names())
def test_quick_experiment(name):
    res, _ = run_one(name, "quick", seed=1, quiet=True)
    check("quick", name, res)


def test_the_comparison_finds_a_moved_figure():
    a = {"x": [1, 2, {"y": 3.0}], "wall_s": 1}
    assert first_difference(strip(a), strip({"x": [1, 2, {"y": 3.0}], "wall_s": 2})) is None
    assert first_difference(a, {"x": [1, 2, {"y": 3.5}], "wall_s": 1}) == "$.x[2].y: golden 3.0, this run 3.5"
    assert "length" in first_difference(a, {"x": [1, 2], "wall_s": 1})
