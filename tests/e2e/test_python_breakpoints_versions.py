"""Python breakpoints and stepping in tdebug sessions on CPythons other
than Debian's 3.11: the library for each minor version (pyenv's, built by
'make pyhook-all'; sys.monitoring on 3.12+), the session unchanged.  Into
native code through tests/fixtures/pyhookext, built for each interpreter
with debug info, so the native stops are at source lines."""
import json
import subprocess
import textwrap

import pytest

from conftest import clean_env, run, tracer_of, wait_until
from pyhook_util import EXT_SRC, LOOP, build_ext, hook_installed, marker_line, pyhook_lib  # noqa: F401 (a fixture)
from stacks_util import python_or_skip

VERSIONS = ["3.8", "3.10", "3.11", "3.12", "3.13"]

PROGRAM = textwrap.dedent("""\
    import sys
    sys.path.insert(0, sys.argv[1])
    import pyhookext

    def helper(v):
        w = v + 1
        return w

    def main():
        v = pyhookext.Vec(3)
        x = helper(v)
        y = v[0]
        print(x.size, y)

    main()
""")


VEC_ADD_BODY = marker_line(EXT_SRC, "if (!PyObject_TypeCheck(a, &VecType) || !PyLong_Check(b))")


def interpreter(version):
    exe = python_or_skip(version)
    if pyhook_lib(exe) is None:
        pytest.fail(f"no hook library for {exe}: run 'make pyhook-all'")
    return exe


def stops(stdout):
    return [e for e in map(json.loads, filter(str.strip, stdout.splitlines()))
            if e["event"] == "stopped"]


def where(stop):
    top = stop["stack"][0]
    return (stop["reason"], top["kind"], top["function"], top.get("line"))


@pytest.mark.usefixtures("light_sessions")  # light and ordinary (issue 27)
@pytest.mark.parametrize("version", VERSIONS)
def test_run_steps_from_python_into_c_and_back(tdebug, tmp_path, build_ext, version):
    exe = interpreter(version)
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    cmds = tmp_path / "cmds"
    cmds.write_text("step\nstep\nfinish\nnext\nfinish\nnext\ncontinue\n")
    r = run([tdebug, "run", "--json", "-x", str(cmds), "-b", "prog.py:11", "--", exe, str(script),
             str(build_ext(exe))])
    assert r.returncode == 0, r.stderr
    s = stops(r.stdout)
    assert [where(x) for x in s] == [
        ("python-breakpoint", "python", "main", 11),
        ("step", "python", "helper", 6),      # into the Python function
        ("step", "native", "vec_add", VEC_ADD_BODY),  # Vec.__add__'s C, past its prologue
        ("finish", "python", "helper", 6),    # back at the line that called it
        ("next", "python", "helper", 7),
        ("finish", "python", "main", 11),     # back in the caller
        ("next", "python", "main", 12),
    ], s
    assert s[2]["stack"][0]["file"] == str(EXT_SRC)
    assert "into the native code of Vec.__add__" in s[2]["message"]
    assert "4 3" in r.stderr  # the program ran on to its end


@pytest.mark.parametrize("version", VERSIONS)
def test_attach_breaks_in_a_running_loop_and_detach_removes_the_hook(tdebug, procs, tmp_path,
                                                                     version):
    exe = interpreter(version)
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    p = procs.start([exe, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    cmds = tmp_path / "cmds"
    cmds.write_text("continue\nnext\nquit\n")
    r = run([tdebug, "attach", "--json", "-x", str(cmds), "-b", "loop.py:5", str(p.pid)])
    assert r.returncode == 0, r.stderr
    s = stops(r.stdout)
    assert [(x["reason"], x["stack"][0].get("line")) for x in s[1:]] == \
        [("python-breakpoint", 5), ("next", 6)], s
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
    # the loop calls no Python function: the breakpoint's line events are
    # what applies the disable written at the detach
    wait_until(lambda: hook_installed(p.pid) == 0, what="the hook removed")
    assert p.poll() is None


# issue 26: a breakpoint on a function of a shared libpython (pyenv's) never
# bound in a full gdb session: libpython's symbols were never read for it.
@pytest.mark.parametrize("version,how", [(v, "TDEBUG_LIGHT=0") for v in
                                         ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]] +
                         [("3.12", "--cpython-symbols"), ("3.12", "--catch-throw"),
                          ("3.12", "--symbols")])
def test_function_in_a_shared_libpython_binds_in_a_full_session(tdebug, version, how):
    exe = python_or_skip(version)
    env = clean_env(TDEBUG_LIGHT="0") if how == "TDEBUG_LIGHT=0" else clean_env()
    opts = {"TDEBUG_LIGHT=0": [], "--cpython-symbols": ["--cpython-symbols"],
            "--catch-throw": ["--catch-throw"], "--symbols": ["--symbols", "libc\\.so"]}[how]
    r = run([tdebug, "run", "--json", "-b", "PyObject_Repr", *opts, "--", exe, "-c",
             "repr(object())"], env=env)
    assert r.returncode == 0, r.stderr
    stops = [e for e in map(json.loads, r.stdout.splitlines()) if e["event"] == "stopped"]
    assert stops and stops[0]["reason"] == "breakpoint", (version, how, r.stdout[-2000:])
    assert stops[0]["frames"][0]["function"].startswith("PyObject_Repr")
    assert "libpython" in stops[0]["frames"][0]["library"] or \
        stops[0]["frames"][0].get("file"), stops[0]["frames"][0]
