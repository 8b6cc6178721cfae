"""What a stop shows without debug info, against Debian's real torch under
real gdb: the C++ exception being thrown (type and message), the typed
arguments of at::_ops::add_Tensor::call with their tensors, tensors at an
address, the layout calibrated once per torch build and cached, and
tinytensor through its DWARF.

The readers (src/native/cxxexc.c, torch/cxxargs.c, torch/tensor.c, torch/layout.c) are driven
by build/tests/tools/nativevals (tests/tools/nativevals.c), which stops the
program under gdb over MI the way a tdebug session does and prints one
"NATIVEVALS {json}" line per stop.
"""
import json
import os
import pathlib

import pytest

from conftest import BUILD, PYTHON, SLOW, clean_env, run
from nativevals_util import ADD_CASES, check_tensor
from tinytensor_util import TT_OUT, tt_env

DRIVER = BUILD / "tests" / "tools" / "nativevals"


def stops(args, script=None, env=None, tmp_path=None, timeout=SLOW):
    """Run the driver on SCRIPT (a Python program's text) or ARGS' program;
    returns (the stops' JSON, the program's output, the driver's result)."""
    if not os.access(DRIVER, os.X_OK):
        pytest.fail(f"{DRIVER} is not built; run 'make {DRIVER}'")
    output = tmp_path / "program-output.txt"
    prog = []
    if script is not None:
        path = tmp_path / "prog.py"
        path.write_text(script)
        prog = [PYTHON, str(path)]
    r = run([str(DRIVER), "--output", str(output), *args, "--", *prog], env=env, timeout=timeout)
    found = [json.loads(line[len("NATIVEVALS "):]) for line in r.stdout.splitlines()
             if line.startswith("NATIVEVALS ")]
    return found, output.read_text() if output.exists() else "", r


@pytest.fixture()
def cache_env(tmp_path):
    """A private cache directory, so that calibration is seen to happen."""
    return clean_env(XDG_CACHE_HOME=str(tmp_path / "cache"))


# --- C++ exceptions ----------------------------------------------------------

def test_shape_mismatch_matmul(tmp_path):
    found, _, r = stops(["--catch-throw"], tmp_path=tmp_path, script=(
        "import torch\n"
        "torch.ones(2, 3) @ torch.ones(4, 5)\n"))
    assert r.returncode == 0, r.stderr
    exc = found[0]["exception"]
    assert exc == {"type": "c10::Error",
                   "message": "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"}
    assert found[0]["function"] == "__cxa_throw"


def test_index_out_of_range_raised_in_cpp(tmp_path):
    found, _, r = stops(["--catch-throw"], tmp_path=tmp_path, script=(
        "import torch\n"
        "torch.ones(3)[5]\n"))
    assert r.returncode == 0, r.stderr
    assert found[0]["exception"] == {
        "type": "c10::IndexError",
        "message": "index 5 is out of bounds for dimension 0 with size 3"}


def test_throws_caught_inside_cpp(tmp_path):
    # std::stoi's std::out_of_range is caught by c10's device parser, which
    # throws a c10::Error of its own: Python sees only the second.  The
    # pybind11::error_already_set of a class TorchScript cannot compile is
    # caught by torch's type inference: Python sees nothing at all.
    found, out, r = stops(["--catch-throw", "--stops", "3", "--finish"], tmp_path=tmp_path, script=(
        "import torch\n"
        "try:\n"
        "    torch.device('cuda:99999999999999999999')\n"
        "except RuntimeError as e:\n"
        "    print('python saw:', e)\n"
        "class Weird:\n"
        "    def method(self, y):\n"
        "        return y.foo_bar(**{})\n"
        "r = torch._C._jit_try_infer_type(Weird())\n"
        "print('python saw no exception; inferred:', r.success())\n"))
    assert r.returncode == 0, r.stderr
    assert found[0]["exception"] == {"type": "std::out_of_range", "message": "stoi"}
    assert found[1]["exception"]["type"] == "c10::Error"
    assert found[1]["exception"]["message"].startswith("Could not parse device index")
    third = found[2]["exception"]
    assert third["type"] == "pybind11::error_already_set"
    assert third["message"] is None
    assert "cannot read the message of a 'pybind11::error_already_set' without calling" in third["note"]
    assert "python saw: Could not parse device index" in out
    assert "stoi" not in out
    assert "python saw no exception; inferred: False" in out


