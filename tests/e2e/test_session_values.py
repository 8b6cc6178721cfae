"""What a stop shows of the program's values (issue 12), through the real
CLI on the real gdb and Debian's torch 1.13 (no debug info) and tinytensor
(DWARF): the C++ exception being thrown (--catch-throw, 'catch throw'),
a native frame's typed arguments ('args', and "args" on breakpoint stops),
tensors at an address ('tensor EXPR'), Python variables ('py-locals',
'py-print'), and the tensor layout learned once per torch build and
cached.  In 'run' and 'attach', as text and as --json events (one event
per command of a -x file), and at the prompt through a pty."""
import json
import pathlib
import subprocess
import textwrap

import pytest

from conftest import PYTHON, SLOW, clean_env, run, tracer_of, wait_until
from nativevals_util import ADD_CASES, check_tensor
from tinytensor_util import tt_env


def events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def stops(evs):
    return [e for e in evs if e["event"] == "stopped"]


def replies(evs, name):
    return [e for e in evs if e["event"] == name]


def line_of(path, marker):
    lines = pathlib.Path(path).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if marker in line]
    assert len(hits) == 1, (path, marker, hits)
    return hits[0]


def session(tdebug, tmp_path, commands, *args, json_out=True, env=None, cmd="run"):
    """tdebug CMD [--json] -x COMMANDS ARGS: (result, events or text)."""
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, cmd] + (["--json"] if json_out else []) + ["-x", str(cmds)] + list(args),
            env=env)
    return r, (events(r.stdout) if json_out else r.stdout)


@pytest.fixture
def cache_env(tmp_path):
    """A private cache directory, so that calibration is seen to happen."""
    return clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))


# ---- C++ exceptions ----------------------------------------------------------

MATMUL = "import torch\nx = torch.ones(2, 3)\nx @ torch.ones(4, 5)  # THROWS\n"


def test_catch_throw_shape_mismatch_json_then_text(tdebug, tmp_path, torch_available):
    script = tmp_path / "mm.py"
    script.write_text(MATMUL)
    r = run([tdebug, "run", "--json", "--catch-throw", "--", PYTHON, str(script)])
    assert r.returncode == 1, r.stderr  # Python's RuntimeError ends the program
    s = stops(events(r.stdout))
    assert len(s) == 1
    msg = "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"
    assert s[0]["reason"] == "throw"
    assert s[0]["exception"] == {"type": "c10::Error", "message": msg}
    assert s[0]["message"] == f"C++ exception 'c10::Error' thrown (catchpoint 1): {msg}"
    assert s[0]["breakpoint"] == {"number": 1, "location": "throw"}
    stack = s[0]["stack"]
    assert stack[0]["function"].startswith("__cxa_throw")
    assert any(f["kind"] == "native" and f["function"].startswith("at::meta::structured_mm::meta(")
               for f in stack)
    # ... down to the Python line that led there
    assert {"kind": "python", "function": "<module>", "file": str(script), "line": 3} in stack
    assert "RuntimeError: " + msg in r.stderr

    r = run([tdebug, "run", "--batch", "--catch-throw", "--", PYTHON, str(script)])
    lines = r.stdout.splitlines()
    at = lines.index(f"tdebug: C++ exception 'c10::Error' thrown (catchpoint 1): {msg}")
    assert "__cxa_throw" in lines[at + 1]
    assert f'    File "{script}", line 3, in <module>' in lines[at:]


THROWS = textwrap.dedent("""\
    import torch
    try:
        torch.device('cuda:99999999999999999999')  # stoi's std::out_of_range, then a c10::Error
    except RuntimeError as e:
        print('python saw:', e, flush=True)
    try:
        torch.ones(3)[5]  # INDEX
    except IndexError as e:
        print('python saw:', e, flush=True)
""")


