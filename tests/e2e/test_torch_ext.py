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
