#!/usr/bin/env python3
"""Maps of atoms already on the GPU (CuPy arrays or PyTorch CUDA tensors): the atoms are read,
checked, prepared and binned there and the map stays there, so the call should cost what its
kernels cost. Against the same map of numpy inputs (atoms prepared on the host, the map copied
to host memory) in the same run, for water-density boxes of atoms (0.1 atoms/A^3, charges
+-0.4 e) with the cutoff method (12 A, 1 A spacing) and, on a small lattice, the direct method.

Usage: PYTHONPATH=build/gpu/python python3 bench/python_gpu_arrays.py [--atoms 100000,1000000]
       [--repeats N] [--json FILE]
Prints, per case: atoms, lattice points, the numpy-input call, the GPU-array call and its
kernels (MapStats.kernel_seconds), best of N after a warm-up, and the ratios.
"""
import argparse
import json
import time

import numpy as np

import nbkit

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--atoms", default="100000,1000000")
parser.add_argument("--repeats", type=int, default=5)
parser.add_argument("--json")
args = parser.parse_args()

try:
    import cupy

    def to_gpu(a):
        return cupy.asarray(a)

    def sync():
        cupy.cuda.get_current_stream().synchronize()

    framework = "cupy " + cupy.__version__
except ImportError:
    import torch

    def to_gpu(a):
        return torch.as_tensor(a, device="cuda")

    def sync():
        torch.cuda.synchronize()

    framework = "torch " + torch.__version__


def best_of(call):
    call()  # warm-up: the CUDA context, the kernels' first load
    best = None
    for _ in range(args.repeats):
        sync()
        start = time.perf_counter()
        m = call()
        sync()
        wall = time.perf_counter() - start
        if best is None or wall < best[0]:
            best = (wall, m.stats)
        del m
    return best


gpu_name = nbkit.info()["gpus"][0]["name"] if nbkit.info()["gpus"] else "no GPU"
print(f"nbkit {nbkit.__version__}, {framework}, {gpu_name}; best of {args.repeats}")
print(f"{'method':>7} {'atoms':>10} {'points':>12} {'numpy in, s':>12} {'GPU arrays, s':>14} {'kernels, s':>11}"
      f" {'numpy/GPU':>10} {'GPU/kernels':>12}")
rows = []
for n in [int(v) for v in args.atoms.split(",")]:
    rng = np.random.default_rng(n)
    edge = (n / 0.1) ** (1 / 3)
    x = rng.uniform(0, edge, size=(n, 3))
    q = np.where(rng.random(n) < 0.5, -0.4, 0.4)
    xg, qg = to_gpu(x), to_gpu(q)
    cases = [("cutoff", dict(method="cutoff", cutoff=12.0, spacing=1.0, padding=2.0)),
             ("direct", dict(method="direct", origin=(0.0, 0.0, 0.0), shape=(64, 64, 64), spacing=edge / 63))]
    for method, kw in cases:
        kw = dict(kw, backend="cuda", progress=False)
        host_wall, host_stats = best_of(lambda: nbkit.map(x, q, **kw))
        gpu_wall, gpu_stats = best_of(lambda: nbkit.map(xg, qg, **kw))
        kernels = gpu_stats["kernel_seconds"]
        points = int(gpu_stats["lattice_points"])
        print(f"{method:>7} {n:>10,} {points:>12,} {host_wall:>12.4f} {gpu_wall:>14.4f} {kernels:>11.4f}"
              f" {host_wall / gpu_wall:>10.1f} {gpu_wall / kernels:>12.2f}")
        rows.append(dict(method=method, atoms=n, lattice_points=points, numpy_input_seconds=host_wall,
                         gpu_array_seconds=gpu_wall, kernel_seconds=kernels, gpu=gpu_name, framework=framework,
                         detail=gpu_stats["detail"]))
if args.json:
    with open(args.json, "w") as f:
        json.dump(rows, f, indent=1)
