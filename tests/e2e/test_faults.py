"""A debugger's death never kills the program, and every way out ends the
session (issue 25): gdb and tdebug killed with SIGKILL at each phase of a
session with a Python breakpoint armed, and the program's output, exit
status and speed checked afterwards.  Real gdb, real tdebug, Debian's
python3; no mocks."""
import json
import os
import re
import select
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import (PYTHON, SLOW, comm_of, parent_of, proc_state, processes_with, run,
                      tracer_of, wait_until)


def children_of(pid):
    """PIDs whose parent is PID."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and parent_of(int(entry)) == pid:
            out.append(int(entry))
    return out


def gdb_of(tdebug_pid):
    """The gdb a tdebug runs (its child named gdb)."""
    return wait_until(lambda: next((c for c in children_of(tdebug_pid) if comm_of(c) == "gdb"),
                                   None), what="tdebug's gdb")


# The program reads the hook's own word from the library gdb loaded into it
# (the same file dlopen()ed again is the same handle): lib/tdebug_pyhook.h.
HOOK_STATE = textwrap.dedent("""\
    import ctypes

    class _Control(ctypes.Structure):
        _fields_ = [("magic", ctypes.c_uint64), ("abi", ctypes.c_uint32),
                    ("size", ctypes.c_uint32), ("py_version", ctypes.c_uint32),
                    ("installed", ctypes.c_int32), ("disable", ctypes.c_int32),
                    ("mechanism", ctypes.c_int32), ("generation", ctypes.c_uint64),
                    ("applied_generation", ctypes.c_uint64), ("sync_slot", ctypes.c_uint64),
                    ("sync_eval_frame", ctypes.c_uint64), ("foreign_tracers", ctypes.c_int32),
                    ("n_breakpoints", ctypes.c_int32), ("traced_threads", ctypes.c_int32),
                    ("orphaned", ctypes.c_int32)]

    def hook_state():
        for line in open("/proc/self/maps"):
            if "libtdebug-pyhook" in line:
                lib = ctypes.CDLL(line.split()[-1])
                c = _Control.in_dll(lib, "tdebug_pyhook_control")
                return "installed=%d orphaned=%d" % (c.installed, c.orphaned)
        return "no hook"
""")

# Waits for FLAG, then runs the line with the Python breakpoint (in hit())
# and a C function with a native one (getppid), then says how the hook is.
ARMED = HOOK_STATE + textwrap.dedent("""\
    import os, sys, time

    def hit():
        return os.getppid()  # HIT

    print("ready", flush=True)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.01)
    hit()
    print("after the breakpoints:", hook_state(), flush=True)
    while not os.path.exists(sys.argv[1] + ".end"):
        time.sleep(0.01)
    print("done", flush=True)
