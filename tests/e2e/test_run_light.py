"""tdebug run's light session (src/session/light.c): the program started by
tdebug with the preloaded library's action trap, gdb attached with no
library read, stops placed by address.  Each test checks, from gdb's MI
traffic (TDEBUG_TRACE_MI), which kind of session ran, and that what the
session shows is what an ordinary one shows."""
import json
import subprocess

import pytest

from conftest import PYTHON, clean_env, run

LIGHT_SYSROOT = "set sysroot /nonexistent/tdebug-light-session"
ADD = "at::_ops::add_Tensor::call"


def json_events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def traced(tdebug, tmp_path, args, light=True, **kw):
    """Run 'tdebug run ARGS' with its MI traffic traced: (result, the
    commands tdebug sent gdb, the text gdb sent back).  LIGHT: True leaves
    TDEBUG_LIGHT unset, False sets it to 0, a string sets it to that."""
    trace = tmp_path / "mi.trace"
    if trace.exists():
        trace.unlink()
    env = clean_env(TDEBUG_TRACE_MI=str(trace), **({} if light is True else {"TDEBUG_LIGHT": light or "0"}))
    r = run([tdebug, "run", *args], env=env, **kw)
    sent, got = [], []
    for line in trace.read_text(errors="replace").splitlines():
        fields = line.split(None, 2)
        if len(fields) >= 2 and fields[1] == "->":
            sent.append(fields[2] if len(fields) > 2 else "")
        elif len(fields) >= 2 and fields[1] == "<-":
            got.append(line.split(" <- ", 1)[1] if " <- " in line else "")
    return r, sent, "".join(got)


def is_light(sent):
    return any(LIGHT_SYSROOT in c for c in sent)


def test_stop_at_import_is_light_and_shows_the_same_stop(tdebug, tmp_path, torch_available):
    r, sent, got = traced(tdebug, tmp_path, ["--batch", "--stop-at-import", "torch._C", "--",
                                             PYTHON, "-c", "import torch; print('ran on')"])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    # gdb attached and never handled a library: no load events, no symbols.
    assert any(c.split(" ", 1)[0].endswith("-target-attach") for c in sent)
    assert "library-loaded" not in got
    assert not any("-file-exec-and-symbols" in c for c in sent)
    # The stop by address, on PyInit__C.
    assert any(c.split(" ", 1)[0].endswith("-break-insert") and "-t *0x" in c for c in sent)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tdebug: stopped at the import of torch._C: in its init function")
    assert lines[1].startswith("#0 ") and " in PyInit__C () from " in lines[1]
    assert lines[2].startswith("#1 ") and " in _imp_create_dynamic () from " in lines[2]
    assert '    File "<string>", line 1, in <module>' in lines
    frames = [l for l in lines if l.startswith("#")]
    assert " in __libc_start_main" in frames[-1]
    assert "ran on" in r.stdout
    assert lines[-1] == "tdebug: program exited with status 0"


def test_break_in_libtorch_cpu_by_address(tdebug, tmp_path, torch_available):
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "-b", ADD, "--", PYTHON, "-c",
                                           "import torch; torch.ones(2) + 1"])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    inserts = [c for c in sent if c.split(" ", 1)[0].endswith("-break-insert")]
    assert len(inserts) == 1 and " *0x" in inserts[0], inserts  # gdb never read libtorch_cpu
    stops = [e for e in json_events(r.stdout) if e["event"] == "stopped"]
    assert len(stops) == 1
    stop = stops[0]
    assert stop["reason"] == "breakpoint" and stop["breakpoint"]["location"] == ADD
    top = stop["frames"][0]
    assert top["function"].startswith(ADD + "(at::Tensor const&")
    assert "libtorch_cpu.so" in top["library"]
    # The arguments, from the signature and the registers, tensors decoded.
    args = stop["args"]
    assert args["at_entry"] is True
    assert [a["type"] for a in args["args"]] == ["at::Tensor const&", "at::Tensor const&",
                                                 "c10::Scalar const&"]
    first = args["args"][0]["value"]
    assert first["sizes"] == [2] and first["dtype"] == "float32" and first["values"] == [1, 1]
    assert [p["function"] for p in stop["python_frames"]] == ["<module>"]


