#!/usr/bin/env python3
"""bench/growth.py's arithmetic (issue 53, cost of growth): the working sets it sets against
the caches, the bends it reads off a curve and the cache sizes it parses; no binary, no
matplotlib needed. Usage: check_growth.py SOURCE_DIR"""

import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "bench"))
import growth  # noqa: E402

failures = []


def check(name, got, want):
    if got != want:
        failures.append(f"{name}: got {got!r}, want {want!r}")


# Parameters by hand: 2-32-32-2, 784-256-256-10, and Flax's MNIST CNN.
check("W1 parameters", growth.mlp_params([2, 32, 32, 2]), 2 * 32 + 32 + 32 * 32 + 32 + 32 * 2 + 2)
check("W2 parameters", growth.mlp_params([784, 256, 256, 10]), 269322)
check("CNN parameters", growth.CNN_PARAMS, 824458)

# W1, batch 32: parameters, Adam's two moments, gradient; activations 32 x (2 + 2 x 66 + 2 x 32).
w1 = growth.working_set("w1", 1, 2, 32)
check("W1 parameters bytes", w1["params"], 1218 * 4)
check("W1 Adam state bytes", w1["optimizer_state"], 2 * 1218 * 4)
check("W1 activations bytes", w1["activations"], 32 * (2 + 132 + 64) * 4)
check("W1 per member", w1["per_member"], (4 * 1218 + 32 * 198) * 4)
check("W1 K=1 total = per member", w1["total"], w1["per_member"])
# K members keep their parameters and moments; the scratch is per thread that runs (2 of them).
w1k = growth.working_set("w1", 1000, 2, 32)
check("W1 K=1000 total", w1k["total"], (1000 * 3 * 1218 + 2 * (1218 + 32 * 198)) * 4)
check("W1 K=1000 threads", w1k["threads_used"], 2)
check("W1 K=1 threads", w1["threads_used"], 1)
# The CNN: SGD's one momentum; one partial gradient per group of 32 images.
w5 = growth.working_set("w5", 4, 2, 128)
check("W5 state", w5["optimizer_state"], 824458 * 4)
check("W5 gradients (4 groups)", w5["gradients"], 4 * 824458 * 4)
check("W5 threads", w5["threads_used"], 2)

check("crossing", growth.crossing([(1, 10), (2, 20), (4, 40)], 15), 2)
check("no crossing", growth.crossing([(1, 10)], 15), None)

# Per-member time halving to K = 4, flat, then up: stops falling at 4, best at 8, rises at 32.
b = growth.bends([(1, 8.0), (2, 4.0), (4, 2.0), (8, 1.9), (16, 2.1), (32, 3.0)])
check("stops falling", b["stops_falling"], 4)
check("best", b["best"], 8)
check("rises from", b["rises_from"], 32)
check("falling to the end", growth.bends([(1, 4.0), (2, 2.0)])["stops_falling"], 2)
check("no rise", growth.bends([(1, 4.0), (2, 2.0)])["rises_from"], None)

check("sysfs size", growth.parse_size("1280K"), 1280 * 1024)
check("lscpu size", growth.parse_size("2.5 MiB (2 instances)"), int(2.5 * 2**20))
check("plain bytes", growth.parse_size("4096"), 4096)

if failures:
    print("\n".join(failures))
    sys.exit(1)
print("check_growth: all passed")
