"""Child processes as child sessions (issue 23): a Python child the
program starts (subprocess) is offered to the client with the
'startDebugging' reverse request (an attach by processId, with the
parent's options), as debugpy's subProcess does; the client opens a second
session with it that stops at a breakpoint in the child.  A child that
runs something else (/bin/true) is not offered; "subProcess": false offers
none.  Through the schema-checked DAP client."""
import pytest

from conftest import PYTHON, SLOW, wait_until
from tdap_util import Adapter

CHILD = """\
import os
import sys
import time


def work(i):
    return i * 2  # the child's breakpoint


total = 0
deadline = time.monotonic() + 600
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    total += work(1)
    time.sleep(0.02)
print("child done")
"""

PARENT = """\
import subprocess
import sys

subprocess.run(["true"])
r = subprocess.run([sys.executable, sys.argv[1], sys.argv[2]])
print("child exit", r.returncode)
"""


def programs(tmp_path):
    child = tmp_path / "child.py"
    child.write_text(CHILD)
    parent = tmp_path / "parent.py"
    parent.write_text(PARENT)
    line = [i + 1 for i, t in enumerate(CHILD.splitlines()) if "the child's breakpoint" in t][0]
    return parent, child, line, tmp_path / "stop"


def parent_session(tdebug, procs, tmp_path):
    """The client's first session (logs under TMP_PATH/p), and the list the
    'startDebugging' requests it gets are put in (each answered success)."""
    (tmp_path / "p").mkdir()
    dap = Adapter.start(tdebug, procs, tmp_path / "p")
    dap.c.initialize(adapterID="tdebug", supportsStartDebuggingRequest=True)
    offered = []
    dap.on_reverse_request("startDebugging", lambda args: offered.append(args) or {})
    return dap, offered


def child_session(tdebug, procs, tmp_path, offered, path, line, index=0):
    """The session the client opens for child INDEX offered (the first by
    default), with a breakpoint at PATH:LINE: (the session, its first
    stop's body)."""
    wait_until(lambda: len(offered) > index, timeout=SLOW, what="the startDebugging request")
    logs = tmp_path / f"c{index}"
    logs.mkdir()
    sub = Adapter.start(tdebug, procs, logs)
    sub.initialize()
    sub.start_program("attach", offered[index]["configuration"],
                      lambda d: d.set_breakpoints(str(path), [line]))
    return sub, sub.stopped()[1]


def test_python_child_is_offered_and_its_session_stops_in_it(tdebug, procs, tmp_path):
    parent, child, line, stop = programs(tmp_path)
    dap, offered = parent_session(tdebug, procs, tmp_path)
    dap.start_program("launch", {"program": str(parent), "python": PYTHON,
                                 "args": [str(child), str(stop)], "raw": True,
                                 "console": "internalConsole"})
    # The client's second session, with the configuration offered.
    sub, st = child_session(tdebug, procs, tmp_path, offered, child, line)
    (args,) = offered
    conf = args["configuration"]
    assert args["request"] == "attach" and conf["request"] == "attach"
    assert conf["type"] == "tdebug" and conf["raw"] is True
    pid = conf["processId"]
    assert conf["name"] == f"tdebug: child process {pid} (Python + C++)"
    assert sub.wait_event("process")["body"]["systemProcessId"] == pid
    assert st["reason"] == "breakpoint"
    top = sub.frames(st["threadId"])[0]
    assert (top["source"]["path"], top["line"], top["name"]) == (str(child), line, "work")
    sub.finish()  # detached: the child goes on
    stop.write_text("")
    assert dap.wait_event("exited", timeout=SLOW)["body"]["exitCode"] == 0
    assert "child exit 0" in dap.outputs("stdout")
    assert len(offered) == 1  # /bin/true was not offered
    dap.finish()


