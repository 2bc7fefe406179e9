"""The NAS skeletons send what the benchmarks send: message counts and bytes
per iteration, summed over the ranks of a real run, against what the
benchmarks' decompositions imply (computed here independently of the
skeletons' code); and mappings chosen from a communication graph."""

import pytest

import bgsim
from bgsim import mapping, nas
from bgsim.errors import WorkloadError


def one_iteration(name, cls, shape, nranks, **kw):
    r = bgsim.run(lambda: nas.run_rank(name, cls, iterations=1, warmup=0), shape=shape, nranks=nranks, **kw)
    sends = sum(x["sends"] for x in r.ranks)
    nbytes = sum(x["bytes_sent"] for x in r.ranks)
    return r, sends, nbytes


def faces_total(n, nc):
    # copy_faces: every internal interface between cell slabs, in each of
    # the 3 directions, carries 2 planes x 5 variables of the whole n x n
    # cross-section each way.
    return 3 * (nc - 1) * 2 * (2 * 5 * n * n) * 8


def test_bt_class_b_on_25_ranks():
    # 5 x 5 ranks; 6 face messages and, per direction, 4 forward and 4
    # backward solve messages of MAX_CELL_DIM^2 x 30 and x 5 doubles,
    # MAX_CELL_DIM = 102 // 5 + 1 = 21.
    _, sends, nbytes = one_iteration("bt", "B", "5x5x1", 25)
    assert sends == 25 * (6 + 3 * 2 * 4)
    assert nbytes == faces_total(102, 5) + 25 * 3 * 4 * (21 * 21 * 30 * 8 + 21 * 21 * 5 * 8)


def test_sp_class_b_on_25_ranks():
    # SP sends 22 (forward) and 10 (back) doubles per face point, the
    # domain's boundary points left out: each of the 4 interfaces of a
    # direction carries (102 - 2)^2 points.
    _, sends, nbytes = one_iteration("sp", "B", "5x5x1", 25)
    assert sends == 25 * 30
    assert nbytes == faces_total(102, 5) + 3 * 4 * 100 * 100 * (22 + 10) * 8


def test_ft_transposes_the_whole_array_every_iteration():
    # class A: 256 x 256 x 128 double complex; a 1D-layout transpose sends
    # everything but each rank's own share (the checksum reduce goes over
    # the collective network).
    r, _, nbytes = one_iteration("ft", "A", "4x2x2", 16)
    assert nbytes == 256 * 256 * 128 * 16 * 15 // 16
    assert "alltoall" in r.collectives and "reduce" in r.collectives


def test_is_exchanges_every_key_and_the_counts():
    # class W: 2^20 keys of 4 bytes spread evenly, plus one int per pair.
    _, sends, nbytes = one_iteration("is", "W", "2x2x2", 8)
    assert nbytes == 8 * 7 * 4 * (2 ** 20 // 64) + 8 * 7 * 4


def test_lu_pipelines_a_message_per_plane_and_neighbour():
    # class S (12^3) on 2 x 2 ranks: per sweep, every one of the 4 grid
    # edges in the sweep's direction carries one message per inner plane
    # (10), of 5 values per edge point (6); rhs swaps 2 layers x 5 values x
    # 6 x 12 points with each of the 2 neighbours.
    _, sends, nbytes = one_iteration("lu", "S", "2x2x1", 4)
    assert sends == 2 * 4 * 10 + 4 * 2
    assert nbytes == 2 * 4 * 10 * 5 * 6 * 8 + 4 * 2 * 2 * 5 * 6 * 12 * 8


def test_cg_row_sums_transposes_and_dot_products():
    # class S (na = 1,400) on 2 x 2 ranks: 26 matrix-vector products, each
    # one exchange of na/2 doubles in the row and one transpose swap of
    # na/2 doubles (to itself on the diagonal ranks); 52 one-double dot
    # product exchanges and one of two doubles.
    _, sends, nbytes = one_iteration("cg", "S", "2x2x1", 4)
    assert sends == 4 * (26 * 2 + 52 + 1)
    assert nbytes == 4 * (26 * 2 * 700 * 8 + 52 * 8 + 16)


def test_every_benchmark_runs_in_both_modes_and_refuses_bad_counts():
    for b in nas.BENCHMARKS:
        n = 16 if b in ("bt", "sp") else 8
        res = bgsim.run(lambda b=b: nas.run_rank(b, "S", iterations=1, warmup=0), shape="2x2x2", nranks=n,
                        mode="vn").results[0]
        assert res["benchmark"] == b and res["s_per_iteration"] > 0 and res["mops_per_proc"] > 0
    with pytest.raises(WorkloadError, match="square number"):
        nas.plan("bt", "B", 32)
    with pytest.raises(WorkloadError, match="power of two"):
        nas.plan("cg", "B", 24)
    with pytest.raises(WorkloadError, match="unknown NAS class"):
        nas.plan("cg", "Q", 4)


def test_cli_runs_a_skeleton_and_refuses_a_bad_count():
    from conftest import run_cli
    p = run_cli("run", "--quiet", "--shape", "4x4x2", "--mode", "vn", "--skeleton", "bt", "--class", "S", "-n", "64",
                "--iterations", "1", check=True)
    assert "NAS BT class S on 64 ranks (8 x 8 ranks" in p.stdout and "Mop/s" in p.stdout
    p = run_cli("run", "--shape", "4x4x2", "--skeleton", "bt")
    assert p.returncode == 2 and "square number of ranks; 32 ranks given" in p.stderr
    p = run_cli("run", "--shape", "4x4x2")
    assert p.returncode == 2 and "give a program to run, or --skeleton" in p.stderr


def test_a_mapping_from_the_graph_lowers_hop_bytes_and_runs(tmp_path):
    shape = (4, 4, 4)
    p = nas.plan("bt", "S", 64)
    traffic = nas.traffic(p)
    base = mapping.order_slots(shape, 1, 64)
    opt = mapping.optimize(traffic, shape, 1, 64)
    assert sorted(opt) == sorted(base)  # a permutation of the same slots
    assert mapping.hop_bytes(traffic, opt, shape) < 0.8 * mapping.hop_bytes(traffic, base, shape)
    assert mapping.optimize(traffic, shape, 1, 64) == opt  # deterministic
    path = tmp_path / "bt.map"
    mapping.write_mapfile(str(path), opt)
    r = bgsim.run(lambda: nas.run_rank("bt", "S", iterations=1, warmup=0), shape="4x4x4", mapping=str(path))
    assert [tuple(int(x[k]) for k in "xyzt") for x in r.ranks] == opt


def test_mg_exchanges_ghost_layers_on_every_level_of_the_v_cycle():
    # class S (32^3, 5 levels) on 2 x 2 x 2 ranks: 3 x 5 - 1 = 14 comm3
    # calls, each 2 messages along each of the 3 axes.
    _, sends, nbytes = one_iteration("mg", "S", "2x2x2", 8)
    assert sends == 8 * 14 * 6
    # the finest level's x faces alone: 16 x 16 doubles to each side
    assert nbytes > 8 * 3 * 2 * 16 * 16 * 8


def test_ep_only_reduces_three_sums():
    r, sends, _ = one_iteration("ep", "S", "2x2x2", 8)
    assert sends == 0 and sum(r.collectives["allreduce"].values()) == 3
