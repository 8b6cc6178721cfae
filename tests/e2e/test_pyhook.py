"""Python breakpoints and stepping by the in-process library
(lib/pyhook/pyhook.c, contract lib/tdebug_pyhook.h), driven as a tdebug
session drives it: the real gdb attached to a real running Python, the
library loaded at a safe point, the control block written through
/proc/PID/mem, stops recognised at tdebug_pyhook_stop.  Pure-Python cases
run on Debian's python3 and on every pyenv CPython the machine has (built
by 'make pyhook-all'); torch and tinytensor on Debian's python3."""
import glob
import os
import pathlib
import subprocess
import time

import pytest

from conftest import PYTHON, clean_env, wait_until
from pyhook_util import (BP_EXCEPTION, BP_FUNCTION, EXC_RAISED, STEP_FINISH, STEP_NEXT, STEP_STEP,
                         STOP_BREAKPOINT, STOP_EXCEPTION, STOP_FINISH, STOP_FUNCTION, STOP_NATIVE,
                         STOP_STEP, Gdb, Pyhook, _field, build_ext, maps_object, marker_line,
                         pyhook_lib)
from tinytensor_util import TT_OUT

PYENV = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))


def interpreters():
    """Debian's python3, then each pyenv CPython 3.8+ (absent ones skip)."""
    params = [pytest.param(PYTHON, id="system")]
    for minor in range(8, 14):
        found = sorted(glob.glob(str(PYENV / "versions" / f"3.{minor}.*" / "bin" / f"python3.{minor}")))
        params.append(pytest.param(found[-1] if found else f"python3.{minor}-absent",
                                   id=f"3.{minor}"))
    return params


def version_of(python):
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return tuple(int(v) for v in out)


def need(python):
    if python.endswith("-absent"):
        pytest.skip(f"no pyenv CPython {python.split('-')[0][6:]} on this machine "
                    f"(looked in {PYENV}/versions)")
    lib = pyhook_lib(python)
    if lib is None:
        pytest.fail(f"the pyhook library for {python} is not built: run 'make pyhook-all'")
    return lib


LOOP = """\
import sys, time

def work(i):
    y = i * 2  # WORK_BODY
    return y

def main():
    total = 0
    i = 0
    print("ready", flush=True)
    while True:
        total += work(i)  # CALL_WORK
        z = i + 1  # PLAIN
        i = z  # AFTER
        if i % 1000 == 0:
            time.sleep(0.001)

main()
"""


class Attached:
    """PROGRAM started with PYTHON, gdb attached to it, the library ready."""

    def __init__(self, procs, tmp_path, python, program, lib, args=(), env=None):
        self.path = tmp_path / "prog.py"
        self.path.write_text(program)
        self.proc = procs.start([python, str(self.path), *args], stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path),
                                env=env or clean_env())
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", line + (self.proc.stdout.read() if self.proc.poll() is not None else "")
        self.g = Gdb(["-p", str(self.proc.pid)], procs)
        self.h = Pyhook(self.g, self.proc.pid, lib)

    def line(self, marker, path=None):
        return marker_line(path or self.path, marker)


@pytest.fixture
def attach(procs, tmp_path):
    made = []

    def make(python, program, lib, **kw):
        a = Attached(procs, tmp_path, python, program, lib, **kw)
        made.append(a)
        return a
    yield make
    for a in made:
        a.g.close()


def first_stop(attach, python, marker=None, program=LOOP, bps=None):
    """PROGRAM attached, the library installed with a line breakpoint at
    MARKER (or BPS), and its first stop: (Attached, report)."""
    a = attach(python, program, need(python))
    a.h.attach_and_install(bps or [dict(id=1, file="prog.py", line=a.line(marker))])
    return a, a.h.cont_to_hook()


# ---- breakpoints

