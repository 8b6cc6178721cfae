"""loadedSources (issue 23): the Python source files of the modules in
sys.modules, read from the process's memory, and the C/C++ source files
of the debug info gdb read (tinytensor, built with -g), at a native stop
and while the program runs.  Through the schema-checked DAP client."""
from conftest import PYTHON, wait_until
from tdap_util import Adapter, counter, start_target
from tinytensor_util import TT_OUT, TT_SRC, marked_line


def tinytensor_to_add(tdebug, procs, tmp_path, text, py_lines=()):
    """TEXT, a tinytensor script, launched with a breakpoint at the add
    dispatch in tt_ops.c (and its own PY_LINES) and at its first stop:
    (session, script, tt_ops.c, index of the stop, its body)."""
    prog = tmp_path / "tt.py"
    prog.write_text(text)
    src = str(TT_SRC / "csrc" / "core" / "tt_ops.c")
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    dap = Adapter.start(tdebug, procs, tmp_path)
    caps = dap.initialize()
    assert caps["supportsLoadedSourcesRequest"] is True

    def breaks(d):
        if py_lines:
            d.set_breakpoints(str(prog), list(py_lines))
        d.set_breakpoints(src, [line])
    dap.start_program("launch", {"program": str(prog), "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}}, breaks)
    return (dap, prog, src) + dap.stopped()


def test_loaded_sources_python_modules_and_native_files(tdebug, procs, tmp_path):
    dap, prog, src, i, stop = tinytensor_to_add(
        tdebug, procs, tmp_path, "import json\nimport tinytensor\nx = tinytensor.ones(2) + 1\n"
        "print(repr(x))\n")
    sources = dap.request("loadedSources")["body"]["sources"]
    by_path = {s["path"]: s for s in sources}
    # The script (__main__), the stdlib's json, tinytensor's package.
    assert by_path[str(prog)]["origin"] == "Python module __main__"
    assert any(p.endswith("/json/__init__.py") and s["origin"] == "Python module json"
               for p, s in by_path.items())
    assert any(s["origin"] == "Python module tinytensor" for s in sources)
    # The C file of the stop, from tinytensor's debug info.
    assert by_path[src] == {"name": "tt_ops.c", "path": src, "origin": "C/C++ debug info"}
    assert all(s["path"].startswith("/") for s in sources)
    assert len(by_path) == len(sources)
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_loaded_sources_while_it_runs_lets_it_go_on(tdebug, procs, tmp_path):
    p, count = start_target(procs, tmp_path)
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    assert dap.start_program("attach", {"processId": p.pid})["success"]
    sources = dap.request("loadedSources")["body"]["sources"]
    assert str(tmp_path / "target.py") in [s["path"] for s in sources]
    assert not [e for e in dap.events if e["event"] == "stopped"]
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on")
    dap.finish()


def test_loaded_source_events_for_what_appears_after_the_request(tdebug, procs, tmp_path):
    """After a loadedSources answer, each Python module's file and native
    source file that appears is told with a 'loadedSource' event (reason
    new) at the next stop, once; none before the request."""
    dap, prog, src, i, stop = tinytensor_to_add(
        tdebug, procs, tmp_path, "import json\nfirst = 1\nimport csv\nimport tinytensor\n"
        "x = tinytensor.ones(2) + 1\nprint(repr(x))\n", py_lines=[2])
    assert not [e for e in dap.events if e["event"] == "loadedSource"]
    before = {s["path"] for s in dap.request("loadedSources")["body"]["sources"]}
    assert str(prog) in before and src not in before
    assert not any(p.endswith("/csv.py") for p in before)
    dap.continue_(stop["threadId"])
    i, stop = dap.stopped(after=i + 1)
    # Sent after 'stopped' (which they do not delay), the C file's last.
    def told_now():
        return [e["body"] for e in dap.events if e["event"] == "loadedSource"]
    wait_until(lambda: src in [b["source"]["path"] for b in told_now()],
               what="a loadedSource event for tt_ops.c")
    told = told_now()
    paths = [b["source"]["path"] for b in told]
    assert all(b["reason"] == "new" for b in told)
    assert len(paths) == len(set(paths)) and not set(paths) & before
    assert {"name": "tt_ops.c", "path": src, "origin": "C/C++ debug info"} in \
        [b["source"] for b in told]
    assert any(p.endswith("/csv.py") for p in paths)
    assert any(b["source"]["origin"] == "Python module tinytensor" for b in told)
    # What the events told, loadedSources now answers too (with the files
    # of the debug info gdb read since, as requests of this stop needed).
    after = {s["path"] for s in dap.request("loadedSources")["body"]["sources"]}
    assert after >= before | set(paths)
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()