""")


def start_program(procs, tmp_path, name, text, *args):
    """Python program TEXT, written to tmp_path/NAME and started with ARGS,
    once it said "ready": (its path, its Popen)."""
    script = tmp_path / name
    script.write_text(text)
    p = procs.start([PYTHON, str(script)] + [str(a) for a in args], stdout=subprocess.PIPE,
                    text=True)
    assert p.stdout.readline().strip() == "ready"
    return script, p


def hook_control(pid):
    """The address of the hook's control block in PID, or None when the hook
    is not loaded: the library's first mapping plus the symbol's value."""
    base = lib = None
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            if "libtdebug-pyhook" in line and base is None:
                fields = line.split()
                base, lib = int(fields[0].split("-")[0], 16) - int(fields[2], 16), fields[-1]
    if lib is None:
        return None
    nm = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                        check=True).stdout
    value = next(int(x.split()[0], 16) for x in nm.splitlines()
                 if x.endswith(" tdebug_pyhook_control"))
    return base + value


def hook_installed_now(pid):
    """control.installed, read from /proc/PID/mem (no debugger needed):
    None when the hook is not loaded."""
    addr = hook_control(pid)
    if addr is None:
        return None
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr + 20)  # magic, abi, size, py_version: then installed
        return int.from_bytes(f.read(4), "little", signed=True)


def line_with(text, marker):
    return next(i + 1 for i, line in enumerate(text.splitlines()) if marker in line)


@pytest.fixture
def armed(procs, tmp_path, tdebug, terminal):
    """A program tdebug attached to, with a Python breakpoint in hit() and a
    native one on getppid, running: (program, its flag file, the tdebug
    terminal)."""
    flag = tmp_path / "flag"
    script, p = start_program(procs, tmp_path, "armed.py", ARMED, flag)
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send(f"break {script}:{line_with(ARMED, '# HIT')}")
    t.expect("(tdebug) ")
    t.send("break getppid")
    t.expect("(tdebug) ")
    t.send("continue")
    wait_until(lambda: hook_installed_now(p.pid) == 1 and proc_state(p.pid) in ("R", "S"),
               what="the hook installed and the program running")
    return p, flag, t


def finish(p, flag):
    """Let the program end; its output and exit status."""
    (flag.parent / (flag.name + ".end")).write_text("")
    out, _ = p.communicate(timeout=SLOW)
    return out, p.returncode


def test_gdb_killed_while_breakpoints_are_armed_leaves_the_program_running(armed):
    p, flag, t = armed
    gdb = gdb_of(t.proc.pid)
    os.kill(gdb, signal.SIGKILL)
    t.wait()  # tdebug ends with its gdb
    flag.write_text("")
    out, status = finish(p, flag)
    # Before: killed by the SIGTRAP of a breakpoint gdb left in the code
    # (status -5); now the program runs on, the hook disarmed.
    assert status == 0, out
    assert "after the breakpoints: installed=0 orphaned=1" in out
    assert "done" in out


# Rounds of a loop in a function with a Python breakpoint on a line that
# never runs: the hook gives that function line events, which is what it
# costs while a session lasts.
LOOP = HOOK_STATE + textwrap.dedent("""\
    import os, sys, time

    def work(n):
        s = 0
        for i in range(n):
            s += i
            if s < 0:
                print("never")  # NEVER
        return s

    print("ready", flush=True)
    while not os.path.exists(sys.argv[1]):
        t0 = time.perf_counter()
        work(300000)
        print("round %.6f %s" % (time.perf_counter() - t0, hook_state()), flush=True)
    print("done", flush=True)
""")


def rounds(p, n, state):
    """The fastest of N rounds of P's loop run with the hook in STATE
    ("installed=1", ...): the rounds before are skipped."""
    times = []
    deadline = time.monotonic() + SLOW
    while len(times) < n:
        assert time.monotonic() < deadline, f"no round with the hook {state}"
        line = p.stdout.readline()
        assert line.startswith("round "), line
        if state in line:
            times.append(float(line.split()[1]))
    return min(times)


def test_tdebug_killed_with_a_breakpoint_armed_gives_the_program_its_speed_back(
        procs, tmp_path, tdebug, terminal):
    flag = tmp_path / "flag"
    script, p = start_program(procs, tmp_path, "loop.py", LOOP, flag)
    plain = rounds(p, 5, "no hook")
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send(f"break {script}:{line_with(LOOP, '# NEVER')}")
    t.expect("(tdebug) ")
    t.send("continue")
    armed = rounds(p, 5, "installed=1 orphaned=0")
    os.kill(t.proc.pid, signal.SIGKILL)
    after = rounds(p, 5, "installed=0 orphaned=1")
    flag.write_text("")
    out, _ = p.communicate(timeout=SLOW)
    print(f"loop rounds: plain {plain:.4f}s, armed {armed:.4f}s ({armed / plain:.2f}x), "
          f"after tdebug's death {after:.4f}s ({after / plain:.2f}x)")
    assert p.returncode == 0 and "done" in out
    # Before: the hook stayed installed, the loop 2.3x to 3.4x slower for the
    # rest of the program's life (issue 25).  What is asserted is the hook's
    # own state in the rounds after the death (installed=0, orphaned=1, read
    # by rounds()); the speed is printed, not asserted: on a loaded machine a
    # round's time says little (bench/ measures it).


def close_input(p):
    """End P's standard input (a pipe of ours)."""
    p.stdin.close()
    p.stdin = None  # what communicate() then leaves alone


