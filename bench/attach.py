"""Attach-to-ready latency on a process that has imported torch:
'tdebug attach --batch PID' (every thread's stack, then detach) against
'gdb -p PID -batch -ex bt' in the same run.  Issue target: at most 0.4x of
plain gdb."""
import subprocess
import sys

from benchlib import PYTHON, TDEBUG, compare

target = subprocess.Popen([PYTHON, "-c", "import torch, time; print('ready', flush=True); "
                           "time.sleep(3600)"], stdout=subprocess.PIPE, text=True)
try:
    if target.stdout.readline().strip() != "ready":
        sys.exit("bench: the target did not start")
    pid = str(target.pid)
    m = compare(f"attach to a process that imported torch (pid {pid})", [
        ("gdb -p PID -batch -ex bt", ["gdb", "-nx", "-q", "-p", pid, "-batch", "-ex", "bt"]),
        ("tdebug attach --batch PID", [TDEBUG, "attach", "--batch", pid]),
    ])
    names = list(m)
    print(f"  ratio tdebug/gdb: {m[names[1]] / m[names[0]]:.2f}x (target <= 0.4x)")
finally:
    target.kill()
    target.wait()
