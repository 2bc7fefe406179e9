"""A program run with the torus on its coarse tier (`fidelity="coarse"`,
`bgsim run --fidelity coarse`): the same program and software, packets that
book the links of their route instead of going through routers."""

import json

import numpy as np
import pytest

import bgsim
from bgsim import MPI, phase


def _pingpong(dest, size):
    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        b = np.zeros(size, "u1")
        c.Barrier()
        t0 = MPI.Wtime()
        for _ in range(3):
            if r == 0:
                c.Send(b, dest, 0)
                c.Recv(b, dest, 0)
            elif r == dest:
                c.Recv(b, 0, 0)
                c.Send(b, 0, 0)
        return MPI.Wtime() - t0
    return main


@pytest.mark.parametrize("dest", [1, 5, 21])  # 1, 2 and 3 hops on 4x4x4
@pytest.mark.parametrize("size", [8, 600])  # one packet, eager
def test_a_lone_message_takes_exactly_the_packet_tiers_time(dest, size):
    """Without contention a packet's head moves a hop latency per hop and
    its tail follows its bytes later on both tiers."""
    packet = bgsim.run(_pingpong(dest, size), shape="4x4x4")
    c = bgsim.run(_pingpong(dest, size), shape="4x4x4", fidelity="coarse")
    assert c.fidelity == "coarse" and packet.fidelity == "packet"
    assert c.results[0] == packet.results[0] > 0
    assert c.counters["packets_delivered"] == packet.counters["packets_delivered"]
    assert c.counters["no_token_stalls"] == 0


@pytest.mark.parametrize("machine,mode", [("bgl", "coprocessor"), ("bgp", "vn")])
@pytest.mark.parametrize("pattern", ["alltoall", "halo"])
def test_the_coarse_torus_stays_within_its_stated_bound(machine, mode, pattern):
    """The grid of docs/phase.md at its smallest, run by phase.compare. Stated bound: within 25% below
    and 10% above the packet tier (it leaves out the routers' finite
    buffers, so it runs short under load)."""
    row = phase.compare(phase.Config(machine, mode, "2x2x2", pattern, 16384))
    assert -25 <= row["run_error_pct"] <= 10, row


def test_data_and_collectives_are_the_programs_on_the_coarse_tier():
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        got = comm.alltoall([r * 100 + d for d in range(n)])
        return got == [s * 100 + r for s in range(n)], comm.allreduce(r)
    res = bgsim.run(main, shape="2x2x2", fidelity="coarse")
    assert res.results == [(True, 28)] * 8
    assert "coarse tier" in res.summary()


def test_the_cli_runs_a_program_on_the_coarse_tier_and_refuses_what_it_cannot(cli, tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\nprint(c.allreduce(c.Get_rank()))\n")
    out = tmp_path / "r.json"
    p = cli("run", "--shape", "2x2x2", "--fidelity", "coarse", "--quiet", "--json", str(out), str(prog), check=True)
    assert json.loads(out.read_text())["fidelity"] == "coarse"
    p = cli("run", "--shape", "2x2x2", "--fidelity", "flow", str(prog))
    assert p.returncode == 2 and "--fidelity" in p.stderr and "coarse" in p.stderr
    p = cli("run", "--shape", "4x4x4", "--fidelity", "coarse", "--set", 'torus.dead_links=["1,0,0:x+"]', str(prog))
    assert p.returncode != 0 and "coarse tier" in p.stderr and "dead" in p.stderr
    # Bit errors and their retransmissions are the packet tier's too: a run
    # that asks for them is refused, not silently error-free.
    with pytest.raises(bgsim.errors.UsageError, match="coarse tier models error-free links .torus.link_bit_error_rate is 0.0001"):
        bgsim.run(lambda: None, shape="2x2x2", fidelity="coarse", settings=["torus.link_bit_error_rate=1e-4"])
    with pytest.raises(bgsim.errors.UsageError, match="allowed packet, coarse"):
        bgsim.run(lambda: None, shape="2x2x2", fidelity="flow")
    # A link's line is read a fixed 1,024 ticks ahead of its first arrival:
    # a hop may take no longer.
    with pytest.raises(bgsim.errors.UsageError, match="hop latency of at most 1024 ticks .it is 1260"):
        bgsim.run(lambda: None, shape="2x2x2", fidelity="coarse", settings=["clock.ticks_per_cpu_cycle=20"])


def test_the_coarse_links_count_what_crosses_them():
    """Deterministic routes are the same on both tiers: every link carries
    the same packets (the coarse tier keeps its links' counters apart from
    the routers'), and they add up to the run's packet-hops."""
    packet = bgsim.run(_pingpong(21, 600), shape="4x4x4")
    c = bgsim.run(_pingpong(21, 600), shape="4x4x4", fidelity="coarse")
    assert sum(c.link_packets) == c.counters["packet_hops"] > 0
    assert list(c.link_packets) == list(packet.link_packets)
    busy = [i for i, p in enumerate(c.link_packets) if p]
    assert busy and all(c.link_util_pct[i] > 0 for i in busy)
