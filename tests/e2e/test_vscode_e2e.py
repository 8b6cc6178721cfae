"""'tdebug vscode' end to end: the configurations it writes, run the way VS
Code runs them (vscode_util), against the real gdb and debugpy and
samples/tinytensor built with debug info.  In one run the Python breakpoint
and the breakpoint in tinytensor's C core are both hit, Python first, and
the program then exits with status 0."""
import os
import subprocess

import pytest

from conftest import PYTHON, SLOW, clean_env, free_port, run, tracer_of
from debugpy_util import PlainProgram
from proc_util import NOBODY_KEEPING_BOUNDS, gdb_with_cap_sys_ptrace, start_waiter
from vscode_util import (C_BREAKPOINT, EventLog, MIEngine, Workspace, attach_debugpy, debug_both,
                         debug_launch, kill_adapters, sample_breakpoints, sample_workspace,
                         vscode_stop)


@pytest.fixture
def sample(tmp_path):
    return sample_workspace(tmp_path / "ws")


def test_launch_compound_hits_python_then_c_and_exits_0(tdebug, sample, procs, tmp_path):
    ws = sample
    r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--program", "main.py"], check=True)
    assert 'pick "tdebug: main.py (Python + C++)"' in r.stdout
    w = Workspace(ws)
    compound = w.compound("tdebug: main.py (Python + C++)")
    gdb_conf, py_conf = (w.config(n) for n in compound["configurations"])
    assert gdb_conf["type"] == "cppdbg" and py_conf["type"] == "debugpy"
    py_bps, c_bps = sample_breakpoints(ws, "main.py")
    log, pid, inferior, status, loaded = debug_launch(procs, tmp_path, ws, "main.py", c_bps, py_bps)
    assert status == 0
    assert pid == inferior  # one process: the one gdb started is the one debugpy debugs
    assert log.kinds() == ["python", "c"], log.events
    _, _, py_hit = log.events[0]
    _, _, c_hit = log.events[1]
    assert (py_hit["file"], py_hit["line"]) == (str(py_bps[0][0]), py_bps[0][1])
    assert (c_hit["func"], c_hit["file"], c_hit["line"]) == (C_BREAKPOINT[2], str(c_bps[0][0]),
                                                             c_bps[0][1])
    # symbolLoadInfo worked as MIEngine applies it: tinytensor's libraries,
    # libc and the loader were loaded, and not everything else.
    assert {"libtt_core.so", "libtt_python.so"} <= loaded, loaded
    assert any(n.startswith("_C.cpython") for n in loaded), loaded
    assert "libc.so.6" in loaded and any(n.startswith("ld-linux") for n in loaded), loaded
    assert not any(n.startswith("libz.so") or n.startswith("libexpat") for n in loaded), loaded


def test_attach_compound_on_a_running_process_hits_python_then_c(tdebug, sample, procs, tmp_path):
    ws = sample
    port = free_port()
    go = tmp_path / "go"
    output = open(tmp_path / "program.out", "w")
    target = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen",
                          f"127.0.0.1:{port}", "attach_main.py", str(go)], cwd=str(ws),
                         stdout=output, stderr=subprocess.STDOUT)
    run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)

    r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--attach", str(target.pid)], check=True)
    assert 'pick "tdebug: attach (Python + C++)"' in r.stdout
    w = Workspace(ws)
    compound = w.compound("tdebug: attach (Python + C++)")
    gdb_conf, py_conf = (w.config(n) for n in compound["configurations"])
    assert gdb_conf["processId"] == target.pid
    assert py_conf["connect"] == {"host": "127.0.0.1", "port": port}
    py_bps, c_bps = sample_breakpoints(ws, "attach_main.py")
    log, pid, _, status, _ = debug_both(procs, tmp_path, gdb_conf, py_conf, c_bps, py_bps,
                                        lambda gdb: gdb.attach(c_bps), go=go.touch)
    assert pid == target.pid
    assert status == 0
    assert target.wait(timeout=SLOW) == 0
    output.close()
    assert "tensor([2., 2.])" in (tmp_path / "program.out").read_text()
    assert log.kinds() == ["python", "c"], log.events
    assert log.events[1][2]["func"] == C_BREAKPOINT[2]
    assert log.events[1][2]["line"] == c_bps[0][1]


