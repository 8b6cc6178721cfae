"""'tdebug stacks' on 8 Python processes that imported torch, against
'gdb -p PID -batch -ex py-bt' run for each of them, in the same run
(interleaved medians, bench/benchlib.py).  Prints both, their ratio, and
how long tdebug paused each process, as it measured it (first
PTRACE_SEIZE to last PTRACE_DETACH, the "pause_ms" of --json).

Issue 7's targets: at most 0.1x of gdb's time, under 50 ms of pause per
process.  BENCH_RUNS sets the number of runs (default 3: gdb takes seconds
per process)."""
import json
import os
import select
import statistics
import subprocess
import sys
import time

from benchlib import PYTHON, TDEBUG, compare

NPROCS = 8

# Each target sleeps in a Python hook run by libtorch's C++ autograd engine:
# its stack goes Python -> C++ (libtorch_cpu, libtorch_python) -> Python ->
# C, so the symbols of the big torch libraries are part of the work.
TARGET = r"""
import time, torch
def step(grad):
    print("ready", flush=True)
    time.sleep(100000)
    return grad
def train():
    x = torch.ones(4, requires_grad=True)
    y = torch.nn.Linear(4, 4)(x)
    y.register_hook(step)
    y.sum().backward()
train()
"""


def start(n):
    procs = [subprocess.Popen([PYTHON, "-c", TARGET], stdout=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, start_new_session=True)
             for _ in range(n)]
    deadline = time.monotonic() + 300
    for p in procs:
        buf = b""
        while b"ready" not in buf:
            if time.monotonic() > deadline or p.poll() is not None:
                sys.exit(f"bench: a target process did not start (is torch installed for {PYTHON}?)")
            if select.select([p.stdout], [], [], 1.0)[0]:
                buf += os.read(p.stdout.fileno(), 4096)
    time.sleep(0.2)  # from print() into time.sleep()
    return procs


def check_and_pauses(pids):
    """One 'tdebug stacks --json' run: its stacks must be right; returns the
    pause of each process in ms."""
    r = subprocess.run([TDEBUG, "stacks", "--json", *pids], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: tdebug stacks failed: {r.stderr}")
    pauses = []
    for proc in json.loads(r.stdout)["processes"]:
        frames = proc["threads"][0]["frames"]
        names = [f["name"] for f in frames if f["kind"] == "python"]
        if names[0] != "step" or "train" not in names or not any(
                (f.get("function") or "").startswith("torch::autograd::Engine") for f in frames):
            sys.exit(f"bench: unexpected stack for pid {proc['pid']}: {frames}")
        pauses.append(proc["pause_ms"])
    return pauses


def main():
    if not os.access(TDEBUG, os.X_OK):
        sys.exit(f"bench: {TDEBUG} is not built; run 'make'")
    procs = start(NPROCS)
    pids = [str(p.pid) for p in procs]
    try:
        gdb_each = " ".join(
            f"gdb -nx -q -batch -iex 'set debuginfod enabled off' -p {pid} -ex py-bt >/dev/null &&"
            for pid in pids) + " true"
        m = compare(f"stacks of {NPROCS} processes that imported torch", [
            (f"gdb -p PID -batch -ex py-bt, x{NPROCS}", ["sh", "-c", gdb_each]),
            (f"tdebug stacks PID x{NPROCS}", [TDEBUG, "stacks", *pids]),
        ], runs=int(os.environ.get("BENCH_RUNS", "3")), warmup=0)
        pauses = []
        for _ in range(5):
            pauses += check_and_pauses(pids)
    finally:
        for p in procs:
            p.kill()
            p.wait()
    gdb_t, tdebug_t = list(m.values())
    ratio = tdebug_t / gdb_t
    print(f"  ratio tdebug/gdb: {ratio:.3f}x (target <= 0.1x: {'met' if ratio <= 0.1 else 'MISSED'})")
    print(f"  pause per process: median {statistics.median(pauses):.2f} ms, max {max(pauses):.2f} ms "
          f"over {len(pauses)} (target < 50 ms: {'met' if max(pauses) < 50 else 'MISSED'})")


main()