@pytest.mark.parametrize("python", interpreters())
def test_line_breakpoint_in_a_loop_already_running(attach, python):
    lib = need(python)
    a = attach(python, LOOP, lib)
    line = a.line("# PLAIN")
    a.h.attach_and_install([dict(id=7, file="prog.py", line=line)])
    for _ in range(2):
        r = a.h.cont_to_hook()
        assert (r["reason"], r["breakpoint_id"], r["line"]) == (STOP_BREAKPOINT, 7, line)
        assert r["file"] == str(a.path) and r["function"] == "main"
        assert r["tid"] in (0, a.proc.pid)
    assert a.h.bp_num(0, "hits") == 2
    assert a.h.bp_num(0, "bound") >= 1
    # disabled by a table edit: the next stop is the other breakpoint
    a.h.write_bp(0, id=7, file="prog.py", line=line, enabled=0)
    a.h.write_bp(1, id=8, file=str(a.path), line=a.line("# AFTER"))
    a.h.bump()
    r = a.h.cont_to_hook()
    assert (r["reason"], r["breakpoint_id"], r["line"]) == (STOP_BREAKPOINT, 8, a.line("# AFTER"))
    assert a.g.num("tdebug_pyhook_control.applied_generation") == \
        a.g.num("tdebug_pyhook_control.generation")


@pytest.mark.parametrize("python", interpreters())
def test_function_breakpoint_stops_at_first_body_line(attach, python):
    a, r = first_stop(attach, python, bps=[dict(id=3, kind=BP_FUNCTION, function="work")])
    assert (r["reason"], r["breakpoint_id"], r["line"], r["function"]) == \
        (STOP_FUNCTION, 3, a.line("# WORK_BODY"), "work")


LATER = """\
import os, sys, time
print("ready", flush=True)
d = sys.argv[1]
while not os.path.exists(os.path.join(d, "go")):
    time.sleep(0.01)
sys.path.insert(0, d)
import latermod
while True:
    latermod.f()
    time.sleep(0.001)
"""

LATERMOD = """\
def f():
    x = 1  # LATER_LINE
    return x
"""


@pytest.mark.parametrize("python", interpreters())
def test_breakpoint_in_a_module_imported_later(attach, python, tmp_path):
    lib = need(python)
    mod = tmp_path / "latermod.py"
    mod.write_text(LATERMOD)
    a = attach(python, LATER, lib, args=(str(tmp_path),))
    line = marker_line(mod, "# LATER_LINE")
    a.h.attach_and_install([dict(id=1, file="latermod.py", line=line)])
    assert a.h.bp_num(0, "bound") == 0
    (tmp_path / "go").write_text("")
    r = a.h.cont_to_hook()
    assert (r["reason"], r["breakpoint_id"], r["line"]) == (STOP_BREAKPOINT, 1, line)
    assert r["file"] == str(mod)


THREADS = """\
import threading, time

def worker():
    n = 0
    while True:
        n += 1  # WORKER_LINE
        if n % 100 == 0:
            sorted([3, 1, 2], key=lambda v: -v)  # Python called from C
            time.sleep(0.001)

t = threading.Thread(target=worker, daemon=True)
t.start()
print("ready", flush=True)
lock = threading.Lock()
lock.acquire()
lock.acquire()  # MAIN_BLOCKED: the main thread waits in native code for ever
"""


@pytest.mark.parametrize("python", interpreters())
def test_breakpoint_in_a_thread_while_main_is_in_native_code(attach, python):
    a, r = first_stop(attach, python, "# WORKER_LINE", program=THREADS)
    assert (r["reason"], r["line"], r["function"]) == (STOP_BREAKPOINT, a.line("# WORKER_LINE"), "worker")
    assert r["tid"] != a.proc.pid
    # every thread is stopped (gdb's all-stop); main sits in the lock wait
    threads = a.g.cmd("-thread-info")
    assert threads.count("state=\"stopped\"") >= 2 and "running" not in threads


# ---- stepping

@pytest.mark.parametrize("python", interpreters())
def test_step_into_a_python_function(attach, python):
    a, r = first_stop(attach, python, "# CALL_WORK")
    assert r["line"] == a.line("# CALL_WORK")
    r = a.h.step(STEP_STEP, r)
    assert (r["reason"], r["line"], r["function"], r["step_mode"]) == \
        (STOP_STEP, a.line("# WORK_BODY"), "work", STEP_STEP)


@pytest.mark.parametrize("python", interpreters())
def test_step_at_a_line_calling_nothing_stops_at_the_next_line(attach, python):
    a, r = first_stop(attach, python, "# PLAIN")
    r = a.h.step(STEP_STEP, r)
    assert (r["reason"], r["line"], r["function"]) == (STOP_STEP, a.line("# AFTER"), "main")


