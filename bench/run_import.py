"""tdebug run on 'import torch; torch.ones(2) + 1' against the plain program
(issue #17): a stop at PyInit__C of torch._C then on to the end (target
<= 1.15x), and a breakpoint in libtorch_cpu, -b at::_ops::add_Tensor::call
(target <= 1.3x); each in a light session (the default) and an ordinary one
(TDEBUG_LIGHT=0), beside plain gdb with a pending breakpoint on PyInit__C.

Runs are interleaved (plain, then each candidate, BENCH_RUNS times).  tdebug
runs with --json, whose stop event is timed as it arrives: each ratio is
printed with its breakdown, gdb start (gdb's first answer after tdebug
started it, from a separate run with TDEBUG_TRACE_MI), time to the stop,
and stop to exit (medians), and the spread (min-max) of the ratio over the
runs (each run against the plain run next to it)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, TDEBUG

CODE = "import torch; torch.ones(2) + 1"
PROGRAM = [PYTHON, "-c", CODE]
RUNS = int(os.environ.get("BENCH_RUNS", "7"))
LIGHT_OFF = dict(os.environ, TDEBUG_LIGHT="0")


def timed(cmd, env=None):
    """(total seconds, seconds to the first stop event or None)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    stop = None
    for line in p.stdout:
        if stop is None and line.startswith(b'{"event":"stopped"'):
            stop = time.perf_counter() - t0
    rc = p.wait()
    total = time.perf_counter() - t0
    if rc != 0:
        sys.exit(f"bench: command failed with status {rc}: {' '.join(cmd)}")
    return total, stop


def gdb_start(cmd, env=None):
    """Seconds from gdb's start to its first answer, in one run of CMD
    (tdebug) with its MI traffic traced."""
    with tempfile.NamedTemporaryFile("r", suffix=".mi") as f:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env=dict(env or os.environ, TDEBUG_TRACE_MI=f.name), check=True)
        for line in f:
            parts = line.split(None, 2)
            if len(parts) >= 2 and parts[1] == "<-":
                return float(parts[0])
    return float("nan")


def tdebug(*args):
    return [TDEBUG, "run", "--json", *args, "--", *PROGRAM]


CANDIDATES = [
    ("stop at import, light", tdebug("--stop-at-import", "torch._C"), None, 1.15),
    ("stop at import, TDEBUG_LIGHT=0", tdebug("--stop-at-import", "torch._C"), LIGHT_OFF, None),
    ("-b in libtorch_cpu, light", tdebug("-b", "at::_ops::add_Tensor::call"), None, 1.3),
    ("-b in libtorch_cpu, TDEBUG_LIGHT=0", tdebug("-b", "at::_ops::add_Tensor::call"), LIGHT_OFF,
     None),
    ("gdb -batch, pending break PyInit__C, bt",
     ["gdb", "-nx", "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break PyInit__C",
      "-ex", "run", "-ex", "bt", "-ex", "continue", "--args", *PROGRAM], None, None),
]

timed(PROGRAM)  # warm-up: the page cache
for _, cmd, env, _ in CANDIDATES:
    timed(cmd, env)
plain = []
runs = {name: [] for name, *_ in CANDIDATES}
for _ in range(RUNS):
    plain.append(timed(PROGRAM)[0])
    for name, cmd, env, _ in CANDIDATES:
        runs[name].append(timed(cmd, env))

base = statistics.median(plain)
print(f"== tdebug run on python3 -c '{CODE}' (median of {RUNS} interleaved runs, after a warm-up)")
print(f"  {'plain program':<40} {base:6.2f} s  (range {min(plain):.2f}-{max(plain):.2f})")
for name, cmd, env, target in CANDIDATES:
    totals = [t for t, _ in runs[name]]
    ratios = [t / p for (t, _), p in zip(runs[name], plain)]
    med = statistics.median(totals)
    line = (f"  {name:<40} {med:6.2f} s  {med / base:5.2f}x (runs {min(ratios):.2f}-"
            f"{max(ratios):.2f}x)")
    stops = [s for _, s in runs[name] if s is not None]
    if cmd[0] == TDEBUG and stops:
        to_stop = statistics.median(stops)
        after = statistics.median([t - s for t, s in runs[name] if s is not None])
        line += (f"  [gdb start {gdb_start(cmd, env):.3f} s, to the stop {to_stop:.2f} s, "
                 f"stop to exit {after:.2f} s]")
    if target:
        line += f"  target <= {target}x: {'met' if med / base <= target else 'NOT met'}"
    print(line)
