"""One's own torch operator (samples/myop, a torch.utils.cpp_extension built
with the flags 'tdebug profile --torch-extension' prints), debugged from
Python: breakpoints stop after the prologue where gdb does, in light and
ordinary sessions, with the arguments valid; tensors are read wherever a
value is shown; C++ names are short in stacks and whole in 'bt full'.
Both builds: setup.py build_ext --inplace and cpp_extension.load()."""
import json
import re

import pytest

from conftest import PYTHON, clean_env, run
from myop_util import myop, myop_jit  # noqa: F401 (fixtures)


def json_events(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def gdb_break_line(so):
    """The line gdb itself puts a breakpoint on 'scaled_add' at."""
    r = run(["gdb", "-nx", "-batch", "-ex", "break scaled_add", str(so)])
    m = re.search(r"Breakpoint 1 at 0x[0-9a-f]+: file .*myop\.cpp, line (\d+)\.", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1))


def stop_at_scaled_add(tdebug, cwd, libdir, light):
    env = clean_env(PYTHONPATH=str(libdir), **({} if light else {"TDEBUG_LIGHT": "0"}))
    r = run([tdebug, "run", "--batch", "--json", "-b", "scaled_add", "--", PYTHON, "run.py"],
            cwd=cwd, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    stops = [e for e in json_events(r.stdout) if e.get("event") == "stopped"]
    assert stops, r.stdout + r.stderr
    return stops[0], r


@pytest.mark.parametrize("light", [True, False], ids=["light", "ordinary"])
@pytest.mark.parametrize("build", ["setup.py", "jit"])
def test_break_on_function_stops_after_the_prologue_with_valid_arguments(
        tdebug, torch_available, request, build, light):
    if build == "setup.py":
        cwd = libdir = request.getfixturevalue("myop")
    else:
        cwd, libdir = request.getfixturevalue("myop_jit")
    so = next(libdir.glob("myop*.so"))
    stop, r = stop_at_scaled_add(tdebug, cwd, libdir, light)
    top = stop["frames"][0]
    assert top["function"] == "scaled_add", stop
    assert top["line"] == gdb_break_line(so), stop
    args = {a["name"]: a["value"] for a in stop["args"]["args"]}
    assert args["alpha"] == "2", stop
    assert args["a"]["sizes"] == [2, 3] and args["a"]["values"] == [0, 1, 2, 3, 4, 5], stop
    assert args["b"]["values"] == [1] * 6, stop
    assert "tensor([[2., 3., 4.]," in r.stdout + r.stderr  # the program went on


TENSOR_A = "float32 [2, 3] strides [3, 1] cpu values [0, 1, 2, 3, 4, 5]"


def test_tensors_in_print_locals_finish_and_the_stop_line(tdebug, torch_available, myop):
    """gdb's own commands typed at the prompt show tensors as tdebug's 'args'
    does (gdb's printers, registered by the session); C++ names are short
    in 'bt' and whole in 'bt full'."""
    cmds = ["print a", "next", "next", "next", "print scaled", "info locals", "print a.sizes()",
            "print alpha", "finish", "bt", "bt full", "q"]
    r = run([tdebug, "run", "-b", "scaled_add", "--", PYTHON, "run.py"], cwd=myop,
            env=clean_env(PYTHONPATH=str(myop)), input="\n".join(cmds) + "\n")
    out = r.stdout
    assert "  a (const at::Tensor &) = " + TENSOR_A in out, out + r.stderr
    assert "scaled_add (a=" + TENSOR_A in out, out  # the stop's frame line
    assert "$1 = " + TENSOR_A in out, out
    assert re.search(r"\$2 = float32 \[2, 3\] strides \[3, 1\] cpu values \[2, 2, 2, 2, 2, 2\]", out), out
    assert re.search(r"^scaled = float32 \[2, 3\] strides \[3, 1\] cpu values \[2, 2", out, re.M), out
    assert "$3 = [2, 3]" in out, out          # c10::IntArrayRef
    assert "$4 = 2" in out, out
    assert re.search(r"Value returned: \$5 = float32 \[2, 3\] strides \[3, 1\] cpu values "
                     r"\[2, 3, 4, 5, 6, 7\]", out), out
    assert "in pybind11::detail::argument_loader<\u2026>::call_impl<\u2026>(\u2026) && ()" in out, out
    assert ("in pybind11::detail::argument_loader<at::Tensor const&, at::Tensor const&, double>"
            "::call_impl<at::Tensor, ") in out, out


def test_gdb_alone_with_the_printers_agrees(tdebug, torch_available, myop, build_dir):
    """The printers in a gdb of one's own (as lib/gdb/tdebug_printers.py
    says), given the layout tdebug cached, print what tdebug shows."""
    stop, _ = stop_at_scaled_add(tdebug, myop, myop, light=True)  # caches the layout
    import glob
    import os
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
                         "tdebug", "torch-layout")
    layout = max(glob.glob(cache + "/*.json"), key=os.path.getmtime)
    r = run(["gdb", "-nx", "-batch", "-ex", "set breakpoint pending on",
             "-ex", "python import sys; sys.path.insert(0, '%s'); import tdebug_printers"
             % (build_dir / "gdb"),
             "-ex", "python tdebug_printers.set_layout_file('%s')" % layout,
             "-ex", "break scaled_add", "-ex", "run", "-ex", "print b", "-ex", "kill",
             "--args", PYTHON, "run.py"], cwd=myop, env=clean_env(PYTHONPATH=str(myop)))
    assert "$1 = float32 [2, 3] strides [3, 1] cpu values [1, 1, 1, 1, 1, 1]" in r.stdout, \
        r.stdout + r.stderr


def test_json_frames_have_short_and_full_names(tdebug, torch_available, myop):
    stop, _ = stop_at_scaled_add(tdebug, myop, myop, light=True)
    f1 = stop["frames"][1]
    assert f1["function"].startswith("pybind11::detail::argument_loader<\u2026>::call_impl<"), f1
    assert f1["function_full"].startswith(
        "pybind11::detail::argument_loader<at::Tensor const&, at::Tensor const&, double>"), f1
