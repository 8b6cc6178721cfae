"""stepInTargets and stepIn with a targetId (issue 23): the calls a Python
line is about to make, read by the hook from the frame's bytecode, and a
step into the one picked: torch's operator for a torch call, the first line
for a Python function, the line's other calls run on the way.  Through the
schema-checked DAP client, on Debian's torch."""
import pytest

from conftest import PYTHON
from pyhook_util import pyhook_lib
from stacks_util import python_or_skip
from tdap_util import Adapter

PROGRAM = """\
import torch


def double(t):
    return t * 2


def main():
    x = torch.ones(3)
    y = torch.ones(3)
    z = torch.add(x.relu(), double(y))
    w = torch.add(x.relu(), double(y))
    v = double(double(y))
    print(float(z.sum()), float(w.sum()), float(v.sum()))


main()
"""


def line_of(text):
    return [i + 1 for i, line in enumerate(PROGRAM.splitlines()) if text in line][0]


@pytest.fixture
def program(tmp_path, torch_available):
    p = tmp_path / "targets.py"
    p.write_text(PROGRAM)
    return p


def targets(dap, tid):
    frame = dap.frames(tid)[0]
    return frame, dap.request("stepInTargets", {"frameId": frame["id"]})["body"]["targets"]


def step_into(dap, tid, targets, label, after):
    target = [t for t in targets if t["label"] == label][0]
    dap.request("stepIn", {"threadId": tid, "targetId": target["id"]})
    return dap.stopped(after=after)


def test_step_in_targets_list_the_calls_and_step_into_the_one_picked(tdebug, procs, tmp_path,
                                                                     program):
    dap = Adapter.start(tdebug, procs, tmp_path)
    caps = dap.initialize()
    assert caps["supportsStepInTargetsRequest"] is True
    first, second, third = (line_of("z = "), line_of("w = "), line_of("v = "))

    def setup(d):
        d.set_breakpoints(str(program), [first, second, third])
    dap.start_program("launch", {"program": str(program), "python": PYTHON}, setup)
    i, stop = dap.stopped()
    tid = stop["threadId"]

    # The calls in the order they run, with their columns (3.11+).
    frame, ts = targets(dap, tid)
    assert frame["line"] == first
    assert [t["label"] for t in ts] == ["x.relu", "double", "torch.add"]
    text = PROGRAM.splitlines()[first - 1]
    add = ts[2]
    assert text[add["column"] - 1:add["endColumn"] - 1] == "torch.add(x.relu(), double(y))"

    # Into torch.add: relu and the Python function double run on the way.
    i, stop = step_into(dap, tid, ts, "torch.add", i + 1)
    assert stop["reason"] == "step"
    top = dap.frames(tid)[0]
    assert top["name"].startswith("at::_ops::add_Tensor::call"), top
    dap.continue_(tid)
    i, stop = dap.stopped(after=i + 1)
    assert dap.frames(tid)[0]["line"] == second

    # Into the Python function double, past relu.
    frame, ts = targets(dap, tid)
    i, stop = step_into(dap, tid, ts, "double", i + 1)
    top = dap.frames(tid)[0]
    assert (top["name"], top["line"]) == ("double", line_of("return t * 2")), top
    dap.continue_(tid)
    i, stop = dap.stopped(after=i + 1)
    assert dap.frames(tid)[0]["line"] == third

    # The second of two calls of one name: the first runs, the step stops
    # in the other (whose argument is the first's result).
    frame, ts = targets(dap, tid)
    assert [t["label"] for t in ts] == ["double", "double"]
    dap.request("stepIn", {"threadId": tid, "targetId": ts[1]["id"]})
    i, stop = dap.stopped(after=i + 1)
    top = dap.frames(tid)[0]
    assert top["name"] == "double"
    value = dap.request("evaluate", {"expression": "float(t.sum())", "frameId": top["id"],
                                     "context": "repl"})["body"]["result"]
    assert value == "6.0"

    # An id from another stop is refused, saying why.
    r = dap.request("stepIn", {"threadId": tid, "targetId": 99}, check=False)
    assert not r["success"] and "stepInTargets" in r["message"]
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_step_in_targets_refused_at_a_native_stop(tdebug, procs, tmp_path, program):
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()

    def setup(d):
        d.request("setFunctionBreakpoints", {"breakpoints": [{"name": "at::_ops::relu::call"}]})
    dap.start_program("launch", {"program": str(program), "python": PYTHON}, setup)
    i, stop = dap.stopped()
    tid = stop["threadId"]
    frame = dap.frames(tid)[0]
    r = dap.request("stepInTargets", {"frameId": frame["id"]}, check=False)
    assert not r["success"] and "Python breakpoint or step" in r["message"]
    dap.finish()


PLAIN = """\
def g(a):
    return a + 1


def h(a):
    return a * 2


class K:
    def __init__(self, v):
        self.v = v


def main():
    r = g(h(1)) + h(g(2)) + K(3).v
    print(r)


main()
"""


@pytest.mark.parametrize("version", ["3.8", "3.10", "3.12", "3.13"])
def test_step_targets_on_each_hook(tdebug, procs, tmp_path, version):
    """3.8-3.11's hook (PEP 523 and tracing) and 3.12+'s (sys.monitoring):
    the calls by name (and columns from 3.11), a step past two calls into
    the third, and into a class's __init__."""
    python = python_or_skip(version)
    if not pyhook_lib(python):
        pytest.skip(f"the hook for {version} is not built ('make pyhook-all')")
    prog = tmp_path / "plain.py"
    prog.write_text(PLAIN)
    line = [i + 1 for i, t in enumerate(PLAIN.splitlines()) if "r = g(h(1))" in t][0]
    dap, i, tid = Adapter.at_line(tdebug, procs, tmp_path, prog, line, python)
    frame, ts = targets(dap, tid)
    assert [t["label"] for t in ts] == ["h", "g", "g", "h", "K"]
    new = tuple(map(int, version.split("."))) >= (3, 11)
    assert all(("column" in t) == new for t in ts)
    # The second h: h(1) and g run first; h's argument is g(2) = 3.
    dap.request("stepIn", {"threadId": tid, "targetId": ts[3]["id"]})
    i, stop = dap.stopped(after=i + 1)
    top = dap.frames(tid)[0]
    assert top["name"] == "h", top
    value = dap.request("evaluate", {"expression": "a", "frameId": top["id"],
                                     "context": "repl"})["body"]["result"]
    assert value == "3"
    dap.request("stepOut", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    frame, ts = targets(dap, tid)
    assert [t["label"] for t in ts] == ["K"]
    dap.request("stepIn", {"threadId": tid, "targetId": ts[0]["id"]})
    i, stop = dap.stopped(after=i + 1)
    top = dap.frames(tid)[0]
    assert top["name"].endswith("__init__"), top
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()
