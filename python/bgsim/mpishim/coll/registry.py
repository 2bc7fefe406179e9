"""The Python side of the collective registry. The core declares every
operation's algorithms (name, description, what a call needs) and chooses
the algorithm of each call (`bgsim._core.collective_choose`); this module
holds the Python implementation registered under each name, runs the
choice and records it (with the fallback, when the wanted algorithm cannot
run the call).
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Dict, List, Optional, Tuple

from ... import _core
from ...errors import ModelError

#: op -> algorithm name -> implementation.
IMPLEMENTATIONS: Dict[str, Dict[str, Callable[..., Any]]] = {}


def registry() -> Dict[str, List[Tuple[str, str, List[str], bool]]]:
    """The core's registry: op -> [(name, description, needs, hardware)]."""
    return {op: list(algos) for op, algos in _core.collective_registry()}


_DECLARED = {op: {a[0] for a in algos} for op, algos in registry().items()}


def algorithm(op: str, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers the implementation of algorithm `name` of `op` (a name the
    core declares; each once)."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        if name not in _DECLARED.get(op, ()):
            raise ModelError(f"collective {op}/{name} is implemented but not declared in the core's registry (mpi::coll)")
        impls = IMPLEMENTATIONS.setdefault(op, {})
        if name in impls:
            raise ModelError(f"collective {op}/{name} is implemented twice")
        impls[name] = fn
        return fn
    return deco


def choose(call: Any, op: str, nbytes: int, *, alu: bool = True, elements: Optional[int] = None,
           label: Optional[str] = None) -> str:
    """The algorithm of this call: the run's choice for `op` (`auto`: the
    default rule) if the call meets its needs, else the portable one; the
    run records the choice (under `label`, for a collective MPI runs inside
    another call, such as a communicator constructor's) and, once per kind,
    reports a fallback."""
    rt = call.rt
    w = rt.world
    if getattr(call, "nonblocking", False):
        # A nonblocking collective runs the default rule's point-to-point
        # algorithm (`nbc`): no hardware network, nothing that needs the
        # whole partition to itself.
        algo, note = _core.collective_choose(op, "auto", nbytes, call.n, False, w.tasks_per_node == 1, False, False,
                                             alu, elements, rt.faulty_torus)
        label = label or f"i{op}"
    else:
        wanted = rt.coll_choice.get(op, "auto")
        comps = rt.components
        algo, note = _core.collective_choose(op, wanted, nbytes, call.n, call.spans_partition(), w.tasks_per_node == 1,
                                             "collective" in comps, "barrier" in comps, alu, elements, rt.faulty_torus,
                                             call.every_node(), rt.torus_mpi)
    if note:
        key = (op, wanted, algo, note)
        if key not in rt.coll_warned:
            rt.coll_warned.add(key)
            print(f"bgsim: {op}: `{wanted}` not used ({note}); using `{algo}`", file=sys.stderr)
    if call.me == 0:
        name = algo if not note else f"{algo} (fallback from {wanted})"
        stats = rt.coll_stats.setdefault(label or op, {})
        stats[name] = stats.get(name, 0) + 1
    return algo


def run(op: str, call: Any, *args: Any, nbytes: int, alu: bool = True, elements: Optional[int] = None,
        label: Optional[str] = None) -> Any:
    """Chooses the algorithm of a call of `op` of `nbytes` (per rank, or the
    largest part) and runs it: `implementation(call, *args)`."""
    call.nbytes = nbytes
    algo = choose(call, op, nbytes, alu=alu, elements=elements, label=label)
    return IMPLEMENTATIONS[op][algo](call, *args)


def generic(op: str, call: Any, *args: Any) -> Any:
    """Runs what a portable MPI runs for this call (the algorithm `generic`
    stands for)."""
    return IMPLEMENTATIONS[op][_core.collective_generic(op, call.nbytes, call.n)](call, *args)


def markdown() -> str:
    """The registry as the table of docs/collectives.md."""
    lines = ["| operation | algorithm | what it does | needs |", "|---|---|---|---|"]
    for op, algos in registry().items():
        for name, desc, needs, hardware in algos:
            need = ", ".join(n.replace("_", " ") for n in needs) or "-"
            lines.append(f"| {op} | `{name}`{' (hardware)' if hardware else ''} | {desc} | {need} |")
    return "\n".join(lines)
