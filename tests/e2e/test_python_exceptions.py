"""Stops at Python exceptions (issue 23): raised, uncaught, and leaving the
user's code into a library's (userUnhandled), through tdebug's hook in the
process (lib/pyhook/exceptions.c), on Debian's 3.11 and pyenv's 3.8, 3.12
and 3.13 (sys.monitoring); at the prompt ('catch python-raise [TYPE]',
'info breakpoints', 'delete'), on the command line (--catch-raise[=TYPE])
and through the DAP (the raised/uncaught/userUnhandled filters and
exceptionInfo, every message checked against the DAP schema).

The "library" is a module in a folder that is neither the program's nor
the working directory, so the user's-code rule of a step decides as it
does for a real site-packages; json is the standard library's."""
import json
import textwrap

import pytest

from conftest import PYTHON, run
from pyhook_util import pyhook_lib
from stacks_util import python_or_skip
from tdap_util import Adapter

FAKELIB = textwrap.dedent("""\
    def call_catching(fn):
        try:
            return fn()
        except ValueError:
            return "caught"


    def call(fn):
        return fn()
""")

PROG = textwrap.dedent("""\
    import json
    import sys
    sys.path.insert(0, sys.argv[1])
    import fakelib


    def bad():
        raise ValueError("from user")           # line 8


    def hook(d):
        raise KeyError("in hook")               # line 12


    def main():
        print(fakelib.call_catching(bad))       # line 16: the library catches it
        try:
            json.loads('{"a": 1}', object_hook=hook)  # into json's frames, which do not
        except KeyError:
            pass
        try:
            json.loads("{bad")                  # raised in json's decoder
        except ValueError:
            pass
        fakelib.call(bad)                       # line 25: uncaught


    main()                                      # line 28
""")

VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]


def interpreter(version):
    exe = PYTHON if version == "3.11" else python_or_skip(version)
    if pyhook_lib(exe) is None:
        pytest.fail(f"no hook library for {exe}: run 'make pyhook-all'")
    return exe


@pytest.fixture
def layout(tmp_path):
    """(app folder, program, library folder): the library outside the app."""
    app, site = tmp_path / "app", tmp_path / "site"
    app.mkdir()
    site.mkdir()
    (site / "fakelib.py").write_text(FAKELIB)
    prog = app / "prog.py"
    prog.write_text(PROG)
    return app, prog, site


def session(tdebug, tmp_path, app, commands, *args):
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, "run", "--json", "-x", str(cmds)] + list(args), cwd=str(app))
    events = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    return r, events


def stops(events):
    return [e for e in events if e["event"] == "stopped"]


def top(stop):
    t = stop["stack"][0]
    return t["function"], t["file"].rsplit("/", 1)[-1], t["line"]


@pytest.mark.parametrize("version", VERSIONS)
def test_raised_stops_at_the_raise_line_in_user_code_and_in_a_library(tdebug, tmp_path, layout,
                                                                        version):
    exe = interpreter(version)
    app, prog, site = layout
    r, events = session(tdebug, tmp_path, app, ["continue"] * 6, "--catch-raise=ValueError",
                        "--", exe, str(prog), str(site))
    s = stops(events)
    assert r.returncode == 1, r.stderr  # the program's own exit: the uncaught ValueError
    assert [x["reason"] for x in s] == ["python-exception"] * 3, s
    # at the raise in the user's function; in json's decoder (JSONDecodeError
    # derives from ValueError; KeyError does not); the user's function again
    assert [top(x) for x in s][0] == ("bad", "prog.py", 8)
    assert top(s[1])[1] == "decoder.py"
    assert s[1]["exception"]["type"] == "json.decoder.JSONDecodeError"
    assert top(s[2]) == ("bad", "prog.py", 8)
    exc = s[0]["exception"]
    assert exc["language"] == "python" and exc["event"] == "raised"
    assert exc["type"] == "ValueError" and exc["message"] == "from user"
    assert exc["traceback"].endswith('line 8, in bad\nValueError: from user\n'), exc
    assert "Python exception raised (catchpoint 1): ValueError: from user" in s[0]["message"]


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_raised_with_no_class_stops_only_in_the_users_code(tdebug, tmp_path, layout, version):
    # json's decoder raises (and the standard library's imports raise and
    # catch as they load): with no class named, only the user's raises stop.
    exe = interpreter(version)
    app, prog, site = layout
    r, events = session(tdebug, tmp_path, app, ["continue"] * 8, "--catch-raise",
                        "--", exe, str(prog), str(site))
    s = stops(events)
    assert r.returncode == 1, r.stderr
    assert [top(x) for x in s] == [("bad", "prog.py", 8), ("hook", "prog.py", 12),
                                   ("bad", "prog.py", 8)], [top(x) for x in s]