@pytest.mark.parametrize("args", [
    ["--stop-at-import", "torch._C"],
    ["-b", ADD],
])
def test_json_events_are_those_of_an_ordinary_session(tdebug, tmp_path, torch_available, args):
    argv = ["--json", *args, "--", PYTHON, "-c", "import torch; torch.ones(2) + 1"]
    light, sent, _ = traced(tdebug, tmp_path, argv)
    plain, sent_plain, _ = traced(tdebug, tmp_path, argv, light=False)
    assert is_light(sent) and not is_light(sent_plain)
    assert light.returncode == plain.returncode == 0, light.stderr + plain.stderr
    a, b = json_events(light.stdout), json_events(plain.stdout)
    assert [e["event"] for e in a] == [e["event"] for e in b]
    for x, y in zip(a, b):
        assert sorted(x) == sorted(y)
        if x["event"] != "stopped":
            continue
        for key in ("reason", "message", "python_frames", "thread"):
            if key == "message":  # the library's path: gdb's name or the mapped file's
                assert x[key].split(" (")[0] == y[key].split(" (")[0]
            else:
                assert x[key] == y[key], key
        fx = [f["function"] for f in x["frames"]]
        fy = [f["function"] for f in y["frames"]]
        assert fx[:3] == fy[:3]
        assert sorted(x["frames"][0]) == sorted(y["frames"][0])
        assert [s["kind"] for s in x["stack"]] == [s["kind"] for s in y["stack"]]


def test_crash_after_the_last_stop_still_shows_its_stack(tdebug, tmp_path, torch_available):
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "--stop-at-import", "torch._C", "--",
                                           PYTHON, "-c",
                                           "import torch, ctypes; ctypes.string_at(0)"])
    assert is_light(sent)
    assert r.returncode == 128 + 11, r.stderr
    events = json_events(r.stdout)
    assert [e.get("reason", e["event"]) for e in events] == ["import", "signal", "signalled",
                                                             "exited"]
    crash = events[1]
    assert "SIGSEGV" in crash["message"]
    functions = [f["function"] or "" for f in crash["frames"]]
    assert any("strlen" in f for f in functions[:2]), functions
    assert "string_at" in functions
    assert [p["function"] for p in crash["python_frames"]] == ["string_at", "<module>"]


def build_late_library(tmp_path):
    src = tmp_path / "late.c"
    src.write_text("int tdb_late_function(int x) { return x * 3; }\n")
    lib = tmp_path / "liblate.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-o", str(lib), str(src)], check=True)
    script = tmp_path / "late.py"
    script.write_text("import ctypes, os, sys\n"
                      "lib = ctypes.CDLL(os.path.join(os.path.dirname(__file__), 'liblate.so'))\n"
                      "print('late says', lib.tdb_late_function(14))\n")
    return script


def test_break_in_a_library_loaded_later(tdebug, tmp_path):
    script = build_late_library(tmp_path)
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "-b", "tdb_late_function", "--", PYTHON,
                                           str(script)])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    stops = [e for e in json_events(r.stdout) if e["event"] == "stopped"]
    assert len(stops) == 1
    assert stops[0]["frames"][0]["function"] == "tdb_late_function"
    assert stops[0]["frames"][0]["library"].endswith("/liblate.so")
    assert stops[0]["python_frames"][0]["line"] == 3
    assert "late says 42" in r.stderr  # --json: the program's stdout goes to stderr


def test_program_that_forks_and_runs_children(tdebug, tmp_path, torch_available):
    # The child of a fork and a child process that imports torch itself
    # never trap (TDEBUG_TRAP_PID is the program's own pid): they run to
    # their ends; the program's own stops happen once each.
    script = tmp_path / "forks.py"
    script.write_text(
        "import os, subprocess, sys\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.getppid()\n"
        "    os._exit(7)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "print('fork child', os.waitstatus_to_exitcode(status))\n"
        "r = subprocess.run([sys.executable, '-c', 'import torch; print(\"child torch ok\")'])\n"
        "print('subprocess', r.returncode)\n"
        "import torch\n"
        "os.getppid()\n")
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "--stop-at-import", "torch._C", "-b",
                                           "getppid", "--", PYTHON, str(script)])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    assert "fork child 7" in r.stderr
    assert "child torch ok" in r.stderr and "subprocess 0" in r.stderr
    stops = [e for e in json_events(r.stdout) if e["event"] == "stopped"]
    assert [s["reason"] for s in stops] == ["import", "breakpoint"]
    assert stops[1]["python_frames"][0]["line"] == 11


