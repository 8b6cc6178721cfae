"""Where a step from Python stops (issue 22): past the binding's glue, in
the user's own C++ op (a torch.utils.cpp_extension built here with -O0 -g,
by setup.py and by cpp_extension.load), else at torch's operator entry
(at::_ops::NAME::call, its tensors read), and 'finish' back through the
glue to the Python line; 'set step-into binding' and --step-into binding
keep the first native frame.  In run, attach and the DAP, against the real
gdb, Debian's torch and libtorch-dev."""
import os
import shutil
import subprocess
import textwrap

import pytest

from conftest import PYTHON, ROOT, run, tracer_of, wait_until
from step_util import events, line_of, session, stops, top
from tdap_util import Adapter

MYOP = ROOT / "tests" / "e2e" / "data" / "myop"
BUILD_TIMEOUT = 1200  # a ten-line op is minutes of compiling on a loaded machine


def need_extension_headers():
    r = subprocess.run([PYTHON, "-c", "import torch.utils.cpp_extension as c, os, sys; "
                        "sys.exit(0 if all(os.path.exists(os.path.join(p, 'torch', "
                        "'extension.h')) or os.path.exists(os.path.join(p, 'torch', 'csrc')) "
                        "for p in c.include_paths()[:1]) else 1)"], capture_output=True)
    if r.returncode != 0 or not os.path.exists("/usr/include/pybind11/pybind11.h"):
        pytest.fail("building a torch extension needs libtorch-dev and pybind11-dev: "
                    "'make deps' installs them")


@pytest.fixture(scope="module")
def myop(tmp_path_factory, torch_available):
    """The op, built with setup.py build_ext --inplace: its directory."""
    need_extension_headers()
    d = tmp_path_factory.mktemp("myop")
    for f in ("scaled_add.cpp", "setup.py", "use_myop.py"):
        shutil.copy(MYOP / f, d / f)
    r = subprocess.run([PYTHON, "setup.py", "build_ext", "--inplace"], cwd=d,
                       capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    return d


CALL = "c = myop.scaled_add(a, b, 2.0)"


def test_step_from_python_lands_in_the_users_op_next_and_finish_back(tdebug, tmp_path, myop):
    script = myop / "use_myop.py"
    src = myop / "scaled_add.cpp"
    call = line_of(script, CALL)
    first = line_of(src, "scaled_add: first line")
    r, evs = session(tdebug, tmp_path, ["step", "next", "finish", "next", "continue"],
                     "-b", f"{script}:{call}", "--", PYTHON, str(script), str(myop))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[0])["line"] == call
    # step: past pybind11's dispatcher and argument loader, in the user's op
    assert s[1]["reason"] == "step"
    assert top(s[1])["function"].startswith("scaled_add")
    assert top(s[1])["file"] == str(src) and top(s[1])["line"] == first
    # next: the op's next line
    assert s[2]["reason"] == "next" and top(s[2])["line"] == first + 1
    # finish: back through the glue to the Python line that called it
    assert s[3]["reason"] == "finish"
    assert top(s[3]) == {"kind": "python", "function": "<module>", "file": str(script),
                         "line": call}
    assert s[4]["reason"] == "next" and top(s[4])["line"] == call + 1
    assert "[2.0, 3.0, 4.0, 5.0]" in r.stderr


def test_next_off_the_end_of_the_op_goes_back_to_the_python_line(tdebug, tmp_path, myop):
    script = myop / "use_myop.py"
    call = line_of(script, CALL)
    r, evs = session(tdebug, tmp_path, ["step"] + ["next"] * 7 + ["continue"],
                     "-b", f"{script}:{call}", "--", PYTHON, str(script), str(myop))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    tops = [top(x) for x in s[1:]]
    # the op's lines (its cleanup goes back a line), then out of it to the
    # Python line: never a frame of pybind11's
    assert all("pybind11" not in (t.get("file") or "") for t in tops), tops
    back = [k for k, t in enumerate(tops) if t["kind"] == "python"]
    assert back and tops[back[0]]["line"] == call, tops
    assert all(t["function"].startswith("scaled_add") for t in tops[:back[0]]), tops


