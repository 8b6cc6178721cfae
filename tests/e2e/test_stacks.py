"""'tdebug stacks': merged Python and native stacks of real processes, read
from their memory (no gdb), against gdb's own py-bt, real threads, real
process trees, real torch."""
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, SLOW, clean_env, proc_state, run, tracer_of, wait_until
from stacks_util import (build_stackfix, kinds_and_names, pyenv_python, stacks_json,
                         start_ready, thread_with)


@pytest.fixture(scope="module")
def stackfix(tmp_path_factory):
    return build_stackfix(tmp_path_factory.mktemp("stackfix"))


def fix_env(stackfix):
    return clean_env(PYTHONPATH=stackfix)


def only_process(doc):
    assert len(doc["processes"]) == 1, doc
    return doc["processes"][0]


INTERLEAVE = r"""
import os, stackfix
r, w = os.pipe()
def inner():
    print("ready", flush=True)
    stackfix.block(r)
def middle():
    stackfix.call(inner)
def outer():
    middle()
outer()
"""


def test_python_c_python_c_in_order(tdebug, procs, stackfix):
    p = start_ready(procs, [PYTHON, "-c", INTERLEAVE], env=fix_env(stackfix))
    # 'ready' is printed just before the C call: wait until it is in read().
    def blocked():
        doc, _ = stacks_json(tdebug, p.pid)
        t = only_process(doc)["threads"][0]
        words = kinds_and_names(t["frames"])
        return (doc, words) if "c:stackfix_block" in words else None
    doc, words = wait_until(blocked, what="the C call to block")
    proc = only_process(doc)
    assert proc["python"].startswith("3.11")
    t = proc["threads"][0]
    assert t["tid"] == p.pid and t["merge"] == "ok"
    # Innermost first: C (read) -> stackfix_block -> inner -> stackfix_call
    # -> middle -> outer -> <module>, and nothing Python in between.
    seq = [w for w in words if w in ("c:stackfix_block", "py:inner", "c:stackfix_call",
                                     "py:middle", "py:outer", "py:<module>")]
    assert seq == ["c:stackfix_block", "py:inner", "c:stackfix_call", "py:middle",
                   "py:outer", "py:<module>"], words
    i = words.index("c:stackfix_block")
    assert words[i + 1] == "py:inner", words
    assert words[words.index("c:stackfix_call") + 1] == "py:middle", words
    block = next(f for f in t["frames"] if f["function"] == "stackfix_block")
    assert block["library"].endswith(".so") and "stackfix" in block["library"]
    inner = next(f for f in t["frames"] if f.get("name") == "inner")
    assert inner["file"] == "<string>" and inner["line"] == 6
    # CPython's own frames are folded by default and all there with --raw.
    assert "c:_PyEval_EvalFrameDefault" not in words
    raw, _ = stacks_json(tdebug, "--raw", p.pid)
    raw_words = kinds_and_names(only_process(raw)["threads"][0]["frames"])
    assert raw_words.count("c:_PyEval_EvalFrameDefault") == 2, raw_words

    text = run([tdebug, "stacks", str(p.pid)])
    assert text.returncode == 0, text.stderr
    assert re.search(r'^Process %d \(Python 3\.11\.\d+\): ' % p.pid, text.stdout, re.M)
    assert '  File "<string>", line 6, in inner\n' in text.stdout
    assert re.search(r"^  0x[0-9a-f]{16} stackfix_call\+0x[0-9a-f]+ \(stackfix\.", text.stdout, re.M)


THREADS = r"""
import os, threading, time, stackfix
r, w = os.pipe()
def sleeper():
    time.sleep(1000)
def waiter():
    x = 0
    while True:
        x += 1
threading.Thread(target=sleeper, daemon=True).start()
threading.Thread(target=waiter, daemon=True).start()
def main():
    print("ready", flush=True)
    stackfix.hold_gil(r)
main()
"""