@pytest.mark.parametrize("python", interpreters())
def test_next_and_finish(attach, python):
    a, r = first_stop(attach, python, "# CALL_WORK")
    r = a.h.step(STEP_NEXT, r)          # over work(): the next line of main
    assert (r["reason"], r["line"], r["function"]) == (STOP_STEP, a.line("# PLAIN"), "main")
    # the breakpoint again, into work(), then finish back to main's call line
    r = a.h.cont_to_hook()
    assert r["line"] == a.line("# CALL_WORK")
    r = a.h.step(STEP_STEP, r)
    assert r["function"] == "work"
    r = a.h.step(STEP_FINISH, r)
    assert (r["reason"], r["line"], r["function"]) == (STOP_FINISH, a.line("# CALL_WORK"), "main")
    # and on to the next line with next
    r = a.h.step(STEP_NEXT, r)
    assert (r["reason"], r["line"]) == (STOP_STEP, a.line("# PLAIN"))


@pytest.mark.parametrize("python", interpreters())
def test_step_from_a_safe_point_outside_the_hook(attach, python):
    """A step that starts where no hook stop is (here: the entry of the
    evaluator on the main thread): tdebug writes the request and calls
    tdebug_pyhook_step_arm()."""
    lib = need(python)
    a = attach(python, LOOP, lib)
    a.h.attach_and_install([])
    a.h.safe_point()
    a.h.poke_int("step.tstate", 0, 8)
    a.h.poke_int("step.frame", 0, 8)
    a.h.poke_int("step.line", 0)
    tstate = a.g.num("(long) PyGILState_GetThisThreadState()")
    a.h.poke_int("step.tstate", tstate, 8)
    a.h.poke_int("step.mode", STEP_NEXT)
    assert a.g.num("(int) tdebug_pyhook_step_arm()") == 0, a.g.eval("tdebug_pyhook_control.error")
    assert a.g.num("tdebug_pyhook_control.step.armed") == 1
    r = a.h.cont_to_hook()
    assert r["reason"] in (STOP_STEP, STOP_FINISH) and r["tstate"] == tstate
    assert r["file"] == str(a.path)


FLOW = """\
import sys, time

def boom():
    raise ValueError("x")  # BOOM

def gen():
    yield 1  # GEN_1
    yield 2

def rec(n):
    if n == 0:  # REC_TEST
        return 0
    return rec(n - 1) + 1  # REC_CALL

def main():
    print("ready", flush=True)
    while True:
        try:
            boom()  # CALL_BOOM
        except ValueError:  # EXCEPT
            pass  # HANDLER
        for x in gen():  # FOR_GEN
            y = x  # GEN_BODY
        rec(2)  # CALL_REC
        time.sleep(0.001)

main()
"""


@pytest.mark.parametrize("python", interpreters())
def test_steps_across_exceptions_generators_and_recursion(attach, python):
    """The same stops on every CPython: next over a call that raises goes
    to the handler; step into a generator, next over its yield back to the
    loop; finish from a frame the exception unwinds stops in the caller's
    handler; next over a recursive call does not stop in the inner frames
    of the same code."""
    lib = need(python)
    a = attach(python, FLOW, lib)
    L = a.line
    a.h.attach_and_install([dict(id=1, file="prog.py", line=L("# CALL_BOOM")),
                            dict(id=2, file="prog.py", line=L("# CALL_REC"))])
    seen = []
    r = a.h.cont_to_hook()
    if r["breakpoint_id"] == 2:
        # Attached while the loop was past CALL_BOOM: the first hit is CALL_REC.
        r = a.h.cont_to_hook()
    assert (r["breakpoint_id"], r["line"]) == (1, L("# CALL_BOOM"))
    for mode in (STEP_NEXT, STEP_NEXT, STEP_NEXT, STEP_STEP, STEP_NEXT, STEP_NEXT):
        r = a.h.step(mode, r)
        seen.append((r["reason"], r["line"], r["function"]))
    assert seen == [(STOP_STEP, L("# EXCEPT"), "main"), (STOP_STEP, L("# HANDLER"), "main"),
                    (STOP_STEP, L("# FOR_GEN"), "main"), (STOP_STEP, L("# GEN_1"), "gen"),
                    (STOP_STEP, L("# FOR_GEN"), "main"), (STOP_STEP, L("# GEN_BODY"), "main")]
    r = a.h.cont_to_hook()
    assert (r["breakpoint_id"], r["line"]) == (2, L("# CALL_REC"))
    seen = []
    for mode in (STEP_STEP, STEP_NEXT, STEP_NEXT):
        r = a.h.step(mode, r)
        seen.append((r["reason"], r["line"], r["function"]))
    assert seen == [(STOP_STEP, L("# REC_TEST"), "rec"), (STOP_STEP, L("# REC_CALL"), "rec"),
                    (STOP_STEP, L("# CALL_REC"), "main")]
    r = a.h.cont_to_hook()
    assert (r["breakpoint_id"], r["line"]) == (1, L("# CALL_BOOM"))
    r = a.h.step(STEP_STEP, r)
    assert (r["reason"], r["line"], r["function"]) == (STOP_STEP, L("# BOOM"), "boom")
    r = a.h.step(STEP_FINISH, r)
    assert (r["reason"], r["line"], r["function"]) == (STOP_FINISH, L("# EXCEPT"), "main")


