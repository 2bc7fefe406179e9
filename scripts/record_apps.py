"""Records the proxy-application traces of examples/traces/ again: builds
each application from a checkout of its public source with the MPI's
compiler wrappers, runs it under `bgsim record` on a small problem and
writes NAME-RANKS.tar.xz (the trace, not the code).

    python scripts/record_apps.py --src lulesh=~/LULESH --src comd=~/CoMD \\
        --src minife=~/miniFE --src hpcg=~/hpcg [--out examples/traces]

The traces in the repository were recorded with the sources at the
commits below, Open MPI 4.1.4 and GCC 12.2 (Debian 12), on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from typing import Dict, List

#: name: (repository, commit, ranks, build commands (run in the source
#: directory), the program and its arguments (from the source directory))
APPS: Dict[str, tuple] = {
    "lulesh": ("https://github.com/LLNL/LULESH", "3e01c40b3281aadb7f996525cdd4a3354f6d3801", 64,
               [["mpicxx", "-DUSE_MPI=1", "-O2", "-I.", "-o", "lulesh", "lulesh.cc", "lulesh-comm.cc",
                 "lulesh-viz.cc", "lulesh-util.cc", "lulesh-init.cc"]],
               ["./lulesh", "-s", "6", "-i", "10"]),
    "comd": ("https://github.com/ECP-copa/CoMD", "3d48396b77ca8caa3124bc2391f9139c3ffb556c", 64,
             [["cp", "src-mpi/Makefile.vanilla", "src-mpi/Makefile"], ["make", "-C", "src-mpi"]],
             ["bin/CoMD-mpi", "-i", "4", "-j", "4", "-k", "4", "-x", "24", "-y", "24", "-z", "24", "-N", "20",
              "-n", "5"]),
    "minife": ("https://github.com/Mantevo/miniFE", "c79e0f7f7afdd6c8191936efce7a668316159cc3", 64,
               [["make", "-C", "ref/src"]],
               ["ref/src/miniFE.x", "nx=24", "ny=24", "nz=24"]),
    "hpcg": ("https://github.com/hpcg-benchmark/hpcg", "114602d458d1034faa52b71e4c15aba9b3a17698", 8,
             [["mkdir", "-p", "build"], ["sh", "-c", "cd build && ../configure Linux_MPI && make"]],
             ["build/bin/xhpcg", "--nx=16", "--ny=16", "--nz=16", "--rt=0"]),
}


def record(name: str, src: str, out: str) -> str:
    repo, commit, ranks, build, cmd = APPS[name]
    src = os.path.abspath(os.path.expanduser(src))
    for step in build:
        subprocess.run(step, cwd=src, check=True)
    label = f"{name}-{ranks}"
    with tempfile.TemporaryDirectory() as tmp:
        trace = os.path.join(tmp, label)
        # The program writes its own reports where it runs: a scratch copy of nothing.
        subprocess.run([sys.executable, "-m", "bgsim.cli", "record", "--out", trace, "-n", str(ranks), "--",
                        os.path.join(src, cmd[0]), *cmd[1:]], cwd=tmp, check=True)
        os.makedirs(out, exist_ok=True)
        path = os.path.join(out, f"{label}.tar.xz")
        with tarfile.open(path + ".part", "w:xz", preset=9) as tar:
            for f in sorted(os.listdir(trace), key=lambda f: int(f[5:-6])):
                info = tar.gettarinfo(os.path.join(trace, f), f"{label}/{f}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                info.mtime = 0
                with open(os.path.join(trace, f), "rb") as fh:
                    tar.addfile(info, fh)
        os.replace(path + ".part", path)
    print(f"{path}: {name} at {commit[:7]} ({repo}), {ranks} ranks, {os.path.getsize(path):,} bytes")
    return path


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--src", action="append", default=[], metavar="NAME=DIR",
                   help=f"a checkout of an application's source ({', '.join(APPS)}) at the commit above")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                                 "traces"), help="where the archives go (default examples/traces)")
    a = p.parse_args(argv)
    if not a.src:
        p.error("give at least one --src NAME=DIR")
    if shutil.which("mpicc") is None:
        p.error("needs a real MPI with mpicc, mpicxx and mpirun (Debian: libopenmpi-dev openmpi-bin)")
    for item in a.src:
        name, _, d = item.partition("=")
        if name not in APPS or not d:
            p.error(f"--src {item}: expected NAME=DIR with NAME one of {', '.join(APPS)}")
        if not os.path.isdir(os.path.expanduser(d)):
            p.error(f"--src {item}: {d} is not a directory")
        record(name, d, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