def test_threads_and_the_gil(tdebug, procs, stackfix):
    p = start_ready(procs, [PYTHON, "-c", THREADS], env=fix_env(stackfix))

    def settled():
        doc, _ = stacks_json(tdebug, p.pid)
        proc = only_process(doc)
        main, sleeper, waiter = (thread_with(proc, n) for n in ("main", "sleeper", "waiter"))
        if not (main and sleeper and waiter):
            return None
        if main["gil"] == "held" and waiter["gil"] == "waiting":
            return proc, main, sleeper, waiter
        return None
    proc, main, sleeper, waiter = wait_until(settled, what="main holding the GIL, waiter waiting")
    assert len([t for t in proc["threads"] if t["python"]]) == 3
    assert main["tid"] == p.pid
    assert sleeper["gil"] is None
    assert {main["tid"], sleeper["tid"], waiter["tid"]} == {t["tid"] for t in proc["threads"]}
    words = kinds_and_names(waiter["frames"])
    i = words.index("py:waiter")
    assert words[i:i + 4] == ["py:waiter", "py:run", "py:_bootstrap_inner", "py:_bootstrap"], words
    # The sleeper is in time.sleep: C frames above its Python frame.
    words = kinds_and_names(sleeper["frames"])
    assert words.index("py:sleeper") > 0 and words[0].startswith("c:"), words

    text = run([tdebug, "stacks", str(p.pid)]).stdout
    assert re.search(r'^Thread %d "[^"]*", threading "MainThread" \(holds the GIL\):$'
                     % main["tid"], text, re.M), text
    assert re.search(r'^Thread %d "[^"]*", threading "Thread-\d+[^"]*" \(waiting for the GIL\):$'
                     % waiter["tid"], text, re.M), text
    assert main["python_name"] == "MainThread" and main["gc"] is False
    assert sleeper["python_name"].startswith("Thread-") and sleeper["in_signal"] is False
    # --python shows Python frames only; --native native ones only.
    py, _ = stacks_json(tdebug, "--python", p.pid)
    assert all(f["kind"] == "python" for t in only_process(py)["threads"] for f in t["frames"])
    nat, _ = stacks_json(tdebug, "--native", p.pid)
    assert all(f["kind"] == "native" for t in only_process(nat)["threads"] for f in t["frames"])
    # A thread id stands for its process.
    r = run([tdebug, "stacks", "--python", str(waiter["tid"])])
    assert r.returncode == 0
    assert r.stderr == (f"tdebug: warning: {waiter['tid']} is a thread of process {p.pid}: "
                        "showing that process\n")
    assert r.stdout.startswith(f"Process {p.pid} (Python 3.11")


TREE = r"""
import multiprocessing as mp, time
def work(i):
    time.sleep(1000)
if __name__ == "__main__":
    mp.set_start_method("fork")
    ps = [mp.Process(target=work, args=(i,)) for i in range(4)]
    for p in ps:
        p.start()
    print("ready", flush=True)
    for p in ps:
        p.join()
"""


def test_children_process_tree(tdebug, procs, tmp_path):
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    p = start_ready(procs, [PYTHON, str(script)])

    def all_working():
        doc, _ = stacks_json(tdebug, "--children", p.pid)
        workers = [q for q in doc["processes"] if q["pid"] != p.pid]
        if len(workers) == 4 and all(thread_with(q, "work") for q in workers) and \
                thread_with(doc["processes"][0], "join"):
            return doc
        return None
    doc = wait_until(all_working, what="4 workers in work(), the parent in join()")
    pids = [q["pid"] for q in doc["processes"]]
    assert pids[0] == p.pid and len(set(pids)) == 5
    assert doc["errors"] == []
    for q in doc["processes"]:
        assert q["paused"] and q["pause_ms"] >= 0
    # Every worker was left running (sleeping), none traced.
    for pid in pids:
        assert proc_state(pid) in ("S", "R"), pid
        assert tracer_of(pid) == 0


EXITER = r"""
import sys, threading, stackfix
ev = threading.Event()
for i in range(int(sys.argv[1])):
    threading.Thread(target=ev.wait, daemon=True).start()
stackfix.exit_when_traced()
print("ready", flush=True)
ev.wait()
"""


