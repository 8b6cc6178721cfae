"""'tdebug ps' and 'tdebug ps --check' against real debugpy layouts, real
torch, real users and real ptrace.

Every label is checked against what the test knows from the outside: the
pids it started, the DAP 'process' event's systemProcessId, parentage.
Every refusal tdebug predicts is held against the kernel's own answer
(proc_util.try_ptrace) where the machine can produce it.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, clean_env, run, wait_until
from debugpy_util import EmbeddedLayout, LaunchLayout, ListenLayout, PlainProgram
from proc_util import (NOBODY_KEEPING_BOUNDS, ROOT_NO_PTRACE_CAP, gdb_with_cap_sys_ptrace,
                       held_with_ptrace, seccomp_no_ptrace_prefix, start_waiter, start_zombie,
                       try_ptrace)
from pty_util import Terminal


def ps_json(tdebug, *args, prefix=()):
    r = run(list(prefix) + [tdebug, "ps", "--json", *args])
    assert r.returncode == 0, r.stderr
    return {p["pid"]: p for p in json.loads(r.stdout)["processes"]}


# Columns shown only when some process on the machine is in another PID
# namespace or part of a distributed job (test_ranks.py checks them).
OPTIONAL_COLUMNS = ("NSPID", "JOB", "RANK")


def ps_text(tdebug, *args, prefix=()):
    """{pid: row text} from the table, without the optional columns."""
    r = run(list(prefix) + [tdebug, "ps", *args])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    head = lines[0].split()
    assert [h for h in head if h not in OPTIONAL_COLUMNS] == [
        "PID", "PPID", "USER", "ROLE", "TORCH", "ATTACH", "TRACER", "COMMAND"]
    drop = [i for i, h in enumerate(head) if h in OPTIONAL_COLUMNS]
    rows = {}
    for line in lines[1:]:
        cells = list(re.finditer(r"\S+", line))[:len(head) - 1]
        for m in reversed([cells[i] for i in drop]):
            line = line[:m.start()] + line[m.end():]
        rows[int(line.split()[0])] = line
    return rows


def columns(row):
    """PID PPID USER ROLE TORCH ATTACH TRACER of a table row."""
    return row.split()[:7]


def check(tdebug, pid, prefix=(), json_out=False):
    return run(list(prefix) + [tdebug, "ps", "--check", str(pid)] +
               (["--json"] if json_out else []))


# --- labels on real debugpy layouts

def test_listen_layout(tdebug, procs, tmp_path):
    with ListenLayout(procs, tmp_path) as lay:
        assert lay.debuggee_pid == lay.server_pid  # user code runs in the server
        rows = ps_json(tdebug)
        server, adapter = rows[lay.server_pid], rows[lay.adapter_pid]
        assert server["role"] == "server"
        assert server["endpoint"] == f"127.0.0.1:{lay.port}"
        assert server["debugpy_loaded"] is True
        assert server["attach"] == {"ok": True}
        assert adapter["role"] == "adapter"
        assert adapter["ppid"] == 1  # double-forked: only its sockets lead to the server
        assert adapter["endpoint"] == f"127.0.0.1:{lay.port}"  # where clients connect
        assert adapter["debuggee"] == lay.debuggee_pid
        assert adapter["torch"] is False and server["torch"] is False
        # Access tokens are not printed in the table.
        text = ps_text(tdebug)
        assert columns(text[lay.adapter_pid])[3] == f"adapter->{lay.debuggee_pid}"
        assert columns(text[lay.server_pid])[3] == "server"
        assert "--server-access-token ..." in text[lay.adapter_pid]
        token = adapter["command"][adapter["command"].index("--server-access-token") + 1]
        assert token not in text[lay.adapter_pid]


def test_launch_layout_with_torch(tdebug, procs, tmp_path, torch_available):
    with LaunchLayout(procs, tmp_path, imports="import torch") as lay:
        rows = ps_json(tdebug)
        adapter = rows[lay.adapter_pid]
        launcher = rows[lay.launcher_pid]
        debuggee = rows[lay.debuggee_pid]
        assert adapter["role"] == "adapter"
        assert adapter["debuggee"] == lay.debuggee_pid
        assert adapter["endpoint"] is None  # VS Code's adapter speaks DAP on stdio
        assert launcher["role"] == "launcher"
        assert launcher["ppid"] == lay.adapter_pid
        assert launcher["debuggee"] == lay.debuggee_pid
        assert debuggee["role"] == "debuggee"
        assert debuggee["ppid"] == lay.launcher_pid
        assert debuggee["endpoint"].startswith("127.0.0.1:")
        # Only the debuggee runs user code and loads torch.
        assert (adapter["torch"], launcher["torch"], debuggee["torch"]) == (False, False, True)
        text = ps_text(tdebug)
        assert columns(text[lay.launcher_pid])[3:5] == [f"launcher->{lay.debuggee_pid}", "no"]
        assert columns(text[lay.debuggee_pid])[3:5] == ["debuggee", "yes"]
        assert ".../debugpy --connect" in text[lay.debuggee_pid]


def test_check_resolves_adapter_and_launcher(tdebug, procs, tmp_path):
    with LaunchLayout(procs, tmp_path) as lay:
        r = check(tdebug, lay.launcher_pid)
        assert r.returncode == 0, r.stderr
        lines = r.stdout.splitlines()
        assert lines[0] == (f"pid {lay.launcher_pid} is the debugpy launcher; "
                            f"attaching to its child {lay.debuggee_pid}")
        assert lines[1].startswith(f"pid {lay.debuggee_pid} can be attached: ")
        assert lines[1].endswith("(a debugpy debuggee)")
        r = check(tdebug, lay.adapter_pid, json_out=True)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert out["ok"] is True
        assert out["attach_pid"] == lay.debuggee_pid
        assert out["role"] == "debuggee"
        assert out["note"].startswith(f"pid {lay.adapter_pid} is the debugpy adapter; "
                                      f"attaching to {lay.debuggee_pid}")
    with ListenLayout(procs, tmp_path) as lay:
        r = check(tdebug, lay.adapter_pid)
        assert r.returncode == 0, r.stderr
        assert f"attaching to {lay.debuggee_pid}, the program it debugs" in r.stdout


def test_adapter_with_two_debuggees_is_ambiguous(tdebug, procs, tmp_path):
    with LaunchLayout(procs, tmp_path, child=True) as lay:
        r = check(tdebug, lay.adapter_pid)
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot choose the process behind pid "
                                   f"{lay.adapter_pid} (the debugpy adapter): 2 programs")
        for pid in (lay.debuggee_pid, lay.child_pid):
            assert str(pid) in r.stderr
        out = json.loads(check(tdebug, lay.adapter_pid, json_out=True).stdout)
        assert out["ok"] is False and out["reason"] == "ambiguous"
        assert sorted(out["candidates"]) == sorted([lay.debuggee_pid, lay.child_pid])
        rows = ps_json(tdebug)
        assert rows[lay.child_pid]["role"] == "debuggee"
        assert sorted(rows[lay.adapter_pid]["candidates"]) == sorted(out["candidates"])
        # The launcher still has one child.
        assert rows[lay.launcher_pid]["debuggee"] == lay.debuggee_pid


def test_program_that_called_debugpy_listen(tdebug, procs, tmp_path):
    with EmbeddedLayout(procs, tmp_path) as lay:
        rows = ps_json(tdebug)
        assert rows[lay.debuggee_pid]["role"] == "embedded"
        assert rows[lay.debuggee_pid]["debugpy_loaded"] is True
        assert rows[lay.adapter_pid]["role"] == "adapter"
        assert rows[lay.adapter_pid]["debuggee"] == lay.debuggee_pid


# --- plain Python, whatever the interpreter is called

def test_plain_python_with_torch(tdebug, procs, tmp_path, torch_available):
    with PlainProgram(procs, tmp_path, imports="import torch") as prog:
        row = ps_json(tdebug)[prog.debuggee_pid]
        assert (row["role"], row["torch"], row["debugpy_loaded"]) == ("plain", True, False)
        assert row["exe"] == os.path.realpath(PYTHON)
        assert columns(ps_text(tdebug)[prog.debuggee_pid])[3:7] == ["plain", "yes", "yes", "-"]
        r = check(tdebug, prog.debuggee_pid)
        assert r.returncode == 0
        assert r.stdout.endswith("(a Python process, torch loaded)\n")


def test_interpreters_by_any_name(tdebug, procs, tmp_path):
    venv = tmp_path / "venv"
    run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    link = tmp_path / "myapp"
    link.symlink_to(PYTHON)
    copy = tmp_path / "myinterp"          # a renamed copy: only its ELF symbols tell
    shutil.copy(os.path.realpath(PYTHON), copy)
    interpreters = {"venv": str(venv / "bin" / "python"), "symlink": str(link),
                    "copy": str(copy)}
    pyenv = shutil.which("python3")
    if pyenv and ".pyenv" in os.path.realpath(pyenv):
        interpreters["pyenv"] = os.path.realpath(pyenv)
    programs = {}
    for name, python in interpreters.items():
        prog = PlainProgram(procs, tmp_path, python=python)
        prog.start()
        programs[name] = prog
    rows = ps_json(tdebug)
    for name, prog in programs.items():
        assert prog.debuggee_pid in rows, f"{name} interpreter not listed"
        assert rows[prog.debuggee_pid]["role"] == "plain", name
    assert rows[programs["copy"].debuggee_pid]["exe"] == str(copy)


# --- refusals, each held against the kernel where it can be

def test_refuse_nonexistent_pid(tdebug):
    p = subprocess.Popen(["true"])
    p.wait()
    wait_until(lambda: not os.path.exists(f"/proc/{p.pid}"), what="the pid to be free")
    r = check(tdebug, p.pid)
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot attach to pid {p.pid}: no such process ('tdebug ps' "
                        f"lists the Python processes you can attach to)\n")
    out = json.loads(check(tdebug, p.pid, json_out=True).stdout)
    assert (out["ok"], out["reason"], out["attach_pid"]) == (False, "no-process", None)


def test_refuse_zombie(tdebug, procs):
    parent, zombie = start_zombie(procs)
    r = check(tdebug, zombie)
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot attach to pid {zombie}: it is a zombie")
    assert f"its parent {parent.pid} has not reaped it" in r.stderr
    assert zombie not in ps_json(tdebug)
    assert ps_json(tdebug, "--all")[zombie]["attach"]["reason"] == "zombie"


def test_refuse_kernel_thread(tdebug):
    r = check(tdebug, 2)
    assert r.returncode == 1
    assert r.stderr == ("tdebug: cannot attach to pid 2: it is a kernel thread ('kthreadd'), not "
                        "a program (give the pid of a Python process; 'tdebug ps' lists them)\n")


def test_refuse_non_python(tdebug, procs):
    p = procs.start(["sleep", "600"])
    wait_until(lambda: os.readlink(f"/proc/{p.pid}/exe").endswith("/sleep"), what="sleep")
    r = check(tdebug, p.pid)
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot attach to pid {p.pid}: it is not a Python "
                               f"process (it runs '")
    # gdb embeds libpython; it is never the program to debug.
    g = procs.start(["gdb", "-nx", "-batch", "-ex",
                     "python import time; print('ready', flush=True); time.sleep(600)"],
                    stdout=subprocess.PIPE, text=True)
    assert g.stdout.readline().strip() == "ready"
    assert "not a Python process" in check(tdebug, g.pid).stderr


def test_refuse_already_traced(tdebug, procs, tmp_path):
    with PlainProgram(procs, tmp_path) as prog:
        with held_with_ptrace(procs, prog.debuggee_pid) as holder:
            r = check(tdebug, prog.debuggee_pid)
            assert r.returncode == 1
            assert r.stderr == (f"tdebug: cannot attach to pid {prog.debuggee_pid}: it is "
                                f"already traced by pid {holder.pid} (ptrace-holder) (a process "
                                f"has only one tracer: detach or quit that debugger first)\n")
            row = ps_json(tdebug)[prog.debuggee_pid]
            assert row["tracer"] == {"pid": holder.pid, "comm": "ptrace-holder"}
            assert row["attach"]["reason"] == "traced"
            text = ps_text(tdebug)
            cols = columns(text[prog.debuggee_pid])
            assert cols[5:7] == ["traced", f"{holder.pid}(ptrace-holder)"]
            # The holder's own multi-line 'python -c' stays on one row.
            assert "\\n" in text[holder.pid]
            # The kernel agrees: a second tracer is refused.
            ok, why = try_ptrace(procs, prog.debuggee_pid)
            assert not ok and "Operation not permitted" in why
        wait_until(lambda: check(tdebug, prog.debuggee_pid).returncode == 0,
                   what="the program to be untraced")


def test_refuse_other_users_process(tdebug, procs, tmp_path, as_nobody):
    with PlainProgram(procs, tmp_path) as prog:
        r = check(tdebug, prog.debuggee_pid, prefix=as_nobody)
        assert r.returncode == 1
        assert r.stderr == (f"tdebug: cannot attach to pid {prog.debuggee_pid}: it runs as user "
                            f"'root' and tdebug runs as 'nobody' (run tdebug as root, e.g. "
                            f"'sudo tdebug attach {prog.debuggee_pid}')\n")
        ok, why = try_ptrace(procs, prog.debuggee_pid, prefix=as_nobody)
        assert not ok and "Operation not permitted" in why
        # nobody's list leaves root's process out; --all shows it and why.
        assert prog.debuggee_pid not in ps_json(tdebug, prefix=as_nobody)
        row = ps_json(tdebug, "--all", prefix=as_nobody)[prog.debuggee_pid]
        assert (row["user"], row["attach"]["reason"]) == ("root", "other-user")
        assert row["torch"] is None  # its maps are hidden from nobody
        # nobody can check its own process: yes.
        mine = start_waiter(procs, prefix=as_nobody)
        r = check(tdebug, mine.pid, prefix=as_nobody)
        assert r.returncode == 0, r.stderr
        assert try_ptrace(procs, mine.pid, prefix=as_nobody)[0]


def test_refuse_without_cap_sys_ptrace(tdebug, procs, tmp_path, as_nobody):
    # root without CAP_SYS_PTRACE against another user's process...
    theirs = start_waiter(procs, prefix=as_nobody)
    r = check(tdebug, theirs.pid, prefix=ROOT_NO_PTRACE_CAP)
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot attach to pid {theirs.pid}: it runs as user "
                               f"'nobody' and tdebug runs as root without CAP_SYS_PTRACE")
    assert "--cap-add=SYS_PTRACE" in r.stderr
    ok, why = try_ptrace(procs, theirs.pid, prefix=ROOT_NO_PTRACE_CAP)
    assert not ok and "Operation not permitted" in why
    # ...and against root's own full-capability process.
    with PlainProgram(procs, tmp_path) as prog:
        r = check(tdebug, prog.debuggee_pid, prefix=ROOT_NO_PTRACE_CAP)
        assert r.returncode == 1
        assert "it holds capabilities tdebug lacks" in r.stderr
        ok, why = try_ptrace(procs, prog.debuggee_pid, prefix=ROOT_NO_PTRACE_CAP)
        assert not ok and "Operation not permitted" in why
    # With the capability, both are fine, and the kernel agrees.
    assert check(tdebug, theirs.pid).returncode == 0
    assert try_ptrace(procs, theirs.pid)[0]


def test_refuse_not_dumpable(tdebug, procs, as_nobody):
    p = start_waiter(procs, prefix=as_nobody, undumpable=True)
    r = check(tdebug, p.pid, prefix=as_nobody)
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot attach to pid {p.pid}: it is not dumpable")
    ok, why = try_ptrace(procs, p.pid, prefix=as_nobody)
    assert not ok and "Operation not permitted" in why
    assert check(tdebug, p.pid).returncode == 0  # root may


def test_refuse_when_ptrace_is_blocked(tdebug, procs, tmp_path):
    prefix = seccomp_no_ptrace_prefix()
    if prefix is None:
        pytest.skip("no seccomp filter for this architecture")
    with PlainProgram(procs, tmp_path) as prog:
        r = check(tdebug, prog.debuggee_pid, prefix=prefix)
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot attach to pid {prog.debuggee_pid}: ptrace is "
                                   f"blocked for tdebug: tracing even its own child failed: "
                                   f"Operation not permitted")
        ok, why = try_ptrace(procs, prog.debuggee_pid, prefix=prefix)
        assert not ok and "Operation not permitted" in why
        # The listing says it once for all.
        r = run(prefix + [tdebug, "ps"])
        assert r.returncode == 0
        assert "tdebug: warning: ptrace is blocked for tdebug" in r.stderr
        assert columns(ps_text(tdebug, prefix=prefix)[prog.debuggee_pid])[5] == "ptrace-blocked"


def test_gdb_with_file_capability(tdebug, procs, tmp_path):
    """'setcap cap_sys_ptrace+ep' on gdb lets a user attach to another
    user's process: tdebug predicts it from gdb's file capabilities (not
    its own), and gdb really attaches."""
    nobody = NOBODY_KEEPING_BOUNDS
    with gdb_with_cap_sys_ptrace() as (_, gdb), PlainProgram(procs, tmp_path) as prog:
        pid = str(prog.debuggee_pid)
        r = run(nobody + [tdebug, "ps", "--check", pid])
        assert r.returncode == 1 and "it runs as user 'root'" in r.stderr
        r = run(nobody + [tdebug, "ps", "--check", pid], env=clean_env(TDEBUG_GDB=gdb))
        assert r.returncode == 0, r.stderr
        r = run(nobody + [gdb, "-nx", "-p", pid, "-batch", "-ex", "detach"])
        assert r.returncode == 0, r.stderr
        assert f"[Inferior 1 (process {pid}) detached]" in r.stdout


def test_json_survives_bytes_that_are_not_utf8(tdebug, procs, tmp_path):
    prog = tmp_path / "bytes.py"
    prog.write_text("import sys, time\nprint('ready', flush=True)\ntime.sleep(600)\n")
    p = procs.start([PYTHON.encode(), str(prog).encode(), b"caf\xc3\xa9", b"\xff\xfeend"],
                    stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    row = ps_json(tdebug)[p.pid]
    # Kept, escaped by tdebug's convention (tdebug(1), JSON OUTPUT): one
    # argument that is not UTF-8 escapes the whole list, and says so.
    assert row["command"][2:] == ["caf\u00e9", "\\xff\\xfeend"]
    assert row["command_escaped"] is True


# --- the command line

@pytest.mark.parametrize("args, message", [
    (["--check", "abc"], "--check needs a process id, not 'abc'"),
    (["--check"], "option '--check' needs a process id"),
    (["1234"], "unexpected argument '1234' (to check one process: 'tdebug ps --check 1234')"),
    (["--check", "1", "--all"], "--check and --all do not go together"),
    (["--frob"], "unknown option '--frob'"),
])
def test_usage_errors(tdebug, args, message):
    r = run([tdebug, "ps", *args])
    assert r.returncode == 2
    assert r.stderr == f"tdebug ps: {message}\nsee 'tdebug ps --help'\n"


def test_pipe_gets_whole_command_lines(tdebug, procs, tmp_path):
    with PlainProgram(procs, tmp_path) as prog:
        row = ps_text(tdebug)[prog.debuggee_pid]
        assert row.endswith(" ".join([PYTHON, str(tmp_path / f"plain_{prog.port}.py"),
                                      prog.ready_path]))
        assert re.match(r"\s*\d+\s+\d+\s+root\s+plain\s+no\s+yes\s+-\s", row)


# --- the table at a terminal's width

def start_long_command(procs, tmp_path):
    """A Python process whose command line is wider than any terminal: a
    deep script path, interpreter options and many arguments."""
    deep = tmp_path / "a-rather-long-directory-name" / "and-another-one" / "and-a-third"
    deep.mkdir(parents=True)
    script = deep / f"train_{os.getpid()}.py"
    script.write_text("import sys, time\nprint('ready', flush=True)\ntime.sleep(600)\n")
    args = [PYTHON, "-X", "dev", "-u", str(script)] + [f"--option-{i}=value-{i}" for i in range(12)]
    p = procs.start(args, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    return p, script, args


def ps_at_terminal(tdebug, cols, *args):
    """'tdebug ps ARGS' with a pty of COLS columns as its terminal: its lines."""
    term = Terminal([tdebug, "ps", *args], cols=cols)
    try:
        assert term.wait() == 0
        return term.seen.decode(errors="replace").replace("\r\n", "\n").splitlines()
    finally:
        term.close()


def row_of(lines, pid):
    rows = [l for l in lines if l.split() and l.split()[0] == str(pid)]
    assert len(rows) == 1, lines
    return rows[0]


@pytest.mark.parametrize("cols", [80, 120, 200])
def test_table_fits_the_terminal_and_keeps_the_script(tdebug, procs, tmp_path, cols):
    p, script, args = start_long_command(procs, tmp_path)
    lines = ps_at_terminal(tdebug, cols)
    row = row_of(lines, p.pid)
    shortest = f".../{os.path.basename(PYTHON)} ... .../{script.name} ..."
    # It fits, or (when other processes on this machine widen the columns
    # before COMMAND) it is as short as it can be without losing the name.
    assert len(row) <= cols or row.endswith("  " + shortest), row
    assert script.name in row  # never cut away
    assert " ".join(args) not in row  # it could not fit whole
    # What goes first: the interpreter's directory and options.
    assert f".../{os.path.basename(PYTHON)} ... " in row
    # Room for the first arguments too, unless other processes on the
    # machine (other tests' programs, under load) widened the columns before
    # COMMAND so far that there is none: what flaked at 200 columns.
    start = row.index(f".../{os.path.basename(PYTHON)} ")
    with_first = f".../{os.path.basename(PYTHON)} ... .../{script.name} --option-0=value-0 ..."
    if cols - start >= len(with_first):
        assert f"/{script.name} --option-0=value-0 " in row and row.endswith(" ...")
        assert len(row) <= cols


def test_narrow_terminal_still_shows_the_script(tdebug, procs, tmp_path):
    p, script, _ = start_long_command(procs, tmp_path)
    row = row_of(ps_at_terminal(tdebug, 40), p.pid)
    assert script.name in row  # longer than 40 columns rather than cut


def test_wide_and_pipes_get_whole_lines(tdebug, procs, tmp_path):
    p, script, args = start_long_command(procs, tmp_path)
    whole = " ".join(args)
    assert whole in row_of(ps_at_terminal(tdebug, 80, "--wide"), p.pid)
    assert whole in row_of(ps_at_terminal(tdebug, 80, "-w"), p.pid)
    assert whole in ps_text(tdebug)[p.pid]  # stdout a pipe