# ---- stepping into native code, on every interpreter

NATIVE_OPS = """\
import sys, time
sys.path.insert(0, sys.argv[1])
import pyhookext

def go(v, w, xs, flag):
    a = v + 1  # OP_ADD
    b = v[0]  # SUBSCR
    c = v.size  # GETTER
    d = v < w  # COMPARE
    e = v.norm()  # METHOD
    f = pyhookext.scale(v)  # FUNC
    g = [x for x in xs] + [v + 2]  # AFTER_LOOP
    h = (v if flag else w) + 3  # AFTER_BRANCH
    return a

v, w = pyhookext.Vec(3), pyhookext.Vec(4)
print("ready", flush=True)
while True:
    go(v, w, [1, 2], True)
    time.sleep(0.001)
"""

# marker, the C function a step from that line reaches, what the report calls it
NATIVE_LINES = [("# OP_ADD", "vec_add", "Vec.__add__"),
                ("# SUBSCR", "vec_item", "Vec.__getitem__"),
                ("# GETTER", "vec_size", "Vec.size"),
                ("# COMPARE", "vec_compare", "Vec.__lt__"),
                ("# METHOD", "vec_norm", "Vec.norm"),
                ("# FUNC", "ext_scale", "pyhookext.scale"),
                ("# AFTER_LOOP", "vec_add", "Vec.__add__"),
                ("# AFTER_BRANCH", "vec_add", "Vec.__add__")]


@pytest.mark.parametrize("python", interpreters())
def test_step_reaches_the_native_code_of_each_kind_of_instruction(attach, python, build_ext):
    lib = need(python)
    a = attach(python, NATIVE_OPS, lib, args=(str(build_ext(python)),))
    # AFTER_LOOP: the operator after a comprehension's loop, which 3.12+
    # inline in the line (before, the comprehension is a function of its
    # own: the step stops in it).  AFTER_BRANCH: after a conditional
    # expression's jumps.  The value stack's depth is carried across both.
    cases = [c for c in NATIVE_LINES if c[0] != "# AFTER_LOOP" or version_of(python) >= (3, 12)]
    lines = [a.line(m) for m, _, _ in cases]
    a.h.attach_and_install([dict(id=i + 1, file="prog.py", line=n) for i, n in enumerate(lines)])
    a.g.cli("sharedlibrary pyhookext")
    r = a.h.cont_to_hook()
    while r["line"] != lines[0]:  # armed in the middle of a call to go()
        r = a.h.cont_to_hook()
    for i, ((marker, func, what), line) in enumerate(zip(cases, lines)):
        if i:
            r = a.h.cont_to_hook()
        assert (r["reason"], r["line"]) == (STOP_BREAKPOINT, line), (marker, r)
        r = a.h.step(STEP_STEP, r)
        assert (r["reason"], r["line"], r["native_what"]) == (STOP_NATIVE, line, what), (marker, r)
        where = a.g.cli_text(f"info symbol {r['native_addr']}")
        assert where.startswith(func + " in section .text of ") and "pyhookext" in where, where


