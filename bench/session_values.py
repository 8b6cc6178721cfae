"""What a stop shows of the program's values, in a real 'tdebug run --json'
session on Debian's torch (issue 12's targets: 'args' plus 'py-locals' at a
stop under 100 ms median; the first calibration of a torch build under 2 s,
then read from the cache).

Each command's time is the time between the events it and the one before
produce (tdebug prints and flushes one event per command of a -x file, and
reads the next line at once).  Against the plain tool in the same run: gdb
with python3-dbg at the same breakpoint, timing 'info registers' of the six
argument registers (all gdb shows of arguments without debug info) plus its
own 'py-locals' (in the Python frame: 'py-up' first), in gdb's Python.
The calibration in a session with an empty cache is compared with
'python3 -c "import torch"', the helper's own start.  BENCH_RUNS sets the
runs (default 5)."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, TDEBUG

REPEAT = 20

PROGRAM = r"""
import torch

def step(x, w, bias, lr):
    name = "layer1"
    shape = list(x.shape)
    opts = {"lr": lr, "momentum": 0.9}
    y = x @ w  # PYTHON-STOP
    return torch.add(y, bias, alpha=lr)

x = torch.randn(8, 16)
w = torch.randn(16, 4).t().contiguous().t()
step(x, w, torch.zeros(4), 0.5)
"""


def session_times(script, cache, commands, where="at::_ops::add_Tensor::call"):
    """Run 'tdebug run --json -x' with a breakpoint at WHERE; return
    [(event, seconds since the previous event)]."""
    cmds = os.path.join(cache, "cmds")
    with open(cmds, "w") as f:
        f.write("".join(c + "\n" for c in commands) + "quit\n")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    p = subprocess.Popen([TDEBUG, "run", "--json", "-x", cmds, "-b", where, "--", PYTHON,
                          script], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    out, last = [], None
    for line in p.stdout:
        now = time.perf_counter()
        e = json.loads(line)
        out.append((e, now - last if last is not None else 0.0))
        last = now
    if p.wait() != 0:
        sys.exit("bench: tdebug run failed")
    return out


def pair_times(events):
    """Seconds of each 'args' + 'py-locals' pair after the first."""
    times = []
    for i, (e, dt) in enumerate(events):
        if e["event"] == "py-locals" and i and events[i - 1][0]["event"] == "args":
            times.append(events[i - 1][1] + dt)
    return times[1:]  # the first may read the layout


GDB_SCRIPT = r"""
import gdb, json, time
gdb.execute("set pagination off")
gdb.execute("set breakpoint pending on")
gdb.execute("break at::_ops::add_Tensor::call")
gdb.execute("run", to_string=True)
gdb.execute("py-up", to_string=True)   # the Python frame of the call
times = []
for i in range(%d):
    t = time.perf_counter()
    gdb.execute("info registers rdi rsi rdx rcx r8 r9", to_string=True)
    gdb.execute("py-locals", to_string=True)
    times.append(time.perf_counter() - t)
print("GDBTIMES " + json.dumps(times[1:]))
gdb.execute("kill")
"""


def gdb_times(script, workdir):
    path = os.path.join(workdir, "bench_gdb.py")
    with open(path, "w") as f:
        f.write(GDB_SCRIPT % REPEAT)
    r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-ex", "set debuginfod enabled off",
                        "-x", path, "--args", PYTHON, script], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("GDBTIMES "):
            return json.loads(line[9:])
    sys.exit("bench: gdb's py-locals did not run (python3-dbg installed?):\n" + r.stdout[-2000:]
             + r.stderr[-2000:])


def main():
    runs = int(os.environ.get("BENCH_RUNS", "5"))
    work = tempfile.mkdtemp(prefix="tdebug-bench-values-")
    try:
        script = os.path.join(work, "step.py")
        with open(script, "w") as f:
            f.write(PROGRAM)
        line = PROGRAM.splitlines().index("    y = x @ w  # PYTHON-STOP") + 1
        cmds = ["args", "py-locals"] * REPEAT
        ours, plain, cold, warm, imports = [], [], [], [], []
        subprocess.run([PYTHON, "-c", "import torch"], check=True)  # warm the page cache
        for _ in range(runs):
            cache = os.path.join(work, "cache")
            shutil.rmtree(cache, ignore_errors=True)
            os.makedirs(cache)
            # At a Python line, the first py-locals meets the first tensors.
            evs = session_times(script, cache, ["py-locals"], where=f"{script}:{line}")
            notes = {e.get("layout"): e for e, _ in evs if e["event"] == "note"}
            if "calibration" not in notes:
                sys.exit(f"bench: no calibration in a session with an empty cache: {notes}")
            cold.append(notes["calibration"]["seconds"])
            evs = session_times(script, cache, ["py-locals"], where=f"{script}:{line}")
            if "cache" not in {e.get("layout") for e, _ in evs if e["event"] == "note"}:
                sys.exit("bench: the second session did not read the cache")
            # the note, then the reply: the command's whole time
            warm.append(sum(dt for e, dt in evs if e["event"] == "py-locals" or
                            e.get("layout") == "cache"))
            ours.extend(pair_times(session_times(script, cache, cmds)))
            plain.extend(gdb_times(script, work))
            t = time.perf_counter()
            subprocess.run([PYTHON, "-c", "import torch"], check=True)
            imports.append(time.perf_counter() - t)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m_ours, m_plain = statistics.median(ours) * 1000, statistics.median(plain) * 1000
    m_cold, m_imp = statistics.median(cold), statistics.median(imports)
    m_warm = statistics.median(warm) * 1000
    print(f"== values at a stop, in a 'tdebug run --json' session (medians; {runs} runs, "
          f"{len(ours)} stops' worth of commands)")
    label = "gdb: info registers (6 args) + py-locals"
    print(f"  {label:<48} {m_plain:7.1f} ms")
    label = "tdebug: args + py-locals (tensors decoded)"
    print(f"  {label:<48} {m_ours:7.1f} ms  {m_ours / m_plain:5.2f}x"
          f"   target < 100 ms: {'met' if m_ours < 100 else 'NOT met'}")
    label = 'python3 -c "import torch" (baseline)'
    print(f"  {label:<48} {m_imp:7.2f} s")
    print(f"  {'first calibration in a session (empty cache)':<48} {m_cold:7.2f} s  "
          f"{m_cold / m_imp:5.2f}x   target < 2 s: {'met' if m_cold < 2 else 'NOT met'}")
    print(f"  {'first py-locals of a later session (cache read)':<48} {m_warm:7.1f} ms")


if __name__ == "__main__":
    main()
