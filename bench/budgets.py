#!/usr/bin/env python3
"""Memory and shutdown budgets, measured and reported against their goals (never asserted).

The tests check behaviour only: that a K = 1000 run completes, that a window or controller let
go of mid-training goes. How much memory and how long are figures of the machine and its load,
so they are measured here, each in fresh processes, and printed beside their goals:

  peak RSS      `ensemble-cli bench`, W1 (spirals 2-32-32-2, resampled) at K = 1000, a fresh
                process per round (os.wait4's ru_maxrss); goal < 100 MiB (issue 6: no
                per-member dataset copies, no per-step allocations, no GPU library paged in
                for a CPU run)
  shutdown      `ensemble-gui-bench` (bench/gui_latency.cpp): an EngineController destroyed,
                and a MainWindow closed and destroyed, while K = 16 members train; goal < 2 s
                (the engine thread stops its chunk in flight and is joined)

  long runs     `--long-runs`: `ensemble-lab --config spirals --view V --train-steps N
                --screenshot` (offscreen) for every view of spirals and N = 10^4, 10^5, 10^6:
                the screenshot mode's worst GUI timer lateness, the process's peak RSS and
                its training steps/s, as a Markdown table with the Boundary view as the
                reference; goals (issue 33): lateness < 250 ms in every view, memory flat over
                a run (peak RSS at 10^6 within 1.25x of 10^4's), speed >= half the Boundary
                view's at the same N

  autosave      `--autosave`: the same screenshot runs (spirals, K members, N steps) with
                `--autosave-seconds 1` and with 0: the worst and median GUI timer lateness
                both ways, and the recovery checkpoints written (how many, median and worst
                time of a write, on the engine thread); goal (issue 38): the writes never
                stall the GUI (worst lateness with them < 250 ms, as without)

  recording     `--recording`: what recording a run in the runs store costs, as `ensemble-cli
                train --config spirals --set ensemble.members=K` recorded into a scratch store
                against the same command with `--no-record`, whole processes alternated (the
                order flipped every pair), for a one-step run (the fixed cost a command pays)
                and the preset's 3,000 steps; medians of wall and CPU seconds (user + system,
                os.wait4) and of the pairs' ratios, with the CPU's identity and the load
                average; goal (issue 52): under 1 % of the 3,000-step run

How late the GUI thread's timers fire while K = 100 members train is bench/gui_throughput.py's.
The exit status is 0 whether or not a goal is met; 1 when a measurement could not be made.

Usage: bench/budgets.py [--build-dir build] [--rounds 3] [--members 1000] [--gui-members 16]
       bench/budgets.py --long-runs [--lab PATH] [--views boundary,curves] [--steps 1e4,1e5]
                        [--cap-seconds 600]
       bench/budgets.py --autosave [--lab PATH] [--autosave-members 100,1000]
                        [--autosave-steps 30000] [--rounds 3]
       bench/budgets.py --recording [--pairs 15] [--recording-members 100]
                        [--recording-steps 1,3000]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RSS_GOAL_MIB = 100.0
SHUTDOWN_GOAL_MS = 2000.0
LATENESS_GOAL_MS = 250.0
RECORDING_GOAL = 0.01  # of the 3,000-step run
SPIRALS_VIEWS = ["boundary", "members", "curves", "calibration", "sweep"]


def long_run(lab, view, steps, cap_seconds):
    """(worst lateness ms, peak RSS MiB, steps/s) of one fresh ensemble-lab screenshot run;
    None for a run that did not finish within `cap_seconds`."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        env.setdefault("XDG_RUNTIME_DIR", tmp)
        argv = [lab, "--config", "spirals", "--view", view, "--train-steps", str(steps),
                "--screenshot", os.path.join(tmp, "shot.png")]
        with open(os.path.join(tmp, "out.txt"), "w+") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.DEVNULL, env=env)
            deadline = time.monotonic() + cap_seconds
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid != 0:
                    break
                if time.monotonic() > deadline:
                    proc.kill()
                    os.wait4(proc.pid, 0)
                    return None
                time.sleep(0.2)
            out.seek(0)
            text = out.read()
    rate = re.search(r"trained \d+ steps in [0-9.]+ s: ([0-9.]+) steps/s", text)
    late = re.search(r"lateness: worst ([0-9]+) ms", text)
    if os.waitstatus_to_exitcode(status) != 0 or not rate or not late:
        raise RuntimeError(f"{' '.join(argv)} failed or printed no figures: {text.strip()}")
    return float(late.group(1)), usage.ru_maxrss / 1024.0, float(rate.group(1))


