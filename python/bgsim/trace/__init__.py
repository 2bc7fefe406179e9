"""Traces of real MPI programs: record a C, C++ or Fortran MPI program's
calls under a real MPI (`record`: a PMPI library, `bgsim_trace.c`, built
with the MPI's own `mpicc` and preloaded into the program), check them
(`load`, `tracefile`), and replay them on the simulated machine
(`program`, `replay`): communicators and intercommunicators,
point-to-point calls in every mode, waits, collectives (nonblocking and
neighbourhood ones too) and one-sided windows through the same MPI module
and collective algorithms as Python programs, non-contiguous datatypes
laid out as recorded (so that they are packed and unpacked), and the time
between calls as compute, scaled by a CPU factor.

A trace is a directory of `rank-R.trace` text files (the format is in
`bgsim_trace.c`). A call the replay cannot do (a dynamic window, an
MPI_Mrecv of a message whose probe was not recorded ...) or a line that
does not hold is refused before the run, naming its file and line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from typing import Sequence

from ..errors import UsageError
from . import otf2io
from .replay import program
from .tracefile import Call, Trace, load, neighborhood

__all__ = ["Call", "Trace", "load", "neighborhood", "program", "record", "SOURCE"]

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bgsim_trace.c")


def record(out_dir: str, nprocs: int, command: Sequence[str], mpirun: str = "mpirun",
           extra: Sequence[str] = (), clock: str = "cpu", fmt: str = "bgsim") -> Trace:
    """Runs `command` under the real MPI with `nprocs` processes, each
    recording its calls into `out_dir`; returns the trace. `clock`: what
    the times measure, "cpu" (each rank's CPU time: its compute, even with
    more processes than cores) or "wall". `fmt`: "bgsim" (rank-R.trace
    files) or "otf2" (an OTF2 archive, written from them)."""
    if clock not in ("cpu", "wall"):
        raise UsageError(f"bgsim record: clock `{clock}`: cpu or wall")
    if fmt not in ("bgsim", "otf2"):
        raise UsageError(f"bgsim record: format `{fmt}`: bgsim or otf2")
    if fmt == "otf2":
        otf2io._package()
        if os.path.exists(os.path.join(out_dir, "traces.otf2")):
            raise UsageError(f"bgsim record: {out_dir} holds an OTF2 archive already (traces.otf2)")
        with tempfile.TemporaryDirectory() as tmp:
            t = record(tmp, nprocs, command, mpirun, extra, clock, "bgsim")
            otf2io.write(t, out_dir)
        return load(out_dir)
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
            args += ["--oversubscribe", "-x", f"LD_PRELOAD={lib}", "-x", f"BGSIM_TRACE_DIR={os.path.abspath(out_dir)}",
                     "-x", f"BGSIM_TRACE_CLOCK={clock}"]
            if hasattr(os, "geteuid") and os.geteuid() == 0:
                args.append("--allow-run-as-root")
        else:  # MPICH's hydra
            args += ["-genv", "LD_PRELOAD", lib, "-genv", "BGSIM_TRACE_DIR", os.path.abspath(out_dir),
                     "-genv", "BGSIM_TRACE_CLOCK", clock]
        p = subprocess.run(args + list(extra) + list(command))
        if p.returncode:
            raise UsageError(f"bgsim record: `{' '.join(command)}` under {mpirun} exited with status {p.returncode}")
    return load(out_dir)
