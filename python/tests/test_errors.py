"""Wrong input raises the right Python exception with the library's clear message."""
import numpy as np
import pytest

import nbkit


def atoms(n=4):
    return np.random.default_rng(1).uniform(0, 5, (n, 3)), np.ones(n)


def test_wrong_shapes_and_dtypes():
    x, q = atoms()
    with pytest.raises(ValueError, match=r"positions: expected shape \(n, 3\), got \(4, 2\)"):
        nbkit.map(x[:, :2], q, progress=False)
    with pytest.raises(TypeError, match="positions: expected float32 or float64 values, got dtype int64"):
        nbkit.map(x.astype(np.int64), q, progress=False)
    with pytest.raises(ValueError, match=r"charges: expected shape \(4,\)"):
        nbkit.map(x, q[:3], progress=False)
    with pytest.raises(TypeError, match="charges are needed"):
        nbkit.map(x)


def test_nan_is_refused_naming_the_atom():
    x, q = atoms()
    x[2, 1] = np.nan
    with pytest.raises(nbkit.Error, match="atom 3"):
        nbkit.map(x, q, progress=False)
    assert issubclass(nbkit.Error, ValueError)


def test_unknown_options():
    x, q = atoms()
    with pytest.raises(ValueError, match="method"):
        nbkit.map(x, q, method="ewald", progress=False)
    with pytest.raises(TypeError, match="unexpected keyword"):
        nbkit.map(x, q, spaceing=1.0)
    with pytest.raises(ValueError, match="backend"):
        nbkit.map(x, q, backend="tpu", progress=False)
    with pytest.raises(ValueError, match="origin and shape go together"):
        nbkit.map(x, q, origin=(0, 0, 0), progress=False)
    with pytest.raises(nbkit.Error, match="periodic_box needs method cutoff or msm"):
        nbkit.map(x, q, periodic_box=(10, 10, 10), progress=False)


def test_missing_files_and_memory():
    with pytest.raises(FileNotFoundError, match="no-such.pqr"):
        nbkit.read_structure("no-such.pqr")
    with pytest.raises(FileNotFoundError):
        nbkit.md.Simulation("no-such.toml")
    x, q = atoms()
    with pytest.raises(MemoryError, match="memory"):
        nbkit.map(x, q, origin=(0, 0, 0), shape=(100000, 100000, 10000), progress=False)


def test_a_gpu_request_without_a_gpu_says_why():
    if nbkit.info()["gpus"]:
        pytest.skip("this machine has a GPU")
    x, q = atoms()
    with pytest.raises(nbkit.Error, match="GPU|CUDA"):
        nbkit.map(x, q, backend="cuda", progress=False)
