"""'tdebug stacks --core' against gdb's 'thread apply all py-bt' on the same
core (a core of Debian's python3 written by gcore; python3-dbg gives gdb
its py-bt), and 'tdebug stacks' on CPython 3.12 and 3.13 processes against
a 3.11 one (pyenv's interpreters): the reader's cost should not depend on
the version.  Same run, interleaved medians (bench/benchlib.py), ratios
printed.  A version not on the machine is left out, saying so."""
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, TDEBUG, compare

# Four threads, each 40 Python frames deep, asleep.
TARGET = r"""
import threading, time
def deep(n):
    if n == 0:
        time.sleep(100000)
    return deep(n - 1)
for i in range(3):
    threading.Thread(target=deep, args=(40,), daemon=True).start()
print("ready", flush=True)
deep(40)
"""


def start(python):
    p = subprocess.Popen([python, "-c", TARGET], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.monotonic() + 120
    buf = b""
    while b"ready" not in buf:
        if time.monotonic() > deadline or p.poll() is not None:
            sys.exit(f"bench: {python} did not start the target")
        if select.select([p.stdout], [], [], 1.0)[0]:
            buf += os.read(p.stdout.fileno(), 4096)
    time.sleep(0.5)  # into time.sleep in every thread
    return p


def stop(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def pyenv_python(version):
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("pyenv") else os.path.expanduser("~/.pyenv")
    versions = os.path.join(root, "versions")
    for v in sorted(os.listdir(versions)) if os.path.isdir(versions) else []:
        exe = os.path.join(versions, v, "bin", "python" + version)
        if v.startswith(version + ".") and os.access(exe, os.X_OK):
            return exe
    return None


def core_vs_gdb():
    p = start(PYTHON)
    tmp = tempfile.mkdtemp(prefix="tdebug-bench-")
    try:
        r = subprocess.run(["gcore", "-o", os.path.join(tmp, "core"), str(p.pid)],
                           capture_output=True)
        core = os.path.join(tmp, f"core.{p.pid}")
        if r.returncode != 0 or not os.path.exists(core):
            sys.exit("bench: gcore failed: " + r.stderr.decode(errors="replace"))
        stop(p)
        gdb = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off",
               "-ex", "thread apply all py-bt", os.path.realpath(PYTHON), core]
        out = subprocess.run(gdb, capture_output=True, text=True).stdout
        if out.count("in deep") < 40:
            sys.exit("bench: gdb's py-bt does not read the core (python3-dbg missing?)")
        compare("a core of 4 threads x 41 Python frames: gdb py-bt vs tdebug stacks --core",
                [("gdb -batch -ex 'thread apply all py-bt'", gdb),
                 ("tdebug stacks --core", [TDEBUG, "stacks", "--core", core])])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def versions():
    pythons = [(v, pyenv_python(v)) for v in ("3.11", "3.12", "3.13")]
    missing = [v for v, exe in pythons if not exe]
    if pythons[0][1] is None:
        print("== stacks by version: skipped (no pyenv CPython 3.11 to compare with)")
        return
    if missing:
        print(f"== stacks by version: no CPython {', '.join(missing)} here, left out")
    procs = [(v, start(exe)) for v, exe in pythons if exe]
    try:
        compare("tdebug stacks of 4 threads x 41 frames, by CPython version",
                [(f"tdebug stacks (CPython {v})", [TDEBUG, "stacks", str(p.pid)])
                 for v, p in procs])
    finally:
        for _, p in procs:
            stop(p)


core_vs_gdb()
versions()
