"""Time to the first Python stop after 'import torch' (issue 27), from
starting the debugger to the stop at a Python line, in one interleaved run:

- plain: the program alone, to the moment it runs that line (the line
  prints a marker, read on a pipe): what no debugger can beat;
- tdebug run: 'tdebug run --json -b script.py:N', to its 'stopped' event;
- tdebug dap: 'tdebug dap' launching the script with the breakpoint set
  before configurationDone, to the 'stopped' event;
- pdb: 'python -m pdb -c "break script.py:N" -c continue script.py', to its
  '> script.py(N)' line on a pipe;
- debugpy: 'python -m debugpy --listen --wait-for-client script.py' and a
  small DAP client (setBreakpoints, configurationDone), to 'stopped'.

Each run is also a ratio to the plain run of its round.  Targets: tdebug's
first stop (CLI and DAP) no later than debugpy's and within 1.2x of pdb's.
BENCH_RUNS (7) rounds, after one warm-up round; BENCH_BASELINE=PATH adds
another tdebug binary to the rounds (a before and after on one machine)."""
import json
import os
import select
import subprocess
import sys
import tempfile
import time

from benchlib import (PYTHON, TDEBUG, DebugpyListen, TdebugDap, first_stop, line_of, load,
                      median, per_round_ratios, ratio_table, rounds)

RUNS = int(os.environ.get("BENCH_RUNS", "7"))
BASELINE = os.environ.get("BENCH_BASELINE")
TIMEOUT = 300

SCRIPT = """\
import torch
print("first-stop-line", flush=True)          # BREAK
x = torch.ones(2) + 1
"""
LINE = line_of(SCRIPT, "# BREAK")


def read_until(p, found, what):
    """Read P's stdout until found(line) holds; the time it did."""
    buf = b""
    deadline = time.monotonic() + TIMEOUT
    while True:
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if found(line.decode(errors="replace")):
                return time.perf_counter()
        if time.monotonic() > deadline or not select.select([p.stdout], [], [], TIMEOUT)[0]:
            sys.exit(f"bench: {what} never got to the line")
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            sys.exit(f"bench: {what} ended before the line")
        buf += chunk


def timed_pipe(cmd, found, what, **kw):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True, **kw)
    try:
        return read_until(p, found, what) - t
    finally:
        p.kill()  # the debugger; its program dies with it (tdebug, pdb: same process)
        p.wait()


def plain(script):
    return timed_pipe([PYTHON, script], lambda l: "first-stop-line" in l, "python")


def stopped_event(line):
    try:
        return json.loads(line).get("event") == "stopped"
    except ValueError:
        return False


def tdebug_run(script, tdebug=TDEBUG):
    # stdin a pipe: closing it ends the session (the program is killed)
    t = time.perf_counter()
    p = subprocess.Popen([tdebug, "run", "--json", "-b", f"{script}:{LINE}", "--", PYTHON, script],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        return read_until(p, stopped_event, "tdebug run") - t
    finally:
        p.stdin.close()
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def tdebug_dap(script, tdebug=TDEBUG):
    t = time.perf_counter()
    with TdebugDap(script, tdebug=tdebug) as d:
        first_stop(d.client, d.launch, script, [LINE], timeout=TIMEOUT)
        return time.perf_counter() - t


def pdb(script):
    d, name = os.path.split(script)
    return timed_pipe([PYTHON, "-m", "pdb", "-c", f"break {name}:{LINE}", "-c", "continue", name],
                      lambda l: l.startswith(f"> {script}({LINE})"), "pdb", cwd=d)


def debugpy(script):
    t = time.perf_counter()
    with DebugpyListen([script]) as d:
        first_stop(d.client, d.attach, script, [LINE], timeout=TIMEOUT)
        return time.perf_counter() - t


def main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-first-stop-")
    script = os.path.join(d, "script.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    tools = [("plain (to the line)", plain), ("tdebug run --json", tdebug_run),
             ("tdebug dap", tdebug_dap), ("pdb", pdb), ("debugpy (DAP)", debugpy)]
    if BASELINE:
        tools += [("baseline run --json", lambda s: tdebug_run(s, BASELINE)),
                  ("baseline dap", lambda s: tdebug_dap(s, BASELINE))]
    before = load()
    rounds([(name, lambda fn=fn: fn(script)) for name, fn in tools], 1)  # warm-up
    times = rounds([(name, lambda fn=fn: fn(script)) for name, fn in tools], RUNS)
    ratios = per_round_ratios(times, "plain (to the line)")
    print(f"({before} before, {load()} after; Python {sys.version.split()[0]})")
    ratio_table(f"import torch, then the first stop at a Python line: seconds from the "
                f"debugger's start (median of {RUNS} interleaved rounds)", times,
                ["plain (to the line)", "pdb", "debugpy (DAP)"])
    print("  each run against the plain run of its round: " +
          ", ".join(f"{n} {median(r):.2f}x ({min(r):.2f}-{max(r):.2f})"
                    for n, r in ratios.items() if n != "plain (to the line)"))
    for name in [n for n, _ in tools if n.startswith("tdebug")]:
        t = median(times[name])
        ok_dpy = t <= median(times["debugpy (DAP)"])
        ok_pdb = t <= 1.2 * median(times["pdb"])
        print(f"  {name}: {'ok' if ok_dpy else 'LATER than'} debugpy's, "
              f"{'ok' if ok_pdb else 'OVER'} 1.2x pdb's "
              f"({t / median(times['pdb']):.2f}x)")


main()
