#!/usr/bin/env python3
"""Training throughput with the window open against headless, side by side (issue 4).

Each round runs, back to back, `ensemble-cli bench` (steady-state steps, nothing else) and
`ensemble-lab --train-steps N --screenshot` (offscreen: the engine thread trains while the GUI
thread receives snapshots, evaluates the grid and draws every view), on the same config, and
records member-steps per second of both. The rounds alternate which goes first; the report is
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


def windowed(build, config, members, steps, shot):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env.setdefault("XDG_RUNTIME_DIR", tempfile.gettempdir())
    out = subprocess.run(
        [os.path.join(build, "app", "ensemble-lab"), "--config", config, "--set",
         f"ensemble.members={members}", "--set", f"training.steps={steps}", "--train-steps",
         str(steps), "--view", "boundary", "--screenshot", shot],
        check=True, capture_output=True, text=True, env=env).stdout
    return float(re.search(r"([0-9.]+) member-steps/s", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    parser.add_argument("--config", default="spirals")
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    ratios, cli_rates, gui_rates = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        shot = os.path.join(tmp, "shot.png")
        for r in range(args.rounds):
            run_cli = lambda: headless(args.build_dir, args.config, args.members, args.steps)
            run_gui = lambda: windowed(args.build_dir, args.config, args.members, args.steps, shot)
            if r % 2 == 0:
                cli, gui = run_cli(), run_gui()
            else:
                gui, cli = run_gui(), run_cli()
            cli_rates.append(cli)
            gui_rates.append(gui)
            ratios.append(gui / cli)
            print(f"round {r + 1}: headless {cli:,.0f}, window open {gui:,.0f} member-steps/s, "
                  f"ratio {gui / cli:.3f}", file=sys.stderr)
    print(f"{args.config}, K = {args.members}, {args.steps} steps, {args.rounds} rounds: "
          f"headless {statistics.median(cli_rates):,.0f}, window open "
          f"{statistics.median(gui_rates):,.0f} member-steps/s; window / headless "
          f"{statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")


if __name__ == "__main__":
    main()