@pytest.mark.parametrize("python", interpreters())
def test_writing_mode_0_cancels_an_armed_step(attach, python, build_ext):
    """What a session does when a step into native code gets there: the
    step was reported as native, the session armed a `next` in case the
    call never reaches that code, then the native breakpoint hit and the
    session cancels the `next` by writing mode 0.  The next stop is the
    breakpoint's again, not the end of that `next`."""
    lib = need(python)
    a = attach(python, NATIVE_OPS, lib, args=(str(build_ext(python)),))
    line = a.line("# OP_ADD")
    a.h.attach_and_install([dict(id=1, file="prog.py", line=line)])
    r = a.h.step(STEP_STEP, a.h.cont_to_hook())
    assert r["reason"] == STOP_NATIVE
    a.h.request_step(STEP_NEXT, r)
    b = _field(a.g.cmd(f"-break-insert -t *{r['native_addr']}"), "number")
    assert _field(a.g.cont(), "bkptno") == b
    assert a.g.num("tdebug_pyhook_control.step.armed") == 1
    a.h.poke_int("step.mode", 0)
    for _ in range(2):
        r = a.h.cont_to_hook()
        assert (r["reason"], r["line"], r["step_mode"]) == (STOP_BREAKPOINT, line, 0), r
    assert a.g.num("tdebug_pyhook_control.step.armed") == 0


@pytest.mark.parametrize("python", interpreters())
def test_an_edit_at_a_stop_outside_the_hook_applies_at_the_next_call(attach, python):
    """A breakpoint set at a stop that is not the hook's (here the
    evaluator's entry): tdebug writes the table and, on 3.12+, the
    library's sync_eval_frame at sync_slot; the next Python call applies
    it, and it hits in the loop that was already running."""
    lib = need(python)
    a = attach(python, LOOP, lib)
    a.h.attach_and_install([])
    a.h.safe_point()
    line = a.line("# PLAIN")
    a.h.write_bp(0, id=5, file="prog.py", line=line)
    a.h.bump()
    slot = a.g.num("tdebug_pyhook_control.sync_slot")
    assert bool(slot) == (version_of(python) >= (3, 12))
    r = a.h.cont_to_hook()
    assert (r["reason"], r["breakpoint_id"], r["line"]) == (STOP_BREAKPOINT, 5, line)
    if slot:
        # the interpreter's eval_frame slot holds its own value again
        assert int.from_bytes(a.h.peek(slot, 8), "little") == 0


# ---- exceptions

RAISING = """\
import time

def work(i):
    return i * 2

def boom():
    return 1 / 0  # BOOM

print("ready", flush=True)
while True:
    for i in range(20000):
        work(i)
    try:
        boom()
    except ZeroDivisionError:
        pass
    time.sleep(0.001)
"""


@pytest.mark.parametrize("python", interpreters())
def test_an_exception_slot_traces_no_frame_that_wants_no_line(attach, python):
    """An exception slot stops where the exception is raised, and the
    frames around it, which have no breakpoint, run without line events
    (3.8-3.11: the trace function gets the exception without them;
    evaltrace.c): between two stops 20000 calls, none of them traced."""
    lib = need(python)
    a = attach(python, RAISING, lib)
    a.h.attach_and_install([dict(id=1, kind=BP_EXCEPTION, function="ZeroDivisionError",
                                 exc_when=EXC_RAISED)])
    counts = []
    for _ in range(2):
        r = a.h.cont_to_hook()
        assert (r["reason"], r["breakpoint_id"], r["line"]) == (
            STOP_EXCEPTION, 1, a.line("# BOOM")), r
        counts.append((a.g.num("tdebug_pyhook_control.stats_frames"),
                       a.g.num("tdebug_pyhook_control.stats_traced")))
    frames, traced = counts[1][0] - counts[0][0], counts[1][1] - counts[0][1]
    if version_of(python) < (3, 12):  # 3.12+: sys.monitoring, no frame hook
        assert frames >= 20000, counts
    assert traced < 10, counts


# ---- detaching

@pytest.mark.parametrize("python", interpreters())
def test_disable_removes_every_hook(attach, python, procs):
    a, r = first_stop(attach, python, "# PLAIN")
    assert r["reason"] == STOP_BREAKPOINT
    assert a.g.num("tdebug_pyhook_control.traced_threads") >= 1
    a.h.detach()
    pid = a.proc.pid
    a.g.close()
    # the process runs on, untraced
    wait_until(lambda: open(f"/proc/{pid}/status").read().count("TracerPid:\t0"), what="detach")
    assert a.proc.poll() is None
    time.sleep(0.2)
    # look again, twice: the library is still mapped, says it is out of the
    # way, and is no longer called (its frame count stands still)
    frames = []
    for _ in range(2):
        g = Gdb(["-p", str(pid)], procs)
        try:
            g.cli("sharedlibrary libtdebug-pyhook")
            assert g.num("tdebug_pyhook_control.installed") == 0
            assert g.num("tdebug_pyhook_control.disable") == 0
            assert g.num("tdebug_pyhook_control.traced_threads") == 0
            frames.append(g.num("tdebug_pyhook_control.stats_frames"))
            g.cmd("-target-detach")
        finally:
            g.close()
        time.sleep(0.3)
    assert frames[0] == frames[1]
    assert a.proc.poll() is None


