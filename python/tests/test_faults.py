"""Dead nodes and links through the CLI and the Python API: packets route
around dead links, ranks go on live nodes, and what cannot be reached is
refused before the run, by name."""

import json

import bgsim

PROGRAM = """
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
got = c.sendrecv(r, dest=(r + 1) % n, source=(r - 1) % n)
assert got == (r - 1) % n
total = c.allreduce(r)
if r == 0:
    print("ranks", n, "sum", total)
"""


def test_traffic_routes_around_dead_links_and_says_so(cli):
    links = '["1,0,0:x+","2,3,1:y-","0,0,2:z+"]'
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--load", "0.4", "--warmup", "0", "--measure", "3000", "--drain",
            "--json", "--set", f"torus.dead_links={links}", check=True)
    d = json.loads(p.stdout)
    assert d["dead_links"] == 3 and d["completed"]
    assert 0 < d["fault_routed_packets"] <= d["packets"]["created"]
    assert d["packets"]["delivered"] == d["packets"]["injected"] and d["packets"]["in_flight_at_end"] == 0
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--measure", "1000",
            "--set", f"torus.dead_links={links}", check=True)
    assert "3 dead links" in p.stdout


def test_bad_fault_entries_and_unfit_patterns_are_refused_by_name(cli):
    p = cli("machine", "--shape", "4x4x4", "--set", 'torus.dead_links=["1,0,0:q+"]')
    assert p.returncode == 2 and "torus.dead_links" in p.stderr and "x+ x- y+ y- z+ z-" in p.stderr
    p = cli("machine", "--shape", "4x4x4", "--set", 'torus.dead_nodes=["4,0,0"]')
    assert p.returncode == 2 and "torus.dead_nodes" in p.stderr and "x from 0 to 3" in p.stderr
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--set", 'torus.dead_nodes=["1,1,1"]')
    assert p.returncode == 2 and "dead node" in p.stderr
    p = cli("traffic", "--pattern", "line_fill", "--shape", "4x4x4", "--set", 'torus.dead_links=["1,1,1:x+"]')
    assert p.returncode == 2 and "cannot route around dead links" in p.stderr
    # A node whose six links are dead: nothing joins it.
    cut = json.dumps([f"1,1,1:{d}" for d in ("x+", "x-", "y+", "y-", "z+", "z-")])
    p = cli("traffic", "--pattern", "uniform", "--shape", "4x4x4", "--set", f"torus.dead_links={cut}")
    assert p.returncode == 2 and "no route from node" in p.stderr and "through one intermediate node" in p.stderr


def test_mpi_ranks_go_on_live_nodes(cli, tmp_path):
    prog = tmp_path / "ring.py"
    prog.write_text(PROGRAM)
    # A ring of 6 with node 2 dead: 5 ranks, the default count, all reachable.
    p = cli("run", "--shape", "6x1x1", "--set", 'torus.dead_nodes=["2,0,0"]', str(prog), check=True)
    assert "ranks 5 sum 10" in p.stdout
    # On a 4x4x1 torus a live node whose four neighbours are dead cannot be
    # reached: refused before the run, naming a pair.
    ring = '["0,1,0","2,1,0","1,0,0","1,2,0"]'
    p = cli("run", "--shape", "4x4x1", "--set", f"torus.dead_nodes={ring}", str(prog))
    assert p.returncode == 2 and "no route from node" in p.stderr and "mapfile" in p.stderr
    # A mapfile on the dead node is refused; one that avoids its lines runs.
    bad = tmp_path / "bad.map"
    bad.write_text("0 0 0 0\n1 0 0 0\n")
    p = cli("run", "--shape", "4x4x1", "-n", "2", "--map", str(bad), "--set", 'torus.dead_nodes=["1,0,0"]', str(prog))
    assert p.returncode == 2 and "rank 1 is placed on slot 1 0 0 0, a dead node" in p.stderr
    good = tmp_path / "good.map"
    good.write_text("".join(f"{x} 2 0 0\n" for x in range(4)))
    p = cli("run", "--shape", "4x4x1", "-n", "4", "--map", str(good), "--set", 'torus.dead_nodes=["1,0,0"]', str(prog),
            check=True)
    assert "ranks 4 sum 6" in p.stdout


ALLTOALL = """
from mpi4py import MPI
c = MPI.COMM_WORLD
r, n = c.Get_rank(), c.Get_size()
assert c.alltoall([r] * n) == list(range(n))
assert c.allreduce(r) == n * (n - 1) // 2
"""


def test_a_dead_node_where_routes_turn_is_passed_by_forwarding(cli, tmp_path):
    # (1,0,0) dead on 4x4x1: from (0,0,0) to (1,1,0) every dimension-ordered
    # route turns there. Those packets go through an intermediate node,
    # whose packet layer sends them on; every message arrives, on BG/L's
    # cores and BG/P's DMA engine alike, and the same on every cut.
    prog = tmp_path / "a2a.py"
    prog.write_text(ALLTOALL)
    out = {}
    for machine in ("bgl", "bgp"):
        for threads in ("1", "2"):
            j = tmp_path / f"{machine}{threads}.json"
            cli("run", "--machine", machine, "--shape", "4x4x1", "--threads", threads, "--partitions", threads, "--json", str(j),
                "--set", 'torus.dead_nodes=["1,0,0"]', str(prog), check=True)
            d = json.loads(j.read_text())
            out[machine, threads] = (d["time_s"], d["counters"])
        (t1, c1), (t2, c2) = out[machine, "1"], out[machine, "2"]
        assert (t1, c1) == (t2, c2), f"{machine}: one thread and two differ"
        assert 0 < c1["fault_forwarded_packets"] < c1["fault_routed_packets"] < c1["packets_sent"]
        if machine == "bgl":
            # Each forwarded packet is delivered twice: at its intermediate
            # node and where it goes. (On BG/P in VN mode packets between
            # tasks of one node never enter the torus.)
            assert c1["packets_delivered"] == c1["packets_sent"] + c1["fault_forwarded_packets"]
    healthy = tmp_path / "healthy.json"
    cli("run", "--shape", "4x4x1", "-n", "15", "--json", str(healthy), str(prog), check=True)
    c = json.loads(healthy.read_text())["counters"]
    assert c["fault_forwarded_packets"] == c["fault_routed_packets"] == 0


def test_dead_links_keep_mpi_results_and_the_deposit_broadcast_out():
    def main():
        import numpy as np
        from mpi4py import MPI
        c = MPI.COMM_WORLD
        a = np.arange(64, dtype=np.int64) if c.rank == 0 else np.zeros(64, dtype=np.int64)
        c.Bcast(a, root=0)
        assert a.sum() == 64 * 63 // 2
    coll = {"bcast": "torus_deposit"}
    healthy = bgsim.run(main, shape="4x4x4", coll=coll)
    assert healthy.collectives["bcast"] == {"torus_deposit": 1}
    faulty = bgsim.run(main, shape="4x4x4", coll=coll, settings=['torus.dead_links=["1,1,1:y+"]'])
    assert list(faulty.collectives["bcast"]) == ["binomial (fallback from torus_deposit)"]
