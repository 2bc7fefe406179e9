"""Blue Gene/P: the preset, its DMA engine, MPI on it and the partition
table."""

import numpy as np

import bgsim
from bgsim import MPI, Machine
from conftest import run_cli


def pingpong(nbytes, iters=10):
    def main():
        c = MPI.COMM_WORLD
        buf = np.zeros(max(nbytes, 1), "u1")[:nbytes]
        t0 = 0.0
        for i in range(iters + 2):
            if i == 2:
                t0 = MPI.Wtime()
            if c.rank == 0:
                c.Send(buf, dest=1)
                c.Recv(buf, source=1)
            elif c.rank == 1:
                c.Recv(buf, source=0)
                c.Send(buf, dest=0)
        return (MPI.Wtime() - t0) / iters / 2
    return main


def test_preset_has_four_cores_faster_links_and_a_dma_engine():
    m = Machine("bgp")
    assert m.info["cores"] == 4 and m.info["cpu_mhz"] == 850.0 and m.info["link_MBps"] == 425.0
    assert "dma" in m.info["components"] and "dma" not in Machine("bgl").info["components"]
    assert {"smp": 1, "dual": 2, "vn": 4} == {mode: Machine("bgp").with_settings(mode=mode).info["tasks_per_node"]
                                              for mode in ("smp", "dual", "vn")}
    p = run_cli("machine", "--machine", "bgp", check=True)
    assert 'name = "bgp"' in p.stdout and "[dma]" in p.stdout


def test_calibrated_latency_and_link_bound_bandwidth():
    # bgp.md's calibration row: about 2.8 us one way between neighbours.
    r = bgsim.run(pingpong(1), "bgp", shape="2x1x1", mode="smp")
    assert abs(r.results[0] * 1e6 - 2.8) < 0.01
    # Large messages stream at the link's payload rate, 425 x 240/262 MB/s.
    r = bgsim.run(pingpong(1 << 20, iters=2), "bgp", shape="2x1x1", mode="smp")
    mbps = (1 << 20) / r.results[0] / 1e6
    assert 370 < mbps < 425 * 240 / 262 + 1


def test_cores_never_touch_torus_packets():
    r = bgsim.run(pingpong(100_000, iters=2), "bgp", shape="2x1x1", mode="smp")
    for rk in r.ranks:
        assert rk["core_read_cycles"] == 0 and rk["core_inject_cycles"] == 0 and rk["packets_read"] == 0
    assert r.counters["packets_delivered"] > 2 * 400


def test_intranode_messages_go_through_the_dma_at_its_rate():
    # Two tasks of one node (VN, T first): copied by the DMA engine at about
    # 6 links' worth, 3 bytes per cycle = 2,550 MB/s, far above a link.
    r = bgsim.run(pingpong(1 << 20, iters=2), "bgp", shape="2x1x1", mode="vn", nranks=2, mapping="TXYZ")
    mbps = (1 << 20) / r.results[0] / 1e6
    assert 2000 < mbps < 2550
    assert r.counters["packets_delivered"] == 0


def test_rank_count_picks_the_partition_and_vn_runs_four_tasks_per_node():
    def main():
        c = MPI.COMM_WORLD
        return c.allreduce(1), MPI.Get_processor_name()
    r = bgsim.run(main, "bgp", mode="vn", nranks=8192)
    assert r.results[0][0] == 8192
    p = run_cli("run", "--machine", "bgp", "--mode", "vn", "-n", "4096", "--skeleton", "ep", "--class", "S",
                "--iterations", "1", check=True)
    assert "on 8x8x16 (vn)" in p.stderr
    r = bgsim.run(lambda: MPI.COMM_WORLD.rank, "bgp", shape="2x2x1", mode="vn")
    assert len(r.ranks) == 16 and {rk["t"] for rk in r.ranks} == {0, 1, 2, 3}
