"""loadedSources (issue 23): the Python source files of the modules in
sys.modules, read from the process's memory, and the C/C++ source files
of the debug info gdb read (tinytensor, built with -g), at a native stop
and while the program runs.  Through the schema-checked DAP client."""
from conftest import PYTHON, wait_until
from tdap_util import Adapter, counter, start_target
from tinytensor_util import TT_OUT, TT_SRC, marked_line


def test_loaded_sources_python_modules_and_native_files(tdebug, procs, tmp_path):
    prog = tmp_path / "tt.py"
    prog.write_text("import json\nimport tinytensor\nx = tinytensor.ones(2) + 1\n"
                    "print(repr(x))\n")
    src = str(TT_SRC / "csrc" / "core" / "tt_ops.c")
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    dap = Adapter.start(tdebug, procs, tmp_path)
    caps = dap.initialize()
    assert caps["supportsLoadedSourcesRequest"] is True
    dap.start_program("launch", {"program": str(prog), "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}},
                      lambda d: d.set_breakpoints(src, [line]))
    i, stop = dap.stopped()
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
