"""Python breakpoints through a real session (issue 11): 'tdebug run' with a
Python breakpoint armed that never hits, against the same program without
tdebug, in one run (interleaved): a call-heavy pure-Python loop and a small
torch training step (MLP forward + backward on CPU).  Each program times
its own work (what a user's loop pays) so tdebug's start-up, which
bench/run_import.py measures, stays out of the ratio; the whole command is
timed too.  Then the latency of 'step' from a Python line into torch's C++
(and of 'finish' back), from the stop before to the stop it makes, read off
tdebug's --json events as they arrive.
Targets: loop <= 1.5x (3.11), torch step <= 1.05x, step latency < 200 ms."""
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import MLP_STEP, PYTHON, TDEBUG, json_stops, line_of, load, median, rounds

RUNS = int(os.environ.get("BENCH_RUNS", "5"))

LOOP = r'''
import sys, time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def never_called():
    return 0                                  # NEVER
t = time.perf_counter()
fib(30)
print("work", time.perf_counter() - t, file=sys.stderr)
'''

TRAIN = r'''
import sys, time, torch
def never_called():
    return 0                                  # NEVER
torch.manual_seed(0)
''' + MLP_STEP + r'''
for _ in range(20):
    step()
t = time.perf_counter()
for _ in range(400):
    step()
print("work", time.perf_counter() - t, file=sys.stderr)
'''

STEPS = r'''
import torch
x = torch.ones(2)
for i in range(40):
    z = torch.add(x, x)                       # STOP
'''


def work_time(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    total = time.perf_counter() - t
    # 1: the armed breakpoint was never hit, as planned (tdebug says so)
    if r.returncode not in (0, 1) or "work " not in r.stderr:
        sys.exit(f"bench: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-500:]}")
    work = [float(l.split()[1]) for l in r.stderr.splitlines() if l.startswith("work ")]
    return work[-1], total


def compare(title, path, text):
    bp = f"{path}:{line_of(text, '# NEVER')}"
    cands = [("plain", [PYTHON, path]),
             ("tdebug run, Python breakpoint armed",
              [TDEBUG, "run", "--batch", "-b", bp, "--", PYTHON, path])]
    got = rounds([(name, lambda cmd=cmd: [work_time(cmd)]) for name, cmd in cands], RUNS)
    work = {n: [w for w, _ in got[n]] for n in got}
    total = {n: [t for _, t in got[n]] for n in got}
    print(f"== {title} (median of {RUNS} interleaved runs; {load()})")
    base = median(work["plain"])
    for name, _ in cands:
        w, t = median(work[name]), median(total[name])
        print(f"  {name:<40} work {w:6.3f} s ({min(work[name]):.3f}-{max(work[name]):.3f})"
              f"  {w / base:5.2f}x   whole command {t:6.2f} s")
    return median(work[cands[1][0]]) / base


def step_latency(path):
    """Median ms from a stop to the next stop when the next command is
    'step' (from torch.add's line into its binding) or 'finish' (back)."""
    stops = [(t, e["reason"]) for t, e in
             json_stops(["step", "finish", "continue"] * 20, f"{path}:{line_of(STEPS, '# STOP')}",
                        [PYTHON, path])]
    steps = [1000 * (t - stops[i - 1][0]) for i, (t, why) in enumerate(stops)
             if i and why == "step" and stops[i - 1][1] == "python-breakpoint"]
    finishes = [1000 * (t - stops[i - 1][0]) for i, (t, why) in enumerate(stops)
                if i and why == "finish"]
    print("== step from a Python line into torch's C++, and finish back (tdebug run --json -x)")
    print(f"  step   median {statistics.median(steps):6.1f} ms over {len(steps)} "
          f"(range {min(steps):.1f}-{max(steps):.1f})  target < 200 ms")
    print(f"  finish median {statistics.median(finishes):6.1f} ms over {len(finishes)}")


def main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-")
    paths = {}
    for name, text in (("loop.py", LOOP), ("train.py", TRAIN), ("steps.py", STEPS)):
        paths[name] = os.path.join(d, name)
        with open(paths[name], "w") as f:
            f.write(text)
    r1 = compare("call-heavy pure-Python loop (fib(30))", paths["loop.py"], LOOP)
    print(f"  ratio {r1:.2f}x (target <= 1.5x)")
    r2 = compare("torch training step (MLP forward+backward, 400 steps)", paths["train.py"], TRAIN)
    print(f"  ratio {r2:.2f}x (target <= 1.05x)")
    step_latency(paths["steps.py"])


main()