@pytest.mark.parametrize("version", VERSIONS)
def test_uncaught_and_user_unhandled_at_the_prompt(tdebug, tmp_path, layout, version):
    exe = interpreter(version)
    app, prog, site = layout
    r, events = session(tdebug, tmp_path, app, [
        "catch python-user-unhandled", "catch python-uncaught", "info breakpoints",
        "continue", "continue", "continue", "continue"],
        "-b", "prog.py:16", "--", exe, str(prog), str(site))
    s = stops(events)
    assert [(x["reason"], x.get("exception", {}).get("event")) for x in s] == [
        ("python-breakpoint", None),
        # the hook raises in the user's code into json's frames (whose
        # try catches only StopIteration); the one the library catches
        # (call_catching) never stops
        ("python-exception", "user-unhandled"),
        # bad() leaves the user's code into fakelib.call, which does not catch
        ("python-exception", "user-unhandled"),
        # then no handler: once, in the outermost frame, before the end
        ("python-exception", "uncaught"),
    ], s
    assert top(s[1]) == ("hook", "prog.py", 12)
    assert s[1]["exception"]["type"] == "KeyError"
    assert top(s[2]) == ("bad", "prog.py", 8)
    assert top(s[3]) == ("<module>", "prog.py", 28)
    tb = s[3]["exception"]["traceback"]
    assert tb.startswith("Traceback (most recent call last):\n")
    assert ["prog.py\", line 28", "prog.py\", line 25", "fakelib.py\", line 9",
            "prog.py\", line 8"] == [ln.split("/")[-1].split(", in")[0]
                                     for ln in tb.splitlines() if ln.startswith("  File ")]
    listed = [e for e in events if e["event"] == "breakpoints"][0]["breakpoints"]
    assert [(b["number"], b["type"], b["location"]) for b in listed] == [
        (1, "python", "prog.py:16"), (2, "python", "python-user-unhandled"),
        (3, "python", "python-uncaught")]
    assert "caught" in r.stderr + r.stdout


WITHS = textwrap.dedent("""\
    import contextlib
    import sys
    sys.path.insert(0, sys.argv[1])
    import fakelib


    class Passing:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


    def swallowed():
        with contextlib.suppress(ValueError):
            raise ValueError("swallowed")       # line 17: suppress swallows it
        return "ok"


    def let_go():
        with Passing():                         # line 22
            raise ValueError("let go")          # line 23: Passing lets it go


    def main():
        print(fakelib.call(swallowed))          # line 27
        try:
            fakelib.call(let_go)
        except ValueError:
            pass


    main()
    with contextlib.suppress(KeyError):
        raise KeyError("swallowed at the top")
    with Passing():
        raise KeyError("uncaught at the top")   # line 38
""")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_with_decides_user_unhandled_and_uncaught(tdebug, tmp_path, layout, version):
    """A 'with' whose __exit__ swallows the exception (contextlib.suppress)
    stops neither as leaving the user's code nor as uncaught; one whose
    __exit__ lets it go stops where it leaves the frame, once __exit__ has
    run (exceptions.c: the stop is deferred to then)."""
    exe = interpreter(version)
    app, _, site = layout
    (app / "withs.py").write_text(WITHS)
    r, events = session(tdebug, tmp_path, app, [
        "catch python-user-unhandled", "catch python-uncaught",
        "continue", "continue", "continue", "continue"],
        "-b", "withs.py:27", "--", exe, str(app / "withs.py"), str(site))
    s = stops(events)
    # at the raise line of the frame the exception leaves, once __exit__ ran
    assert [(x["reason"], x.get("exception", {}).get("event"), top(x),
             x.get("exception", {}).get("message")) for x in s] == [
        ("python-breakpoint", None, ("main", "withs.py", 27), None),
        ("python-exception", "user-unhandled", ("let_go", "withs.py", 23), "let go"),
        ("python-exception", "uncaught", ("<module>", "withs.py", 38), "'uncaught at the top'"),
    ], s
    assert r.returncode == 1 and "ok" in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("version", ["3.8", "3.11"])
