"""Shared timing helpers for tdebug's benchmarks: medians of wall-clock runs
of whole commands, measured in one session so the noisy machine affects all
candidates alike (runs are interleaved: A B C A B C ...)."""
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("B", os.path.join(ROOT, "build"))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
TDEBUG = os.path.join(BUILD, "tdebug")

# Python source, at the top level of a program that imported torch: a small
# training step on CPU, step() (MLP forward + backward + SGD), one thread.
MLP_STEP = """\
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randn(32, 1)
def step():
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


def time_once(cmd, env=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: command failed with status {r.returncode}: {' '.join(cmd)}")
    return dt


def compare(title, candidates, runs=None, warmup=1):
    """CANDIDATES: list of (name, argv).  The first is the baseline.  Prints
    each median and its ratio to the baseline; returns {name: median}."""
    runs = runs or int(os.environ.get("BENCH_RUNS", "5"))
    for _ in range(warmup):
        for _, cmd in candidates:
            time_once(cmd)
    times = {name: [] for name, _ in candidates}
    for _ in range(runs):
        for name, cmd in candidates:
            times[name].append(time_once(cmd))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base_name = candidates[0][0]
    print(f"== {title} (median of {runs} interleaved runs, after {warmup} warm-up)")
    for name, _ in candidates:
        ratio = medians[name] / medians[base_name]
        spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"
        print(f"  {name:<44} {medians[name]:6.2f} s  (range {spread})  {ratio:5.2f}x")
    return medians
