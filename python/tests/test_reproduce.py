"""The quick scale of every torus experiment: the acceptance suite."""

import json
import re

import pytest

from bgsim.experiments import names
from bgsim.reproduce import run_one, write_outputs

SIZES = ["32B", "256B", "1KB", "4KB", "16KB"]
EXPECTED_KEYS = {
    "torus-pingpong": [f"{k}_cycles_h{h}_{s}" for k in ("total", "bound") for h in (1, 2, 3) for s in SIZES],
    "torus-alltoall": [f"pct_peak_4x4x2_{p}B" for p in (16, 240, 2400, 24000)] + ["pct_peak_8x8x8_16B", "pct_peak_8x8x8_240B"],
    "torus-hot-region": ["pct_peak_1", "pct_peak_2", "pct_peak_4"],
    "torus-line-fill": ["pct_peak"],
    "torus-plane-fill": ["pct_peak", "payload_MBps"],
    "torus-random-latency": [f"latency_ncycles_{c}_u{u}" for c in ("det", "dyn1vc1p", "dyn2vc2p", "dyn4vc4p", "random", "jsq", "slq") for u in (50, 80, 95)],
    "torus-hot-region-time": [f"steady_pct_peak_{c}" for c in ("buf2048", "buf1024", "buf512", "random", "jsq", "slq")] + ["hot_link_util_pct"],
    "torus-alltoall-sim": [f"{m}_{s}_{c}" for m in ("link_util_pct", "payload_util_pct") for s in ("8x8x8", "16x8x8") for c in ("det", "dyn1", "dyn2")] + ["escape_pct_8x8x8", "escape_pct_16x8x8", "link_util_pct_8x8x8_dyn2_random_start"],
    "torus-escape-vc": [f"{m}_{s}" for m in ("throughput_cv", "unblock_prob") for s in ("bubble", "dateline_dim", "dateline_dir")],
    "torus-bubble-deadlock": ["deadlock_actual_size", "deadlock_full_size", "ncycles_to_deadlock"],
    "torus-faults": [f"{m}_ber{b}" for m in ("latency_ncycles", "link_util_pct", "retransmit_pct", "lost_packets")
                     for b in ("0", "1em06", "1em05", "0p0001", "0p0003")]
    + [f"dead{n}_{m}" for n in (0, 1, 2, 4, 8, 16) for m in ("latency_ncycles", "hops_per_packet", "max_link_util_pct")],
}


def test_link_faults_cost_latency_and_bandwidth_and_lose_nothing():
    m = result("torus-faults")[0]["metrics"]
    bers = ("0", "1em06", "1em05", "0p0001", "0p0003")
    assert all(m[f"lost_packets_ber{b}"] == 0 for b in bers)
    assert m["retransmit_pct_ber0"] == 0 and m["retransmit_pct_ber0p0001"] > m["retransmit_pct_ber1em05"] > 0
    assert m["latency_ncycles_ber0p0003"] > m["latency_ncycles_ber0p0001"] > m["latency_ncycles_ber0"]
    assert m["link_util_pct_ber0p0001"] > m["link_util_pct_ber0"]
    # Dead links lengthen routes (packets go round the other way) and add latency.
    assert m["dead0_hops_per_packet"] < m["dead4_hops_per_packet"] < m["dead16_hops_per_packet"]
    assert m["dead0_latency_ncycles"] == m["latency_ncycles_ber0"] < m["dead16_latency_ncycles"]

_cache = {}


def result(name):
    if name not in _cache:
        _cache[name] = run_one(name, "quick", seed=1, quiet=True)
    return _cache[name]


@pytest.mark.parametrize("name", [n for n in names() if n.startswith("torus-")])
def test_quick_scale_runs_and_keeps_the_contract(name, tmp_path):
    res, outcome = result(name)
    assert res["experiment"] == name and res["machine"] == "bgl" and res["scale"] == "quick"
    for k in EXPECTED_KEYS[name]:
        assert k in res["metrics"], f"{name}: missing metric {k}"
    for k in res["metrics"]:
        assert re.fullmatch(r"[A-Za-z0-9_]+", k), k
    json.dumps(res, allow_nan=False)
    pngs = write_outputs(res, outcome, str(tmp_path))
    assert (tmp_path / f"{name}.json").exists() and (tmp_path / f"{name}.md").exists()
    assert pngs and all((tmp_path / p).stat().st_size > 1000 for p in pngs)