def test_a_library_found_through_a_relative_path_is_not_the_users(tdebug, tmp_path, layout,
                                                                   version):
    # sys.path "../site": the library's co_filename is "../site/fakelib.py",
    # outside the working directory once its ".." is taken away
    exe = interpreter(version)
    app, prog, _ = layout
    r, events = session(tdebug, tmp_path, app, [
        "catch python-user-unhandled", "continue", "continue", "continue"],
        "-b", "prog.py:16", "--", exe, str(prog), "../site")
    s = stops(events)
    assert [(x.get("exception", {}).get("event"), top(x)) for x in s] == [
        (None, ("main", "prog.py", 16)),
        ("user-unhandled", ("hook", "prog.py", 12)),
        ("user-unhandled", ("bad", "prog.py", 8))], s


def test_type_filter_and_delete(tdebug, tmp_path, layout):
    app, prog, site = layout
    r, events = session(tdebug, tmp_path, app, [
        "catch python-raise KeyError", "info breakpoints", "continue",
        "delete 2", "continue"],
        "-b", "prog.py:16", "--", PYTHON, str(prog), str(site))
    s = stops(events)
    # KeyError only (not the ValueErrors), and nothing after 'delete'
    assert [(x["reason"], top(x)) for x in s] == [
        ("python-breakpoint", ("main", "prog.py", 16)),
        ("python-exception", ("hook", "prog.py", 12))], s
    assert r.returncode == 1
    text = run([tdebug, "run", "-x", str(tmp_path / "cmds"), "-b", "prog.py:16", "--", PYTHON,
                str(prog), str(site)], cwd=str(app)).stdout
    assert "2    pycatch     y    0     Python exception raised: KeyError" in text, text
    assert "Python exception raised (catchpoint 2): KeyError: 'in hook'" in text, text


def test_refusals(tdebug, tmp_path, layout):
    app, prog, site = layout
    r = run([tdebug, "run", "--catch-raise=no good", "--", PYTHON, str(prog), str(site)])
    assert r.returncode == 2 and "'no good' is not a Python class name" in r.stderr, r.stderr
    r, events = session(tdebug, tmp_path, app, ["catch python-sometimes", "continue"],
                        "-b", "prog.py:16", "--", PYTHON, str(prog), str(site))
    errors = [e for e in events if e["event"] == "error"]
    assert errors and "python-raise" in errors[0]["message"], events


def test_dap_filters_and_exception_info(tdebug, procs, tmp_path, layout):
    app, prog, site = layout
    dap = Adapter.start(tdebug, procs, tmp_path, cwd=str(app))
    caps = dap.initialize()
    assert [f["filter"] for f in caps["exceptionBreakpointFilters"]] == [
        "cpp_throw", "c10_error", "raised", "uncaught", "userUnhandled"]
    told = {}

    def setup(d):
        told["bps"] = d.request("setExceptionBreakpoints",
                                {"filters": ["userUnhandled", "uncaught"]})["body"]["breakpoints"]
    dap.start_program("launch", {"program": str(prog), "python": PYTHON, "args": [str(site)],
                                 "cwd": str(app)}, setup)
    assert all(b["verified"] for b in told["bps"]), told
    seen = []
    after = 0
    for _ in range(3):
        after, stop = dap.stopped(after=after)
        after += 1
        assert stop["reason"] == "exception", stop
        info = dap.request("exceptionInfo", {"threadId": stop["threadId"]})["body"]
        f = dap.frames(stop["threadId"])[0]
        seen.append((info["exceptionId"], info["breakMode"], f["source"]["path"].rsplit("/", 1)[-1],
                     f["line"]))
        if info["breakMode"] == "unhandled":
            assert info["description"] == "from user"
            assert info["details"]["stackTrace"].endswith("ValueError: from user\n")
            assert "fakelib.py" in info["details"]["stackTrace"]
        else:
            assert stop["text"].startswith(info["exceptionId"] + ": ")
        dap.continue_(stop["threadId"])
    assert seen == [("KeyError", "userUnhandled", "prog.py", 12),
                    ("ValueError", "userUnhandled", "prog.py", 8),
                    ("ValueError", "unhandled", "prog.py", 28)], seen
    assert dap.wait_event("exited")["body"]["exitCode"] == 1
    dap.finish()


