"""Every MPI collective x every algorithm x communicator kinds (world, dup,
split halves, odd sizes, size 1), checked against references computed in
plain numpy; hardware variants on sub-communicators; the tree's two-pass
float sum; mismatched collective arguments."""

import hashlib
import os

import numpy as np
import pytest

import bgsim
from bgsim import MPI, skeleton
from bgsim.mpishim.coll.base import tree_float_sum

ALGOS = bgsim.collective_algorithms()
K = 40          # elements per rank in reductions
BIG = 20000     # bytes of the large broadcast


def exercise(comm):
    """Runs every collective on `comm`; returns what this rank got."""
    r, n = comm.Get_rank(), comm.Get_size()
    root = n - 1
    out = {}
    comm.Barrier()
    out["bcast_obj"] = comm.bcast({"from": "root", "n": n} if r == root else None, root=root)
    big = np.arange(BIG, dtype="u1") if r == root else np.zeros(BIG, dtype="u1")
    comm.Bcast(big, root=root)
    out["Bcast_ok"] = bool((big == np.arange(BIG, dtype="u1")).all())
    a = np.arange(K, dtype="i4") * (r + 1)
    red = np.zeros(K, dtype="i4")
    comm.Reduce(a, red, op=MPI.SUM, root=root)
    out["Reduce"] = red.tolist() if r == root else None
    f = r + 0.5 * np.arange(K)
    fs = np.zeros(K)
    comm.Allreduce(f, fs, op=MPI.SUM)
    out["Allreduce_f"] = fs.tolist()
    mx = np.zeros(K, dtype="i8")
    comm.Allreduce((np.arange(K) * 7 + r * 13) % 29, mx, op=MPI.MAX)
    out["Allreduce_max"] = mx.tolist()
    xo = np.zeros(4, dtype="u4")
    comm.Allreduce(np.full(4, 1 << (r % 30), dtype="u4"), xo, op=MPI.BXOR)
    out["Allreduce_xor"] = xo.tolist()
    big_red = np.zeros(3000)
    comm.Allreduce(np.full(3000, float(r)), big_red, op=MPI.SUM)
    out["Allreduce_big"] = float(big_red[0]), float(big_red[-1])
    out["allreduce_obj"] = comm.allreduce(r * 2 + 1)
    out["reduce_obj"] = comm.reduce([r], op=MPI.SUM, root=0)
    ag = np.zeros(3 * n, dtype="i4")
    comm.Allgather(np.full(3, r, dtype="i4"), ag)
    out["Allgather"] = ag.tolist()
    out["allgather_obj"] = comm.allgather(("r", r))
    counts = [1 + (i % 3) for i in range(n)]
    agv = np.zeros(sum(counts), dtype="i4")
    comm.Allgatherv(np.full(counts[r], r, dtype="i4"), [agv, counts, MPI.INT])
    out["Allgatherv"] = agv.tolist()
    k = 5
    s = np.concatenate([np.full(k, r * 100 + i, dtype="i4") for i in range(n)])
    t = np.zeros(k * n, dtype="i4")
    comm.Alltoall(s, t)
    out["Alltoall"] = t.tolist()
    out["alltoall_obj"] = comm.alltoall([(r, i) for i in range(n)])
    g = np.zeros(2 * n, dtype="f8") if r == 1 % n else None
    comm.Gather(np.array([r, -r], dtype="f8"), g, root=1 % n)
    out["Gather"] = g.tolist() if r == 1 % n else None
    out["gather_obj"] = comm.gather(r * r, root=0)
    sc = np.zeros(2, dtype="i4")
    comm.Scatter(np.arange(2 * n, dtype="i4") * 3 if r == 0 else None, sc, root=0)
    out["Scatter"] = sc.tolist()
    out["scatter_obj"] = comm.scatter([i * 11 for i in range(n)] if r == root else None, root=root)
    rs = np.zeros(2, dtype="i4")
    comm.Reduce_scatter_block(np.arange(2 * n, dtype="i4") + r, rs, op=MPI.SUM)
    out["Reduce_scatter_block"] = rs.tolist()
    sc2 = np.zeros(1, dtype="i4")
    comm.Scan(np.array([r + 1], dtype="i4"), sc2, op=MPI.PROD)
    out["Scan"] = int(sc2[0])
    out["exscan_obj"] = comm.exscan(r + 1)
    return out


