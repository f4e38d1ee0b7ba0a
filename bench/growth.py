#!/usr/bin/env python3
"""Cost of growth: how each training workload's time grows with K and with the batch (issue 53).

Drives ensemble-cli bench over
  W1 spirals MLP 2-32-32-2, batch 32, Adam, resample: K = 1, 3, 10, 30, 100, 300, 1000;
  W2 MNIST MLP 784-256-256-10, batch 128, Adam: K = 1, 2, 4, ..., 128;
  W5 the mnist-cnn preset (batch 128, SGD with momentum): K = 1, 2, 4, ..., 64;
  the batch: W2 at K = 8, batch 16 ... 512; W5 at K = 4, batch 16 ... 256;
at 2 threads (the machine's cores) and, for W2 and W5, 1 thread too. The configs are
run_bench.py's (workload_config), so the figures match docs/performance.md's tables.

Every point is measured once per round and the rounds repeat (default 3; --budget cuts them
short), alternating the order, so drift on a shared machine spreads over all points; each
measurement is one process with --repeat 3, and a point's figure is the median of its repeats
(quiet samples preferred). Before each process the script waits (within --wait-per-point and
--wait-budget) for the rest of the machine to drop under a quarter of it. The 1-minute load
average and the other processes' share of the machine (/proc/stat) are kept with every sample;
samples with other load above 5% or repeats more than 15% apart are flagged noisy, and those
with other load are measured once more; a process running 4 times longer than expected is
killed as starved. A K sweep stops at the first point whose one process ran longer than
--point-limit seconds (said in the output). W1 trains the same 1,900 steps at every K: its
steps get slower as it trains (see steps_for).

Each point also gets its working set, a model of the bytes a step touches (parameters,
optimizer state, gradients, activations for the batch; see working_set()), per member and for
all K, set against the caches (sysfs) so the bends can be read against L2 and L3.

Writes bench/results/growth.json (every sample, the summaries, the bends, the CPU: vendor,
family, model and caches), growth_k.png and growth_batch.png (log-log).
Usage: bench/growth.py [--binary build/app/ensemble-cli] [--workloads w1,w2,w5] [--quick]
       bench/growth.py --render bench/results/growth.json   (plots and table only)
matplotlib is a benchmark-only dependency (apt install python3-matplotlib).
"""

import argparse
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peer_blas  # noqa: E402
import run_bench  # noqa: E402

FLOAT = 4  # bytes; the engine trains in float32
W1_STEPS = 600  # a repeat's steps at every K (see steps_for)
QUIET_OTHER_LOAD = 0.25  # the rest of the machine's share under which a measurement starts
NOISY_SPREAD = 0.15  # repeats of one process further apart than this (max / min - 1): noisy
DEFAULT_BATCH = {"w1": 32, "w2": 128, "w5": 128}
NAMES = {"w1": "W1 spirals MLP 2-32-32-2, batch 32, Adam",
         "w2": "W2 MNIST MLP 784-256-256-10, batch 128, Adam",
         "w5": "W5 mnist-cnn, batch 128, SGD"}
# Seconds one process should take (--repeat 3 plus warm-up), per workload: short enough for
# the whole run to stay near 10 minutes, long enough for a timer's resolution not to matter.
TARGET_SECONDS = {"w1": 0.5, "w2": 1.2, "w5": 2.5}

# Flax's MNIST CNN (the mnist-cnn preset) layer by layer, as ConvNetCpu sees it:
# (kind, output channels x height x width, fan-in of a conv's output, has parameters).
CNN_LAYERS = [("conv", 32 * 28 * 28, 9, True), ("pool", 32 * 14 * 14, 0, False),
              ("conv", 64 * 14 * 14, 32 * 9, True), ("pool", 64 * 7 * 7, 0, False),
              ("dense", 256, 0, True), ("dense", 10, 0, True)]
