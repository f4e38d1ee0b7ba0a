#!/usr/bin/env python3
"""PyTorch comparators for the EnsembleLab benchmarks (docs/performance.md).

The same workloads as ensemble-cli bench / ensemble-bench, written the ways a PyTorch user
would write them on a CPU:

  loop  K separate nn.Module MLPs, each with its own torch.optim.Adam, stepped in a Python loop
        (what most people write);
  bmm   the K members' weights stacked as [K, out, in] tensors, batched with torch.baddbmm,
        one Adam over the stacked tensors (hand-batched: the fastest plain-PyTorch version);
  vmap  functorch.vmap over a functional model with stacked parameters (combine_state_for_
        ensemble), one Adam over the stacked parameters.

Adam over stacked tensors is elementwise, so it is exactly K independent Adams with the same
learning rate. Workloads:

  w1    two spirals (800 train rows, 2 features), MLP 2-32-32-2 ReLU, batch 32, Adam, bootstrap
        resample (each member draws its own batch rows: torch.randint per member);
  w2    MNIST (60000 x 784, from the IDX file when present), MLP 784-256-256-10, batch 128,
        shared batches (the mnist-mlp preset's bootstrap none);
  w3    the live view's grid refresh: K members' predictions on a G x G grid and the per-point
        ensemble statistics (mean probability, predicted class, total / aleatoric / epistemic
        uncertainty, disagreement), under torch.no_grad;
  w4    the float32 GEMM rate: torch.mm of two N x N matrices;
  w5    Flax's MNIST CNN (conv 32 3x3 same, ReLU, avg-pool 2, conv 64 3x3 same, ReLU, avg-pool
        2, dense 256, ReLU, dense 10), batch 128 shared by the members, SGD lr 0.1 momentum 0.9,
        three ways: loop (K nn.Module CNNs, K optimizers), vmap (functorch over stacked
        parameters), group (one network whose convolutions have groups=K and whose dense layers
        are batched with baddbmm: the members as channel groups);
  w5p   prediction with the w5 network (group form, no_grad): images per second.

On a GPU (--device cuda) each form runs eagerly (one launch per operator, plain FP32, no
cuDNN autotuning: the old column) or, with --graph, as PyTorch at its best: the whole step
captured once as a CUDA graph and replayed (Graphed: capturable Adam, cudnn.benchmark), with
--tf32 for TF32 tensor cores (PyTorch's default for convolutions) and --channels-last for the
CNN's tensors. scripts/gpu_check.sh takes the best form of each.

On the CPU the convolutions have forms too (W5, issue 53): channels-last tensors (oneDNN's
preferred layout), and the oneDNN (mkldnn) convolutions switched off ("mkldnn": false, the
im2col + BLAS path), beside today's default (contiguous, oneDNN on); run_bench.py reports the
best of them. --info says which BLAS this process actually mapped (peer_blas.py): on Debian's
reference BLAS no comparison is fair, and run_bench.py refuses to print a ratio.

Usage: torch_bench.py --workload w1 --impl bmm --members 100 [--threads 2] [--seconds 1]
       torch_bench.py --device cuda --graph [--tf32] [--channels-last] --workload w5 ...
       torch_bench.py --serve     (JSON requests on stdin, one per line; JSON replies on stdout)
A request / reply is {"workload": ..., "impl": ..., "members": ..., "threads": ...,
"graph": bool, "tf32": bool, "channels_last": bool, "cudnn_benchmark": bool,
"mkldnn": bool} ->
{"seconds_per_step": median, "samples": [...], ...}.
"""

import argparse
import gzip
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peer_blas  # noqa: E402
import torch.nn.functional as F

try:
    from functorch import combine_state_for_ensemble, vmap

    HAVE_FUNCTORCH = True
except ImportError:  # torch >= 2 moved it to torch.func
    try:
        from torch.func import stack_module_state, functional_call, vmap  # noqa: F401

        combine_state_for_ensemble = None
        HAVE_FUNCTORCH = True
    except ImportError:
        HAVE_FUNCTORCH = False

