"""Python breakpoints and stepping across the language boundary (issue 11),
in sessions tdebug starts and in ones it attaches to, with the real gdb,
Debian's torch and tinytensor (built with -O0 -g3).  No python3-dbg and no
debugpy are involved: tdebug loads its own hook into the process."""
import json
import os
import subprocess
import textwrap

import pytest

from conftest import BUILD, PYTHON, ROOT, SLOW, clean_env, proc_state, run, tracer_of, wait_until
from pyhook_util import LOOP, hook_installed
from tinytensor_util import tt_env

WALKTHROUGH = str(ROOT / "samples" / "tinytensor_walkthrough.py")

# Every test runs light and ordinary (issue 27): light sessions keep every
# behaviour.
pytestmark = pytest.mark.usefixtures("light_sessions")


def line_of(path, text):
    """The 1-based number of the line of PATH that starts with TEXT."""
    lines = open(path).read().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if line.startswith(text)]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]


ADD_LINE = line_of(WALKTHROUGH, "x = tinytensor.ones(2) + 1")
HOOK = BUILD / "pyhook" / "libtdebug-pyhook-cpython-311.so"


def events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def session(tdebug, tmp_path, commands, *args, env=None, json_out=True):
    """tdebug run [--json] -x COMMANDS ARGS: the events (or the text)."""
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, "run"] + (["--json"] if json_out else []) + ["-x", str(cmds)] + list(args),
            env=env)
    return r, (events(r.stdout) if json_out else r.stdout)


def stops(evs):
    return [e for e in evs if e["event"] == "stopped"]


def top(stop):
    return stop["stack"][0]


TORCH_SCRIPT = textwrap.dedent("""\
    import torch

    def f(x, y):
        z = torch.add(x, y)
        w = x + y
        return z + w

    a = torch.ones(2)
    print(f(a, a).tolist())
""")


@pytest.fixture
def torch_script(tmp_path, torch_available):
    p = tmp_path / "adds.py"
    p.write_text(TORCH_SCRIPT)
    return p


def test_step_from_python_into_torch_and_finish_back(tdebug, tmp_path, torch_script):
    r, evs = session(tdebug, tmp_path, ["step", "finish", "next", "step", "finish", "continue"],
                     "--step-into", "binding",  # the first native frame (test_step_into.py: past it)
                     "-b", f"{torch_script}:4", "--", PYTHON, str(torch_script))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert s[0]["reason"] == "python-breakpoint" and s[0]["breakpoint"]["number"] == 1
    assert top(s[0]) == {"kind": "python", "function": "f", "file": str(torch_script), "line": 4}
    assert s[0]["source_line"] == "4\t    z = torch.add(x, y)"
    # step: into the binding torch.add runs, in libtorch_python
    assert s[1]["reason"] == "step" and top(s[1])["kind"] == "native"
    assert top(s[1])["library"].endswith("libtorch_python.so.1.13")
    assert "into the native code of" in s[1]["message"] and "add" in s[1]["message"]
    # finish: back in the Python caller, at the line that made the call
    assert s[2]["reason"] == "finish"
    assert top(s[2]) == {"kind": "python", "function": "f", "file": str(torch_script), "line": 4}
    # next: over the rest of the line
    assert s[3]["reason"] == "next" and top(s[3])["line"] == 5
    # step into x + y: Tensor.__add__'s native code, through CPython's slots
    assert s[4]["reason"] == "step" and "__add__" in s[4]["message"]
    assert top(s[4])["library"].endswith("libtorch_python.so.1.13")
    assert s[5]["reason"] == "finish" and top(s[5])["line"] == 5
    assert evs[-1] == {"event": "exited", "status": 0, "signalled": False}


def test_next_over_a_line_that_calls_into_torch(tdebug, tmp_path, torch_script):
    r, evs = session(tdebug, tmp_path, ["next", "next", "continue"], "-b",
                     "adds.py:f", "--", PYTHON, str(torch_script))  # a function, by file tail
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert s[0]["reason"] == "python-breakpoint" and top(s[0])["line"] == 4
    assert [x["reason"] for x in s[1:]] == ["next", "next"]
    assert [top(x)["line"] for x in s[1:]] == [5, 6]
    assert all(top(x)["kind"] == "python" for x in s)


