"""Traces of real MPI programs: record a C, C++ or Fortran MPI program's
calls under a real MPI (`record`: a PMPI library, `bgsim_trace.c`, built
with the MPI's own `mpicc` and preloaded into the program), and replay them
on the simulated machine (`replay`): point-to-point messages, waits and
collectives through the same MPI module and collective algorithms as Python
programs, and the time between calls as compute, scaled by a CPU factor.

A trace is a directory of `rank-R.trace` text files (the format is in
`bgsim_trace.c`). The replay moves messages of the recorded sizes (their
content is zeros) and reproduces the calls in each rank's order; a call the
replay cannot do (another communicator than MPI_COMM_WORLD, MPI_Waitany ...)
is refused before the run, naming its file and line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Sequence

import numpy as np

from .. import MPI, _core
from ..errors import UsageError
from ..runtime import compute

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bgsim_trace.c")

#: Arguments of every call the replay knows: their names (all integers).
CALLS: Dict[str, Sequence[str]] = {
    "send": ("dest", "tag", "bytes"), "recv": ("src", "tag", "bytes"),
    "isend": ("dest", "tag", "bytes", "req"), "irecv": ("src", "tag", "bytes", "req"),
    "wait": ("req",), "waitall": ("k",), "sendrecv": ("dest", "stag", "sbytes", "src", "rtag", "rbytes"),
    "barrier": (), "bcast": ("root", "bytes"), "reduce": ("root", "bytes"), "allreduce": ("bytes",),
    "allgather": ("bytes",), "alltoall": ("bytes",), "gather": ("root", "bytes"), "scatter": ("root", "bytes"),
    "finalize": (),
}
_TYPES = {"f4": "f4", "f8": "f8", "f16": "f8", "i1": "i1", "i2": "i2", "i4": "i4", "i8": "i8"}


@dataclass
class Call:
    """One recorded call: when it started and ended (s), what, arguments."""

    t0: float
    t1: float
    name: str
    args: List[int]
    #: reduce / allreduce: numpy type code and operation name.
    dtype: str = "u1"
    op: str = "sum"
    where: str = ""


@dataclass
class Trace:
    """Every rank's calls, in order."""

    path: str
    ranks: List[List[Call]] = field(default_factory=list)

    @property
    def nranks(self) -> int:
        return len(self.ranks)

    def messages(self) -> Dict[tuple, List[int]]:
        """The point-to-point messages the trace sends: (source, destination)
        -> [messages, bytes]."""
        out: Dict[tuple, List[int]] = {}
        for r, calls in enumerate(self.ranks):
            for c in calls:
                if c.name in ("send", "isend", "sendrecv"):
                    cell = out.setdefault((r, c.args[0]), [0, 0])
                    cell[0] += 1
                    cell[1] += c.args[2]
        return out


def load(path: str) -> Trace:
    """Reads and checks a trace directory."""
    if not os.path.isdir(path):
        raise UsageError(f"trace `{path}`: not a directory (expected rank-0.trace, rank-1.trace ...)")
    files = sorted((f for f in os.listdir(path) if re.fullmatch(r"rank-\d+\.trace", f)),
                   key=lambda f: int(f[5:-6]))
    if not files:
        raise UsageError(f"trace `{path}`: no rank-R.trace files")
    # The number of ranks, from the first file's header.
    with open(os.path.join(path, files[0]), encoding="utf-8") as f:
        head = f.readline().split()
    try:
        n = int(head[head.index("size") + 1])
    except (ValueError, IndexError):
        raise UsageError(f"{os.path.join(path, files[0])}:1: expected `# bgsim-trace 1 rank R size N`") from None
    trace = Trace(path)
    for r in range(n):
        name = os.path.join(path, f"rank-{r}.trace")
        if not os.path.exists(name):
            raise UsageError(f"trace `{path}`: rank-{r}.trace is missing (the trace has {n} ranks)")
        trace.ranks.append(_parse(name, r, n))
    return trace