MNIST_DIRS = [
    os.environ.get("ENSEMBLE_MNIST_DIR", ""),
    os.path.expanduser("~/.local/share/ensemblelab/mnist"),
]


def spirals(n=1000, noise=0.05, seed=0):
    """Two interleaved spirals of the spirals preset's size (n 1000, noise 0.05, 80 % train):
    the same shapes as the engine's data; the values do not change the timing."""
    g = torch.Generator().manual_seed(seed)
    half = n // 2
    t = torch.sqrt(torch.rand(half, generator=g)) * 2 * math.pi
    r = t / (2 * math.pi)
    a = torch.stack([r * torch.cos(t), r * torch.sin(t)], 1)
    b = -a
    x = torch.cat([a, b]) + noise * torch.randn(2 * half, 2, generator=g)
    y = torch.cat([torch.zeros(half, dtype=torch.long), torch.ones(half, dtype=torch.long)])
    perm = torch.randperm(2 * half, generator=g)
    x, y = x[perm], y[perm]
    x = (x - x.mean(0)) / x.std(0)
    ntrain = int(0.8 * n)
    return x[:ntrain].contiguous(), y[:ntrain].contiguous()


def mnist():
    for d in MNIST_DIRS:
        if not d:
            continue
        for name in ("train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"):
            path = os.path.join(d, name)
            if os.path.exists(path):
                opener = gzip.open if path.endswith(".gz") else open
                with opener(path, "rb") as f:
                    data = f.read()
                n = int.from_bytes(data[4:8], "big")
                x = torch.frombuffer(bytearray(data[16:]), dtype=torch.uint8).reshape(n, 784)
                x = x.float() / 255.0
                x = (x - x.mean()) / x.std()
                labels = None
                lpath = path.replace("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
                if os.path.exists(lpath):
                    with opener(lpath, "rb") as f:
                        raw = f.read()
                    labels = torch.frombuffer(bytearray(raw[8:]), dtype=torch.uint8).long()
                if labels is None or labels.numel() != n:
                    labels = torch.randint(0, 10, (n,), generator=torch.Generator().manual_seed(0))
                return x.contiguous(), labels, path
    # No file: random data of the same shape (timing does not depend on the values).
    g = torch.Generator().manual_seed(0)
    return torch.randn(60000, 784, generator=g), torch.randint(0, 10, (60000,), generator=g), None


def make_mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i + 2 < len(widths):
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Loop:
    """K nn.Modules, K Adams, a Python loop."""

    def __init__(self, k, widths, lr, x, y, batch, resample):
        self.models = [make_mlp(widths) for _ in range(k)]
        self.opts = [adam(m.parameters(), lr) for m in self.models]
        self.x, self.y, self.batch, self.resample = x, y, batch, resample

    def zero_grad(self):
        for opt in self.opts:
            opt.zero_grad(set_to_none=True)

    def compute(self):
        """Forward, backward and update of every member, gradients not cleared first: the part
        a CUDA graph captures (Graphed)."""
        n = self.x.shape[0]
        shared = None if self.resample else torch.randint(0, n, (self.batch,))
        for model, opt in zip(self.models, self.opts):
            idx = torch.randint(0, n, (self.batch,)) if self.resample else shared
            loss = F.cross_entropy(model(self.x[idx]), self.y[idx])
            loss.backward()
            opt.step()

    def step(self):
        self.zero_grad()
        self.compute()


class OneOptimizer:
    """An implementation with one optimizer over all members: step() = zero_grad() + compute(),
    compute() the part a CUDA graph captures (Graphed)."""

    def zero_grad(self):
        self.opt.zero_grad(set_to_none=True)

    def step(self):
        self.zero_grad()
        self.compute()


class Bmm(OneOptimizer):
    """Stacked [K, out, in] weights, torch.baddbmm, one Adam."""

    def __init__(self, k, widths, lr, x, y, batch, resample):
        self.weights, self.biases = [], []
        for i in range(len(widths) - 1):
            bound = 1.0 / math.sqrt(widths[i])
            w = torch.empty(k, widths[i + 1], widths[i]).uniform_(-bound, bound)
            b = torch.empty(k, 1, widths[i + 1]).uniform_(-bound, bound)
            self.weights.append(w.requires_grad_())
            self.biases.append(b.requires_grad_())
        self.opt = adam(self.weights + self.biases, lr)
        self.k, self.x, self.y, self.batch, self.resample = k, x, y, batch, resample
        self.classes = widths[-1]

    def forward(self, h):
        last = len(self.weights) - 1
        for i, (w, b) in enumerate(zip(self.weights, self.biases)):
            if h.dim() == 2:  # a shared batch: broadcast it over the members
                h = torch.matmul(h, w.transpose(1, 2)) + b
            else:
                h = torch.baddbmm(b, h, w.transpose(1, 2))
            if i < last:
                h = torch.relu(h)
        return h

    def compute(self):
        n = self.x.shape[0]
        if self.resample:
            idx = torch.randint(0, n, (self.k, self.batch))
            x, y = self.x[idx], self.y[idx].reshape(-1)
        else:
            idx = torch.randint(0, n, (self.batch,))
            x, y = self.x[idx], self.y[idx].repeat(self.k)
        logits = self.forward(x)
        # Sum over members of each member's mean loss: the members' gradients are independent.
        loss = F.cross_entropy(logits.reshape(-1, self.classes), y, reduction="sum") / self.batch
        loss.backward()
        self.opt.step()


class Vmap(OneOptimizer):
    """functorch.vmap over a functional model with stacked parameters, one Adam."""

    def __init__(self, k, widths, lr, x, y, batch, resample):
        models = [make_mlp(widths) for _ in range(k)]
        if combine_state_for_ensemble is not None:
            self.fmodel, params, self.buffers = combine_state_for_ensemble(models)
            self.params = [p.detach().requires_grad_() for p in params]
            self.call = lambda params, buffers, x: self.fmodel(params, buffers, x)
        else:  # torch >= 2
            from torch.func import functional_call, stack_module_state

            params, self.buffers = stack_module_state(models)
            base = make_mlp(widths).to("meta")
            names = list(params.keys())
            self.params = [params[n].detach().requires_grad_() for n in names]
            self.call = lambda ps, buffers, x: functional_call(
                base, (dict(zip(names, ps)), buffers), (x,))
        self.opt = adam(self.params, lr)
        self.k, self.x, self.y, self.batch, self.resample = k, x, y, batch, resample
        self.classes = widths[-1]

    def compute(self):
        n = self.x.shape[0]
        if self.resample:
            idx = torch.randint(0, n, (self.k, self.batch))
            x, y = self.x[idx], self.y[idx].reshape(-1)
            logits = vmap(self.call)(self.params, self.buffers, x)
        else:
            idx = torch.randint(0, n, (self.batch,))
            x, y = self.x[idx], self.y[idx].repeat(self.k)
            logits = vmap(self.call, in_dims=(0, 0, None))(self.params, self.buffers, x)
        loss = F.cross_entropy(logits.reshape(-1, self.classes), y, reduction="sum") / self.batch
        loss.backward()
        self.opt.step()


IMPLS = {"loop": Loop, "bmm": Bmm, "vmap": Vmap}


def adam(params, lr):
    """Adam as the peer uses it: capturable (its step count on the device) when the step is
    captured as a CUDA graph, which PyTorch requires for Adam inside a graph."""
    return torch.optim.Adam(params, lr=lr, capturable=CAPTURABLE)


def to_layout(x):
    """An image batch in the run's memory format (channels-last when asked for)."""
    return x.contiguous(memory_format=MEMORY_FORMAT) if x.dim() == 4 else x


def make_cnn():
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(),
        nn.Linear(64 * 7 * 7, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn_sgd(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


class CnnLoop:
    """K nn.Module CNNs, K SGDs, a Python loop over the members (one shared batch)."""

    def __init__(self, k, x, y, batch):
        self.models = [make_cnn().to(memory_format=MEMORY_FORMAT) for _ in range(k)]
        self.opts = [cnn_sgd(m.parameters()) for m in self.models]
        self.x, self.y, self.batch = x, y, batch

    def zero_grad(self):
        for opt in self.opts:
            opt.zero_grad(set_to_none=True)

    def compute(self):
        idx = torch.randint(0, self.x.shape[0], (self.batch,))
        xb, yb = to_layout(self.x[idx]), self.y[idx]
        for model, opt in zip(self.models, self.opts):
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()

    def step(self):
        self.zero_grad()
        self.compute()


class CnnVmap(OneOptimizer):
    """functorch.vmap over the functional CNN with stacked parameters, one SGD."""

    def __init__(self, k, x, y, batch):
        models = [make_cnn() for _ in range(k)]
        if combine_state_for_ensemble is not None:
            fmodel, params, self.buffers = combine_state_for_ensemble(models)
            self.params = [p.detach().requires_grad_() for p in params]
            self.call = lambda ps, buffers, xb: fmodel(ps, buffers, xb)
        else:  # torch >= 2
            from torch.func import functional_call, stack_module_state

            params, self.buffers = stack_module_state(models)
            base = make_cnn().to("meta")
            names = list(params.keys())
            self.params = [params[n].detach().requires_grad_() for n in names]
            self.call = lambda ps, buffers, xb: functional_call(
                base, (dict(zip(names, ps)), buffers), (xb,))
        self.opt = cnn_sgd(self.params)
        self.k, self.x, self.y, self.batch = k, x, y, batch

    def compute(self):
        idx = torch.randint(0, self.x.shape[0], (self.batch,))
        xb, yb = self.x[idx], self.y[idx].repeat(self.k)
        logits = vmap(self.call, in_dims=(0, 0, None))(self.params, self.buffers, xb)
        loss = F.cross_entropy(logits.reshape(-1, 10), yb, reduction="sum") / self.batch
        loss.backward()
        self.opt.step()


class CnnGroup(OneOptimizer):
    """The K members as channel groups of one network: grouped convolutions (groups=K) over the
    batch repeated K times along the channels, then baddbmm for the dense layers."""

    def __init__(self, k, x, y, batch):
        def uniform(shape, fan_in):
            bound = 1.0 / math.sqrt(fan_in)
            return torch.empty(*shape).uniform_(-bound, bound).requires_grad_()

        def conv_weight(shape, fan_in):  # in the run's memory format (channels-last or not)
            bound = 1.0 / math.sqrt(fan_in)
            w = torch.empty(*shape).uniform_(-bound, bound)
            return w.contiguous(memory_format=MEMORY_FORMAT).requires_grad_()

        self.c1w, self.c1b = conv_weight((k * 32, 1, 3, 3), 9), uniform((k * 32,), 9)
        self.c2w, self.c2b = conv_weight((k * 64, 32, 3, 3), 288), uniform((k * 64,), 288)
        self.d1w, self.d1b = uniform((k, 3136, 256), 3136), uniform((k, 1, 256), 3136)
        self.d2w, self.d2b = uniform((k, 256, 10), 256), uniform((k, 1, 10), 256)
        self.params = [self.c1w, self.c1b, self.c2w, self.c2b, self.d1w, self.d1b, self.d2w,
                       self.d2b]
        self.opt = cnn_sgd(self.params)
        self.k, self.x, self.y, self.batch = k, x, y, batch

    def forward(self, xb):
        b, k = xb.shape[0], self.k
        h = to_layout(xb.expand(b, k, 28, 28))
        h = F.avg_pool2d(F.relu(F.conv2d(h, self.c1w, self.c1b, padding=1, groups=k)), 2)
        h = F.avg_pool2d(F.relu(F.conv2d(h, self.c2w, self.c2b, padding=1, groups=k)), 2)
        # K x B x 3136 in PyTorch's flatten order (NCHW), whatever the memory format
        h = h.contiguous().reshape(b, k, 3136).transpose(0, 1)
        h = F.relu(torch.baddbmm(self.d1b, h, self.d1w))
        return torch.baddbmm(self.d2b, h, self.d2w)  # K x B x 10

    def compute(self):
        idx = torch.randint(0, self.x.shape[0], (self.batch,))
        xb, yb = self.x[idx], self.y[idx].repeat(self.k)
        logits = self.forward(xb)
        loss = F.cross_entropy(logits.reshape(-1, 10), yb, reduction="sum") / self.batch
        loss.backward()
        self.opt.step()


CNN_IMPLS = {"loop": CnnLoop, "vmap": CnnVmap, "group": CnnGroup}
_DATA = {}


def data(workload):
    if workload not in _DATA:
        if DEVICE == "cpu":
            x, y = spirals() if workload in ("w1", "w3") else mnist()[:2]
        else:
            with torch.device("cpu"):  # the seeded CPU generators make the data
                x, y = spirals() if workload in ("w1", "w3") else mnist()[:2]
        _DATA[workload] = (x.to(DEVICE), y.to(DEVICE))
    return _DATA[workload]


DEVICE = "cpu"
# Set per request by configure(): Adam's capturable flag (graph runs) and the CNN's memory format.
CAPTURABLE = False
MEMORY_FORMAT = torch.contiguous_format


class Graphed:
    """PyTorch at its best on a GPU: the whole training step (index draws, forward, loss,
    backward, optimizer update) captured once as a CUDA graph and replayed, following the
    whole-network capture recipe of PyTorch's CUDA semantics notes ("CUDA Graphs"): warm-up
    iterations on a side stream (cuDNN's autotuning, lazy optimizer state and cuBLAS
    workspaces happen there, outside the capture), gradients set to None so that backward()
    allocates them from the graph's private pool, capture, then replay. The data are static:
    the whole train split lives on the device and the batch's indices are drawn inside the
    graph (CUDA RNG is graph-safe: each replay advances the generator's offset). Adam needs
    capturable=True; SGD's momentum buffers exist after the warm-up."""

    def __init__(self, model, warmup=3):
        self.model = model
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                model.step()
        torch.cuda.current_stream().wait_stream(side)
        model.zero_grad()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            model.compute()

    def step(self):
        self.graph.replay()


def configure(request):
    """The GPU settings of one request: graph capture (and with it capturable Adam),
    cudnn.benchmark, TF32 for matmuls and convolutions, channels-last CNN tensors. The eager
    defaults are the old column's: no graph, no autotuning, plain FP32."""
    global CAPTURABLE, MEMORY_FORMAT
    graph = bool(request.get("graph", False))
    if graph and DEVICE == "cpu":
        raise ValueError("graph capture needs --device cuda")
    CAPTURABLE = graph
    MEMORY_FORMAT = (torch.channels_last if request.get("channels_last", False)
                     else torch.contiguous_format)
    if DEVICE != "cpu":
        tf32 = bool(request.get("tf32", False))
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = bool(request.get("cudnn_benchmark", graph))
    return graph


def sync():
    """GPU work is asynchronous: a host clock read means something only after the queue drains."""
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def time_steps(step, seconds, min_steps=3, warmup=2):
    """Median seconds per step over chunks of steps, after `warmup` untimed steps."""
    for _ in range(warmup):
        step()
    sync()
    t0 = time.perf_counter()
    step()
    sync()
    one = max(time.perf_counter() - t0, 1e-7)
    per_chunk = max(1, int(0.1 / one))  # chunks of about 0.1 s
    samples, start = [], time.perf_counter()
    while len(samples) < min_steps or time.perf_counter() - start < seconds:
        t = time.perf_counter()
        for _ in range(per_chunk):
            step()
        sync()
        samples.append((time.perf_counter() - t) / per_chunk)
    samples.sort()
    return samples[len(samples) // 2], samples


def grid_refresh(k, size, x_train):
    """The live view: K members' log-probabilities on a size x size grid, then per point the
    ensemble mean, predicted class, entropies and disagreement."""
    model = Bmm(k, [2, 32, 32, 2], 0.01, x_train, None, 1, False)
    lo, hi = x_train.min(0).values, x_train.max(0).values
    xs = torch.linspace(float(lo[0]), float(hi[0]), size)
    ys = torch.linspace(float(hi[1]), float(lo[1]), size)
    grid = torch.stack(torch.meshgrid(ys, xs, indexing="ij")[::-1], -1).reshape(-1, 2)

    def refresh():
        with torch.no_grad():
            logp = torch.log_softmax(model.forward(grid), -1)  # K x P x C
            p = logp.exp()
            mean = p.mean(0)
            predicted = mean.argmax(-1)
            total = -(mean * mean.clamp_min(1e-30).log()).sum(-1)
            aleatoric = -(p * logp).sum(-1).mean(0)
            epistemic = total - aleatoric
            votes = F.one_hot(p.argmax(-1), 2).float().mean(0)
            disagreement = 1 - votes.max(-1).values
            return predicted, epistemic, disagreement

    return refresh


def _openblas():
    """OpenBLAS keeps its own thread pool beside PyTorch's OpenMP one; torch.set_num_threads
    does not size it, and two pools of 2 spinning threads on 2 cores starve each other."""
    import ctypes
    import ctypes.util

    for name in ("libopenblas.so.0", ctypes.util.find_library("openblas") or ""):
        try:
            lib = ctypes.CDLL(name)
            lib.openblas_set_num_threads.argtypes = [ctypes.c_int]
            return lib
        except (OSError, AttributeError):
            continue
    return None


OPENBLAS = _openblas()


def set_threads(threads):
    torch.set_num_threads(threads)
    if OPENBLAS is not None:
        OPENBLAS.openblas_set_num_threads(threads)


def run(request):
    workload = request["workload"]
    impl = request.get("impl", "bmm")
    k = int(request.get("members", 1))
    threads = int(request.get("threads", 2))
    seconds = float(request.get("seconds", 1.0))
    set_threads(threads)
    torch.manual_seed(0)
    graph = configure(request)
    if DEVICE == "cpu":
        # The oneDNN convolutions on (PyTorch's default) or off (im2col + BLAS): a form of W5.
        with torch.backends.mkldnn.flags(enabled=bool(request.get("mkldnn", True))):
            return measure(request, workload, impl, k, seconds, graph)
    return measure(request, workload, impl, k, seconds, graph)


def measure(request, workload, impl, k, seconds, graph):
    reply = dict(request)
    if workload in ("w1", "w2"):
        x, y = data(workload)
        if workload == "w1":
            widths, batch, resample, lr = [2, 32, 32, 2], 32, True, 0.01
        else:
            widths, batch, resample, lr = [784, 256, 256, 10], 128, False, 0.002
        model = IMPLS[impl](k, widths, lr, x, y, batch, resample)
        if graph:
            model = Graphed(model)
        median, samples = time_steps(model.step, seconds)
        reply.update(seconds_per_step=median, samples=samples,
                     member_steps_per_sec=k / median)
    elif workload == "w3":
        x, _ = data("w3")
        refresh = grid_refresh(k, int(request.get("size", 128)), x)
        median, samples = time_steps(refresh, seconds)
        reply.update(seconds_per_step=median, samples=samples, refreshes_per_sec=1 / median)
    elif workload in ("w5", "w5p"):
        x, y = data("w2")
        x = x.reshape(-1, 1, 28, 28)
        if workload == "w5":
            model = CNN_IMPLS[impl](k, x, y, 128)
            if graph:
                model = Graphed(model)
            median, samples = time_steps(model.step, seconds)
            reply.update(seconds_per_step=median, samples=samples,
                         member_steps_per_sec=k / median)
        else:
            model = CnnGroup(k, x, y, 128)
            rows = int(request.get("rows", 1024))
            xb = x[:rows]

            def predict():
                with torch.no_grad():
                    return torch.log_softmax(model.forward(xb), -1)

            median, samples = time_steps(predict, seconds)
            reply.update(seconds_per_step=median, samples=samples,
                         images_per_sec=rows / median)
    elif workload == "w4":
        n = int(request.get("n", 2048))
        a, b = torch.randn(n, n), torch.randn(n, n)
        median, samples = time_steps(lambda: torch.mm(a, b), seconds)
        reply.update(seconds_per_step=median, samples=samples, gflops=2 * n ** 3 / median / 1e9)
    else:
        raise ValueError("unknown workload " + workload)
    return reply


def loaded_blas():
    """The BLAS this process mapped (after one product, so that a lazily loaded one shows)."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))
    try:
        with open("/proc/self/maps") as f:
            maps = f.read()
        caller = next((line.split()[-1] for line in maps.splitlines()
                       if "libtorch_cpu" in line), None)
        return peer_blas.blas_from_maps(maps, peer_blas.sgemm_provider(caller))
    except OSError:
        return {"kind": "unknown", "libraries": []}


def info():
    blas = loaded_blas()
    alternative = peer_blas.alternative_value()
    return {
        "torch": torch.__version__,
        "functorch": HAVE_FUNCTORCH,
        "blas": next((line.split("BLAS_INFO=")[1].split(",")[0]
                      for line in torch.__config__.show().splitlines() if "BLAS_INFO=" in line),
                     "unknown"),
        "cpu_capability": next((line.split(":")[1].strip()
                                for line in torch.__config__.show().splitlines()
                                if "CPU capability usage" in line), "unknown"),
        "mnist": mnist()[2] is not None,
        "openblas": OPENBLAS is not None,
        # What was actually loaded (issue 53): its kind (openblas, blis, mkl, reference),
        # the libraries' real paths, Debian's alternative for libblas.so.3, and why no ratio
        # may be printed against it (null when one may).
        "blas_loaded": blas,
        "blas_alternative": alternative,
        "blas_refusal": peer_blas.refusal(blas, alternative),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "cpu": peer_blas.cpu_identity(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--info", action="store_true")
    parser.add_argument("--workload", default="w1")
    parser.add_argument("--impl", default="bmm", choices=sorted(set(IMPLS) | set(CNN_IMPLS)))
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--device", default="cpu",
                        help="cpu, or cuda to time PyTorch's GPU path (synchronised timing)")
    parser.add_argument("--graph", action="store_true",
                        help="cuda: capture the whole training step as a CUDA graph (capturable "
                             "Adam, cudnn.benchmark on) and time its replays (w1, w2, w5)")
    parser.add_argument("--tf32", action="store_true",
                        help="cuda: TF32 tensor cores for matmuls and convolutions (default: "
                             "plain FP32, as our backend's backend.math=fp32)")
    parser.add_argument("--channels-last", action="store_true",
                        help="w5: the CNN's images and convolution weights channels-last")
    parser.add_argument("--cudnn-benchmark", type=int, choices=(0, 1), default=None,
                        help="cuda: cudnn.benchmark (default: on with --graph, off without)")
    parser.add_argument("--no-mkldnn", dest="mkldnn", action="store_false",
                        help="cpu: the convolutions without oneDNN (im2col + BLAS)")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    if DEVICE != "cpu":
        # Parameters, index draws and grids are made where the data lives.
        torch.set_default_device(DEVICE)
        # Plain FP32 unless a request asks for TF32 (configure()), as our CUDA backend computes
        # with backend.math=fp32: cuDNN would otherwise run the convolutions in TF32.
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
    if args.info:
        print(json.dumps(info()))
        return
    if DEVICE == "cpu":
        blas = loaded_blas()
        reason = peer_blas.refusal(blas, peer_blas.alternative_value())
        print(f"torch_bench: BLAS {blas['kind']} ({', '.join(blas['libraries']) or '-'}); CPU "
              f"{peer_blas.describe_cpu(peer_blas.cpu_identity())}", file=sys.stderr)
        if reason:
            print("torch_bench: warning: " + reason, file=sys.stderr)
    if not args.serve:
        request = vars(args)
        if request["cudnn_benchmark"] is None:
            del request["cudnn_benchmark"]
        print(json.dumps(run(request)))
        return
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = run(json.loads(line))
        except Exception as e:  # report and keep serving
            reply = {"error": repr(e), "request": line}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