def autosave_run(lab, members, steps, autosave_seconds, cap_seconds):
    """(worst lateness ms, median lateness ms, writes, median write ms, worst write ms) of one
    fresh screenshot run of spirals at K = `members` with --autosave-seconds; None when it did
    not finish within `cap_seconds`."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory() as tmp:
        env.setdefault("XDG_RUNTIME_DIR", tmp)
        env["XDG_DATA_HOME"] = os.path.join(tmp, "data")  # the recovery files: never the person's
        argv = [lab, "--config", "spirals", "--set", f"ensemble.members={members}", "--set",
                f"training.steps={steps}", "--train-steps", str(steps), "--autosave-seconds",
                str(autosave_seconds), "--screenshot", os.path.join(tmp, "shot.png")]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, env=env,
                                  timeout=cap_seconds)
        except subprocess.TimeoutExpired:
            return None
    text = proc.stdout
    late = re.search(r"lateness: worst ([0-9]+) ms, median ([0-9]+) ms", text)
    if proc.returncode != 0 or not late:
        raise RuntimeError(f"{' '.join(argv)} failed or printed no figures: "
                           f"{(text + proc.stderr).strip()}")
    writes = re.search(r"recovery checkpoints: ([0-9]+) written, median ([0-9.]+) ms, worst "
                       r"([0-9.]+) ms", text)
    count, median, worst = (int(writes.group(1)), float(writes.group(2)),
                            float(writes.group(3))) if writes else (0, 0.0, 0.0)
    return float(late.group(1)), float(late.group(2)), count, median, worst


def autosave_table(lab, member_counts, steps, rounds, cap_seconds):
    """Prints the autosave table (worst of `rounds` runs per row); False when a run failed."""
    print("| K | autosave | worst lateness (ms) | median lateness (ms) | writes | write median "
          "(ms) | write worst (ms) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    ok = True
    for members in member_counts:
        for seconds in (0, 1):
            results = []
            for _ in range(rounds):
                try:
                    r = autosave_run(lab, members, steps, seconds, cap_seconds)
                except (OSError, RuntimeError) as e:
                    print(f"autosave K={members} {seconds} s: not measured ({e})",
                          file=sys.stderr)
                    ok = False
                    continue
                if r is not None:
                    results.append(r)
            if not results:
                print(f"| {members:,} | {'every 1 s' if seconds else 'off'} | not measured | | | "
                      "| |")
                continue
            worst_late = max(r[0] for r in results)
            median_late = statistics.median(r[1] for r in results)
            writes = sum(r[2] for r in results)
            write_median = statistics.median(r[3] for r in results) if writes else 0.0
            write_worst = max(r[4] for r in results)
            label = "every 1 s" if seconds else "off"
            written = f"{writes} in {len(results)} runs"
            print(f"| {members:,} | {label} | {worst_late:.0f} ({verdict(worst_late, LATENESS_GOAL_MS)}) "
                  f"| {median_late:.0f} | {written} | "
                  f"{write_median:.1f} | {write_worst:.1f} |", flush=True)
    return ok


def cpu_identity():
    """'vendor family F model M (name)' from /proc/cpuinfo, and the core count."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        return "unknown CPU"
    return (f"{fields.get('vendor_id', '?')} family {fields.get('cpu family', '?')} model "
            f"{fields.get('model', '?')} ({fields.get('model name', '?')}), {os.cpu_count()} "
            "cores")


def recording_run(cli, members, steps, store):
    """(wall s, CPU s) of one fresh `ensemble-cli train` of spirals; `store` None: --no-record."""
    argv = [cli, "train", "--config", "spirals", "--set", f"ensemble.members={members}", "--set",
            f"training.steps={steps}", "--quiet"]
    env = dict(os.environ)
    if store is None:
        argv.append("--no-record")
    else:
        env["ENSEMBLE_RUNS_DB"] = store
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0 or "warning" in err:
        raise RuntimeError(f"{' '.join(argv)} failed or warned: {err.strip()}")
    return wall, usage.ru_utime + usage.ru_stime


