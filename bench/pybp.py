"""Python breakpoints by the number armed (issue 27): a call-heavy loop
(recursive fib) that never hits any of them, with 1, 64, 1,000 and 10,000
breakpoints armed in a module it imports (on functions it never calls),
under tdebug, pdb and debugpy, against the plain program, in one run
(interleaved: plain, tdebug, pdb, debugpy, plain, ...).  The program times
its own loop (what a user's code pays, start-up left out) and writes it to
a file; the whole command is timed too (arming N breakpoints included).
debugpy is driven as VS Code's attach does: 'python -m debugpy --listen
--wait-for-client', a small DAP client (tests/e2e/dap_util.py) sends
setBreakpoints with the N lines, then configurationDone (a debugpy that
does not answer it within BENCH_ARM_TIMEOUT seconds is said so, and its
later rounds at that N are skipped).
Target: 10,000 breakpoints within 1.1x of one (tdebug's loop).
Then 'import torch' with one Python breakpoint armed on a line it never
runs, the whole command timed: plain, tdebug's light session, tdebug with
TDEBUG_LIGHT=0, pdb and debugpy, interleaved, each run a ratio to the plain
run beside it (target: tdebug at most 1.1x); and what making a light
session an ordinary one costs at a Python stop (a gdb command typed there),
from gdb's MI trace.
BENCH_RUNS, BENCH_BPS (1,64,1000,10000), BENCH_FIB (25), BENCH_TOOLS
(tdebug,pdb,debugpy), BENCH_ARM_TIMEOUT (300 s) and BENCH_PARTS (loop,import)
change the run."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import (PYTHON, TDEBUG, DapError, DebugpyListen, load, median, per_round_ratios,
                      rounds)

RUNS = int(os.environ.get("BENCH_RUNS", "3"))
COUNTS = [int(n) for n in os.environ.get("BENCH_BPS", "1,64,1000,10000").split(",")]
FIB = int(os.environ.get("BENCH_FIB", "25"))
MAX_BPS = max(COUNTS)
# debugpy answers setBreakpoints with 10,000 lines slowly: past this, its
# cell says so and the run goes on
ARM_TIMEOUT = int(os.environ.get("BENCH_ARM_TIMEOUT", "300"))

LOOP = r'''
import sys, time
import never
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
t = time.perf_counter()
fib(%d)
with open(sys.argv[1], "w") as f:
    f.write(str(time.perf_counter() - t))
''' % FIB


def never_module(n):
    """N functions never called: the body of fK is on line 2K+2."""
    return "".join(f"def f{k}():\n    return {k}\n" for k in range(n))


def body_lines(n):
    return [2 * k + 2 for k in range(n)]


def timed(cmd, out, **kw):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)
    total = time.perf_counter() - t
    try:
        with open(out) as f:
            work = float(f.read())
    except (OSError, ValueError):
        sys.exit(f"bench: {' '.join(cmd[:6])} ... failed ({r.returncode}): {r.stderr[-500:]}")
    os.unlink(out)
    return work, total


def run_plain(d, n, out):
    return timed([PYTHON, os.path.join(d, "loop.py"), out], out)


def run_tdebug(d, n, out):
    never = os.path.join(d, "never.py")
    args = [a for line in body_lines(n) for a in ("-b", f"{never}:{line}")]
    return timed([TDEBUG, "run", "--batch"] + args + ["--", PYTHON, os.path.join(d, "loop.py"),
                                                       out], out)


def run_pdb(d, n, out):
    # .pdbrc in the working directory: the breakpoints, then continue
    with open(os.path.join(d, ".pdbrc"), "w") as f:
        f.write("".join(f"break never.py:{line}\n" for line in body_lines(n)) + "continue\n")
    try:
        return timed([PYTHON, "-m", "pdb", "loop.py", out], out, cwd=d,
                     stdin=subprocess.DEVNULL)
    finally:
        os.unlink(os.path.join(d, ".pdbrc"))


def run_debugpy(d, n, out):
    total = debugpy_run([os.path.join(d, "loop.py"), out], os.path.join(d, "never.py"),
                        body_lines(n))
    if total is None:
        return None, None
    with open(out) as f:
        work = float(f.read())
    os.unlink(out)
    return work, total


def debugpy_run(argv, bp_file, lines):
    """'python -m debugpy --listen --wait-for-client ARGV', attached by a DAP
    client that sets breakpoints on LINES of BP_FILE: the whole time, or
    None when debugpy did not arm them in time."""
    t = time.perf_counter()
    with DebugpyListen(argv) as d:
        try:
            d.client.request("setBreakpoints", {
                "source": {"path": bp_file},
                "breakpoints": [{"line": line} for line in lines]}, timeout=ARM_TIMEOUT)
        except DapError:
            return None
        d.client.configuration_done()
        d.client.wait_response(d.attach)
        d.server.wait(600)
        return time.perf_counter() - t


CANDIDATES = [("plain", run_plain), ("tdebug", run_tdebug), ("pdb", run_pdb),
              ("debugpy", run_debugpy)]
# BENCH_TOOLS=tdebug,pdb: only those (and plain, always first)
TOOLS = os.environ.get("BENCH_TOOLS")
if TOOLS:
    CANDIDATES = [c for c in CANDIDATES if c[0] == "plain" or c[0] in TOOLS.split(",")]


def loop_main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-pybp-")
    with open(os.path.join(d, "loop.py"), "w") as f:
        f.write(LOOP)
    with open(os.path.join(d, "never.py"), "w") as f:
        f.write(never_module(MAX_BPS))
    out = os.path.join(d, "work")
    work = {(c, n): [] for c, _ in CANDIDATES for n in COUNTS}
    total = {(c, n): [] for c, _ in CANDIDATES for n in COUNTS}
    gave_up = set()
    for _ in range(RUNS):
        for n in COUNTS:
            for name, fn in CANDIDATES:
                if (name, n) in gave_up:
                    continue
                w, t = fn(d, n, out)
                if w is None:
                    gave_up.add((name, n))
                if w is not None:
                    work[(name, n)].append(w)
                    total[(name, n)].append(t)
    print(f"== fib({FIB}) with N Python breakpoints armed that never hit "
          f"(median of {RUNS} interleaved runs; loop time, ratio to plain; whole command)")
    print(f"  {'N':>6}  " + "  ".join(f"{c:>24}" for c, _ in CANDIDATES))
    for n in COUNTS:
        base = statistics.median(work[("plain", n)])
        cells = []
        for c, _ in CANDIDATES:
            if not work[(c, n)]:
                cells.append(f"not armed in {ARM_TIMEOUT} s")
                continue
            w, t = statistics.median(work[(c, n)]), statistics.median(total[(c, n)])
            cells.append(f"{w:6.3f}s {w / base:5.2f}x {t:6.2f}s")
        print(f"  {n:>6}  " + "  ".join(f"{x:>24}" for x in cells))
    one = statistics.median(work[("tdebug", COUNTS[0])])
    most = statistics.median(work[("tdebug", COUNTS[-1])])
    print(f"  tdebug: {COUNTS[-1]} breakpoints / {COUNTS[0]}: {most / one:.2f}x "
          f"(target <= 1.1x)")


# 'import torch', then a function never called: its body is the breakpoint.
TORCH = """\
import torch
x = torch.ones(2) + 1
def never():
    return 1
