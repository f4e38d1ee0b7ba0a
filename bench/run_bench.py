#!/usr/bin/env python3
"""EnsembleLab vs PyTorch, side by side on this machine (docs/performance.md).

Runs our engine (ensemble-cli bench, ensemble-bench) and the PyTorch comparators
(bench/torch_bench.py, kept alive as one server process) on the same workloads, interleaved:
every round measures every point once, ours then theirs, and the rounds repeat. Reports
medians over rounds and the spread (min..max), checks from /proc/stat how busy the rest of the
machine was during each measurement and flags noisy ones, and writes

  bench/results/results.json   every sample, the medians, the ratios against the targets
  bench/results/results.csv    one row per (workload, implementation, K, threads)
  bench/results/results.md     the tables of docs/performance.md
  bench/results/seconds_per_step.png   seconds per step against K (log-log), W1 and W2

Workloads (issue 6): W1 spirals 2-32-32-2, batch 32, Adam, bootstrap resample, K = 1, 10, 100,
1000; W2 MNIST 784-256-256-10, batch 128, K = 1, 8, 32; W3 the live view's 128 x 128 grid at
K = 100 with the uncertainty measures; W4 the float32 GEMM rate (2048 x 2048). Issue 21: W5
Flax's MNIST CNN (the mnist-cnn preset), batch 128, SGD, K = 1, 4, 16, training steps, and its
prediction rate (images per second through all K members). --workloads picks some of them.

Usage: bench/run_bench.py [--build-dir build] [--rounds 3] [--quick] [--python /usr/bin/python3]
PyTorch comes from Debian's python3-torch (a benchmark dependency only), with OpenBLAS
(libopenblas0-pthread) as its BLAS, as Debian recommends. Without it Debian's alternatives give
PyTorch the reference BLAS, 4-5 times slower: the run then stops before measuring, saying what
it found and how to fix it (--allow-reference-blas measures anyway and prints no ratio against
PyTorch). W5's PyTorch side runs in several forms (--w5-forms: channels-last, oneDNN off) beside
the default one, and the best of them is the peer. Each side's BLAS or kernels, the CPU's
vendor, family, model, vector flags and vector width are printed and kept beside the figures.
"""

import argparse
import csv
import datetime
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import peer_blas  # noqa: E402

NOISY_OTHER_LOAD = 0.05  # other processes' share of the machine above which a sample is flagged
# Pause before each measurement: the previous one's spinning worker threads (OpenMP, OpenBLAS)
# go to sleep, so they do not count as, or cause, load on the next.
SETTLE_SECONDS = 0.3

# Useful multiply-adds of one member's training step per example: forward, weight gradients,
# and input gradients of every layer but the first (nobody needs dLoss/dx).
def train_macs_per_example(widths):
    fwd = sum(widths[i] * widths[i + 1] for i in range(len(widths) - 1))
    dx = sum(widths[i] * widths[i + 1] for i in range(1, len(widths) - 1))
    return 2 * fwd + dx


W1_WIDTHS = [2, 32, 32, 2]
W2_WIDTHS = [784, 256, 256, 10]
W1_MEMBERS = [1, 10, 100, 1000]
W2_MEMBERS = [1, 8, 32]
W5_MEMBERS = [1, 4, 16]
# Flax's MNIST CNN (the mnist-cnn preset): forward multiply-adds per image per layer, and the
# input-gradient ones (every layer but the first); 28 -> 14 -> 7 after the pools.
W5_FORWARD_MACS = 28 * 28 * 32 * 9 + 14 * 14 * 64 * 32 * 9 + 3136 * 256 + 256 * 10
W5_INPUT_GRAD_MACS = 14 * 14 * 64 * 32 * 9 + 3136 * 256 + 256 * 10
W5_TRAIN_MACS = 2 * W5_FORWARD_MACS + W5_INPUT_GRAD_MACS


def workload_config(workload, members, threads, batch=None):
    """ensemble-cli bench's --config and --set arguments for one of our training workloads
    (w1, w2, w5); bench/growth.py uses them too. batch: another batch size than the workload's."""
    if workload == "w1":  # the spirals preset: batch 32, Adam
        argv = ["--config", "spirals", "--set", "ensemble.bootstrap=resample"]
    elif workload == "w2":  # the preset's batch is 32; W2's is 128
        argv = ["--config", "mnist-mlp", "--set", f"training.batch_size={batch or 128}"]
        batch = None
    elif workload == "w5":  # the mnist-cnn preset: batch 128, SGD with momentum
        argv = ["--config", "mnist-cnn"]
    else:
        raise ValueError(f"no training workload {workload!r}")
    if batch:
        argv += ["--set", f"training.batch_size={batch}"]
    return argv + ["--set", f"ensemble.members={members}", "--set", f"backend.threads={threads}"]


def step_guess(workload, members, threads):
    """A rough seconds-per-step of our side on a recent x86 core, to size the step counts."""
    if workload == "w1":
        return 2.5e-6 * members / threads + 2e-6
    if workload == "w2":
        return 1.2e-3 * members / threads + 0.6e-3 * (members == 1)
    return 0.035 * members / threads


class ChildCpu:
    """CPU seconds (user + system) of our finished child processes, one measurement at a time:
    getrusage(RUSAGE_CHILDREN) only accumulates, so take() returns what the children that
    ended since the last take() used."""

    def __init__(self):
        self.total = self._now()

    @staticmethod
    def _now():
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def take(self):
        now = self._now()
        spent, self.total = now - self.total, now
        return spent


