"""What stops at Python exceptions cost a program that raises nothing, on
the interpreters whose hook is a frame-evaluation hook and a trace
function (3.8-3.11; 3.12+ uses sys.monitoring): a call-heavy pure-Python
loop (recursive fib) under 'tdebug run' with --catch-raise (the user's
code), --catch-raise=ValueError (anywhere) and 'catch python-uncaught' +
'catch python-user-unhandled' at a first stop, against the plain program.

The loop times itself (the program prints its seconds), so gdb's start
and the program's own start are left out: the figure is what the hook
costs while the program runs.  Runs interleave (plain, each mode, ...),
medians, ratios to plain.  BENCH_BEFORE=/path/to/an/older/build puts that
build's tdebug beside this one's in the same rounds (before/after a
change).  Interpreters: $PYTHON and each pyenv CPython 3.8-3.12 with its
hook library built ('make pyhook-all'), or those BENCH_PYEXC_VERSIONS
names ("3.8 3.11")."""
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import BUILD, PYTHON

PROGRAM = """\
import sys, time

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def run():
    t = time.perf_counter()
    fib(int(sys.argv[1]))
    return time.perf_counter() - t

print("start")  # START
sys.stderr.write("LOOP %.6f\\n" % run())
"""

MODES = [
    ("--catch-raise (your code)", ["--catch-raise"], None),
    ("--catch-raise=ValueError (anywhere)", ["--catch-raise=ValueError"], None),
    ("catch python-uncaught + python-user-unhandled", ["-b", "prog.py:11"],
     "catch python-uncaught\ncatch python-user-unhandled\ncontinue\n"),
]


def version_of(python):
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return tuple(int(v) for v in out)


def interpreters():
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("pyenv") else os.path.expanduser("~/.pyenv")
    found = {version_of(PYTHON): PYTHON}
    for exe in sorted(glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3"))):
        v = version_of(exe)
        if (3, 8) <= v <= (3, 12) and v not in found:
            found[v] = exe
    return [(v, found[v]) for v in sorted(found)]


def loop_seconds(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    for line in (r.stderr + r.stdout).splitlines():
        if line.startswith("LOOP "):
            return float(line.split()[1])
    sys.exit(f"bench: no LOOP line from {' '.join(cmd)} (status {r.returncode}):\n"
             f"{r.stdout}\n{r.stderr}")


def main():
    rounds = int(os.environ.get("BENCH_PYEXC_ROUNDS", "7"))
    n = int(os.environ.get("BENCH_PYEXC_FIB", "27"))
    builds = [("", os.path.join(BUILD, "tdebug"))]
    if os.environ.get("BENCH_BEFORE"):
        builds.insert(0, ("before: ", os.path.join(os.environ["BENCH_BEFORE"], "tdebug")))
    print(f"== Python exception stops on a program that raises nothing: fib({n}), the loop's "
          f"own time, median of {rounds} interleaved rounds, ratio to plain")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "prog.py"), "w") as f:
            f.write(PROGRAM)
        with open(os.path.join(d, "cmds"), "w") as f:
            f.write(MODES[2][2])
        only = os.environ.get("BENCH_PYEXC_VERSIONS", "").split()
        for v, python in interpreters():
            if only and "%d.%d" % v not in only:
                continue
            lib = os.path.join(BUILD, "pyhook", "libtdebug-pyhook-cpython-%d%d.so" % v)
            if not os.path.exists(lib):
                print(f"  {v[0]}.{v[1]}: no hook library ({lib}): run 'make pyhook-all'")
                continue
            cands = [("plain", [python, "prog.py", str(n)])]
            for label, tdebug in builds:
                for name, args, cmds in MODES:
                    cands.append((label + name, [tdebug, "run", "--batch"] +
                                  (["-x", "cmds"] if cmds else []) + args +
                                  ["--", python, "prog.py", str(n)]))
            times = {name: [] for name, _ in cands}
            for _ in range(rounds):
                for name, cmd in cands:
                    times[name].append(loop_seconds(cmd, d))
            base = statistics.median(times["plain"])
            print(f"  CPython {v[0]}.{v[1]} ({python}): plain {base:.3f} s")
            for name, _ in cands[1:]:
                med = statistics.median(times[name])
                lo, hi = min(times[name]) / base, max(times[name]) / base
                print(f"    {name:<56} {med / base:5.2f}x  (runs {lo:.2f}-{hi:.2f}x)")


if __name__ == "__main__":
    main()
