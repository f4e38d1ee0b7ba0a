#!/usr/bin/env python3
"""Scaling of the MPI mesh (issue 22), both axes in one run, one thread per rank, on 1, 2 (and
4, oversubscribed on a 2-core machine, marked as such) ranks:

- ensemble axis: spirals with K = 1000 members split over the ranks;
- data axis: the MNIST MLP 784-256-256-10 (mnist-mlp), K = 1, batch 256 split over the ranks
  (backend.mesh {"ensemble": 1, "data": R}), its gradients summed by the allreduce every step.

Each point is `mpirun -n R ensemble-cli bench` (steady-state steps; a repeat lasts as long as
the slowest rank), reporting member-steps/s and the scaling efficiency rate(R) / (R * rate(1)).
Loopback / shared memory only, as root too.

Beside each R > 1 it measures the ceiling this machine offers at that moment: R independent
plain processes (no MPI) run at once, each with its share of the work (ensemble axis: K/R
members, their member-steps/s summed; data axis: batch B/R, the slowest one's steps/s, since a
data-parallel step waits for its slowest replica). On an idle machine with R free cores that is
R times the one-rank rate; on a shared one it is what R processes can get, and mpi / ceiling
is the cost of MPI itself (for the data axis: the allreduce of 1.08 MB per step).

The rank counts are measured in interleaved rounds and each keeps its best round: on a shared
machine that is the estimate least disturbed by other load (the load average is printed).

Usage: bench/mpi_scaling.py [--build-dir build] [--axis both|ensemble|data] [--members 1000]
                            [--steps 400] [--data-steps 100] [--repeat 5] [--rounds 3]
                            [--ranks 1,2,4] [--json OUT.json]
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


def workload(axis, ranks, members, batch_share=None):
    """The bench arguments of one rank's (or one plain process's) work."""
    if axis == "ensemble":
        return ["--config", "spirals", "--set", f"ensemble.members={members}"]
    args = ["--config", "mnist-mlp", "--set", "ensemble.members=1", "--set",
            f"training.batch_size={batch_share or 256}"]
    if ranks > 1:
        args += ["--set", f'backend.mesh={{"ensemble": 1, "data": {ranks}}}']
    return args


def rate(out, key):
    return float(re.search(key + r"=([0-9.eE+]+)", out).group(1))


def bench(cli, axis, ranks, members, steps, repeat, cores):
    args = [cli, "bench"] + workload(axis, ranks, members) + [
        "--set", "backend.threads=1", "--steps", str(steps), "--warmup", "20",
        "--repeat", str(repeat)]
    # One rank runs as a plain process (no mpirun): the baseline is today's CLI.
    if ranks > 1:
        args = ["mpirun", "-n", str(ranks), "--bind-to", "core" if ranks <= cores else "none"] + \
               (["--oversubscribe"] if ranks > cores else []) + args
    out = subprocess.run(args, check=True, capture_output=True, text=True,
                         env=dict(os.environ, **MPI_ENV)).stdout
    return rate(out, "member_steps_per_sec")


def independent(cli, axis, ranks, members, steps, repeat):
    """`ranks` plain processes at once, each with its share of the work (ensemble axis: its
    members, rates summed; data axis: batch 256/ranks, the slowest one's rate)."""
    procs = []
    for r in range(ranks):
        if axis == "ensemble":
            share = (r + 1) * members // ranks - r * members // ranks
            work = workload(axis, 1, share)
        else:
            work = workload(axis, 1, 1, batch_share=256 // ranks)
        procs.append(subprocess.Popen(
            [cli, "bench"] + work + ["--set", "backend.threads=1", "--steps", str(steps),
                                     "--warmup", "20", "--repeat", str(repeat)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env=dict(os.environ, OMP_NUM_THREADS="1")))
    rates = []
    for p in procs:
        out, _ = p.communicate()
        rates.append(rate(out, "member_steps_per_sec"))
    return sum(rates) if axis == "ensemble" else min(rates)


def measure(cli, axis, ranks, members, steps, repeat, rounds, cores):
    best = {r: 0.0 for r in ranks}
    ceiling = {r: 0.0 for r in ranks}
    for _ in range(rounds):
        for r in ranks:
            best[r] = max(best[r], bench(cli, axis, r, members, steps, repeat, cores))
            if r > 1:
                ceiling[r] = max(ceiling[r], independent(cli, axis, r, members, steps, repeat))
    base = best[ranks[0]] / ranks[0]
    return [{"ranks": r, "member_steps_per_sec": best[r], "speedup": best[r] / best[ranks[0]],
             "efficiency": best[r] / (r * base), "oversubscribed": r > cores,
             "independent_processes_member_steps_per_sec": ceiling[r] or best[r],
             "of_ceiling": best[r] / (ceiling[r] or best[r])} for r in ranks]


def show(title, rows):
    print(title)
    print(f"{'ranks':>5} {'member-steps/s':>15} {'speedup':>8} {'efficiency':>10} "
          f"{'R plain processes':>18} {'mpi/ceiling':>11}")
    for row in rows:
        note = "  (oversubscribed)" if row["oversubscribed"] else ""
        print(f"{row['ranks']:>5} {row['member_steps_per_sec']:>15.4g} {row['speedup']:>8.2f} "
              f"{row['efficiency']:>10.2f} "
              f"{row['independent_processes_member_steps_per_sec']:>18.4g} "
              f"{row['of_ceiling']:>11.2f}{note}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    p.add_argument("--axis", choices=["both", "ensemble", "data"], default="both")
    p.add_argument("--members", type=int, default=1000)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--data-steps", type=int, default=100)
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
    load = os.getloadavg()[0]
    report = {"cores": cores, "load": load, "rounds": a.rounds}
    if a.axis in ("both", "ensemble"):
        rows = measure(cli, "ensemble", ranks, a.members, a.steps, a.repeat, a.rounds, cores)
        show(f"spirals, K = {a.members}, ensemble axis, one thread per rank, {cores} cores, "
             f"best of {a.rounds} rounds; load average {load:.2f} at the start", rows)
        report.update({"members": a.members, "steps": a.steps, "rows": rows})
    if a.axis in ("both", "data"):
        rows = measure(cli, "data", ranks, 1, a.data_steps, a.repeat, a.rounds, cores)
        show(f"mnist-mlp 784-256-256-10, K = 1, batch 256, data axis, one thread per rank, "
             f"{cores} cores, best of {a.rounds} rounds; load average "
             f"{os.getloadavg()[0]:.2f}", rows)
        report["data_axis"] = {"model": "784-256-256-10", "members": 1, "batch": 256,
                               "steps": a.data_steps, "rows": rows}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