def test_tinytensor_steps_at_source_level_from_python_into_c(tdebug, tmp_path):
    r, evs = session(tdebug, tmp_path, ["step", "step", "finish", "finish", "next"],
                     "-b", f"{WALKTHROUGH}:{ADD_LINE}", "--", PYTHON, WALKTHROUGH, env=tt_env())
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[0])["line"] == ADD_LINE
    assert s[0]["source_line"].startswith(f"{ADD_LINE}\tx = tinytensor.ones(2)")
    # into the binding, at its first line (past the prologue: arguments set)
    assert top(s[1])["function"] == "tt_python_ones"
    assert top(s[1])["file"].endswith("csrc/python/tt_python_module.c")
    assert "args=(2,)" in s[1]["where"]
    assert top(s[2])["function"] == "ones_or_zeros"  # and on into the core
    assert top(s[3])["function"] == "tt_python_ones" and s[3]["reason"] == "finish"
    assert top(s[4]) == {"kind": "python", "function": "<module>", "file": WALKTHROUGH,
                         "line": ADD_LINE}
    assert s[5]["reason"] == "next" and top(s[5])["line"] == ADD_LINE + 1


def test_breakpoint_in_a_module_imported_later(tdebug, tmp_path):
    pkg = tmp_path / "later"
    pkg.mkdir()
    (pkg / "mod.py").write_text("def work(n):\n    total = n * 2\n    return total\n")
    main = tmp_path / "main.py"
    main.write_text("import sys, time\nsys.path.insert(0, sys.argv[1])\ntime.sleep(0.2)\n"
                    "from later import mod\nprint(mod.work(21))\n")
    r, evs = session(tdebug, tmp_path, ["info breakpoints", "continue"], "-b", "later/mod.py:2",
                     "--", PYTHON, str(main), str(tmp_path))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert len(s) == 1 and top(s[0])["file"] == str(pkg / "mod.py") and top(s[0])["line"] == 2
    bps = [e for e in evs if e["event"] == "breakpoints"][0]["breakpoints"]
    assert bps[0]["type"] == "python" and bps[0]["hits"] == 1
    assert "42" in r.stderr  # the program's stdout goes to stderr with --json