def test_prompt_upgrades_to_an_ordinary_session(tdebug, tmp_path, terminal, torch_available):
    trace = tmp_path / "mi.trace"
    t = terminal([tdebug, "run", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
                  "import torch; torch.ones(2) + 1; print('done')"],
                 env=clean_env(TDEBUG_TRACE_MI=str(trace)))
    t.expect("tdebug: stopped at the import of torch._C")
    t.expect("(tdebug) ")
    # gdb now knows the libraries: its own commands see them.
    t.send("info sharedlibrary _C\\.cpython")
    out = t.expect("(tdebug) ")
    assert "Yes" in out and "_C.cpython-311-x86_64-linux-gnu.so" in out
    t.send("break " + ADD)
    t.expect("(tdebug) ")
    t.send("continue")
    out = t.expect("(tdebug) ")
    assert "stopped at breakpoint" in out and ADD in out
    t.send("continue")
    t.expect("done")
    t.expect("tdebug: program exited with status 0")
    assert t.wait() == 0
    sent = [l.split(None, 2)[2] for l in trace.read_text(errors="replace").splitlines()
            if len(l.split(None, 2)) == 3 and l.split(None, 2)[1] == "->"]
    # Started light, then gdb got its sysroot back before the prompt.
    light_at = next(i for i, c in enumerate(sent) if LIGHT_SYSROOT in c)
    assert any("set sysroot" in c and "nonexistent" not in c for c in sent[light_at + 1:])


def test_light_0_opts_out(tdebug, tmp_path, torch_available):
    r, sent, got = traced(tdebug, tmp_path, ["--batch", "--stop-at-import", "torch._C", "--",
                                             PYTHON, "-c", "import torch"], light=False)
    assert r.returncode == 0, r.stderr
    assert not is_light(sent)
    assert "library-loaded" in got  # gdb ran the program and followed its loads
    assert " in PyInit__C () from " in r.stdout.splitlines()[1]


def test_the_programs_own_sigtrap_is_not_taken_for_the_librarys(tdebug, tmp_path):
    # A SIGTRAP the program raises itself is a signal stop as ever.
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "-b", "getppid", "--", PYTHON, "-c",
                                           "import os, signal; os.getppid(); "
                                           "os.kill(os.getpid(), signal.SIGTRAP)"])
    assert is_light(sent)
    events = json_events(r.stdout)
    reasons = [e.get("reason", e["event"]) for e in events]
    assert reasons[:2] == ["breakpoint", "signal"], reasons
    assert "SIGTRAP" in events[1]["message"]



def test_stop_at_an_import_made_before_gdb_could_attach(tdebug, tmp_path):
    # _json is imported ~20 ms into the program, before gdb has even
    # started: Python's lookup of its PyInit waits for gdb (la_symbind64),
    # which then finds the module mapped and stops in its init.
    r, sent, _ = traced(tdebug, tmp_path, ["--batch", "--stop-at-import", "_json", "--", PYTHON,
                                           "-c", "import _json"])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tdebug: stopped at the import of _json: in its init function")
    # With python3.11-dbg's debug file, gdb shows the source line as in an
    # ordinary session; without, tdebug names the frame.
    assert " in PyInit__json () at " in lines[1] or " in PyInit__json () from " in lines[1]


def test_commands_file_upgrades_at_the_stop(tdebug, tmp_path, torch_available):
    commands = tmp_path / "cmds"
    commands.write_text("info sharedlibrary libtorch_cpu\n")
    r, sent, _ = traced(tdebug, tmp_path, ["--batch", "-x", str(commands), "-b", ADD, "--",
                                           PYTHON, "-c", "import torch; torch.ones(2) + 1"])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    assert "stopped at breakpoint 1 (" + ADD + ")" in r.stdout
    # gdb's own command sees the library: the session became an ordinary one.
    assert "libtorch_cpu.so" in r.stdout.split("stopped at breakpoint", 1)[1]
    assert any("set sysroot" in c and "nonexistent" not in c for c in sent)


