"""GPU arrays in and out (CuPy, PyTorch): the same numbers as numpy inputs on the same backend,
results of the inputs' kind on their device. Runs where a GPU and CuPy or PyTorch are
(scripts/gpu-check python); skips elsewhere."""
import numpy as np
import pytest

import nbkit

if not nbkit.info()["gpus"]:
    pytest.skip("no GPU", allow_module_level=True)

FRAMEWORKS = []
try:
    import cupy
    FRAMEWORKS.append("cupy")
except ImportError:
    cupy = None
try:
    import torch
    if torch.cuda.is_available():
        FRAMEWORKS.append("torch")
except ImportError:
    torch = None
if not FRAMEWORKS:
    pytest.skip("neither CuPy nor PyTorch with CUDA", allow_module_level=True)


def on_gpu(framework, a):
    return cupy.asarray(a) if framework == "cupy" else torch.as_tensor(a, device="cuda")


def to_numpy(framework, a):
    return cupy.asnumpy(a) if framework == "cupy" else a.cpu().numpy()


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("method", ["all-pairs", "tree"])
def test_nbody_on_gpu_arrays_equals_numpy_inputs(framework, dtype, method):
    rng = np.random.default_rng(2)
    n = 4099  # awkward: not a multiple of a block
    x, m = rng.normal(size=(n, 3)).astype(dtype), rng.uniform(0.5, 1.5, n).astype(dtype) / n
    engine = nbkit.nbody.ForceEngine(backend="cuda", gpus=0, method=method, theta=0.6)
    a_host, phi_host = engine.accelerations(x, m)
    a, phi = engine.accelerations(on_gpu(framework, x), on_gpu(framework, m))
    assert type(a).__module__.split(".")[0] == framework and a.shape == (n, 3)
    # The same kernels on the same values: the same bits.
    np.testing.assert_array_equal(to_numpy(framework, a), a_host)
    np.testing.assert_array_equal(to_numpy(framework, phi), phi_host)
    strided = on_gpu(framework, np.ascontiguousarray(np.repeat(x, 2, axis=0)))[::2]  # a non-contiguous view
    a2, none = engine.accelerations(strided, on_gpu(framework, m), potential=False)
    assert none is None
    np.testing.assert_array_equal(to_numpy(framework, a2), a_host)


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("method", ["all-pairs", "tree"])
def test_nbody_gpu_arrays_refuse_nan(framework, method):
    x = np.zeros((10, 3))
    x[3, 2] = np.nan
    with pytest.raises(nbkit.Error, match="body 4:"):
        nbkit.nbody.ForceEngine(backend="cuda", gpus=0, method=method).accelerations(on_gpu(framework, x),
                                                                                      on_gpu(framework, np.ones(10)))


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("method", ["direct", "mdh", "cutoff"])
@pytest.mark.parametrize("precision", ["single", "double"])
def test_map_of_gpu_arrays_stays_on_the_gpu(framework, method, precision, data_dir):
    # The atoms are read, checked, prepared and binned on the GPU (no host copy of them): the
    # lattice chosen from their box there and the values must be the numpy inputs' exactly
    # (those are uploaded and take the same path).
    s = nbkit.read_structure(data_dir / "1a63.pqr")
    kw = dict(method=method, spacing=0.7, backend="cuda", precision=precision, progress=False)
    host = nbkit.map(s, **kw)
    m = nbkit.map(on_gpu(framework, s.positions), on_gpu(framework, s.charges), on_gpu(framework, s.radii), **kw)
    assert isinstance(m, nbkit.DeviceMap) and type(m.values).__module__.split(".")[0] == framework
    assert m.shape == host.shape and m.origin == host.origin and m.units == host.units
    assert "atoms from GPU arrays" in m.stats["detail"]
    np.testing.assert_array_equal(to_numpy(framework, m.values), host.values)
    np.testing.assert_array_equal(m.to_host().values, host.values)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_periodic_and_float32_and_mixed_inputs_on_the_gpu(framework):
    rng = np.random.default_rng(5)
    n = 3001
    x = rng.uniform(-3, 33, size=(n, 3))
    q = rng.uniform(-1, 1, n)
    kw = dict(method="cutoff", spacing=0.8, cutoff=8.0, periodic_box=(30.0, 31.0, 29.0), backend="cuda",
              progress=False)
    host = nbkit.map(x, q, **kw)
    m = nbkit.map(on_gpu(framework, x), on_gpu(framework, q), **kw)
    np.testing.assert_array_equal(to_numpy(framework, m.values), host.values)
    # float32 arrays, the positions a strided view, the charges given as a host array beside them.
    x32 = x.astype(np.float32)
    strided = on_gpu(framework, np.ascontiguousarray(np.repeat(x32, 2, axis=0)))[::2]
    m32 = nbkit.map(strided, q, method="direct", spacing=1.0, backend="cuda", progress=False)
    host32 = nbkit.map(x32.astype(np.float64), q, method="direct", spacing=1.0, backend="cuda", progress=False)
    np.testing.assert_array_equal(to_numpy(framework, m32.values), host32.values)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_map_gpu_arrays_refuse_bad_atoms_by_number(framework):
    x = np.zeros((10, 3))
    x[:, 0] = np.arange(10)
    q = np.ones(10)
    bad = x.copy()
    bad[6, 1] = np.nan
    with pytest.raises(nbkit.Error, match="atom 7 has a coordinate"):
        nbkit.map(on_gpu(framework, bad), on_gpu(framework, q), backend="cuda", progress=False)
    r = -np.ones(10)
    with pytest.raises(nbkit.Error, match="atom 1: radius -1"):
        nbkit.map(on_gpu(framework, x), on_gpu(framework, q), on_gpu(framework, r), method="mdh", backend="cuda",
                  progress=False)
    with pytest.raises(ValueError, match="charges: expected shape"):
        nbkit.map(on_gpu(framework, x), on_gpu(framework, q[:9]), backend="cuda", progress=False)
