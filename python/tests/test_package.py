"""The package as a user meets it: import in a fresh interpreter, info(), help, no process-wide
state changed by import."""
import subprocess
import sys

import nbkit


def test_imports_in_a_fresh_interpreter_and_changes_no_process_state():
    code = (
        "import os, signal, sys, threading\n"
        "env = dict(os.environ); handler = signal.getsignal(signal.SIGINT); threads = threading.active_count()\n"
        "import nbkit\n"
        "assert dict(os.environ) == env, 'import changed the environment'\n"
        "assert signal.getsignal(signal.SIGINT) is handler, 'import changed the SIGINT handler'\n"
        "assert threading.active_count() == threads, 'import started threads'\n"
        "i = nbkit.info(); print(i['version'], i['simd_target'], len(i['gpus']))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    version, simd, gpus = r.stdout.split()
    assert version == nbkit.__version__ and simd and int(gpus) >= 0


def test_info_shows_version_simd_and_gpus():
    i = nbkit.info()
    for key in ("version", "simd_target", "cpu_threads", "cuda_compiled", "gpus"):
        assert key in i
    assert i["gpus"] or i["gpu_unavailable_reason"]


def test_everything_public_has_a_docstring():
    names = [nbkit.map, nbkit.trajectory_map, nbkit.ionize, nbkit.read_structure, nbkit.read_map, nbkit.info,
             nbkit.Map, nbkit.Map.to_dx, nbkit.Map.to_png, nbkit.Map.to_mrc, nbkit.nbody.ForceEngine,
             nbkit.nbody.ForceEngine.accelerations, nbkit.nbody.Simulation, nbkit.nbody.Simulation.run,
             nbkit.nbody.plummer, nbkit.md.Simulation, nbkit.md.Simulation.step, nbkit.md.Simulation.minimize]
    for f in names:
        assert f.__doc__ and len(f.__doc__) > 20, f
    assert "spacing" in nbkit.map.__doc__ and "periodic_box" in nbkit.map.__doc__
