"""A program run with the torus on its coarse tier (`fidelity="coarse"`,
`bgsim run --fidelity coarse`): the same program and software, packets that
book the links of their route instead of going through routers."""

import json

import numpy as np
import pytest

import bgsim
from bgsim import MPI, phase


def _pingpong(dest, size, rounds=3, back=True):
    """Rank 0 sends `size` bytes to `dest` `rounds` times, each time
    answered the same way when `back`; every rank returns its time."""
    def main():
        c = MPI.COMM_WORLD
        r = c.Get_rank()
        b = np.zeros(size, "u1")
        c.Barrier()
        t0 = MPI.Wtime()
        for _ in range(rounds):
            if r == 0:
                c.Send(b, dest, 0)
                if back:
                    c.Recv(b, dest, 0)
            elif r == dest:
                c.Recv(b, 0, 0)
                if back:
                    c.Send(b, 0, 0)
        return MPI.Wtime() - t0
    return main


def _send_once(dest, size):
    return _pingpong(dest, size, rounds=1, back=False)


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


def test_a_fifo_sends_one_packet_at_a_time_on_the_coarse_torus():
    """64 KB to a node three hops away on BG/P: the rendezvous data is
    routed dynamically, but every packet to the peer goes through one
    injection FIFO, which lets one packet out after the other: one link's
    rate, the packet tier's time exactly (when each packet booked its
    first link as it was written, the message took three links at once:
    59.6 us against 171.1)."""
    packet = bgsim.run(_send_once(21, 65536), "bgp", shape="4x4x4")
    c = bgsim.run(_send_once(21, 65536), "bgp", shape="4x4x4", fidelity="coarse")
    assert c.results[21] == packet.results[21] > 170e-6


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


# ----------------------------------------------------------------- message tier

def test_a_lone_message_moves_as_trains_in_the_packet_tiers_time():
    """64 KB to a neighbour on BG/P (rendezvous, the DMA engine's remote
    get): 274 data packets on packets; four trains of 64, one of 17 and
    the last, short packet on the message tier, whose links hold each train for
    its packets back to back and whose engine reads each as it comes in.
    The same time to within 0.1%, the same packets counted, a sixth of the
    events or fewer."""
    packet = bgsim.run(_send_once(1, 65536), "bgp", shape="4x4x4")
    m = bgsim.run(_send_once(1, 65536), "bgp", shape="4x4x4", fidelity="message")
    assert m.fidelity == "message" and "message tier" in m.summary()
    assert m.results[1] == pytest.approx(packet.results[1], rel=1e-3)
    assert m.counters["packets_delivered"] == packet.counters["packets_delivered"] == 276
    assert sum(m.link_packets) == m.counters["packet_hops"] == sum(packet.link_packets)
    assert m.counters["events"] * 6 < packet.counters["events"]


@pytest.mark.parametrize("pattern", ["alltoall", "halo"])
def test_the_message_tier_stays_within_its_stated_bound(pattern):
    """The smallest BG/P cells of the grid of docs/coarse.md (16 KB, 2x2x2
    VN): within 15% of the packet tier either way (stated there)."""
    cfg = phase.Config("bgp", "vn", "2x2x2", pattern, 16384)
    p, m = phase.packet_time(cfg), phase.packet_time(cfg, "message")
    assert -15 <= 100 * (m - p) / p <= 15, (p, m)


def test_trains_sharing_links_and_engines_keep_to_the_bound():
    """A ring of 64 KB Sendrecv on 2x2x2 in VN mode: four processes a node
    send to the next node at once, so their trains share the pinned FIFOs'
    links and both units of every DMA engine. The slowest rank within 10%
    of the packet tier (trains of 256 packets, a whole message each, gave
    25% more: one link got more than its share)."""
    def main():
        c = MPI.COMM_WORLD
        r, n = c.Get_rank(), c.Get_size()
        out, got = np.zeros(65536, "u1"), np.zeros(65536, "u1")
        c.Barrier()
        t0 = MPI.Wtime()
        c.Sendrecv(out, (r + 1) % n, recvbuf=got, source=(r - 1) % n)
        return MPI.Wtime() - t0
    p = max(bgsim.run(main, "bgp", shape="2x2x2", mode="vn").results)
    m = max(bgsim.run(main, "bgp", shape="2x2x2", mode="vn", fidelity="message").results)
    assert abs(m - p) / p < 0.10, (p, m)


def test_the_message_tier_carries_the_programs_data_and_needs_a_dma_engine(cli, tmp_path):
    def main():
        comm = MPI.COMM_WORLD
        n, r = comm.Get_size(), comm.Get_rank()
        a = np.arange(20000, dtype="i4") + r
        b = np.empty_like(a)
        comm.Sendrecv(a, (r + 1) % n, recvbuf=b, source=(r - 1) % n)
        return bool((b == np.arange(20000) + (r - 1) % n).all()), comm.allreduce(r)
    res = bgsim.run(main, "bgp", shape="2x2x2", mode="vn", fidelity="message")
    assert res.results == [(True, 496)] * 32 and res.fidelity == "message"
    with pytest.raises(bgsim.errors.UsageError, match="message tier needs a machine whose DMA engine moves the packets .* on bgl"):
        bgsim.run(main, "bgl", shape="2x2x2", fidelity="message")
    prog = tmp_path / "p.py"
    prog.write_text("from mpi4py import MPI\nc = MPI.COMM_WORLD\nprint(c.allreduce(c.Get_rank()))\n")
    out = tmp_path / "r.json"
    cli("run", "--machine", "bgp", "--shape", "2x2x2", "--fidelity", "message", "--quiet", "--json", str(out), str(prog), check=True)
    assert json.loads(out.read_text())["fidelity"] == "message"
    p = cli("run", "--shape", "2x2x2", "--fidelity", "message", str(prog))
    assert p.returncode != 0 and "DMA engine" in p.stderr