def recording_table(cli, members, step_counts, pairs):
    """Prints recorded against unrecorded runs, per run length; False when a run failed."""
    print(f"CPU: {cpu_identity()}; load average before: {os.getloadavg()[0]:.2f}")
    print("| steps | pairs | wall off (s) | wall recorded (s) | wall ratio | CPU off (s) | "
          "CPU recorded (s) | CPU ratio | difference (ms wall / CPU) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    rows = {}  # steps: (wall off, CPU off, wall difference, CPU difference), seconds
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "runs.sqlite")
        try:
            recording_run(cli, members, 1, store)  # creates the store: no run pays for that
            for steps in step_counts:
                off, on = [], []
                for i in range(pairs):
                    order = (None, store) if i % 2 == 0 else (store, None)
                    for where in order:
                        (off if where is None else on).append(
                            recording_run(cli, members, steps, where))
                wall_off = statistics.median(r[0] for r in off)
                wall_on = statistics.median(r[0] for r in on)
                cpu_off = statistics.median(r[1] for r in off)
                cpu_on = statistics.median(r[1] for r in on)
                wall_ratio = statistics.median(b[0] / a[0] for a, b in zip(off, on))
                cpu_ratio = statistics.median(b[1] / a[1] for a, b in zip(off, on))
                wall_diff = statistics.median((b[0] - a[0]) * 1e3 for a, b in zip(off, on))
                cpu_diff = statistics.median((b[1] - a[1]) * 1e3 for a, b in zip(off, on))
                rows[steps] = (wall_off, cpu_off, wall_diff / 1e3, cpu_diff / 1e3)
                print(f"| {steps:,} | {pairs} | {wall_off:.3f} | {wall_on:.3f} | "
                      f"{wall_ratio:.3f} | {cpu_off:.3f} | {cpu_on:.3f} | {cpu_ratio:.3f} | "
                      f"{wall_diff:+.1f} / {cpu_diff:+.1f} |", flush=True)
        except (OSError, RuntimeError) as e:
            print(f"recording: not measured ({e})", file=sys.stderr)
            return False
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    # A long run's ratio drowns the fixed cost in the noise of a shared machine: the shortest
    # run's difference is that cost, set against the longest run's time here.
    short, longest = min(rows), max(rows)
    if short != longest:
        _, _, wall_fixed, cpu_fixed = rows[short]
        wall_long, cpu_long, _, _ = rows[longest]
        share = max(wall_fixed / wall_long, cpu_fixed / cpu_long)
        print(f"the {short:,}-step runs' difference ({wall_fixed * 1e3:+.1f} ms wall, "
              f"{cpu_fixed * 1e3:+.1f} ms CPU) against the {longest:,}-step run: "
              f"{wall_fixed / wall_long:+.2%} wall, {cpu_fixed / cpu_long:+.2%} CPU (goal < "
              f"{RECORDING_GOAL:.0%}: {verdict(share, RECORDING_GOAL)})")
    return True


def long_runs(lab, views, step_counts, cap_seconds):
    """Prints the per-view table; returns False when a run failed."""
    print(f"| view | steps | worst lateness (ms) | peak RSS (MiB) | steps/s | speed / Boundary |")
    print("|---|---:|---:|---:|---:|---:|")
    reference = {}
    ok = True
    for view in views:
        for steps in step_counts:
            try:
                result = long_run(lab, view, steps, cap_seconds)
            except (OSError, RuntimeError) as e:
                print(f"long run {view} {steps}: not measured ({e})", file=sys.stderr)
                ok = False
                continue
            if result is None:
                print(f"| {view} | {steps:,} | did not finish in {cap_seconds:g} s | | | |")
                continue
            late, rss, rate = result
            if view == "boundary":
                reference[steps] = rate
            ratio = f"{rate / reference[steps]:.2f}" if steps in reference else "–"
            print(f"| {view} | {steps:,} | {late:,.0f} | {rss:.0f} | {rate:,.0f} | {ratio} |",
                  flush=True)
    return ok