def reference(r, n):
    root = n - 1
    counts = [1 + (i % 3) for i in range(n)]
    return {
        "bcast_obj": {"from": "root", "n": n},
        "Bcast_ok": True,
        "Reduce": (np.arange(K) * sum(i + 1 for i in range(n))).tolist() if r == root else None,
        "Allreduce_f": (sum(range(n)) + n * 0.5 * np.arange(K)).tolist(),
        "Allreduce_max": np.max([(np.arange(K) * 7 + i * 13) % 29 for i in range(n)], axis=0).tolist(),
        "Allreduce_xor": [int(np.bitwise_xor.reduce([1 << (i % 30) for i in range(n)]))] * 4,
        "Allreduce_big": (float(sum(range(n))), float(sum(range(n)))),
        "allreduce_obj": sum(i * 2 + 1 for i in range(n)),
        "reduce_obj": list(range(n)) if r == 0 else None,
        "Allgather": [i for i in range(n) for _ in range(3)],
        "allgather_obj": [("r", i) for i in range(n)],
        "Allgatherv": [i for i in range(n) for _ in range(counts[i])],
        "Alltoall": [i * 100 + r for i in range(n) for _ in range(5)],
        "alltoall_obj": [(i, r) for i in range(n)],
        "Gather": [v for i in range(n) for v in (i, -i)] if r == 1 % n else None,
        "gather_obj": [i * i for i in range(n)] if r == 0 else None,
        "Scatter": [6 * r, 6 * r + 3],
        "scatter_obj": r * 11,
        "Reduce_scatter_block": [sum(2 * r + j + i for i in range(n)) for j in range(2)],
        "Scan": int(np.prod(range(1, r + 2))),
        "exscan_obj": None if r == 0 else sum(range(1, r + 1)),
    }


def main():
    w = MPI.COMM_WORLD
    res = {"world": exercise(w)}
    res["dup"] = exercise(w.Dup())
    half = w.Split(w.Get_rank() % 2, w.Get_rank())
    res["half"] = (half.Get_rank(), half.Get_size(), exercise(half))
    single = w.Split(w.Get_rank(), 0)
    res["single"] = exercise(single)
    return res


def check(got, r, n, where):
    ref = reference(r, n)
    for key, want in ref.items():
        v = got[key]
        if key == "Allreduce_f":
            np.testing.assert_allclose(v, want, rtol=1e-12, err_msg=f"{where} {key}")
        else:
            assert v == want, f"{where}: {key} = {v!r}, expected {want!r}"


def configs():
    """Configuration i takes the i-th algorithm of every operation (cycling),
    so that every algorithm of every operation runs."""
    width = max(len(v) for v in ALGOS.values())
    for i in range(width):
        yield {op: names[i % len(names)] for op, names in ALGOS.items()}


@pytest.mark.parametrize("coll", list(configs()), ids=lambda c: "-".join(sorted(set(c.values())))[:60])
@pytest.mark.parametrize("shape,nranks", [("2x2x2", None), ("2x2x2", 7)])
def test_every_collective_algorithm_on_every_communicator_kind(coll, shape, nranks):
    res = bgsim.run(main, shape=shape, nranks=nranks, coll=coll)
    n = res.nranks
    for r, got in enumerate(res.results):
        check(got["world"], r, n, f"world rank {r}")
        check(got["dup"], r, n, f"dup rank {r}")
        hr, hn, hgot = got["half"]
        assert hn == (n + 1 - r % 2) // 2
        check(hgot, hr, hn, f"half rank {r}")
        check(got["single"], 0, 1, f"single rank {r}")
    # The run records what every collective used.
    assert set(res.collectives) >= {"barrier", "bcast", "reduce", "allreduce", "allgather", "alltoall"}
    for op, name in coll.items():
        if name != "auto" and op in res.collectives:
            assert any(k.startswith(name) or f"fallback from {name}" in k for k in res.collectives[op]), (op, name, res.collectives[op])