CNN_PARAMS = (32 * 9 + 32) + (64 * 32 * 9 + 64) + (3136 * 256 + 256) + (256 * 10 + 10)
CNN_GROUP = 32  # kConvGroup (engine/backend/cpu/conv_net.h): images a task takes at once


def mlp_params(widths):
    return sum(widths[i] * widths[i + 1] + widths[i + 1] for i in range(len(widths) - 1))


def cnn_floats_per_image():
    """Floats of ConvNetCpu's per-thread workspace per image: the input, every layer's output,
    the pre-activations of layers with parameters, the convolutions' im2col columns, the
    flattened input of the first dense layer and two backward deltas of the widest layer."""
    plane = {32 * 28 * 28: 28 * 28, 64 * 14 * 14: 14 * 14}
    floats = 28 * 28 + 64 * 7 * 7  # input, flat
    for kind, out, fan_in, has_params in CNN_LAYERS:
        floats += out * (2 if has_params else 1)
        if kind == "conv":
            floats += fan_in * plane[out]
    return floats + 2 * max(out for _, out, _, _ in CNN_LAYERS)


def working_set(workload, members, threads, batch):
    """Bytes one training step touches: a model, not a measurement. Per member: its
    parameters, optimizer state (Adam: two moments; SGD with momentum: one), gradient and the
    activations of its batch. All K: the members' parameters and state (and, for the CNN, the
    partial gradients of every (member, group of 32 images) task) plus the per-thread scratch
    (the MLP's gradient and activations; the CNN's group workspace) of the threads that run."""
    used = max(1, min(threads, members))
    if workload in ("w1", "w2"):
        widths = run_bench.W1_WIDTHS if workload == "w1" else run_bench.W2_WIDTHS
        params = mlp_params(widths)
        state = 2 * params  # Adam's moments
        grads = params
        # the input, pre- and post-activations of every layer, two backward deltas
        acts = batch * (widths[0] + 2 * sum(widths[1:]) + 2 * max(widths[1:]))
        total = members * (params + state) + used * (grads + acts)
    else:
        params = CNN_PARAMS
        state = params  # the momentum
        groups = math.ceil(batch / CNN_GROUP)
        grads = groups * params  # one partial gradient per group, summed in order
        acts = batch * cnn_floats_per_image()
        used = max(1, min(threads, members * groups))
        group_ws = min(batch, CNN_GROUP) * cnn_floats_per_image()
        shared_cols = 9 * 28 * 28 * batch  # the first layer's columns, once for all members
        total = members * (params + state + grads) + used * group_ws + shared_cols
    return {"params": params * FLOAT, "optimizer_state": state * FLOAT,
            "gradients": grads * FLOAT, "activations": acts * FLOAT,
            "per_member": (params + state + grads + acts) * FLOAT,
            "total": total * FLOAT, "threads_used": used}


def crossing(sizes, capacity):
    """The first x whose size exceeds capacity, from [(x, size)] sorted by x; None if none."""
    return next((x for x, size in sizes if size > capacity), None)


def bends(series, flat=0.10, rise=0.15):
    """Where per-member time stops falling and where it rises, from [(x, seconds per member
    step)] sorted by x: stops_falling is the first x whose next point is less than `flat`
    faster per member; best is the x of the lowest per-member time; rises_from is the first x
    after best that is more than `rise` slower than best (None if none)."""
    if not series:
        return {"stops_falling": None, "best": None, "rises_from": None}
    stops = series[-1][0]
    for (x, t), (_, t_next) in zip(series, series[1:]):
        if t_next > (1 - flat) * t:
            stops = x
            break
    best_x, best_t = min(series, key=lambda p: p[1])
    rises = next((x for x, t in series if x > best_x and t > (1 + rise) * best_t), None)
    return {"stops_falling": stops, "best": best_x, "best_seconds": best_t, "rises_from": rises}


# -- the machine -------------------------------------------------------------------------------

