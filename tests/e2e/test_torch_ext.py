"""One's own torch operator (samples/myop, a torch.utils.cpp_extension built
with the flags 'tdebug profile --torch-extension' prints), debugged from
Python: breakpoints stop after the prologue where gdb does, in light and
ordinary sessions, with the arguments valid; tensors are read wherever a
value is shown; C++ names are short in stacks and whole in 'bt full'.
Both builds: setup.py build_ext --inplace and cpp_extension.load()."""
import json
import re

import pytest

from conftest import PYTHON, clean_env, run, tdebug_copy_without
from myop_util import myop, myop_jit  # noqa: F401 (fixtures)


def json_events(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def gdb_break_line(so):
    """The line gdb itself puts a breakpoint on 'scaled_add' at."""
    r = run(["gdb", "-nx", "-batch", "-ex", "break scaled_add", str(so)])
    m = re.search(r"Breakpoint 1 at 0x[0-9a-f]+: file .*myop\.cpp, line (\d+)\.", r.stdout)
    assert m, r.stdout + r.stderr
    return int(m.group(1))


def marked(myop, marker):
    """The line of myop.cpp holding MARKER."""
    lines = (myop / "myop.cpp").read_text().splitlines()
    return next(i + 1 for i, line in enumerate(lines) if marker in line)


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


def gdb_break_offset(so, function):
    """Where gdb itself puts a breakpoint on FUNCTION: its line and
    'FUNCTION(...) + N', N the bytes past the function's first instruction."""
    r = run(["gdb", "-nx", "-batch", "-ex", f"break {function}", str(so)])
    m = re.search(r"Breakpoint 1 at (0x[0-9a-f]+): file .*myop\.cpp, line (\d+)\.", r.stdout)
    assert m, r.stdout + r.stderr
    r = run(["gdb", "-nx", "-batch", "-ex", f"info symbol {m.group(1)}", str(so)])
    sym = re.search(rf"^({function}\(.*\)(?: \+ \d+)?) in section \.text", r.stdout, re.M)
    assert sym, r.stdout + r.stderr
    return int(m.group(2)), sym.group(1)


@pytest.mark.parametrize("light", [True, False], ids=["light", "ordinary"])
@pytest.mark.parametrize("function", ["join", "scaled_add"])
def test_break_on_function_stops_at_gdbs_address(tdebug, torch_available, myop, function, light):
    """-b FUNCTION stops at the instruction gdb's own 'break FUNCTION'
    chooses (join, taking a std::vector<at::Tensor> by reference, has it on
    its '{' line: the second line-table row of that line, after the
    arguments are stored, as gdb's prologue analysis finds it), with the
    arguments valid there."""
    so = next(myop.glob("myop*.so"))
    line, where = gdb_break_offset(so, function)
    env = clean_env(PYTHONPATH=str(myop), **({} if light else {"TDEBUG_LIGHT": "0"}))
    r = run([tdebug, "run", "-b", function, "--", PYTHON, "run.py"], cwd=myop, env=env,
            input="info symbol $pc\nargs\nq\n")
    out = r.stdout
    assert re.search(rf"^#0  0x[0-9a-f]+ in {function} \(\) at myop\.cpp:{line}$", out, re.M), \
        out + r.stderr
    assert f"{where} in section .text of " in out, (where, out)
    if function == "join":
        assert re.search(r"^  parts \(const std::vector<at::Tensor, std::allocator<at::Tensor> > &\) = "
                         r"@0x[0-9a-f]+: " + HALVES, out, re.M), out
    else:
        assert "  a (const at::Tensor &) = " + TENSOR_A in out, out
        assert "  alpha (double) = 2" in out, out


def test_tensors_in_print_locals_finish_and_the_stop_line(tdebug, torch_available, myop):
    """gdb's own commands typed at the prompt show tensors as tdebug's 'args'
    does (gdb's printers, registered by the session); C++ names are short
    in 'bt' and whole in 'bt full'."""
    out_line = marked(myop, "TOUR: out")
    cmds = ["print a", "tbreak myop.cpp:%d" % out_line, "continue", "print scaled", "info locals", "print a.sizes()",
            "print alpha", "set step-into binding", "finish", "bt", "bt full", "q"]
    # 'set step-into binding': gdb's own finish of scaled_add, into the
    # binding, with its "Value returned" (by default finish goes on through
    # the glue to the Python line: test_step_into.py)
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


def test_finish_through_the_glue_shows_the_tensor_returned(tdebug, torch_available, myop):
    """With the default step-into policy, 'finish' out of scaled_add goes
    on through pybind11's glue to the Python line, and says what
    scaled_add returned (a tensor, decoded) as gdb's own finish does."""
    r = run([tdebug, "run", "-b", "scaled_add", "--", PYTHON, "run.py"], cwd=myop,
            env=clean_env(PYTHONPATH=str(myop)), input="finish\nq\n")
    out = r.stdout
    assert re.search(r"finish: returned to File .*run\.py\", line 14", out + r.stderr), out + r.stderr
    assert re.search(r"Value returned: \$1 = float32 \[2, 3\] strides \[3, 1\] cpu values "
                     r"\[2, 3, 4, 5, 6, 7\]", out), out + r.stderr


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


def test_profile_torch_extension_says_what_the_builds_use(tdebug):
    from myop_util import DEBUG_CFLAGS, DEBUG_LDFLAGS
    r = run([tdebug, "profile", "--torch-extension", "--json"])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["kind"] == "torch-extension"
    notes = " ".join(doc["notes"])
    assert "extra_compile_args=%r" % DEBUG_CFLAGS in notes, notes
    assert "extra_cflags=%r" % DEBUG_CFLAGS in notes, notes
    assert "extra_ldflags=%r" % DEBUG_LDFLAGS in notes, notes
    assert "TORCH_EXTENSIONS_DIR" in [v["name"] for v in doc["variables"]]
    text = run([tdebug, "profile", "--torch-extension"]).stdout
    assert "export TORCH_EXTENSIONS_DIR=" in text and "BuildExtension" in text, text


@pytest.mark.parametrize("build", ["setup.py", "jit"])
def test_profile_check_says_the_built_op_is_debuggable(tdebug, request, build):
    libdir = request.getfixturevalue("myop") if build == "setup.py" else \
        request.getfixturevalue("myop_jit")[1]
    so = next(libdir.glob("myop*.so"))
    r = run([tdebug, "profile", "--check", "--no-deps", str(so)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "=> debuggable" in r.stdout or "debuggable" in r.stdout.splitlines()[-1], r.stdout


def dap_stopped_in(tdebug, procs, tmp_path, myop, function):
    """tdebug dap running myop's run.py to a function breakpoint on
    FUNCTION: (the adapter, the stop's index, its thread, its frames)."""
    from tdap_util import Adapter
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()

    def setup(d):
        d.request("setFunctionBreakpoints", {"breakpoints": [{"name": function}]})
    dap.start_program("launch", {"program": str(myop / "run.py"), "python": PYTHON,
                                 "cwd": str(myop), "env": {"PYTHONPATH": str(myop)}}, setup)
    i, stop = dap.stopped()
    tid = stop["threadId"]
    frames = dap.frames(tid)
    assert frames[0]["name"] == function
    return dap, i, tid, frames


def test_dap_variables_hover_and_evaluate_show_tensors(tdebug, torch_available, myop, procs,
                                                      tmp_path):
    dap, i, tid, frames = dap_stopped_in(tdebug, procs, tmp_path, myop, "scaled_add")
    assert frames[1]["name"].startswith("pybind11::detail::argument_loader<\u2026>::call_impl")
    scopes = dap.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
    args = dap.request("variables", {"variablesReference": scopes[0]["variablesReference"]})
    a = next(v for v in args["body"]["variables"] if v["name"] == "a")
    assert a["value"] == "tensor([[0., 1., 2.], [3., 4., 5.]])", a
    parts = dap.request("variables", {"variablesReference": a["variablesReference"]})["body"]
    got = {v["name"]: v["value"] for v in parts["variables"]}
    assert {"sizes", "strides", "dtype", "device", "storage_offset", "requires_grad",
            "values"} <= set(got), got
    assert (got["dtype"], got["device"]) == ("float32", "cpu"), got
    # On to the line after 'scaled = b * alpha'.
    dap.request("setBreakpoints", {"source": {"path": str(myop / "myop.cpp")},
                                   "breakpoints": [{"line": marked(myop, "TOUR: out")}]})
    dap.continue_(tid)
    i, _ = dap.stopped(after=i + 1)
    top = dap.frames(tid)[0]
    scopes = dap.request("scopes", {"frameId": top["id"]})["body"]["scopes"]
    locs = dap.request("variables", {"variablesReference": scopes[1]["variablesReference"]})
    scaled = next(v for v in locs["body"]["variables"] if v["name"] == "scaled")
    assert scaled["value"].startswith("float32 [2, 3] strides [3, 1] cpu values [2, 2"), scaled
    parts = dap.request("variables", {"variablesReference": scaled["variablesReference"]})["body"]
    assert {"sizes", "dtype", "values"} <= {v["name"] for v in parts["variables"]}, parts
    for context in ("hover", "watch", "repl"):
        ev = dap.request("evaluate", {"expression": "b", "frameId": top["id"],
                                      "context": context})["body"]
        assert "float32 [2, 3] strides [3, 1] cpu values [1, 1, 1, 1, 1, 1]" in ev["result"], ev
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


HALF = r"float32 \[1, 3\] strides \[3, 1\] (storage_offset 3 )?cpu values \[%s\]"
HALVES = (r"std::vector of length 2, capacity 2 = \{" + HALF % "2, 3, 4" + r".*, " +
          HALF % "5, 6, 7")


def test_vector_of_tensors_in_locals_finish_args_and_print(tdebug, torch_available, myop):
    """std::vector<at::Tensor> (myop.halves returns one, myop.join takes one)
    as gdb's commands and tdebug's show it: its tensors decoded."""
    cmds = ["info locals", "finish", "break join", "continue", "args", "print parts",
            "print parts[1]", "print parts.size()", "info xmethod", "q"]
    where = "myop.cpp:%d" % marked(myop, "TOUR: halves")
    r = run([tdebug, "run", "-b", where, "--", PYTHON, "run.py"], cwd=myop,
            env=clean_env(PYTHONPATH=str(myop)), input="\n".join(cmds) + "\n")
    out = r.stdout
    assert re.search(r"^(\(tdebug\) )?parts = " + HALVES, out, re.M), out + r.stderr
    assert re.search(r"Value returned: \$1 = " + HALVES, out), out
    assert re.search(r"^  parts \(const std::vector<at::Tensor, std::allocator<at::Tensor> > &\) = "
                     r"@0x[0-9a-f]+: " + HALVES, out, re.M), out
    assert re.search(r"^\(tdebug\) \$\d+ = " + HALVES, out, re.M), out
    # an element and the size through libstdc++'s xmethods, which read the
    # vector's memory (operator[] is inlined in myop: gdb could not call it)
    assert "Could not find operator[]" not in out, out
    assert re.search(r"^\(tdebug\) \$\d+ = " + HALF % "5, 6, 7", out, re.M), out
    assert re.search(r"^\(tdebug\) \$\d+ = 2$", out, re.M), out
    assert re.search(r"^  libstdc\+\+::vector$", out, re.M), out


def test_dap_variables_expand_a_vector_of_tensors(tdebug, torch_available, myop, procs, tmp_path):
    dap, i, tid, frames = dap_stopped_in(tdebug, procs, tmp_path, myop, "join")
    scopes = dap.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
    args = dap.request("variables", {"variablesReference": scopes[0]["variablesReference"]})
    parts = next(v for v in args["body"]["variables"] if v["name"] == "parts")
    assert parts["variablesReference"] > 0, parts
    items = dap.request("variables", {"variablesReference": parts["variablesReference"]})["body"]
    assert parts["value"].startswith("std::vector of length 2, capacity 2"), parts
    assert [v["name"] for v in items["variables"]] == ["[0]", "[1]"], items
    # each a tensor, its parts as a tensor's (gdb shows a value with parts
    # as "{...}" in a variable object: tdebug's printers' parts expand)
    got = []
    for item in items["variables"]:
        assert item["variablesReference"] > 0, item
        fields = dap.request("variables", {"variablesReference": item["variablesReference"]})
        got.append({v["name"]: v["value"] for v in fields["body"]["variables"]})
    assert all({"sizes", "strides", "dtype", "device", "storage_offset", "values"} <= set(g)
               for g in got), got
    assert [g.get("storage_offset") for g in got] == ["0", "3"], got
    # their strings as a lone tensor's: words, not char arrays
    assert [(g["dtype"], g["device"]) for g in got] == [("float32", "cpu")] * 2, got
    assert [(g["sizes"], g["requires_grad"]) for g in got] == [("[1, 3]", "False")] * 2, got
    assert [g["values"] for g in got] == ["[2.0, 3.0, 4.0]", "[5.0, 6.0, 7.0]"], got
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_tour_extension_walks_the_op_with_its_tensors(tdebug, torch_available, myop):
    """The tour walks the op as a user would: a Python breakpoint on the line
    calling it, 'step' into scaled_add (past pybind11's glue, on its first
    line, the arguments valid), a line of it with a local tensor, 'next',
    and 'finish' back to the Python line with the tensor returned."""
    from tour_util import stops
    r = run([tdebug, "tour", "extension", "--batch"])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    found = stops(r.stdout)
    assert [s["number"] for s in found] == [1, 2, 3, 4, 5, 6], r.stdout[-3000:]
    assert found[0]["title"].startswith("PyInit_myop"), found[0]["title"]
    line, stepped, local, after_next, back = found[1:]
    program = re.search(r"The program: '[^']*' '(/[^']*/tour\.py)'", r.stdout).group(1)

    assert line["title"].startswith("c = myop.scaled_add(a, b, 2.0): "), line["title"]
    assert re.fullmatch(r"tdebug: stopped at Python breakpoint \d+ \(" + re.escape(program) + r":6\)",
                        line["message"]), line["message"]

    assert stepped["title"].startswith("scaled_add: the step lands in your own op")
    assert stepped["message"].startswith(
        "tdebug: step: into the native code of PyCapsule.scaled_add: scaled_add (a=" + TENSOR_A), \
        stepped["message"]
    assert "alpha=2) at myop.cpp:" in stepped["message"], stepped["message"]
    m = re.search(r" in scaled_add \(\) at (\S+):(\d+)$", stepped["top"])
    assert m and int(m.group(2)) == marked(myop, "TORCH_CHECK(a.sizes()"), stepped["top"]
    assert "pybind11::cpp_function::dispatcher" in stepped["text"]  # the glue, in its stack

    m = re.search(r" at (\S+):(\d+)$", local["top"])
    assert m and m.group(1).endswith("myop.cpp"), local["top"]
    assert int(m.group(2)) == marked(myop, "TOUR: out"), local["top"]
    locals_ = local["text"].split("\ninfo locals\n")[1]
    assert "\nscaled = float32 [2, 3] strides [3, 1] cpu values [2, 2, 2, 2, 2, 2]" in "\n" + locals_, \
        locals_

    assert after_next["message"].startswith("tdebug: next: scaled_add ("), after_next["message"]
    assert after_next["message"].endswith(" at myop.cpp:%d" % marked(myop, "TOUR: return"))
    locals_ = after_next["text"].split("\ninfo locals\n")[1]
    assert "\nout = float32 [2, 3] strides [3, 1] cpu values [2, 3, 4, 5, 6, 7]" in "\n" + locals_, \
        locals_

    assert back["message"] == f'tdebug: finish: returned to File "{program}", line 6, in <module>', \
        back["message"]
    assert "\nValue returned: $1 = float32 [2, 3] strides [3, 1] cpu values [2, 3, 4, 5, 6, 7]" \
        in back["text"], back["text"]
    assert "tensor([[2., 3., 4.]," in r.stdout + r.stderr
    assert "=== The end: all 6 stops ===" in r.stdout


def test_tour_extension_finds_the_op_under_any_extension_suffix(tdebug, torch_available, myop,
                                                                  tmp_path):
    """The tour's marked lines are found in myop's file as the interpreter
    imports it, whatever its EXT_SUFFIX: here a plain myop.so (which 3.11
    imports too), in a copy of tdebug's tree where the op has no
    cpython-311 name."""
    import shutil
    from tour_util import stops
    tree = tmp_path / "tree"
    tdebug_copy_without(tdebug, tree, "samples")
    (tree / "samples").mkdir()
    op = tree / "samples" / "myop"
    shutil.copytree(myop, op, symlinks=True)
    for so in op.glob("myop.cpython-*.so"):
        so.rename(op / "myop.so")
    r = run([str(tree / "tdebug"), "tour", "extension", "--batch"])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    assert "cannot find the line marked" not in r.stdout + r.stderr, r.stderr
    found = stops(r.stdout)
    assert [s["number"] for s in found] == [1, 2, 3, 4, 5, 6], r.stdout[-3000:]
    m = re.search(r" at (\S+):(\d+)$", found[3]["top"])
    assert m and int(m.group(2)) == marked(op, "TOUR: out"), found[3]["top"]


def test_printers_show_torchs_other_values(tdebug, torch_available, myop):
    """c10::optional, TensorList, IntArrayRef, Scalar, ScalarType, Device and
    TensorOptions as gdb prints them with tdebug's printers ('info args' in
    myop's describe(), which scaled_add calls with a and b in every form)."""
    where = "myop.cpp:%d" % marked(myop, "TOUR: describe")  # in describe()
    r = run([tdebug, "run", "-b", where, "--", PYTHON, "run.py"], cwd=myop,
            env=clean_env(PYTHONPATH=str(myop)), input="info args\nq\n")
    out = r.stdout
    assert re.search(r"^(\(tdebug\) )?maybe = float32 \[2, 3\] strides \[3, 1\] cpu values \[0, 1, 2", out,
                     re.M), out + r.stderr
    assert re.search(r"^none = nullopt$", out, re.M), out
    assert re.search(r"^both = \{float32 \[2, 3\] .*values \[0, 1, 2, 3, 4, 5\].*, float32 "
                     r"\[2, 3\] .*values \[1, 1, 1, 1, 1, 1\]", out, re.M), out
    assert re.search(r"^shape = \[2, 3\]$", out, re.M), out
    assert re.search(r"^factor = 2(\.0)?$", out, re.M), out
    assert re.search(r"^dtype = float32$", out, re.M), out
    assert re.search(r"^device = cpu$", out, re.M), out
    assert re.search(r"^options = TensorOptions\(.*dtype=float32.*device=cpu", out, re.M), out