def test_breakpoint_in_another_thread_while_main_sits_in_native_code(tdebug, tmp_path):
    script = tmp_path / "threads.py"
    script.write_text(textwrap.dedent("""\
        import threading, time

        done = threading.Event()

        def worker():
            time.sleep(0.5)
            x = 1
            done.set()          # STOP
            return x

        t = threading.Thread(target=worker, name="worker-1")
        t.start()
        done.wait()             # the main thread in native code (a futex wait)
        t.join()
    """))
    r, evs = session(tdebug, tmp_path, ["bt all", "continue"], "-b", "threads.py:8", "--",
                     PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert len(s) == 1 and top(s[0])["function"] == "worker" and top(s[0])["line"] == 8
    assert s[0]["thread"] != 1
    threads = [e for e in evs if e["event"] == "threads"][0]["threads"]
    assert len(threads) == 2  # every thread stopped: a real debugger stop
    main = [t for t in threads if t["id"] == 1][0]
    assert "/libc.so" in main["frames"][0]["library"]
    assert main["stack"][0]["kind"] == "native"
    assert any(f["kind"] == "python" and f["file"] == str(script) and f["line"] == 13
               for f in main["stack"])


def test_line_without_code_moves_and_past_the_end_is_refused(tdebug, tmp_path):
    script = tmp_path / "blank.py"
    script.write_text("x = 1\n\n# a comment\ny = x + 1\nprint(y)\n")
    r, evs = session(tdebug, tmp_path, ["continue"], "-b", f"{script}:2", "--", PYTHON,
                     str(script), json_out=False)
    assert r.returncode == 0, r.stderr
    assert "tdebug: stopped at Python breakpoint 1" in evs
    assert 'File "%s", line 4, in <module>' % script in evs
    r = run([tdebug, "run", "--batch", "-b", f"{script}:99", "--", PYTHON, str(script)])
    assert r.returncode == 2
    assert "has 5 lines and none at or after line 99 holds code" in r.stderr


def test_break_tbreak_delete_disable_at_the_prompt(tdebug, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text("total = 0\nfor i in range(5):\n    total += i\nprint(total)\n")
    r, out = session(tdebug, tmp_path, ["break loop.py:3", "tbreak loop.py:4", "continue",
                                        "continue", "disable 2", "continue", "info breakpoints",
                                        "enable 2", "delete 2", "continue"],
                     "-b", f"{script}:1", "--", PYTHON, str(script), json_out=False)
    assert r.returncode == 0, r.stderr
    assert out.count("stopped at Python breakpoint 2 (loop.py:3)") == 2
    assert "2    python      n    2" in out
    assert "tdebug: stopped at Python breakpoint 3 (loop.py:4)" in out
    assert "tdebug: program exited with status 0" in out



def test_a_disabled_breakpoint_is_not_called_never_run_at_the_end(tdebug, tmp_path):
    # issue 26: a disabled breakpoint on a line that ran a thousand times was
    # reported as "never hit (the program never ran that line of that file)"
    script = tmp_path / "loop.py"
    script.write_text("total = 0\nfor i in range(1000):\n    total += i\nprint(total)\n")
    r, out = session(tdebug, tmp_path, ["break loop.py:3", "disable 2", "continue"],
                     "-b", f"{script}:1", "--", PYTHON, str(script), json_out=False)
    assert r.returncode == 0, r.stderr
    both = out + r.stderr
    assert "never ran that line" not in both
    assert "breakpoint 2 'loop.py:3' was disabled and never hit while it was enabled" in both
    r, evs = session(tdebug, tmp_path, ["break loop.py:3", "disable 2", "continue"],
                     "-b", f"{script}:1", "--", PYTHON, str(script))
    notes = [e for e in evs if e.get("disabled")]
    assert len(notes) == 1 and notes[0]["breakpoint"] == 2, evs



def test_a_stop_inside_the_garbage_collector_says_so(tdebug, tmp_path):
    # issue 26: 'tdebug stacks' marks a thread collecting garbage; a stop's
    # stack did not
    script = tmp_path / "collect.py"
    script.write_text(textwrap.dedent("""\
        import gc
        def collecting(phase, info):
            if phase == "start":
                x = 1  # STOP
        gc.callbacks.append(collecting)
        gc.collect()
    """))
    r, evs = session(tdebug, tmp_path, ["continue", "continue"], "-b", f"{script}:4", "--",
                     PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert s and all(x["gc"] for x in s), s  # gc.collect(), and maybe the one at exit
    r, out = session(tdebug, tmp_path, ["continue"], "-b", f"{script}:4", "--", PYTHON,
                     str(script), json_out=False)
    assert r.returncode == 0, r.stderr
    assert "note: this thread is collecting garbage" in out
    r, evs = session(tdebug, tmp_path, ["continue"], "-b", f"{script}:6", "--", PYTHON,
                     str(script))
    assert [x["gc"] for x in stops(evs)] == [False]


def test_a_python_break_reads_no_torch_symbols(tdebug, tmp_path, torch_script):
    # gdb's commands, as tdebug sends them, through a wrapper that logs them
    log = tmp_path / "mi.log"
    wrapper = tmp_path / "gdb"
    wrapper.write_text(f'#!/bin/sh\ntee -a {log} | exec gdb "$@"\n')
    wrapper.chmod(0o755)
    env = clean_env(TDEBUG_GDB=str(wrapper))
    r, evs = session(tdebug, tmp_path, ["continue"], "-b", f"{torch_script}:4", "--", PYTHON,
                     str(torch_script), env=env)
    assert r.returncode == 0, r.stderr
    assert [s["reason"] for s in stops(evs)] == ["python-breakpoint"]
    sent = log.read_text()
    # libpython's loads are watched (the hook needs it), torch's are not
    # and none of its libraries' symbols are read
    watch = [line for line in sent.splitlines() if "catch load" in line]
    assert not any("torch" in line or "c10" in line for line in watch), watch
    assert not [line for line in sent.splitlines()
                if "sharedlibrary" in line and ("torch" in line or "c10" in line)]


def many_functions(path, n):
    """A module of N one-line functions fK (body on line 2K+2) and a main
    that calls f700 then f701: the line of each body."""
    body = "".join(f"def f{k}():\n    return {k}\n" for k in range(n))
    path.write_text(body + "print(f700() + f701())\n")
    return [2 * k + 2 for k in range(n)]


def test_a_thousand_breakpoints_arm_and_the_right_one_hits(tdebug, tmp_path):
    # more than the library's first table (64 slots): tdebug maps a larger one
    script = tmp_path / "many.py"
    lines = many_functions(script, 1200)
    args = [a for line in lines for a in ("-b", f"{script}:{line}")]
    r, evs = session(tdebug, tmp_path, ["continue", "continue"], *args, "--", PYTHON,
                     str(script))
    # 1: breakpoints that never hit, each said
    assert r.returncode == 1, r.stderr
    assert [e["status"] for e in evs if e["event"] == "exited"] == [0]
    assert sum("was never hit" in e.get("message", "") for e in evs) == 1198
    s = stops(evs)
    assert [(x["breakpoint"]["number"], top(x)["function"], top(x)["line"]) for x in s] == \
        [(701, "f700", lines[700]), (702, "f701", lines[701])]


def test_breakpoints_added_at_a_stop_grow_the_table(tdebug, tmp_path):
    script = tmp_path / "many.py"
    lines = many_functions(script, 1000)
    # the first stop is in f700; 100 more at the prompt, past the 64 slots
    r, out = session(tdebug, tmp_path, [f"break many.py:{line}" for line in lines[600:700]] +
                     [f"break many.py:{lines[701]}", "continue", "continue"],
                     "-b", f"{script}:{lines[700]}", "--", PYTHON, str(script), json_out=False)
    assert r.returncode == 1, r.stderr  # breakpoints never hit
    assert "tdebug: stopped at Python breakpoint 1 (%s:%d)" % (script, lines[700]) in out
    assert "tdebug: stopped at Python breakpoint 102 (many.py:%d)" % lines[701] in out
    assert "more than" not in out + r.stderr
    assert "tdebug: program exited with status 0" in out


# ---- attach ----

def test_attach_breaks_in_a_running_loop_then_detach_leaves_no_hook(tdebug, procs, tmp_path,
                                                                    terminal):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    p = procs.start([PYTHON, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send(f"break {script}:5")
    t.expect("(tdebug) ")
    t.send("continue")
    out = t.expect("(tdebug) ")
    assert "tdebug: stopped at Python breakpoint 1" in out and "5\t    i += 1" in out
    t.send("next")
    assert "tdebug: next: File" in t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
    assert proc_state(p.pid) in ("R", "S")
    assert hook_installed(p.pid) == 0
    assert proc_state(p.pid) in ("R", "S")


def test_attach_python_breakpoint_in_batch_json(tdebug, procs, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    p = procs.start([PYTHON, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    cmds = tmp_path / "cmds"
    cmds.write_text("continue\nnext\nquit\n")  # at the attach stop, then at the breakpoint
    r = run([tdebug, "attach", "--json", "-x", str(cmds), "-b", "loop.py:5", str(p.pid)])
    assert r.returncode == 0, r.stderr
    s = stops(events(r.stdout))
    assert [x["reason"] for x in s] == ["attached", "python-breakpoint", "next"]
    assert top(s[1])["line"] == 5 and top(s[2])["line"] == 6
    assert tracer_of(p.pid) == 0 and hook_installed(p.pid) == 0


def test_no_hook_for_the_interpreter_is_said(tdebug, tmp_path, monkeypatch):
    script = tmp_path / "x.py"
    script.write_text("print(1)\n")
    env = dict(os.environ, TDEBUG_PYHOOK=str(tmp_path / "missing.so"))
    r = run([tdebug, "run", "--batch", "-b", f"{script}:1", "--", PYTHON, str(script)], env=env)
    assert r.returncode == 1
    assert "Python breakpoints cannot stop in pid" in r.stderr
    assert f"TDEBUG_PYHOOK names '{tmp_path / 'missing.so'}', which cannot be read" in r.stderr
    assert "Python breakpoint" in r.stderr and "was never hit" in r.stderr


def test_tour_takes_a_python_breakpoint_too(tdebug):
    # print(x) in the tour's program runs tinytensor.Tensor.__repr__
    r = run([tdebug, "tour", "tinytensor", "--batch", "-b", "tinytensor/_tensor.py:__repr__"],
            env=tt_env())
    assert r.returncode == 0, r.stderr
    # the tour's own breakpoints come first: 1 to 3
    assert "tdebug: stopped at Python breakpoint 4 (tinytensor/_tensor.py:__repr__)" in r.stdout
    assert "=== The end: all 5 stops ===" in r.stdout


def test_ctrl_c_with_a_python_breakpoint_armed_gives_the_prompt(tdebug, tmp_path, terminal):
    # armed and never hit: the loop runs until Ctrl-C, then the prompt
    loop = tmp_path / "spin.py"
    loop.write_text("import time\nprint('ready', flush=True)\nwhile True:\n    time.sleep(0.01)\n"
                    "def never():\n    return 1\n")
    t = terminal([tdebug, "run", "-b", f"{loop}:6", "--", PYTHON, str(loop)])
    t.expect("ready")
    t.ctrl_c()
    t.expect("tdebug: program received SIGINT")
    t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0
