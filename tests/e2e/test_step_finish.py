"""Stepping and finishing as gdb does them (issue 26): 'finish' out of the
selected frame (a native one after 'up': gdb wants --thread with --frame;
an older Python frame: to its caller's line), 'next N' and 'step N', and
the gdb commands that take a breakpoint number mapped from tdebug's
numbers to gdb's.  Real gdb, Debian's torch, tinytensor built -O0 -g."""
import shutil
import textwrap

import pytest

from conftest import PYTHON, ROOT, clean_env, run
from step_util import events, line_of, session, stops, top
from tinytensor_util import tt_env

WALKTHROUGH = str(ROOT / "samples" / "tinytensor_walkthrough.py")


def test_finish_after_up_on_a_native_frame_finishes_that_frame(tdebug, tmp_path):
    r, evs = session(tdebug, tmp_path, ["up", "finish", "continue"], "-b", "tt_native_add",
                     "--", PYTHON, WALKTHROUGH, env=tt_env())
    assert r.returncode == 0, r.stderr
    assert "Cannot specify --frame without --thread" not in r.stdout + r.stderr
    s = stops(evs)
    assert top(s[0])["function"] == "tt_native_add"
    assert s[1]["reason"] == "finish"
    # out of frame 1 (tt_ops_add_call, which called tt_native_add): in its caller
    assert top(s[1])["function"] not in ("tt_native_add", "tt_ops_add_call"), top(s[1])


NEST = textwrap.dedent("""\
    def inner(n):
        m = n * 2
        return m

    def outer(n):
        r = inner(n)
        return r + 1

    v = outer(3)
    print(v)
""")


def test_finish_after_up_to_an_older_python_frame(tdebug, tmp_path):
    p = tmp_path / "nest.py"
    p.write_text(NEST)
    r, evs = session(tdebug, tmp_path, ["up", "finish", "continue"], "-b", f"{p}:2",
                     "--", PYTHON, str(p))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[0])["line"] == 2
    # outer's frame finished: back at the module's line that called it
    assert s[1]["reason"] == "finish"
    assert top(s[1]) == {"kind": "python", "function": "<module>", "file": str(p), "line": 9}


LINES = "a = 1\nb = 2\nc = 3\nd = 4\ne = 5\nprint(a + b + c + d + e)\n"


def test_next_n_and_step_n_move_n_lines(tdebug, tmp_path):
    p = tmp_path / "lines.py"
    p.write_text(LINES)
    r, evs = session(tdebug, tmp_path, ["next 3", "step 2", "continue"], "-b", f"{p}:1",
                     "--", PYTHON, str(p))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert [x["reason"] for x in s] == ["python-breakpoint", "next", "step"]
    assert [top(x)["line"] for x in s] == [1, 4, 6]


def test_next_n_in_c(tdebug, tmp_path):
    r2, evs2 = session(tdebug, tmp_path, ["next 2", "continue"], "-b", "tt_native_add",
                       "--", PYTHON, WALKTHROUGH, env=tt_env())
    r1, evs1 = session(tdebug, tmp_path, ["next", "next", "continue"], "-b", "tt_native_add",
                       "--", PYTHON, WALKTHROUGH, env=tt_env())
    assert r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr
    s2, s1 = stops(evs2), stops(evs1)
    assert [x["reason"] for x in s2] == ["breakpoint", "next"]
    assert top(s2[1])["line"] == top(s1[2])["line"] != top(s1[1])["line"]


def test_next_n_is_checked(tdebug, tmp_path):
    p = tmp_path / "lines.py"
    p.write_text(LINES)
    r, evs = session(tdebug, tmp_path, ["next zero", "continue"], "-b", f"{p}:1",
                     "--", PYTHON, str(p))
    assert r.returncode == 0, r.stderr
    err = [e for e in evs if e["event"] == "error"]
    assert err and "next takes a count of lines" in err[0]["message"]


COND = textwrap.dedent("""\
    import torch
    x = torch.ones(2)
    y = x + 1
    for i in range(3):
        z = torch.add(x, y)
    print(z.tolist())
""")