def test_catch_throw_type_catches_subclasses_and_lets_others_go(tdebug, tmp_path,
                                                                torch_available):
    script = tmp_path / "throws.py"
    script.write_text(THROWS)
    r, evs = session(tdebug, tmp_path, ["continue", "info breakpoints"],
                     "--catch-throw=c10::Error", "--", PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    s = stops(evs)
    # std::out_of_range (thrown by std::stoi, caught inside c10) is not a c10::Error
    assert [x["exception"]["type"] for x in s] == ["c10::Error", "c10::IndexError"]
    assert s[1]["exception"]["message"] == "index 5 is out of bounds for dimension 0 with size 3"
    assert {"kind": "python", "function": "<module>", "file": str(script),
            "line": line_of(script, "# INDEX")} in s[1]["stack"]
    bps = replies(evs, "breakpoints")[0]["breakpoints"]
    assert bps == [{"number": 1, "type": "catch", "location": "throw c10::Error", "enabled": True,
                    "temporary": False, "hits": 2, "pending": False,
                    "where": "__cxa_throw in libstdc++"}]
    assert "python saw: index 5 is out of bounds" in r.stderr

    # Without a type, every throw: the std::out_of_range Python never sees too.
    r, evs = session(tdebug, tmp_path, [], "--catch-throw", "--", PYTHON, str(script))
    assert [x["exception"] for x in stops(evs)][:2] == [
        {"type": "std::out_of_range", "message": "stoi"},
        {"type": "c10::Error", "message": "Could not parse device index '99999999999999999999' "
                                          "in device string 'cuda:99999999999999999999'"}]
    assert len(stops(evs)) == 3

    # A class never thrown: nothing stops, and the end says so.
    r = run([tdebug, "run", "--batch", "--catch-throw=std::bad_alloc", "--", PYTHON, str(script)])
    assert r.returncode == 0, r.stderr
    assert "tdebug: C++ exception" not in r.stdout
    assert "catchpoint 1 (throw std::bad_alloc) caught nothing" in r.stdout + r.stderr


WEIRD = textwrap.dedent("""\
    import torch
    class Weird:
        def method(self, y):
            return y.foo_bar(**{})
    w = Weird()
    r = torch._C._jit_try_infer_type(w)  # INFER
    print('python saw no exception; inferred:', r.success(), flush=True)
""")


def test_throw_caught_inside_cpp_that_python_never_sees(tdebug, tmp_path, torch_available):
    # TorchScript's type inference fails on the class with a pybind11
    # exception and catches it itself: Python sees a result, no exception.
    script = tmp_path / "weird.py"
    script.write_text(WEIRD)
    line = line_of(script, "# INFER")
    r, evs = session(tdebug, tmp_path, ["catch throw", "continue", "py-locals"],
                     "-b", f"{script}:{line}", "--", PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    assert replies(evs, "breakpoint")[0]["location"] == "throw"
    s = stops(evs)
    assert [x["reason"] for x in s] == ["python-breakpoint", "throw"]
    exc = s[1]["exception"]
    assert exc["type"] == "pybind11::error_already_set" and exc["message"] is None
    assert ("cannot read the message of a 'pybind11::error_already_set' without calling"
            in exc["note"])
    assert s[1]["message"] == ("C++ exception 'pybind11::error_already_set' thrown (catchpoint 2); "
                               + exc["note"])
    assert {"kind": "python", "function": "<module>", "file": str(script), "line": line} \
        in s[1]["stack"]
    # py-locals at the throw: the nearest Python frame below, the module
    names = [v["name"] for v in replies(evs, "py-locals")[0]["locals"]]
    assert "Weird" in names and "w" in names
    assert "python saw no exception; inferred: False" in r.stderr

    r = run([tdebug, "run", "--batch", "--catch-throw", "--", PYTHON, str(script)])
    assert r.returncode == 0, r.stderr
    assert ("tdebug: C++ exception 'pybind11::error_already_set' thrown (catchpoint 1); cannot "
            "read the message of a 'pybind11::error_already_set' without calling") in r.stdout


def test_hostile_exception_message_in_json(tdebug, tmp_path, torch_available):
    script = tmp_path / "hostile.py"
    script.write_text("import torch\ntry:\n    torch.device('cpu:\"q\"\\n\\x01')\n"
                      "except RuntimeError:\n    pass\n")
    r = run([tdebug, "run", "--json", "--catch-throw=c10::Error", "--", PYTHON, str(script)])
    assert r.returncode == 0, r.stderr
    s = stops(events(r.stdout))
    assert s[0]["exception"]["message"] == "Invalid device string: 'cpu:\"q\"\n\x01'"


def test_catch_throw_type_refused(tdebug, tmp_path):
    r = run([tdebug, "run", "--catch-throw=c10::.*", "--", PYTHON, "-c", "pass"])
    assert r.returncode == 2
    assert "--catch-throw=c10::.*: 'c10::.*' is not a C++ class name" in r.stderr
    assert "it is not a regex" in r.stderr
    script = tmp_path / "x.py"
    script.write_text("x = 1\ny = 2\n")
    r, evs = session(tdebug, tmp_path, ["catch throw std::.*error"], "-b", f"{script}:1", "--",
                     PYTHON, str(script))
    err = replies(evs, "error")[0]
    assert err["command"] == "catch throw" and "is not a C++ class name" in err["message"]


# ---- typed arguments ---------------------------------------------------------

def check_add_args(args, case):
    assert args["at_entry"] is True and args["certain"] is True, args
    assert [(a["name"], a["type"]) for a in args["args"]] == [
        ("arg1", "at::Tensor const&"), ("arg2", "at::Tensor const&"), ("arg3", "c10::Scalar const&")]
    check_tensor(args["args"][0]["value"], case["x"])
    check_tensor(args["args"][1]["value"], case["y"])
    assert args["args"][2]["value"] == case["alpha"], case["name"]


def cases_of(text):
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("CASE ")]


def test_args_at_add_tensor_in_stop_events_and_the_args_command(tdebug, tmp_path, cache_env,
                                                                torch_available):
    script = tmp_path / "add.py"
    script.write_text(ADD_CASES)
    # Every stop carries its arguments; 'args' at the first says the same.
    r, evs = session(tdebug, tmp_path, ["args"], "-b", "at::_ops::add_Tensor::call", "--",
                     PYTHON, str(script), env=cache_env)
    assert r.returncode == 0, r.stderr
    cases = cases_of(r.stderr)  # the program's stdout goes to stderr with --json
    names = [c["name"] for c in cases]
    assert names == ["float32", "float64", "int64", "bool", "transposed", "zero-size",
                     "storage-offset", "requires-grad", "complex64"]
    s = stops(evs)
    assert len(s) == len(cases)
    for stop, case in zip(s, cases):
        assert stop["reason"] == "breakpoint"
        check_add_args(stop["args"], case)
        assert stop["args"]["function"] == ("at::_ops::add_Tensor::call(at::Tensor const&, "
                                            "at::Tensor const&, c10::Scalar const&)")
    reply = replies(evs, "args")[0]
    assert reply["frame"] == 0
    check_add_args(reply, cases[0])
    # The layout was learned once, said before and after.
    notes = [e for e in evs if e["event"] == "note" and "layout" in e]
    assert [n["layout"] for n in notes] == ["calibrating", "calibration"]
    assert notes[1]["cache"].startswith(cache_env["XDG_CACHE_HOME"] + "/tdebug/torch-layout/")
    assert evs.index(notes[1]) < evs.index(s[0])

    # As text: the stop lists them, so does 'args'; the cache is said.
    r, out = session(tdebug, tmp_path, ["args"], "-b", "at::_ops::add_Tensor::call", "--",
                     PYTHON, str(script), json_out=False, env=cache_env)
    assert r.returncode == 0, r.stderr
    assert "tdebug: tensor layout of this torch build read from the cache (" in out
    first = out.split("tdebug: stopped at breakpoint 1 (at::_ops::add_Tensor::call)\n")[1]
    assert first.startswith(
        "Arguments:\n"
        "  (read as a function, returning its result in memory (a hidden pointer before the "
        "arguments))\n"
        "  arg1 (at::Tensor const&) = float32 [2, 3] strides [3, 1] cpu values [0, 1, 2, 3, 4, 5]\n"
        "  arg2 (at::Tensor const&) = float32 [2, 3] strides [3, 1] cpu values [1, 1, 1, 1, 1, 1]\n"
        "  arg3 (c10::Scalar const&) = 2.5\n")
    assert ("(tdebug) args\nArguments of #0 at::_ops::add_Tensor::call(at::Tensor const&, "
            "at::Tensor const&, c10::Scalar const&) (from its signature and the registers at its "
            "entry):\n") in out
    assert ("arg1 (at::Tensor const&) = float32 [4, 3] strides [1, 4] cpu values "
            "[0, 4, 8, 1, 5, 9, 2, 6, ...]") in out  # transposed: index order, not memory order
    assert "arg1 (at::Tensor const&) = float32 [0, 3] strides [3, 1] cpu values []" in out
    assert "arg1 (at::Tensor const&) = float32 [4] strides [1] storage_offset 5 cpu values [5, 6, 7, 8]" in out


def test_args_when_the_registers_no_longer_hold_them(tdebug, tmp_path, torch_available):
    script = tmp_path / "mm.py"
    script.write_text(MATMUL)
    # At a throw, frame 2 is at::meta::structured_mm::meta(at::Tensor
    # const&, at::Tensor const&): named and typed, but not at its entry.
    r, evs = session(tdebug, tmp_path, ["frame 2", "args", "frame 0", "args", "py-up", "args"],
                     "--catch-throw", "--", PYTHON, str(script))
    a = replies(evs, "args")[0]
    assert a["frame"] == 2 and a["at_entry"] is False
    assert a["function"] == "at::meta::structured_mm::meta(at::Tensor const&, at::Tensor const&)"
    assert [(x["name"], x["type"], x["value"]) for x in a["args"]] == [
        ("arg1", "at::Tensor const&", None), ("arg2", "at::Tensor const&", None)]
    assert "frame #2 is not the innermost" in a["note"]
    errors = replies(evs, "error")
    # __cxa_throw is a C function: nothing names its arguments
    assert errors[0]["command"] == "args"
    assert "has no debug info and its name carries no parameter types" in errors[0]["message"]
    # a Python frame: py-locals is the command for it
    assert "'py-locals' shows its variables" in errors[1]["message"]

    # Stepping past the entry: the registers were reused.
    script = tmp_path / "add.py"
    script.write_text("import torch\ntorch.ones(2) + torch.ones(2)\n")
    r, evs = session(tdebug, tmp_path, ["stepi"] * 12 + ["args"], "-b",
                     "at::_ops::add_Tensor::call", "--", PYTHON, str(script))
    a = replies(evs, "args")[0]
    assert a["at_entry"] is False and "no longer hold the arguments" in a["note"]
    assert [x["value"] for x in a["args"]] == [None, None, None]


def test_tinytensor_args_and_tensor_with_dwarf(tdebug, tmp_path):
    script = tmp_path / "tt.py"
    script.write_text("import tinytensor\nx = tinytensor.tensor([[1.5, 2.5], [3.5, 4.5]])\n"
                      "y = x + 1\n")
    r, evs = session(tdebug, tmp_path, ["tensor self", "tensor *other", "up", "args"],
                     "--symbols", "tinytensor", "-b", "tt_native_add", "--", PYTHON, str(script),
                     env=tt_env())
    assert r.returncode == 0, r.stderr
    s = stops(evs)[0]
    args = s["args"]
    assert args["debug_info"] is True and args["function"] == "tt_native_add"
    by_name = {a["name"]: a for a in args["args"]}
    assert by_name["self"]["type"] == "const tt_tensor *"
    assert by_name["self"]["value"]["sizes"] == [2, 2]
    assert by_name["self"]["value"]["strides"] == [2, 1]
    assert by_name["self"]["value"]["dtype"] == "float64"
    assert by_name["self"]["value"]["values"] == [1.5, 2.5, 3.5, 4.5]
    assert by_name["other"]["value"]["sizes"] == [] and by_name["other"]["value"]["values"] == [1.0]
    assert by_name["alpha"]["value"] == "{is_integral = 1, i = 1, d = 1}"  # a struct: gdb's print
    t_self, t_other = replies(evs, "tensor")
    assert t_self["name"] == "self" and t_self["type"] == "tt_tensor" and t_self["layout"] == "dwarf"
    assert t_self["value"]["values"] == [1.5, 2.5, 3.5, 4.5]
    assert t_other["name"] == "*other" and t_other["value"]["values"] == [1.0]  # the struct itself
    caller = replies(evs, "args")[0]
    assert caller["frame"] == 1 and caller["function"] == "tt_ops_add_call"
    assert {a["name"] for a in caller["args"]} >= {"self", "other"}


# ---- tensors at an address ---------------------------------------------------

def test_tensor_command_at_addresses(tdebug, tmp_path, torch_available):
    script = tmp_path / "t.py"
    script.write_text("import torch\nx = torch.arange(6, dtype=torch.int64).reshape(2, 3)[:, 1:]\n"
                      "x + 1\n")
    r, evs = session(tdebug, tmp_path, ["tensor $rsi", "tensor *(long *)$rsi", "py-print x",
                                        "tensor 8", "tensor nosuchthing", "tensor"],
                     "-b", "at::_ops::add_Tensor::call", "--", PYTHON, str(script))
    assert r.returncode == 0, r.stderr
    at_tensor, impl = replies(evs, "tensor")
    assert at_tensor["type"] == "at::Tensor" and impl["type"] == "TensorImpl"
    for t in (at_tensor, impl):
        v = t["value"]
        assert v["sizes"] == [2, 2] and v["strides"] == [3, 1] and v["storage_offset"] == 1
        assert v["values"] == [1, 2, 4, 5] and v["dtype"] == "int64"
    pyobj = replies(evs, "py-print")[0]
    assert pyobj["tensor"]["impl"] == impl["value"]["impl"]
    e8, enone, eempty = replies(evs, "error")
    assert "'8' (int) is not a tensor tdebug can decode: 0x8 holds no tensor" in e8["message"]
    assert "gdb cannot evaluate 'nosuchthing'" in enone["message"]
    assert "'py-print NAME' shows a Python variable" in enone["message"]
    assert "tensor needs an expression" in eempty["message"]

    # A Python tensor object: THPVariable_get_ndim(THPVariable *self, void *) runs x.ndim
    script.write_text("import torch\nx = torch.arange(6, dtype=torch.int64).reshape(2, 3)[:, 1:]\n"
                      "x.ndim\n")
    r, evs = session(tdebug, tmp_path, ["tensor $rdi"], "-b", "THPVariable_get_ndim", "--", PYTHON,
                     str(script))
    t = replies(evs, "tensor")[0]
    assert t["type"] == "Python tensor" and t["value"]["values"] == [1, 2, 4, 5]


# ---- Python values -----------------------------------------------------------

VALUES = textwrap.dedent('''\
    import ctypes
    import torch


    def pointer_to(obj, value):
        """The pointer-sized field of OBJ holding VALUE."""
        for off in range(8, 128, 8):
            field = ctypes.c_void_p.from_address(id(obj) + off)
            if field.value == value:
                return field
        raise AssertionError("no field holds it")


    def f(n, x, s, b, t, l, d, tu, none, flag, big, odd, long_s):
        # Memory that cannot be read: a list whose items pointer is 0x10,
        # a tensor object whose TensorImpl pointer is 0x8 (put back after).
        bad = [1, 2, 3]
        items = ctypes.c_void_p.from_address(id(bad) + 24)  # PyListObject.ob_item
        items_were, items.value = items.value, 16
        bad_t = torch.ones(2)
        cdata = pointer_to(bad_t, bad_t._cdata)
        cdata_was, cdata.value = cdata.value, 8
        marker = n  # BREAK-FUNCTION
        cdata.value = cdata_was
        items.value = items_were
        return torch.add(t, 1)  # CALLS-ADD


    T = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    COUNT = 7
    f(42, 2.5, 'h\\u00e9llo "q"\\n', b"\\xff\\x00ab", T, [1, "a", None], {"k": [1, 2]}, (1, 2.0),
      None, True, 10 ** 30, "a\\udcffb", "x" * 100000)
    done = True  # BREAK-MODULE
''')


@pytest.fixture
def values_script(tmp_path, torch_available):
    p = tmp_path / "vals.py"
    p.write_text(VALUES)
    return p


def test_py_locals_and_py_print_in_a_function_and_at_module_level(tdebug, tmp_path,
                                                                  values_script):
    fn, mod = line_of(values_script, "# BREAK-FUNCTION"), line_of(values_script, "# BREAK-MODULE")
    kinds = ["n", "x", "s", "b", "t", "l", "d", "tu", "none", "flag", "big", "T", "COUNT", "len"]
    r, evs = session(tdebug, tmp_path, ["py-locals"] + [f"py-print {k}" for k in kinds] +
                     ["py-print nosuch", "py-print x.shape", "continue", "py-locals"],
                     "-b", f"{values_script}:{fn}", "-b", f"{values_script}:{mod}", "--", PYTHON,
                     str(values_script))
    assert r.returncode == 0, r.stderr
    loc, module = replies(evs, "py-locals")
    assert loc["frame"] == {"index": 0, "function": "f", "file": str(values_script), "line": fn}
    by = {v["name"]: v for v in loc["locals"]}
    assert [v["name"] for v in loc["locals"]][:13] == ["n", "x", "s", "b", "t", "l", "d", "tu",
                                                       "none", "flag", "big", "odd", "long_s"]
    assert all(v["kind"] == "local" for v in loc["locals"])
    printed = {p["name"]: p for p in replies(evs, "py-print")}
    want = {"n": ("int", "42"), "x": ("float", "2.5"), "s": ("str", "'h\u00e9llo \"q\"\\n'"),
            "b": ("bytes", "b'\\xff\\x00ab'"), "l": ("list", "[1, 'a', None]"),
            "d": ("dict", "{'k': [1, 2]}"), "tu": ("tuple", "(1, 2.0)"), "none": ("NoneType", "None"),
            "flag": ("bool", "True"), "big": ("int", "1000000000000000000000000000000")}
    for name, (typ, value) in want.items():
        assert (by[name]["type"], by[name]["value"]) == (typ, value), by[name]
        assert (printed[name]["type"], printed[name]["value"]) == (typ, value)
        assert printed[name]["scope"] == "local"
    for v in (by["t"], printed["t"], printed["T"]):
        assert v["type"] == "Tensor"
        assert v["tensor"]["sizes"] == [2, 3] and v["tensor"]["strides"] == [3, 1]
        assert v["tensor"]["dtype"] == "float32" and v["tensor"]["values"] == [0, 1, 2, 3, 4, 5]
        assert v["value"] == "tensor([[0., 1., 2.], [3., 4., 5.]])"
    assert printed["T"]["scope"] == "global" and printed["COUNT"]["value"] == "7"
    assert printed["len"]["scope"] == "builtin"
    assert printed["len"]["value"] == "<built-in function len>"  # as Python shows it
    # Hostile strings stay valid JSON: a lone surrogate, 100 000 characters (cut).
    assert by["odd"]["value"] == "'a\\udcffb'"
    assert by["long_s"]["length"] == 100000
    assert by["long_s"]["value"].endswith("x'... (100000 characters)")
    assert len(by["long_s"]["value"]) < 300
    # Unreadable memory: said, never garbage.
    assert by["bad"]["error"] == "part of the value could not be read"
    assert by["bad_t"]["value"].startswith("<Tensor object at 0x")
    assert by["bad_t"]["error"] == "0x8 is not a tensor: cannot read memory at 0x8: Bad address"
    nosuch, expr = replies(evs, "error")
    assert nosuch["message"] == ("name 'nosuch' is not defined in f (its locals, its module's "
                                 "globals, builtins)")
    assert "evaluates no expression" in expr["message"]
    # Module-level code: the module's variables
    assert module["frame"]["function"] == "<module>" and module["frame"]["line"] == mod
    mv = {v["name"]: v for v in module["locals"]}
    assert all(v["kind"] == "global" for v in module["locals"])
    assert {"ctypes", "torch", "pointer_to", "f", "T", "COUNT"} <= set(mv)
    assert mv["COUNT"]["value"] == "7" and mv["T"]["tensor"]["sizes"] == [2, 3]
    assert "__name__" not in mv

    # The same as text
    r, out = session(tdebug, tmp_path, ["py-locals", "py-print T", "py-print bad_t"],
                     "-b", f"{values_script}:{fn}", "--", PYTHON, str(values_script),
                     json_out=False)
    assert f'Locals of f (File "{values_script}", line {fn}):\n  n = 42\n  x = 2.5\n' in out
    assert "  t = tensor([[0., 1., 2.], [3., 4., 5.]])  (float32 [2, 3] strides [3, 1] cpu)\n" in out
    assert "  bad = [<NULL>, <NULL>, <NULL>]  (part of the value could not be read)\n" in out
    assert "global 'T' = tensor([[0., 1., 2.], [3., 4., 5.]])  (float32 [2, 3] strides [3, 1] cpu)\n" in out
    assert ("local 'bad_t' = <Tensor object at 0x" in out and
            "(0x8 is not a tensor: cannot read memory at 0x8: Bad address)\n" in out)


def test_py_locals_from_a_native_frame_reads_the_python_caller(tdebug, tmp_path, values_script):
    r, evs = session(tdebug, tmp_path, ["py-locals", "py-print marker"],
                     "-b", "at::_ops::add_Tensor::call", "--", PYTHON, str(values_script))
    assert r.returncode == 0, r.stderr
    loc = replies(evs, "py-locals")[0]
    assert loc["frame"]["function"] == "f"
    assert loc["frame"]["line"] == line_of(values_script, "# CALLS-ADD")
    assert loc["frame"]["index"] > 0  # below the native frames
    assert replies(evs, "py-print")[0]["value"] == "42"


def test_layout_cached_per_build_and_refused_when_it_does_not_check_out(tdebug, tmp_path,
                                                                        cache_env,
                                                                        torch_available):
    script = tmp_path / "one.py"
    script.write_text("import torch\nx = torch.ones(3)\nx + 1  # ADD\n")
    line = line_of(script, "# ADD")
    first = session(tdebug, tmp_path, ["py-print x"], "-b", f"{script}:{line}", "--", PYTHON,
                    str(script), env=cache_env)[1]
    assert [e["layout"] for e in first if e["event"] == "note"] == ["calibrating", "calibration"]
    second = session(tdebug, tmp_path, ["py-print x"], "-b", f"{script}:{line}", "--", PYTHON,
                     str(script), env=cache_env)[1]
    assert [e["layout"] for e in second if e["event"] == "note"] == ["cache"]
    assert replies(second, "py-print")[0]["tensor"]["values"] == [1.0, 1.0, 1.0]
    # A cached layout that does not fit the tensors (numel read from the
    # storage offset's field): every tensor is refused, saying why.
    cache = pathlib.Path(cache_env["XDG_CACHE_HOME"]) / "tdebug" / "torch-layout"
    (path,) = cache.glob("*.json")
    doc = json.loads(path.read_text())
    doc["layout"]["numel_off"] = doc["layout"]["offset_off"]
    path.write_text(json.dumps(doc))
    r, evs = session(tdebug, tmp_path, ["py-print x", "continue", "args"], "-b",
                     f"{script}:{line}", "-b", "at::_ops::add_Tensor::call", "--", PYTHON,
                     str(script), env=cache_env)
    x = replies(evs, "py-print")[0]
    assert "tensor" not in x and "is not the product of its sizes" in x["error"], x
    arg1 = replies(evs, "args")[0]["args"][0]["value"]
    assert isinstance(arg1, str) and "is not the product of its sizes" in arg1


# ---- attach -------------------------------------------------------------------

WORKER = textwrap.dedent("""\
    import sys, torch
    print("ready", flush=True)
    sys.stdin.readline()

    def work(a):
        y = a * 2
        try:
            a @ torch.ones(4, 5)  # THROWS
        except RuntimeError:
            pass
        return torch.add(y, a, alpha=3)  # ADDS

    x = torch.ones(2, 3)
    work(x)
    print("done", flush=True)
    sys.stdin.readline()
""")


def start_worker(procs, tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    p = procs.start([PYTHON, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    text=True)
    assert p.stdout.readline().strip() == "ready"
    return script, p


def test_attach_json_throw_args_and_python_values(tdebug, procs, tmp_path, torch_available):
    script, p = start_worker(procs, tmp_path)
    cmds = tmp_path / "cmds"
    cmds.write_text("continue\npy-locals\ncontinue\nargs\npy-print y\ntensor $rsi\nquit\n")
    t = procs.start([tdebug, "attach", "--json", "-x", str(cmds), "--catch-throw=c10::Error",
                     "-b", "at::_ops::add_Tensor::call", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(p.pid) != 0, what="tdebug to attach")
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 0, err
    evs = events(out)
    s = stops(evs)
    assert [x["reason"] for x in s] == ["attached", "throw", "breakpoint"]
    assert s[1]["exception"] == {"type": "c10::Error", "message": "mat1 and mat2 shapes cannot be "
                                                                  "multiplied (2x3 and 4x5)"}
    assert {"kind": "python", "function": "work", "file": str(script),
            "line": line_of(script, "# THROWS")} in s[1]["stack"]
    loc = replies(evs, "py-locals")[0]
    assert loc["frame"]["function"] == "work"
    assert [v["name"] for v in loc["locals"]] == ["a", "y"]
    assert loc["locals"][1]["tensor"]["values"] == [2.0] * 6
    args = s[2]["args"]
    assert args["at_entry"] is True
    assert args["args"][0]["value"]["values"] == [2.0] * 6  # y
    assert args["args"][1]["value"]["values"] == [1.0] * 6  # a
    assert args["args"][2]["value"] == 3
    assert replies(evs, "args")[0]["args"] == args["args"]
    assert replies(evs, "py-print")[0]["tensor"]["sizes"] == [2, 3]
    assert replies(evs, "tensor")[0]["value"]["values"] == [2.0] * 6
    assert any(e["event"] == "detached" for e in evs), evs[-3:]
    # detached: the process goes on by itself
    assert p.stdout.readline().strip() == "done"
    assert tracer_of(p.pid) == 0
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.wait(timeout=SLOW) == 0


def test_attach_args_of_every_kind_of_tensor(tdebug, procs, tmp_path, torch_available):
    script = tmp_path / "add.py"
    script.write_text("import sys, torch\nprint('ready', flush=True)\nsys.stdin.readline()\n"
                      + ADD_CASES)
    p = procs.start([PYTHON, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    text=True)
    assert p.stdout.readline().strip() == "ready"
    t = procs.start([tdebug, "attach", "--json", "-b", "at::_ops::add_Tensor::call", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(p.pid) != 0, what="tdebug to attach")
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 0, err
    cases = cases_of(p.stdout.read())
    assert len(cases) == 9
    s = stops(events(out))
    assert len(s) == len(cases)
    for stop, case in zip(s, cases):
        check_add_args(stop["args"], case)


def test_attach_batch_text_shows_the_exception(tdebug, procs, tmp_path, torch_available):
    script, p = start_worker(procs, tmp_path)
    t = procs.start([tdebug, "attach", "--batch", "--catch-throw", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: tracer_of(p.pid) != 0, what="tdebug to attach")
    p.stdin.write("\n")
    p.stdin.flush()
    assert p.stdout.readline().strip() == "done"
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = t.communicate(timeout=SLOW)
    assert t.returncode == 0, err
    lines = out.splitlines()
    at = lines.index("tdebug: C++ exception 'c10::Error' thrown (catchpoint 1): mat1 and mat2 "
                     "shapes cannot be multiplied (2x3 and 4x5)")
    assert "__cxa_throw" in lines[at + 1]
    assert f'    File "{script}", line {line_of(script, "# THROWS")}, in work' in lines[at:]
    assert f"tdebug: pid {p.pid} exited with status 0" in out


# ---- at the prompt ------------------------------------------------------------

def test_prompt_catch_throw_values_and_help(tdebug, terminal, tmp_path, torch_available):
    script = tmp_path / "throws.py"
    script.write_text(THROWS)
    first = line_of(script, "torch.device(")
    t = terminal([tdebug, "run", "-b", f"{script}:{first}", "--", PYTHON, str(script)])
    t.expect("(tdebug) ")
    t.send("help")
    out = t.expect("(tdebug) ")
    for cmd in ("args", "tensor", "py-locals", "py-print", "catch"):
        assert f"\n  {cmd} " in out.replace("\r", ""), cmd
    t.send("catch throw c10::Error")
    assert "Catchpoint 2 (throw c10::Error and classes derived from it)" in t.expect("(tdebug) ")
    t.send("py-print torch")
    assert "global 'torch' = <module 'torch'>" in t.expect("(tdebug) ")
    t.send("continue")
    out = t.expect("(tdebug) ")
    assert ("tdebug: C++ exception 'c10::Error' thrown (catchpoint 2): Could not parse device "
            "index '99999999999999999999'") in out
    t.send("continue")
    out = t.expect("(tdebug) ")
    assert ("tdebug: C++ exception 'c10::IndexError' thrown (catchpoint 2): index 5 is out of "
            "bounds for dimension 0 with size 3") in out
    t.send("args")
    assert "has no debug info and its name carries no parameter types" in t.expect("(tdebug) ")
    t.send("py-locals")
    out = t.expect("(tdebug) ")
    assert f'Module-level code (File "{script}", line {line_of(script, "# INDEX")}): ' in out
    assert "  torch = <module 'torch'>" in out
    t.send("info breakpoints")
    assert "2    catchpoint  y    2     throw c10::Error: __cxa_throw in libstdc++" in \
        t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0


def test_prompt_attach_args_and_tensor(tdebug, terminal, procs, tmp_path, torch_available):
    script, p = start_worker(procs, tmp_path)
    t = terminal([tdebug, "attach", str(p.pid)])
    t.expect("(tdebug) ")
    t.send("break at::_ops::add_Tensor::call")
    t.expect("(tdebug) ")
    t.send("continue")
    p.stdin.write("\n")
    p.stdin.flush()
    out = t.expect("(tdebug) ")
    assert "tdebug: stopped at breakpoint 1 (at::_ops::add_Tensor::call)" in out
    assert ("  arg2 (at::Tensor const&) = float32 [2, 3] strides [3, 1] cpu values "
            "[1, 1, 1, 1, 1, 1]") in out
    assert "  arg3 (c10::Scalar const&) = 3" in out
    t.send("tensor *(long *)$rsi")
    assert ("*(long *)$rsi (TensorImpl at 0x" in t.expect("(tdebug) "))
    t.send("py-print y")
    assert ("local 'y' = tensor([[2., 2., 2.], [2., 2., 2.]])  (float32 [2, 3] strides [3, 1] cpu)"
            in t.expect("(tdebug) "))
    t.send("quit")
    assert t.wait() == 0
    assert p.stdout.readline().strip() == "done"


# ---- through the DAP front-end -------------------------------------------------

def test_dap_shows_arguments_tensors_python_values_and_c10_exceptions(tdebug, procs, tmp_path,
                                                                      torch_available):
    from tdap_util import Adapter  # the DAP test client (tests/e2e/tdap_util.py)
    prog = tmp_path / "prog.py"
    prog.write_text("import torch\nx = torch.arange(6.).reshape(2, 3)\ny = x + 1\n"
                    "try:\n    x[5]\nexcept IndexError:\n    pass\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()

    def setup(d):
        d.request("setFunctionBreakpoints",
                  {"breakpoints": [{"name": "at::_ops::add_Tensor::call"}]})
        d.request("setExceptionBreakpoints", {"filters": ["c10_error"]})
    dap.start_program("launch", {"program": str(prog), "python": PYTHON}, setup)
    i, stop = dap.stopped()
    frames = dap.frames(stop["threadId"])
    scopes = dap.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
    args = dap.request("variables", {"variablesReference": scopes[0]["variablesReference"]}
                       )["body"]["variables"]
    assert [(a["name"], a["type"]) for a in args] == [
        ("arg1", "at::Tensor const&"), ("arg2", "at::Tensor const&"), ("arg3", "c10::Scalar const&")]
    assert args[0]["value"] == "tensor([[0., 1., 2.], [3., 4., 5.]])"
    assert args[2]["value"] == "1" and args[2]["variablesReference"] == 0
    parts = dap.request("variables", {"variablesReference": args[0]["variablesReference"]}
                        )["body"]["variables"]
    by = {p["name"]: p["value"] for p in parts}
    assert by["dtype"] == "float32" and by["sizes"] == "[...]" and by["device"] == "cpu"
    py = [f for f in frames if f.get("source", {}).get("path") == str(prog)][0]
    x = dap.request("evaluate", {"expression": "x", "frameId": py["id"], "context": "hover"}
                    )["body"]
    assert x["result"] == "tensor([[0., 1., 2.], [3., 4., 5.]])"
    dap.request("setFunctionBreakpoints", {"breakpoints": []})
    dap.continue_(stop["threadId"])
    i, stop = dap.stopped(after=i + 1)
    # c10_error is c10::Error and what derives from it: this is a c10::IndexError
    assert stop["reason"] == "exception"
    assert stop["description"].startswith("C++ exception 'c10::IndexError' thrown")
    assert "index 5 is out of bounds for dimension 0 with size 2" in stop["description"]
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_py_print_keeps_a_nul_inside_a_str(tdebug, tmp_path):
    script = tmp_path / "nul.py"
    script.write_text('z = "a\\x00b"\nprint(len(z))\n')
    r, evs = session(tdebug, tmp_path, ["py-print z"], "-b", f"{script}:2", "--", PYTHON,
                     str(script))
    assert r.returncode == 0, r.stderr
    z = replies(evs, "py-print")[0]
    assert (z["type"], z["value"]) == ("str", "'a\\x00b'"), z