def test_set_step_into_binding_stops_in_pybind11s_dispatcher(tdebug, tmp_path, myop):
    script = myop / "use_myop.py"
    call = line_of(script, CALL)
    r, evs = session(tdebug, tmp_path, ["set step-into binding", "step", "continue"],
                     "-b", f"{script}:{call}", "--", PYTHON, str(script), str(myop))
    assert r.returncode == 0, r.stderr
    assert {"event": "step-into", "mode": "binding"} in evs
    s = stops(evs)
    assert s[1]["reason"] == "step" and "dispatcher" in top(s[1])["function"]


def test_an_op_built_by_cpp_extension_load_elsewhere(tdebug, tmp_path, myop):
    """cpp_extension.load() builds into TORCH_EXTENSIONS_DIR, outside the
    program's directory: the op's source is still the user's."""
    ext_dir = tmp_path / "ext-cache"
    prog_dir = tmp_path / "prog"
    prog_dir.mkdir()
    shutil.copy(MYOP / "scaled_add.cpp", prog_dir / "scaled_add.cpp")
    script = prog_dir / "jit_myop.py"
    script.write_text(textwrap.dedent(f"""\
        import os
        import torch
        from torch.utils.cpp_extension import load

        here = os.path.dirname(os.path.abspath(__file__))
        myop = load("myop_jit", [os.path.join(here, "scaled_add.cpp")],
                    extra_cflags=["-O0", "-g"], build_directory={str(ext_dir)!r})
        a = torch.arange(4.0)
        c = myop.scaled_add(a, a, 2.0)  # the call
        print(c.tolist())
    """))
    ext_dir.mkdir()
    call = line_of(script, "# the call")
    pre = subprocess.run([PYTHON, str(script)], capture_output=True, text=True,
                         timeout=BUILD_TIMEOUT)  # build once, outside the debugger
    assert pre.returncode == 0, pre.stdout + pre.stderr
    r, evs = session(tdebug, tmp_path, ["step", "finish", "continue"], "-b",
                     f"{script}:{call}", "--", PYTHON, str(script), cwd=str(prog_dir))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[1])["function"].startswith("scaled_add")
    assert top(s[1])["file"] == str(prog_dir / "scaled_add.cpp")
    assert top(s[2])["kind"] == "python" and top(s[2])["line"] == call


STOCK = textwrap.dedent("""\
    import torch

    x = torch.arange(6.0).reshape(2, 3)
    y = torch.ones(2, 3)
    lin = torch.nn.Linear(3, 2)
    p = x + y
    q = torch.add(x, y)
    t = x.sum()
    o = lin(x)
    print(p.sum().item(), q.sum().item(), t.item(), tuple(o.shape))
""")

OPERATORS = [("p = x + y", "at::_ops::add_Tensor::call"),
             ("q = torch.add(x, y)", "at::_ops::add_Tensor::call"),
             ("t = x.sum()", "at::_ops::sum::call"),
             ("o = lin(x)", "at::_ops::linear::call")]


@pytest.fixture
def stock(tmp_path, torch_available):
    p = tmp_path / "stock.py"
    p.write_text(STOCK)
    return p