def test_standard_exception_message(tmp_path):
    found, _, r = stops(["--catch-throw"], tmp_path=tmp_path, script=(
        "import torch\n"
        "torch.ones(3).view(-1, 7)\n"))
    assert r.returncode == 0, r.stderr
    assert found[0]["exception"] == {"type": "std::runtime_error",
                                     "message": "shape '[-1, 7]' is invalid for input of size 3"}


def test_hostile_messages_in_json(tmp_path):
    # Quotes, a newline and a message of 100 000 characters: valid JSON,
    # the long one cut and marked.
    found, _, r = stops(["--catch-throw", "--stops", "2"], tmp_path=tmp_path, script=(
        "import torch\n"
        "for s in ['cpu:\"q\"\\n\\x01', 'x' * 100000]:\n"
        "    try:\n"
        "        torch.device(s)\n"
        "    except RuntimeError:\n"
        "        pass\n"))
    assert r.returncode == 0, r.stderr
    assert found[0]["exception"]["message"] == "Invalid device string: 'cpu:\"q\"\n\x01'"
    long_msg = found[1]["exception"]["message"]
    assert len(long_msg) == 4096 + 3 and long_msg.endswith("xxx...")


# --- typed arguments and tensors -------------------------------------------

def test_args_at_add_tensor(tmp_path, cache_env):
    # Each call stops twice: at the PLT stub in libtorch_python and at the
    # function in libtorch_cpu (after 'push %rbp; mov %rsp,%rbp', where gdb
    # puts a breakpoint on a function without debug info).
    found, out, r = stops(["--args", "--break", "at::_ops::add_Tensor::call", "--stops", "18", "--finish"],
                          tmp_path=tmp_path, script=ADD_CASES, env=cache_env)
    assert r.returncode == 0, r.stderr
    assert "DONE" in out
    cases = [json.loads(line[5:]) for line in out.splitlines() if line.startswith("CASE ")]
    assert len(cases) == 9 and len(found) == 18
    for i, case in enumerate(cases):
        for stop in found[2 * i:2 * i + 2]:
            args = stop["args"]
            assert args["at_entry"] is True, args
            assert args["certain"] is True, args
            assert "returning its result in memory" in args["convention"]
            names = [(a["name"], a["type"]) for a in args["args"]]
            assert names == [("arg1", "at::Tensor const&"), ("arg2", "at::Tensor const&"),
                             ("arg3", "c10::Scalar const&")]
            check_tensor(args["args"][0]["value"], case["x"])
            check_tensor(args["args"][1]["value"], case["y"])
            assert args["args"][2]["value"] == case["alpha"], case["name"]
    assert found[1]["function"].endswith(")")  # the function itself, not its @plt stub
    assert found[0]["layout"] == "calibration"
    assert found[1]["layout"] == "calibration"


def test_registers_no_longer_hold_the_arguments(tmp_path, cache_env):
    found, _, r = stops(["--args", "--break", "at::_ops::add_Tensor::call", "--stepi", "12"],
                        tmp_path=tmp_path, env=cache_env, script=(
                            "import torch\n"
                            "torch.ones(2) + torch.ones(2)\n"))
    assert r.returncode == 0, r.stderr
    args = found[0]["args"]
    assert args["at_entry"] is False
    assert "no longer hold the arguments" in args["note"]
    assert [a["value"] for a in args["args"]] == [None, None, None]


