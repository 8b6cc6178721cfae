"""'tdebug attach --wait': real programs started with the preloaded library
pause at torch._C and announce themselves; tdebug (started first) attaches,
stops in PyInit__C before the init runs, and the program then runs to its
normal end.  Timeouts, Ctrl-C, refusals and the interactive prompt."""
import json
import signal

from conftest import proc_state, run, tracer_of
from paused_util import TORCH_PROGRAM, Waiter, seize, tdebug_env
from preload_util import (RELEASE, finish, gdb_batch, preload_env, python_args, start,
                          wait_announced)
from pty_util import Terminal

PYINIT_FRAME = " in PyInit__C () from "


def test_waits_then_stops_in_pyinit_and_the_program_ends_normally(tdebug, tmp_path, procs,
                                                                   torch_available):
    w = Waiter(procs, tdebug, tmp_path, "--batch")
    m = w.listening()
    assert str(tmp_path / "announce") in m.string
    assert (tmp_path / "announce").exists()
    w.err.wait_for("eval \"\\$\\(tdebug env\\)\"")

    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    lines = err.rest()  # (before finish(), which would read stderr too)
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n", lines
    # Released by tdebug, not by the library's timeout; announced once.
    assert sum("waiting for a debugger" in line for line in lines) == 1, lines
    assert not any("continuing" in line for line in lines), lines

    trc, tout, terr = w.finish()
    assert trc == 0, (tout, terr)
    assert tout[0].startswith(f"tdebug: pid {p.pid} loaded torch._C (/")
    assert tout[0].endswith(") and waits: attaching")
    assert tout[1].startswith("tdebug: stopped at the import of torch._C: in its init "
                              "function, before it runs (/")
    assert PYINIT_FRAME in tout[2], tout
    assert '    File "<string>", line 1, in <module>' in tout, tout
    assert tout[-1] == f"tdebug: pid {p.pid} exited with status 0"
    # The socket is gone with the listener.
    assert not (tmp_path / "announce").exists()


def test_json_for_a_given_pid_ignores_other_processes(tdebug, tmp_path, procs, torch_available):
    # Two processes pause; tdebug is asked for the second one only.
    other, other_err = start(procs, python_args(TORCH_PROGRAM),
                             preload_env(tmp_path, TDEBUG_TIMEOUT="never"))
    wait_announced(other_err)
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    wait_announced(err)
    r = run([tdebug, "attach", "--wait", "--json", str(p.pid)], env=tdebug_env(tmp_path))
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["announced", "stopped", "exited"], events
    assert events[0]["pid"] == p.pid and events[0]["module"] == "torch._C"
    stop = events[1]
    assert stop["reason"] == "import" and stop["module"] == "torch._C"
    assert stop["frames"][0]["function"] == "PyInit__C"
    assert "/torch/_C." in stop["frames"][0]["library"]
    assert any(f.get("file", "").endswith("torch/__init__.py") for f in stop["python_frames"])
    assert f"waiting for pid {p.pid} to pause" in r.stderr
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"

    # The other one was left alone: still waiting, untraced.
    assert other.poll() is None and tracer_of(other.pid) == 0
    assert proc_state(other.pid) in ("S", "R")
    gdb_batch(other.pid, RELEASE)
    rc, out = finish(other)
    assert rc == 0 and out == "sum 3.0\n"


def test_stop_at_load_stops_where_it_waits(tdebug, tmp_path, procs, torch_available):
    w = Waiter(procs, tdebug, tmp_path, "--json", "--stop-at-load", "torch._C")
    w.listening()
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"
    trc, tout, terr = w.finish()
    assert trc == 0, terr
    events = [json.loads(line) for line in tout]
    stops = [e for e in events if e["event"] == "stopped"]
    assert len(stops) == 1 and stops[0]["reason"] == "loaded", events
    assert "the preloaded library paused pid" in stops[0]["message"]
    # Where the library waits: under the dynamic loader, inside the import.
    funcs = [f["function"] for f in stops[0]["frames"]]
    assert "la_activity" in funcs and "_imp_create_dynamic" in funcs, funcs
    assert events[-1]["event"] == "exited"