def peak_rss_mib(cli, members):
    """Peak resident memory of one fresh `ensemble-cli bench` process, in MiB."""
    argv = [cli, "bench", "--config", "spirals", "--set", "ensemble.bootstrap=resample", "--set",
            f"ensemble.members={members}", "--steps", "30", "--warmup", "2", "--repeat", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {err.strip()}")
    return usage.ru_maxrss / 1024.0  # ru_maxrss is in KiB


def shutdown_ms(gui_bench, members, rounds):
    """{case: (median ms, worst ms)} from ensemble-gui-bench."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    out = subprocess.run([gui_bench, "--members", str(members), "--rounds", str(rounds)],
                         check=True, capture_output=True, text=True, env=env).stdout
    found = {}
    for m in re.finditer(r"^RESULT case=(\w+) .*median_ms=([0-9.]+) worst_ms=([0-9.]+)$", out,
                         re.MULTILINE):
        found[m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return found


def verdict(value, goal):
    return "met" if value < goal else "NOT MET"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--members", type=int, default=1000, help="K of the peak-RSS run")
    parser.add_argument("--gui-members", type=int, default=16, help="K of the shutdown runs")
    parser.add_argument("--long-runs", action="store_true",
                        help="only the per-view long-run table (lateness, peak RSS, steps/s)")
    parser.add_argument("--lab", help="the ensemble-lab to run (default: the build's)")
    parser.add_argument("--views", default=",".join(SPIRALS_VIEWS))
    parser.add_argument("--steps", default="1e4,1e5,1e6", help="the run lengths, comma-separated")
    parser.add_argument("--cap-seconds", type=float, default=900.0,
                        help="a long run still going after this long is reported as such")
    parser.add_argument("--autosave", action="store_true",
                        help="only the autosave table (GUI lateness with and without recovery "
                        "checkpoints, their write times)")
    parser.add_argument("--autosave-members", default="100,1000",
                        help="K of the autosave runs, comma-separated")
    parser.add_argument("--autosave-steps", type=int, default=30000,
                        help="the autosave runs' length")
    parser.add_argument("--recording", action="store_true",
                        help="only the recording table (ensemble-cli train recorded against "
                        "--no-record, alternated)")
    parser.add_argument("--pairs", type=int, default=15, help="pairs of recording runs")
    parser.add_argument("--recording-members", type=int, default=100,
                        help="K of the recording runs")
    parser.add_argument("--recording-steps", default="1,3000",
                        help="the recording runs' lengths, comma-separated")
    args = parser.parse_args()
    if args.recording:
        cli = os.path.join(args.build_dir, "app", "ensemble-cli")
        steps = [int(float(n)) for n in args.recording_steps.split(",")]
        return 0 if recording_table(cli, args.recording_members, steps, args.pairs) else 1
    if args.autosave:
        lab = args.lab or os.path.join(args.build_dir, "app", "ensemble-lab")
        members = [int(k) for k in args.autosave_members.split(",")]
        return 0 if autosave_table(lab, members, args.autosave_steps, args.rounds,
                                   args.cap_seconds) else 1
    if args.long_runs:
        lab = args.lab or os.path.join(args.build_dir, "app", "ensemble-lab")
        steps = [int(float(n)) for n in args.steps.split(",")]
        return 0 if long_runs(lab, args.views.split(","), steps, args.cap_seconds) else 1
    cli = os.path.join(args.build_dir, "app", "ensemble-cli")
    gui_bench = os.path.join(args.build_dir, "bench", "ensemble-gui-bench")

    failed = False
    try:
        rss = [peak_rss_mib(cli, args.members) for _ in range(args.rounds)]
        worst = max(rss)
        print(f"peak RSS, ensemble-cli bench W1 K = {args.members}: median "
              f"{statistics.median(rss):.1f} MiB, worst {worst:.1f} MiB over {len(rss)} "
              f"processes (goal < {RSS_GOAL_MIB:g} MiB: {verdict(worst, RSS_GOAL_MIB)})")
    except (OSError, RuntimeError) as e:
        print(f"peak RSS: not measured ({e})", file=sys.stderr)
        failed = True

    if not os.path.exists(gui_bench):
        print(f"shutdown: not measured ({gui_bench} is not built; it needs the GUI)",
              file=sys.stderr)
        failed = True
    else:
        try:
            cases = shutdown_ms(gui_bench, args.gui_members, args.rounds)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"shutdown: not measured ({e})", file=sys.stderr)
            cases = {}
        names = {"controller": "EngineController destroyed", "window": "MainWindow closed"}
        for case, label in names.items():
            if case not in cases:
                print(f"shutdown, {label}: not measured", file=sys.stderr)
                failed = True
                continue
            median, worst = cases[case]
            print(f"shutdown, {label} while K = {args.gui_members} train: median {median:.1f} ms, "
                  f"worst {worst:.1f} ms over {args.rounds} rounds (goal < "
                  f"{SHUTDOWN_GOAL_MS:g} ms: {verdict(worst, SHUTDOWN_GOAL_MS)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