def test_step_from_stock_torch_lines_stops_at_the_operator_entry(tdebug, tmp_path, stock):
    args = []
    for text, _ in OPERATORS:
        args += ["-b", f"{stock}:{line_of(stock, text)}"]
    cmds = []
    for _ in OPERATORS:
        cmds += ["step", "finish", "continue"]
    r, evs = session(tdebug, tmp_path, cmds, *args, "--", PYTHON, str(stock))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert len(s) == 3 * len(OPERATORS), [x["reason"] for x in s]
    for k, (text, op) in enumerate(OPERATORS):
        at, stepped, back = s[3 * k:3 * k + 3]
        assert at["reason"] == "python-breakpoint" and top(at)["line"] == line_of(stock, text)
        assert stepped["reason"] == "step", stepped
        assert top(stepped)["function"].startswith(op + "("), (text, top(stepped))
        assert top(stepped)["library"].split("/")[-1].startswith("libtorch_cpu.so")
        # its tensors, read from memory
        values = [a["value"] for a in stepped["args"]["args"]]
        assert any(isinstance(v, dict) and v.get("sizes") == [2, 3] and v.get("values")
                   for v in values), (text, values)
        assert back["reason"] == "finish" and top(back)["kind"] == "python"
        if text.startswith("o = lin"):
            # the Python line that called the operator: Linear.forward's
            assert top(back)["file"].endswith("torch/nn/modules/linear.py")
            assert top(back)["function"] == "Linear.forward"
        else:
            assert top(back)["line"] == line_of(stock, text)
    assert "(2, 2)" in r.stderr


def test_step_into_binding_keeps_todays_stop(tdebug, tmp_path, stock):
    line = line_of(stock, "q = torch.add(x, y)")
    r, evs = session(tdebug, tmp_path, ["step", "continue"], "--step-into", "binding", "-b",
                     f"{stock}:{line}", "--", PYTHON, str(stock))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    assert top(s[1])["library"].split("/")[-1].startswith("libtorch_python.so")
    assert "args" not in s[1] or not s[1]["args"]


def test_step_into_is_checked(tdebug):
    r = run([tdebug, "run", "--step-into", "nowhere", "--", PYTHON, "-c", "pass"])
    assert r.returncode == 2
    assert "--step-into 'nowhere' is not where a step stops" in r.stderr


def test_attach_steps_to_the_operator(tdebug, procs, tmp_path, torch_available):
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent("""\
        import sys, time
        import torch
        x = torch.ones(3)
        print("ready", flush=True)
        while True:
            y = torch.add(x, x)
            time.sleep(0.01)
    """))
    p = procs.start([PYTHON, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    cmds = tmp_path / "cmds"
    cmds.write_text("continue\nstep\nfinish\nquit\n")
    r = run([tdebug, "attach", "--json", "-x", str(cmds), "-b", f"{script}:6", str(p.pid)])
    assert r.returncode == 0, r.stderr
    s = stops(events(r.stdout))
    assert [x["reason"] for x in s] == ["attached", "python-breakpoint", "step", "finish"]
    assert top(s[2])["function"].startswith("at::_ops::add_Tensor::call(")
    assert top(s[3])["kind"] == "python" and top(s[3])["line"] == 6
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")


def dap_step(tdebug, procs, tmp_path, program, line, extra, py_args=()):
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()

    def setup(d):
        d.set_breakpoints(str(program), [line])
    dap.start_program("launch", dict({"program": str(program), "python": PYTHON,
                                      "args": list(py_args)}, **extra), setup)
    i, stop = dap.stopped()
    tid = stop["threadId"]
    dap.request("stepIn", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    frames = dap.frames(tid)
    dap.request("stepOut", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    back = dap.frames(tid)[0]
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()
    return frames, back


def test_dap_step_in_lands_in_the_op_and_step_out_comes_back(tdebug, procs, tmp_path, myop):
    script = myop / "use_myop.py"
    call = line_of(script, CALL)
    frames, back = dap_step(tdebug, procs, tmp_path, script, call, {}, [str(myop)])
    assert frames[0]["name"].startswith("scaled_add")
    assert frames[0]["source"]["path"] == str(myop / "scaled_add.cpp")
    assert (back["source"]["path"], back["line"]) == (str(script), call)


def test_dap_step_into_operator_and_binding(tdebug, procs, tmp_path, stock):
    line = line_of(stock, "t = x.sum()")
    frames, back = dap_step(tdebug, procs, tmp_path, stock, line, {"stepInto": "operator"})
    assert frames[0]["name"].startswith("at::_ops::sum::call")
    assert back["line"] == line
    frames, back = dap_step(tdebug, procs, tmp_path, stock, line, {"stepInto": "binding"})
    assert not frames[0]["name"].startswith("at::_ops::")
