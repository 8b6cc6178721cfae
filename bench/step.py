"""Where a step from Python stops, and what it costs (issue 22): 'step' from
a Python line, command to the stop it makes, in 'tdebug run --json -x',
read off the events as they arrive:
  - into the user's own op (a torch.utils.cpp_extension built with -O0 -g,
    once, into build/bench-myop), default 'mine' against 'set step-into
    binding' (today's stop, pybind11's dispatcher);
  - into stock torch's operator entry (torch.add: at::_ops::add_Tensor::call)
    against 'binding' (the unnamed wrapper in libtorch_python).
Sessions of each mode interleaved (binding, mine, binding, mine, ...);
medians and ratios.  Target: median under 300 ms each."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD, PYTHON, ROOT, TDEBUG

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
STEPS_PER_RUN = 8

STOCK = r'''
import torch
x = torch.ones(2)
for i in range(100):
    z = torch.add(x, x)                       # STOP
'''

MYOP = r'''
import sys
import torch
sys.path.insert(0, sys.argv[1])
import myop
x = torch.ones(2)
for i in range(100):
    z = myop.scaled_add(x, x, 2.0)            # STOP
'''


def line_of(text, marker):
    return [i + 1 for i, l in enumerate(text.splitlines()) if marker in l][0]


def build_myop():
    d = os.path.join(BUILD, "bench-myop")
    if any(f.startswith("myop") and f.endswith(".so") for f in os.listdir(d)) \
            if os.path.isdir(d) else False:
        return d
    os.makedirs(d, exist_ok=True)
    for f in ("scaled_add.cpp", "setup.py"):
        shutil.copy(os.path.join(ROOT, "tests", "e2e", "data", "myop", f), d)
    t = time.perf_counter()
    r = subprocess.run([PYTHON, "setup.py", "build_ext", "--inplace"], cwd=d,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("bench: building the op failed (libtorch-dev, pybind11-dev?):\n" + r.stderr[-2000:])
    print(f"  (built the op with -O0 -g in {time.perf_counter() - t:.0f} s)")
    return d


def step_times(path, text, mode, args=()):
    """ms from each stop at the Python line to the stop 'step' makes."""
    cmds = tempfile.NamedTemporaryFile("w", suffix=".cmds", delete=False)
    cmds.write(f"set step-into {mode}\n" + "step\ncontinue\n" * STEPS_PER_RUN + "kill\n")
    cmds.close()
    env = dict(os.environ, TDEBUG_MY_CODE=":".join(args))  # the op's sources
    p = subprocess.Popen([TDEBUG, "run", "--json", "-x", cmds.name, "-b",
                          f"{path}:{line_of(text, '# STOP')}", "--", PYTHON, path] + list(args),
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
    stops = []
    where = None
    for line in p.stdout:
        now = time.perf_counter()
        e = json.loads(line)
        if e.get("event") == "stopped":
            stops.append((now, e["reason"]))
            if e["reason"] == "step":
                where = e["stack"][0].get("function")
    p.wait()
    os.unlink(cmds.name)
    return [1000 * (t - stops[i - 1][0]) for i, (t, why) in enumerate(stops)
            if i and why == "step" and stops[i - 1][1] == "python-breakpoint"], where


def compare(title, path, text, args=()):
    times = {"binding": [], "mine": []}
    where = {}
    for _ in range(RUNS):
        for mode in times:
            ts, w = step_times(path, text, mode, args)
            times[mode] += ts
            where[mode] = w
    print(f"== {title} ({RUNS} interleaved sessions of each, {STEPS_PER_RUN} steps each)")
    base = statistics.median(times["binding"])
    for mode, ts in times.items():
        m = statistics.median(ts)
        print(f"  step-into {mode:<8} median {m:6.1f} ms (range {min(ts):.1f}-{max(ts):.1f}, "
              f"n={len(ts)})  {m / base:5.2f}x  lands in {(where[mode] or '?')[:60]}")
    return statistics.median(times["mine"])


def main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-step-")
    stock = os.path.join(d, "stock.py")
    with open(stock, "w") as f:
        f.write(STOCK)
    m1 = compare("step from torch.add's line: the operator entry vs the binding", stock, STOCK)
    op = build_myop()
    user = os.path.join(d, "user.py")
    with open(user, "w") as f:
        f.write(MYOP)
    m2 = compare("step from the line calling the user's op: the op vs pybind11's dispatcher",
                 user, MYOP, [op])
    print(f"  target: median < 300 ms each: operator {m1:.0f} ms, the user's op {m2:.0f} ms")
    shutil.rmtree(d, ignore_errors=True)


main()
