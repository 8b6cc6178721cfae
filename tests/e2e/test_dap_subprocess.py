"""Child processes as child sessions (issue 23): a Python child the
program starts (subprocess) is offered to the client with the
'startDebugging' reverse request (an attach by processId, with the
parent's options), as debugpy's subProcess does; the client opens a second
session with it that stops at a breakpoint in the child.  A child that
runs something else (/bin/true) is not offered; "subProcess": false offers
none.  Through the schema-checked DAP client."""
import pytest

from conftest import PYTHON, SLOW, tdebug_copy_without, wait_until
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


def test_without_the_childrens_sitecustomize_the_launch_says_so_and_goes_on(tdebug, procs,
                                                                            tmp_path):
    """An install that lost python/tdebug-children/sitecustomize.py: the
    launch says children will not wait and how to mend it, and the program
    and its child still run (no child waits 30 s).  A copy of tdebug
    beside links to every companion file of the build but that one."""
    copy = tdebug_copy_without(tdebug, tmp_path / "bin", "python/tdebug-children")
    parent, child, line, stop = programs(tmp_path)
    stop.write_text("")
    dap, offered = parent_session(str(copy), procs, tmp_path)
    dap.start_program("launch", {"program": str(parent), "python": PYTHON,
                                 "args": [str(child), str(stop)],
                                 "console": "internalConsole"})
    assert dap.wait_event("exited", timeout=SLOW)["body"]["exitCode"] == 0
    assert "child exit 0" in dap.outputs("stdout")
    said = dap.outputs()
    assert "cannot find tdebug's 'tdebug-children/sitecustomize.py'" in said
    assert "will not wait for their debugger (reinstall tdebug)" in said
    assert "waited" not in said
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


MIDDLE = """\
import multiprocessing as mp
import sys


def work(i):
    return i * 2  # the grandchild's breakpoint


if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    p = ctx.Process(target=work, args=(1,))
    p.start()
    p.join()
    print("grandchild exit", p.exitcode, flush=True)
"""

TOP = """\
import subprocess
import sys

r = subprocess.run([sys.executable] + sys.argv[1:])
print("child exit", r.returncode, flush=True)
"""


class Client:
    """A client as VS Code is one: it opens a session for every child
    process any of its sessions offers, each with the breakpoints of
    BREAKS ({path: [line]})."""

    def __init__(self, tdebug, procs, tmp_path, breaks):
        self.tdebug, self.procs, self.tmp_path, self.breaks = tdebug, procs, tmp_path, breaks
        self.offered = []  # (the offering session's name, arguments)
        self.sessions = []  # (name, Adapter, pid)

    def watch(self, dap, name):
        dap.on_reverse_request("startDebugging",
                               lambda args: self.offered.append((name, args)) or {})

    def open_offered(self):
        """Open a session for each child offered since the last call."""
        while len(self.sessions) - 1 < len(self.offered):
            parent, args = self.offered[len(self.sessions) - 1]
            conf = args["configuration"]
            name = f"{parent}/{conf['processId']}"
            logs = self.tmp_path / name.replace("/", "_")
            logs.mkdir()
            sub = Adapter.start(self.tdebug, self.procs, logs)
            sub.c.initialize(adapterID="tdebug", supportsStartDebuggingRequest=True)
            self.watch(sub, name)
            sub.start_program("attach", conf, lambda d: [d.set_breakpoints(str(p), lines)
                                                         for p, lines in self.breaks.items()])
            self.sessions.append((name, sub, conf["processId"]))

    def first_stop(self):
        """Open sessions as they are offered until one stops: (its name,
        session, pid, stopped body)."""
        found = []

        def stopped():
            self.open_offered()
            for name, sub, pid in self.sessions[1:]:
                ev = [e for e in sub.c.events if e["event"] == "stopped"]
                if ev:
                    found.append((name, sub, pid, ev[0]["body"]))
                    return True
            return False
        wait_until(stopped, timeout=SLOW, what="a stop in a session of a descendant")
        return found[0]

    def run_to_end(self, top):
        """Open what is offered and continue every stop until TOP's program
        exited; then end every session.  Returns the exit event's body."""
        going = {}

        def ended():
            self.open_offered()
            for name, sub, _ in self.sessions[1:]:
                stops = [e for e in sub.c.events if e["event"] == "stopped"]
                for e in stops[going.get(name, 0):]:
                    sub.continue_(e["body"]["threadId"])
                going[name] = len(stops)
            return any(e["event"] == "exited" for e in top.c.events)
        wait_until(ended, timeout=SLOW, what="the end of the program")
        for _, sub, _ in reversed(self.sessions):
            sub.finish()
        return [e for e in top.c.events if e["event"] == "exited"][0]["body"]


