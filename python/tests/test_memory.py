"""No run dies for lack of memory unannounced: a run whose estimate exceeds
what the process may use is refused before it allocates (naming both), and
an MPI run that nears the limit while it runs stops cleanly."""

import pytest

import bgsim
from bgsim import MPI, errors, memory, runtime


def test_the_estimate_grows_with_nodes_and_ranks():
    assert memory.estimate_bytes(65536) > memory.estimate_bytes(4096) > 0
    assert memory.estimate_bytes(4096, ranks=4096) > memory.estimate_bytes(4096)
    # Messages in flight count where they are known: a 4,096-rank
    # all-to-all posts 16.8 M at once, about 4 GB.
    a2a = 4096 * 4095
    assert memory.estimate_bytes(1024, 4096, messages=a2a) - memory.estimate_bytes(1024, 4096) == a2a * memory.MESSAGE_BYTES
    assert 3 * 2**30 < a2a * memory.MESSAGE_BYTES < 6 * 2**30
    # 128x128x128 would need about 7 GB before a single event.
    assert memory.estimate_bytes(128 ** 3) > 6 * 2**30
    limit = memory.limit_bytes()
    assert limit is None or limit > memory.rss_bytes()


def test_a_run_that_cannot_fit_is_refused_before_it_allocates(monkeypatch):
    # These limits are made up for the test, a few MB above what the process
    # holds: the core's watch (the backstop near a real limit, tested below)
    # stays out of it.
    monkeypatch.setattr(memory, "WATCH_SHARE", 100.0)
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + (100 << 20))
    with pytest.raises(errors.MemoryLimitError, match=r"traffic on 64x32x32 needs about 0\.2 GB \(65,536 nodes\) beside") as e:
        bgsim.run_traffic("uniform", shape="64x32x32", measure_ncycles=100)
    assert isinstance(e.value, MemoryError) and isinstance(e.value, bgsim.BgsimError)
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + (50 << 20))
    with pytest.raises(errors.MemoryLimitError, match="an MPI run of 4,096 ranks on 16x16x16"):
        bgsim.run(lambda: None, shape="16x16x16")
    # On threads each partition holds a copy of every node's state: what
    # fits on one thread may not on eight.
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + memory.estimate_bytes(512, 512) + (5 << 20))
    bgsim.run(lambda: None, shape="8x8x8")
    with pytest.raises(errors.MemoryLimitError, match=r"512 ranks on 8x8x8 in 8 partitions needs .* \(4,096 nodes"):
        bgsim.run(lambda: None, shape="8x8x8", threads=8)
    # Asked to, it runs anyway.
    assert bgsim.run_traffic("uniform", shape="2x2x2", measure_ncycles=100, memory_check=False).completed


def test_an_mpi_run_that_nears_the_limit_stops_cleanly(monkeypatch):
    monkeypatch.setattr(memory, "WATCH_SHARE", 100.0)
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + (150 << 20))
    monkeypatch.setattr(runtime, "MEMORY_CHECK_S", 0.0)

    def hog():
        held = []
        for _ in range(400):
            held.append(bytearray(1 << 20))
            MPI.COMM_WORLD.Barrier()
        return len(held)

    with pytest.raises(errors.MemoryLimitError, match="the run stopped at .* us simulated"):
        bgsim.run(hog, shape="2x1x1")
    # Without the check it runs to its end.
    r = bgsim.run(lambda: MPI.COMM_WORLD.allreduce(1), shape="2x1x1", memory_check=False)
    assert r.results == [2, 2]


def test_the_cores_watch_stops_the_process_with_a_message_whatever_it_does():
    """The backstop for memory that grows inside one call into the core:
    the watch samples the process every 100 ms and ends it with a message
    (status 1) once it holds more than its bound - here 1 byte."""
    import subprocess
    import sys
    code = "\n".join([
        "import time",
        "from bgsim import _core",
        "w = _core.World('bgl', ['partition.shape=\"2x1x1\"'], 2, 'XYZT', None, 1, True, 'packet', 1, False)",
        "w.watch_memory(1, 8 << 30)",
        "time.sleep(5)",
        "print('not stopped')",
    ])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "not stopped" not in p.stdout
    assert "the run was stopped: it holds" in p.stderr and "of the about 8.0 GB this process may use" in p.stderr


def test_a_core_driven_halo_counts_its_messages_in_flight(monkeypatch):
    from bgsim import skeleton
    # 4,096 ranks on a 64 x 64 grid: four neighbours each, 16,384 messages.
    need = memory.estimate_bytes(1024, 4096, rank_bytes=memory.CORE_RANK_BYTES, messages=4096 * 4)
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + need - 1)
    with pytest.raises(errors.MemoryLimitError, match=r"4,096 ranks with up to 16,384 messages in flight"):
        skeleton.halo_in_core((64, 64), 1024, 1, "bgp", shape="8x8x16", mode="vn")
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + need + (64 << 20))
    assert skeleton.halo_in_core((64, 64), 1024, 1, "bgp", shape="8x8x16", mode="vn")["messages"] == 16384


def test_a_replay_counts_the_messages_its_trace_holds_in_flight(tmp_path, monkeypatch):
    from bgsim import trace as bgtrace
    n = 4
    d = tmp_path / "t"
    d.mkdir()
    for r in range(n):
        # Three receives and three sends posted, then one wait for all; then
        # an all-to-all, whose three sends and receives a rank posts at once.
        peers = [p for p in range(n) if p != r]
        lines = [f"0 0 irecv {p} 1 8 0 {k + 1}" for k, p in enumerate(peers)]
        lines += [f"0 0 isend {p} 1 8 0 {k + 4}" for k, p in enumerate(peers)]
        lines += ["0 0 waitall 6 1 2 3 4 5 6", "0 0 alltoall 8 0", "0 0 finalize"]
        (d / f"rank-{r}.trace").write_text(f"# bgsim-trace 2 rank {r} size {n}\n" + "\n".join(lines) + "\n")
    t = bgtrace.load(str(d))
    assert t.in_flight() == (12, 12)  # six requests a rank, half a message each
    assert bgsim.run(bgtrace.program(t), shape="2x2x1", in_flight=t.in_flight()).time_s > 0
    # The check before the run counts them, a collective's exchange's at
    # what the core holds of one (`memory.EXCHANGE_MESSAGE_BYTES`).
    margin = 40 << 20
    monkeypatch.setattr(memory, "WATCH_SHARE", 100.0)
    monkeypatch.setattr(memory, "limit_bytes", lambda: memory.rss_bytes() + memory.estimate_bytes(4, 4) + margin)
    k = 2 * margin // (memory.MESSAGE_BYTES + memory.EXCHANGE_MESSAGE_BYTES)  # fits as one kind, not the other
    assert k * memory.EXCHANGE_MESSAGE_BYTES < margin < k * memory.MESSAGE_BYTES
    with pytest.raises(errors.MemoryLimitError, match=rf"4 ranks on 2x2x1 needs .* with up to {k:,} messages in flight"):
        bgsim.run(lambda: None, shape="2x2x1", in_flight=(k, 0))
    assert bgsim.run(lambda: None, shape="2x2x1", in_flight=(0, k)).time_s >= 0
    with pytest.raises(errors.MemoryLimitError, match=rf"with up to {2 * k:,} messages in flight"):
        bgsim.run(lambda: None, shape="2x2x1", in_flight=(k, k))
    with pytest.raises(errors.UsageError, match=r"in_flight = \(-1, 0\): two whole numbers"):
        bgsim.run(lambda: None, shape="2x2x1", in_flight=(-1, 0))