def test_tensor_at_an_address(tmp_path, cache_env):
    # At the entry of THPVariable_get_ndim(THPVariable*, void*) (x.ndim),
    # rdi is the Python tensor object; at::Tensor and TensorImpl are one
    # and two dereferences away from add_Tensor's rsi.  Address 8 and the
    # stack pointer hold no tensor: refused, saying why.
    found, _, r = stops(["--break", "THPVariable_get_ndim", "--tensor", "$rdi", "--tensor", "8",
                         "--tensor", "$rsp"], tmp_path=tmp_path, env=cache_env, script=(
                             "import torch\n"
                             "x = torch.arange(6, dtype=torch.int64).reshape(2, 3)[:, 1:]\n"
                             "x.ndim\n"))
    assert r.returncode == 0, r.stderr
    py, eight, sp = found[0]["tensors"]
    assert py["kind"] == "Python tensor"
    assert py["value"]["sizes"] == [2, 2] and py["value"]["strides"] == [3, 1]
    assert py["value"]["storage_offset"] == 1
    assert py["value"]["values"] == [1, 2, 4, 5]
    assert "error" not in py
    assert "holds no tensor" in eight["error"] and "cannot read" in eight["error"]
    assert "holds no tensor" in sp["error"]

    found, _, r = stops(["--break", "at::_ops::add_Tensor::call", "--tensor", "$rsi", "--tensor",
                         "*(long *)$rsi"], tmp_path=tmp_path, env=cache_env, script=(
                             "import torch\n"
                             "torch.full((3,), 1.5) + 1\n"))
    assert r.returncode == 0, r.stderr
    tensor, impl = found[0]["tensors"]
    assert tensor["kind"] == "at::Tensor" and impl["kind"] == "TensorImpl"
    assert tensor["value"]["values"] == [1.5, 1.5, 1.5] == impl["value"]["values"]


def test_calibrated_once_then_cached(tmp_path, cache_env):
    script = "import torch\ntorch.ones(1) + 1\n"
    first, _, r = stops(["--args", "--break", "at::_ops::add_Tensor::call"], tmp_path=tmp_path,
                        env=cache_env, script=script)
    assert r.returncode == 0, r.stderr
    assert first[0]["layout"] == "calibration"
    files = list(pathlib.Path(cache_env["XDG_CACHE_HOME"]).glob("tdebug/torch-layout/*.json"))
    assert len(files) == 1
    doc = json.loads(files[0].read_text())
    assert doc["format"] == 1 and doc["key"].startswith("c10 ")
    assert doc["layout"]["source"] == "calibration"
    assert {d["name"] for d in doc["layout"]["dtypes"]} >= {"float32", "float64", "int64", "bool",
                                                           "float16", "bfloat16", "complex64"}
    second, _, r = stops(["--args", "--break", "at::_ops::add_Tensor::call"], tmp_path=tmp_path,
                         env=cache_env, script=script)
    assert second[0]["layout"] == "cache"
    assert second[0]["args"]["args"][0]["value"]["values"] == [1.0]
    # A cache file that is not a layout is ignored, and calibration redone.
    files[0].write_text('{"format": 1, "key": "other", "layout": {}}')
    third, _, r = stops(["--args", "--break", "at::_ops::add_Tensor::call"], tmp_path=tmp_path,
                        env=cache_env, script=script)
    assert third[0]["layout"] == "calibration"


# --- with debug info ---------------------------------------------------------

def test_tinytensor_with_dwarf(tmp_path):
    if not (TT_OUT / "tinytensor").is_dir():
        pytest.fail(f"tinytensor is not built in {TT_OUT}; run 'make'")
    found, out, r = stops(["--args", "--break", "tt_native_add", "--tensor", "self", "--tensor", "other"],
                          tmp_path=tmp_path, env=tt_env(), script=(
                              "import tinytensor\n"
                              "x = tinytensor.tensor([[1.5, 2.5], [3.5, 4.5]])\n"
                              "x + 1\n"))
    assert r.returncode == 0, r.stderr
    args = found[0]["args"]
    assert args["debug_info"] is True
    by_name = {a["name"]: a for a in args["args"]}
    assert by_name["self"]["type"] == "const tt_tensor *"
    self_t = by_name["self"]["value"]
    assert self_t["sizes"] == [2, 2] and self_t["strides"] == [2, 1]
    assert self_t["dtype"] == "float64" and self_t["device"] == "cpu"
    assert self_t["values"] == [1.5, 2.5, 3.5, 4.5]
    assert self_t["requires_grad"] is False
    other = by_name["other"]["value"]
    assert other["sizes"] == [] and other["values"] == [1.0]
    tensors = found[0]["tensors"]
    assert [t["layout"] for t in tensors] == ["dwarf", "dwarf"]
    assert tensors[0]["value"]["values"] == self_t["values"]
