"""A debugger's death never kills the program, and every way out ends the
session (issue 25): gdb and tdebug killed with SIGKILL at each phase of a
session with a Python breakpoint armed, and the program's output, exit
status and speed checked afterwards.  Real gdb, real tdebug, Debian's
python3; no mocks."""
import os
import signal
import subprocess
import textwrap

import pytest

from conftest import PYTHON, SLOW, comm_of, parent_of, proc_state, wait_until


def children_of(pid):
    """PIDs whose parent is PID."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and parent_of(int(entry)) == pid:
            out.append(int(entry))
    return out


def gdb_of(tdebug_pid):
    """The gdb a tdebug runs (its child named gdb)."""
    return wait_until(lambda: next((c for c in children_of(tdebug_pid) if comm_of(c) == "gdb"),
                                   None), what="tdebug's gdb")


# The program reads the hook's own word from the library gdb loaded into it
# (the same file dlopen()ed again is the same handle): lib/tdebug_pyhook.h.
HOOK_STATE = textwrap.dedent("""\
    import ctypes

    class _Control(ctypes.Structure):
        _fields_ = [("magic", ctypes.c_uint64), ("abi", ctypes.c_uint32),
                    ("size", ctypes.c_uint32), ("py_version", ctypes.c_uint32),
                    ("installed", ctypes.c_int32), ("disable", ctypes.c_int32),
                    ("mechanism", ctypes.c_int32), ("generation", ctypes.c_uint64),
                    ("applied_generation", ctypes.c_uint64), ("sync_slot", ctypes.c_uint64),
                    ("sync_eval_frame", ctypes.c_uint64), ("foreign_tracers", ctypes.c_int32),
                    ("n_breakpoints", ctypes.c_int32), ("traced_threads", ctypes.c_int32),
                    ("orphaned", ctypes.c_int32)]

    def hook_state():
        for line in open("/proc/self/maps"):
            if "libtdebug-pyhook" in line:
                lib = ctypes.CDLL(line.split()[-1])
                c = _Control.in_dll(lib, "tdebug_pyhook_control")
                return "installed=%d orphaned=%d" % (c.installed, c.orphaned)
        return "no hook"
""")

# Waits for FLAG, then runs the line with the Python breakpoint (in hit())
# and a C function with a native one (getppid), then says how the hook is.
ARMED = HOOK_STATE + textwrap.dedent("""\
    import os, sys, time

    def hit():
        return os.getppid()  # HIT

    print("ready", flush=True)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    hit()
    print("after the breakpoints:", hook_state(), flush=True)
    while not os.path.exists(sys.argv[1] + ".end"):
        time.sleep(0.01)
    print("done", flush=True)
""")


def hook_control(pid):
    """The address of the hook's control block in PID, or None when the hook
    is not loaded: the library's first mapping plus the symbol's value."""
    base = lib = None
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if "libtdebug-pyhook" in line and base is None:
                fields = line.split()
                base, lib = int(fields[0].split("-")[0], 16) - int(fields[2], 16), fields[-1]
    if lib is None:
        return None
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        check=True).stdout
    value = next(int(x.split()[0], 16) for x in nm.splitlines()
                 if x.endswith(" tdebug_pyhook_control"))
    return base + value


def hook_installed_now(pid):
    """control.installed, read from /proc/PID/mem (no debugger needed):
    None when the hook is not loaded."""
    addr = hook_control(pid)
    if addr is None:
        return None
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr + 20)  # magic, abi, size, py_version: then installed
        return int.from_bytes(f.read(4), "little", signed=True)


def line_with(text, marker):
    return next(i + 1 for i, line in enumerate(text.splitlines()) if marker in line)


@pytest.fixture
def armed(procs, tmp_path, tdebug, terminal):
    """A program tdebug attached to, with a Python breakpoint in hit() and a
    native one on getppid, running: (program, its flag file, the tdebug
    terminal)."""
    script = tmp_path / "armed.py"
    script.write_text(ARMED)
    flag = tmp_path / "flag"
    p = procs.start([PYTHON, str(script), str(flag)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send(f"break {script}:{line_with(ARMED, '# HIT')}")
    t.expect("(tdebug) ")
    t.send("break getppid")
    t.expect("(tdebug) ")
    t.send("continue")
    wait_until(lambda: hook_installed_now(p.pid) == 1 and proc_state(p.pid) in ("R", "S"),
               what="the hook installed and the program running")
    return p, flag, t


def finish(p, flag):
    """Let the program end; its output and exit status."""
    (flag.parent / (flag.name + ".end")).write_text("")
    out, _ = p.communicate(timeout=SLOW)
    return out, p.returncode


def test_gdb_killed_while_breakpoints_are_armed_leaves_the_program_running(armed):
    p, flag, t = armed
    gdb = gdb_of(t.proc.pid)
    os.kill(gdb, signal.SIGKILL)
    t.wait()  # tdebug ends with its gdb
    flag.write_text("")
    out, status = finish(p, flag)
    # Before: killed by the SIGTRAP of a breakpoint gdb left in the code
    # (status -5); now the program runs on, the hook disarmed.
    assert status == 0, out
    assert "after the breakpoints: installed=0 orphaned=1" in out
    assert "done" in out
