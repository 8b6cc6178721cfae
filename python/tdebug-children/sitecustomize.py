"""Python children wait for their debugger (tdebug's child sessions).

A program tdebug launches with children followed ('tdebug dap': the launch's
"subProcess"; 'tdebug run --wait-children') has this directory first on
its PYTHONPATH and TDEBUG_CHILDREN_WAIT=SECONDS in its environment.  Python
runs this file as it starts (the site module imports 'sitecustomize'), then
the one it hides (Debian's: apport's hook).

- In the program itself (TDEBUG_CHILDREN_OF is not set yet) it sets
  TDEBUG_CHILDREN_OF to the program's pid, which every child inherits, and
  nothing else.
- In a Python child (subprocess, multiprocessing's spawn and forkserver,
  and theirs: TDEBUG_CHILDREN_OF is set), and in a process forked from any
  of them without exec (os.fork, multiprocessing's fork, a DataLoader's
  workers: os.register_at_fork), it waits before the user's code runs until
  a debugger has attached and let it run: tdebug's child session attaches
  (the process stops), places the breakpoints, and continues it once its
  client said configurationDone ('tdebug attach PID' lets it run to its
  stops, or a moment before it detaches: src/session/attach.c).  So a
  breakpoint on the first line of a child's script is hit.  After SECONDS without a debugger (the time the
  process was stopped not counted) it says so on stderr and goes on.

Only the standard library; the wait polls the kernel's TracerPid every 5 ms.
"""
import os
import sys
import time

_CHILDREN_OF = "TDEBUG_CHILDREN_OF"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _traced():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return int(line.split()[1]) != 0
    except (OSError, ValueError):
        pass
    return False


def _wait_for_debugger():
    try:
        seconds = float(os.environ.get("TDEBUG_CHILDREN_WAIT", "0"))
    except ValueError:
        return
    if seconds <= 0 or _traced():
        return
    last = time.monotonic()
    deadline = last + seconds
    while not _traced():
        time.sleep(0.005)
        now = time.monotonic()
        if now - last > 0.5:  # stopped meanwhile: that time is not ours
            deadline += now - last
        last = now
        if now >= deadline:
            sys.stderr.write(f"tdebug: pid {os.getpid()} waited {seconds:g} s for a debugger "
                             f"and goes on without one\n")
            sys.stderr.flush()
            return


def _run_hidden_sitecustomize():
    """The sitecustomize this file hides on sys.path, run as Python would.
    With the import system's own finder, already loaded: importlib.util
    would cost a program's start about 30 ms of imports."""
    finder = sys.modules["_frozen_importlib_external"].PathFinder
    spec = finder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.loader is None:
        return
    module = type(sys)(spec.name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # as site.py does for its own import of it
        sys.stderr.write(f"Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                         f"{type(e).__name__}: {e}\n")


def _main():
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    if os.environ.get(_CHILDREN_OF):
        _wait_for_debugger()
    else:
        os.environ[_CHILDREN_OF] = str(os.getpid())
    os.register_at_fork(after_in_child=_wait_for_debugger)


_main()
_run_hidden_sitecustomize()
