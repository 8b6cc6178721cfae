"""The session core on its own: build/tests/tools/session_core
(tests/tools/session_core.c) is linked with the core and the readers only,
no CLI, no DAP, no command language, and runs a whole session through the
data API: launch /usr/bin/python3 on a script with a Python breakpoint,
wait for the stop, read its stack and a variable, run to the end.  The core
never prints: everything on the tool's stdout and stderr is a line the tool
wrote itself ("tool: ..."), the core's events and gdb's words included.
"""
import os
import shutil

import pytest

from conftest import BUILD, PYTHON, run

TOOL = BUILD / "tests" / "tools" / "session_core"

SCRIPT = """\
def add(a, b):
    total = a + b
    return total

print("the program says hello", flush=True)
print(add(40, 2), flush=True)
"""


@pytest.fixture
def tool(tmp_path):
    """The tool, beside what tdb_companion_path() looks for beside a
    binary: tdebug-exec and the Python hook libraries of the build."""
    if not os.access(TOOL, os.X_OK):
        pytest.fail(f"{TOOL} is not built; run 'make test' (or make {TOOL})")
    d = tmp_path / "bin"
    d.mkdir()
    shutil.copy(TOOL, d / "session_core")
    (d / "tdebug-exec").symlink_to(BUILD / "tdebug-exec")
    (d / "pyhook").symlink_to(BUILD / "pyhook")
    return d / "session_core"


def test_the_core_alone_runs_a_session_and_prints_nothing(tool, tmp_path):
    script = tmp_path / "add.py"
    script.write_text(SCRIPT)
    output = tmp_path / "program-output"
    r = run([str(tool), PYTHON, str(script), "2", "a", str(output)])
    assert r.returncode == 0, r.stdout + r.stderr

    # Everything written is the tool's own: the core printed nothing.
    assert r.stderr == ""
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("tool: ") for line in lines), r.stdout

    # The session, through the data API.
    assert any(line.startswith("tool: program started: pid ") for line in lines)
    assert "tool: stopped: python-breakpoint (dap: breakpoint) at breakpoint 1" in lines
    top = next(line for line in lines if line.startswith("tool: frame 0: "))
    assert top == f"tool: frame 0: python add {script}:2"
    assert "tool: value: a = 40" in lines
    assert lines[-1] == "tool: exited: status 0"

    # The program's own output went where the front-end said.
    assert output.read_text() == "the program says hello\n42\n"


def test_run_after_the_end_starts_a_light_session_again(tool, tmp_path):
    # 'run' once the program ended (a light session, session/light.c):
    # the program tdebug started runs again, its Python breakpoint hit
    # again in the new process.
    (tool.parent / "libtdebug-preload.so").symlink_to(BUILD / "libtdebug-preload.so")
    script = tmp_path / "add.py"
    script.write_text(SCRIPT)
    output = tmp_path / "program-output"
    trace = tmp_path / "mi.trace"
    r = run([str(tool), PYTHON, str(script), "2", "a", str(output), "rerun-light"],
            env={**os.environ, "TDEBUG_TRACE_MI": str(trace)})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    # (a light session's program is told of at its start and at gdb's attach)
    pids = list(dict.fromkeys(l.split()[-1] for l in lines
                              if l.startswith("tool: program started: pid ")))
    assert len(pids) == 2, lines
    stops = [l for l in lines if l.startswith("tool: stopped: ")]
    assert stops == ["tool: stopped: python-breakpoint (dap: breakpoint) at breakpoint 1"] * 2
    assert lines.count("tool: value: a = 40") == 2
    assert [l for l in lines if l.startswith("tool: exited")] == ["tool: exited: status 0"] * 2
    assert "tool: run again" in lines
    # both runs light: gdb attached to each, reading no library
    sent = trace.read_text(errors="replace")
    assert sent.count("-target-attach") == 2
    assert sent.count("set sysroot /nonexistent/tdebug-light-session") == 1
    assert output.read_text() == "the program says hello\n42\n" * 2