def _parse(name: str, rank: int, n: int) -> List[Call]:
    calls: List[Call] = []
    with open(name, encoding="utf-8") as f:
        lines = f.read().splitlines()
    head = lines[0].split() if lines else []
    if head[:3] != ["#", "bgsim-trace", "1"] or head[3:5] != ["rank", str(rank)] or head[5:7] != ["size", str(n)]:
        raise UsageError(f"{name}:1: expected `# bgsim-trace 1 rank {rank} size {n}`")
    for i, line in enumerate(lines[1:], start=2):
        where = f"{name}:{i}"
        parts = line.split()
        if not parts:
            continue
        try:
            t0, t1, what, rest = float(parts[0]), float(parts[1]), parts[2], parts[3:]
        except (ValueError, IndexError):
            raise UsageError(f"{where}: expected `T0 T1 CALL ARGS...`, got `{line}`") from None
        if what == "unsupported":
            raise UsageError(f"{where}: the program called {' '.join(rest)}, which bgsim cannot replay "
                             "(it replays MPI_COMM_WORLD's point-to-point calls, waits and collectives)")
        if what not in CALLS:
            raise UsageError(f"{where}: unknown call `{what}` (known: {', '.join(CALLS)})")
        dtype, op = "u1", "sum"
        if what in ("reduce", "allreduce"):
            if len(rest) < 2:
                raise UsageError(f"{where}: {what} needs its type and operation")
            rest, (code, op) = rest[:-2], rest[-2:]
            dtype = _TYPES.get(code, "u1")
        try:
            args = [int(v) for v in rest]
        except ValueError:
            raise UsageError(f"{where}: arguments must be integers, got `{' '.join(rest)}`") from None
        want = len(CALLS[what]) + (args[0] if what == "waitall" and args else 0)
        if len(args) != want:
            raise UsageError(f"{where}: {what} takes {want} arguments, got {len(args)}")
        for k, v in zip(CALLS[what], args):
            if k in ("dest", "root") and not 0 <= v < n or k in ("src",) and not -1 <= v < n:
                raise UsageError(f"{where}: {k} {v} is not a rank of the {n} ranks")
            if k == "bytes" and not 0 <= v <= _core.MAX_MESSAGE_BYTES:
                raise UsageError(f"{where}: a message of {v} bytes: bgsim's messages hold 0 to "
                                 f"{_core.MAX_MESSAGE_BYTES} bytes (4 GiB - 1)")
        calls.append(Call(t0, t1, what, args, dtype, op, where))
    return calls