def test_timeout(tdebug, tmp_path, procs):
    r = run([tdebug, "attach", "--wait", "--timeout", "0.5", "--batch"], env=tdebug_env(tmp_path))
    assert r.returncode == 1
    assert r.stdout == ""
    assert (f"tdebug: no process announced itself on {tmp_path / 'announce'} within 0.5 s "
            "(start the program from a shell where 'eval \"$(tdebug env)\"' was run)") \
        in r.stderr.splitlines()
    assert not (tmp_path / "announce").exists()

    # A given process that never pauses.
    sleeper = procs.start(python_args("import time; time.sleep(600)"))
    r = run([tdebug, "attach", "--wait", "-t", "1", str(sleeper.pid)], env=tdebug_env(tmp_path))
    assert r.returncode == 1
    assert f"tdebug: pid {sleeper.pid} did not announce itself within 1 s" in r.stderr
    assert tracer_of(sleeper.pid) == 0


def test_given_pid_that_ends_while_waited_for(tdebug, tmp_path, procs):
    short = procs.start(python_args("import time; time.sleep(2)"))
    r = run([tdebug, "attach", "--wait", "--batch", str(short.pid)], env=tdebug_env(tmp_path))
    assert r.returncode == 1
    assert f"tdebug: pid {short.pid} ended before it announced itself" in r.stderr


def test_usage_errors(tdebug, tmp_path):
    cases = [
        (["--timeout", "5", "1"], "tdebug attach: --timeout goes with --wait"),
        (["--wait", "--timeout", "soon"], "tdebug attach: --timeout 'soon' is not a number of seconds"),
        (["--wait", "1", "2"], "tdebug attach: one PID only"),
        ([], "tdebug attach: which process? give its PID ('tdebug ps' lists Python processes), "
             "or --wait"),
        (["-b", "train.py", "1"],
         "tdebug attach: --break 'train.py' names a Python file but no place in it: give "
         "FILE.py:LINE or FILE.py:FUNCTION (train.py:42, train.py:Model.forward)"),
    ]
    for args, message in cases:
        r = run([tdebug, "attach", *args], env=tdebug_env(tmp_path))
        assert r.returncode == 2, args
        assert r.stderr == message + "\nsee 'tdebug attach --help'\n", args


def test_another_listener_is_refused(tdebug, tmp_path, procs):
    w = Waiter(procs, tdebug, tmp_path, "--batch")
    w.listening()
    r = run([tdebug, "attach", "--wait", "--batch"], env=tdebug_env(tmp_path))
    assert r.returncode == 1
    assert "another 'tdebug attach --wait' is listening" in r.stderr
    w.p.send_signal(signal.SIGINT)
    assert w.finish()[0] == 130


def test_ctrl_c_and_sigterm_while_waiting(tdebug, tmp_path, procs):
    for sig, status, why in ((signal.SIGINT, 130, "interrupted"),
                             (signal.SIGTERM, 143, "SIGTERM")):
        w = Waiter(procs, tdebug, tmp_path, "--batch")
        w.listening()
        assert (tmp_path / "announce").exists()
        w.p.send_signal(sig)
        rc, out, err = w.finish()
        assert rc == status, err
        assert out == []
        assert err[-1] == f"tdebug: stopped waiting ({why}); nothing was attached"
        # Nothing left behind: the socket is removed, tdebug had no child.
        assert not (tmp_path / "announce").exists()


def test_refused_attach_says_why_and_the_process_goes_on(tdebug, tmp_path, procs,
                                                          torch_available):
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path, TDEBUG_TIMEOUT="1"))
    pid = wait_announced(err)[0]
    helper = seize(procs, pid)  # another tracer: attaching is refused before gdb starts
    r = run([tdebug, "attach", "--wait", "--batch", str(pid)], env=tdebug_env(tmp_path))
    assert r.returncode == 1
    line = [l for l in r.stderr.splitlines() if l.startswith("tdebug: cannot attach")]
    assert line and line[0].startswith(f"tdebug: cannot attach to pid {pid}: "), r.stderr
    assert f"it is already traced by pid {helper.pid} (python3)" in line[0], line
    assert line[0].endswith(f"; pid {pid} stays paused until its own timeout (1 s) passes, "
                            "then goes on by itself")
    # The library's timeout does not run while traced; once the other
    # tracer is gone it does, and the program finishes on its own.
    helper.kill()
    helper.wait()
    lines = err.rest()
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"
    assert f"tdebug: pid {pid}: no debugger released it within 1 s; continuing" in lines