def test_hardware_collectives_only_on_the_whole_partition():
    def main():
        w = MPI.COMM_WORLD
        x = np.zeros(4)
        w.Allreduce(np.ones(4), x)
        half = w.Split(w.Get_rank() % 2)
        y = np.zeros(4)
        half.Allreduce(np.ones(4), y)
        return x.tolist(), y.tolist()
    res = bgsim.run(main, shape="2x2x2", coll={"allreduce": "tree"})
    assert res.results[0] == ([8.0] * 4, [4.0] * 4)
    # Per-link counters of the tree: 7 links, each used both ways; two passes
    # (exponents, then mantissas) of one packet each, and one packet for the
    # Split's allgather of (color, key) (8 ranks x 16 bytes, OR-ed).
    assert len(res.tree_links) == 7
    assert all(link["packets_up"] == 3 and link["packets_down"] == 3 for link in res.tree_links)
    assert res.counters["tree_operations"] == 3
    assert res.collectives["Split (allgather)"] == {"tree": 1}
    used = res.collectives["allreduce"]
    assert used["tree"] == 1
    assert any("fallback from tree" in k for k in used), used
    # Fewer ranks than task slots: not the whole partition either.
    res = bgsim.run(main, shape="2x2x2", nranks=6, coll={"allreduce": "tree"})
    assert "tree" not in res.collectives["allreduce"]


def test_auto_uses_the_hardware_on_the_partition_and_p2p_elsewhere():
    def main():
        w = MPI.COMM_WORLD
        w.Barrier()
        w.Bcast(np.zeros(100), root=0)
        w.Split(w.Get_rank() % 2).Barrier()
    res = bgsim.run(main, shape="2x2x2")
    assert res.collectives["barrier"] == {"gi": 1, "dissemination": 2}
    assert res.collectives["bcast"] == {"tree": 1}


def test_tree_float_sum_two_passes_against_a_direct_sum():
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=1000) * 10.0 ** rng.integers(-3, 3) for _ in range(64)]
    import math
    exact = np.array([math.fsum(col) for col in np.stack(arrays).T])
    two = tree_float_sum(arrays)
    # Truncating each addend to the grid of the largest exponent (with 6 bits
    # of headroom for 64 addends) loses less than 64 grid units; converting
    # the integer sum back to a double rounds once more.
    emax = np.frexp(np.max(np.abs(arrays), axis=0))[1]
    grid = np.ldexp(1.0, emax - 62 + 6)
    assert np.all(np.abs(two - exact) <= 64 * grid + np.spacing(np.abs(exact)))
    # As close as a direct sum in double precision.
    direct = np.sum(arrays, axis=0)
    assert np.max(np.abs(two - exact)) <= 2 * np.max(np.abs(direct - exact)) + np.max(np.spacing(np.abs(exact)))
    # Same result in any order: the sum is integer.
    assert np.array_equal(tree_float_sum(arrays[::-1]), two)
    assert np.array_equal(tree_float_sum([np.array([1e300]), np.array([-1e300]), np.array([1.0])]), np.array([0.0]))


def test_mismatched_collective_arguments_are_an_error_not_a_hang():
    def main():
        w = MPI.COMM_WORLD
        w.bcast("x", root=0 if w.Get_rank() != 3 else 1)
    with pytest.raises(bgsim.RankError, match="does not match across ranks: root 0 on rank 0, root 1 on rank 3"):
        bgsim.run(main, shape="2x2x1", coll={"bcast": "binomial"})

    def main2():
        w = MPI.COMM_WORLD
        if w.Get_rank() == 2:
            w.Allreduce(np.zeros(3), np.zeros(3))
        else:
            w.Bcast(np.zeros(3), root=0)
    with pytest.raises(bgsim.RankError, match="rank 0 called bcast, rank 2 calls allreduce"):
        bgsim.run(main2, shape="2x2x1")

    def main3():
        w = MPI.COMM_WORLD
        n = 4 if w.Get_rank() else 5
        w.Allreduce(np.zeros(n), np.zeros(n))
    with pytest.raises(bgsim.RankError, match="does not match across ranks"):
        bgsim.run(main3, shape="2x2x1")


