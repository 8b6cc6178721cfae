"""Failures on purpose, for the samples that show a debugger at work.

A crash needs no helper: tinytensor.from_blob() trusts the address it is
given, as torch's from_blob does, so a wrong one crashes at the first read
(samples/crash_native.py).
"""
from tinytensor import _C


def deadlock():
    """Deadlock in C and never return: this thread takes lock A then waits
    for B while a worker thread ("tt-deadlock") holds B and waits for A.
    The GIL stays held, so no Python code runs again; SIGTERM or SIGKILL
    ends the process (samples/hang_native.py also lets Ctrl-C do it)."""
    _C._deadlock()
