"""Shared fixtures: the command-line tool (NBKIT_CLI) and the bundled data (NBKIT_DATA_DIR),
which CTest's python_package test passes; tests that need the tool skip without it."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return Path(os.environ.get("NBKIT_DATA_DIR", ROOT / "data"))


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    return ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def cli():
    """cli(*args) runs the nbkit command and returns its stdout; fails the test on an error."""
    binary = os.environ.get("NBKIT_CLI")
    if not binary or not os.path.exists(binary):
        pytest.skip("NBKIT_CLI (the nbkit command) not given")

    def run(*args: str) -> str:
        r = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        assert r.returncode == 0, f"nbkit {' '.join(map(str, args))}: {r.stdout}{r.stderr}"
        return r.stdout

    return run


def dx_values_text(path) -> str:
    """The values section of an OpenDX file (its comments, naming the writer, left out)."""
    return "".join(line for line in open(path) if not line.startswith("#"))
