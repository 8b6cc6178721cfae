"""A session at a real terminal, driven through a pseudo-terminal the way a
person does (Ctrl-C reaches the whole foreground process group): never
stuck, every way out leaves an attached process running and untraced, and
stops that read like gdb's (arguments, source line, a finish's value, the
fault address), with Enter repeating a step and gdb's frame and thread
commands naming the frames tdebug names."""
import json
import os
import signal
import subprocess
import textwrap
import time
import uuid

import pytest

from conftest import (PYTHON, SLOW, ROOT, parent_of, proc_state, processes_with, run, tracer_of,
                      wait_until)
from tinytensor_util import marked_line, tt_env

WALKTHROUGH = str(ROOT / "samples" / "tinytensor_walkthrough.py")
CRASH = str(ROOT / "samples" / "crash_native.py")


def gdb_child_of(pid):
    for p in os.listdir("/proc"):
        if p.isdigit() and parent_of(int(p)) == pid:
            try:
                with open(f"/proc/{p}/comm") as f:
                    if f.read().strip() == "gdb":
                        return int(p)
            except OSError:
                pass
    return None


# ---- Ctrl-C in --batch / --json ends the session ----

@pytest.mark.parametrize("mode", ["--batch", "--json"])
def test_ctrl_c_in_batch_run_kills_the_program_and_exits_130(tdebug, terminal, mode):
    marker = "tdebug-test-" + uuid.uuid4().hex
    t = terminal([tdebug, "run", mode, "--", PYTHON, "-c",
                  "import time; print('ready', flush=True); time.sleep(600)", marker])
    t.expect("ready")
    wait_until(lambda: processes_with(marker), what="the program to run")
    time.sleep(0.3)
    t.ctrl_c()
    assert t.wait() == 130
    assert "interrupted: the program was killed" in t.seen.decode()
    wait_until(lambda: not processes_with(marker), what="the program to be killed")


def test_sigint_the_program_sends_itself_is_not_a_ctrl_c(tdebug):
    # Only the terminal's Ctrl-C ends a batch session; a program's own
    # os.kill(SIGINT) is a stop like any signal, and the program goes on.
    r = run([tdebug, "run", "--batch", "--", PYTHON, "-c",
             "import os, signal\nsignal.signal(signal.SIGINT, lambda *a: print('handled'))\n"
             "os.kill(os.getpid(), signal.SIGINT)\nprint('after')"])
    assert "tdebug: program received SIGINT" in r.stdout
    assert r.returncode == 0, r.stderr


# ---- attach: Ctrl-C during a running command gives the prompt back ----

SLEEPER = "import time\nprint('ready', flush=True)\nwhile True:\n    time.sleep(600)\n"