def test_sub_process_false_offers_nothing(tdebug, procs, tmp_path):
    parent, child, line, stop = programs(tmp_path)
    stop.write_text("")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": str(parent), "python": PYTHON, "subProcess": False,
                                 "args": [str(child), str(stop)], "console": "internalConsole"})
    assert dap.wait_event("exited", timeout=SLOW)["body"]["exitCode"] == 0
    assert "child exit 0" in dap.outputs("stdout")
    assert not dap.reverse_requests
    dap.finish()


MP = """\
import multiprocessing as mp
import os
import sys
import time


def work(i):
    return i * 2  # the worker's breakpoint


def worker(stop):
    deadline = time.monotonic() + 600
    while not os.path.exists(stop) and time.monotonic() < deadline:
        work(1)
        time.sleep(0.02)


if __name__ == "__main__":
    mp.set_start_method("fork")
    started = 1  # the parent's breakpoint
    p = mp.Process(target=worker, args=(sys.argv[1],))
    p.start()
    p.join()
    print("worker exit", p.exitcode)
"""


def test_forked_worker_is_offered_with_the_parent_stopped_in_python_before(tdebug, procs,
                                                                           tmp_path):
    """A multiprocessing worker forked (no exec) from a parent whose
    Python hook is loaded (it stopped at a Python breakpoint first)."""
    prog = tmp_path / "mp.py"
    prog.write_text(MP)
    lines = MP.splitlines()
    parent_bp = [i + 1 for i, t in enumerate(lines) if "the parent's breakpoint" in t][0]
    worker_bp = [i + 1 for i, t in enumerate(lines) if "the worker's breakpoint" in t][0]
    stop = tmp_path / "stop"
    dap, offered = parent_session(tdebug, procs, tmp_path)
    dap.start_program("launch", {"program": str(prog), "python": PYTHON, "args": [str(stop)],
                                 "console": "internalConsole"},
                      lambda d: d.set_breakpoints(str(prog), [parent_bp]))
    i, st = dap.stopped()
    dap.continue_(st["threadId"])
    sub, st = child_session(tdebug, procs, tmp_path, offered, prog, worker_bp)
    top = sub.frames(st["threadId"])[0]
    assert (top["line"], top["name"]) == (worker_bp, "work")
    sub.finish()
    stop.write_text("")
    assert dap.wait_event("exited", timeout=SLOW)["body"]["exitCode"] == 0
    assert "worker exit 0" in dap.outputs("stdout")
    dap.finish()


FIRST = """\
first = 1  # the child's first line
print("child", first)
"""

ROUNDS = """\
import subprocess
import sys

for i in range(int(sys.argv[2])):
    r = subprocess.run([sys.executable, sys.argv[1]])
    print("round", i, r.returncode, flush=True)
"""


def test_child_waits_for_its_session_a_breakpoint_on_its_first_line_stops_every_time(
        tdebug, procs, tmp_path):
    """A Python child waits at its start until the session the client opens
    for it has placed its breakpoints and said configurationDone: a
    breakpoint on the first line of its script is hit, round after round
    (without the wait the child is past it, or gone, when gdb attaches)."""
    child = tmp_path / "first.py"
    child.write_text(FIRST)
    parent = tmp_path / "rounds.py"
    parent.write_text(ROUNDS)
    rounds = 4
    dap, offered = parent_session(tdebug, procs, tmp_path)
    dap.start_program("launch", {"program": str(parent), "python": PYTHON,
                                 "args": [str(child), str(rounds)],
                                 "console": "internalConsole"})
    for i in range(rounds):
        sub, st = child_session(tdebug, procs, tmp_path, offered, child, 1, index=i)
        assert st["reason"] == "breakpoint", st
        top = sub.frames(st["threadId"])[0]
        assert (top["source"]["path"], top["line"]) == (str(child), 1)
        sub.finish()  # detached: the child goes on
        wait_until(lambda: f"round {i} 0" in dap.outputs("stdout"), timeout=SLOW,
                   what=f"the end of round {i}")
    assert dap.wait_event("exited", timeout=SLOW)["body"]["exitCode"] == 0
    assert dap.outputs("stdout").count("child 1") == rounds
    assert "goes on without one" not in dap.outputs()
    dap.finish()
