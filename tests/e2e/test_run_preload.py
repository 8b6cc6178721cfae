"""'tdebug run --preload': the program starts outside gdb with the
preloaded library, pauses at torch._C, tdebug attaches, stops in PyInit__C
and the program goes on; its stdio is tdebug's, its exit status is passed
through, and it never outlives tdebug."""
import json
import os
import signal
import subprocess

from conftest import PYTHON, SLOW, clean_env, run, wait_until
from paused_util import pid_exists
from pty_util import Terminal

PREFIX = ["run", "--preload"]


def test_batch_stop_in_pyinit_and_the_programs_status(tdebug, torch_available):
    r = run([tdebug, *PREFIX, "--batch", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
             "import torch"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tdebug: pid ") and " loaded torch._C (/" in lines[0]
    assert lines[0].endswith(") and waits: attaching")
    assert lines[1].startswith("tdebug: stopped at the import of torch._C: in its init function, "
                               "before it runs (/")
    assert " in PyInit__C () from " in lines[2]
    assert lines[-1] == "tdebug: program exited with status 0"
    # The library announced itself once and was released, never timed out.
    assert "waiting for a debugger" in r.stderr and "continuing" not in r.stderr

    # The program's own status is tdebug's, the default stop is torch._C's.
    r = run([tdebug, *PREFIX, "--batch", PYTHON, "-c", "import torch, sys; sys.exit(5)"])
    assert r.returncode == 5, r.stderr
    assert "tdebug: stopped at the import of torch._C" in r.stdout
    assert r.stdout.splitlines()[-1] == "tdebug: program exited with status 5"


def test_json(tdebug, torch_available):
    r = run([tdebug, *PREFIX, "--json", "--", PYTHON, "-c", "import torch; print('to stderr')"])
    assert r.returncode == 0, r.stderr
    events = [json.loads(line) for line in r.stdout.splitlines()]
    assert [e["event"] for e in events] == ["announced", "stopped", "exited"], events
    assert events[1]["reason"] == "import" and events[1]["frames"][0]["function"] == "PyInit__C"
    assert events[2] == {"event": "exited", "status": 0, "signalled": False}
    # stdout carries only JSON: the program's own stdout went to stderr.
    assert "to stderr\n" in r.stderr


def test_a_program_that_never_imports_torch(tdebug):
    # A stop was asked for and never happened: 1, as 'tdebug run' does.
    r = run([tdebug, *PREFIX, "--batch", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
             "print('plain')"])
    assert r.returncode == 1
    assert r.stdout == "plain\ntdebug: program exited with status 0\n"
    assert r.stderr == ("tdebug: warning: the program never imported 'torch._C' "
                        "(--stop-at-import): it never loaded its file, so tdebug never attached\n")
    # No stop asked for: the program's status, and the reason nothing stopped.
    r = run([tdebug, *PREFIX, "--batch", "--", PYTHON, "-c", "import sys; sys.exit(3)"])
    assert r.returncode == 3
    assert r.stdout == "tdebug: program exited with status 3\n"
    assert "the program never loaded torch._C" in r.stderr


def test_stdio_passes_through(tdebug, torch_available):
    code = ("import sys, torch\n"
            "line = sys.stdin.readline().strip()\n"
            "print('read', line[::-1], flush=True)\n"
            "print('on stderr', file=sys.stderr)\n")
    r = run([tdebug, *PREFIX, "--batch", "--", PYTHON, "-c", code], input="olleh\n")
    assert r.returncode == 0, r.stderr
    assert "read hello\n" in r.stdout
    assert "on stderr\n" in r.stderr
    # Every stdout line is tdebug's or the program's, in order.
    assert r.stdout.index("tdebug: stopped at the import") < r.stdout.index("read hello")


def test_killed_with_tdebug(tdebug, tmp_path, procs):
    pidfile = tmp_path / "pid"
    tmpdir = tmp_path / "t"  # where the run's private announce socket goes
    tmpdir.mkdir()
    code = f"import os, time; open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    for how in ("SIGINT", "SIGTERM", "SIGKILL"):
        pidfile.unlink(missing_ok=True)
        t = procs.start([tdebug, *PREFIX, "--batch", "--", PYTHON, "-c", code],
                        env=clean_env(TMPDIR=tmpdir), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
        wait_until(lambda: pidfile.exists() and pidfile.read_text(), what="the program to start")
        pid = int(pidfile.read_text())
        assert [p.name[:11] for p in tmpdir.iterdir()] == ["tdebug-run-"]
        os.kill(t.pid, getattr(signal, how))  # tdebug only, not its group
        out, err = t.communicate(timeout=SLOW)
        assert t.returncode == {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -9}[how], err
        wait_until(lambda: not pid_exists(pid), what=f"the program to die ({how})")
        if how == "SIGKILL":
            break  # nothing can clean up after SIGKILL but the program's death
        assert out == {"SIGINT": "tdebug: interrupted: the program was killed\n",
                       "SIGTERM": "tdebug: terminated by SIGTERM: the program was killed\n"}[how]
        assert list(tmpdir.iterdir()) == []


def test_interrupted_under_gdb_kills_the_program(tdebug, tmp_path, procs, torch_available):
    pidfile = tmp_path / "pid"
    code = (f"import os, time, torch; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
            "time.sleep(600)")
    t = procs.start([tdebug, *PREFIX, "--batch", "--", PYTHON, "-c", code],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: pidfile.exists() and pidfile.read_text(), what="the program to run on")
    pid = int(pidfile.read_text())
    t.send_signal(signal.SIGINT)
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 130, err
    assert "tdebug: stopped at the import of torch._C" in out
    assert out.splitlines()[-1] == "tdebug: interrupted: the program was killed"
    wait_until(lambda: not pid_exists(pid), what="the program to die")


def test_interactive_through_a_terminal(tdebug, torch_available):
    term = Terminal([tdebug, *PREFIX, "--", PYTHON, "-c",
                     "import torch; print('value', torch.ones(2).sum().item())"])
    try:
        term.expect("tdebug: stopped at the import of torch._C")
        term.expect("(tdebug) ")
        assert "PyInit__C ()" in term.command("bt")
        term.continue_to_exit("value 2.0")
    finally:
        term.close()


def test_quit_kills_the_program(tdebug, torch_available):
    term = Terminal([tdebug, *PREFIX, "--", PYTHON, "-c", "import torch; print('never here')"])
    try:
        term.expect("(tdebug) ")
        term.send("quit")
        term.expect("tdebug: quit: the program was killed")
        assert term.wait() == 0
        assert "never here" not in term.seen.decode(errors="replace")
    finally:
        term.close()
