"""tdebug attach on real debugpy layouts (the pid given is the adapter or the
launcher, tdebug ends up in the debuggee) and every refusal, for real:
tdebug run as an unprivileged user, without CAP_SYS_PTRACE, against a
process already traced, a zombie, a kernel thread, a program that is not
Python.  Each refusal says why and what to do, and leaves the process
exactly as it was."""
import json
import subprocess

from conftest import proc_state, run, tracer_of
from debugpy_util import LaunchLayout, ListenLayout, PlainProgram
from proc_util import ROOT_NO_PTRACE_CAP, held_with_ptrace, start_waiter, start_zombie


def snapshot(tdebug, pid, prefix=()):
    return run(list(prefix) + [tdebug, "attach", "--json", str(pid)])


def threads_event(r):
    events = [json.loads(l) for l in r.stdout.splitlines()]
    assert events[0]["event"] == "threads"
    return events[0]


def untouched(pid):
    assert tracer_of(pid) == 0
    assert proc_state(pid) in ("S", "R")


def test_launcher_and_adapter_resolve_to_the_debuggee(tdebug, procs, tmp_path):
    with LaunchLayout(procs, tmp_path) as lay:
        for given, role in ((lay.launcher_pid, "launcher"), (lay.adapter_pid, "adapter")):
            r = snapshot(tdebug, given)
            assert r.returncode == 0, r.stderr
            assert r.stderr.startswith(f"tdebug: pid {given} is the debugpy {role}; attaching to ")
            assert str(lay.debuggee_pid) in r.stderr.splitlines()[0]
            ev = threads_event(r)
            assert ev["pid"] == lay.debuggee_pid
            # The user's program is in there, under debugpy's own threads.
            files = [f.get("file") for t in ev["threads"] for f in (t["python_frames"] or [])]
            assert any(f and f.endswith(f"launch_{lay.port}.py") for f in files), files
            untouched(lay.debuggee_pid)


def test_listen_adapter_resolves_to_the_server(tdebug, procs, tmp_path):
    with ListenLayout(procs, tmp_path) as lay:
        r = snapshot(tdebug, lay.adapter_pid)
        assert r.returncode == 0, r.stderr
        assert threads_event(r)["pid"] == lay.debuggee_pid
        untouched(lay.debuggee_pid)


def test_adapter_with_two_programs_lists_them_and_stops(tdebug, procs, tmp_path):
    with LaunchLayout(procs, tmp_path, child=True) as lay:
        r = snapshot(tdebug, lay.adapter_pid)
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot choose the process behind pid "
                                   f"{lay.adapter_pid} (the debugpy adapter): 2 programs")
        assert str(lay.debuggee_pid) in r.stderr and str(lay.child_pid) in r.stderr
        assert r.stdout == ""


def test_another_users_process(tdebug, procs, tmp_path, as_nobody):
    with PlainProgram(procs, tmp_path) as prog:
        r = snapshot(tdebug, prog.debuggee_pid, prefix=as_nobody)
        assert r.returncode == 1
        assert r.stderr == (f"tdebug: cannot attach to pid {prog.debuggee_pid}: it runs as user "
                            f"'root' and tdebug runs as 'nobody' (run tdebug as root, e.g. "
                            f"'sudo tdebug attach {prog.debuggee_pid}')\n")
        untouched(prog.debuggee_pid)


def test_no_cap_sys_ptrace(tdebug, procs, as_nobody):
    theirs = start_waiter(procs, prefix=as_nobody)
    r = snapshot(tdebug, theirs.pid, prefix=ROOT_NO_PTRACE_CAP)
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot attach to pid {theirs.pid}: it runs as user "
                               "'nobody' and tdebug runs as root without CAP_SYS_PTRACE")
    untouched(theirs.pid)
    # Own user, nothing missing: it works.
    mine = start_waiter(procs, prefix=as_nobody)
    r = snapshot(tdebug, mine.pid, prefix=as_nobody)
    assert r.returncode == 0, r.stderr
    assert threads_event(r)["pid"] == mine.pid
    untouched(mine.pid)


def test_already_traced(tdebug, procs, tmp_path):
    with PlainProgram(procs, tmp_path) as prog:
        with held_with_ptrace(procs, prog.debuggee_pid) as holder:
            r = snapshot(tdebug, prog.debuggee_pid)
            assert r.returncode == 1
            assert r.stderr.startswith(f"tdebug: cannot attach to pid {prog.debuggee_pid}: it is "
                                       f"already traced by pid {holder.pid} (ptrace-holder)")
            assert tracer_of(prog.debuggee_pid) == holder.pid


def test_zombie_kernel_thread_and_not_python(tdebug, procs):
    parent, zombie = start_zombie(procs)
    r = snapshot(tdebug, zombie)
    assert r.returncode == 1 and "zombie" in r.stderr
    r = snapshot(tdebug, 2)
    assert r.returncode == 1
    assert r.stderr.startswith("tdebug: cannot attach to pid 2: it is a kernel thread")
    sleeper = procs.start(["sleep", "600"], stdout=subprocess.DEVNULL)
    r = snapshot(tdebug, sleeper.pid)
    assert r.returncode == 1
    assert f"tdebug: cannot attach to pid {sleeper.pid}: " in r.stderr
    assert "not a Python" in r.stderr or "not Python" in r.stderr
    assert tracer_of(sleeper.pid) == 0
