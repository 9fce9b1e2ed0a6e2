#!/usr/bin/env python3
"""Maps larger than memory (issue 21): a lattice of P^3 points computed and written as CCP4/MRC by
`nbkit map` within a host-memory limit, against the disk's own rate measured in the same run.

Usage: map_huge.py NBKIT [--points 2048] [--spacing 0.25] [--atoms 1000000] [--methods msm,cutoff]
                         [--memory-limit 7G] [--backend auto] [--dir DIR] [--json FILE]

For each method: the wall time of the whole command (reading the atoms, computing, writing), the
lattice points per second, the map file's write rate, the peak resident memory of the process
(os.wait4's rusage); then the disk's rate: a plain sequential write of the same number of bytes
(O_DIRECT, 16 MiB blocks, as nbkit writes large maps), and the ratios. The map is removed after each run. Standard library only (the GPU machine has no numpy).
"""
import argparse
import json
import mmap
import os
import random
import subprocess
import sys
import threading
import time


def write_atoms(path, count, box, seed=2026):
    """`count` atoms spread uniformly over the lattice's box with charges +-0.5 (a neutral system)
    and radius 1.5 A, as PQR."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for n in range(count):
            x, y, z = (rng.uniform(0, box) for _ in range(3))
            q = 0.5 if n % 2 == 0 else -0.5
            f.write(f"ATOM  {n % 100000:5d}  C   ALA A{n % 10000:4d}    {x:8.3f}{y:8.3f}{z:8.3f} {q:7.4f} 1.5000\n")


def run_child(command):
    """Runs `command`; returns (seconds, exit status, peak resident bytes of that process alone)."""
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return time.monotonic() - start, child.returncode, usage.ru_maxrss * 1024, output


def plain_write(path, count):
    """The disk's sequential rate for `count` bytes: O_DIRECT writes of a page-aligned 16 MiB
    block, two in flight (two threads, alternate blocks), as nbkit's writer keeps two staging
    blocks going; buffered where the file system refuses O_DIRECT. (One write at a time, as dd
    oflag=direct, measured less than nbkit itself reached: 1.39 against 1.53 GB/s on the H100
    machine.)"""
    size = 16 << 20
    block = mmap.mmap(-1, size)  # page-aligned, as O_DIRECT needs
    block.write(os.urandom(size))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
    except OSError:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    blocks = max(1, count // size)
    failures = []

    def write_every_other(first):
        try:
            for b in range(first, blocks, 2):
                os.pwrite(fd, block, b * size)  # releases the GIL while the disk works
        except OSError as error:
            failures.append(error)

    writers = [threading.Thread(target=write_every_other, args=(first,)) for first in (0, 1)]
    start = time.monotonic()
    try:
        for w in writers:
            w.start()
        for w in writers:
            w.join()
    finally:
        os.close(fd)
    if failures:
        raise failures[0]
    seconds = (time.monotonic() - start) * count / (blocks * size)
    os.remove(path)
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("nbkit")
    p.add_argument("--points", type=int, default=2048, help="lattice points per axis")
    p.add_argument("--spacing", type=float, default=0.25, help="Angstrom")
    p.add_argument("--atoms", type=int, default=1000000)
    p.add_argument("--methods", default="msm,cutoff")
    p.add_argument("--memory-limit", default="7G")
    p.add_argument("--backend", default="auto")
    p.add_argument("--dir", default=".", help="where the map and the plain write go (the disk measured)")
    p.add_argument("--json")
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    box = (a.points - 1) * a.spacing
    atoms = os.path.join(a.dir, "huge-atoms.pqr")
    write_atoms(atoms, a.atoms, box)
    points = a.points ** 3
    results = {"points": points, "atoms": a.atoms, "spacing": a.spacing, "memory_limit": a.memory_limit, "runs": []}
    print(f"map_huge: {a.points}^3 = {points:,} points at {a.spacing} A, {a.atoms:,} atoms, "
          f"--memory-limit {a.memory_limit}, backend {a.backend}, maps in {a.dir}")
    sizes = []
    for method in a.methods.split(","):
        out = os.path.join(a.dir, f"huge-{method}.mrc")
        report = os.path.join(a.dir, f"huge-{method}.json")
        command = [a.nbkit, "map", atoms, "--method", method, "--origin", "0,0,0", "--spacing", str(a.spacing),
                   "--dims", f"{a.points},{a.points},{a.points}", "--memory-limit", a.memory_limit,
                   "--backend", a.backend, "-o", out, "--report", report]
        seconds, status, peak, output = run_child(command)
        if status != 0:
            print(output)
            sys.exit(f"map_huge: nbkit map --method {method} failed ({status})")
        r = json.load(open(report))
        size = os.path.getsize(out)
        sizes.append(size)
        os.remove(out)
        os.remove(report)
        run = {"method": method, "wall_seconds": seconds, "points_per_second": points / seconds,
               "compute_seconds": r["timing_seconds"]["compute"], "write_seconds": r["output"]["write_seconds"],
               "bytes": size, "write_bytes_per_second": size / r["output"]["write_seconds"],
               "peak_resident_bytes": peak, "slabs": r["output"]["slabs"], "backend": r["backend"],
               # where the disk is idle: before nbkit's clock (process start, CUDA), reading the atoms,
               # the first slab's computation, closing the file, after nbkit's clock (process exit)
               "idle_seconds": {"outside_nbkit": seconds - r["timing_seconds"]["total"],
                                "read": r["timing_seconds"]["read"],
                                "before_first_write": r["output"]["seconds_before_first_write"],
                                "after_last_write": r["output"]["seconds_after_last_write"]}}
        results["runs"].append(run)
        print(f"  {method:7s} wall {seconds:7.1f} s  {points / seconds:9.3g} points/s  compute {run['compute_seconds']:6.1f} s"
              f"  write {run['write_seconds']:6.1f} s = {size / run['write_seconds'] / 1e9:5.2f} GB/s"
              f"  peak RSS {peak / 2**30:5.2f} GiB  {run['slabs']['count']} slabs"
              f"{' (overlapped)' if run['slabs']['write_overlaps_compute'] else ''}")
        print("          disk idle: " + ", ".join(f"{k.replace('_', ' ')} {v:.2f} s" for k, v in run["idle_seconds"].items()))
    size = max(sizes)
    seconds = plain_write(os.path.join(a.dir, "huge-plain.bin"), size)
    disk = size / seconds
    results["disk_bytes_per_second"] = disk
    print(f"  disk: a plain sequential write of {size / 1e9:.1f} GB (O_DIRECT, 16 MiB blocks, two in flight): {seconds:.1f} s = {disk / 1e9:.2f} GB/s")
    for run in results["runs"]:
        run["write_rate_of_disk"] = run["write_bytes_per_second"] / disk
        run["wall_rate_of_disk"] = run["bytes"] / run["wall_seconds"] / disk
        print(f"  {run['method']:7s} writes at {run['write_rate_of_disk']:.2f} of the disk's rate; the whole run at "
              f"{run['wall_rate_of_disk']:.2f} of it (target 0.80)")
    os.remove(atoms)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
