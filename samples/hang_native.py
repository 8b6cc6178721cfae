"""A hang in native code: two threads deadlocked in C, for attaching to.

tinytensor.faults.deadlock() starts a worker thread ("tt-deadlock") and
takes two locks in the opposite order to it (samples/tinytensor/csrc/core/
tt_faults.c): each thread holds one lock and waits for the other, forever.
The main thread holds the GIL while it waits, as native code that hangs
usually does, so no Python code runs again in this process.

Run it, note the pid it prints, then from another terminal
(P=/usr/bin/python3; build first with 'make'):

    tdebug attach PID
    tdebug stacks PID                   every thread, Python and native frames
    gdb -p PID -batch -ex 'thread apply all bt'

It never ends by itself: stop it with Ctrl-C or 'kill PID'.
"""
import os
import signal
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "samples", "tinytensor"))

import tinytensor.faults  # noqa: E402

# Python handles Ctrl-C by setting a flag that the interpreter checks
# between bytecodes, which a thread stuck in C never reaches: let the
# kernel's default action end the process instead.
signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_worker():
    tinytensor.faults.deadlock()  # never returns


def main():
    pid = os.getpid()
    print(f"hang_native.py: pid {pid} now deadlocks in native code; try 'tdebug attach {pid}' "
          f"or 'gdb -p {pid}'; stop it with Ctrl-C or 'kill {pid}'", flush=True)
    wait_for_worker()


main()