def test_condition_takes_tdebugs_breakpoint_number(tdebug, tmp_path, torch_available):
    """tdebug's breakpoint 2 is not gdb's 2 (tdebug's own catchpoints come
    first): 'condition 2 0' goes to the user's breakpoint, which never
    stops; before, it went to tdebug's library-load catchpoint."""
    p = tmp_path / "cond.py"
    p.write_text(COND)
    r, evs = session(tdebug, tmp_path, ["break at::_ops::add_Tensor::call", "condition 2 0",
                                        "condition 9 1", "condition 1 1", "continue"],
                     "-b", f"{p}:3", "--", PYTHON, str(p))
    assert r.returncode == 0, r.stderr  # a condition that never held is not a miss
    assert "breakpoint 'at::_ops::add_Tensor::call' never stopped: its condition" in r.stdout
    s = stops(evs)
    assert [x["reason"] for x in s] == ["python-breakpoint"]  # the condition held it
    errors = [e["message"] for e in evs if e["event"] == "error"]
    assert any("no breakpoint 9" in m for m in errors), errors
    assert not any("breakpoint 1" in m for m in errors), errors  # Python's take one too
    assert "[3.0, 3.0]" in r.stderr

    # without it, the breakpoint stops (the three calls in the loop)
    r, evs = session(tdebug, tmp_path, ["break at::_ops::add_Tensor::call", "condition 2 0",
                                        "condition 2", "continue", "continue", "continue",
                                        "continue"], "-b", f"{p}:3", "--", PYTHON, str(p))
    assert r.returncode == 0, r.stderr
    assert [x["reason"] for x in stops(evs)].count("breakpoint") >= 3


def test_frame_0_and_finish_at_a_stop_inside_cpythons_plumbing(tdebug, tmp_path):
    """Frame #0 is PyObject_CallOneArg, folded as CPython's plumbing: 'frame
    0' selects it (gdb's view of it) and 'finish' finishes it, not the
    first frame shown."""
    p = tmp_path / "callone.py"
    p.write_text("def key(v):\n    return -v\n\nprint(sorted([3, 1, 2], key=key))\n")
    r, evs = session(tdebug, tmp_path, ["frame 0", "finish", "kill"], "-b", "PyObject_CallOneArg",
                     "--", PYTHON, str(p))
    assert r.returncode in (0, 137), r.stderr
    errors = [e for e in evs if e["event"] == "error"]
    assert not errors, errors
    out = [e for e in evs if e["event"] == "output" and e.get("command") == "frame 0"]
    assert out and "PyObject_CallOneArg" in out[0]["output"]
    s = stops(evs)
    assert s[1]["reason"] == "finish"
    # one frame fewer: frame 0 returned, its caller is now frame 0
    assert len(s[1]["frames"]) == len(s[0]["frames"]) - 1, (s[0]["frames"][:3], s[1]["frames"][:3])


def run_next_continue(tdebug, tmp_path, light):
    """'run', 'next', 'continue' typed at a breakpoint on line 3 of LINES,
    in a session of TDEBUG_LIGHT=LIGHT: (result, events)."""
    p = tmp_path / "lines.py"
    p.write_text(LINES)
    r, evs = session(tdebug, tmp_path, ["run", "next", "continue"], "-b", f"{p}:3",
                     "--", PYTHON, str(p), env=clean_env(TDEBUG_LIGHT=light))
    assert r.returncode == 0, r.stderr
    return r, evs


def test_run_at_the_prompt_restarts_with_python_breakpoints(tdebug, tmp_path):
    r, evs = run_next_continue(tdebug, tmp_path, "0")
    s = stops(evs)
    # the breakpoint again, in the new process, and stepping works there
    assert [x["reason"] for x in s] == ["python-breakpoint", "python-breakpoint", "next"]
    assert [top(x)["line"] for x in s] == [3, 3, 4]
    assert s[0]["pid"] != s[1]["pid"]
    assert not [e for e in evs if e["event"] == "warning"], evs
    assert r.stderr.count("15") == 1  # the first run was ended, the second printed


def test_run_in_a_light_session_restarts_it_light(tdebug, tmp_path):
    # A Python-only breakpoint makes a light session (gdb attached to the
    # program tdebug started): 'run' (a -x command) starts it again as
    # another light session, the breakpoint hit again in the new process.
    r, evs = run_next_continue(tdebug, tmp_path, "1")
    s = stops(evs)
    assert [x["reason"] for x in s] == ["python-breakpoint", "python-breakpoint", "next"]
    assert [top(x)["line"] for x in s] == [3, 3, 4]
    assert s[0]["pid"] != s[1]["pid"]
    assert not [e for e in evs if e["event"] in ("warning", "error")], evs
    assert r.stderr.count("15") == 1  # the first run was ended, the second printed


