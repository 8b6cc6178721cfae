"""tdebug dap against real gdb, torch and tinytensor, driven by a DAP
client (dap_util), every message the adapter sends checked against the
Debug Adapter Protocol's JSON Schema.  Microsoft's own client drives the
issue's scenarios in test_dap_client.py; this file has the rest: the wire
format and bad input, hostile strings, native source lines and stepping,
attach and detach, a client that vanishes, TCP."""
import base64
import json
import os
import signal
import subprocess

from conftest import PYTHON, SLOW, clean_env, run, tracer_of, wait_until
from dap_util import DapClient
from tdap_util import (Adapter, counter, frame, program_pids_gone, raw_exchange,
                       schema_errors, start_target)
from tinytensor_util import TT_OUT, TT_SRC, marked_line

TORCH_ADD = "at::_ops::add_Tensor::call"


def second_dir(tmp_path):
    d = tmp_path / "second"
    d.mkdir(exist_ok=True)
    return d


def write(path, text):
    path.write_text(text)
    return str(path)


# ---------------------------------------------------------------------------
# The command and the protocol

def test_help_and_usage(tdebug):
    r = run([tdebug, "dap", "--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage: tdebug dap")
    assert run([tdebug, "dap", "--bogus"]).returncode == 2
    assert run([tdebug, "dap", "--port", "70000"]).returncode == 2
    assert run([tdebug, "dap", "--host", "127.0.0.1"]).returncode == 2
    assert run([tdebug, "dap", "extra"]).returncode == 2


def test_initialize_says_only_true_capabilities(tdebug, procs, tmp_path):
    dap = Adapter.start(tdebug, procs, tmp_path)
    caps = dap.initialize()
    flags = {k: v for k, v in caps.items() if isinstance(v, bool)}
    assert flags and all(flags.values()), caps
    assert caps["supportsConfigurationDoneRequest"] and caps["supportsFunctionBreakpoints"]
    for name in ("supportsDisassembleRequest", "supportsReadMemoryRequest",
                 "supportsWriteMemoryRequest", "supportsSteppingGranularity",
                 "supportsModulesRequest", "supportsInstructionBreakpoints",
                 "supportsStepInTargetsRequest", "supportsLoadedSourcesRequest"):
        assert caps[name] is True
    assert [f["filter"] for f in caps["exceptionBreakpointFilters"]] == [
        "cpp_throw", "c10_error", "raised", "uncaught", "userUnhandled"]
    dap.finish()


def test_unknown_request_is_named_and_the_session_goes_on(tdebug, procs, tmp_path):
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    r = dap.request("restartFrame\"\u00e9", {"frameId": 1}, check=False)
    assert not r["success"] and "'restartFrame\"\u00e9'" in r["message"]
    r = dap.request("stackTrace", {"threadId": 1}, check=False)
    assert not r["success"] and "launch" in r["message"]
    r = dap.request("launch", {"program": "/nonexistent/x.py"}, check=False)
    assert not r["success"] and "/nonexistent/x.py" in r["message"]
    r = dap.request("launch", {"program": "a.py", "module": "m"}, check=False)
    assert not r["success"] and "not both" in r["message"]
    r = dap.request("attach", {"processId": "12x"}, check=False)
    assert not r["success"] and "processId" in r["message"]
    assert dap.initialize()["supportsFunctionBreakpoints"]
    dap.finish()


def test_malformed_frames_and_json_get_an_error_and_the_session_goes_on(tdebug, procs,
                                                                          tmp_path):
    data = (b"Content-Type: nothing\r\n\r\n"                     # no Content-Length
            + b"Content-Length: twelve\r\n\r\n"                  # not a number
            + frame(b"{\"seq\": 1, \"type\": \"request\", ")     # cut JSON
            + frame(b"{\"seq\":2,\"type\":\"request\",\"command\":\"a\xff\"}")  # not UTF-8
            + frame(b"[1, 2, 3]")                                # not an object
            + frame(b"{\"seq\":3,\"type\":\"request\"}")         # no command
            + frame(b"{\"seq\":4,\"type\":\"request\",\"command\":\"next\",\"arguments\":7}")
            + frame(b"{\"seq\":5,\"type\":\"event\",\"event\":\"x\"}"))
    msgs = raw_exchange(tdebug, procs, data, tmp_path)
    errors = [m for m in msgs if m["type"] == "response" and not m["success"]]
    notes = [m["body"]["output"] for m in msgs if m.get("event") == "output"]
    assert {m["request_seq"] for m in errors} == {3, 4, 5}, msgs
    assert any("no Content-Length" in n for n in notes)
    assert any("not a number" in n for n in notes)
    assert sum("malformed DAP message" in n for n in notes) >= 2
    assert msgs[-1]["success"] and msgs[-1]["command"] == "initialize"
    for m in msgs:
        assert not schema_errors(m), (m, schema_errors(m))


def test_a_frame_with_two_lengths_is_refused_and_the_next_request_answered(tdebug, procs,
                                                                          tmp_path):
    """Two Content-Length fields, the second one larger: the adapter used to
    wait for bytes that never came, and the request after it (and every
    one after) got no answer.  Likewise a length that lies, or that is over
    the limit, and a header without its blank line."""
    hidden = json.dumps({"seq": 1, "type": "request", "command": "threads"}).encode()
    data = (b"Content-Length: %d\r\nContent-Length: 5000\r\n\r\n" % len(hidden) + hidden
            + frame(json.dumps({"seq": 2, "type": "request", "command": "frob"}))
            + b"Content-Length: 4000\r\n\r\n" + hidden         # longer than what comes
            + frame(json.dumps({"seq": 3, "type": "request", "command": "frob"}))
            + b"Content-Length: 1000000000\r\n\r\n"             # over the limit, never sent
            + frame(json.dumps({"seq": 4, "type": "request", "command": "frob"}))
            + b"Content-Length: %d\r\n" % len(hidden) + hidden   # no blank line
            + frame(json.dumps({"seq": 5, "type": "request", "command": "frob"})))
    msgs = raw_exchange(tdebug, procs, data, tmp_path, timeout=60)
    answered = [m["request_seq"] for m in msgs if m["type"] == "response"]
    assert answered == [2, 3, 4, 5, 999], msgs
    notes = [m["body"]["output"] for m in msgs if m.get("event") == "output"]
    assert any("two Content-Length fields (%d and 5000)" % len(hidden) in n for n in notes), notes
    assert any("the next frame began after" in n for n in notes), notes
    assert any("over tdebug's limit" in n for n in notes), notes
    assert any("no blank line after its fields" in n for n in notes), notes
    for m in msgs:
        assert not schema_errors(m), (m, schema_errors(m))


def test_split_frames_and_several_in_one_write(tdebug, procs, tmp_path):
    one = frame(json.dumps({"seq": 1, "type": "request", "command": "threads"}))
    two = frame(json.dumps({"seq": 2, "type": "request", "command": "frob"}))
    msgs = raw_exchange(tdebug, procs, one + two, tmp_path)
    assert [m.get("request_seq") for m in msgs if m["type"] == "response"] == [1, 2, 999]


# ---------------------------------------------------------------------------
# Launch: a C++ function breakpoint in torch, the stack, values, output

def test_launch_function_breakpoint_in_torch(tdebug, procs, tmp_path, torch_available):
    prog = write(tmp_path / "prog.py", "import torch\nprint('before', flush=True)\n"
                                       "x = torch.ones(2) + 1\nprint('x =', x)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    told = {}

    def setup(d):
        told["bps"] = d.request("setFunctionBreakpoints",
                                {"breakpoints": [{"name": TORCH_ADD}]})["body"]["breakpoints"]
    dap.start_program("launch", {"program": prog, "python": PYTHON, "cwd": str(tmp_path)}, setup)
    bp = told["bps"][0]
    assert bp["verified"] is False and "pending" in bp["message"]
    i, stop = dap.stopped()
    assert stop["reason"] == "function breakpoint" and stop["hitBreakpointIds"] == [bp["id"]]
    # It bound when torch loaded, and the client was told.
    changed = dap.wait_event("breakpoint", lambda e: e["body"]["breakpoint"]["id"] == bp["id"])
    assert changed["body"]["breakpoint"]["verified"] is True
    pid = dap.process_pid()
    assert dap.outputs("stdout").startswith("before\n")
    threads = dap.request("threads")["body"]["threads"]
    assert any(f"LWP {pid}" in t["name"] for t in threads)
    frames = dap.frames(stop["threadId"])
    top = frames[0]
    assert top["name"].startswith(TORCH_ADD) and "libtorch_cpu" in top["name"]
    # The stop's own frame is shown and focused: never folded as 'subtle',
    # and a source the client can open (its machine code: torch is
    # stripped), at the line of the stop's address.
    assert "presentationHint" not in top and top["instructionPointerReference"]
    ip = int(top["instructionPointerReference"], 16)
    listing = dap.request("source", {"source": top["source"],
                                     "sourceReference": top["source"]["sourceReference"]})
    text = listing["body"]["content"].splitlines()
    assert TORCH_ADD in text[0]
    assert int(text[top["line"] - 1].split()[0], 16) == ip, (text[:5], top["line"])
    assert all(f.get("presentationHint") == "subtle" for f in frames[1:]
               if "line" in f and f["name"].endswith(".so)"))
    # The disassembly view around it, and the bytes there.
    insns = dap.request("disassemble", {"memoryReference": top["instructionPointerReference"],
                                        "instructionOffset": -4, "instructionCount": 10,
                                        "resolveSymbols": True})["body"]["instructions"]
    assert len(insns) == 10 and int(insns[4]["address"], 16) == ip
    assert insns[4]["symbol"].startswith(TORCH_ADD)
    assert [int(i["address"], 16) for i in insns] == sorted(int(i["address"], 16) for i in insns)
    mem = dap.request("readMemory", {"memoryReference": insns[4]["address"],
                                     "count": 4})["body"]
    assert int(mem["address"], 16) == ip
    first = insns[4]["instructionBytes"].replace(" ", "")
    assert base64.b64decode(mem["data"]).hex()[:len(first)] == first[:8]
    py = [f for f in frames if f.get("source", {}).get("path") == prog]
    assert len(py) == 1 and py[0]["line"] == 3 and py[0]["name"] == "<module>"
    # The merged order: the native frames above the Python line that called them.
    assert frames.index(py[0]) > 0
    scopes = dap.request("scopes", {"frameId": top["id"]})["body"]["scopes"]
    assert [s["name"] for s in scopes] == ["Arguments", "Locals"]
    dap.request("variables", {"variablesReference": scopes[0]["variablesReference"]})
    # Reading the tensor layout from its cache is routine: not a note in the
    # Debug Console ('console' output reads as a warning there).
    assert "read from the cache" not in dap.outputs("console")
    pc = dap.request("evaluate", {"expression": "$pc", "frameId": top["id"],
                                  "context": "hover"})["body"]
    assert TORCH_ADD in pc["result"]
    bt = dap.request("evaluate", {"expression": "-exec bt", "frameId": top["id"],
                                  "context": "repl"})["body"]["result"]
    assert TORCH_ADD in bt and f'File "{prog}", line 3, in <module>' in bt
    bad = dap.request("evaluate", {"expression": "no_such_thing_here", "frameId": top["id"],
                                   "context": "watch"}, check=False)
    assert not bad["success"] and "no_such_thing_here" in bad["message"]
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.wait_event("terminated")
    assert "x = tensor([2., 2.])\n" in dap.outputs("stdout")
    dap.finish()
    assert program_pids_gone(pid)


def test_stop_at_import_stop_on_entry_env_cwd_args(tdebug, procs, tmp_path, torch_available):
    work = tmp_path / "work dir \"quoted\""
    work.mkdir()
    write(work / "show.py", "import os, sys, torch\n"
                            "print(os.getcwd()); print(os.environ.get('TDB_X'))\n"
                            "print(os.environ.get('HOME_UNSET', 'unset')); print(sys.argv[1:])\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    args = ["a b", "it's", "\"q\"", "\u00e9", "x" * 5000]
    dap.start_program("launch", {"program": "show.py", "cwd": str(work), "python": PYTHON,
                                 "args": args, "stopOnEntry": True,
                                 "env": {"TDB_X": "v \"1\" $HOME", "HOME_UNSET": None},
                                 "stopAtImport": "torch._C"})
    i, entry = dap.stopped()
    assert entry["reason"] == "entry"
    top = dap.frames(entry["threadId"])[0]  # the program's first line
    assert top["source"]["path"] == str(work / "show.py") and top["line"] == 1
    dap.continue_(entry["threadId"])
    i, imp = dap.stopped(after=i + 1)
    assert imp["reason"] == "entry" and "torch._C" in imp["description"]
    assert dap.frames(imp["threadId"])[0]["name"].startswith("PyInit__C")
    dap.continue_(imp["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    out = dap.outputs("stdout").splitlines()
    assert out[:3] == [str(work), "v \"1\" $HOME", "unset"]
    assert out[3] == repr(args)
    dap.finish()


def test_program_output_hostile_bytes(tdebug, procs, tmp_path):
    prog = write(tmp_path / "out.py",
                 "import os, sys\n"
                 "os.write(1, b'caf\\xc3')\nos.write(1, b'\\xa9 ok \\xff\\xfe end\\n')\n"
                 "os.write(2, b'err \"quoted\" \\\\ back\\n')\n"
                 "os.write(1, b'L' * 200000 + b'\\n')\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    dap.wait_event("terminated")
    out = dap.outputs("stdout")
    # A character split across two writes stays whole; bytes that are not
    # UTF-8 become U+FFFD; nothing is lost from a very long line.
    assert out.startswith("caf\u00e9 ok \ufffd\ufffd end\n")
    assert "L" * 200000 + "\n" in out
    assert dap.outputs("stderr") == "err \"quoted\" \\ back\n"
    dap.finish()


def test_exit_code_passes_through_and_terminate(tdebug, procs, tmp_path):
    prog = write(tmp_path / "exit.py", "import sys\nsys.exit(7)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    assert dap.wait_event("exited")["body"]["exitCode"] == 7
    dap.finish()

    loop = write(tmp_path / "loop.py", "import time\nwhile True:\n    time.sleep(0.05)\n")
    dap = Adapter.start(tdebug, procs, second_dir(tmp_path))
    dap.initialize()
    dap.start_program("launch", {"program": loop, "python": PYTHON})
    pid = dap.process_pid()
    dap.request("terminate")
    dap.wait_event("terminated")
    wait_until(lambda: program_pids_gone(pid), what="the launched program to be killed")
    dap.finish()


# ---------------------------------------------------------------------------
# Native source: a C line breakpoint, stepping, variables

def tt_program(tmp_path):
    return write(tmp_path / "tt.py", "import tinytensor\nx = tinytensor.ones(2) + 1\n"
                                     "print(repr(x))\n")


def test_c_line_breakpoint_steps_and_variables(tdebug, procs, tmp_path):
    prog = tt_program(tmp_path)
    src = str(TT_SRC / "csrc" / "core" / "tt_ops.c")
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    told = {}

    def setup(d):
        told["bps"] = d.set_breakpoints(src, [line, 100000])
    dap.start_program("launch", {"program": prog, "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}}, setup)
    assert [b["verified"] for b in told["bps"]] == [False, False]
    i, stop = dap.stopped()
    assert stop["reason"] == "breakpoint"
    bound = dap.wait_event("breakpoint",
                           lambda e: e["body"]["breakpoint"]["id"] == told["bps"][0]["id"])
    assert bound["body"]["breakpoint"]["line"] == line
    assert bound["body"]["breakpoint"]["source"]["path"] == src
    tid = stop["threadId"]
    top = dap.frames(tid)[0]
    assert top["name"] == "tt_ops_add_call" and top["source"]["path"] == src
    assert top["line"] == line and "presentationHint" not in top
    scopes = dap.request("scopes", {"frameId": top["id"]})["body"]["scopes"]
    args = dap.request("variables", {"variablesReference": scopes[0]["variablesReference"]})
    names = [v["name"] for v in args["body"]["variables"]]
    assert names[:3] == ["self", "other", "alpha"]
    # A struct argument expands into its members (gdb's variable objects).
    alpha = next(v for v in args["body"]["variables"] if v["name"] == "alpha")
    assert alpha["variablesReference"] > 0
    parts = dap.request("variables", {"variablesReference": alpha["variablesReference"]})
    assert parts["body"]["variables"]
    locs = dap.request("variables", {"variablesReference": scopes[1]["variablesReference"]})
    assert "kernel" in [v["name"] for v in locs["body"]["variables"]]
    ev = dap.request("evaluate", {"expression": "self->ndim", "frameId": top["id"],
                                  "context": "watch"})["body"]
    assert ev["result"] == "1"
    # Memory: read an int, write it back, read it again.
    where = dap.request("evaluate", {"expression": "&self->ndim", "frameId": top["id"],
                                     "context": "watch"})["body"]["result"]
    ref = "0x" + where.split("0x")[1].split()[0]
    mem = dap.request("readMemory", {"memoryReference": ref, "count": 4})["body"]
    assert base64.b64decode(mem["data"]) == (1).to_bytes(4, "little")
    wrote = dap.request("writeMemory", {"memoryReference": ref, "offset": 0,
                                        "data": base64.b64encode((1).to_bytes(4, "little"))
                                        .decode()})["body"]
    assert wrote["bytesWritten"] == 4
    dap.wait_event("invalidated")
    bad = dap.request("readMemory", {"memoryReference": "0x8", "count": 16}, check=False)
    assert bad["success"] is False or bad["body"].get("unreadableBytes") == 16
    # One instruction at a time (the disassembly view's stepping).
    dap.request("next", {"threadId": tid, "granularity": "instruction"})
    i, st = dap.stopped(after=i + 1)
    assert st["reason"] == "step"
    moved = dap.frames(tid)[0]
    assert moved["name"] == "tt_ops_add_call"
    assert moved["instructionPointerReference"] != top["instructionPointerReference"]
    # The libraries: whether their symbols are read, where their debug info is.
    mods = dap.request("modules", {"startModule": 0})["body"]
    core = [m for m in mods["modules"] if m["name"].startswith("libtt_core")]
    assert core and core[0]["symbolStatus"] == "symbols read; debug info in the library", core
    assert core[0]["symbolFilePath"] == core[0]["path"]
    libc = [m for m in mods["modules"] if m["name"].startswith("libc.so")]
    assert libc and "symbols read" in libc[0]["symbolStatus"], libc
    assert mods["totalModules"] == len(mods["modules"]) > 3
    # stepIn goes into the kernel, stepOut comes back, next goes on a line.
    dap.request("stepIn", {"threadId": tid})
    i, st = dap.stopped(after=i + 1)
    assert st["reason"] == "step"
    assert dap.frames(tid)[0]["name"] == "tt_native_add"
    dap.request("stepOut", {"threadId": tid})
    i, st = dap.stopped(after=i + 1)
    back = dap.frames(tid)[0]
    assert back["name"] == "tt_ops_add_call" and back["line"] == line
    dap.request("next", {"threadId": tid})
    i, st = dap.stopped(after=i + 1)
    here = dap.frames(tid)[0]
    assert here["line"] > line
    # An instruction breakpoint on the instruction after the next one.
    ahead = dap.request("disassemble", {"memoryReference": here["instructionPointerReference"],
                                        "instructionCount": 3})["body"]["instructions"]
    assert not ahead[0]["instruction"].startswith("j") and not ahead[1]["instruction"].startswith("j")
    ibp = dap.request("setInstructionBreakpoints", {"breakpoints": [
        {"instructionReference": ahead[2]["address"]}]})["body"]["breakpoints"]
    assert ibp[0]["verified"] is True
    dap.continue_(tid)
    i, st = dap.stopped(after=i + 1)
    assert st["reason"] == "instruction breakpoint" and st["hitBreakpointIds"] == [ibp[0]["id"]]
    assert int(dap.frames(tid)[0]["instructionPointerReference"], 16) == \
        int(ahead[2]["address"], 16)
    assert dap.request("setInstructionBreakpoints",
                       {"breakpoints": []})["body"]["breakpoints"] == []
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    assert "tensor([2., 2.])" in dap.outputs("stdout")
    dap.finish()


def test_breakpoint_set_while_running(tdebug, procs, tmp_path):
    flag = tmp_path / "go"
    prog = write(tmp_path / "wait.py",
                 "import os, sys, time\nimport tinytensor\nprint('ready', flush=True)\n"
                 f"while not os.path.exists({str(flag)!r}):\n    time.sleep(0.02)\n"
                 "x = tinytensor.ones(2) + 1\nprint('done')\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}})
    wait_until(lambda: "ready" in dap.outputs("stdout"), timeout=SLOW, what="the program")
    # gdb takes no command while the program runs: the adapter stops it,
    # places the breakpoint, and lets it go on by itself.
    bps = dap.request("setFunctionBreakpoints",
                      {"breakpoints": [{"name": "tt_native_add"}]})["body"]["breakpoints"]
    assert bps[0]["verified"] is True
    assert not [e for e in dap.events if e["event"] == "stopped"]
    flag.touch()
    i, stop = dap.stopped()
    assert stop["reason"] == "function breakpoint"
    assert dap.frames(stop["threadId"])[0]["name"] == "tt_native_add"
    dap.continue_(stop["threadId"])
    dap.wait_event("exited")
    dap.finish()


def test_pause_then_continue(tdebug, procs, tmp_path):
    prog = write(tmp_path / "spin.py", "import time\nprint('up', flush=True)\n"
                                       "while True:\n    time.sleep(0.01)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    wait_until(lambda: "up" in dap.outputs("stdout"), what="the program")
    dap.request("pause", {"threadId": 1})
    i, stop = dap.stopped()
    assert stop["reason"] == "pause"
    frames = dap.frames(stop["threadId"])
    assert any(f.get("source", {}).get("path") == prog for f in frames)
    dap.continue_(stop["threadId"])
    dap.finish()  # disconnect kills what it launched


# ---------------------------------------------------------------------------
# Exceptions

def test_exception_breakpoint_on_a_shape_mismatch(tdebug, procs, tmp_path, torch_available):
    prog = write(tmp_path / "shape.py",
                 "import torch\na = torch.ones(2)\nb = torch.ones(3)\ntry:\n    a + b\n"
                 "except RuntimeError as e:\n    print('caught:', str(e).splitlines()[0])\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    told = {}

    def setup(d):
        told["bps"] = d.request("setExceptionBreakpoints",
                                {"filters": ["c10_error", "no_such_filter"]})["body"]["breakpoints"]
    dap.start_program("launch", {"program": prog, "python": PYTHON}, setup)
    assert told["bps"][0]["verified"] and not told["bps"][1]["verified"]
    i, stop = dap.stopped()
    assert stop["reason"] == "exception"
    # The exception widget shows torch's message, not __cxa_throw's frame.
    assert stop["text"].startswith("c10::Error: The size of tensor a (2) must match"), stop
    names = [f["name"] for f in dap.frames(stop["threadId"])]
    assert names[0].startswith("__cxa_throw")
    assert any(n.startswith("c10::detail::torchCheckFail") for n in names)
    assert any(n.startswith("at::infer_size") for n in names)
    py = [f for f in dap.frames(stop["threadId"]) if f.get("source", {}).get("path") == prog]
    assert py and py[0]["line"] == 5
    dap.continue_(stop["threadId"])
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    assert "caught: The size of tensor a (2) must match" in dap.outputs("stdout")
    dap.finish()


# ---------------------------------------------------------------------------
# Python breakpoints

def test_python_name_as_function_breakpoint_is_refused_with_the_reason(tdebug, procs, tmp_path):
    prog = write(tmp_path / "p.py", "x = 1\ny = 2\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    told = {}

    def setup(d):
        told["fn"] = d.request("setFunctionBreakpoints", {"breakpoints": [{"name": "json.dumps"}]}
                               )["body"]["breakpoints"]
    dap.start_program("launch", {"program": prog, "python": PYTHON}, setup)
    bp = told["fn"][0]
    assert bp["verified"] is False and "FILE.py:FUNCTION" in bp["message"]
    dap.wait_event("terminated")
    dap.finish()


def test_python_line_breakpoint_stops(tdebug, procs, tmp_path):
    prog = write(tmp_path / "p.py", "x = 1\ny = x + 1\nprint(y)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    told = {}
    dap.start_program("launch", {"program": prog, "python": PYTHON},
                      lambda d: told.update(bps=d.set_breakpoints(prog, [2])))
    assert told["bps"][0]["verified"] is True
    i, stop = dap.stopped(timeout=60)
    assert stop["reason"] == "breakpoint"
    top = dap.frames(stop["threadId"])[0]
    assert top["source"]["path"] == prog and top["line"] == 2
    dap.finish()


def test_python_breakpoints_only_launch_light(tdebug, procs, tmp_path):
    # issue 27: breakpoints all Python's at configurationDone: a light
    # session (gdb reads no library), whose stop answers stackTrace, scopes,
    # variables, evaluate and next as an ordinary one does
    prog = write(tmp_path / "p.py", "def f(k):\n    acc = k * 2\n    return acc + 1\n"
                                    "print(f(3))\n")
    trace = tmp_path / "mi.trace"
    dap = Adapter.start(tdebug, procs, tmp_path, env=clean_env(TDEBUG_TRACE_MI=str(trace)))
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON},
                      lambda d: d.set_breakpoints(prog, [2]))
    i, stop = dap.stopped(timeout=60)
    assert stop["reason"] == "breakpoint"
    top = dap.frames(stop["threadId"])[0]
    assert top["source"]["path"] == prog and top["line"] == 2
    scopes = dap.request("scopes", {"frameId": top["id"]})["body"]["scopes"]
    names = {v["name"]: v["value"] for v in dap.request(
        "variables", {"variablesReference": scopes[0]["variablesReference"]})["body"]["variables"]}
    assert names.get("k") == "3", names
    r = dap.request("evaluate", {"expression": "k * 100", "frameId": top["id"], "context": "repl"})
    assert r["body"]["result"] == "300"
    dap.request("next", {"threadId": stop["threadId"]})
    i, stop = dap.stopped(after=i + 1, timeout=60)
    assert dap.frames(stop["threadId"])[0]["line"] == 3
    sent = trace.read_text(errors="replace")
    assert "set sysroot /nonexistent/tdebug-light-session" in sent
    assert "-file-exec-and-symbols" not in sent  # never made ordinary
    dap.finish()


# ---------------------------------------------------------------------------
# Attach, detach, the client vanishing

def test_attach_stop_then_disconnect_leaves_it_running(tdebug, procs, tmp_path,
                                                       torch_available):
    p, count = start_target(procs, tmp_path)
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    r = dap.start_program("attach", {"processId": str(p.pid), "stopOnEntry": True})
    assert r["success"]
    assert dap.wait_event("process")["body"]["systemProcessId"] == p.pid
    i, stop = dap.stopped()
    assert stop["reason"] == "entry"
    frames = dap.frames(stop["threadId"])
    assert any(f.get("source", {}).get("path", "").endswith("target.py") for f in frames)
    assert tracer_of(p.pid) != 0
    dap.finish()
    # Detached, not killed: untraced and counting again.
    assert p.poll() is None and tracer_of(p.pid) == 0
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on")


def test_client_vanishing_detaches_an_attached_process(tdebug, procs, tmp_path,
                                                       torch_available):
    p, count = start_target(procs, tmp_path)
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("attach", {"processId": p.pid},
                      lambda d: d.request("setFunctionBreakpoints",
                                          {"breakpoints": [{"name": "rename"}]}))
    i, stop = dap.stopped()
    assert stop["reason"] == "function breakpoint"
    # The client dies with the program stopped at a breakpoint.
    dap.c.close()
    assert dap.p.wait(timeout=SLOW) == 0
    assert p.poll() is None and tracer_of(p.pid) == 0
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on")
    dap.check_messages()


def test_client_vanishing_kills_a_launched_program(tdebug, procs, tmp_path):
    prog = write(tmp_path / "spin.py", "import time\nwhile True:\n    time.sleep(0.01)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    pid = dap.process_pid()
    os.kill(dap.p.pid, 0)
    dap.c.close()  # end of input, mid-session
    assert dap.p.wait(timeout=SLOW) == 0
    wait_until(lambda: program_pids_gone(pid), what="the program to die with the session")


def test_attach_refused_says_why(tdebug, procs, tmp_path):
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    r = dap.request("attach", {"processId": 1}, check=False)
    assert not r["success"] and "pid 1" in r["message"]
    dap.finish()


# ---------------------------------------------------------------------------
# TCP

def test_tcp_port_serves_clients_one_after_the_other(tdebug, procs, tmp_path):
    p = procs.start([tdebug, "dap", "--port", "0"], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert line.startswith("tdebug: listening for DAP clients on 127.0.0.1:"), line
    port = int(line.split("127.0.0.1:")[1].split()[0])
    for _ in range(2):
        c = DapClient.connect("127.0.0.1", port)
        caps = c.initialize(adapterID="tdebug")
        assert caps["supportsConfigurationDoneRequest"]
        assert c.disconnect()["success"]
        c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM


def test_attach_wait_takes_a_process_paused_at_torch(tdebug, procs, tmp_path, torch_available):
    from paused_util import TORCH_PROGRAM, tdebug_env
    from preload_util import finish, preload_env, python_args, start
    dap = Adapter.start(tdebug, procs, tmp_path, env=tdebug_env(tmp_path))
    dap.initialize()
    seq = dap.send_request("attach", {"wait": True, "stopAtImport": "torch._C"})
    dap.wait_event("output", lambda e: "waiting for a process" in e["body"]["output"])
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    dap.wait_event("initialized", timeout=SLOW)
    dap.configuration_done()
    assert dap.wait_response(seq)["success"]
    assert dap.wait_event("process")["body"]["systemProcessId"] == p.pid
    i, stop = dap.stopped()
    assert stop["reason"] == "entry" and "torch._C" in stop["description"]
    assert dap.frames(stop["threadId"])[0]["name"].startswith("PyInit__C")
    dap.continue_(stop["threadId"])
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"
    dap.wait_event("terminated")
    dap.finish()


# ---------------------------------------------------------------------------
# The program's terminal (runInTerminal)

def test_program_runs_in_the_clients_terminal(tdebug, procs, tmp_path):
    from pty_util import Terminal
    prog = write(tmp_path / "ask.py", "print('ready', flush=True)\nline = input()\n"
                                      "print('got', line)\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    terminals = []

    def run_in_terminal(args):
        assert args["kind"] == "integrated" and args["title"] == "tdebug: ask.py"
        t = Terminal(args["args"])
        terminals.append(t)
        return {"processId": t.proc.pid}
    dap.on_reverse_request("runInTerminal", run_in_terminal)
    dap.c.initialize(adapterID="tdebug", supportsRunInTerminalRequest=True)
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    (term,) = terminals
    try:
        term.expect("this terminal is the program's")
        term.expect("ready")
        term.send("hello from the terminal")
        term.expect("got hello from the terminal")
        assert dap.wait_event("exited")["body"]["exitCode"] == 0
        assert "ready" not in dap.outputs()
        dap.finish()
        assert term.wait() == 0  # the helper leaves with the session
    finally:
        term.close()


def test_a_client_that_runs_no_terminal_gets_output_events(tdebug, procs, tmp_path):
    prog = write(tmp_path / "hi.py", "print('hi')\n")
    dap = Adapter.start(tdebug, procs, tmp_path)

    def refuse(args):
        raise RuntimeError("no terminals here")
    dap.on_reverse_request("runInTerminal", refuse)
    dap.c.initialize(adapterID="tdebug", supportsRunInTerminalRequest=True)
    dap.start_program("launch", {"program": prog, "python": PYTHON})
    dap.wait_event("terminated")
    assert dap.outputs("stdout") == "hi\n"
    assert "no terminals here" in dap.outputs("console")
    dap.finish()
    # And "console": "internalConsole" asks for output events outright.
    dap = Adapter.start(tdebug, procs, second_dir(tmp_path))
    dap.on_reverse_request("runInTerminal", refuse)
    dap.c.initialize(adapterID="tdebug", supportsRunInTerminalRequest=True)
    dap.start_program("launch", {"program": prog, "python": PYTHON, "console": "internalConsole"})
    dap.wait_event("terminated")
    assert dap.outputs("stdout") == "hi\n"
    assert not [r for r in dap.c.reverse_requests]
    dap.finish()


def stop_at_add_dispatch(tdebug, procs, tmp_path, capability):
    """The tinytensor program under a DAP session, stopped at the marked
    line of tt_ops_add_call (the adapter announced CAPABILITY): (adapter,
    program, the stop's index, its thread, its frames)."""
    prog = tt_program(tmp_path)
    dap = Adapter.start(tdebug, procs, tmp_path)
    assert dap.initialize()[capability] is True
    src = str(TT_SRC / "csrc" / "core" / "tt_ops.c")
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    dap.start_program("launch", {"program": prog, "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}},
                      lambda d: d.set_breakpoints(src, [line]))
    i, stop = dap.stopped()
    tid = stop["threadId"]
    frames = dap.frames(tid)
    assert frames[0]["name"] == "tt_ops_add_call"
    return dap, prog, i, tid, frames


def test_completions_in_a_c_frame(tdebug, procs, tmp_path):
    # gdb's own completion of an expression: a local, a struct's member
    dap, _, _, tid, frames = stop_at_add_dispatch(tdebug, procs, tmp_path,
                                                  "supportsCompletionsRequest")

    def targets(text):
        return dap.request("completions", {"text": text, "column": len(text) + 1,
                                           "frameId": frames[0]["id"]})["body"]["targets"]
    local = [t for t in targets("1 + kern") if t["label"] == "kernel"]
    assert local and local[0]["start"] == 5 and local[0]["length"] == 4, targets("1 + kern")
    member = [t for t in targets("self->nd") if t["label"] == "ndim"]
    assert member and member[0]["start"] == 7 and member[0]["length"] == 2, targets("self->nd")
    assert targets("self->no_such_member_") == []
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


# ---------------------------------------------------------------------------
# Data breakpoints: gdb's watchpoints on C/C++ lvalues

def test_data_breakpoint_on_a_c_local(tdebug, procs, tmp_path):
    dap, prog, i, tid, frames = stop_at_add_dispatch(tdebug, procs, tmp_path,
                                                     "supportsDataBreakpoints")
    scopes = dap.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
    local_scope = next(s for s in scopes if s["name"] == "Locals")
    info = dap.request("dataBreakpointInfo", {"variablesReference":
                                              local_scope["variablesReference"],
                                              "name": "out"})["body"]
    assert info["dataId"] and "write" in info["accessTypes"]
    # A Python variable is not a C/C++ lvalue: no dataId, and why.
    py = next(f for f in frames if f.get("source", {}).get("path") == prog)
    py_scope = dap.request("scopes", {"frameId": py["id"]})["body"]["scopes"][0]
    no = dap.request("dataBreakpointInfo", {"variablesReference": py_scope["variablesReference"],
                                            "name": "x"})["body"]
    assert no["dataId"] is None and "C/C++" in no["description"]
    bps = dap.request("setDataBreakpoints", {"breakpoints": [
        {"dataId": info["dataId"], "accessType": "write"}]})["body"]["breakpoints"]
    assert bps[0]["verified"] is True, bps
    # The line assigns what the kernel returns to out.
    dap.continue_(tid)
    i, st = dap.stopped(after=i + 1)
    assert st["reason"] == "data breakpoint" and st["hitBreakpointIds"] == [bps[0]["id"]], st
    assert "watchpoint" in st["description"] and "out" in st["description"]
    assert dap.request("setDataBreakpoints", {"breakpoints": []})["body"]["breakpoints"] == []
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_a_stop_inside_the_garbage_collector_says_so(tdebug, procs, tmp_path):
    """issue 26: the terminal's stack and 'tdebug stacks' say a thread is
    collecting garbage; the 'stopped' event says it too."""
    prog = write(tmp_path / "collect.py", "import gc\n"
                                          "def collecting(phase, info):\n"
                                          "    if phase == 'start':\n"
                                          "        x = 1  # STOP\n"
                                          "gc.callbacks.append(collecting)\n"
                                          "gc.collect()\n"
                                          "gc.callbacks.clear()\n")
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON},
                      lambda d: d.set_breakpoints(prog, [4]))
    i, stop = dap.stopped()
    assert "collecting garbage" in stop["description"], stop
    assert stop["text"].startswith("this thread is collecting garbage"), stop
    dap.continue_(stop["threadId"])
    dap.wait_event("terminated")
    dap.finish()
