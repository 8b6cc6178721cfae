"""What one stop costs (issue 27): 'next' between two Python lines, and
DAP 'stepIn' from a Python line into torch's C++, in one interleaved run
(tdebug, tdebug --json, tdebug dap, pdb, debugpy, tdebug, ...).

- 'next': a loop whose body alternates plain lines and lines calling torch;
  from the stop before to the stop 'next' makes.  tdebug at the prompt's
  text ('-x', the stop lines read as they arrive) and with --json; pdb
  driven on a pipe, from 'n' sent to its next prompt; debugpy and 'tdebug
  dap' driven by a small DAP client (tests/e2e/dap_util.py), from the
  request to the 'stopped' event, each stop then asked for its top frame
  (what VS Code asks first) outside the time.
- DAP 'stepIn' at 'z = torch.add(x, x)' into at::_ops::add_Tensor::call,
  request to 'stopped', against the CLI's 'step' (the first of a session,
  which reads libtorch's symbols, apart).
The stops of 'tdebug --json' between Python lines are partial, as the
prompt's: their events carry the Python frames alone.
Medians over BENCH_RUNS rounds (default 3) of BENCH_NEXTS nexts (24) and
BENCH_STEPS steps (6); ratios to pdb and debugpy.  BENCH_BASELINE=PATH adds
another tdebug binary (an older build) to the same rounds, for a before and
after on one loaded machine.  Targets: 'next' under 5 ms median,
DAP stepIn under 100 ms median."""
import json
import os
import select
import subprocess
import sys
import tempfile
import time

from benchlib import (PYTHON, TDEBUG, DebugpyListen, TdebugDap, first_stop, json_stops, line_of,
                      load)
from benchlib import median as med

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
NEXTS = int(os.environ.get("BENCH_NEXTS", "24"))
STEPS = int(os.environ.get("BENCH_STEPS", "6"))
BASELINE = os.environ.get("BENCH_BASELINE")

NEXT_PROGRAM = r'''
import torch
x = torch.ones(2)
a = 0
for i in range(1000):
    a = a + 1                                 # BREAK
    z = torch.add(x, x)                       # TORCH
    b = a * 2
'''
STEP_PROGRAM = r'''
import torch
x = torch.ones(2)
for i in range(1000):
    z = torch.add(x, x)                       # BREAK
'''


def split(times, kinds):
    """{kind: [ms]} of the nexts whose line before was of that kind."""
    out = {"plain": [], "torch": []}
    for t, k in zip(times, kinds):
        out[k].append(t)
    return out


def kind_of(line, torch_line):
    return "torch" if line == torch_line else "plain"


def tdebug_cli(path, json_out, tdebug=TDEBUG):
    """ms of each 'next', by the kind of line it went over."""
    torch_line = line_of(NEXT_PROGRAM, "# TORCH")
    cmds = tempfile.NamedTemporaryFile("w", suffix=".cmds", delete=False)
    cmds.write("delete 1\n" + "next\n" * NEXTS + "kill\n")  # the loop hits it no more
    cmds.close()
    p = subprocess.Popen([tdebug, "run"] + (["--json"] if json_out else []) +
                         ["-x", cmds.name, "-b", f"{path}:{line_of(NEXT_PROGRAM, '# BREAK')}",
                          "--", PYTHON, path],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stops = []  # (time, line)
    for out in p.stdout:
        now = time.perf_counter()
        if json_out:
            e = json.loads(out)
            if e.get("event") == "stopped":
                stops.append((now, e["stack"][0].get("line")))
        elif out.startswith("tdebug: stopped at") or out.startswith("tdebug: next: File"):
            stops.append((now, int(out.split(", line ")[1].split(",")[0])
                          if ", line " in out else line_of(NEXT_PROGRAM, "# BREAK")))
    p.wait()
    os.unlink(cmds.name)
    times = [1000 * (stops[i][0] - stops[i - 1][0]) for i in range(1, len(stops))]
    kinds = [kind_of(stops[i - 1][1], torch_line) for i in range(1, len(stops))]
    return split(times, kinds)


def pdb(path):
    torch_line = line_of(NEXT_PROGRAM, "# TORCH")
    p = subprocess.Popen([PYTHON, "-m", "pdb", path], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    buf = b""

    def until_prompt():
        nonlocal buf
        deadline = time.monotonic() + 120
        while b"(Pdb) " not in buf:
            if time.monotonic() > deadline or not select.select([p.stdout], [], [], 120)[0]:
                sys.exit("bench: pdb gave no prompt")
            chunk = os.read(p.stdout.fileno(), 65536)
            if not chunk:
                sys.exit("bench: pdb ended")
            buf += chunk
        text, buf = buf.split(b"(Pdb) ", 1)
        return text.decode(errors="replace")

    until_prompt()
    p.stdin.write(f"b {path}:{line_of(NEXT_PROGRAM, '# BREAK')}\nc\n".encode())
    until_prompt()
    until_prompt()
    p.stdin.write(b"cl 1\n")
    until_prompt()
    line = line_of(NEXT_PROGRAM, "# BREAK")
    times, kinds = [], []
    for _ in range(NEXTS):
        t = time.perf_counter()
        p.stdin.write(b"n\n")
        text = until_prompt()
        times.append(1000 * (time.perf_counter() - t))
        kinds.append(kind_of(line, torch_line))
        # "> /path(7)<module>()"
        at = text.rsplit(f"{path}(", 1)
        line = int(at[1].split(")")[0]) if len(at) == 2 else line
    p.kill()
    p.wait()
    return split(times, kinds)


def dap_loop(client, tid, request, count, line, torch_line, after):
    """Send REQUEST COUNT times; ms of each, by the kind of line before."""
    times, kinds = [], []
    i = after
    for _ in range(count):
        t = time.perf_counter()
        client.request(request, {"threadId": tid})
        i, _ = client.next_event(("stopped",), timeout=120, after=i + 1)
        times.append(1000 * (time.perf_counter() - t))
        kinds.append(kind_of(line, torch_line))
        top = client.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})
        line = top["body"]["stackFrames"][0]["line"]
        if request == "stepIn":
            client.request("continue", {"threadId": tid})
            i, _ = client.next_event(("stopped",), timeout=120, after=i + 1)
            line = None
    return times, kinds, i


