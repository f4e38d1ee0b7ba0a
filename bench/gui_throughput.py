#!/usr/bin/env python3
"""Training throughput with the window open against headless, side by side (issue 4).

Each round runs, back to back, `ensemble-cli bench` (steady-state steps, nothing else) and
`ensemble-lab --train-steps N --screenshot` (offscreen: the engine thread trains while the GUI
thread receives snapshots, evaluates the grid and draws every view), on the same config, and
records member-steps per second of both, and how late a 10 ms timer on the GUI thread fired
meanwhile (the GUI's responsiveness; tests/ui/tst_gui.cpp only checks that it keeps responding). The rounds alternate which goes first; the report is
the median of the per-round ratios (window / headless) and their spread.

Usage: bench/gui_throughput.py [--build-dir build] [--members 100] [--steps 20000] [--rounds 5]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def headless(build, config, members, steps):
    out = subprocess.run(
        [os.path.join(build, "app", "ensemble-cli"), "bench", "--config", config, "--set",
         f"ensemble.members={members}", "--steps", str(steps), "--repeat", "1"],
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"member_steps_per_sec=([0-9.eE+]+)", out).group(1))


def windowed(build, config, members, steps, shot, view="boundary"):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    out = subprocess.run(
        [os.path.join(build, "app", "ensemble-lab"), "--config", config, "--set",
         f"ensemble.members={members}", "--set", f"training.steps={steps}", "--train-steps",
         str(steps), "--view", view, "--screenshot", shot],
        check=True, capture_output=True, text=True, env=env).stdout
    rate = float(re.search(r"([0-9.]+) member-steps/s", out).group(1))
    late = re.search(r"lateness: worst ([0-9]+) ms, median ([0-9]+) ms", out)
    return rate, (int(late.group(1)), int(late.group(2))) if late else (None, None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--config", default="spirals")
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--view", default="boundary",
                        help="view shown while training (curves is the heaviest)")
    args = parser.parse_args()

    ratios, cli_rates, gui_rates, worst_late, median_late = [], [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        shot = os.path.join(tmp, "shot.png")
        for r in range(args.rounds):
            run_cli = lambda: headless(args.build_dir, args.config, args.members, args.steps)
            run_gui = lambda: windowed(args.build_dir, args.config, args.members, args.steps, shot,
                                       args.view)
            if r % 2 == 0:
                cli, (gui, late) = run_cli(), run_gui()
            else:
                (gui, late), cli = run_gui(), run_cli()
            if late[0] is not None:
                worst_late.append(late[0])
                median_late.append(late[1])
            cli_rates.append(cli)
            gui_rates.append(gui)
            ratios.append(gui / cli)
            print(f"round {r + 1}: headless {cli:,.0f}, window open {gui:,.0f} member-steps/s, "
                  f"ratio {gui / cli:.3f}, GUI timer late by {late[0]} ms at worst", file=sys.stderr)
    print(f"{args.config}, K = {args.members}, {args.steps} steps, {args.rounds} rounds: "
          f"headless {statistics.median(cli_rates):,.0f}, window open "
          f"{statistics.median(gui_rates):,.0f} member-steps/s; window / headless "
          f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
    if worst_late:
        print(f"GUI thread ({args.view} view): a 10 ms timer fired late by {max(worst_late)} ms "
              f"at worst, {statistics.median(median_late)} ms median")


if __name__ == "__main__":
    main()
