"""From a paused process's announcement to the stop in PyInit__C: a program
started with the preloaded library pauses at torch._C and announces itself;
'tdebug attach --wait --json' (listening first) attaches, arms PyInit__C,
releases it and reports the stop; against plain gdb doing the same by hand
in the same run: 'gdb -p PID -batch -ex "break PyInit__C" -ex "set var
tdebug_preload_release = 1" -ex continue', started when the announcement
arrives.  Both clocks start at the announcement and stop at the stop."""
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD, PYTHON, TDEBUG

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
LIB = os.path.join(BUILD, "libtdebug-preload.so")
PROGRAM = [PYTHON, "-c", "import torch"]


def program_env(sock):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TDEBUG_") and k not in ("LD_AUDIT", "LD_PRELOAD")}
    env.update(LD_AUDIT=LIB, TDEBUG_ANNOUNCE=sock, TDEBUG_TIMEOUT="300")
    return env


def finish(*procs):
    for p in procs:
        if p.wait(timeout=600) != 0:
            sys.exit(f"bench: {p.args[0]} exited with status {p.returncode}")


def with_gdb(tmp):
    sock = os.path.join(tmp, "gdb.sock")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock)
    try:
        prog = subprocess.Popen(PROGRAM, env=program_env(sock), stderr=subprocess.DEVNULL)
        pid = json.loads(s.recv(65536))["pid"]
        t0 = time.perf_counter()
        gdb = subprocess.Popen(["gdb", "-nx", "-q", "-batch", "-iex", "set debuginfod enabled off",
                                "-p", str(pid), "-ex", "break PyInit__C",
                                "-ex", "set var tdebug_preload_release = 1", "-ex", "continue"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        for line in gdb.stdout:
            if line.startswith("Breakpoint 1, ") and "PyInit__C" in line:
                break
        else:
            sys.exit("bench: gdb never stopped in PyInit__C")
        t1 = time.perf_counter()
        gdb.stdout.read()
        finish(gdb, prog)
        return t1 - t0
    finally:
        s.close()
        os.unlink(sock)


def with_tdebug(tmp):
    sock = os.path.join(tmp, "tdebug.sock")
    env = dict(program_env(sock))
    del env["LD_AUDIT"]
    t = subprocess.Popen([TDEBUG, "attach", "--wait", "--json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not t.stderr.readline().startswith("tdebug: waiting for "):
        sys.exit("bench: tdebug attach --wait did not start listening")
    prog = subprocess.Popen(PROGRAM, env=program_env(sock), stderr=subprocess.DEVNULL)
    t0 = None
    for line in t.stdout:
        event = json.loads(line)
        if event["event"] == "announced":
            t0 = time.perf_counter()
        elif event["event"] == "stopped":
            t1 = time.perf_counter()
            break
    else:
        sys.exit("bench: tdebug never stopped")
    t.stdout.read()
    t.stderr.read()
    finish(t, prog)
    return t1 - t0


def main():
    if not os.path.exists(LIB):
        sys.exit(f"bench: {LIB} is not built; run 'make'")
    cases = [("gdb -p PID, break PyInit__C, release", with_gdb),
             ("tdebug attach --wait", with_tdebug)]
    times = {name: [] for name, _ in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for fn in (f for _, f in cases):  # warm-up: page cache, gdb's index cache
            fn(tmp)
        for _ in range(RUNS):
            for name, fn in cases:
                times[name].append(fn(tmp))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base = medians[cases[0][0]]
    print(f"== announcement to the PyInit__C stop (median of {RUNS} interleaved runs, "
          f"after 1 warm-up)")
    for name, _ in cases:
        ts = times[name]
        print(f"  {name:<44} {medians[name]:6.2f} s  (range {min(ts):.2f}-{max(ts):.2f})  "
              f"{medians[name] / base:5.2f}x")


main()