def test_process_exiting_during_the_snapshot(tdebug, procs, stackfix, tmp_path):
    """The target exits as soon as it sees itself traced, in the middle of
    our pause: a clean error every time it happens, never a crash or hang."""
    script = tmp_path / "exiter.py"
    script.write_text(EXITER)
    exited = 0
    for attempt in range(8):
        p = start_ready(procs, [PYTHON, str(script), "50"], env=fix_env(stackfix))
        r = run([tdebug, "stacks", str(p.pid)])
        if r.returncode == 1:
            assert r.stderr == (f"tdebug: cannot read the stacks of pid {p.pid}: "
                                "it exited during the snapshot\n"), r.stderr
            exited += 1
            assert p.wait(timeout=SLOW) == 0
        else:
            assert r.returncode == 0, r.stderr
            assert f"Process {p.pid}" in r.stdout
    assert exited > 0, "the target never exited during a snapshot"


CORRUPT = r"""
import os, sys, stackcorrupt
r, w = os.pipe()
def victim():
    print("ready", flush=True)
    stackcorrupt.break_and_block(sys.argv[1], r)
def caller():
    victim()
def top():
    caller()
top()
"""


@pytest.mark.parametrize("mode, why", [
    ("unreadable", r"frame at 0x10 is unreadable"),
    ("loop", r"the frame chain loops back to 0x[0-9a-f]+"),
    ("code", r"frame at 0x[0-9a-f]+ does not point to a code object"),
])
def test_corrupt_interpreter_gives_a_marked_partial_stack(tdebug, procs, stackfix, mode, why):
    p = start_ready(procs, [PYTHON, "-c", CORRUPT, mode], env=fix_env(stackfix))

    def damaged():
        doc, _ = stacks_json(tdebug, p.pid)
        t = only_process(doc)["threads"][0]
        return t if "python_partial" in t else None
    t = wait_until(damaged, what="the damaged frame chain")
    assert re.fullmatch(why, t["python_partial"]), t["python_partial"]
    frames = t.get("frames") or t["python_frames"]
    names = [f["name"] for f in frames if f["kind"] == "python"]
    assert names[0] == "victim" and "top" not in names, names
    if mode == "loop":
        assert len(names) < 10, names
    text = run([tdebug, "stacks", str(p.pid)])
    assert text.returncode == 0
    assert re.search(r"^  \(Python stack incomplete: %s\)$" % why, text.stdout, re.M), text.stdout
    assert proc_state(p.pid) in ("S", "R") and tracer_of(p.pid) == 0


SLEEPER = r"""
import time
def tick():
    print("ready", flush=True)
    while True:
        print("tick", flush=True)
        time.sleep(0.05)
tick()
"""


def drain(p):
    """What P printed so far, without blocking."""
    out = b""
    while select.select([p.stdout], [], [], 0)[0]:
        chunk = os.read(p.stdout.fileno(), 65536)
        if not chunk:
            break
        out += chunk
    return out


def test_stopped_stays_stopped_and_running_keeps_running(tdebug, procs):
    p = start_ready(procs, [PYTHON, "-c", SLEEPER])
    # Running: after the snapshot it is not stopped and keeps printing.
    doc, _ = stacks_json(tdebug, p.pid)
    proc = only_process(doc)
    assert proc["job_stopped"] is False and thread_with(proc, "tick")
    assert tracer_of(p.pid) == 0
    assert proc_state(p.pid) in ("S", "R")
    drain(p)
    wait_until(lambda: b"tick" in drain(p), what="the process to tick on")

    # Stopped by job control: still stopped after the snapshot.
    os.kill(p.pid, signal.SIGSTOP)
    wait_until(lambda: proc_state(p.pid) == "T", what="SIGSTOP to take effect")
    doc, _ = stacks_json(tdebug, p.pid)
    proc = only_process(doc)
    assert proc["job_stopped"] is True and thread_with(proc, "tick")
    text = run([tdebug, "stacks", str(p.pid)]).stdout
    assert "note: the process is stopped (job control) and was left stopped" in text
    drain(p)
    time.sleep(0.3)
    assert proc_state(p.pid) == "T"
    assert drain(p) == b"", "a stopped process printed"
    assert tracer_of(p.pid) == 0
    os.kill(p.pid, signal.SIGCONT)
    wait_until(lambda: b"tick" in drain(p), what="the process to tick after SIGCONT")