def start_attach_compound(tdebug, ws, procs, tmp_path, go):
    """A program under 'debugpy --listen' in WS, waiting for the file GO;
    'tdebug vscode --attach' to it; both sessions of the compound attached
    (no breakpoints).  Returns the program, the compound, the sessions
    (name -> MIEngine or (DapClient, configuration)) and the port."""
    port = free_port()
    output = open(tmp_path / "program.out", "w")
    target = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen",
                          f"127.0.0.1:{port}", "attach_main.py", str(go)], cwd=str(ws),
                         stdout=output, stderr=subprocess.STDOUT)
    run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)
    run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--attach", str(target.pid)], check=True)
    w = Workspace(ws)
    compound = w.compound("tdebug: attach (Python + C++)")
    gdb_name, py_name = compound["configurations"]
    gdb = MIEngine(w.config(gdb_name), EventLog(), tmp_path / "gdb-mi.log")
    gdb.start(procs)
    gdb.attach([])
    py_conf = w.config(py_name)
    dap = attach_debugpy(py_conf, [], tmp_path / "dap.log")
    return target, compound, {gdb_name: gdb, py_name: (dap, py_conf)}, port


def test_stopping_the_attach_compound_leaves_the_process_running(tdebug, sample, procs, tmp_path):
    """The attach compound has no stopAll: the user disconnects each side
    (Shift+F5 on an attach session), and the program goes on, untraced, to
    its normal end."""
    go = tmp_path / "go"
    target, compound, sessions, port = start_attach_compound(tdebug, sample, procs, tmp_path, go)
    try:
        assert "stopAll" not in compound
        gdb_name, py_name = compound["configurations"]
        assert tracer_of(target.pid) == sessions[gdb_name].proc.pid
        vscode_stop(sessions, py_name, disconnect=True, compound=compound)
        assert target.poll() is None
        vscode_stop(sessions, gdb_name, disconnect=True, compound=compound)
        assert target.poll() is None and tracer_of(target.pid) == 0
    finally:
        sessions[py_name][0].close()
        kill_adapters(port)
    go.touch()
    assert target.wait(timeout=SLOW) == 0
    assert "tensor([2., 2.])" in (tmp_path / "program.out").read_text()


def test_with_stop_all_vscode_would_kill_the_attached_process(tdebug, sample, procs, tmp_path):
    """Why: in a stopAll compound, detaching gdb makes VS Code terminate()
    the debugpy session, a 'disconnect' with terminateDebuggee, and debugpy
    kills the program."""
    go = tmp_path / "go"
    target, compound, sessions, port = start_attach_compound(tdebug, sample, procs, tmp_path, go)
    gdb_name, py_name = compound["configurations"]
    try:
        vscode_stop(sessions, gdb_name, disconnect=True, compound=dict(compound, stopAll=True))
        target.wait(timeout=SLOW)
    finally:
        sessions[py_name][0].close()
        kill_adapters(port)
    # ended before its work (it waits for GO, which nobody made)
    assert target.returncode is not None and not go.exists()
    assert "tensor" not in (tmp_path / "program.out").read_text()