print(x.tolist())
"""
NEVER_LINE = 4


def wall(cmd, env=None, cwd=None, ok=(0,)):
    """CMD's wall time; it must exit with a status in OK ('tdebug run
    --batch' exits 1 when a breakpoint was never hit, and says so)."""
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       env=env, cwd=cwd, stdin=subprocess.DEVNULL)
    if r.returncode not in ok:
        sys.exit(f"bench: {' '.join(cmd[:6])} ... failed ({r.returncode}): {r.stderr[-500:]}")
    return time.perf_counter() - t


def upgrade_seconds(trace):
    """From gdb's MI trace of a light session made ordinary at a Python stop:
    the upgrade's time, from its first command (the interpreter's symbols)
    to the answer that read the hook's.  gdb's answers come in pieces split
    anywhere (one byte a line of the trace when the machine is loaded): the
    answer is where what gdb sent after the command, its line ends left
    out, first holds the command's token and '^'."""
    start = None
    token = None
    now = 0.0
    got = ""
    for line in open(trace, errors="replace"):
        fields = line.split(None, 2)
        timed = len(fields) >= 2 and fields[1] in ("->", "<-")
        if timed:
            now = float(fields[0])
        if timed and fields[1] == "->":
            text = fields[2] if len(fields) > 2 else ""
            if start is None and "debug-file-directory" in text and "-gdb-show" in text:
                start = now
            elif start is not None and token is None and "sharedlibrary /libtdebug-pyhook" in text:
                token = text.split("-", 1)[0]
            continue
        if token:
            piece = line.split(" <- ", 1)[1] if timed and " <- " in line else line
            got = got[-64:] + piece.replace("\n", "")
            if re.search(r"(?<![0-9])" + token + r"\^", got):
                return now - start
    return None