def program(trace: Trace, cpu_factor: float = 1.0) -> Callable[[], Any]:
    """The rank program that replays `trace` (run it with `bgsim.run`):
    the time between two calls is compute, times `cpu_factor`."""
    ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN, "prod": MPI.PROD, "band": MPI.BAND, "bor": MPI.BOR,
           "bxor": MPI.BXOR, "land": MPI.LAND, "lor": MPI.LOR, "user": MPI.PROD}

    def buf(nbytes: int) -> np.ndarray:
        return np.zeros(nbytes, "u1")

    def typed(c: Call) -> np.ndarray:
        """The reduction's data in its recorded element type (bytes if the
        size does not divide)."""
        nbytes, item = c.args[-1], np.dtype(c.dtype).itemsize
        return np.zeros(nbytes // item, c.dtype) if nbytes % item == 0 else np.zeros(nbytes, "u1")

    def src(v: int) -> int:
        return MPI.ANY_SOURCE if v < 0 else v

    def tag(v: int) -> int:
        return MPI.ANY_TAG if v < 0 else v

    def main() -> None:
        comm = MPI.COMM_WORLD
        reqs: Dict[int, Any] = {}
        last = None
        for c in trace.ranks[comm.Get_rank()]:
            if last is not None and c.t0 > last and cpu_factor > 0:
                compute(seconds=(c.t0 - last) * cpu_factor)
            last = c.t1
            a = c.args
            if c.name == "send":
                comm.Send(buf(a[2]), a[0], a[1])
            elif c.name == "recv":
                comm.Recv(buf(a[2]), src(a[0]), tag(a[1]))
            elif c.name == "isend":
                reqs[a[3]] = comm.Isend(buf(a[2]), a[0], a[1])
            elif c.name == "irecv":
                reqs[a[3]] = comm.Irecv(buf(a[2]), src(a[0]), tag(a[1]))
            elif c.name == "wait":
                reqs.pop(a[0]).Wait()
            elif c.name == "waitall":
                MPI.Request.Waitall([reqs.pop(i) for i in a[1:]])
            elif c.name == "sendrecv":
                comm.Sendrecv(buf(a[2]), a[0], a[1], buf(a[5]), src(a[3]), tag(a[4]))
            elif c.name == "barrier":
                comm.Barrier()
            elif c.name == "bcast":
                comm.Bcast(buf(a[1]), a[0])
            elif c.name == "reduce":
                x = typed(c)
                comm.Reduce(x, np.empty_like(x), ops.get(c.op, MPI.SUM), a[0])
            elif c.name == "allreduce":
                x = typed(c)
                comm.Allreduce(x, np.empty_like(x), ops.get(c.op, MPI.SUM))
            elif c.name == "allgather":
                comm.Allgather(buf(a[0]), buf(a[0] * comm.Get_size()))
            elif c.name == "alltoall":
                comm.Alltoall(buf(a[0] * comm.Get_size()), buf(a[0] * comm.Get_size()))
            elif c.name == "gather":
                comm.Gather(buf(a[1]), buf(a[1] * comm.Get_size()) if comm.Get_rank() == a[0] else None, a[0])
            elif c.name == "scatter":
                comm.Scatter(buf(a[1] * comm.Get_size()) if comm.Get_rank() == a[0] else None, buf(a[1]), a[0])
            elif c.name == "finalize":
                break
        if reqs:
            raise UsageError(f"trace `{trace.path}`: rank {comm.Get_rank()} ends with requests never waited for")
    return main


def record(out_dir: str, nprocs: int, command: Sequence[str], mpirun: str = "mpirun",
           extra: Sequence[str] = ()) -> Trace:
    """Runs `command` under the real MPI with `nprocs` processes, each
    recording its calls into `out_dir`; returns the trace."""
    mpicc = shutil.which("mpicc")
    if mpicc is None or shutil.which(mpirun) is None:
        raise UsageError("bgsim record needs a real MPI with mpicc and mpirun (Debian: libopenmpi-dev openmpi-bin)")
    os.makedirs(out_dir, exist_ok=True)
    for f in os.listdir(out_dir):
        if re.fullmatch(r"rank-\d+\.trace", f):
            os.remove(os.path.join(out_dir, f))
    with tempfile.TemporaryDirectory() as tmp:
        lib = os.path.join(tmp, "libbgsim_trace.so")
        p = subprocess.run([mpicc, "-shared", "-fPIC", "-O2", "-o", lib, SOURCE], capture_output=True, text=True)
        if p.returncode:
            raise UsageError(f"bgsim record: building the recorder with {mpicc} failed:\n{p.stderr}")
        args = [mpirun, "-n", str(nprocs)]
        if "open-mpi" in subprocess.run([mpirun, "--version"], capture_output=True, text=True).stdout.lower():
            args += ["--oversubscribe", "-x", f"LD_PRELOAD={lib}", "-x", f"BGSIM_TRACE_DIR={os.path.abspath(out_dir)}"]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                args.append("--allow-run-as-root")
        else:  # MPICH's hydra
            args += ["-genv", "LD_PRELOAD", lib, "-genv", "BGSIM_TRACE_DIR", os.path.abspath(out_dir)]
        p = subprocess.run(args + list(extra) + list(command))
        if p.returncode:
            raise UsageError(f"bgsim record: `{' '.join(command)}` under {mpirun} exited with status {p.returncode}")
    return load(out_dir)
