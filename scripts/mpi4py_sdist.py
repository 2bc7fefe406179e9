"""mpi4py 4.1.2's source distribution from PyPI, pinned by SHA-256: the
benchmarks and the conformance check take mpi4py's own demos and test suite
from it (they are not part of bgsim). Fetched once into .bench-cache/."""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.request

URL = ("https://files.pythonhosted.org/packages/75/83/231445bbcf7ef10864746c244ff2d82000011449b79275642c5d4ed8c8f4/"
       "mpi4py-4.1.2.tar.gz")
SHA256 = "56860286dc45f20e8821e93cb06669e30462348bf866f685553fa4b712d58d02"
#: Where members of the archive start.
TOP = "mpi4py-4.1.2/"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".bench-cache")


def sdist() -> str:
    """The archive's path in the cache, fetched once and checked each time."""
    os.makedirs(CACHE, exist_ok=True)
    path = os.path.join(CACHE, os.path.basename(URL))
    if not os.path.exists(path):
        with urllib.request.urlopen(URL, timeout=120) as r, open(path + ".tmp", "wb") as f:
            f.write(r.read())
        os.replace(path + ".tmp", path)
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{path}: SHA-256 {digest}, expected {SHA256} (delete it to fetch it again)")
    return path