def import_main():
    d = tempfile.mkdtemp(prefix="tdebug-bench-pybp-torch-")
    script = os.path.join(d, "train.py")
    with open(script, "w") as f:
        f.write(TORCH)
    with open(os.path.join(d, ".pdbrc"), "w") as f:
        f.write(f"break train.py:{NEVER_LINE}\ncontinue\n")
    light_env = {k: v for k, v in os.environ.items() if k != "TDEBUG_LIGHT"}
    bp = ["-b", f"{script}:{NEVER_LINE}"]
    candidates = [
        ("plain", lambda: wall([PYTHON, script])),
        ("tdebug (light)", lambda: wall([TDEBUG, "run", "--batch", *bp, "--", PYTHON, script],
                                        env=light_env, ok=(0, 1))),
        ("tdebug TDEBUG_LIGHT=0", lambda: wall([TDEBUG, "run", "--batch", *bp, "--", PYTHON, script],
                                               env=dict(light_env, TDEBUG_LIGHT="0"), ok=(0, 1))),
        ("pdb", lambda: wall([PYTHON, "-m", "pdb", "train.py"], cwd=d)),
        ("debugpy", lambda: debugpy_run([script], script, [NEVER_LINE])),
    ]
    candidates = [c for c in candidates if c[0] == "plain" or c[0].split()[0] in
                  (TOOLS.split(",") if TOOLS else ["tdebug", "pdb", "debugpy"])]
    times = rounds(candidates, RUNS)
    ratios = per_round_ratios(times, "plain")
    print(f"== import torch, one Python breakpoint armed and never hit (median of {RUNS} "
          f"interleaved runs; each run's ratio to the plain run beside it; {load()})")
    for name, _ in candidates:
        r = ratios[name]
        if not r:
            print(f"  {name:<24} not armed in {ARM_TIMEOUT} s")
            continue
        print(f"  {name:<24} {median(times[name]):6.2f} s  "
              f"{median(r):5.2f}x  (runs {min(r):.2f}-{max(r):.2f}x)")

    # The upgrade: a Python stop after 'import torch', then a gdb command.
    cmds = os.path.join(d, "cmds")
    with open(cmds, "w") as f:
        f.write("info sharedlibrary pyhook\ncontinue\n")
    trace = os.path.join(d, "mi.trace")
    ups = []
    for _ in range(RUNS):
        if os.path.exists(trace):
            os.unlink(trace)
        wall([TDEBUG, "run", "-x", cmds, "-b", f"{script}:2", "--", PYTHON, script],
             env=dict(light_env, TDEBUG_TRACE_MI=trace))
        up = upgrade_seconds(trace)
        if up is not None:
            ups.append(up)
    if ups:
        print(f"  light session made ordinary at a Python stop after import torch: "
              f"{statistics.median(ups):.2f} s median (runs {min(ups):.2f}-{max(ups):.2f} s)")


PARTS = os.environ.get("BENCH_PARTS", "loop,import").split(",")
if "loop" in PARTS:
    loop_main()
if "import" in PARTS:
    import_main()