def parse_size(text):
    """'1280K' / '48 MiB' / '2.5 MiB (2 instances)' -> bytes."""
    text = text.split("(")[0].strip().replace(" ", "")
    for suffix, scale in (("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10),
                          ("M", 1 << 20), ("G", 1 << 30)):
        if text.endswith(suffix):
            return int(float(text[:-len(suffix)]) * scale)
    return int(text) if text.isdigit() else None


def caches():
    """cpu0's caches from sysfs: level, type, size in bytes, the CPUs sharing it."""
    found = []
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        def read(name):
            with open(os.path.join(base, entry, name)) as f:
                return f.read().strip()
        try:
            found.append({"level": int(read("level")), "type": read("type"),
                          "bytes": parse_size(read("size")),
                          "shared_cpu_list": read("shared_cpu_list")})
        except (OSError, ValueError):
            continue
    return found


def machine():
    info = {"cpu": peer_blas.cpu_identity(), "caches": caches(), "cpus": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("L1d cache", "L2 cache", "L3 cache", "Model name",
                               "Hypervisor vendor", "Core(s) per socket", "Thread(s) per core"):
                info["lscpu " + key.strip()] = value.strip()
    except OSError:
        pass
    return info


def cache_bytes(meta, level):
    return next((c["bytes"] for c in meta["machine"]["caches"]
                 if c["level"] == level and c["type"] in ("Unified", "Data")), None)


def git_head():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


# -- measuring ---------------------------------------------------------------------------------

def points(workloads, quick):
    """Every (sweep, workload, K, threads, batch) to measure, in the order of one round."""
    ks = {"w1": [1, 3, 10, 30, 100, 300, 1000], "w2": [1, 2, 4, 8, 16, 32, 64, 128],
          "w5": [1, 2, 4, 8, 16, 32, 64]}
    batches = {"w2": (8, [16, 32, 64, 128, 256, 512]), "w5": (4, [16, 32, 64, 128, 256])}
    if quick:
        ks = {"w1": [1, 10, 100, 1000], "w2": [1, 8, 32], "w5": [1, 4]}
        batches = {"w2": (8, [32, 128, 512]), "w5": (4, [64, 128])}
    threads = {"w1": [2], "w2": [1, 2], "w5": [1, 2]}
    out = []
    for w in ("w1", "w2", "w5"):
        if w not in workloads:
            continue
        for t in threads[w]:
            out += [{"sweep": "k", "workload": w, "members": k, "threads": t,
                     "batch": DEFAULT_BATCH[w]} for k in ks[w]]
        if w in batches:
            k, bs = batches[w]
            for t in threads[w]:
                out += [{"sweep": "batch", "workload": w, "members": k, "threads": t,
                         "batch": b} for b in bs]
    return out


def key(p):
    return (p["sweep"], p["workload"], p["members"], p["threads"], p["batch"])


class Measurer:
    def __init__(self, binary, quick):
        self.binary = binary
        self.quick = quick
        self.sampler = run_bench.CpuSampler()
        self.child_cpu = run_bench.ChildCpu()
        self.last = {}  # key -> seconds per step of its last quiet sample, to size the next
        self.last_points = {}  # the same, keyed by the point's fields
        self.ours = {}  # the binary's own report: backend, kernels, cpu
        self.startup = {}  # (workload, batch) -> start-up CPU seconds

    def startup_cpu(self, p):
        """CPU seconds of a process that trains one step of one member: the start-up."""
        k = (p["workload"], p["batch"])
        if k not in self.startup:
            argv = [self.binary, "bench", *run_bench.workload_config(p["workload"], 1, 1,
                                                                     p["batch"]),
                    "--steps", "1", "--warmup", "0", "--repeat", "1"]
            self.child_cpu.take()
            subprocess.run(argv, capture_output=True, text=True)
            self.startup[k] = self.child_cpu.take()
        return self.startup[k]

    def guess(self, p):
        """Seconds per step: the point's last quiet sample; else the nearest smaller point of
        its sweep measured quietly, scaled by K (or the batch); else run_bench's guess."""
        if key(p) in self.last:
            return self.last[key(p)]
        axis = "members" if p["sweep"] == "k" else "batch"
        smaller = [(q[axis], t) for q, t in ((dict(f), t) for f, t in self.last_points.items())
                   if all(q[f] == p[f] for f in ("sweep", "workload", "threads", "members",
                                                 "batch") if f != axis) and q[axis] < p[axis]]
        if smaller:
            x, t = max(smaller)
            return t * p[axis] / x
        w = p["workload"]
        return (run_bench.step_guess(w, p["members"], p["threads"]) * p["batch"]
                / DEFAULT_BATCH[w])

    def steps_for(self, p):
        w = p["workload"]
        guess = self.guess(p)
        target = TARGET_SECONDS[w] * (0.5 if self.quick else 1.0)
        if w == "w5":  # time-boxed: large K runs 1 step a repeat (a step is >= 0.1 s there)
            steps = max(1, int(target / 4 / guess))
            return steps, 1
        if w == "w1":
            # Spirals trained for long gets up to 5 times slower a step (at K = 1: 8 us after
            # 60,000 steps at lr 1e-6, 42 us at lr 0.01; subnormal floats, likely), so every K
            # trains the same 1,900 steps: 100 warm-up, 3 repeats of 600.
            return W1_STEPS, 100
        steps = max(3, int(target / 3.3 / guess))
        return steps, max(1, steps // 10)

    def wait_for_quiet(self, budget):
        """Waits (at most budget seconds) until the rest of the machine uses less than a
        quarter of it: on a shared 2-core machine one build job halves what we measure.
        Returns the seconds waited."""
        waited = 0.0
        while True:
            before = self.sampler.stat()
            time.sleep(0.5)
            busy = self.sampler.other_load(before, self.sampler.stat(), 0.5, 0.0)
            if busy < QUIET_OTHER_LOAD or waited >= budget:
                return waited
            time.sleep(2.0)
            waited += 2.5

    def measure(self, p, wait_budget=0.0):
        steps, warmup = self.steps_for(p)
        self.startup_cpu(p)  # measured once, before the timed run's CPU count starts
        waited = self.wait_for_quiet(wait_budget) if wait_budget > 0 else 0.0
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "bench.json")
            argv = [self.binary, "bench",
                    *run_bench.workload_config(p["workload"], p["members"], p["threads"],
                                               None if p["batch"] == DEFAULT_BATCH[p["workload"]]
                                               else p["batch"]),
                    "--steps", str(steps), "--warmup", str(warmup), "--repeat", "3",
                    "--json", out]
            time.sleep(run_bench.SETTLE_SECONDS)
            load_before = loadavg()
            before = self.sampler.stat()
            t0 = time.perf_counter()
            # A starved process (the rest of the machine at nice 0 against our nice 10) can
            # take 40 times its share; it is killed and counted as such instead.
            expected = self.guess(p) * (warmup + 3 * steps) + 1.5
            try:
                proc = subprocess.run(argv, capture_output=True, text=True,
                                      timeout=max(15.0, 4 * expected))
            except subprocess.TimeoutExpired:
                self.child_cpu.take()  # the killed process's CPU is not a measurement
                return dict(p, steps=steps, warmup=warmup, killed=True, noisy=True,
                            wall=time.perf_counter() - t0, loadavg_before=load_before,
                            waited_for_quiet=waited,
                            other_load=self.sampler.other_load(before, self.sampler.stat(),
                                                               time.perf_counter() - t0, 0.0))
            wall = time.perf_counter() - t0
            after = self.sampler.stat()
            own = self.child_cpu.take()
            if proc.returncode != 0:
                raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.strip()}")
            with open(out) as f:
                result = json.load(f)
        if not self.ours:
            self.ours = {k: result.get(k) for k in ("backend", "kernels", "cpu")}
        repeats = result["steps_per_sec"]
        sps = statistics.median(repeats)
        other = self.sampler.other_load(before, after, wall, own)
        spread = max(repeats) / min(repeats) - 1
        # CPU seconds a step, the start-up (reading MNIST) taken off: robust to being
        # preempted, not to the other load's use of the caches; includes OpenMP's spinning.
        cpu_step = max(0.0, own - self.startup_cpu(p)) / (warmup + 3 * steps)
        sample = dict(p, steps=steps, warmup=warmup, steps_per_sec_repeats=repeats,
                      cpu_seconds=own, cpu_seconds_per_step=cpu_step,
                      seconds_per_step=1.0 / sps, member_steps_per_sec=sps * p["members"],
                      useful_gflops=result.get("useful_gflops"), wall=wall,
                      loadavg_before=load_before, loadavg_after=loadavg(), other_load=other,
                      spread=spread, waited_for_quiet=waited,
                      noisy=other > run_bench.NOISY_OTHER_LOAD or spread > NOISY_SPREAD)
        if not sample["noisy"]:  # a starved sample would size the next one too small
            self.last[key(p)] = sample["seconds_per_step"]
            self.last_points[frozenset(p.items())] = sample["seconds_per_step"]
        return sample


def run(args):
    binary = args.binary if os.path.isabs(args.binary) else os.path.join(ROOT, args.binary)
    if not os.path.exists(binary):
        sys.exit(f"growth: {binary} not found; build first or pass --binary")
    if args.nice:
        os.nice(args.nice)  # the measured processes inherit it
    workloads = set(args.workloads.split(","))
    todo = points(workloads, args.quick)
    rounds = 1 if args.quick and args.rounds is None else (args.rounds or 3)
    m = Measurer(binary, args.quick)
    samples, notes, stopped, once = [], [], set(), set()
    wait_left = args.wait_budget
    start = time.time()
    print(f"growth: CPU {peer_blas.describe_cpu(peer_blas.cpu_identity())}; {len(todo)} points "
          f"x {rounds} rounds; nice {args.nice}", flush=True)
    for r in range(rounds):
        # Alternate the order, so a slow patch of the machine does not always hit the same end.
        order = todo if r % 2 == 0 else list(reversed(todo))
        print(f"round {r + 1}/{rounds}", flush=True)
        for p in order:
            sweep = (p["sweep"], p["workload"], p["threads"])
            if any(s == sweep and p["members"] > k for s, k in stopped) or key(p) in once:
                continue
            if time.time() - start > args.budget:
                notes.append(f"time budget ({args.budget:.0f} s) spent in round {r + 1}: "
                             "later points have fewer samples")
                break
            for attempt in range(2):  # a noisy sample is measured once more
                s = m.measure(p, min(args.wait_per_point, wait_left))
                wait_left -= s["waited_for_quiet"]
                s["round"] = r + 1
                samples.append(s)
                if s.get("killed"):
                    print(f"  {p['sweep']:5} {p['workload']} K={p['members']:<4} t={p['threads']} "
                          f"B={p['batch']:<3} killed after {s['wall']:.1f} s (starved: other "
                          f"{100 * s['other_load']:.0f}%)", flush=True)
                    continue
                print(f"  {p['sweep']:5} {p['workload']} K={p['members']:<4} t={p['threads']} "
                      f"B={p['batch']:<3} {1e3 * s['seconds_per_step']:10.3f} ms/step "
                      f"{1e6 * s['seconds_per_step'] / p['members']:10.1f} us/member-step "
                      f"wall {s['wall']:5.1f} s load {s['loadavg_before']:.2f} "
                      f"other {100 * s['other_load']:4.1f}% spread {100 * s['spread']:4.1f}%"
                      + f" cpu {1e6 * s['cpu_seconds_per_step'] / p['members']:10.1f} us"
                      + ("  NOISY" if s["noisy"] else ""), flush=True)
                # Measured again only when the rest of the machine got in the way: a wide
                # spread alone (W1's steps slow down as it trains) would come back.
                if (s.get("other_load", 0) <= run_bench.NOISY_OTHER_LOAD and not s.get("killed")
                        or s["wall"] > args.point_limit):
                    break
            if (s["wall"] > args.point_limit and not s.get("killed")
                    and s["other_load"] <= run_bench.NOISY_OTHER_LOAD):
                # Its one process (3 repeats) is its figure; no more rounds of it, and no
                # larger K in its sweep. (A starved sample says nothing of the point.)
                once.add(key(p))
                note = (f"{p['workload']} at {p['threads']} thread(s), batch {p['batch']}: "
                        f"K = {p['members']} took {s['wall']:.1f} s (> {args.point_limit:g} s): "
                        "measured in one process only"
                        + ("; larger K not measured" if p["sweep"] == "k" else ""))
                if p["sweep"] == "k":
                    stopped.add((sweep, p["members"]))
                notes.append(note)
                print("  stopped: " + note, flush=True)
        else:
            continue
        break
    meta = {"machine": machine(), "binary": binary, "ours": m.ours, "commit": git_head(),
            "date": datetime.datetime.now().isoformat(timespec="seconds"), "nice": args.nice,
            "rounds": rounds, "runtime_s": time.time() - start, "notes": notes,
            "noisy_other_load": run_bench.NOISY_OTHER_LOAD, "noisy_spread": NOISY_SPREAD,
            "quiet_other_load": QUIET_OTHER_LOAD, "waited_s": args.wait_budget - wait_left,
            "point_limit_s": args.point_limit}
    return {"meta": meta, "samples": samples}


# -- summaries and plots -----------------------------------------------------------------------

def summarise(saved):
    """Per point: the median of the repeats of its quiet samples (of all, when fewer than half
    are quiet), the spread, the noisy count, and the working set."""
    groups = {}
    for s in saved["samples"]:
        if not s.get("killed"):
            groups.setdefault(key(s), []).append(s)
    killed = {}
    for s in saved["samples"]:
        if s.get("killed"):
            killed[key(s)] = killed.get(key(s), 0) + 1
    rows = []
    for (sweep, w, k, t, b), group in sorted(groups.items()):
        quiet = [s for s in group if not s["noisy"]]
        use = quiet if len(quiet) >= max(1, len(group) / 2) else group
        repeats = [1.0 / v for s in use for v in s["steps_per_sec_repeats"]]
        sec = statistics.median(repeats)
        rows.append({"sweep": sweep, "workload": w, "members": k, "threads": t, "batch": b,
                     "seconds_per_step": sec, "member_steps_per_sec": k / sec,
                     "seconds_per_member_step": sec / k,
                     "min": min(repeats), "max": max(repeats), "repeats": len(repeats),
                     "samples": len(group), "noisy": len(group) - len(quiet),
                     "killed": killed.get((sweep, w, k, t, b), 0),
                     "contended": sum(s["other_load"] > run_bench.NOISY_OTHER_LOAD
                                      for s in group),
                     "cpu_seconds_per_step": statistics.median(
                         s["cpu_seconds_per_step"] for s in use),
                     "loadavg_max": max(s["loadavg_before"] for s in group),
                     "working_set": working_set(w, k, t, b)})
    return rows


def series_of(rows, sweep):
    out = {}
    for r in rows:
        if r["sweep"] == sweep:
            out.setdefault((r["workload"], r["threads"]), []).append(r)
    for v in out.values():
        v.sort(key=lambda r: r["members"] if sweep == "k" else r["batch"])
    return out


def bend_table(rows, meta):
    l2, l3 = cache_bytes(meta, 2), cache_bytes(meta, 3)
    table = []
    for sweep in ("k", "batch"):
        axis = "members" if sweep == "k" else "batch"
        for (w, t), rs in sorted(series_of(rows, sweep).items()):
            # per member-step for K; per member-example for the batch
            per = [(r[axis], r["seconds_per_member_step"] / (1 if sweep == "k" else r["batch"]))
                   for r in rs]
            used = [r["working_set"]["threads_used"] for r in rs]
            per_core = [(r[axis], r["working_set"]["total"] / u) for r, u in zip(rs, used)]
            total = [(r[axis], r["working_set"]["total"]) for r in rs]
            table.append(dict(bends(per), sweep=sweep, workload=w, threads=t,
                              members=rs[0]["members"] if sweep == "batch" else None,
                              l2_per_core_crossed_at=crossing(per_core, l2) if l2 else None,
                              l3_crossed_at=crossing(total, l3) if l3 else None))
    return table


def cpu_label(meta):
    cpu = meta["machine"]["cpu"]
    l2, l3 = cache_bytes(meta, 2), cache_bytes(meta, 3)
    caches = (f"; L2 {l2 / 2**20:.2f} MiB/core, L3 {l3 / 2**20:.0f} MiB" if l2 and l3 else "")
    return (f"{cpu.get('vendor')} family {cpu.get('family')} model {cpu.get('model')}, "
            f"{meta['machine'].get('cpus')} CPUs{caches}; commit {meta.get('commit', '')[:7]}")


def plot(rows, meta, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    l3 = cache_bytes(meta, 3)
    colours = {"w1": "tab:blue", "w2": "tab:orange", "w5": "tab:green"}
    for sweep, name, xlabel in (("k", "growth_k.png", "K (members)"),
                                ("batch", "growth_batch.png", "batch size")):
        series = series_of(rows, sweep)
        if not series:
            continue
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.8))
        for (w, t), rs in sorted(series.items()):
            axis = "members" if sweep == "k" else "batch"
            xs = [r[axis] for r in rs]
            label = f"{w.upper()} {t} thread{'s' if t > 1 else ''}" + (
                f", K = {rs[0]['members']}" if sweep == "batch" else "")
            style = dict(color=colours[w], linestyle="-" if t > 1 else "--", marker="o")
            left.plot(xs, [r["seconds_per_step"] for r in rs], label=label, **style)
            per = [r["seconds_per_member_step"] / (1 if sweep == "k" else r["batch"]) * 1e6
                   for r in rs]
            right.plot(xs, per, label=label, **style)
            # Crosses: every sample ran beside other load (> 5% of the machine): starved.
            for ax, ys in ((left, [r["seconds_per_step"] for r in rs]), (right, per)):
                bad = [(x, y) for x, y, r in zip(xs, ys, rs) if r["contended"] == r["samples"]]
                if bad:
                    ax.scatter(*zip(*bad), s=90, marker="x", color="red", zorder=3)
            # Hollow rings: the modelled working set of all K is larger than L3.
            over = [(x, y) for x, y, r in zip(xs, per, rs)
                    if l3 and r["working_set"]["total"] > l3]
            if over:
                right.scatter(*zip(*over), s=140, facecolors="none", edgecolors="black",
                              linewidths=1)
        for ax in (left, right):
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
            ax.set_xlabel(xlabel)
            ax.grid(True, which="both", alpha=0.3)
        left.set_ylabel("seconds per step (all K members)")
        right.set_ylabel("microseconds per member-step" if sweep == "k"
                         else "microseconds per member-example")
        fig.legend(*left.get_legend_handles_labels(), loc="lower center", ncol=5, fontsize=8,
                   title_fontsize=8, title="ring: working set of all K > L3; red x: every "
                   "sample beside other load (> 5% of the machine)")
        fig.suptitle(f"EnsembleLab, cost of growth with {xlabel.split(' ')[0]} "
                     f"(median of >= 3 repeats)\n{cpu_label(meta)}", fontsize=10)
        fig.tight_layout(rect=(0, 0.12, 1, 1))  # room for the legend below
        fig.savefig(os.path.join(out_dir, name), dpi=110)
        plt.close(fig)


