#!/usr/bin/env python3
"""nbkit across processes (issue 22): one map, a trajectory's map, and one N-body run, by one
process and by R MPI ranks on this machine, the efficiency t(1) / (R t(R)) and whether the files
are the same bytes; a map by a rank on a GPU and a rank on the CPU together.

Usage: map_ranks.py NBKIT [--ranks R] [--mpirun mpirun] [--dir DIR] [--json FILE]

Maps: `nbkit map` of the direct sum (compute-bound: a million random atoms on a 300^3 lattice,
2.7e13 evaluations) and of the cutoff sum over them on 800^3 (reading the atoms, the set-up and
the 2 GB file weigh more), CCP4/MRC
written in place by every rank (MPI-IO). The plain run uses one GPU (--gpus 0) where the machine
has GPUs; under mpirun each rank takes its own GPU (share_node), so R ranks use R GPUs: the
efficiency is that of the ranks against one GPU, the measured-speed split included. N-body: the
CPU's all-pairs sums (the GPU's are one process's so far), all the cores in one process against
R ranks sharing them, and on GPUs one GPU against R ranks each with its own, with the time the
ranks spend exchanging positions (the measure that chooses an all-gather over a ring). The
trajectory: a DCD of random walks of the atoms, its avg map by direct summation, the frames dealt
among the ranks. Each run's whole wall time (reading, computing, writing). Standard library only.
"""
import argparse
import filecmp
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from map_huge import write_atoms  # noqa: E402


def write_walk_dcd(path, pqr, frames, step=0.3, seed=7):
    """A CHARMM-flavour DCD (little-endian, no cell) of `frames` frames of the PQR's atoms, each
    frame every atom moved by a random step of up to `step` A along each axis."""
    xs, ys, zs = [], [], []
    with open(pqr) as f:
        for line in f:
            if line.startswith(("ATOM", "HETATM")):
                xs.append(float(line[30:38])), ys.append(float(line[38:46])), zs.append(float(line[46:54]))
    n, rng = len(xs), random.Random(seed)

    def record(f, payload):
        f.write(struct.pack("<i", len(payload)) + payload + struct.pack("<i", len(payload)))

    with open(path, "wb") as f:
        control = struct.pack("<9i", frames, 0, 1, frames, 0, 0, 0, 0, 0) + struct.pack("<f", 1.0) + struct.pack(
            "<10i", 0, 0, 0, 0, 0, 0, 0, 0, 0, 24)
        record(f, b"CORD" + control)
        record(f, struct.pack("<i", 1) + b"random walk for bench/map_ranks.py".ljust(80))
        record(f, struct.pack("<i", n))
        for _ in range(frames):
            for axis in (xs, ys, zs):
                for i in range(n):
                    axis[i] += rng.uniform(-step, step)
                record(f, struct.pack(f"<{n}f", *axis))


def timed(command, env=None):
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"map_ranks: {' '.join(command)} failed:\n{done.stdout}")
    return seconds, done.stdout


