"""A good Python citizen: Ctrl-C stops a long call with KeyboardInterrupt, the GIL is released
while the library computes, and an exception in a progress callback stops the call."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import nbkit

# ~10 s uninterrupted on 2 cores (1.6e11 atom-lattice evaluations): stopping within 3 s shows
# the interrupt, not the end of the work.
BIG = dict(origin=(0, 0, 0), shape=(200, 200, 200), spacing=0.5, backend="cpu", threads=2)


def big_atoms(n=20000):
    rng = np.random.default_rng(5)
    return rng.uniform(0, 100, (n, 3)), rng.uniform(-1, 1, n)


def test_ctrl_c_stops_a_long_map():
    x, q = big_atoms()
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    start = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        nbkit.map(x, q, progress=False, **BIG)
    timer.join()
    assert time.monotonic() - start < 3.0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_the_gil_is_released_while_computing():
    x, q = big_atoms(4000)
    done = threading.Event()
    worker = threading.Thread(target=lambda: (nbkit.map(x, q, progress=False, **dict(BIG, shape=(100, 100, 100))),
                                              done.set()))
    ticks = 0
    worker.start()
    while not done.is_set() and worker.is_alive():
        ticks += 1
        time.sleep(0.001)
    worker.join()
    assert done.is_set() and ticks > 20  # the main thread ran while the map was computed


def test_an_exception_in_a_progress_callback_stops_the_call():
    x, q = big_atoms()
    calls = []

    def progress(fraction):
        calls.append(fraction)
        if fraction > 0.02:
            raise RuntimeError("stop here")

    start = time.monotonic()
    with pytest.raises(RuntimeError, match="stop here"):
        nbkit.map(x, q, progress=progress, **BIG)
    assert time.monotonic() - start < 3.0 and calls