def test_not_python_missing_and_usage(tdebug, procs):
    p = procs.start(["sleep", "1000"])

    def sleeping():
        doc, _ = stacks_json(tdebug, p.pid)
        proc = only_process(doc)
        words = kinds_and_names(proc["threads"][0]["frames"])
        return proc if any(w.startswith("c:") and "sleep" in w for w in words) else None
    proc = wait_until(sleeping, what="sleep(1) to sleep")
    assert proc["python"] is None
    assert proc["notes"] == ["not a Python process (no _PyRuntime in its executable or a "
                             "libpython): native stacks only"]
    r = run([tdebug, "stacks", "--python", str(p.pid)])
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot read the Python stacks of pid {p.pid}: it is not a "
                        "Python process (leave out --python to see its native stacks)\n")

    # A pid that does not exist: an error, the other pids still shown.
    dead = subprocess.Popen(["true"])
    dead.wait()
    r = run([tdebug, "stacks", str(dead.pid), str(p.pid)])
    assert r.returncode == 1
    assert r.stderr == f"tdebug: cannot read the stacks of pid {dead.pid}: no such process\n"
    assert f"Process {p.pid}: sleep 1000" in r.stdout
    doc, r = stacks_json(tdebug, dead.pid, check=False)
    assert r.returncode == 1 and doc["processes"] == []
    assert doc["errors"] == [{"pid": dead.pid,
                              "error": f"cannot read the stacks of pid {dead.pid}: no such process"}]

    for args, msg in ((["abc"], "'abc' is not a process id"),
                      ([], "no process given (PID..., --children PID or --core CORE)"),
                      (["--native", "--python", "1"], "--native and --python exclude each other"),
                      (["--bogus", "1"], "unknown option '--bogus'")):
        r = run([tdebug, "stacks", *args])
        assert r.returncode == 2, args
        assert r.stderr == f"tdebug stacks: {msg}\nsee 'tdebug stacks --help'\n", r.stderr


ZOMBIE_LEADER = r"""
#include <pthread.h>
#include <unistd.h>
static void *run(void *a) { for (;;) pause(); return a; }
int main(void) { pthread_t t; pthread_create(&t, NULL, run, NULL); pthread_exit(NULL); }
"""


def test_zombie_leader_with_live_threads(tdebug, procs, tmp_path):
    src = tmp_path / "zl.c"
    src.write_text(ZOMBIE_LEADER)
    subprocess.run(["cc", "-o", str(tmp_path / "zl"), str(src), "-lpthread"], check=True)
    p = procs.start([str(tmp_path / "zl")])
    wait_until(lambda: proc_state(p.pid) == "Z", what="the main thread to exit")
    r = run([tdebug, "stacks", str(p.pid)])
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot read the stacks of pid {p.pid}: its main thread has "
                        "exited while 1 other thread runs, and tdebug cannot read such a process "
                        "(give one of its threads to gdb instead: 'gdb -p TID')\n")


def test_permission_refused(tdebug, procs, as_nobody):
    p = procs.start(["sleep", "1000"])
    r = run([*as_nobody, tdebug, "stacks", str(p.pid)])
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot read the stacks of pid {p.pid}: it runs as user 'root' "
                        f"and tdebug runs as 'nobody' (run tdebug as root, e.g. 'sudo tdebug "
                        f"stacks {p.pid}')\n")