def test_end_of_input_while_an_attached_program_runs_detaches_at_once(procs, tmp_path, tdebug):
    flag = tmp_path / "flag"
    script, p = start_program(procs, tmp_path, "armed.py", ARMED, flag)
    t = procs.start([tdebug, "attach", str(p.pid)], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t.stdin.write(f"break {script}:{line_with(ARMED, '# HIT')}\ncontinue\n")
    t.stdin.flush()
    wait_until(lambda: hook_installed_now(p.pid) == 1 and proc_state(p.pid) in ("R", "S"),
               what="the hook installed and the program running")
    close_input(t)
    # Before: attached until the next stop, which never comes here.
    out, _ = t.communicate(timeout=SLOW)
    assert t.returncode == 0, out
    assert tracer_of(p.pid) == 0
    flag.write_text("")
    out, status = finish(p, flag)
    assert status == 0 and "after the breakpoints: installed=0" in out, out


# Stops once at FIRST, then runs until killed.
FOREVER = textwrap.dedent("""\
    import time
    print("started", flush=True)  # FIRST
    while True:
        time.sleep(0.01)
""")


def test_end_of_input_while_a_program_tdebug_started_runs_ends_it_as_quit_does(procs, tmp_path,
                                                                              tdebug):
    script = tmp_path / "forever.py"
    script.write_text(FOREVER)
    t = procs.start([tdebug, "run", "-b", f"{script}:{line_with(FOREVER, '# FIRST')}", "--",
                     PYTHON, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, text=True)
    t.stdin.write("continue\n")
    t.stdin.flush()
    program = wait_until(lambda: next((x for x in processes_with(str(script))
                                       if comm_of(x) == "python3"), None), what="the program")
    wait_until(lambda: proc_state(program) in ("R", "S") and tracer_of(program) != 0
               and "libtdebug-pyhook" in open(f"/proc/{program}/maps").read(),
               what="the program running under gdb")
    close_input(t)
    out, _ = t.communicate(timeout=SLOW)
    assert t.returncode == 0, out
    assert "tdebug: quit: the program was killed" in out
    assert proc_state(program) is None


# Sits in one long native call: a Python breakpoint cannot be armed before
# it returns (the hook loads at a safe point), so the session waits there.
ASLEEP = textwrap.dedent("""\
    import time

    def never():
        return 1  # NEVER

    print("ready", flush=True)
    time.sleep(1000)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                         ids=lambda s: s.name)
def test_a_signal_while_arming_a_python_breakpoint_exits_128_plus_it(procs, tmp_path, tdebug,
                                                                     sig):
    script, p = start_program(procs, tmp_path, "asleep.py", ASLEEP)
    t = procs.start([tdebug, "attach", "--batch", "-b",
                     f"{script}:{line_with(ASLEEP, '# NEVER')}", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Attached and let go again: the session waits for the safe point.
    wait_until(lambda: tracer_of(p.pid) != 0 and proc_state(p.pid) == "S",
               what="the program running under gdb")
    t.send_signal(sig)
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 128 + sig, (out, err)
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
    assert proc_state(p.pid) == "S"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_attaching_exits_128_plus_it(procs, tmp_path, tdebug, sig):
    """However far the attach got when the signal came: 128+N, the program
    left running (killed by the signal itself before tdebug handles any)."""
    script, p = start_program(procs, tmp_path, "asleep.py", ASLEEP)
    for attempt in range(8):
        t = procs.start([tdebug, "attach", "--batch", "-b",
                         f"{script}:{line_with(ASLEEP, '# NEVER')}", str(p.pid)],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        gdb_of(t.pid)
        if attempt % 2:
            wait_until(lambda: tracer_of(p.pid) != 0, what="the attach")
        t.send_signal(sig)
        out, err = t.communicate(timeout=SLOW)
        assert t.returncode in (128 + sig, -sig), (attempt, out, err)
        wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
        assert proc_state(p.pid) == "S"


def test_gdb_killed_as_attach_starts_says_gdb_died(procs, tmp_path, tdebug):
    script, p = start_program(procs, tmp_path, "asleep.py", ASLEEP)
    t = procs.start([tdebug, "attach", "--batch", str(p.pid)], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    os.kill(gdb_of(t.pid), signal.SIGKILL)
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 125, (out, err)
    # Before: "'gdb' does not speak gdb's MI3 ...: gdb 10 or newer is needed".
    assert "MI3" not in err and ("SIGKILL" in err or "Killed" in err), err
    assert proc_state(p.pid) == "S" and tracer_of(p.pid) == 0


def test_signal_sigkill_to_an_attached_program_is_refused_like_kill(procs, tmp_path, tdebug):
    script, p = start_program(procs, tmp_path, "asleep.py", ASLEEP)
    killing = ["signal SIGKILL", "signal 9", "queue-signal KILL", "call kill(getpid(), 9)",
               "print (int) kill(getpid(), SIGKILL)"]
    t = procs.start([tdebug, "attach", str(p.pid)], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = t.communicate("".join(c + "\n" for c in killing + ["kill", "quit"]), timeout=SLOW)
    assert t.returncode == 0, out
    # Before: `kill` was refused, `signal SIGKILL` killed the program.
    refusal = (f"(tdebug) tdebug never kills a process it attached to: 'detach' or 'quit' "
               f"leaves pid {p.pid} running")
    assert out.count(refusal) == len(killing) + 1, out
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
    assert proc_state(p.pid) == "S"


# Its own trace function (as coverage, pdb or debugpy have) over the line
# with the Python breakpoint.
TRACED = textwrap.dedent("""\
    import sys

    def f():
        return 1  # BREAK

    sys.settrace(lambda frame, event, arg: None)
    f()
    print("ran", flush=True)
""")


@pytest.mark.parametrize("output", ["--batch", "--json"])
def test_a_breakpoint_under_the_programs_own_tracer_says_why_it_cannot_stop(tmp_path, tdebug,
                                                                           output):
    script = tmp_path / "traced.py"
    script.write_text(TRACED)
    r = run([tdebug, "run", output, "-b", f"{script}:{line_with(TRACED, '# BREAK')}", "--",
             PYTHON, str(script)])
    # Before: only "Python breakpoint 1 ... was never hit", no reason.
    said = ("Python breakpoints cannot stop in thread {tid} of pid {pid} (f, in '%s'): the "
            "program's own trace function (sys.settrace: coverage, pdb or debugpy) holds that "
            "thread; run it without one to stop there" % script)
    if output == "--json":
        warnings = [e["message"] for e in map(json.loads, r.stdout.splitlines())
                    if e.get("event") == "warning"]
        assert any(re.fullmatch(re.escape(said).replace(r"\{tid\}", r"\d+")
                                .replace(r"\{pid\}", r"\d+"), w) for w in warnings), r.stdout
    else:
        assert re.search(re.escape(said).replace(r"\{tid\}", r"\d+").replace(r"\{pid\}", r"\d+"),
                         r.stderr), r.stderr
        assert "ran" in r.stdout


# A light session (tdebug run -b on a C function): gdb attaches at once,
# and the first trap comes only when the process maps a watched library.
LIGHT = textwrap.dedent("""\
    import os, time
    time.sleep(1.5)
    os.getppid()
    print("after", flush=True)
    time.sleep(1000)
""")


def ended_or_prompted(t, timeout=SLOW):
    """Wait until terminal T's program exits (False) or shows the prompt,
    the program stopped by the Ctrl-C (True)."""
    deadline = time.monotonic() + timeout
    while t.proc.poll() is None:
        if b"(tdebug) " in t.seen:  # no stop came before the Ctrl-C
            return True
        assert time.monotonic() < deadline, ("neither an end nor a prompt",
                                             t.seen.decode(errors="replace"))
        if select.select([t.master], [], [], 0.2)[0]:
            try:
                t.seen += os.read(t.master, 65536)
            except OSError:
                pass
    return False


@pytest.mark.parametrize("how", ["ctrl-c", "sigint"])
def test_ctrl_c_before_the_first_trap_of_a_light_run_ends_it(tmp_path, tdebug, terminal, how):
    """Ctrl-C at the terminal, or SIGINT, at several moments in the window
    between gdb's attach and the first trap: never a hang (it blocked in
    waitpid on a program gdb still traced).  Before gdb holds the program
    the session ends (130); once it does, the Ctrl-C stops the program and
    gives the prompt, as at any moment the program runs under gdb
    (doc/cli.md), and `quit` ends it.  Either way the program is gone."""
    script = tmp_path / "light.py"
    script.write_text(LIGHT)
    for delay in [0.05, 0.1, 0.2, 0.3, 0.45, 0.6]:
        t = terminal([tdebug, "run", "-b", "getppid", "--", PYTHON, str(script)])
        wait_until(lambda: processes_with(str(script)), interval=0.01, what="the program")
        time.sleep(delay)  # not a wait: the moment of the Ctrl-C in the window
        programs = [x for x in processes_with(str(script)) if comm_of(x) == "python3"]
        if how == "ctrl-c":
            t.ctrl_c()
        else:
            os.kill(t.proc.pid, signal.SIGINT)
        # Before: 125 ("interrupted"), or a hang in 10 of 16 runs.
        prompted = ended_or_prompted(t)
        if prompted:
            t.send("quit")
        assert t.wait() == (0 if prompted else 130), (delay, t.seen.decode(errors="replace"))
        for x in programs:
            wait_until(lambda: proc_state(x) in (None, "Z"), what="the program's end")


def test_tdebug_killed_at_a_light_stop_takes_gdb_and_the_program_along(tmp_path, tdebug,
                                                                       terminal):
    script = tmp_path / "light.py"
    script.write_text(LIGHT)
    for attempt in range(4):
        t = terminal([tdebug, "run", "-b", "getppid", "--", PYTHON, str(script)])
        t.expect("(tdebug) ")
        gdb = gdb_of(t.proc.pid)
        programs = [x for x in processes_with(str(script)) if comm_of(x) == "python3"]
        os.kill(t.proc.pid, signal.SIGKILL)
        t.wait()
        wait_until(lambda: proc_state(gdb) in (None, "Z"), what="gdb's end")
        for x in programs:
            wait_until(lambda: proc_state(x) in (None, "Z"), what="the program's end")


def test_gdb_killed_at_a_python_breakpoint_stop_leaves_the_program_running(armed):
    p, flag, t = armed
    flag.write_text("")
    t.expect("stopped at Python breakpoint 1")
    t.expect("(tdebug) ")
    os.kill(gdb_of(t.proc.pid), signal.SIGKILL)
    t.wait()
    # The program goes on from the stop (the native breakpoint on getppid
    # next, which gdb had taken out at the stop), never stopped or killed.
    out, status = finish(p, flag)
    assert status == 0, out
    assert "after the breakpoints: installed=0" in out and "done" in out


# Forks a child (as a DataLoader's workers are) while a Python breakpoint
# is armed; the child runs Python and says how its copy of the hook is.
FORKS = HOOK_STATE + textwrap.dedent("""\
    import os

    def never():
        return 1  # NEVER

    def work():
        return sum(range(10))

    pid = os.fork()
    if pid == 0:
        work()
        print("child:", hook_state(), flush=True)
        os._exit(0)
    os.waitpid(pid, 0)
    print("parent:", hook_state(), flush=True)
""")


def test_a_forked_child_drops_its_copy_of_the_hook(tmp_path, tdebug):
    script = tmp_path / "forks.py"
    script.write_text(FORKS)
    r = run([tdebug, "run", "--batch", "-b", f"{script}:{line_with(FORKS, '# NEVER')}", "--",
             PYTHON, str(script)])
    # Before: the child kept the hook (and its cost) with no session.
    assert "child: installed=0 orphaned=1" in r.stdout, (r.stdout, r.stderr)
    assert "parent: installed=1 orphaned=0" in r.stdout


def test_ctrl_d_while_an_attached_program_runs_detaches_at_once(armed):
    p, flag, t = armed
    os.write(t.master, b"\x04")  # Ctrl-D on an empty line: the terminal's end of input
    assert t.wait() == 0, t.seen.decode(errors="replace")
    assert tracer_of(p.pid) == 0
    flag.write_text("")
    out, status = finish(p, flag)
    assert status == 0 and "after the breakpoints: installed=0" in out, out