SHAPE = textwrap.dedent("""\
    import torch
    a = torch.ones(2)
    b = torch.ones(3)
    try:
        a + b
    except RuntimeError as e:
        print("caught:", str(e).splitlines()[0])
    a + b
""")


def test_a_c10_error_says_where_cxx_threw_it(tdebug, tmp_path, torch_available):
    prog = tmp_path / "shape.py"
    prog.write_text(SHAPE)
    r = run([tdebug, "run", "--batch", "--json", "--catch-raise=RuntimeError", "--", PYTHON,
             str(prog)], cwd=str(tmp_path))
    s = [e for e in stops([json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()])
         if e["exception"]["traceback"].find(str(prog)) >= 0]
    assert len(s) == 2, r.stdout[-3000:]  # the caught one and the uncaught one, at line 5, 8
    assert [top(x)[2] for x in s] == [5, 8]
    cxx = s[0]["exception"]["cxx_throw"]
    assert cxx["type"] == "c10::Error"
    assert cxx["message"].startswith("The size of tensor a (2) must match")
    assert cxx["site"].startswith("at::infer_size"), cxx
    assert "thrown in C++ as c10::Error in at::infer_size" in s[0]["message"]
    assert "caught: The size of tensor a (2)" in r.stderr + r.stdout


def test_dap_exception_info_of_a_c10_error_has_the_cxx_throw(tdebug, procs, tmp_path,
                                                            torch_available):
    prog = tmp_path / "shape.py"
    prog.write_text(SHAPE)
    dap = Adapter.start(tdebug, procs, tmp_path, cwd=str(tmp_path))
    dap.initialize()
    dap.start_program("launch", {"program": str(prog), "python": PYTHON},
                      lambda d: d.request("setExceptionBreakpoints", {"filters": ["uncaught"]}))
    i, stop = dap.stopped()
    assert stop["reason"] == "exception"
    info = dap.request("exceptionInfo", {"threadId": stop["threadId"]})["body"]
    assert info["exceptionId"] == "RuntimeError" and info["breakMode"] == "unhandled"
    assert info["description"].startswith("The size of tensor a (2) must match")
    inner = info["details"]["innerException"][0]
    assert inner["typeName"] == "c10::Error"
    assert "at::infer_size" in inner["stackTrace"], inner
    # VS Code's exception widget shows the description and the stackTrace
    # only (not innerException): the traceback ends with the C++ side.
    trace = info["details"]["stackTrace"]
    assert trace.index('line 8, in <module>') < trace.index("thrown in C++ as c10::Error, at:\n#0  ")
    assert "at::infer_size" in trace.split("thrown in C++ as c10::Error")[1], trace
    assert dap.frames(stop["threadId"])[0]["line"] == 8
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 1
    dap.finish()



def test_dap_filter_set_at_a_python_stop_has_the_cxx_throw(tdebug, procs, tmp_path,
                                                           torch_available):
    """As in VS Code, where the filters are ticked in the Breakpoints view
    during a session that started with Python breakpoints only (a light
    session): the RuntimeError still says where C++ threw it."""
    prog = tmp_path / "shape.py"
    prog.write_text(SHAPE)
    dap = Adapter.start(tdebug, procs, tmp_path, cwd=str(tmp_path))
    dap.initialize()
    dap.start_program("launch", {"program": str(prog), "python": PYTHON},
                      lambda d: d.set_breakpoints(str(prog), [2]))
    i, stop = dap.stopped()
    dap.request("setExceptionBreakpoints", {"filters": ["raised"]})
    dap.continue_(stop["threadId"])
    i, stop = dap.stopped(after=i + 1)
    assert stop["reason"] == "exception"
    info = dap.request("exceptionInfo", {"threadId": stop["threadId"]})["body"]
    assert info["exceptionId"] == "RuntimeError"
    assert "thrown in C++ as c10::Error, at:" in info["details"]["stackTrace"], info
    dap.finish()