def main():
    p = argparse.ArgumentParser()
    p.add_argument("nbkit")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    p.add_argument("--dir", default="build/map-ranks")
    p.add_argument("--json")
    p.add_argument("--skip-nbody", action="store_true")
    p.add_argument("--only-mixed", action="store_true", help="only the GPU rank beside a CPU rank")
    p.add_argument("--small", action="store_true", help="small sizes: a check that the script runs (2-core VM)")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    launcher = [a.mpirun, "--oversubscribe", "--bind-to", "none", "-np", str(a.ranks)]
    count, dims, direct_dims, bodies = (20_000, 100, 30, 3000) if a.small else (1_000_000, 800, 300, 200_000)
    atoms = os.path.join(a.dir, f"atoms-{count}.pqr")
    if not os.path.exists(atoms):
        write_atoms(atoms, count, 200.0)
    info = json.loads(subprocess.run([a.nbkit, "info", "--json"], stdout=subprocess.PIPE, text=True).stdout)
    gpus = len(info.get("gpus", []))
    one_gpu = ["--gpus", "0,"] if gpus > 0 else []
    maps = {
        f"direct {count} atoms {direct_dims}^3": [atoms, "--origin", "0,0,0", "--dims",
                                                 f"{direct_dims},{direct_dims},{direct_dims}", "--spacing",
                                                 str(200.0 / direct_dims), "--method", "direct"],
        f"cutoff {count} atoms {dims}^3": [atoms, "--origin", "0,0,0", "--dims", f"{dims},{dims},{dims}", "--spacing",
                                          str(200.0 / dims), "--method", "cutoff"],
    }
    results = {"ranks": a.ranks, "gpus": [g["name"] for g in info.get("gpus", [])],
               "mpi": info.get("mpi", {}), "maps": {}, "nbody": {}}
    for name, arguments in ({} if a.only_mixed else maps).items():
        plain_out, ranks_out = os.path.join(a.dir, "plain.mrc"), os.path.join(a.dir, "ranks.mrc")
        report = os.path.join(a.dir, "ranks.json")
        t1, _ = timed([a.nbkit, "map", *arguments, *one_gpu, "-q", "-o", plain_out])
        tr, _ = timed([*launcher, a.nbkit, "map", *arguments, "-q", "-o", ranks_out, "--report", report], env)
        with open(report) as f:
            r = json.load(f)
        same = filecmp.cmp(plain_out, ranks_out, shallow=False)
        results["maps"][name] = {"seconds_one_process": t1, "seconds_ranks": tr, "speedup": t1 / tr,
                                 "efficiency": t1 / (a.ranks * tr), "same_bytes": same,
                                 "rows": r["ranks"]["rows"], "measured_rows_per_second": r["ranks"]["measured_rows_per_second"],
                                 "detail": r["backend"]}
        print(f"{name}: 1 process {t1:.2f} s, {a.ranks} ranks {tr:.2f} s: speedup {t1 / tr:.2f}, "
              f"efficiency {t1 / (a.ranks * tr):.2f}, same bytes: {same}; rows {r['ranks']['rows']}")
        os.remove(plain_out), os.remove(ranks_out)
    # A trajectory's avg map: the frames dealt among the ranks (each rank its GPU).
    traj_atoms, frames, traj_dims = (2000, 8, 24) if a.small else (100_000, 48, 128)
    traj_pqr = os.path.join(a.dir, f"atoms-{traj_atoms}.pqr")
    dcd = os.path.join(a.dir, f"walk-{traj_atoms}-{frames}.dcd")
    if not os.path.exists(dcd) and not a.only_mixed:
        write_atoms(traj_pqr, traj_atoms, 200.0)
        write_walk_dcd(dcd, traj_pqr, frames)
    arguments = [traj_pqr, "--trajectory", dcd, "--combine", "avg", "--origin", "0,0,0", "--dims",
                 f"{traj_dims},{traj_dims},{traj_dims}", "--spacing", str(200.0 / traj_dims), "--method", "direct"]
    plain_out, ranks_out = os.path.join(a.dir, "plain-avg.mrc"), os.path.join(a.dir, "ranks-avg.mrc")
    if not a.only_mixed:
        t1, _ = timed([a.nbkit, "map", *arguments, *one_gpu, "-q", "-o", plain_out])
        tr, _ = timed([*launcher, a.nbkit, "map", *arguments, "-q", "-o", ranks_out], env)
        same = filecmp.cmp(plain_out, ranks_out, shallow=False)
        name = f"trajectory avg, direct, {traj_atoms} atoms, {frames} frames, {traj_dims}^3"
        results["trajectory"] = {"name": name, "seconds_one_process": t1, "seconds_ranks": tr, "speedup": t1 / tr,
                                 "efficiency": t1 / (a.ranks * tr), "same_bytes": same}
        print(f"{name}: 1 process {t1:.2f} s, {a.ranks} ranks {tr:.2f} s: speedup {t1 / tr:.2f}, "
              f"efficiency {t1 / (a.ranks * tr):.2f}, same bytes: {same}")
    # A rank on GPU 0 and a rank on the CPU (--gpus 0, leaves the second rank without one).
    if gpus > 0:
        name, arguments = next(iter(maps.items()))
        mixed_out, report = os.path.join(a.dir, "mixed.mrc"), os.path.join(a.dir, "mixed.json")
        t1, _ = timed([a.nbkit, "map", *arguments, "--gpus", "0,", "-q", "-o", plain_out])
        tm, _ = timed([a.mpirun, "--oversubscribe", "--bind-to", "none", "-np", "2", a.nbkit, "map", *arguments,
                       "--gpus", "0,", "-q", "-o", mixed_out, "--report", report], env)
        with open(report) as f:
            r = json.load(f)
        rates = r["ranks"]["measured_rows_per_second"]
        results["mixed_gpu_cpu"] = {"name": name, "seconds_one_gpu": t1, "seconds_gpu_and_cpu_ranks": tm,
                                    "rows": r["ranks"]["rows"], "measured_rows_per_second": rates,
                                    "ideal_seconds": t1 * rates[0] / sum(rates),
                                    "same_bytes": filecmp.cmp(plain_out, mixed_out, shallow=False)}
        print(f"{name}, a GPU rank and a CPU rank: {tm:.2f} s against {t1:.2f} s on the GPU alone (rates {rates}; "
              f"same bytes: {results['mixed_gpu_cpu']['same_bytes']})")
    cores = os.cpu_count() or 2
    if a.skip_nbody or a.only_mixed:
        if a.json:
            with open(a.json, "w") as f:
                json.dump(results, f, indent=2)
        return
    nbody = ["nbody", "--plummer", str(bodies), "--softening", "0.01", "--steps", "4", "--every", "2", "--backend", "cpu"]
    t1, _ = timed([a.nbkit, *nbody, "-q", "-o", os.path.join(a.dir, "nbody-plain")])
    tr, _ = timed([*launcher, a.nbkit, *nbody, "-q", "-o", os.path.join(a.dir, "nbody-ranks")], env)
    same = filecmp.cmp(os.path.join(a.dir, "nbody-plain", "diagnostics.csv"),
                       os.path.join(a.dir, "nbody-ranks", "diagnostics.csv"), shallow=False)
    results["nbody"] = {"bodies": bodies, "steps": 4, "cores": cores, "seconds_one_process": t1, "seconds_ranks": tr,
                        "efficiency": t1 / tr, "same_diagnostics": same}
    print(f"nbody {bodies} bodies, 4 steps, {cores} cores: 1 process {t1:.2f} s, {a.ranks} ranks sharing the cores "
          f"{tr:.2f} s (efficiency {t1 / tr:.2f}), same diagnostics: {same}")
    if gpus > 0:  # one GPU against R ranks with a GPU each (sharing GPU 0 when there is one)
        gpu_bodies, steps = (20_000, 10) if a.small else (1_000_000, 10)
        gpu_nbody = ["nbody", "--plummer", str(gpu_bodies), "--softening", "0.01", "--steps", str(steps), "--every",
                     str(steps), "--backend", "cuda"]
        shared = [] if gpus >= a.ranks else ["--gpus", ",".join(["0"] * a.ranks)]
        report = os.path.join(a.dir, "nbody-gpu.json")
        t1, _ = timed([a.nbkit, *gpu_nbody, "--gpus", "0,", "-q", "-o", os.path.join(a.dir, "nbody-gpu-plain")])
        tr, _ = timed([*launcher, a.nbkit, *gpu_nbody, *shared, "-q", "-o", os.path.join(a.dir, "nbody-gpu-ranks"),
                       "--report", report], env)
        with open(report) as f:
            r = json.load(f)
        same = filecmp.cmp(os.path.join(a.dir, "nbody-gpu-plain", "diagnostics.csv"),
                           os.path.join(a.dir, "nbody-gpu-ranks", "diagnostics.csv"), shallow=False)
        results["nbody_gpu"] = {"bodies": gpu_bodies, "steps": steps, "gpus_used": min(gpus, a.ranks),
                                "seconds_one_gpu": t1, "seconds_ranks": tr, "efficiency": t1 / (a.ranks * tr),
                                "run_seconds": r["timing_seconds"]["run"], "ranks": r["ranks"],
                                "same_diagnostics": same}
        print(f"nbody {gpu_bodies} bodies on GPUs, {steps} steps: 1 GPU {t1:.2f} s, {a.ranks} ranks "
              f"({min(gpus, a.ranks)} GPUs) {tr:.2f} s; the run {r['timing_seconds']['run']:.2f} s of which "
              f"{r['ranks']['exchange_seconds']:.3f} s exchanging positions and {r['ranks']['wait_seconds']:.3f} s "
              f"waiting; same diagnostics: {same}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