def test_coll_option_errors():
    with pytest.raises(bgsim.MachineError, match="collectives.bcast.*one of auto, generic, binomial"):
        bgsim.run(lambda: None, shape="2x1x1", coll={"bcast": "fastest"})
    with pytest.raises(bgsim.MachineError, match="unknown operation `bcst`"):
        bgsim.run(lambda: None, shape="2x1x1", coll={"bcst": "tree"})


@pytest.mark.parametrize("shape,mesh", [("4x4x2", ""), ("3x2x4", "xyz"), ("4x1x3", "y"), ("8x1x1", "")])
@pytest.mark.parametrize("algo", ["torus_p2p", "torus_deposit"])
def test_torus_broadcasts_reach_every_node_from_any_root(shape, mesh, algo):
    def main():
        w = MPI.COMM_WORLD
        out = []
        for root in (0, w.Get_size() // 2 + 1, w.Get_size() - 1):
            buf = np.arange(70_000, dtype="u1") + root if w.Get_rank() == root else np.zeros(70_000, dtype="u1")
            w.Bcast(buf, root=root)
            out.append(bool((buf == (np.arange(70_000) + root).astype("u1")).all()))
        return out
    res = bgsim.run(main, shape=shape, mesh=mesh, coll={"bcast": algo})
    assert all(all(r) for r in res.results)
    assert res.collectives["bcast"] == {algo: 3}


def test_a_rank_missing_from_a_hardware_collective_is_reported():
    def main():
        w = MPI.COMM_WORLD
        if w.Get_rank() != 2:
            w.Barrier()
        else:
            w.recv(source=0)
    with pytest.raises(bgsim.DeadlockError) as e:
        bgsim.run(main, shape="2x2x1")
    msg = str(e.value)
    assert "rank 0: in MPI.Comm.barrier()" in msg and "the global-interrupt barrier (3 of 4 ranks have joined)" in msg
    assert "rank 2: in MPI.Comm.recv(source=0, tag=-1)" in msg


def test_the_registry_and_the_implementations_list_the_same_algorithms():
    """Every algorithm the core declares has exactly one Python
    implementation, every implementation is declared, and --coll, the
    machine's [collectives] table and docs/collectives.md read the registry."""
    from bgsim.mpishim.coll import IMPLEMENTATIONS, markdown, registry

    declared = {op: {a[0] for a in algos} for op, algos in registry().items()}
    assert {op: set(impls) for op, impls in IMPLEMENTATIONS.items()} == declared
    assert {op: set(names) - {"auto"} for op, names in ALGOS.items()} == declared
    doc = open(os.path.join(os.path.dirname(__file__), "..", "..", "docs", "collectives.md")).read()
    assert markdown() in doc, "docs/collectives.md's table differs from `python -m bgsim.mpishim.coll`"
    for op, names in declared.items():
        for name in names:
            bgsim.Machine("bgl", [f'collectives.{op}="{name}"'])
    with pytest.raises(bgsim.MachineError, match="collectives.bcast"):
        bgsim.Machine("bgl", ['collectives.bcast="binomial_tree"'])


def test_an_algorithm_the_core_does_not_declare_cannot_be_registered():
    from bgsim.mpishim.coll.registry import algorithm

    with pytest.raises(bgsim.errors.ModelError, match="not declared"):
        algorithm("bcast", "my_new_bcast")(lambda c, data, root, nbytes: data)


def test_alltoallv_sends_no_message_for_a_zero_count():
    """MPICH's MPI_Alltoallv posts a send and a receive only where the count
    is not zero: a ring exchange through it is n messages, not n^2."""
    def main():
        w = MPI.COMM_WORLD
        r, n = w.Get_rank(), w.Get_size()
        scounts = [100 if d == (r + 1) % n else 0 for d in range(n)]
        rcounts = [100 if s == (r - 1) % n else 0 for s in range(n)]
        displs = [0] * n
        got = np.zeros(100, "u1")
        w.Alltoallv([np.full(100, r, "u1"), scounts, displs, MPI.BYTE], [got, rcounts, displs, MPI.BYTE])
        return int(got[0])
    res = bgsim.run(main, shape="2x2x2")
    assert res.results == [(r - 1) % 8 for r in range(8)]
    assert res.counters["messages_completed"] == 8
    assert res.collectives["alltoall"] == {"generic": 1}


@pytest.mark.parametrize("nranks,root", [(8, 0), (8, 3), (7, 5)])
def test_scatter_allgather_bcast_moves_the_parts_as_mpich_does(nranks, root):
    """MPICH's long broadcast: a binomial scatter of n parts relative to the
    root, then recursive doubling (power-of-two sizes) or a ring. Its message
    count is n - 1 + n log2 n or n - 1 + n (n - 1), it moves the message's
    bytes (not a description of them), and a skeleton's broadcast of sizes
    costs what the same broadcast of data costs."""
    nbytes = 64 << 10

    def data():
        w = MPI.COMM_WORLD
        buf = bytearray(np.arange(nbytes, dtype="u1").tobytes()) if w.Get_rank() == root else bytearray(nbytes)
        w.Bcast(buf, root=root)
        return hashlib.sha256(buf).hexdigest()

    def sizes():
        skeleton.bcast(MPI.COMM_WORLD, nbytes, root)

    real = bgsim.run(data, shape="2x2x2", nranks=nranks, coll={"bcast": "scatter_allgather"})
    skel = bgsim.run(sizes, shape="2x2x2", nranks=nranks, coll={"bcast": "scatter_allgather"})
    assert set(real.results) == {hashlib.sha256(np.arange(nbytes, dtype="u1").tobytes()).hexdigest()}
    n = nranks
    steps = n.bit_length() - 1 if n & (n - 1) == 0 else n - 1
    assert real.counters["messages_completed"] == n - 1 + n * steps
    for key in ("messages_completed", "packets_sent", "payload_bytes_delivered"):
        assert skel.counters[key] == real.counters[key], key
    assert skel.time_us == real.time_us


@pytest.mark.parametrize("nranks", [3, 5, 6, 7])
def test_bruck_allgather_is_ceil_log2_steps_of_varying_blocks(nranks):
    """MPICH's allgather for short totals on non-power-of-two communicators:
    every rank sends ceil(log2 n) messages, and blocks of varying sizes
    (Allgatherv) land in rank order."""
    def main():
        w = MPI.COMM_WORLD
        r, n = w.Get_rank(), w.Get_size()
        counts = [i % 3 + 1 for i in range(n)]
        displs = list(np.cumsum([0] + counts[:-1]))
        recv = np.zeros(sum(counts), "i4")
        w.Allgatherv(np.full(counts[r], r, "i4"), [recv, counts, displs, MPI.INT])
        return recv.tolist()
    res = bgsim.run(main, shape="2x2x2", nranks=nranks, coll={"allgather": "bruck"})
    want = [i for i in range(nranks) for _ in range(i % 3 + 1)]
    assert res.results == [want] * nranks
    assert res.counters["messages_completed"] == nranks * (nranks - 1).bit_length()
    assert res.collectives["allgather"] == {"bruck": 1}


@pytest.mark.parametrize("machine, shape, mode", [("bgl", "2x2x1", "coprocessor"), ("bgp", "2x2x1", "smp")])
def test_a_reduction_over_the_torus_costs_its_combine_on_the_core(machine, shape, mode):
    # Pairs of ranks (a sub-communicator: point-to-point algorithms). An
    # allreduce of 200 doubles (below 2 KB) is one recursive-doubling step:
    # the exchange a Sendrecv of the same buffer makes, then the combine of
    # 1,600 bytes at node.combine_bytes_per_cycle (2.87) on the core.
    def main(reduce):
        pair = MPI.COMM_WORLD.Split(MPI.COMM_WORLD.rank // 2, 0)
        a, b = np.ones(200), np.zeros(200)
        if reduce == "array":
            pair.Allreduce(a, b)
        elif reduce == "object":
            pair.allreduce(1.0)  # a Python object's operation: not costed
        elif reduce == "skeleton":
            skeleton.allreduce(pair, 1600, floating=True)
        elif reduce == "object exchange":
            pair.sendrecv(1.0, 1 - pair.rank, source=1 - pair.rank)
        else:
            pair.Sendrecv(a, 1 - pair.rank, recvbuf=b, source=1 - pair.rank)
    runs = {k: bgsim.run(lambda k=k: main(k), machine, shape=shape, mode=mode)
            for k in ("array", "skeleton", "exchange")}
    step = -(-1600 * 100 // 287)  # ceil(1600 / 2.87)
    for k in ("array", "skeleton"):
        for r in range(runs[k].nranks):
            extra = runs[k].ranks[r]["core_copy_cycles"] - runs["exchange"].ranks[r]["core_copy_cycles"]
            assert extra == pytest.approx(step, abs=1), (k, r)
    obj, ex = (bgsim.run(lambda k=k: main(k), machine, shape=shape, mode=mode) for k in ("object", "object exchange"))
    assert [r["core_copy_cycles"] for r in obj.ranks] == [r["core_copy_cycles"] for r in ex.ranks]


@pytest.mark.parametrize("machine,shape,mesh,mode", [("bgp", "4x4x2", "", "vn"), ("bgl", "3x2x4", "xz", "coprocessor"),
                                                     ("bgl", "5x1x1", "", "coprocessor"), ("bgp", "2x2x1", "y", "smp")])
def test_the_torus_allreduce_combines_every_rank_from_staggered_joins(machine, shape, mesh, mode):
    # Quarters of the partition (one rank on every node): the torus
    # allreduce by default on BG/P from 128 B to 32 KB, on request on
    # BG/L; ranks join at different times, so partial sums wait at nodes
    # whose ranks are still computing. Sizes that are no multiple of a
    # packet, integers and doubles, sums and maxima.
    def main():
        from bgsim.runtime import compute
        w = MPI.COMM_WORLD
        r, n = w.Get_rank(), w.Get_size()
        per = n // (4 if mode == "vn" else 1)
        sub = w.Split(r // per, r)
        s, m = sub.Get_rank(), sub.Get_size()
        out = []
        for count, dt, op in ((300, "f8", MPI.SUM), (17, "i4", MPI.MAX), (2000, "i8", MPI.SUM), (4096, "f8", MPI.SUM)):
            compute(seconds=1e-7 * ((s * 5 + count) % 7))
            x = (np.arange(count) * (s + 1) % 97).astype(dt)
            y = np.empty_like(x)
            sub.Allreduce(x, y, op=op)
            parts = [(np.arange(count) * (i + 1) % 97).astype(dt) for i in range(m)]
            want = np.maximum.reduce(parts) if op is MPI.MAX else np.sum(parts, axis=0)
            out.append(bool(np.array_equal(y, want)))
        return out
    # An SMP-mode quarter is the whole partition, where the tree comes first.
    coll = None if mode == "vn" else {"allreduce": "torus_rectangle"}
    res = bgsim.run(main, machine, shape=shape, mesh=mesh, mode=mode, coll=coll)
    assert all(all(r) for r in res.results)
    quarters = 4 if mode == "vn" else 1
    # 68 B of MAX is below the torus algorithm's 128 B: MPICH's, by default.
    want = {"torus_rectangle": 4 * quarters} if coll else {"torus_rectangle": 3 * quarters, "recursive_doubling": quarters}
    assert res.collectives["allreduce"] == want


def test_four_quarters_reducing_at_once_share_the_links_not_the_cores():
    # BG/P, 4x4x4 in VN mode: each quarter (one rank on every node) reduces
    # 16 KB on its own core of every node (the four cores do equal work:
    # with every quarter's combines on core 0 this fails). The node's DMA
    # engine writes the six torus FIFOs for all four processes, each sum
    # into the FIFO of its direction, so four at once take well under twice
    # one: the links and the DMA engine are shared, the cores are not. (With
    # a FIFO of its own per process, as BG/L's cores split them, the four
    # queued behind each other: 3.1 times one on 8x8x8.) MPICH's
    # point-to-point allreduce, whose every step crosses the links, is
    # slower and slows more (1.4 and 1.7 times one here).
    def quarters(active):
        def main():
            w = MPI.COMM_WORLD
            r, n = w.Get_rank(), w.Get_size()
            q = r // (n // 4)
            sub = w.Split(q, r)
            x = np.ones(2048)
            y = np.empty_like(x)
            w.Barrier()
            t0 = MPI.Wtime()
            if q < active:
                sub.Allreduce(x, y)
            return MPI.Wtime() - t0 if q == 0 else None
        return main

    def cost(active, coll=None):
        res = bgsim.run(quarters(active), "bgp", shape="4x4x4", mode="vn", coll=coll)
        return max(t for t in res.results if t is not None), res

    (one, r1), (four, r4) = cost(1), cost(4)
    assert r1.collectives["allreduce"] == {"torus_rectangle": 1} and r4.collectives["allreduce"] == {"torus_rectangle": 4}
    # Each quarter's reads, combines and sends are on its own core (T).
    work = [sum(r["core_protocol_cycles"] for r in r4.to_dict()["ranks"] if r["t"] == t) for t in range(4)]
    assert min(work) > 0.9 * max(work), work
    mpich = {"allreduce": "reduce_scatter_allgather"}
    p2p_one, p2p_four = cost(1, mpich)[0], cost(4, mpich)[0]
    assert four / one < 1.5 < p2p_four / p2p_one and one < p2p_one, (one, four, p2p_one, p2p_four)


def test_bgp_broadcasts_with_its_own_algorithms_at_every_size():
    # BG/P's MPI on a quarter (one rank on every node): the rectangle
    # broadcast at every size from any root; COMM_WORLD less its last
    # process is no rectangle and runs BG/P's binomial broadcast, whose
    # 16 KB messages go eager (no rendezvous scout), every rank sending to
    # all its children at once.
    def main():
        w = MPI.COMM_WORLD
        r, n = w.Get_rank(), w.Get_size()
        sub = w.Split(r // (n // 4), r)
        out = []
        for nbytes, root in ((16384, 0), (16384, 5), (300, 31), (4, 3)):
            buf = np.arange(nbytes, dtype="u1") + root if sub.Get_rank() == root else np.zeros(nbytes, dtype="u1")
            sub.Bcast(buf, root=root)
            out.append(bool((buf == (np.arange(nbytes) + root).astype("u1")).all()))
        less = w.Split(0 if r < n - 1 else MPI.UNDEFINED, r)
        if less != MPI.COMM_NULL:
            out.append(less.bcast(r if r == 0 else None, root=0) == 0)
            buf = np.arange(16384, dtype="u1") if less.Get_rank() == 7 else np.zeros(16384, dtype="u1")
            less.Bcast(buf, root=7)
            out.append(bool((buf == np.arange(16384).astype("u1")).all()))
        return out
    res = bgsim.run(main, "bgp", shape="4x4x2", mode="vn")
    assert all(all(r) for r in res.results)
    assert res.collectives["bcast"] == {"torus_deposit": 16, "torus_binomial": 2}
    # Every 16 KB message of the binomial tree went eager (the tree's 126
    # edges among them): no rendezvous message anywhere in the run.
    ranks = res.to_dict()["ranks"]
    assert sum(r["msgs_rendezvous"] for r in ranks) == 0
    assert sum(r["msgs_eager"] for r in ranks) >= 126


@pytest.mark.parametrize("threads", [1, 2])
def test_message_layer_collectives_are_forgotten_once_every_rank_is_done(threads):
    # A deposit-bit broadcast's and a torus allreduce's records hold a few
    # bytes per node of the partition: a program that runs thousands of
    # them must not keep them all.
    def main():
        from bgsim.mpishim.coll.base import Call
        w = MPI.COMM_WORLD
        r, n = w.Get_rank(), w.Get_size()
        sub = w.Split(r // (n // 4), r)
        x = np.ones(100)
        y = np.empty_like(x)
        for i in range(20):
            sub.Bcast(x, root=i % sub.Get_size())
            sub.Allreduce(x, y)
        w.Barrier()
        return Call(w, "check").rt.world.ml_records() if r == 0 else None
    res = bgsim.run(main, "bgp", shape="4x2x2", mode="vn", threads=threads, partitions=threads)
    assert res.collectives["bcast"] == {"torus_deposit": 80} and res.collectives["allreduce"] == {"torus_rectangle": 80}
    assert res.results[0] == (0, 0)
