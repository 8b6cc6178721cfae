"""'tdebug stacks' against gdb's py-bt on 8 Python processes that imported
torch, in the same run.  Prints the total time of each, their ratio, and how
long tdebug paused each process (from its own measurement: first
PTRACE_SEIZE to last PTRACE_DETACH).

Targets (issue 7): at most 0.1x gdb's time, under 50 ms of pause per process.

    B=build PYTHON=/usr/bin/python3 python3 bench/stacks.py [--procs N] [--rounds N]
"""
import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import time

B = os.environ.get("B", "build")
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
TDEBUG = os.path.join(B, "tdebug")

# Each target sleeps in a Python hook called by libtorch's C++ autograd
# engine: its stack goes Python -> C++ (libtorch_cpu, libtorch_python) ->
# Python -> C, so symbols of the big torch libraries are part of the work.
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
                raise SystemExit("bench: a target process did not start (is torch installed "
                                 "for %s?)" % PYTHON)
            if select.select([p.stdout], [], [], 1.0)[0]:
                buf += os.read(p.stdout.fileno(), 4096)
    time.sleep(0.2)  # let each reach its sleep
    return procs


def timed(args):
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True)
    return time.monotonic() - t0, r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    if not os.access(TDEBUG, os.X_OK):
        raise SystemExit(f"bench: {TDEBUG} is not built; run 'make'")

    procs = start(args.procs)
    pids = [str(p.pid) for p in procs]
    try:
        tdebug_times, pauses = [], []
        for _ in range(args.rounds):
            dt, r = timed([TDEBUG, "stacks", "--json", *pids])
            if r.returncode != 0:
                raise SystemExit(f"bench: tdebug stacks failed: {r.stderr}")
            doc = json.loads(r.stdout)
            for proc in doc["processes"]:
                t = proc["threads"][0]
                names = [f.get("name") for f in t["frames"] if f["kind"] == "python"]
                assert names[0] == "step" and "train" in names, names
                assert any((f.get("function") or "").startswith("torch::autograd::Engine")
                           for f in t["frames"]), "no C++ frames of libtorch"
                pauses.append(proc["pause_ms"])
            tdebug_times.append(dt)

        gdb_times = []
        for _ in range(max(1, args.rounds // 3)):
            total = 0.0
            for pid in pids:
                dt, r = timed(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                               "-p", pid, "-ex", "py-bt"])
                if "in step" not in r.stdout:
                    raise SystemExit(f"bench: gdb's py-bt failed on pid {pid}:\n{r.stdout}\n{r.stderr}")
                total += dt
            gdb_times.append(total)
    finally:
        for p in procs:
            p.kill()
            p.wait()

    t_tdebug = statistics.median(tdebug_times)
    t_gdb = statistics.median(gdb_times)
    ratio = t_tdebug / t_gdb
    print(f"stacks: {args.procs} processes that imported torch")
    print(f"  tdebug stacks (all {args.procs} in one run, median of {args.rounds}): {t_tdebug:.3f} s")
    print(f"  gdb -p PID -batch -ex py-bt (each in turn):        {t_gdb:.3f} s")
    print(f"  ratio tdebug/gdb: {ratio:.3f}x (target <= 0.1x) {'ok' if ratio <= 0.1 else 'MISSED'}")
    print(f"  pause per process: median {statistics.median(pauses):.2f} ms, "
          f"max {max(pauses):.2f} ms over {len(pauses)} (target < 50 ms) "
          f"{'ok' if max(pauses) < 50 else 'MISSED'}")


main()
