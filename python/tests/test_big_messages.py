"""Messages of 1 GiB and more (issue: they used to panic the core): sizes
up to 4 GiB - 1 run, larger ones are refused with a message that says the
limit, before anything is copied or allocated."""

import numpy as np
import pytest

import bgsim
from bgsim import MPI, _core
from bgsim.errors import UsageError

GiB = 1 << 30


def test_the_limit_is_the_largest_u32():
    assert _core.MAX_MESSAGE_BYTES == 4 * GiB - 1


def test_a_three_gib_message_between_two_tasks_of_a_node_runs():
    # np.zeros maps pages lazily and size-only buffers are never read, so
    # nothing of the 3 GiB is touched.
    def main():
        comm = MPI.COMM_WORLD
        buf = np.zeros(3 * GiB, "u1")
        if comm.Get_rank() == 0:
            comm.Send(buf, 1, tag=5)
            return None
        st = MPI.Status()
        comm.Recv(buf, 0, tag=5, status=st)
        return st.Get_count(MPI.BYTE)

    r = bgsim.run(main, shape="1x1x1", mode="vn", nranks=2, buffers="size-only", memory_check=False)
    assert r.results[1] == 3 * GiB and r.time_us > 0


def test_a_message_over_the_limit_is_refused_by_name():
    def main():
        comm = MPI.COMM_WORLD
        if comm.Get_rank() == 0:
            comm.Send(np.zeros(4 * GiB + 16, "u1"), 1)

    with pytest.raises(Exception, match="a message of 4294967312 bytes: messages are limited to 4294967295 bytes"):
        bgsim.run(main, shape="2x1x1", nranks=2, buffers="size-only", memory_check=False)


def test_a_world_refuses_a_size_only_send_over_the_limit():
    w = _core.World("bgl", ['partition.shape="2x1x1"'], 2, "XYZT", None, 1, True, "packet", 1, False)
    with pytest.raises(UsageError, match="messages are limited to 4294967295 bytes"):
        w.isend(0, 1, 0, 0, 5 * GiB)


def test_a_trace_with_a_message_over_the_limit_is_refused_at_its_line(tmp_path):
    from bgsim import trace
    d = tmp_path / "t"
    d.mkdir()
    (d / "rank-0.trace").write_text("# bgsim-trace 2 rank 0 size 2\n0 1 send 1 0 5000000000 0\n")
    (d / "rank-1.trace").write_text("# bgsim-trace 2 rank 1 size 2\n0 1 recv 0 0 5000000000 0\n")
    with pytest.raises(UsageError, match=r"rank-0.trace:2: bytes 5000000000: bgsim's messages hold 0 to 4294967295"):
        trace.load(str(d))