def test_run_is_refused_after_an_attach(tdebug, procs, tmp_path):
    import subprocess
    p = procs.start([PYTHON, "-c", "import time; print('ready', flush=True); time.sleep(600)"],
                    stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    cmds = tmp_path / "cmds"
    cmds.write_text("run\nquit\n")
    r = run([tdebug, "attach", "--json", "-x", str(cmds), str(p.pid)])
    assert r.returncode == 0, r.stderr
    errors = [e["message"] for e in events(r.stdout) if e["event"] == "error"]
    assert errors and "'run' restarts only a program tdebug started" in errors[0]
    assert p.poll() is None


FARLIB = ROOT / "tests" / "e2e" / "data" / "farlib"


@pytest.fixture(scope="module")
def farlib(tmp_path_factory):
    """A C++ core library (libfar_core.so) and a CPython extension linking
    it (farext, RUNPATH $ORIGIN), built -O0 -g and installed in a directory
    that is neither the working directory nor the script's, as a package
    installed elsewhere is: (site directory, script, working directory,
    source directory)."""
    d = tmp_path_factory.mktemp("farlib")
    src, site, script_dir, work = d / "src", d / "site", d / "script", d / "work"
    for x in (src, site, script_dir, work):
        x.mkdir()
    for f in ("far_core.cpp", "far_core.h", "farext.cpp"):
        shutil.copy(FARLIB / f, src / f)
    shutil.copy(FARLIB / "use_far.py", script_dir / "use_far.py")
    cfg = run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
               "print(sysconfig.get_config_var('EXT_SUFFIX'))"], check=True).stdout.split()
    run(["g++", "-O0", "-g", "-fPIC", "-shared", "far_core.cpp", "-o", str(site / "libfar_core.so")],
        cwd=src, check=True)
    run(["g++", "-O0", "-g", "-fPIC", "-shared", "-I" + cfg[0], "farext.cpp", "-L" + str(site),
         "-lfar_core", "-Wl,-rpath,$ORIGIN", "-o", str(site / ("farext" + cfg[1]))],
        cwd=src, check=True)
    return site, script_dir / "use_far.py", work, src


def test_step_goes_into_the_core_library_of_an_extension_installed_elsewhere(tdebug, tmp_path,
                                                                              farlib):
    """farext's libfar_core is loaded with DWARF but outside the libraries
    tdebug reads as they load: a step into far::scale used to step over it."""
    site, script, work, src = farlib
    call = line_of(script, "# the call")
    r, evs = session(tdebug, tmp_path, ["step"] * 5 + ["continue"], "-b", f"{script}:{call}",
                     "--", PYTHON, str(script), str(site), cwd=work)
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[1])["function"].startswith("farext_scale"), top(s[1])
    lines = [(top(x)["function"], top(x).get("line")) for x in s[1:]]
    into = [k for k, x in enumerate(s) if top(x)["function"].startswith("far::scale")]
    assert into, lines
    assert top(s[into[0]])["file"] == str(src / "far_core.cpp")
    assert top(s[into[0]])["line"] == line_of(src / "far_core.cpp", "far_core: first line")
    # it came from farext's line that calls it
    assert top(s[into[0] - 1])["line"] == line_of(src / "farext.cpp", "farext: the call")


@pytest.mark.parametrize("light", ["1", "0"])
def test_break_binds_in_the_core_library_of_an_extension_installed_elsewhere(tdebug, tmp_path,
                                                                             farlib, light):
    site, script, work, src = farlib
    r = run([tdebug, "run", "--batch", "--json", "-b", "far::scale", "--", PYTHON, str(script),
             str(site)], cwd=work, env=clean_env(TDEBUG_LIGHT=light))
    assert r.returncode == 0, r.stderr
    assert "never bound" not in r.stdout + r.stderr
    s = stops(events(r.stdout))
    assert s and s[0]["reason"] == "breakpoint", r.stdout
    assert top(s[0])["function"].startswith("far::scale")
    assert top(s[0])["line"] == line_of(src / "far_core.cpp", "far_core: first line")
