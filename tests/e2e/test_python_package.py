"""The 'tdebug' Python package and its _tdebug C extension, from the build
tree and after 'make install', against a real gdb."""
import os
import subprocess

import pytest

from conftest import BUILD, PYTHON, ROOT, clean_env, run
from preload_util import bind_dgram, finish, gdb_batch, python_args, recv_json, start


def py_env(**extra):
    return clean_env(PYTHONPATH=str(BUILD / "python"), PYTHONDONTWRITEBYTECODE=1, **extra)


def test_importable_from_the_build_tree():
    r = run(python_args("import tdebug; print(tdebug.__all__, tdebug.Error.__mro__[1].__name__)"),
            env=py_env())
    assert r.returncode == 0, r.stderr
    assert "'wait_for_debugger'" in r.stdout and "OSError" in r.stdout


def test_not_traced_without_a_debugger():
    r = run(python_args("import tdebug; print(tdebug.is_traced(), tdebug.tracer_pid())"),
            env=py_env())
    assert r.stdout == "False 0\n"


def test_traced_under_gdb():
    code = "import tdebug; print('traced', tdebug.is_traced(), tdebug.tracer_pid() > 0)"
    r = run(["gdb", "-nx", "-q", "--batch", "-iex", "set debuginfod enabled off",
             "-ex", "run", "--args", PYTHON, "-c", code], env=py_env())
    assert "traced True True" in r.stdout, r.stdout + r.stderr


def test_breakpoint_without_a_debugger_warns_and_does_nothing():
    r = run(python_args("import tdebug; print(tdebug.breakpoint()); print('after')"),
            env=py_env())
    assert r.returncode == 0
    assert r.stdout == "False\nafter\n"
    assert "RuntimeWarning: tdebug.breakpoint(): no debugger is attached; not stopping" in r.stderr


def test_breakpoint_under_gdb_stops_there_and_continues():
    code = "import tdebug; print('trapped', tdebug.breakpoint()); print('after')"
    r = run(["gdb", "-nx", "-q", "--batch", "-iex", "set debuginfod enabled off",
             "-ex", "run", "-ex", "bt 1", "-ex", "continue",
             "--args", PYTHON, "-c", code], env=py_env())
    out = r.stdout + r.stderr
    assert "Program received signal SIGTRAP" in out, out
    assert "tdebug_breakpoint" in out, out
    assert "trapped True\nafter\n" in r.stdout
    assert "exited normally" in out


def test_wait_for_debugger_times_out(tmp_path):
    sock = bind_dgram(tmp_path / "announce")
    code = "import tdebug; print(tdebug.wait_for_debugger(timeout=0.5))"
    r = run(python_args(code), env=py_env(TDEBUG_ANNOUNCE=str(tmp_path / "announce")))
    assert r.returncode == 0 and r.stdout == "False\n"
    a = recv_json(sock)
    pid = a["pid"]
    assert r.stderr == f"tdebug: pid {pid} waiting for a debugger: tdebug attach {pid}\n"
    assert a["event"] == "waiting" and a["timeout"] == 0.5 and a["module"] is None
    assert "release_symbol" not in a  # attaching releases it
    sock.close()


def test_wait_for_debugger_returns_when_gdb_attaches_and_continues(procs):
    code = "import tdebug; print('attached', tdebug.wait_for_debugger()); print('after')"
    p, err = start(procs, python_args(code), py_env(TDEBUG_ANNOUNCE="off"))
    m = err.wait_for(r"^tdebug: pid (\d+) waiting for a debugger: tdebug attach \d+$")
    assert int(m.group(1)) == p.pid
    out = gdb_batch(p.pid, "continue")
    assert "exited normally" in out, out
    rc, stdout = finish(p)
    assert rc == 0 and stdout == "attached True\nafter\n"


def test_wait_for_debugger_bad_arguments():
    code = ("import tdebug\n"
            "for arg in (-1, float('nan'), 'x'):\n"
            "    try:\n"
            "        tdebug.wait_for_debugger(arg)\n"
            "    except (ValueError, TypeError) as e:\n"
            "        print(type(e).__name__, e)\n")
    r = run(python_args(code), env=py_env())
    assert r.stdout.splitlines() == [
        "ValueError timeout must be a non-negative number of seconds or None",
        "ValueError timeout must be a non-negative number of seconds or None",
        "TypeError must be real number, not str",
    ]
    assert r.stderr == ""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """'make install PREFIX=...' of a fresh build (its own B, so the
    installed tdebug knows its own library directory)."""
    top = tmp_path_factory.mktemp("install")
    prefix, build = top / "prefix", top / "build"
    r = subprocess.run(["make", "-s", f"B={build}", f"PREFIX={prefix}", f"PYTHON={PYTHON}",
                        "install"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def test_make_install(installed):
    prefix = installed
    lib = prefix / "lib" / "tdebug" / "libtdebug-preload.so"
    assert lib.is_file()
    assert (prefix / "bin" / "tdebug").is_file()
    assert (prefix / "share" / "man" / "man1" / "tdebug.1").is_file()
    # The installed tdebug points programs at the installed library.
    r = run([str(prefix / "bin" / "tdebug"), "env"], env=clean_env())
    assert f"export LD_AUDIT='{lib}'\n" in r.stdout
    # The package imports from the installed site directory (.pth file).
    pth = list(prefix.rglob("tdebug.pth"))
    assert len(pth) == 1
    code = (f"import site; site.addsitedir({str(pth[0].parent)!r}); import tdebug; "
            "print(tdebug.__file__, tdebug.is_traced())")
    r = run(python_args(code), env=clean_env())
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(str(prefix / "lib" / "tdebug" / "tdebug" / "__init__.py"))
    assert r.stdout.endswith(" False\n")
    assert not any(p.suffix == ".d" for p in (prefix / "lib" / "tdebug").rglob("*"))
    assert os.access(prefix / "bin" / "tdebug", os.X_OK)