def launch_top(tdebug, procs, tmp_path, args, breaks):
    """TOP launched with ARGS in a Client's first session: (client, session)."""
    top = tmp_path / "top.py"
    top.write_text(TOP)
    (tmp_path / "top").mkdir()
    client = Client(tdebug, procs, tmp_path, breaks)
    dap = Adapter.start(tdebug, procs, tmp_path / "top")
    dap.c.initialize(adapterID="tdebug", supportsStartDebuggingRequest=True)
    client.watch(dap, "top")
    client.sessions.append(("top", dap, None))
    dap.start_program("launch", {"program": str(top), "python": PYTHON, "args": args,
                                 "console": "internalConsole"})
    return client, dap


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_grandchildren_are_offered_by_their_parents_session(tdebug, procs, tmp_path, method):
    """A child's own children (multiprocessing's helper processes, its
    workers: spawned, forked by the forkserver, forked) are offered by the
    child's session, each as a child session of its parent; the worker's
    session stops at its breakpoint."""
    middle = tmp_path / "middle.py"
    middle.write_text(MIDDLE)
    line = [i + 1 for i, t in enumerate(MIDDLE.splitlines()) if "grandchild's breakpoint" in t][0]
    client, dap = launch_top(tdebug, procs, tmp_path, [str(middle), method], {middle: [line]})
    name, sub, pid, st = client.first_stop()
    middle_pid = client.offered[0][1]["configuration"]["processId"]
    assert name.startswith(f"top/{middle_pid}/"), (name, client.offered)
    assert st["reason"] == "breakpoint"
    top_frame = sub.frames(st["threadId"])[0]
    assert (top_frame["source"]["path"], top_frame["line"], top_frame["name"]) == \
        (str(middle), line, "work")
    with open(f"/proc/{pid}/status") as f:
        ppid = int([t for t in f if t.startswith("PPid:")][0].split()[1])
    if method != "forkserver":
        assert ppid == middle_pid
    else:  # forked by the forkserver, itself the middle's child
        assert f"top/{middle_pid}/{ppid}/{pid}" == name
    assert client.run_to_end(dap)["exitCode"] == 0
    out = dap.outputs("stdout")
    assert "grandchild exit 0" in out and "child exit 0" in out, out
    assert "goes on without one" not in dap.outputs()


LOADER = """\
from torch.utils.data import DataLoader, Dataset


class Twice(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return i * 2  # the worker's breakpoint


if __name__ == "__main__":
    n = sum(int(b.sum()) for b in DataLoader(Twice(), batch_size=2, num_workers=2))
    print("grandchild exit", 0 if n == 12 else 1, flush=True)
"""


def test_a_childs_dataloader_workers_are_offered_by_its_session(tdebug, procs, tmp_path):
    """A child's torch DataLoader forks its worker pool: each worker is
    offered by the child's session, and stops at a breakpoint in the
    dataset's __getitem__."""
    loader = tmp_path / "loader.py"
    loader.write_text(LOADER)
    line = [i + 1 for i, t in enumerate(LOADER.splitlines()) if "worker's breakpoint" in t][0]
    client, dap = launch_top(tdebug, procs, tmp_path, [str(loader)], {loader: [line]})
    name, sub, pid, st = client.first_stop()
    child_pid = client.offered[0][1]["configuration"]["processId"]
    assert name == f"top/{child_pid}/{pid}", (name, client.offered)
    top_frame = sub.frames(st["threadId"])[0]
    assert (top_frame["source"]["path"], top_frame["line"], top_frame["name"]) == \
        (str(loader), line, "Twice.__getitem__")
    assert client.run_to_end(dap)["exitCode"] == 0
    workers = [n for n, _, _ in client.sessions if n.startswith(f"top/{child_pid}/")]
    assert len(workers) == 2, client.sessions
    assert "grandchild exit 0" in dap.outputs("stdout"), dap.outputs()
