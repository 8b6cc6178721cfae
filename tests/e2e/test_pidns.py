"""A Python process in another PID namespace (a container seen from the
host) keeps its Python frames in 'tdebug stacks', 'ps', 'attach' and in a
core written from the host, though CPython numbers its threads as its own
namespace does; the output names its pid here and inside."""
import json
import os
import shutil

import pytest

from conftest import PYTHON, run, wait_until
from stacks_util import start_ready

PROGRAM = """
import threading, time
def nap():
    while True:
        time.sleep(0.2)
def loop_main():
    while True:
        time.sleep(0.2)
threading.Thread(target=nap, name="sleeper", daemon=True).start()
print("ready", flush=True)
loop_main()
"""


def nspid(pid):
    with open(f"/proc/{pid}/status") as f:
        return [int(x) for l in f if l.startswith("NSpid:") for x in l.split()[1:]]


@pytest.fixture
def contained(procs):
    """The program as pid 1 of a PID namespace of its own; its pid here."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make a PID namespace")
    if not shutil.which("unshare"):
        pytest.fail("unshare is missing: 'make deps' installs util-linux")
    p = start_ready(procs, ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
                            PYTHON, "-c", PROGRAM])

    def child():
        with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
        return kids[0] if kids else None
    pid = wait_until(child, what="the program inside its namespace")
    assert nspid(pid) == [pid, 1]
    return pid


def python_functions(thread):
    return [f["name"] for f in thread.get("frames", []) if f["kind"] == "python"]


def settled(tdebug, pid):
    """The process as 'stacks --json' shows it once both threads are in
    their loops, else None."""
    r = run([tdebug, "stacks", "--json", str(pid)])
    if r.returncode != 0:
        return None
    (proc,) = json.loads(r.stdout)["processes"]
    names = {t.get("python_name"): python_functions(t) for t in proc["threads"]}
    if names.get("MainThread", [None])[0] == "loop_main" and \
            names.get("sleeper", [None])[0] == "nap":
        return proc
    return None


def test_stacks_keep_the_python_frames(tdebug, contained):
    proc = wait_until(lambda: settled(tdebug, contained), what="both threads in their loops")
    assert proc["pid"] == contained and proc["ns_pid"] == 1
    tids = {t["tid"] for t in proc["threads"]}
    with os.scandir(f"/proc/{contained}/task") as it:
        assert tids == {int(e.name) for e in it}  # our numbers, not the container's
    assert all(t["python"] for t in proc["threads"]), proc["threads"]
    text = run([tdebug, "stacks", str(contained)]).stdout
    assert text.startswith(f"Process {contained} (pid 1 in its PID namespace) (Python ")
    assert "(no Python)" not in text
    assert f'Thread {contained} "python3", threading "MainThread"' in text
    assert "in loop_main\n" in text and "in nap\n" in text


def test_ps_names_both_pids(tdebug, contained):
    r = run([tdebug, "ps", "--json"])
    assert r.returncode == 0, r.stderr
    rows = {p["pid"]: p for p in json.loads(r.stdout)["processes"]}
    assert rows[contained]["ns_pid"] == 1
    assert all("ns_pid" not in p for pid, p in rows.items() if len(nspid(pid)) == 1)
    r = run([tdebug, "ps", "--wide"])
    head, *lines = r.stdout.splitlines()
    assert head.split()[:2] == ["PID", "NSPID"]
    (row,) = [l for l in lines if l.split()[0] == str(contained)]
    assert row.split()[1] == "1"


def test_attach_keeps_the_python_frames(tdebug, contained):
    wait_until(lambda: settled(tdebug, contained), what="both threads in their loops")
    r = run([tdebug, "attach", "--batch", str(contained)])
    assert r.returncode == 0, r.stderr
    assert f"tdebug: pid {contained} is pid 1 in its PID namespace (a container)" in r.stderr
    assert "in loop_main\n" in r.stdout and "in nap\n" in r.stdout, r.stdout
    assert nspid(contained) == [contained, 1]  # left running


def test_core_written_from_the_host(tdebug, contained, tmp_path):
    if not shutil.which("gcore"):
        pytest.fail("gcore is missing: 'make deps' installs gdb")
    live = wait_until(lambda: settled(tdebug, contained), what="both threads in their loops")
    prefix = str(tmp_path / "core")
    run(["gcore", "-o", prefix, str(contained)])
    path = f"{prefix}.{contained}"
    assert os.path.exists(path)
    r = run([tdebug, "stacks", "--json", "--core", path])
    assert r.returncode == 0, r.stderr
    (proc,) = json.loads(r.stdout)["processes"]
    # gcore numbers the threads as the host does; CPython's thread states
    # said 1 and 2 (or so): matched by thread pointer, said in a note.
    assert any("matched to its thread by its thread pointer" in n for n in proc["notes"])
    cores = {t["tid"]: t for t in proc["threads"]}
    lives = {t["tid"]: t for t in live["threads"]}
    assert set(cores) == set(lives)
    for tid, t in lives.items():
        assert python_functions(cores[tid]) == python_functions(t), tid
        assert cores[tid]["python_name"] == t["python_name"]
