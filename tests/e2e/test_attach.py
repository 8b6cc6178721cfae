"""tdebug attach against real processes: snapshots, breakpoints, detaching
safely.  The refusals (other users, tracers, ptrace_scope) are in
test_attach_refusals.py."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, SLOW, proc_state, run, tracer_of, wait_until
from pty_util import Terminal

TICKER = """
import os, sys, time
{imports}
print("ready", flush=True)
flag = sys.argv[1]
while not os.path.exists(flag):
    time.sleep(0.05)
os.getppid()            # the function the test breaks on, called once
print("after-flag", flush=True)
time.sleep(float(sys.argv[2]))
print("done", flush=True)
"""


def breakpoint_placed(pid, function):
    """Whether FUNCTION of libc starts with a breakpoint (int3) in PID: read
    from its memory, at the offset the function has in our own libc (the
    same file)."""
    import ctypes
    here = ctypes.cast(getattr(ctypes.CDLL(None), function), ctypes.c_void_p).value

    def libc_base(maps):
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and "/libc.so" in fields[5] and fields[2] == "00000000":
                return int(fields[0].split("-")[0], 16)
        return None
    with open("/proc/self/maps") as f:
        ours = libc_base(f)
    try:
        with open(f"/proc/{pid}/maps") as f:
            theirs = libc_base(f)
        with open(f"/proc/{pid}/mem", "rb") as m:
            m.seek(here - ours + theirs)
            return m.read(1) == b"\xcc"
    except (OSError, TypeError):
        return False


@pytest.fixture
def target(procs, tmp_path):
    """A Python process waiting for a flag file; returns (Popen, flag path)."""
    def start(imports="", linger=0.5):
        script = tmp_path / "target.py"
        script.write_text(TICKER.format(imports=imports))
        flag = tmp_path / "flag"
        p = procs.start([PYTHON, str(script), str(flag), str(linger)], stdout=subprocess.PIPE,
                        text=True)
        assert p.stdout.readline().strip() == "ready"
        return p, flag
    return start


def test_batch_snapshot_of_every_thread_then_detach(tdebug, target, torch_available):
    p, flag = target(imports="import torch", linger=0)
    r = run([tdebug, "attach", "--batch", str(p.pid)])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith(f"tdebug: attached to pid {p.pid}\n")
    assert "\nThread 1 (Thread 0x" in out and f"(LWP {p.pid})" in out
    assert " in time_sleep () from /usr/bin/python3.11" in out
    assert f'    File "{flag.parent / "target.py"}", line 7, in <module>' in out
    assert out.rstrip().endswith(f"tdebug: detached from pid {p.pid}")
    # Detached and running on: not stopped, not traced, still doing its work.
    assert tracer_of(p.pid) == 0
    flag.touch()
    assert p.stdout.readline().strip() == "after-flag"
    assert p.wait(timeout=SLOW) == 0


def test_json_snapshot(tdebug, target):
    p, flag = target()
    r = run([tdebug, "attach", "--json", str(p.pid)])
    assert r.returncode == 0, r.stderr
    events = [json.loads(l) for l in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["threads", "detached"]
    threads = events[0]["threads"]
    assert events[0]["pid"] == p.pid and len(threads) == 1
    funcs = [f["function"] for f in threads[0]["frames"]]
    assert "time_sleep" in funcs and "_PyEval_EvalFrameDefault" in funcs
    assert {"function": "<module>", "file": str(flag.parent / "target.py"), "line": 7} \
        in threads[0]["python_frames"]
    flag.touch()
    assert p.wait(timeout=SLOW) == 0


def test_break_in_running_process_then_it_finishes(tdebug, target, procs):
    p, flag = target()
    t = procs.start([tdebug, "attach", "--json", "--break", "getppid", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the breakpoint is in place (not a fixed time: gdb may
    # take long to place it on a loaded machine) and let the program run
    # into it.
    wait_until(lambda: breakpoint_placed(p.pid, "getppid"), what="gdb's breakpoint on getppid")
    flag.touch()
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 0, err
    events = [json.loads(l) for l in out.splitlines()]
    stops = [e for e in events if e["event"] == "stopped"]
    assert len(stops) == 1 and stops[0]["reason"] == "breakpoint"
    assert stops[0]["breakpoint"]["location"] == "getppid"
    assert stops[0]["frames"][0]["function"] in ("getppid", "__GI_getppid", "__getppid")
    assert events[-1]["event"] == "exited"
    assert p.wait(timeout=SLOW) == 0


def test_stopped_process_is_left_stopped(tdebug, target):
    p, flag = target()
    os.kill(p.pid, signal.SIGSTOP)
    wait_until(lambda: proc_state(p.pid) == "T", what="the target to stop")
    r = run([tdebug, "attach", "--batch", str(p.pid)])
    assert r.returncode == 0, r.stderr
    assert (f"tdebug: pid {p.pid} was stopped (SIGSTOP) before tdebug attached; it is left "
            f"stopped: 'kill -CONT {p.pid}' resumes it") in r.stdout
    assert proc_state(p.pid) == "T" and tracer_of(p.pid) == 0
    os.kill(p.pid, signal.SIGCONT)
    flag.touch()
    assert p.wait(timeout=SLOW) == 0


def test_module_already_imported_is_said_at_once(tdebug, target, torch_available):
    p, flag = target(imports="import torch")
    r = run([tdebug, "attach", "--batch", "--stop-at-import", "torch._C", str(p.pid)])
    assert r.returncode == 1
    assert (f"tdebug: warning: 'torch._C' is already imported in pid {p.pid} (") in r.stderr
    assert "its init ran before tdebug attached, so there is nothing to stop at" in r.stderr
    assert proc_state(p.pid) in ("S", "R") and tracer_of(p.pid) == 0


def test_ctrl_c_detaches_and_the_process_goes_on(tdebug, target, procs):
    p, flag = target()
    t = procs.start([tdebug, "attach", "--batch", "--break", "no_such_function_xyz", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(p.pid) != 0 and proc_state(p.pid) in ("S", "R"),
               what="the target to run under gdb")
    time.sleep(0.5)
    t.send_signal(signal.SIGINT)
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 130, err
    assert f"tdebug: detached from pid {p.pid}" in out
    assert tracer_of(p.pid) == 0 and proc_state(p.pid) in ("S", "R")
    flag.touch()
    assert p.wait(timeout=SLOW) == 0


def test_interactive_quit_detaches(tdebug, target):
    p, flag = target()
    term = Terminal([tdebug, "attach", str(p.pid)])
    try:
        term.expect(f"tdebug: attached to pid {p.pid}")
        term.expect("(tdebug) ")
        term.send("bt")
        assert "in time_sleep ()" in term.expect("(tdebug) ")
        term.send("quit")
        assert term.wait() == 0
    finally:
        term.close()
    assert tracer_of(p.pid) == 0
    flag.touch()
    assert p.wait(timeout=SLOW) == 0


@pytest.mark.parametrize("args, status, message", [
    (["--batch"], 2, "tdebug attach: which process? give its PID"),
    (["--batch", "12x"], 2, "tdebug attach: '12x' is not a process id"),
    (["--batch", "1", "2"], 2, "tdebug attach: one PID only"),
    (["--batch", "4194303"], 1, "tdebug: cannot attach to pid 4194303: no such process "
                                "('tdebug ps' lists the Python processes you can attach to)"),
])
def test_bad_pids(tdebug, args, status, message):
    r = run([tdebug, "attach"] + args)
    assert r.returncode == status
    assert message in r.stderr