def test_unreadable_version_gets_native_stacks_and_working_advice(tdebug, procs):
    """A CPython older than tdebug reads (3.7): native stacks, a note naming
    the version, and advice that works: the gdb command the note gives
    prints the Python stack."""
    exe = pyenv_python("3.7")
    if not exe:
        pytest.skip("no CPython 3.7 (pyenv) on this machine to test an unreadable version")
    code = "import time\ndef nap():\n    print('ready', flush=True)\n    time.sleep(1000)\nnap()\n"
    p = start_ready(procs, [exe, "-c", code])
    doc, _ = stacks_json(tdebug, p.pid)
    proc = only_process(doc)
    assert proc["python"] is None
    note = proc["notes"][0]
    m = re.fullmatch(r"cannot read the Python stacks of pid \d+: it runs Python 3\.7[.\d]*, older "
                     r"than tdebug knows \(tdebug reads CPython 3\.8 to 3\.14; native stacks only; "
                     r"gdb reads its Python stacks with CPython's own helpers: (gdb -p \d+ -batch "
                     r"-ex 'source [^']+' -ex 'thread apply all py-bt')\)", note)
    assert m, note
    assert proc["threads"][0]["frames"], "native stacks are still shown"
    r = run([tdebug, "stacks", "--python", str(p.pid)])
    assert r.returncode == 1 and "it runs Python 3.7" in r.stderr
    advice = run(["sh", "-c", m.group(1)])
    assert 'File "<string>", line 4, in nap' in advice.stdout, advice.stdout + advice.stderr


def test_shared_libpython_interpreter(tdebug, procs):
    """An interpreter whose runtime lives in libpython3.11.so (pyenv, conda,
    uv builds) rather than in the executable."""
    exe = pyenv_python("3.11")
    if not exe:
        pytest.skip("no pyenv Python 3.11 with a shared libpython on this machine")
    code = "import time\ndef nap():\n    print('ready', flush=True)\n    time.sleep(1000)\nnap()\n"
    p = start_ready(procs, [exe, "-c", code])
    maps = open(f"/proc/{p.pid}/maps").read()
    if "libpython3.11" not in maps:
        pytest.skip(f"{exe} links libpython statically")

    def napping():
        doc, _ = stacks_json(tdebug, p.pid)
        t = thread_with(only_process(doc), "nap")
        return t if t and kinds_and_names(t["frames"]).index("py:nap") > 0 else None
    t = wait_until(napping, what="nap() to sleep")
    assert t["merge"] == "ok"
    assert kinds_and_names(t["frames"])[0].startswith("c:")


HOOK = r"""
import time, torch
def hook(grad):
    print("ready", flush=True)
    time.sleep(1000)
    return grad
x = torch.ones(3, requires_grad=True)
y = x * 2
y.register_hook(hook)
def train():
    y.sum().backward()
train()
"""


def test_torch_cpp_frames_between_python_frames(tdebug, procs, torch_available):
    """Python -> libtorch's C++ autograd engine -> a Python hook -> C: the
    C++ frames demangled, with their library, in between."""
    p = start_ready(procs, [PYTHON, "-c", HOOK])

    def sleeping():
        doc, _ = stacks_json(tdebug, p.pid)
        t = thread_with(only_process(doc), "hook")
        return t if t and kinds_and_names(t["frames"])[0].startswith("c:") and \
            kinds_and_names(t["frames"]).index("py:hook") > 0 else None
    t = wait_until(sleeping, what="the hook to sleep")
    words = kinds_and_names(t["frames"])
    hook, train = words.index("py:hook"), words.index("py:train")
    between = t["frames"][hook + 1:train]
    assert any(f["kind"] == "native" and f["function"] and
               f["function"].startswith("torch::autograd::Engine::") and
               "libtorch_cpu" in f["library"] for f in between), between
    assert all(f["kind"] == "native" for f in between[:-2]), between
    assert "py:backward" in words[hook:train + 1]


PYINIT_SCRIPT = r"""
import gdb, json, os, subprocess
out = {out!r}
try:
    bt = gdb.execute("py-bt", to_string=True)
except gdb.error as e:
    bt = "gdb error: %s" % e
pid = gdb.selected_inferior().pid
r = subprocess.run([{tdebug!r}, "stacks", "--python", "--json", str(pid)],
                   capture_output=True, text=True)
full = subprocess.run([{tdebug!r}, "stacks", "--json", str(pid)], capture_output=True, text=True)
with open(out, "w") as f:
    json.dump({{"py_bt": bt, "tid": gdb.selected_thread().ptid[1], "rc": r.returncode,
               "stdout": r.stdout, "stderr": r.stderr, "gdb": os.getpid(),
               "full": [full.returncode, full.stdout, full.stderr]}}, f)
"""


