"""'tdebug vscode' end to end: the configurations it writes, run the way VS
Code runs them (vscode_util), against the real gdb and debugpy and
samples/tinytensor built with debug info.  In one run the Python breakpoint
and the breakpoint in tinytensor's C core are both hit, Python first, and
the program then exits with status 0."""
import subprocess

import pytest

from conftest import PYTHON, SLOW, free_port, run
from vscode_util import (C_BREAKPOINT, EventLog, MIEngine, Workspace, attach_debugpy,
                         follow_python, kill_adapters, sample_breakpoints, sample_workspace)


@pytest.fixture
def sample(tmp_path):
    return sample_workspace(tmp_path / "ws")


def debug_both(procs, tmp_path, gdb_conf, py_conf, c_bps, py_bps, start_gdb, go=None):
    """The two sessions of a compound: gdb started by START_GDB(gdb) with
    the C breakpoints, then debugpy with the Python ones; GO() (if given)
    once both are in.  Returns the log of hits, the pid debugpy reported,
    and the exit status gdb saw."""
    log = EventLog()
    gdb = MIEngine(gdb_conf, log, tmp_path / "gdb-mi.log")
    try:
        gdb.start(procs)
        start_gdb(gdb)
        dap = attach_debugpy(py_conf, py_bps, tmp_path / "dap.log")
        try:
            pid = dap.process_pid(timeout=SLOW)
            if go:
                go()
            follow_python(dap, log)
        finally:
            dap.close()
        status = gdb.wait_exit()
        inferior = gdb.inferior_pid
        loaded = set(gdb.loaded_symbols)
    finally:
        gdb.close()
        kill_adapters(py_conf["connect"]["port"])
    return log, pid, inferior, status, loaded


def test_launch_compound_hits_python_then_c_and_exits_0(tdebug, sample, procs, tmp_path):
    ws = sample
    r = run([tdebug, "vscode", "--workspace", str(ws), "--program", "main.py"], check=True)
    assert 'pick "tdebug: main.py (Python + C++)"' in r.stdout
    w = Workspace(ws)
    compound = w.compound("tdebug: main.py (Python + C++)")
    gdb_conf, py_conf = (w.config(n) for n in compound["configurations"])
    assert gdb_conf["type"] == "cppdbg" and py_conf["type"] == "debugpy"
    py_bps, c_bps = sample_breakpoints(ws, "main.py")

    def start(gdb):
        # VS Code starts both configurations of the compound at once; the
        # debugpy one waits for its pre-launch task first.
        gdb.launch(c_bps)
        task = w.run_task(py_conf["preLaunchTask"])
        assert task.returncode == 0, task.stderr

    log, pid, inferior, status, loaded = debug_both(procs, tmp_path, gdb_conf, py_conf, c_bps,
                                                    py_bps, start)
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
    assert not any(n.startswith("libm.so") or n.startswith("libz.so") for n in loaded), loaded


def test_attach_compound_on_a_running_process_hits_python_then_c(tdebug, sample, procs, tmp_path):
    ws = sample
    port = free_port()
    go = tmp_path / "go"
    output = open(tmp_path / "program.out", "w")
    target = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen",
                          f"127.0.0.1:{port}", "attach_main.py", str(go)], cwd=str(ws),
                         stdout=output, stderr=subprocess.STDOUT)
    run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)

    r = run([tdebug, "vscode", "--workspace", str(ws), "--attach", str(target.pid)], check=True)
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