def test_stop_in_a_library_with_a_debug_file_shows_its_source_line(tdebug, tmp_path):
    # libc's debug file (libc6-dbg, tools/deps.sh) is found by its build-id:
    # gdb reads it for that stop, as in an ordinary session.
    argv = ["--batch", "-b", "getppid", "--", PYTHON, "-c", "import os; os.getppid()"]
    light, sent, _ = traced(tdebug, tmp_path, argv)
    plain, _, _ = traced(tdebug, tmp_path, argv, light=False)
    assert light.returncode == plain.returncode == 0, light.stderr + plain.stderr
    assert is_light(sent)
    def top(out):  # the top frame without its address
        return next(l for l in out.splitlines() if l.startswith("#0 ")).split(" in ", 1)[1]
    assert " at ../sysdeps/" in top(light.stdout), light.stdout
    assert top(light.stdout) == top(plain.stdout)


def test_garbage_in_tdebug_light_is_said_and_the_session_stays_light(tdebug, tmp_path,
                                                                       torch_available):
    r, sent, _ = traced(tdebug, tmp_path, ["--batch", "--stop-at-import", "torch._C", "--",
                                           PYTHON, "-c", "import torch"], light="yes\xff")
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    assert "TDEBUG_LIGHT='yes\xff' is neither 0 nor 1" in r.stderr
    assert "tdebug: stopped at the import of torch._C" in r.stdout


# issue 27: a Python breakpoint runs light too (the hook loaded at Py_RunMain
# by address), and its stops, the prompt's commands over them and -x files
# keep the session light: gdb never sees a library of torch's.
TORCH_PY = """\
import torch
x = torch.ones(2)
def f(k):
    acc = k * 2
    return acc + 1
y = f(3)
print("done", (x + y).tolist())
"""


def upgraded(sent):
    light_at = next(i for i, c in enumerate(sent) if LIGHT_SYSROOT in c)
    return any("set sysroot" in c and "nonexistent" not in c for c in sent[light_at + 1:])


def test_python_break_on_a_torch_script_is_light(tdebug, tmp_path, torch_available):
    script = tmp_path / "train.py"
    script.write_text(TORCH_PY)
    argv = ["--json", "-b", f"{script}:5", "--", PYTHON, str(script)]
    light, sent, got = traced(tdebug, tmp_path, argv)
    assert light.returncode == 0, light.stderr
    assert is_light(sent) and not upgraded(sent), sent
    # gdb read no library of torch's, nor was told of one
    assert "libtorch" not in got and "c10" not in got
    assert not [c for c in sent if "sharedlibrary" in c or "catch load" in c]
    plain, sent_plain, _ = traced(tdebug, tmp_path, argv, light=False)
    assert not is_light(sent_plain)
    a, b = json_events(light.stdout), json_events(plain.stdout)
    stop_a = [e for e in a if e["event"] == "stopped"]
    stop_b = [e for e in b if e["event"] == "stopped"]
    assert [e["reason"] for e in stop_a] == [e["reason"] for e in stop_b] == ["python-breakpoint"]
    assert stop_a[0]["stack"][0] == stop_b[0]["stack"][0]
    assert [f for f in stop_a[0]["python_frames"]] == [f for f in stop_b[0]["python_frames"]]
    assert "done [8.0, 8.0]" in light.stdout + light.stderr


def test_prompt_at_a_python_stop_stays_light_until_gdb_is_needed(tdebug, tmp_path, terminal,
                                                                 torch_available):
    script = tmp_path / "train.py"
    script.write_text(TORCH_PY)
    trace = tmp_path / "mi.trace"
    t = terminal([tdebug, "run", "-b", f"{script}:4", "--", PYTHON, str(script)],
                 env=clean_env(TDEBUG_TRACE_MI=str(trace)))
    t.expect("tdebug: stopped at Python breakpoint 1")
    t.expect("(tdebug) ")
    t.send("bt")
    assert 'line 4, in f' in t.expect("(tdebug) ")
    t.send("py-locals")
    assert "k = 3" in t.expect("(tdebug) ")
    t.send("py-eval k * 100")
    assert "300" in t.expect("(tdebug) ")
    t.send("next")
    assert "5\t" in t.expect("(tdebug) ")
    t.send("info breakpoints")
    t.expect("(tdebug) ")
    sent = [l.split(None, 2)[2] for l in trace.read_text(errors="replace").splitlines()
            if len(l.split(None, 2)) == 3 and l.split(None, 2)[1] == "->"]
    assert is_light(sent) and not upgraded(sent)
    # gdb's own command: the session becomes an ordinary one, the hook's
    # symbols read
    t.send("info sharedlibrary pyhook")
    out = t.expect("(tdebug) ")
    assert "Yes" in out and "libtdebug-pyhook" in out
    assert "4" in t.command("py-eval k + 1")
    t.continue_to_exit("done [8.0, 8.0]")