def stop_at_pyinit(tdebug, tmp_path, hide_debug_info):
    """Run 'import torch' under a real gdb to PyInit__C (FIELD-NOTES' quick
    recipe: no automatic symbol loading, a load catchpoint, then the
    breakpoint) and, while gdb holds the process, run py-bt and
    'tdebug stacks --python --json'."""
    out = tmp_path / "result.json"
    script = tmp_path / "at_pyinit.py"
    script.write_text(PYINIT_SCRIPT.format(out=str(out), tdebug=tdebug))
    args = ["gdb", "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    if hide_debug_info:
        args += ["-iex", "set debug-file-directory /nonexistent"]
    args += ["-ex", "set auto-solib-add off", "-ex", r"catch load _C\.cpython", "-ex", "run",
             "-ex", r"sharedlibrary _C\.cpython", "-ex", "break PyInit__C", "-ex", "delete 1",
             "-ex", "continue", "-ex", "source " + str(script), "-ex", "kill",
             "--args", PYTHON, "-c", "import torch"]
    r = run(args)
    assert out.exists(), f"gdb never reached PyInit__C:\n{r.stdout}\n{r.stderr}"
    return json.loads(out.read_text())


def py_bt_frames(text):
    """(file, line or None, function) of each 'File' line of py-bt."""
    return [(m[0], None if m[1] == "?" else int(m[1]), m[2])
            for m in re.findall(r'^  File "([^"]*)", line (\d+|\?), in (\S+)$', text, re.M)]


def tdebug_frames(result):
    assert result["rc"] == 0, result["stderr"]
    doc = json.loads(result["stdout"])
    proc = only_process(doc)
    # The native stacks note is not shown with --python: gdb holds it.
    assert proc["paused"] is False and proc["notes"] == []
    (t,) = [t for t in proc["threads"] if t["tid"] == result["tid"]]
    assert t["gil"] == "held"
    return [(f["file"], f["line"], f["name"]) for f in t["frames"]]


def assert_same_frames(ours, theirs):
    assert len(ours) == len(theirs), (ours, theirs)
    for (of, ol, on), (tf, tl, tn) in zip(ours, theirs):
        assert (of, on) == (tf, tn)
        if tl is None:
            # py-bt gives up on torch/__init__.py's big location table ("line
            # ?"); the line we give is the import being run.
            assert "import" in open(of).read().splitlines()[ol - 1]
        else:
            assert ol == tl


@pytest.fixture(scope="module")
def py_bt_reference(tmp_path_factory):
    return {}


def test_python_frames_match_gdb_py_bt(tdebug, tmp_path, torch_available, py_bt_reference):
    result = stop_at_pyinit(tdebug, tmp_path, hide_debug_info=False)
    theirs = py_bt_frames(result["py_bt"])
    assert len(theirs) >= 10, result["py_bt"]
    assert_same_frames(tdebug_frames(result), theirs)
    py_bt_reference["frames"] = theirs
    # Without --python: the Python stacks, and a note that gdb has the
    # native ones.
    rc, stdout, stderr = result["full"]
    assert rc == 0, stderr
    proc = only_process(json.loads(stdout))
    assert proc["notes"] == [f"native stacks unavailable: it is already traced by pid "
                             f"{result['gdb']} (gdb) (a process has only one tracer: detach or "
                             "quit that debugger first)"]
    (t,) = [t for t in proc["threads"] if t["tid"] == result["tid"]]
    assert t["merge"] == "python-only" and len(t["frames"]) == len(theirs)


def test_python_frames_without_interpreter_debug_info(tdebug, tmp_path, torch_available,
                                                      py_bt_reference):
    """The same stop with CPython's debug info hidden from gdb: py-bt cannot
    read a single frame, tdebug still gives them all."""
    result = stop_at_pyinit(tdebug, tmp_path, hide_debug_info=True)
    assert py_bt_frames(result["py_bt"]) == [], result["py_bt"]
    ours = tdebug_frames(result)
    theirs = py_bt_reference.get("frames")
    if theirs is None:  # run alone: take the reference now
        theirs = py_bt_frames(stop_at_pyinit(tdebug, tmp_path, hide_debug_info=False)["py_bt"])
    assert_same_frames(ours, theirs)


HOSTILE = r"""
import ctypes, os, sys, threading, time
libc = ctypes.CDLL(None)
def named():
    # The OS name of this thread: bytes that are not UTF-8 (PR_SET_NAME).
    libc.prctl(15, b"w\xff\xfe-\"q\\", 0, 0, 0)
    time.sleep(1000)
threading.Thread(target=named, name="py-\"quoted\"\\" + "x" * 300, daemon=True).start()
exec(compile("def in_odd_file():\n    print('ready', flush=True)\n    time.sleep(1000)\n",
             os.fsdecode(b"/tmp/odd-\xff\xfe.py"), "exec"))
in_odd_file()
"""


def test_json_keeps_bytes_that_are_not_utf8(tdebug, procs):
    """A command line, an OS thread name and a Python file name that are
    not UTF-8, a threading name with quotes and backslashes, 300 bytes long:
    all in the JSON, escaped and flagged, none dropped."""
    args = [PYTHON, "-c", HOSTILE, b"arg-\xff\xfe".decode("utf-8", "surrogateescape")]
    p = start_ready(procs, args)

    def named():
        doc, _ = stacks_json(tdebug, p.pid)
        proc = only_process(doc)
        t = next((t for t in proc["threads"] if t["name"] and t["name"].startswith("w\\x")), None)
        return (proc, t) if t and thread_with(proc, "in_odd_file") else None
    proc, t = wait_until(named, what="the thread to rename itself")
    assert proc["command"].endswith("arg-\\xff\\xfe") and proc["command_escaped"] is True
    assert t["name"] == 'w\\xff\\xfe-"q\\\\' and t["name_escaped"] is True
    assert t["python_name"] == 'py-"quoted"\\' + "x" * 300 and "python_name_escaped" not in t
    main = thread_with(proc, "in_odd_file")
    f = next(f for f in main["frames"] if f.get("name") == "in_odd_file")
    assert f["file"] == "/tmp/odd-\\xff\\xfe.py" and f["file_escaped"] is True
    # The text output prints the bytes as they are.
    text = subprocess.run([tdebug, "stacks", str(p.pid)], capture_output=True).stdout
    assert b'File "/tmp/odd-\xff\xfe.py", line 3, in in_odd_file' in text
    assert b' "w\xff\xfe-"q\\"' in text


def test_json_keeps_a_library_path_that_is_not_utf8(tdebug, procs, stackfix, tmp_path):
    """A C extension loaded from a directory whose name is not UTF-8: its
    native frame's library is kept in the JSON, escaped and flagged."""
    odd = os.path.join(os.fsencode(str(tmp_path)), b"lib-\xff")
    os.mkdir(odd)
    for name in os.listdir(stackfix):
        if name.startswith("stackfix"):
            shutil.copy(os.path.join(stackfix, name), os.path.join(odd, os.fsencode(name)))
    code = ("import os, sys, stackfix\nr, w = os.pipe()\nprint('ready', flush=True)\n"
            "stackfix.block(r)\n")
    p = start_ready(procs, [PYTHON, "-c", code], env=clean_env(PYTHONPATH=os.fsdecode(odd)))

    def blocked():
        doc, _ = stacks_json(tdebug, p.pid)
        frames = only_process(doc)["threads"][0]["frames"]
        return next((f for f in frames if f.get("function") == "stackfix_block"), None)
    f = wait_until(blocked, what="the C call to block")
    assert f["library"].startswith(str(tmp_path) + "/lib-\\xff/stackfix"), f
    assert f["library_escaped"] is True
    text = subprocess.run([tdebug, "stacks", str(p.pid)], capture_output=True).stdout
    assert re.search(rb"^  0x[0-9a-f]{16} stackfix_block\+0x[0-9a-f]+ \(stackfix\.", text, re.M)