class CpuSampler:
    """Busy share of the whole machine from /proc/stat, minus the measured process's own CPU
    time: what the rest of the machine did while we measured."""

    def __init__(self):
        self.cpus = os.cpu_count() or 1
        self.hz = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def stat():
        with open("/proc/stat") as f:
            fields = [int(v) for v in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return sum(fields[:8]), idle

    def other_load(self, before, after, wall, own_cpu_seconds):
        total = (after[0] - before[0]) / self.hz
        idle = (after[1] - before[1]) / self.hz
        busy = max(0.0, total - idle)
        other = max(0.0, busy - own_cpu_seconds)
        return other / max(wall * self.cpus, 1e-9)


def proc_cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    hz = os.sysconf("SC_CLK_TCK")
    return (int(parts[11]) + int(parts[12])) / hz  # utime + stime (all threads)


class Runner:
    def __init__(self, args):
        self.args = args
        self.sampler = CpuSampler()
        build = os.path.join(ROOT, args.build_dir)
        self.cli = os.path.join(build, "app", "ensemble-cli")
        self.bench = os.path.join(build, "bench", "ensemble-bench")
        for path in (self.cli, self.bench):
            if not os.path.exists(path):
                sys.exit(f"run_bench: {path} not found; build first (cmake --build {args.build_dir})")
        # What is missing is skipped with a one-line notice, not a traceback: PyTorch (the
        # comparators) and the MNIST files (W2, ours and theirs).
        self.torch = None
        self.torch_info = {"torch": "not installed", "mnist": False}
        probe = subprocess.run([args.python, "-c", "import torch"], capture_output=True, text=True)
        if probe.returncode != 0:
            print(f"run_bench: PyTorch is not importable by {args.python}: skipping the PyTorch "
                  "comparators", flush=True)
        else:
            self.torch = subprocess.Popen(
                [args.python, os.path.join(HERE, "torch_bench.py"), "--serve"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
            info = subprocess.run([args.python, os.path.join(HERE, "torch_bench.py"), "--info"],
                                  capture_output=True, text=True, check=True)
            self.torch_info = json.loads(info.stdout)
            blas = self.torch_info.get("blas_loaded", {})
            print(f"run_bench: PyTorch {self.torch_info.get('torch')} BLAS: "
                  f"{blas.get('kind', 'unknown')} ({', '.join(blas.get('libraries', [])) or '-'})",
                  flush=True)
            reason = self.torch_info.get("blas_refusal")
            if reason and not args.allow_reference_blas:
                self.close()
                sys.exit(f"run_bench: {reason}\n(--allow-reference-blas measures anyway, "
                         "without ratios against PyTorch)")
            if reason:
                print(f"run_bench: {reason}", flush=True)
        self.ours_info = self.our_kernels()
        print(f"run_bench: ours: {self.ours_info.get('kernels', '?')}", flush=True)
        print(f"run_bench: CPU {peer_blas.describe_cpu(peer_blas.cpu_identity())}", flush=True)
        self.mnist = self.have_mnist()
        if not self.mnist:
            print("run_bench: MNIST is not installed: skipping W2 (scripts/fetch-mnist.sh "
                  "fetches it)", flush=True)
        self.samples = []
        self._child_cpu = ChildCpu()

    def our_kernels(self):
        """What our side computes with: ensemble-cli bench's "cpu:" and "kernels:" lines."""
        probe = subprocess.run(
            [self.cli, "bench", "--config", "spirals", "--set", "ensemble.members=1",
             "--steps", "1", "--warmup", "1", "--repeat", "1"],
            capture_output=True, text=True)
        found = {}
        for line in probe.stdout.splitlines():
            key, _, value = line.partition(": ")
            if key in ("cpu", "kernels"):
                found[key] = value.strip()
        return found

    def have_mnist(self):
        """Whether our CLI finds the MNIST files (one step of the W2 config)."""
        probe = subprocess.run(
            [self.cli, "bench", "--config", "mnist-mlp", "--set", "ensemble.members=1",
             "--steps", "1", "--warmup", "1", "--repeat", "1"],
            capture_output=True, text=True)
        return probe.returncode == 0

    # -- one measurement each ------------------------------------------------------------------

    def run_ours(self, argv):
        """Runs one of our binaries; returns (RESULT fields, wall, other_load)."""
        time.sleep(SETTLE_SECONDS)
        before = self.sampler.stat()
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate()
        wall = time.perf_counter() - t0
        after = self.sampler.stat()
        own = self._child_cpu.take()
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: {err.strip()}")
        result = {}
        for line in out.splitlines():
            if line.startswith("RESULT"):
                for kv in line.split()[1:]:
                    k, v = kv.split("=")
                    result[k] = float(v)
        return result, wall, self.sampler.other_load(before, after, wall, own)

    def run_torch(self, request):
        time.sleep(SETTLE_SECONDS)
        before = self.sampler.stat()
        cpu0 = proc_cpu_seconds(self.torch.pid)
        t0 = time.perf_counter()
        self.torch.stdin.write(json.dumps(request) + "\n")
        self.torch.stdin.flush()
        reply = json.loads(self.torch.stdout.readline())
        wall = time.perf_counter() - t0
        own = proc_cpu_seconds(self.torch.pid) - cpu0
        after = self.sampler.stat()
        if "error" in reply:
            raise RuntimeError(f"torch_bench: {reply['error']} for {request}")
        return reply, wall, self.sampler.other_load(before, after, wall, own)

    def record(self, **sample):
        sample["noisy"] = sample["other_load"] > NOISY_OTHER_LOAD
        self.samples.append(sample)
        flag = "  NOISY" if sample["noisy"] else ""
        value = sample.get("seconds_per_step")
        print(f"  {sample['workload']:3} {sample['impl']:5} K={sample.get('members', '-'):<5} "
              f"t={sample.get('threads', '-')} "
              + (f"{1e3 * value:9.3f} ms/step" if value else f"{sample.get('value', 0):9.2f}")
              + f"  other load {100 * sample['other_load']:4.1f}%{flag}", flush=True)

    # -- workloads -----------------------------------------------------------------------------

    def ours_train(self, workload, k, threads, seconds):
        steps = max(3, int(seconds / 3 / step_guess(workload, k, threads)))
        argv = [self.cli, "bench", *workload_config(workload, k, threads), "--steps", str(steps),
                "--warmup", str(max(2, steps // 10)), "--repeat", "3"]
        result, wall, other = self.run_ours(argv)
        sps = result["steps_per_sec"]
        self.record(workload=workload, impl="ours", members=k, threads=threads,
                    seconds_per_step=1.0 / sps, member_steps_per_sec=sps * k, wall=wall,
                    other_load=other)

    def torch_train(self, workload, impl, k, threads, seconds):
        reply, wall, other = self.run_torch(
            {"workload": workload, "impl": impl, "members": k, "threads": threads,
             "seconds": seconds})
        self.record(workload=workload, impl=impl, members=k, threads=threads,
                    seconds_per_step=reply["seconds_per_step"],
                    member_steps_per_sec=reply["member_steps_per_sec"], wall=wall,
                    other_load=other)

    def ours_cnn(self, k, threads, seconds, predict=False):
        steps = max(3, int(seconds / 3 / step_guess("w5", k, threads)))
        argv = [self.cli, "bench", *workload_config("w5", k, threads)]
        if predict:
            argv += ["--steps", "1", "--warmup", "0", "--repeat", "1", "--predict", "2048"]
        else:
            argv += ["--steps", str(steps), "--warmup", "2", "--repeat", "3"]
        result, wall, other = self.run_ours(argv)
        if predict:
            ips = result["predict_images_per_sec"]
            self.record(workload="w5p", impl="ours", members=k, threads=threads,
                        seconds_per_step=1.0 / ips, images_per_sec=ips, wall=wall,
                        other_load=other)
            return
        sps = result["steps_per_sec"]
        self.record(workload="w5", impl="ours", members=k, threads=threads,
                    seconds_per_step=1.0 / sps, member_steps_per_sec=sps * k, wall=wall,
                    other_load=other)

    def torch_cnn(self, impl, k, threads, seconds, predict=False, form=""):
        """form: "" (PyTorch's default: contiguous tensors, oneDNN on), "cl" (channels-last)
        or "blas" (oneDNN off: im2col + BLAS); recorded as impl-form."""
        reply, wall, other = self.run_torch(
            {"workload": "w5p" if predict else "w5", "impl": impl, "members": k,
             "threads": threads, "seconds": seconds, "rows": 2048,
             "channels_last": form == "cl", "mkldnn": form != "blas"})
        impl = impl + ("-" + form if form else "")
        if predict:
            self.record(workload="w5p", impl="group", members=k, threads=threads,
                        seconds_per_step=1.0 / reply["images_per_sec"],
                        images_per_sec=reply["images_per_sec"], wall=wall, other_load=other)
        # (w5p keeps the impl "group" of its default form; other forms are not run for it)
            return
        self.record(workload="w5", impl=impl, members=k, threads=threads,
                    seconds_per_step=reply["seconds_per_step"],
                    member_steps_per_sec=reply["member_steps_per_sec"], wall=wall,
                    other_load=other)

    def ours_grid(self, seconds):
        result, wall, other = self.run_ours(
            [self.bench, "grid", "--config", "spirals", "--set", "ensemble.members=100",
             "--set", f"backend.threads={self.args.threads}", "--size", "128",
             "--seconds", str(seconds)])
        self.record(workload="w3", impl="ours", members=100, threads=self.args.threads,
                    seconds_per_step=result["refresh_ms"] / 1e3,
                    refreshes_per_sec=result["refreshes_per_sec"],
                    predict_ms=result["predict_ms"], wall=wall, other_load=other)

    def torch_grid(self, threads, seconds):
        reply, wall, other = self.run_torch(
            {"workload": "w3", "members": 100, "threads": threads, "seconds": seconds,
             "size": 128})
        self.record(workload="w3", impl="bmm", members=100, threads=threads,
                    seconds_per_step=reply["seconds_per_step"],
                    refreshes_per_sec=reply["refreshes_per_sec"], wall=wall, other_load=other)

    def ours_gemm(self, seconds):
        result, wall, other = self.run_ours(
            [self.bench, "gemm", "--n", "2048", "--threads", str(self.args.threads),
             "--seconds", str(seconds)])
        self.record(workload="w4", impl="eigen", threads=self.args.threads,
                    seconds_per_step=result["seconds"], gflops=result["gflops"], wall=wall,
                    other_load=other)

    def torch_gemm(self, threads, seconds):
        reply, wall, other = self.run_torch(
            {"workload": "w4", "threads": threads, "seconds": seconds, "n": 2048})
        self.record(workload="w4", impl="torch", threads=threads,
                    seconds_per_step=reply["seconds_per_step"], gflops=reply["gflops"],
                    wall=wall, other_load=other)

    def memory(self, cnn=False):
        """Peak resident memory of W1 at K = 1000 (a fresh process, 200 steps), or of W5 at
        K = 16 (20 steps)."""
        if cnn:
            argv = [self.cli, "bench", *workload_config("w5", 16, self.args.threads),
                    "--steps", "20", "--warmup", "1", "--repeat", "1"]
        else:
            argv = [self.cli, "bench", *workload_config("w1", 1000, self.args.threads),
                    "--steps", "200", "--warmup", "5", "--repeat", "1"]
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = status
        return usage.ru_maxrss / 1024.0  # MiB

    # -- the whole run -------------------------------------------------------------------------

    def round(self, r):
        a = self.args
        print(f"round {r + 1}/{a.rounds}", flush=True)
        s1, s2 = (0.4, 1.0) if a.quick else (0.8, 2.0)
        torch_threads = a.torch_threads if self.torch else []
        w = a.workloads
        for k in a.w5_members if self.mnist and "w5" in w else []:
            for t in a.our_threads:
                self.retry(lambda: self.ours_cnn(k, t, s2))
            for impl in ("loop", "vmap", "group"):
                for t in torch_threads:
                    self.retry(lambda: self.torch_cnn(impl, k, t, s2))
            # The peer's other forms (issue 53): channels-last (loop and groups=K) and the
            # convolutions without oneDNN (groups=K); the best form is the peer.
            for form, impls in (("cl", ("loop", "group")), ("blas", ("group",))):
                for impl in impls if form in a.w5_forms else ():
                    for t in torch_threads:
                        self.retry(lambda: self.torch_cnn(impl, k, t, s2, form=form))
            self.retry(lambda: self.ours_cnn(k, max(a.our_threads), s1, predict=True))
            for t in torch_threads:
                self.retry(lambda: self.torch_cnn("group", k, t, s1, predict=True))
        for k in a.w1_members if "w1" in w else []:
            for t in a.our_threads:
                self.retry(lambda: self.ours_train("w1", k, t, s1))
            for impl in ("loop", "bmm", "vmap"):
                for t in torch_threads:
                    self.retry(lambda: self.torch_train("w1", impl, k, t, s1))
        for k in a.w2_members if self.mnist and "w2" in w else []:
            for t in a.our_threads:
                self.retry(lambda: self.ours_train("w2", k, t, s2))
            for impl in ("loop", "bmm", "vmap"):
                for t in torch_threads if self.torch_info.get("mnist") else []:
                    self.retry(lambda: self.torch_train("w2", impl, k, t, s2))
        if "w3" in w:
            self.retry(lambda: self.ours_grid(s2))
            for t in torch_threads:
                self.retry(lambda: self.torch_grid(t, s1))
        if "w4" in w:
            self.retry(lambda: self.ours_gemm(s1))
            for t in torch_threads:
                self.retry(lambda: self.torch_gemm(t, s1))

    def retry(self, measure):
        """Measures; while the sample was noisy, waits and measures again (up to --retries
        more times). Every sample is kept; the summary prefers the quiet ones."""
        measure()
        for _ in range(self.args.retries):
            if not self.samples[-1]["noisy"]:
                break
            time.sleep(2.0)
            measure()

    def close(self):
        if self.torch:
            self.torch.stdin.close()
            self.torch.wait()


def machine():
    info = {"python": platform.python_version(), "kernel": platform.release(),
            "date": datetime.date.today().isoformat(), "cpus": os.cpu_count()}
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in lscpu.splitlines():
            key, _, value = line.partition(":")
            # The CPU by vendor, family and model: the model name alone ("AMD EPYC") names
            # machines whose vector units differ.
            if key.strip() in ("Vendor ID", "CPU family", "Model", "Model name", "Flags",
                               "Core(s) per socket",
                               "Socket(s)", "Thread(s) per core", "L2 cache", "L3 cache",
                               "Hypervisor vendor"):
                info[key.strip()] = value.strip()
        info["avx512"] = "avx512f" in lscpu
    except OSError:
        pass
    info.pop("Flags", None)  # the vector ones are in "cpu"
    info["cpu"] = peer_blas.cpu_identity()
    try:
        with open("/proc/meminfo") as f:
            info["memory"] = f.readline().split(":")[1].strip()
    except OSError:
        pass
    return info


def summarise(samples):
    """Median and spread per (workload, impl, members, threads); noisy samples are kept but
    counted, and left out of the median when enough quiet ones remain."""
    groups = {}
    for s in samples:
        key = (s["workload"], s["impl"], s.get("members"), s.get("threads"))
        groups.setdefault(key, []).append(s)
    rows = []
    order = {"ours": 0, "eigen": 0, "loop": 1, "bmm": 2, "vmap": 3, "group": 4, "torch": 5}
    for (workload, impl, k, threads), group in sorted(
            groups.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9), kv[0][2] or 0,
                                            kv[0][3] or 0)):
        quiet = [s for s in group if not s["noisy"]]
        use = quiet if len(quiet) >= max(1, len(group) // 2) else group
        sps = [s["seconds_per_step"] for s in use]
        row = {"workload": workload, "impl": impl, "members": k, "threads": threads,
               "samples": len(group), "noisy": len(group) - len(quiet),
               "seconds_per_step": statistics.median(sps),
               "min": min(s["seconds_per_step"] for s in group),
               "max": max(s["seconds_per_step"] for s in group),
               "other_load_max": max(s["other_load"] for s in group)}
        if k:
            row["member_steps_per_sec"] = k / row["seconds_per_step"]
        for extra in ("gflops", "refreshes_per_sec", "predict_ms", "images_per_sec"):
            if extra in use[0]:
                row[extra] = statistics.median(s[extra] for s in use)
        rows.append(row)
    return rows


def best(rows, workload, members=None, impls=None, exclude=("ours",)):
    cands = [r for r in rows if r["workload"] == workload and r["impl"] not in exclude
             and (members is None or r["members"] == members)
             and (impls is None or r["impl"] in impls)]
    return min(cands, key=lambda r: r["seconds_per_step"]) if cands else None


def ours(rows, workload, members=None):
    """Our fastest thread count for the point (as best() takes PyTorch's fastest)."""
    cands = [r for r in rows if r["workload"] == workload and r["impl"] in ("ours", "eigen")
             and (members is None or r["members"] == members)]
    return min(cands, key=lambda r: r["seconds_per_step"]) if cands else None


def targets(rows, peak_rss_mib, cnn_rss_mib=None, peer_ok=True):
    """peer_ok False (PyTorch on the reference BLAS): no target against PyTorch."""
    t = []
    if not peer_ok:
        rows = [r for r in rows if r["impl"] in ("ours", "eigen")]

    def add(name, value, goal, detail):
        t.append({"target": name, "value": value, "goal": goal, "met": value >= goal,
                  "detail": detail})

    o100, b100, l100 = ours(rows, "w1", 100), best(rows, "w1", 100), best(rows, "w1", 100, ["loop"])
    if o100 and b100:
        add("W1 K=100 vs best PyTorch", o100["member_steps_per_sec"] / b100["member_steps_per_sec"],
            8.0, f"ours ({o100['threads']}t) {o100['member_steps_per_sec']:.0f} vs {b100['impl']} ({b100['threads']}t) "
                 f"{b100['member_steps_per_sec']:.0f} member-steps/s")
    if o100 and l100:
        add("W1 K=100 vs PyTorch loop", o100["member_steps_per_sec"] / l100["member_steps_per_sec"],
            100.0, f"ours {o100['member_steps_per_sec']:.0f} vs loop ({l100['threads']}t) "
                   f"{l100['member_steps_per_sec']:.0f} member-steps/s")
    o1000, b1000 = ours(rows, "w1", 1000), best(rows, "w1", 1000)
    if o1000 and b1000:
        add("W1 K=1000 vs best PyTorch",
            o1000["member_steps_per_sec"] / b1000["member_steps_per_sec"], 5.0,
            f"ours {o1000['member_steps_per_sec']:.0f} vs {b1000['impl']} ({b1000['threads']}t) "
            f"{b1000['member_steps_per_sec']:.0f} member-steps/s")
    o1 = ours(rows, "w1", 1)
    if o1 and o100:
        add("W1 batching efficiency K=100 / K=1",
            o100["member_steps_per_sec"] / o1["member_steps_per_sec"], 20.0,
            f"ours K=100 {o100['member_steps_per_sec']:.0f} vs K=1 "
            f"{o1['member_steps_per_sec']:.0f} member-steps/s")
    o8, b8 = ours(rows, "w2", 8), best(rows, "w2", 8)
    gemm = max((r for r in rows if r["workload"] == "w4"), key=lambda r: r["gflops"], default=None)
    if o8 and b8:
        add("W2 K=8 vs best PyTorch", o8["member_steps_per_sec"] / b8["member_steps_per_sec"], 1.3,
            f"ours {o8['member_steps_per_sec']:.1f} vs {b8['impl']} ({b8['threads']}t) "
            f"{b8['member_steps_per_sec']:.1f} member-steps/s")
    if o8 and gemm:
        useful = o8["member_steps_per_sec"] * 128 * 2 * train_macs_per_example(W2_WIDTHS) / 1e9
        add("W2 K=8 useful FLOP/s / W4 GEMM rate", useful / gemm["gflops"], 0.5,
            f"{useful:.1f} GFLOP/s useful vs {gemm['gflops']:.1f} GFLOP/s ({gemm['impl']}, "
            f"{gemm['threads']} threads)")
    for k in (4, 16):
        o5, b5 = ours(rows, "w5", k), best(rows, "w5", k)
        if o5 and b5:
            add(f"W5 CNN K={k} vs best PyTorch",
                o5["member_steps_per_sec"] / b5["member_steps_per_sec"], 5.0,
                f"ours ({o5['threads']}t) {o5['member_steps_per_sec']:.1f} vs {b5['impl']} "
                f"({b5['threads']}t) {b5['member_steps_per_sec']:.1f} member-steps/s")
        if o5 and gemm:
            useful = o5["member_steps_per_sec"] * 128 * 2 * W5_TRAIN_MACS / 1e9
            add(f"W5 CNN K={k} useful FLOP/s / W4 GEMM rate", useful / gemm["gflops"], 0.4,
                f"{useful:.1f} GFLOP/s useful vs {gemm['gflops']:.1f} GFLOP/s ({gemm['impl']}, "
                f"{gemm['threads']} threads)")
    o3 = ours(rows, "w3")
    if o3:
        add("W3 grid refreshes/s", o3["refreshes_per_sec"], 10.0,
            f"{o3['seconds_per_step'] * 1e3:.1f} ms per refresh, of which member predictions "
            f"{o3['predict_ms']:.1f} ms")
    if peak_rss_mib is not None:
        t.append({"target": "W1 K=1000 peak RSS (MiB)", "value": peak_rss_mib, "goal": 100.0,
                  "met": peak_rss_mib < 100.0, "detail": "ensemble-cli bench, fresh process"})
    if cnn_rss_mib is not None:
        t.append({"target": "W5 CNN K=16 peak RSS (MiB)", "value": cnn_rss_mib, "goal": 2048.0,
                  "met": cnn_rss_mib < 2048.0,
                  "detail": "ensemble-cli bench, fresh process, MNIST loaded"})
    return t


def write_outputs(out_dir, rows, samples, tgts, meta):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump({"meta": meta, "summary": rows, "targets": tgts, "samples": samples}, f,
                  indent=1)
    fields = ["workload", "impl", "members", "threads", "seconds_per_step", "min", "max",
              "member_steps_per_sec", "gflops", "refreshes_per_sec", "samples", "noisy",
              "other_load_max"]
    with open(os.path.join(out_dir, "results.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow(r)
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write(markdown(rows, tgts, meta))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"ours": ("C3", "o", "EnsembleLab (CPU)"), "loop": ("C0", "s", "PyTorch loop"),
              "bmm": ("C1", "^", "PyTorch bmm"), "vmap": ("C2", "v", "functorch vmap")}
    titles = {"w1": "W1 two spirals, MLP 2-32-32-2, batch 32, Adam",
              "w2": "W2 MNIST, MLP 784-256-256-10, batch 128, Adam"}
    for ax, workload in zip(axes, ("w1", "w2")):
        for impl, (color, marker, label) in styles.items():
            pts = {}
            for r in rows:
                if r["workload"] == workload and r["impl"] == impl:
                    k = r["members"]
                    if k not in pts or r["seconds_per_step"] < pts[k]["seconds_per_step"]:
                        pts[k] = r  # the faster thread count
            if not pts:
                continue
            ks = sorted(pts)
            ax.plot(ks, [pts[k]["seconds_per_step"] for k in ks], color=color, marker=marker,
                    label=label)
            ax.fill_between(ks, [pts[k]["min"] for k in ks], [pts[k]["max"] for k in ks],
                            color=color, alpha=0.15, linewidth=0)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("ensemble members K")
        ax.set_ylabel("seconds per training step (all members)")
        ax.set_title(titles[workload], fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{meta['machine'].get('Model name', 'CPU')}, {meta['machine'].get('cpus')} cores, "
                 f"{meta['machine']['date']} (medians; bands: min..max)", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "seconds_per_step.png"), dpi=110)


# W5's PyTorch forms as the table names them (torch_cnn's impl-form).
W5_FORMS = {"loop": "loop", "vmap": "vmap", "group": "groups=K",
            "loop-cl": "loop, channels-last", "group-cl": "groups=K, channels-last",
            "group-blas": "groups=K, oneDNN off"}


def peer_refusal(meta):
    """Why no ratio against PyTorch may be shown for this run (None when one may)."""
    return meta.get("torch", {}).get("blas_refusal")


def markdown(rows, tgts, meta):
    """The tables of docs/performance.md: one row per workload point, the fastest thread count
    of each implementation, ours first; then the targets."""
    m = meta["machine"]
    refused = peer_refusal(meta)
    blas = meta["torch"].get("blas_loaded", {})
    out = [f"Measured {m['date']} on {m.get('Model name', 'CPU')} ({m.get('cpus')} cores, "
           f"{m.get('Hypervisor vendor', 'bare metal')} VM, L2 {m.get('L2 cache', '?')}, "
           f"L3 {m.get('L3 cache', '?')}), PyTorch {meta['torch']['torch']} "
           f"(OpenBLAS {'yes' if meta['torch'].get('openblas') else 'no'}, functorch "
           f"{'yes' if meta['torch'].get('functorch') else 'no'}); {meta['rounds']} interleaved "
           f"rounds, medians (min..max), each implementation at its fastest thread count "
           f"(threads in brackets).", ""]
    if "cpu" in m:
        out += [f"CPU: {peer_blas.describe_cpu(m['cpu'])}. Ours: "
                f"{meta.get('ours', {}).get('kernels', 'kernels not reported')}. PyTorch's "
                f"BLAS: {blas.get('kind', 'not reported')} "
                f"({', '.join(blas.get('libraries', [])) or '-'}).", ""]
    if refused:
        out += [f"**No ratio against PyTorch:** {refused}", ""]
    names = {"ours": "EnsembleLab", "loop": "PyTorch loop", "bmm": "PyTorch bmm",
             "vmap": "functorch vmap"}
    for workload, title, ks in (("w1", "W1 spirals 2-32-32-2, batch 32, Adam, resample", W1_MEMBERS),
                                ("w2", "W2 MNIST 784-256-256-10, batch 128, Adam", W2_MEMBERS)):
        out += [f"**{title}** - milliseconds per step (all K members), member-steps/s", "",
                "| K | " + " | ".join(names.values()) + " | ours / best PyTorch |",
                "|---:|" + "---:|" * (len(names) + 1)]
        for k in ks:
            cells, fastest = [], {}
            for impl in names:
                cands = [r for r in rows if r["workload"] == workload and r["impl"] == impl
                         and r["members"] == k]
                if not cands:
                    cells.append("-")
                    continue
                r = min(cands, key=lambda r: r["seconds_per_step"])
                fastest[impl] = r
                cells.append(f"{1e3 * r['seconds_per_step']:.3g} ({r['threads']}) "
                             f"[{1e3 * r['min']:.3g}..{1e3 * r['max']:.3g}]; "
                             f"{r['member_steps_per_sec']:,.0f}/s")
            theirs = [r for i, r in fastest.items() if i != "ours"]
            ratio = (min(r["seconds_per_step"] for r in theirs) / fastest["ours"]["seconds_per_step"]
                     if theirs and "ours" in fastest else float("nan"))
            out.append(f"| {k} | " + " | ".join(cells) + " | "
                       + ("refused" if refused else f"{ratio:.1f}x") + " |")
        out.append("")
    w5names = {"ours": "EnsembleLab", "loop": "PyTorch loop", "vmap": "functorch vmap",
               "group": "PyTorch groups=K"}
    if any(r["workload"] == "w5" for r in rows):
        out += ["**W5 Flax's MNIST CNN** (conv 32, avg-pool, conv 64, avg-pool, dense 256; "
                "batch 128, SGD) - milliseconds per step (all K members), member-steps/s", "",
                "| K | " + " | ".join(w5names.values())
                + " | best PyTorch form | ours / best PyTorch |",
                "|---:|" + "---:|" * (len(w5names) + 2)]
        for k in W5_MEMBERS:
            cells, fastest = [], {}
            for impl in w5names:
                cands = [r for r in rows if r["workload"] == "w5" and r["impl"] == impl
                         and r["members"] == k]
                if not cands:
                    cells.append("-")
                    continue
                r = min(cands, key=lambda r: r["seconds_per_step"])
                fastest[impl] = r
                cells.append(f"{1e3 * r['seconds_per_step']:.4g} ({r['threads']}); "
                             f"{r['member_steps_per_sec']:.2f}/s")
            # The peer: the best of every form measured (channels-last, oneDNN off included).
            peer = best(rows, "w5", k)
            form = (f"{W5_FORMS.get(peer['impl'], peer['impl'])} ({peer['threads']}); "
                    f"{peer['member_steps_per_sec']:.2f}/s" if peer else "-")
            ratio = (peer["seconds_per_step"] / fastest["ours"]["seconds_per_step"]
                     if peer and "ours" in fastest else float("nan"))
            out.append(f"| {k} | " + " | ".join(cells) + f" | {form} | "
                       + ("refused" if refused else f"{ratio:.1f}x") + " |")
        out += ["", "| W5 prediction, images/s through all K members | "
                + " | ".join(f"K = {k}" for k in W5_MEMBERS) + " |",
                "|---|" + "---:|" * len(W5_MEMBERS)]
        for impl, name in (("ours", "EnsembleLab"), ("group", "PyTorch groups=K")):
            cells = []
            for k in W5_MEMBERS:
                cands = [r for r in rows if r["workload"] == "w5p" and r["impl"] == impl
                         and r["members"] == k]
                cells.append(f"{max(r['images_per_sec'] for r in cands):,.0f}" if cands else "-")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out.append("")
    w3 = [r for r in rows if r["workload"] == "w3"]
    w4 = [r for r in rows if r["workload"] == "w4"]
    out += ["**W3 live-view grid** (K = 100, 128 x 128, with the uncertainty measures) and "
            "**W4 float32 GEMM** (2048 x 2048)", "", "| measurement | result |", "|---|---:|"]
    for r in w3:
        who = "EnsembleLab evaluateGrid" if r["impl"] == "ours" else f"PyTorch bmm, {r['threads']} thread(s)"
        extra = f", member predictions {r['predict_ms']:.1f} ms" if "predict_ms" in r else ""
        out.append(f"| W3 {who} | {r['refreshes_per_sec']:.1f} refreshes/s "
                   f"({1e3 * r['seconds_per_step']:.1f} ms{extra}) |")
    for r in w4:
        who = "Eigen (ours)" if r["impl"] == "eigen" else "torch.mm / OpenBLAS"
        out.append(f"| W4 {who}, {r['threads']} thread(s) | {r['gflops']:.0f} GFLOP/s |")
    out += ["", "**Targets** (issue 6)", "", "| target | measured | goal | |", "|---|---:|---:|---|"]
    for t in tgts:
        goal = f"< {t['goal']:g}" if "RSS" in t["target"] else f">= {t['goal']:g}"
        out.append(f"| {t['target']} | {t['value']:.2f} | {goal} | "
                   f"{'met' if t['met'] else '**not met**'}: {t['detail']} |")
    return "\n".join(out) + "\n"


# The GPU table (issue 39): scripts/gpu_check.sh writes one line per measurement to bench.txt,
#   WORKLOAD K IMPL MEMBER_STEPS_PER_SEC [AUTO_PICK]
# IMPL: ours-fp32, ours-tf32 (backend.kind=cuda with backend.math fp32 / tf32), ours-cpu,
# ours-auto (backend.kind=auto; AUTO_PICK is the backend it took: cpu or cuda), and PyTorch's
# forms torch-graph-fp32-FORM, torch-graph-tf32-FORM (the whole step captured as a CUDA graph)
# and torch-eager-FORM (FORM: bmm, vmap, group, group-cl = channels-last, ...). The peer of a
# column is its best FORM.
GPU_WORKLOADS = {  # name, useful FLOPs of one member's step (2 per multiply-add)
    "W1": ("spirals 2-32-32-2, batch 32, Adam", 2 * train_macs_per_example(W1_WIDTHS) * 32),
    "W2": ("MNIST MLP 784-256-256-10, batch 128, Adam",
           2 * train_macs_per_example(W2_WIDTHS) * 128),
    "W5": ("`mnist-cnn`, batch 128, SGD", 2 * W5_TRAIN_MACS * 128),
}
# Vendor datasheet peaks (dense, no sparsity), TFLOP/s: FP32 on the CUDA cores, TF32 on the
# tensor cores; and memory bandwidth, TB/s. --gpu-peak overrides them.
GPU_PEAKS = {
    "H200": (67.0, 494.7, 4.8),
    "H100 80GB HBM3": (67.0, 494.7, 3.35),
    "H100 PCIe": (51.2, 378.0, 2.0),
    "A100": (19.5, 156.0, 2.0),
}


def read_gpu_bench(path):
    """bench.txt -> {(workload, K): {impl: rate}} and {(workload, K): auto's pick}."""
    rates, picks = {}, {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 4 or fields[0] not in GPU_WORKLOADS:
                continue
            try:
                rate = float(fields[3])
            except ValueError:
                continue  # a failed measurement prints its error instead of a rate
            key = (fields[0], int(fields[1]))
            rates.setdefault(key, {})[fields[2]] = rate
            if fields[2] == "ours-auto" and len(fields) > 4:
                picks[key] = fields[4]
    return rates, picks


def gpu_table(path, device_name=""):
    """The markdown table of docs/gpu.md from gpu_check.sh's bench.txt: ours against PyTorch
    at its best (CUDA graph, FP32 and TF32) and eager, the ratios the issue's targets are
    stated in, how far ours is from the card's FP32 peak, and whether auto picked the faster
    backend (within 1.25x of it)."""
    rates, picks = read_gpu_bench(path)
    peak = next((v for name, v in GPU_PEAKS.items() if name in device_name), None)

    def best(row, prefix):
        values = [v for impl, v in row.items() if impl.startswith(prefix)]
        return max(values) if values else None

    def num(v):
        return "—" if v is None else f"{v:,.0f}"

    def ratio(a, b):
        return "—" if a is None or b is None or b == 0 else f"{a / b:.2f}x"

    out = ["| workload | K | ours FP32 | ours TF32 | PyTorch + CUDA graph, FP32 | same, TF32 | "
           "PyTorch eager, FP32 | ours / FP32 peer | ours TF32 / TF32 peer | ours FP32 TFLOP/s"
           + (" (% of FP32 peak)" if peak else "") + " | auto: picked, / best |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for (workload, k) in sorted(rates, key=lambda wk: (wk[0], wk[1])):
        row = rates[(workload, k)]
        name, flops = GPU_WORKLOADS[workload]
        ours32, ours_tf = row.get("ours-fp32"), row.get("ours-tf32")
        peer32, peer_tf = best(row, "torch-graph-fp32-"), best(row, "torch-graph-tf32-")
        eager = best(row, "torch-eager-")
        tflops = "—"
        if ours32:
            t = ours32 * flops / 1e12
            tflops = f"{t:.3g}" + (f" ({100 * t / peak[0]:.2g}%)" if peak else "")
        auto = "—"
        if "ours-auto" in row:
            better = max(v for v in (row.get("ours-fp32"), row.get("ours-cpu")) if v is not None)
            slower = better / row["ours-auto"]
            auto = (f"{picks.get((workload, k), '?')}, {slower:.2f}x"
                    f"{'' if slower <= 1.25 else ' **over 1.25x**'}")
        out.append(f"| {workload} {name} | {k} | {num(ours32)} | {num(ours_tf)} | {num(peer32)} | "
                   f"{num(peer_tf)} | {num(eager)} | {ratio(ours32, peer32)} | "
                   f"{ratio(ours_tf, peer_tf)} | {tflops} | {auto} |")
    note = ("member-steps per second, one run on " + (device_name or "the GPU") +
            "; the peer of a column is its best form; ratios above 1 are ours ahead")
    return "\n".join(out) + "\n\n" + note + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="backend.threads for the grid and GEMM runs and the memory run")
    p.add_argument("--our-threads", default="1,%d" % (os.cpu_count() or 1),
                   help="backend.threads values for our training runs (the best counts)")
    p.add_argument("--retries", type=int, default=1,
                   help="re-measurements of a sample flagged noisy")
    p.add_argument("--torch-threads", default="1,2",
                   help="PyTorch intra-op thread counts to try (the best counts)")
    p.add_argument("--python", default="/usr/bin/python3", help="a Python with torch")
    p.add_argument("--quick", action="store_true", help="shorter measurements")
    p.add_argument("--out", default=os.path.join(HERE, "results"))
    p.add_argument("--workloads", default="w1,w2,w3,w4,w5",
                   help="which workloads to run (W4, the GEMM rate, is the reference of the "
                        "FLOP-rate targets)")
    p.add_argument("--w5-forms", default="cl,blas",
                   help="W5's PyTorch forms beside the default one: cl (channels-last), blas "
                        "(oneDNN off); empty for none")
    p.add_argument("--allow-reference-blas", action="store_true",
                   help="measure even when PyTorch runs on the reference BLAS (no ratio "
                        "against it is printed)")
    p.add_argument("--render", metavar="RESULTS_JSON",
                   help="only rewrite the tables and the plot from an earlier results.json")
    p.add_argument("--gpu-table", metavar="BENCH_TXT",
                   help="only print the GPU table of scripts/gpu_check.sh's bench.txt")
    p.add_argument("--gpu-name", default="",
                   help="with --gpu-table: the device's name (nvidia-smi -L), for its peaks")
    args = p.parse_args()
    if args.gpu_table:
        print(gpu_table(args.gpu_table, args.gpu_name))
        return
    if args.render:
        with open(args.render) as f:
            saved = json.load(f)
        write_outputs(args.out, saved["summary"], saved["samples"], saved["targets"],
                      saved["meta"])
        print(open(os.path.join(args.out, "results.md")).read())
        return
    args.torch_threads = [int(t) for t in args.torch_threads.split(",")]
    args.our_threads = sorted({int(t) for t in args.our_threads.split(",")})
    args.w1_members, args.w2_members, args.w5_members = W1_MEMBERS, W2_MEMBERS, W5_MEMBERS
    args.workloads = set(args.workloads.split(","))
    args.w5_forms = {f for f in args.w5_forms.split(",") if f}

    runner = Runner(args)
    start = time.time()
    try:
        for r in range(args.rounds):
            runner.round(r)
        peak = runner.memory() if "w1" in args.workloads else None
        cnn_peak = runner.memory(cnn=True) if "w5" in args.workloads and runner.mnist else None
    finally:
        runner.close()
    rows = summarise(runner.samples)
    tgts = targets(rows, peak, cnn_peak, peer_ok=not runner.torch_info.get("blas_refusal"))
    meta = {"machine": machine(), "torch": runner.torch_info, "ours": runner.ours_info,
            "rounds": args.rounds,
            "threads": args.threads, "torch_threads": args.torch_threads,
            "noisy_other_load": NOISY_OTHER_LOAD, "runtime_s": time.time() - start,
            "w1_macs_per_example": train_macs_per_example(W1_WIDTHS),
            "w2_macs_per_example": train_macs_per_example(W2_WIDTHS),
            "w5_macs_per_example": W5_TRAIN_MACS}
    write_outputs(args.out, rows, runner.samples, tgts, meta)
    print(f"\n{len(runner.samples)} samples in {meta['runtime_s']:.0f} s; "
          f"{sum(s['noisy'] for s in runner.samples)} flagged noisy "
          f"(other load > {100 * NOISY_OTHER_LOAD:.0f}% of the machine)")
    print(f"{'workload':8} {'impl':6} {'K':>5} {'thr':>3} {'ms/step':>10} {'min..max':>19} "
          f"{'member-steps/s':>15}")
    for r in rows:
        print(f"{r['workload']:8} {r['impl']:6} {str(r['members'] or ''):>5} {r['threads']:>3} "
              f"{1e3 * r['seconds_per_step']:10.3f} "
              f"{1e3 * r['min']:9.3f}..{1e3 * r['max']:<9.3f}"
              f"{r.get('member_steps_per_sec', 0):15.0f}")
    print(f"\nCPU: {peer_blas.describe_cpu(meta['machine']['cpu'])}")
    print(f"ours: {runner.ours_info.get('kernels', 'kernels not reported')}")
    blas = runner.torch_info.get("blas_loaded", {})
    print(f"PyTorch: BLAS {blas.get('kind', 'not reported')} "
          f"({', '.join(blas.get('libraries', [])) or '-'})")
    if peer_refusal(meta):
        print(f"no ratio against PyTorch: {peer_refusal(meta)}")
    print("\ntargets:")
    for t in tgts:
        print(f"  {'met' if t['met'] else 'NOT MET':7} {t['target']}: {t['value']:.2f} "
              f"(goal {'<' if 'RSS' in t['target'] else '>='} {t['goal']:g}) - {t['detail']}")
    print(f"\nwrote {args.out}/results.json, results.csv, results.md, seconds_per_step.png")


if __name__ == "__main__":
    main()