def mib(b):
    return f"{b / 2**20:.3g} MiB" if b >= 2**20 else f"{b / 2**10:.3g} KiB"


def report(rows, table, meta):
    print(f"\nCPU: {cpu_label(meta)}")
    print(f"{'sweep':5} {'wl':3} {'thr':>3} {'K':>5} {'batch':>5} {'ms/step':>10} "
          f"{'us/member-step':>14} {'min..max ms':>19} {'noisy':>5} {'load':>5} "
          f"{'WS/member':>11} {'WS all K':>11}")
    for r in rows:
        print(f"{r['sweep']:5} {r['workload']:3} {r['threads']:>3} {r['members']:>5} "
              f"{r['batch']:>5} {1e3 * r['seconds_per_step']:10.3f} "
              f"{1e6 * r['seconds_per_member_step']:14.1f} "
              f"{1e3 * r['min']:9.3f}..{1e3 * r['max']:<9.3f} {r['noisy']:>3}/{r['samples']} "
              f"{r['loadavg_max']:5.2f} {mib(r['working_set']['per_member']):>11} "
              f"{mib(r['working_set']['total']):>11}")
    print("\nbends (per member-step for K, per member-example for the batch):")
    for b in table:
        print(f"  {b['sweep']:5} {b['workload']} t={b['threads']}"
              + (f" K={b['members']}" if b["members"] else "")
              + f": stops falling at {b['stops_falling']}, best at {b['best']}, rises from "
              f"{b['rises_from']}; working set over L2/core at {b['l2_per_core_crossed_at']}, "
              f"over L3 at {b['l3_crossed_at']}")
    for note in meta.get("notes", []):
        print("note: " + note)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", default="build/app/ensemble-cli")
    p.add_argument("--workloads", default="w1,w2,w5")
    p.add_argument("--quick", action="store_true", help="fewer points, 1 round, shorter runs")
    p.add_argument("--rounds", type=int, help="rounds over every point (default 3)")
    p.add_argument("--nice", type=int, default=10, help="niceness of the measured processes")
    p.add_argument("--budget", type=float, default=1500,
                   help="seconds after which no more points are started")
    p.add_argument("--point-limit", type=float, default=20,
                   help="a K sweep stops after a point whose process ran longer (seconds)")
    p.add_argument("--wait-per-point", type=float, default=60,
                   help="seconds a measurement may wait for the rest of the machine to quieten")
    p.add_argument("--wait-budget", type=float, default=600,
                   help="seconds of such waiting in the whole run")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--render", metavar="GROWTH_JSON",
                   help="only redo the summaries, bends and plots from a saved growth.json")
    args = p.parse_args()
    unknown = sorted(set(w.strip() for w in args.workloads.split(",")) - {"w1", "w2", "w5"})
    if unknown:
        p.error(f"--workloads: unknown {', '.join(unknown)}; expected a list of w1, w2, w5")
    if args.render:
        try:
            with open(args.render) as f:
                saved = json.load(f)
        except (OSError, ValueError) as e:
            p.error(f"--render {args.render}: {e}")
    else:
        saved = run(args)
    rows = summarise(saved)
    table = bend_table(rows, saved["meta"])
    saved["summary"], saved["bends"] = rows, table
    os.makedirs(args.out, exist_ok=True)
    if not args.render:
        with open(os.path.join(args.out, "growth.json"), "w") as f:
            json.dump(saved, f, indent=1)
    report(rows, table, saved["meta"])
    plot(rows, saved["meta"], args.out)
    print(f"\nwrote {args.out}/" + ("" if args.render else "growth.json, ")
          + "growth_k.png, growth_batch.png")


if __name__ == "__main__":
    main()