# 'run' at the prompt of a light session starts the program again as a new
# light session (issue 27): the same command line, its breakpoints of both
# kinds, the Python ones hit again in the new process.
RERUN_PY = """\
import os
def f(k):
    acc = k * 2
    return acc + 1
print("pid", os.getpid(), flush=True)
y = f(3)
os.getppid()
print("done", y, flush=True)
"""


def mi_sent(trace):
    return [l.split(None, 2)[2] for l in trace.read_text(errors="replace").splitlines()
            if len(l.split(None, 2)) == 3 and l.split(None, 2)[1] == "->"]


def attached_pids(sent):
    return [c.split()[-1] for c in sent if c.split(" ", 1)[0].endswith("-target-attach")]


def rerun_session(tdebug, tmp_path, terminal, stop, commands, *args):
    """'tdebug run ARGS -- python RERUN_PY' on a terminal, its MI traced:
    at each stop (its text STOP) the next list of COMMANDS is typed, the
    last of which resumes; then the program's end.  (Everything the
    terminal showed, the MI commands sent.)"""
    script = tmp_path / "rerun.py"
    script.write_text(RERUN_PY)
    trace = tmp_path / "mi.trace"
    t = terminal([tdebug, "run", *[a.format(script=script) for a in args], "--", PYTHON,
                  str(script)], env=clean_env(TDEBUG_TRACE_MI=str(trace)))
    seen = [t.expect(stop), t.expect("(tdebug) ")]
    for lines in commands:
        for line, want in lines:
            t.send(line)
            seen.append(t.expect("(tdebug) ") if want is not None else "")
            assert want is None or want in seen[-1], seen[-1]
    seen.append(t.expect("tdebug: program exited with status 0"))
    assert t.wait() == 0
    return "".join(seen), mi_sent(trace)


def test_run_at_a_python_stop_restarts_a_light_session(tdebug, tmp_path, terminal):
    text, sent = rerun_session(tdebug, tmp_path, terminal, "stopped at Python breakpoint 1", [
        [("py-locals", "k = 3"), ("run", "stopped at Python breakpoint 1")],
        [("py-locals", "k = 3"), ("next", "4\t"), ("continue", None)]], "-b", "{script}:3")
    # two light sessions, one after the other, on two processes: gdb never
    # read a library (the prompt's commands needed none)
    pids = attached_pids(sent)
    assert len(pids) == 2 and pids[0] != pids[1], pids
    assert is_light(sent) and not upgraded(sent), sent
    # the first program was killed at its stop: 'done' printed once, by
    # the second
    assert [l.split()[1] for l in text.splitlines() if l.startswith("pid ")] == pids, text
    assert text.count("done 7") == 1, text


def test_run_after_an_upgrade_and_with_a_native_breakpoint_restarts_light(tdebug, tmp_path,
                                                                            terminal):
    # gdb's own command makes the session an ordinary one; 'run' makes
    # the new one light again
    _, sent = rerun_session(tdebug, tmp_path, terminal, "stopped at breakpoint 1 (getppid)", [
        [("info sharedlibrary libc", "libc.so"), ("run", "stopped at breakpoint 1 (getppid)")],
        [("continue", None)]], "-b", "getppid")
    pids = attached_pids(sent)
    assert len(pids) == 2 and pids[0] != pids[1], pids
    restarts = [i for i, c in enumerate(sent) if LIGHT_SYSROOT in c]
    assert len(restarts) == 2, restarts
    assert upgraded(sent[:restarts[1]])
    assert any("-break-insert" in c and "*0x" in c for c in sent[restarts[1]:])


