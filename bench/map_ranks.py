#!/usr/bin/env python3
"""nbkit across processes (issue 22): one map, and one N-body run, by one process and by R MPI
ranks on this machine, the efficiency t(1) / (R t(R)) and whether the files are the same bytes.

Usage: map_ranks.py NBKIT [--ranks R] [--mpirun mpirun] [--dir DIR] [--json FILE]

Maps: `nbkit map` of the direct sum (compute-bound: a million random atoms on a 300^3 lattice,
2.7e13 evaluations) and of the cutoff sum over them on 800^3 (reading the atoms, the set-up and
the 2 GB file weigh more), CCP4/MRC
written in place by every rank (MPI-IO). The plain run uses one GPU (--gpus 0) where the machine
has GPUs; under mpirun each rank takes its own GPU (share_node), so R ranks use R GPUs: the
efficiency is that of the ranks against one GPU, the measured-speed split included. N-body: the
CPU's all-pairs sums (the GPU's are one process's so far), all the cores in one process against
R ranks sharing them. Each run's whole wall time (reading, computing, writing). Standard library
only (the GPU machine has no numpy).
"""
import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from map_huge import write_atoms  # noqa: E402


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
    for name, arguments in maps.items():
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
    cores = os.cpu_count() or 2
    if a.skip_nbody:
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
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