def test_a_process_whose_wait_ended_is_attached_as_any(tdebug, tmp_path, procs, torch_available):
    # Timeout 0: the process announces itself and goes on at once, so by
    # the time gdb attaches, torch._C's init has run.
    w = Waiter(procs, tdebug, tmp_path, "--batch")
    w.listening()
    p, err = start(procs, python_args("import torch, time; print('up', flush=True); "
                                      "time.sleep(600)"),
                   preload_env(tmp_path, TDEBUG_TIMEOUT="0"))
    trc, tout, terr = w.finish()
    assert trc == 1, (tout, terr)
    assert any(f"tdebug: warning: pid {p.pid} stopped waiting before tdebug attached (its wait "
               "timed out)" in line for line in terr), terr
    assert any("'torch._C' is already imported" in line for line in terr), terr
    assert tracer_of(p.pid) == 0 and proc_state(p.pid) in ("S", "R")


def test_interactive_through_a_terminal(tdebug, tmp_path, procs, torch_available):
    term = Terminal([tdebug, "attach", "--wait"], env=tdebug_env(tmp_path))
    try:
        term.expect("tdebug: waiting for a process to pause at torch._C")
        p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
        term.expect(f"tdebug: pid {p.pid} loaded torch._C")
        term.expect("tdebug: stopped at the import of torch._C")
        term.expect("(tdebug) ")
        term.send("bt")
        assert "PyInit__C ()" in term.expect("(tdebug) ")
        # Still paused in the init: nothing of torch ran, the program waits on us.
        assert p.poll() is None and tracer_of(p.pid) != 0
        term.send("continue")
        term.expect(f"tdebug: pid {p.pid} exited with status 0")
        assert term.wait() == 0
    finally:
        term.close()
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"


def test_quit_at_the_prompt_lets_the_program_go(tdebug, tmp_path, procs, torch_available):
    term = Terminal([tdebug, "attach", "--wait"], env=tdebug_env(tmp_path))
    try:
        term.expect("tdebug: waiting for a process")
        p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
        term.expect("(tdebug) ")
        term.send("quit")
        term.expect(f"tdebug: detached from pid {p.pid}")
        assert term.wait() == 0
    finally:
        term.close()
    lines = err.rest()
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"
    assert not any("continuing" in line for line in lines)


def test_a_process_waiting_in_wait_for_debugger(tdebug, tmp_path, procs, build_dir):
    # Python's tdebug.wait_for_debugger() announces itself without a
    # release variable: running under the debugger releases it.  With no
    # stop asked for, --batch shows where it waits, and lets it go.
    w = Waiter(procs, tdebug, tmp_path, "--batch")
    w.listening()
    code = ("import tdebug\n"
            "print('released', tdebug.wait_for_debugger(timeout=None), flush=True)\n")
    env = preload_env(tmp_path, PYTHONPATH=build_dir / "python")
    del env["LD_AUDIT"]
    p, err = start(procs, python_args(code), env)
    trc, tout, terr = w.finish()
    assert trc == 0, (tout, terr)
    assert tout[0] == (f"tdebug: pid {p.pid} waits for a debugger "
                       "(tdebug.wait_for_debugger()): attaching")
    assert f"tdebug: attached to pid {p.pid}" in tout
    # Where it waits: the extension's C function, called from the script's line.
    native = [i for i, line in enumerate(tout) if " in tdebug_wait_for_debugger () " in line]
    assert native, tout
    assert tout[native[0] + 1] == '    File "<string>", line 2, in <module>', tout
    lines = err.rest()
    rc, out = finish(p)
    assert rc == 0 and out == "released True\n", lines