def test_run_with_breakpoints_a_light_session_cannot_take_restarts_an_ordinary_one(
        tdebug, tmp_path, terminal):
    # A Python breakpoint and a function's together need an ordinary
    # session: gdb starts the program itself; both stop in the new run
    text, sent = rerun_session(tdebug, tmp_path, terminal, "stopped at Python breakpoint 1", [
        [("break getppid", "getppid"), ("run", "stopped at Python breakpoint 1")],
        [("continue", "stopped at breakpoint 2 (getppid)")],
        [("continue", None)]], "-b", "{script}:3")
    assert len(attached_pids(sent)) == 1
    assert any(c.split(" ", 1)[0].endswith("-exec-run") for c in sent)
    assert text.count("done 7") == 1, text


def test_run_keeps_a_disabled_native_breakpoint_disabled(tdebug, tmp_path, terminal):
    text, sent = rerun_session(tdebug, tmp_path, terminal, "stopped at breakpoint 1 (getppid)", [
        [("disable 1", ""), ("run", None)]], "-b", "getppid")
    assert len(attached_pids(sent)) == 2
    assert text.count("done 7") == 1, text  # the new run went by getppid
    assert any(c.split(" ", 1)[0].endswith("-break-disable") for c in sent)


def test_python_breakpoint_table_grows_at_a_light_stop(tdebug, tmp_path):
    # More Python breakpoints than the hook's first table holds
    # (TDB_PYHOOK_FIRST_CAPACITY, 64), added at a light stop: the table
    # grows (mmap by address, the slots copied by tdebug) and the session
    # stays light; the last one added stops.
    n = 70
    body = "".join(f"    a{i} = {i}\n" for i in range(n))
    script = tmp_path / "many.py"
    script.write_text(f"def never():\n{body}\ndef last():\n    return 42\n\nx = 0\nprint(last())\n")
    lines = script.read_text().splitlines()
    at_x, at_last = lines.index("x = 0") + 1, lines.index("    return 42") + 1
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(f"break {script}:{2 + i}\n" for i in range(n)) +
                    f"break {script}:{at_last}\ncontinue\ncontinue\n")
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "-x", str(cmds), "-b", f"{script}:{at_x}",
                                           "--", PYTHON, str(script)])
    # 1: the breakpoints in never() were never hit, as the end says
    assert r.returncode == 1, r.stderr
    assert is_light(sent) and not upgraded(sent), sent
    events = json_events(r.stdout)
    assert not [e for e in events if e["event"] == "error"], events
    warnings = [e["message"] for e in events if e["event"] == "warning"]
    assert len(warnings) == n and all("was never hit" in w for w in warnings), warnings
    stops = [e for e in events if e["event"] == "stopped"]
    assert [s["reason"] for s in stops] == ["python-breakpoint"] * 2
    assert stops[1]["breakpoint"]["number"] == n + 2
    assert stops[1]["python_frames"][0]["line"] == at_last
    assert "42" in r.stderr


def test_run_keeps_a_catchpoint_added_at_a_light_stop(tdebug, tmp_path):
    # A Python exception's catchpoint needs an ordinary session: 'run'
    # has gdb start the program, and both the breakpoint and the
    # catchpoint stop in the new run
    script = tmp_path / "raises.py"
    script.write_text("def f(k):\n    acc = k * 2\n    return acc + 1\ny = f(3)\ntry:\n"
                      "    raise ValueError('x')\nexcept ValueError:\n    pass\nprint('done', y)\n")
    cmds = tmp_path / "cmds"
    cmds.write_text("catch python-raise ValueError\nrun\ncontinue\ncontinue\n")
    r, sent, _ = traced(tdebug, tmp_path, ["--json", "-x", str(cmds), "-b", f"{script}:2", "--",
                                           PYTHON, str(script)])
    assert r.returncode == 0, r.stderr
    assert is_light(sent)
    events = json_events(r.stdout)
    assert not [e for e in events if e["event"] in ("error", "warning")], events
    stops = [e for e in events if e["event"] == "stopped"]
    assert [s["reason"] for s in stops] == ["python-breakpoint", "python-breakpoint",
                                           "python-exception"]
    assert stops[0]["pid"] != stops[1]["pid"] == stops[2]["pid"]
    assert r.stderr.count("done 7") == 1