@pytest.fixture
def sleeper(procs):
    p = procs.start([PYTHON, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    return p


@pytest.mark.parametrize("command", ["finish", "next", "step", "continue"])
def test_ctrl_c_during_a_running_command_in_attach_gives_the_prompt_back(
        tdebug, terminal, sleeper, command):
    t = terminal([tdebug, "attach", str(sleeper.pid)])
    t.expect("(tdebug) ")
    t.send(command)
    wait_until(lambda: proc_state(sleeper.pid) == "S", what="the target to run again")
    time.sleep(0.3)
    t.ctrl_c()
    out = t.expect("(tdebug) ")
    assert "tdebug: interrupted" in out
    t.send("bt")
    assert "clock_nanosleep" in t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0
    assert tracer_of(sleeper.pid) == 0 and proc_state(sleeper.pid) == "S"


def test_sigterm_while_attached_detaches_with_143(tdebug, procs, sleeper):
    t = procs.start([tdebug, "attach", "--batch", "--break", "no_such_function_xyz",
                     str(sleeper.pid)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(sleeper.pid) != 0 and proc_state(sleeper.pid) == "S",
               what="the target to run under gdb")
    t.send_signal(signal.SIGTERM)
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 143, err
    assert f"tdebug: detached from pid {sleeper.pid}" in out
    assert tracer_of(sleeper.pid) == 0 and proc_state(sleeper.pid) == "S"


def test_attached_process_that_exits_ends_the_session(tdebug, terminal, procs, tmp_path):
    flag = tmp_path / "go"
    p = procs.start([PYTHON, "-c", "import os, sys, time\nprint('ready', flush=True)\n"
                     "while not os.path.exists(sys.argv[1]):\n    time.sleep(0.05)\n",
                     str(flag)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send("continue")
    wait_until(lambda: proc_state(p.pid) in ("S", "R"), what="the target to run")
    flag.touch()
    t.expect(f"tdebug: pid {p.pid} exited with status 0")
    assert t.wait() == 0


# ---- gdb dying at the prompt is reported ----

@pytest.mark.parametrize("how", ["run", "attach"])
def test_gdb_killed_while_the_prompt_waits_exits_125(tdebug, terminal, sleeper, how):
    args = [tdebug, "run", "--", PYTHON, "-c", SLEEPER] if how == "run" \
        else [tdebug, "attach", str(sleeper.pid)]
    t = terminal(args)
    if how == "run":
        t.expect("ready")
        t.ctrl_c()
    t.expect("(tdebug) ")
    gdb = gdb_child_of(t.proc.pid)
    assert gdb, "no gdb under tdebug"
    os.kill(gdb, signal.SIGKILL)
    assert t.wait() == 125
    assert "gdb was killed by signal 9" in t.seen.decode()
    if how == "attach":
        wait_until(lambda: tracer_of(sleeper.pid) == 0, what="the ptrace to end with gdb")
        wait_until(lambda: proc_state(sleeper.pid) == "S", what="the target to run on")


# ---- breakpoints at the prompt bind; one call stops once ----

ADDS = textwrap.dedent("""\
    import sys, time, torch
    x = torch.ones(2)
    print("ready", flush=True)
    sys.stdin.readline()
    for i in range(3):
        x = x + 1
    print("done", x.tolist(), flush=True)
""")


def test_break_at_the_prompt_reads_the_library_and_stops_once_a_call(
        tdebug, terminal, procs, tmp_path, torch_available):
    script = tmp_path / "adds.py"
    script.write_text(ADDS)
    p = procs.start([PYTHON, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    text=True)
    assert p.stdout.readline().strip() == "ready"
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send("break at::_ops::add_Tensor::call")
    out = t.expect("(tdebug) ")
    assert "Breakpoint 1: at::_ops::add_Tensor::call" in out and "pending" not in out
    t.send("continue")
    p.stdin.write("\n")
    p.stdin.flush()
    for hit in range(3):
        out = t.expect("(tdebug) ")
        assert "tdebug: stopped at breakpoint 1 (at::_ops::add_Tensor::call)" in out, out
        assert "@plt" not in out
        t.send("info breakpoints" if hit == 2 else "continue")
    assert "1    breakpoint  y    3" in t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0
    assert p.stdout.readline().startswith("done")


def test_attach_break_on_a_cxx_name_stops_once_a_call(tdebug, procs, tmp_path, torch_available):
    script = tmp_path / "adds.py"
    script.write_text(ADDS)
    p = procs.start([PYTHON, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    text=True)
    assert p.stdout.readline().strip() == "ready"
    t = procs.start([tdebug, "attach", "--json", "-b", "at::_ops::add_Tensor::call", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(p.pid) != 0 and proc_state(p.pid) == "S",
               what="the target to run under gdb")
    time.sleep(0.5)
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.readline().startswith("done")
    out, err = t.communicate(timeout=SLOW)
    stops = [json.loads(l) for l in out.splitlines() if json.loads(l)["event"] == "stopped"]
    assert len(stops) == 3, out
    assert all(s["frames"][0]["function"].startswith("at::_ops::add_Tensor::call") for s in stops)


def test_catch_throw_at_the_prompt_reads_libstdcxx_itself(tdebug, terminal, tmp_path,
                                                         torch_available):
    script = tmp_path / "throws.py"
    script.write_text("import torch\ntry:\n    torch.ones(2, 3) @ torch.ones(4, 5)\n"
                      "except RuntimeError:\n    print('caught', flush=True)\n")
    t = terminal([tdebug, "run", "--stop-at-import", "torch._C", "--", PYTHON, str(script)])
    t.expect("(tdebug) ")
    t.send("catch throw")
    assert "Catchpoint 1 (throw)" in t.expect("(tdebug) ")
    t.send("continue")
    out = t.expect("(tdebug) ")
    assert ("tdebug: C++ exception 'c10::Error' thrown (catchpoint 1): mat1 and mat2 shapes "
            "cannot be multiplied (2x3 and 4x5)") in out
    assert "__cxa_throw" in out and f'File "{script}", line 3, in <module>' in out
    t.send("quit")
    assert t.wait() == 0


# ---- what is never hit is said at the end ----

def test_never_hit_breakpoint_is_listed_with_where_it_bound(tdebug, torch_available):
    # doc/cli.md's own example: x + 1 runs add.Tensor, never at::native::add.
    r = run([tdebug, "run", "--batch", "-b", "at::native::add", "--", PYTHON, "-c",
             "import torch; torch.ones(2) + 1"])
    assert r.returncode == 1, r.stderr
    warning = [l for l in r.stderr.splitlines() if "never hit" in l]
    assert warning == ["tdebug: warning: breakpoint 'at::native::add' was never hit; it bound to "
                       "at::native::add(at::Tensor const&, c10::Scalar const&, c10::Scalar "
                       "const&) in libtorch_cpu.so.1.13"], r.stderr


def test_overloads_all_bind_and_the_end_says_which_hit(tdebug, torch_available):
    r = run([tdebug, "run", "--batch", "-b", "at::native::where", "--", PYTHON, "-c",
             "import torch; torch.where(torch.ones(2) > 0, torch.ones(2), torch.zeros(2))"])
    assert r.returncode == 0, r.stderr
    note = [l for l in r.stdout.splitlines() if "bound to" in l]
    assert len(note) == 1, r.stdout
    hit, never = note[0].split("; hit: ")[1].split("; never hit: ")
    assert hit == ("at::native::where(at::Tensor const&, at::Tensor const&, at::Tensor const&) "
                   "in libtorch_cpu.so.1.13 (1 time)")
    assert never.count("at::native::where(") >= 3


# ---- stops read like gdb ----

def test_stop_shows_arguments_source_and_steps_compactly(tdebug, terminal):
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    t = terminal([tdebug, "run", "-b", "tt_native_add", "--", PYTHON, WALKTHROUGH],
                 env=tt_env())
    out = t.expect("(tdebug) ")
    assert "tdebug: stopped at breakpoint 1 (tt_native_add)" in out
    assert "tt_native_add (self=0x" in out and "at csrc/core/tt_native_cpu.c:" in out
    t.send("next")
    out = t.expect("(tdebug) ")
    assert "tdebug: next: tt_native_add (" in out
    assert "#0 " not in out, "a step shows the new location, not the whole stack"
    t.send("")  # Enter repeats next
    assert "tdebug: next: tt_native_add (" in t.expect("(tdebug) ")
    t.send("finish")
    out = t.expect("(tdebug) ")
    assert "tdebug: finish: returned to tt_ops_add_call (" in out
    assert f"\n{line}\t" in out and "Value returned: $1 = (tt_tensor *) 0x" in out
    t.send("list")
    out = t.expect("(tdebug) ")
    assert f"{line}\t    out = ((add_fn)kernel->fn)(a, b, alpha, err);" in out
    t.send("quit")
    assert t.wait() == 0


def test_frame_commands_name_frames_as_tdebug_does(tdebug, terminal):
    t = terminal([tdebug, "run", "-b", "tt_native_add", "--", PYTHON, WALKTHROUGH],
                 env=tt_env())
    t.expect("(tdebug) ")
    t.send("frame 2")
    assert "#2  0x" in t.expect("(tdebug) ")
    t.send("up")
    out = t.expect("(tdebug) ")
    assert "in PyNumber_Add ()" in out  # named from the symbol table, gdb says ??
    t.send("up")
    out = t.expect("(tdebug) ")
    assert f'File "{WALKTHROUGH}", line' in out  # a Python frame, selected
    t.send("frame 4")
    assert "no frame 4 in the stack tdebug shows" in t.expect("(tdebug) ")
    t.send("info threads")
    assert '"python3" in tt_native_add ()' in t.expect("(tdebug) ")
    t.send("bt 2")
    out = t.expect("(tdebug) ")
    assert "#0 " in out and "#1 " in out and "#2 " not in out and "More stack frames" in out
    t.send("quit")
    assert t.wait() == 0


def test_crash_stop_shows_the_fault_address(tdebug):
    r = run([tdebug, "run", "--batch", "--", PYTHON, CRASH])
    assert r.returncode == 128 + signal.SIGSEGV
    assert "tdebug: program received SIGSEGV (Segmentation fault) at address 0x10" in r.stdout
    assert "add_kernel_float64 (out=0x" in r.stdout
    r = run([tdebug, "run", "--json", "--", PYTHON, CRASH])
    stop = json.loads(r.stdout.splitlines()[0])
    assert stop["fault_address"] == "0x10" and stop["signal"] == "SIGSEGV"


def test_tab_completes_command_names(tdebug, terminal):
    t = terminal([tdebug, "run", "-b", "tt_native_add", "--", PYTHON, WALKTHROUGH],
                 env=tt_env())
    t.expect("(tdebug) ")
    os.write(t.master, b"info breakp\t\n")
    assert "tt_native_add at csrc/core/tt_native_cpu.c" in t.expect("(tdebug) ")
    os.write(t.master, b"break tt_native_fil\t\n")
    assert "Breakpoint 2: tt_native_fill_" in t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0


# ---- --commands ----

def test_commands_file_then_batch(tdebug, tmp_path):
    cmds = tmp_path / "cmds"
    cmds.write_text("next\nfinish\ninfo breakpoints\n")
    r = run([tdebug, "run", "-x", str(cmds), "-b", "tt_native_add", "--", PYTHON, WALKTHROUGH],
            env=tt_env())
    assert r.returncode == 0, r.stderr
    assert "(tdebug) next\ntdebug: next: tt_native_add (" in r.stdout
    assert "(tdebug) finish\ntdebug: finish: returned to tt_ops_add_call (" in r.stdout
    assert "1    breakpoint  y    1" in r.stdout
    assert "tdebug: program exited with status 0" in r.stdout


def test_commands_file_with_json_gives_one_event_a_command(tdebug, tmp_path):
    cmds = tmp_path / "cmds"
    cmds.write_text("bt 1\nnext\nno-such-command\n")
    r = run([tdebug, "run", "--json", "-x", str(cmds), "-b", "tt_native_add", "--", PYTHON,
             WALKTHROUGH], env=tt_env())
    events = [json.loads(l) for l in r.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[:4] == ["stopped", "backtrace", "stopped", "error"], kinds
    assert events[2]["reason"] == "next"
    assert "no-such-command" in events[3]["message"]
    assert kinds[-1] == "exited"


def test_commands_file_missing_is_a_usage_error(tdebug, tmp_path):
    r = run([tdebug, "run", "-x", str(tmp_path / "nope"), "-c", "pass"])
    assert r.returncode == 2
    assert "cannot read commands from" in r.stderr


def test_py_commands_read_python_frames_from_memory(tdebug, tmp_path):
    # No python3-dbg involved: tdebug hides CPython's debug info from gdb.
    cmds = tmp_path / "cmds"
    cmds.write_text("py-bt\npy-up\npy-up\npy-list\npy-down\npy-down\npy-down\n")
    r = run([tdebug, "run", "-x", str(cmds), "--", PYTHON, CRASH])
    out = r.stdout
    lines = open(CRASH).read().splitlines()
    shift = [i + 1 for i, s in enumerate(lines) if s.startswith("    return batch + offsets")][0]
    call = [i + 1 for i, s in enumerate(lines) if "print(shift(batch, offsets))" in s][0]
    main = [i + 1 for i, s in enumerate(lines) if s == "main()"][0]
    assert ("(tdebug) py-bt\nTraceback (most recent call first):\n"
            f'  File "{CRASH}", line {shift}, in shift\n'
            f'  File "{CRASH}", line {call}, in main\n'
            f'  File "{CRASH}", line {main}, in <module>\n') in out
    assert f'(tdebug) py-up\n    File "{CRASH}", line {shift}, in shift\n{shift}\t' in out
    assert f'(tdebug) py-up\n    File "{CRASH}", line {call}, in main\n{call}\t' in out
    assert f">{call}\t    print(shift(batch, offsets))" in out
    assert "(tdebug) py-down\nUnable to find a newer Python frame" in out


@pytest.mark.parametrize("delay", [0.0, 0.05, 0.1, 0.15, 0.2, 0.3, "traced"])
def test_target_dying_while_attaching_is_noticed_at_once(tdebug, procs, delay):
    # Whenever the target dies (before gdb attaches, between attaching and
    # the stop gdb reports, or after), tdebug says so promptly and ends:
    # it never waits out gdb's timeout.
    p = procs.start([PYTHON, "-c", SLEEPER], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = procs.start([tdebug, "attach", "--batch", str(p.pid)], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
    if delay == "traced":  # the moment gdb attached, before it reports the stop
        wait_until(lambda: tracer_of(p.pid) != 0 or t.poll() is not None, interval=0.001,
                   what="gdb to attach")
    else:
        time.sleep(delay)
    p.kill()
    p.wait()
    out, err = t.communicate(timeout=30)
    assert t.returncode in (0, 1), (t.returncode, out, err)
    if t.returncode == 1:
        assert (f"tdebug: cannot attach to pid {p.pid}: no such process" in err or
                f"tdebug: pid {p.pid} exited while tdebug was attaching to it" in err or
                f"tdebug: cannot attach to pid {p.pid}: it is a zombie" in err), err