def tdebug_dap(path, program, request, count, tdebug=TDEBUG):
    marker = line_of(program, "# BREAK")
    with TdebugDap(path, tdebug=tdebug) as d:
        c = d.client
        i, tid = first_stop(c, d.launch, path, [marker])
        if request == "next":
            c.set_breakpoints(path, [])
        times, kinds, _ = dap_loop(c, tid, request, count, marker,
                                   line_of(NEXT_PROGRAM, "# TORCH"), i)
        return times, kinds


def debugpy(path):
    marker = line_of(NEXT_PROGRAM, "# BREAK")
    with DebugpyListen([path]) as d:
        client = d.client
        i, tid = first_stop(client, d.attach, path, [marker])
        client.set_breakpoints(path, [])
        times, kinds, _ = dap_loop(client, tid, "next", NEXTS, marker,
                                   line_of(NEXT_PROGRAM, "# TORCH"), i)
        return split(times, kinds)


def cli_steps(path):
    """ms of each CLI 'step' from the line into torch's operator."""
    stops = json_stops(["step", "continue"] * STEPS + ["kill"],
                       f"{path}:{line_of(STEP_PROGRAM, '# BREAK')}", [PYTHON, path])
    return [1000 * (t - stops[i - 1][0]) for i, (t, e) in enumerate(stops)
            if i and e["reason"] == "step"]


def main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-next-")
    nxt = os.path.join(d, "nexts.py")
    stp = os.path.join(d, "steps.py")
    with open(nxt, "w") as f:
        f.write(NEXT_PROGRAM)
    with open(stp, "w") as f:
        f.write(STEP_PROGRAM)
    tools = [("tdebug (prompt)", lambda: tdebug_cli(nxt, False)),
             ("tdebug --json", lambda: tdebug_cli(nxt, True)),
             ("tdebug dap", lambda: split(*tdebug_dap(nxt, NEXT_PROGRAM, "next", NEXTS))),
             ("pdb", lambda: pdb(nxt)),
             ("debugpy (DAP)", lambda: debugpy(nxt))]
    if BASELINE:
        tools += [("baseline (prompt)", lambda: tdebug_cli(nxt, False, BASELINE)),
                  ("baseline --json", lambda: tdebug_cli(nxt, True, BASELINE)),
                  ("baseline dap", lambda: split(*tdebug_dap(nxt, NEXT_PROGRAM, "next", NEXTS,
                                                             BASELINE)))]
    nexts = {name: {"plain": [], "torch": []} for name, _ in tools}
    steps = {"tdebug dap stepIn": [], "tdebug run step": []}
    firsts = {"tdebug dap stepIn": [], "tdebug run step": []}
    for _ in range(RUNS):
        for name, fn in tools:
            got = fn()
            for k in got:
                nexts[name][k] += got[k]
        t, _ = tdebug_dap(stp, STEP_PROGRAM, "stepIn", STEPS)
        firsts["tdebug dap stepIn"].append(t[0])
        steps["tdebug dap stepIn"] += t[1:]
        t = cli_steps(stp)
        firsts["tdebug run step"].append(t[0])
        steps["tdebug run step"] += t[1:]
    print(f"({load()} at the end)")
    pdb_ = {k: med(nexts["pdb"][k]) for k in ("plain", "torch")}
    dpy = {k: med(nexts["debugpy (DAP)"][k]) for k in ("plain", "torch")}
    print(f"== 'next' between two Python lines, ms (median of {RUNS} interleaved rounds "
          f"of {NEXTS}; target < 5 ms)")
    print(f"  {'':<18} {'plain line':>12} {'torch line':>12}   ratio to pdb    to debugpy")
    for name, _ in tools:
        p, t = med(nexts[name]["plain"]), med(nexts[name]["torch"])
        print(f"  {name:<18} {p:12.1f} {t:12.1f}   {p / pdb_['plain']:6.1f}x {t / pdb_['torch']:6.1f}x"
              f"  {p / dpy['plain']:5.2f}x {t / dpy['torch']:5.2f}x")
    print(f"== step from 'z = torch.add(x, x)' into at::_ops::add_Tensor::call, ms "
          f"(median of {RUNS} x {STEPS - 1}; target for DAP < 100 ms)")
    cli = med(steps["tdebug run step"])
    for name in steps:
        m = med(steps[name])
        print(f"  {name:<20} median {m:7.1f} (range {min(steps[name]):.0f}-{max(steps[name]):.0f})"
              f"  {m / cli:4.2f}x the CLI's   first of a session (symbols read) "
              f"{med(firsts[name]):.0f} ms")


main()
