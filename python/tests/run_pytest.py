"""Runs pytest on the package's tests, or exits 77 (CTest's skip) where pytest or numpy is not
installed (python3-pytest, python3-numpy)."""
import sys

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"skipping the Python package's tests: {e} (apt-get install python3-pytest python3-numpy)")
    sys.exit(77)
sys.exit(pytest.main(sys.argv[1:]))
