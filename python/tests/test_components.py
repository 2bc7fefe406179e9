"""A machine is the components its TOML declares: without a [collective] or
[barrier] section it has no tree or GI barrier, MPI's collectives run on the
torus, and the hardware algorithms are refused by name."""

import os
import re

import pytest

import bgsim
from bgsim import MPI

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _without(*sections):
    text = open(os.path.join(ROOT, "machines", "bgl.toml")).read()
    for s in sections:
        text = re.sub(rf"(?ms)^\[{s}\]\n.*?(?=^\[)", "", text)
    return text.replace('name = "bgl"', 'name = "bgl-no-hw-collectives"')


def _program():
    c = MPI.COMM_WORLD
    c.Barrier()
    x = c.bcast(c.Get_rank() + 7, root=0)
    return c.allreduce(x)


def test_a_machine_without_tree_and_barrier_runs_collectives_on_the_torus(tmp_path):
    f = tmp_path / "nohw.toml"
    f.write_text(_without("collective", "barrier"))
    m = bgsim.Machine(str(f))
    assert "[collective]" not in m.toml and "[barrier]" not in m.toml
    r = bgsim.run(_program, m, shape="2x2x2")
    assert r.results == [7 * 8] * 8
    used = {op: set(a) for op, a in r.collectives.items()}
    assert used["barrier"] == {"dissemination"} and "tree" not in used["bcast"] and "tree" not in used["allreduce"]
    assert r.counters["tree_operations"] == 0 and r.tree_links == []
    # The same program on bgl uses both networks.
    r = bgsim.run(_program, "bgl", shape="2x2x2")
    tree_calls = sum(a.get("tree", 0) for a in r.collectives.values())
    assert r.collectives["barrier"] == {"gi": 1} and tree_calls >= 1 and r.counters["tree_operations"] == tree_calls


def test_hardware_algorithms_need_their_component(tmp_path):
    f = tmp_path / "notree.toml"
    f.write_text(_without("collective"))
    with pytest.raises(bgsim.MachineError, match=r"collectives.bcast.*\[collective\]"):
        bgsim.Machine(str(f), ["collectives.bcast=tree"])
    with pytest.raises(bgsim.MachineError, match=r"collectives.bcast"):
        bgsim.run(_program, str(f), shape="2x2x2", coll={"bcast": "tree"})
    # The barrier is still there.
    r = bgsim.run(_program, str(f), shape="2x2x2")
    assert r.collectives["barrier"] == {"gi": 1}