def test_threads_leave_a_torus_experiments_figures_as_they_are():
    res, _ = result("torus-hot-region")
    two, _ = run_one("torus-hot-region", "quick", seed=1, quiet=True, threads=2, partitions=2)
    assert two["metrics"] == res["metrics"] and two["series"] == res["series"]


def test_pct_of_peak_is_a_percentage():
    for name in ("torus-alltoall", "torus-hot-region", "torus-line-fill", "torus-plane-fill"):
        for k, v in result(name)[0]["metrics"].items():
            if k.startswith("pct_peak"):
                assert 0 < v <= 100, (name, k, v)


def test_pingpong_latency_exceeds_bound_and_grows_with_hops_and_size():
    m = result("torus-pingpong")[0]["metrics"]
    for h in (1, 2, 3):
        for s in SIZES:
            assert m[f"total_cycles_h{h}_{s}"] > m[f"bound_cycles_h{h}_{s}"]
        assert m[f"total_cycles_h{h}_16KB"] > m[f"total_cycles_h{h}_1KB"] > m[f"total_cycles_h{h}_32B"]
    assert m["total_cycles_h3_32B"] > m["total_cycles_h2_32B"] > m["total_cycles_h1_32B"]


def test_dynamic_routing_beats_deterministic_near_saturation():
    m = result("torus-random-latency")[0]["metrics"]
    assert m["latency_ncycles_dyn2vc2p_u80"] < m["latency_ncycles_det_u80"]
    for c in ("det", "dyn2vc2p"):
        assert m[f"latency_ncycles_{c}_u50"] < m[f"latency_ncycles_{c}_u95"]


def test_bubble_deadlock_only_with_actual_size_accounting():
    m = result("torus-bubble-deadlock")[0]["metrics"]
    assert m["deadlock_actual_size"] == 1 and m["deadlock_full_size"] == 0
    assert m["ncycles_to_deadlock"] > 0


def test_alltoall_sim_dynamic_uses_links_better_than_deterministic():
    m = result("torus-alltoall-sim")[0]["metrics"]
    for s in ("8x8x8", "16x8x8"):
        assert m[f"link_util_pct_{s}_dyn2"] > m[f"link_util_pct_{s}_det"]
        assert m[f"payload_util_pct_{s}_dyn2"] < m[f"link_util_pct_{s}_dyn2"]
        # Random starting offsets break the lock-step shift phases.
        assert m[f"link_util_pct_{s}_dyn2_random_start"] > m[f"link_util_pct_{s}_dyn2"]


def test_reproduce_all_writes_index(tmp_path, monkeypatch):
    from bgsim import reproduce as rp
    from bgsim.experiments import base

    # Two cheap experiments stand in for `all`.
    monkeypatch.setattr(rp, "names", lambda: ["torus-line-fill", "torus-plane-fill"])
    rc = rp.reproduce("all", "quick", str(tmp_path), 1, False)
    assert rc == 0
    idx = (tmp_path / "index.md").read_text()
    assert "torus-line-fill.md" in idx and "torus-plane-fill.md" in idx
    assert base.get("torus-line-fill").name == "torus-line-fill"


def test_a_declared_sweep_gives_each_curves_metrics_series_and_values():
    from bgsim.experiments.base import Context, Curve, Outcome, sweep
    out = Outcome()
    logged = []
    ctx = Context(quiet=True)
    ctx.log = logged.append
    ys = sweep(ctx, out, [1, 2, 4], lambda x: {"a": x / 3, "b": 10.0 * x, "c": x + 0.5}, [
        Curve("a", "A", "a_{x}", 2, "g"),
        Curve("b", "B", lambda x: f"b{x}" if x > 1 else None),
        Curve("c", "", "c_{x}", 0, plot=False),
    ], x_label="X", log="at {x}", plot_xs=[10, 20, 40])
    assert logged == ["at 1", "at 2", "at 4"]
    assert ys == {"a": [1 / 3, 2 / 3, 4 / 3], "b": [10.0, 20.0, 40.0], "c": [1.5, 2.5, 4.5]}
    assert out.metrics == {"a_1": 0.33, "a_2": 0.67, "a_4": 1.33, "b2": 20.0, "b4": 40.0, "c_1": 2.0, "c_2": 2.0,
                           "c_4": 4.0}
    assert set(out.series) == {"a", "b"}
    assert out.series["a"] == {"x": [10.0, 20.0, 40.0], "y": [1 / 3, 2 / 3, 4 / 3], "x_label": "X", "y_label": "A"}
    assert out.groups == {"g": ["a"], "b": ["b"]}
