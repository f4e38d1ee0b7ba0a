#!/usr/bin/env python3
"""Scaling of the MPI ensemble axis (issue 22): spirals with K = 1000 members split over
1, 2 (and 4, oversubscribed on a 2-core machine, marked as such) ranks, one thread per rank,
in one run. Each point is `mpirun -n R ensemble-cli bench` (steady-state steps; a repeat
lasts as long as the slowest rank), reporting member-steps/s and the scaling efficiency
rate(R) / (R * rate(1)). Loopback / shared memory only, as root too.

Beside each R > 1 it measures the ceiling this machine offers at that moment: R independent
plain processes (no MPI) of K/R members each, run at once, their member-steps/s summed. On an
idle machine with R free cores that is R times the one-rank rate; on a shared one it is what R
processes can get, and mpi / ceiling is the cost of MPI itself.

The rank counts are measured in interleaved rounds and each keeps its best round: on a shared
machine that is the estimate least disturbed by other load (the load average is printed).

Usage: bench/mpi_scaling.py [--build-dir build] [--members 1000] [--steps 400] [--repeat 5]
                            [--rounds 3] [--ranks 1,2,4] [--json OUT.json]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

MPI_ENV = {
    "OMPI_ALLOW_RUN_AS_ROOT": "1",
    "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
    "OMPI_MCA_pml": "ob1",
    "OMPI_MCA_btl": "self,vader",
    "OMPI_MCA_oob_tcp_if_include": "lo",
    "OMP_NUM_THREADS": "1",
}


def bench(cli, ranks, members, steps, repeat, cores):
    args = [cli, "bench", "--config", "spirals", "--set", f"ensemble.members={members}",
            "--set", "backend.threads=1", "--steps", str(steps), "--warmup", "50",
            "--repeat", str(repeat)]
    # One rank runs as a plain process (no mpirun): the baseline is today's CLI.
    if ranks > 1:
        args = ["mpirun", "-n", str(ranks), "--bind-to", "core" if ranks <= cores else "none"] + \
               (["--oversubscribe"] if ranks > cores else []) + args
    out = subprocess.run(args, check=True, capture_output=True, text=True,
                         env=dict(os.environ, **MPI_ENV)).stdout
    return float(re.search(r"member_steps_per_sec=([0-9.eE+]+)", out).group(1))


def independent(cli, ranks, members, steps, repeat):
    """`ranks` plain processes of members/ranks members each, at once; summed member-steps/s."""
    procs = []
    for r in range(ranks):
        share = (r + 1) * members // ranks - r * members // ranks
        procs.append(subprocess.Popen(
            [cli, "bench", "--config", "spirals", "--set", f"ensemble.members={share}", "--set",
             "backend.threads=1", "--steps", str(steps), "--warmup", "50", "--repeat",
             str(repeat)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=dict(os.environ, OMP_NUM_THREADS="1")))
    total = 0.0
    for p in procs:
        out, _ = p.communicate()
        total += float(re.search(r"member_steps_per_sec=([0-9.eE+]+)", out).group(1))
    return total


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--ranks", default="1,2,4")
    p.add_argument("--json")
    a = p.parse_args()
    cli = os.path.join(a.build_dir, "app", "ensemble-cli")
    if shutil.which("mpirun") is None:
        sys.exit("mpi_scaling: mpirun is not installed (scripts/setup.sh installs OpenMPI)")
    cores = os.cpu_count() or 1
    ranks = [int(x) for x in a.ranks.split(",")]
    best = {r: 0.0 for r in ranks}
    ceiling = {r: 0.0 for r in ranks}
    load = os.getloadavg()[0]
    for _ in range(a.rounds):
        for r in ranks:
            best[r] = max(best[r], bench(cli, r, a.members, a.steps, a.repeat, cores))
            if r > 1:
                ceiling[r] = max(ceiling[r], independent(cli, r, a.members, a.steps, a.repeat))
    base = best[ranks[0]] / ranks[0]
    rows = [{"ranks": r, "member_steps_per_sec": best[r], "speedup": best[r] / best[ranks[0]],
             "efficiency": best[r] / (r * base), "oversubscribed": r > cores,
             "independent_processes_member_steps_per_sec": ceiling[r] or best[r],
             "of_ceiling": best[r] / (ceiling[r] or best[r])} for r in ranks]
    print(f"spirals, K = {a.members}, ensemble axis, one thread per rank, {cores} cores, "
          f"best of {a.rounds} rounds; load average {load:.2f} at the start")
    print(f"{'ranks':>5} {'member-steps/s':>15} {'speedup':>8} {'efficiency':>10} "
          f"{'R plain processes':>18} {'mpi/ceiling':>11}")
    for row in rows:
        note = "  (oversubscribed)" if row["oversubscribed"] else ""
        print(f"{row['ranks']:>5} {row['member_steps_per_sec']:>15.4g} {row['speedup']:>8.2f} "
              f"{row['efficiency']:>10.2f} "
              f"{row['independent_processes_member_steps_per_sec']:>18.4g} "
              f"{row['of_ceiling']:>11.2f}{note}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"members": a.members, "steps": a.steps, "cores": cores, "load": load,
                       "rounds": a.rounds, "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    main()
