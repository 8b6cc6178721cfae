"""Hand a running Python program to a native debugger (gdb), from Python.

    import tdebug
    tdebug.wait_for_debugger(timeout=120)   # 'tdebug attach PID' elsewhere
    if tdebug.is_traced():
        tdebug.breakpoint()                 # stops here in gdb

The same handshake as the preloaded library that 'tdebug env' sets up: a
waiting process says so on stderr and announces itself to
'tdebug attach --wait'.  Attaching and continuing releases it.
"""
from tdebug._tdebug import (DEFAULT_TIMEOUT, Error, breakpoint, is_traced,
                            tracer_pid, wait_for_debugger)

__all__ = ["DEFAULT_TIMEOUT", "Error", "breakpoint", "is_traced", "tracer_pid",
           "wait_for_debugger"]