def test_attach_as_a_user_whose_gdb_has_cap_sys_ptrace(tdebug, procs, tmp_path):
    """gdb given CAP_SYS_PTRACE as a file capability lets a user attach
    where the kernel asks for it (here: their own process made
    non-dumpable; under Yama, any of their processes): tdebug sees it,
    writes the entry that starts that gdb as the user through /bin/sh
    (never MIEngine's pkexec), and that entry, run as the user, attaches,
    pauses and detaches, leaving the process running."""
    nobody = NOBODY_KEEPING_BOUNDS
    with gdb_with_cap_sys_ptrace(0o777) as (d, gdb):
        ws = os.path.join(d, "ws")
        os.mkdir(ws)
        os.chmod(ws, 0o777)
        target = start_waiter(procs, prefix=nobody, undumpable=True)
        pid = str(target.pid)
        # nobody's own gdb may not: refused, nothing written
        r = run(nobody + [tdebug, "vscode", "--compound", "--workspace", ws, "--attach", pid])
        assert r.returncode == 1 and "it is not dumpable" in r.stderr, r.stderr
        assert os.listdir(ws) == []
        # The "tdebug" configuration attaches as the user too ('tdebug dap'
        # runs that gdb): refused and written alike.
        r = run(nobody + [tdebug, "vscode", "--workspace", ws, "--attach", pid])
        assert r.returncode == 1 and "it is not dumpable" in r.stderr, r.stderr
        assert os.listdir(ws) == []
        r = run(nobody + [tdebug, "vscode", "--workspace", ws, "--attach", pid],
                env=clean_env(TDEBUG_GDB=gdb))
        assert r.returncode == 0, r.stderr
        assert Workspace(ws).config("tdebug: attach (Python + C++)")["processId"] == target.pid
        r = run(nobody + [tdebug, "vscode", "--compound", "--workspace", ws, "--attach", pid],
                env=clean_env(TDEBUG_GDB=gdb))
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""  # no pkexec ahead, nothing to warn of
        conf = Workspace(ws).config("tdebug: attach (C++, gdb)")
        assert conf["pipeTransport"] == {"pipeProgram": "/bin/sh",
                                         "pipeArgs": ["-c", "exec ${debuggerCommand}"],
                                         "debuggerPath": f"'{gdb}'"}
        assert "miDebuggerPath" not in conf
        engine = MIEngine(conf, EventLog(), tmp_path / "gdb-mi.log")
        engine.start(procs, prefix=nobody)
        try:
            engine.attach([])
            assert tracer_of(target.pid) == engine.proc.pid  # that gdb itself, as nobody
            assert os.stat(f"/proc/{engine.proc.pid}").st_uid == 65534
            engine.disconnect()  # pauses the running program, detaches
        finally:
            engine.close()
        assert target.poll() is None and tracer_of(target.pid) == 0

        # Another user's process, by the capability alone: attaching would
        # work, pausing would not (no right to signal it): said before.
        with PlainProgram(procs, tmp_path) as prog:
            r = run(nobody + [tdebug, "vscode", "--compound", "--workspace", ws, "--attach",
                              str(prog.debuggee_pid)], env=clean_env(TDEBUG_GDB=gdb))
            assert r.returncode == 0
            assert "which gives no right to signal it: VS Code will not be able to pause it" in r.stderr


def test_restarting_the_cpp_side_alone_then_the_python_side(tdebug, sample, procs, tmp_path):
    """VS Code restarts the C++ session alone (Ctrl+Shift+F5 there): it
    ends it with 'disconnect' and terminateDebuggee, which kills the
    program, ending the debugpy session too, and launches it again; the
    new program waits for the Python side, which the user starts again
    (F5 on the Python entry): its task returns at once, it attaches, and
    both sides stop at their breakpoints in the new program."""
    ws = sample
    run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--program", "main.py"], check=True)
    w = Workspace(ws)
    gdb_conf, py_conf = (w.config(n) for n in
                         w.compound("tdebug: main.py (Python + C++)")["configurations"])
    py_bps, c_bps = sample_breakpoints(ws, "main.py")
    port = py_conf["connect"]["port"]
    try:
        first = MIEngine(gdb_conf, EventLog(), tmp_path / "gdb-1.log")
        first.start(procs)
        first.launch(c_bps)
        assert w.run_task(py_conf["preLaunchTask"]).returncode == 0
        dap = attach_debugpy(py_conf, py_bps, tmp_path / "dap-1.log")
        try:
            dap.wait_event("stopped", timeout=SLOW)  # at the Python breakpoint
            first_pid = dap.process_pid(timeout=SLOW)
            first.disconnect(terminate_debuggee=True)  # a launch: killed
            dap.wait_event("terminated", timeout=SLOW)
        finally:
            dap.close()
        assert first.inferior_pid == first_pid

        log, pid, inferior, status, _ = debug_launch(procs, tmp_path, ws, "main.py", c_bps, py_bps)
    finally:
        kill_adapters(port)
    assert pid == inferior != first_pid
    assert status == 0
    assert log.kinds() == ["python", "c"], log.events