# ---- torch and tinytensor (Debian's python3)

TORCH = """\
import time
import torch

def helper(t):
    return t * 2  # HELPER_BODY

x = torch.ones(2)
y = torch.ones(2)
print("ready", flush=True)
while True:
    a = torch.add(x, y)  # TORCH_ADD
    b = x + y  # TENSOR_ADD
    c = helper(a)  # CALL_HELPER
    time.sleep(0.001)
"""


@pytest.fixture
def torch_attached(attach, torch_available):
    lib = pyhook_lib(PYTHON)
    assert lib, "run 'make'"
    a = attach(PYTHON, TORCH, lib)
    return a


def native_stop(a, marker):
    a.h.attach_and_install([dict(id=1, file="prog.py", line=a.line(marker))])
    r = a.h.cont_to_hook()
    assert r["line"] == a.line(marker)
    r = a.h.step(STEP_STEP, r)
    assert (r["reason"], r["line"]) == (STOP_NATIVE, a.line(marker)), r
    assert r["native_addr"]
    return r


def test_step_into_torch_from_torch_add(torch_attached):
    a = torch_attached
    r = native_stop(a, "# TORCH_ADD")
    assert "libtorch_python" in maps_object(a.proc.pid, r["native_addr"])
    assert r["native_what"] == "torch.add"
    # tdebug's temporary breakpoint there is the next stop
    b = _field(a.g.cmd(f"-break-insert -t *{r['native_addr']}"), "number")
    stopped = a.g.cont()
    assert _field(stopped, "bkptno") == b


def test_step_into_torch_from_tensor_plus_tensor(torch_attached):
    a = torch_attached
    r = native_stop(a, "# TENSOR_ADD")
    lib = maps_object(a.proc.pid, r["native_addr"])
    assert "libtorch_python" in lib or "libtorch_cpu" in lib, lib
    assert r["native_what"] == "Tensor.__add__"
    b = _field(a.g.cmd(f"-break-insert -t *{r['native_addr']}"), "number")
    assert _field(a.g.cont(), "bkptno") == b


def test_next_over_a_torch_call_and_finish_to_the_caller(torch_attached):
    a = torch_attached
    a.h.attach_and_install([dict(id=1, file="prog.py", line=a.line("# TORCH_ADD")),
                            dict(id=2, kind=BP_FUNCTION, function="helper")])
    r = a.h.cont_to_hook()
    if r["breakpoint_id"] == 2:  # armed after TORCH_ADD in this round of the loop
        r = a.h.cont_to_hook()
    assert r["line"] == a.line("# TORCH_ADD")
    r = a.h.step(STEP_NEXT, r)
    assert (r["reason"], r["line"]) == (STOP_STEP, a.line("# TENSOR_ADD"))
    r = a.h.cont_to_hook()
    assert (r["reason"], r["line"]) == (STOP_FUNCTION, a.line("# HELPER_BODY"))
    r = a.h.step(STEP_FINISH, r)
    assert (r["reason"], r["line"], r["function"]) == (STOP_FINISH, a.line("# CALL_HELPER"), "<module>")


TT = """\
import sys, time
sys.path.insert(0, sys.argv[1])
import tinytensor
x = tinytensor.ones(2)
print("ready", flush=True)
while True:
    y = x + 1  # TT_ADD
    time.sleep(0.001)
"""


def test_tinytensor_step_reaches_the_bindings_source_line(attach):
    lib = pyhook_lib(PYTHON)
    a = attach(PYTHON, TT, lib, args=(str(TT_OUT),))
    r = native_stop(a, "# TT_ADD")
    assert "libtt_python" in maps_object(a.proc.pid, r["native_addr"])
    a.g.cli("sharedlibrary libtt_python")
    a.g.cmd(f"-break-insert -t *{r['native_addr']}")
    stopped = a.g.cont()
    assert _field(stopped, "func") == "tt_pytensor_add"
    assert _field(stopped, "file").endswith("tt_python_tensor.c")
    assert int(_field(stopped, "line")) > 0
