"""'tdebug run' and the program's Python children (issue 23): each child
is said at the terminal with its pid, command line and the 'tdebug attach
PID' that debugs it; with --wait-children it waits at its start until a
debugger attached, so a breakpoint on its script's first line stops.
Through a pty, as a user at a terminal."""
import json
import re
import subprocess

from conftest import PYTHON, SLOW, clean_env

CHILD = 'first = 1  # the child\'s first line\nprint("child", first, flush=True)\n'
PARENT = """\
import subprocess
import sys

for i in range(int(sys.argv[2])):
    r = subprocess.run([sys.executable, sys.argv[1], "round", str(i)])
    print("round", i, r.returncode, flush=True)
"""


def programs(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT)
    return parent, child


def child_line(term):
    """The pid and the command line of the next child the terminal says."""
    said = term.expect("(with -b FILE:LINE to stop in it)")
    m = re.search(r"the program started Python child pid (\d+) \((.*?)\); it waits up to "
                  r"(\d+) s for a debugger: in another terminal, tdebug attach (\d+)", said)
    assert m and m.group(1) == m.group(4), said
    return int(m.group(1)), m.group(2), int(m.group(3))


def test_wait_children_a_breakpoint_on_a_childs_first_line_stops(tdebug, procs, terminal,
                                                                 tmp_path):
    parent, child = programs(tmp_path)
    rounds = 3
    term = terminal([tdebug, "run", "--wait-children=120", "--", PYTHON, str(parent),
                     str(child), str(rounds)])
    for i in range(rounds):
        pid, command, waits = child_line(term)
        assert command == f"{PYTHON} {child} round {i}" and waits == 120
        # The user's second terminal.
        a = procs.start([tdebug, "attach", "--batch", "-b", f"{child}:1", str(pid)],
                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = a.communicate(timeout=SLOW)[0]
        assert a.returncode == 0, out
        assert f"stopped at Python breakpoint 1 ({child}:1)" in out, out
        assert f'File "{child}", line 1, in <module>' in out, out
        term.expect(f"round {i} 0")
    assert term.wait() == 0
    assert "goes on without one" not in term.seen.decode()


def test_children_are_said_with_the_attach_line(tdebug, terminal, tmp_path):
    parent, child = programs(tmp_path)
    term = terminal([tdebug, "run", "--", PYTHON, str(parent), str(child), "1"])
    said = term.expect("until you do)")
    m = re.search(r"the program started Python child pid (\d+) \((.*?)\): in another terminal, "
                  r"tdebug attach (\d+) debugs it \('run --wait-children' holds children at their "
                  r"start until you do\)", said)
    assert m and m.group(1) == m.group(3), said
    assert m.group(2) == f"{PYTHON} {child} round 0"
    term.expect("round 0 0")
    assert term.wait() == 0


LINGER = """\
import os
import time

parent = os.getppid()
deadline = time.monotonic() + 600
while os.getppid() == parent and time.monotonic() < deadline:
    time.sleep(0.05)
"""
STARTS = """\
import subprocess
import sys

subprocess.run(["true"])
child = subprocess.Popen([sys.executable, sys.argv[1], "lingering"])
stop_here = 1
child.kill()
"""


def test_info_children_lists_them_at_a_stop(tdebug, terminal, tmp_path):
    linger = tmp_path / "linger.py"
    linger.write_text(LINGER)
    prog = tmp_path / "starts.py"
    prog.write_text(STARTS)
    term = terminal([tdebug, "run", "-b", f"{prog}:6", "--", PYTHON, str(prog), str(linger)])
    said = term.expect("until you do)")
    pid = int(re.search(r"Python child pid (\d+)", said).group(1))
    term.expect("(tdebug) ")
    term.send("info children")
    listing = term.expect("(tdebug) ")
    rows = [t.split() for t in listing.splitlines() if t.strip().startswith("pid ")]
    assert len(rows) == 2, listing  # true, ended; the Python child, running
    assert rows[0][2] == "ended", listing
    assert rows[1][:3] == ["pid", str(pid), "running"], listing
    assert f"{PYTHON} {linger} lingering  (tdebug attach {pid})" in listing, listing
    term.send("continue")
    assert term.wait() == 0


def test_json_child_event_and_the_users_own_sitecustomize_still_runs(tdebug, procs, tmp_path):
    """--json says each child as a 'child' event; with --wait-children the
    program's PYTHONPATH keeps the user's entries after tdebug's, and the
    sitecustomize tdebug's hides runs in the program and in each child."""
    parent, child = programs(tmp_path)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os, sys\nsys.stderr.write(f'user sitecustomize in {os.getpid()}\\n')\n")
    # A debugger that attaches as soon as the child is said: the child
    # waits for one (--wait-children), so the event comes first.
    p = procs.start([tdebug, "run", "--json", "--wait-children=120", "--", PYTHON, str(parent),
                     str(child), "1"], env=clean_env(PYTHONPATH=site),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    events = []
    for line in p.stdout:
        events.append(json.loads(line))
        if events[-1]["event"] == "child":
            ev = events[-1]
            a = procs.start([tdebug, "attach", "--batch", str(ev["pid"])],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            assert a.wait(timeout=SLOW) == 0
    err = p.stderr.read()
    assert p.wait(timeout=SLOW) == 0, err
    (ev,) = [e for e in events if e["event"] == "child"]
    assert ev["command"] == f"{PYTHON} {child} round 0" and ev["waits"] == 120
    assert ev["message"].startswith(f"the program started Python child pid {ev['pid']} (")
    # tdebug's look at the interpreter, the program, the child.
    ran = re.findall(r"user sitecustomize in (\d+)", err)
    assert len(ran) == 3 and ran[-1] == str(ev["pid"]), err
    assert "goes on without one" not in err
    assert "round 0 0" in err  # the program's stdout is on stderr with --json
