import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(*args, check=False):
    """Runs the bgsim CLI in a subprocess; returns CompletedProcess."""
    p = subprocess.run([sys.executable, "-m", "bgsim.cli", *args], capture_output=True, text=True, cwd=ROOT)
    if check and p.returncode != 0:
        raise AssertionError(f"bgsim {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


@pytest.fixture
def cli():
    return run_cli
