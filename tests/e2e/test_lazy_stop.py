"""A step between Python lines reads gdb's frames only when something asks
for them (issue 27): its stop shows the line from the hook's report and
the Python frames in memory (a --json event too: "partial", its stack the
Python frames), and 'bt', 'frame', 'info threads' and a DAP stackTrace
beyond the top frame still get the whole merged stack.
The Python line here runs inside torch's autograd engine (a tensor hook
called from C++), so the stack under it holds native frames that the
Python frames alone do not show.  Real gdb, Debian's torch; nothing timed."""
import json
import textwrap

import pytest

from conftest import PYTHON, clean_env, run
from tdap_util import Adapter

HOOKED = textwrap.dedent("""\
    import torch

    def hook(g):
        a = 1
        b = a + 1
        return g * b

    x = torch.ones(2, requires_grad=True)
    x.register_hook(hook)
    (x * 3).sum().backward()
    print(x.grad.tolist())
""")
BP, NEXT, CALLER = 4, 5, 10  # a = 1; b = a + 1; the backward() line


@pytest.fixture
def hooked(tmp_path, torch_available):
    p = tmp_path / "hooked.py"
    p.write_text(HOOKED)
    return p


def run_commands(tdebug, tmp_path, commands, *args):
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    return run([tdebug, "run", "-x", str(cmds)] + list(args))


def bt_after(text, marker):
    """The lines 'bt' printed after the prompt line MARKER."""
    part = text.split(f"(tdebug) {marker}\n", 1)[1]
    return part.split("(tdebug) ", 1)[0].splitlines()


def test_bt_after_next_shows_the_whole_merged_stack(tdebug, tmp_path, hooked):
    r = run_commands(tdebug, tmp_path, ["bt", "next", "bt", "info threads", "continue"],
                     "-b", f"{hooked}:{BP}", "--", PYTHON, str(hooked))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'tdebug: next: File "{hooked}", line {NEXT}, in hook' in r.stdout
    before = bt_after(r.stdout, "bt")
    after = bt_after(r.stdout.split("(tdebug) next\n", 1)[1], "bt")
    # the same stack, the top line moved on: torch's native frames between
    # the hook and the line that called backward() are there after the next
    assert after[0] == f'    File "{hooked}", line {NEXT}, in hook', after
    assert after[1:] == before[1:], (before, after)
    assert any("torch" in line and line.startswith("#") for line in after), after
    assert any(f'line {CALLER}, in <module>' in line for line in after), after
    assert "* 1 " in r.stdout.split("(tdebug) info threads\n", 1)[1]
    assert "[6.0, 6.0]" in r.stdout  # the program went on, the hook's result used


def test_frame_and_up_after_next_walk_the_native_frames(tdebug, tmp_path, hooked):
    r = run_commands(tdebug, tmp_path, ["next", "up", "continue"],
                     "-b", f"{hooked}:{BP}", "--", PYTHON, str(hooked))
    assert r.returncode == 0, r.stdout + r.stderr
    up = r.stdout.split("(tdebug) up\n", 1)[1].splitlines()[0]
    # the frame above the hook is torch's C++ (its caller), not <module>
    assert up.startswith("#") and "<module>" not in up, up


def test_json_next_is_partial_and_bt_gives_the_whole_stack(tdebug, tmp_path, hooked):
    # a --json 'next' event carries the Python frames alone, with no stack
    # asked of gdb; 'bt' then reads the whole merged stack, once
    frames0, threads0, _ = stack_requests(tdebug, tmp_path, ["continue"], hooked, "jbp",
                                          "--json")
    frames, threads, out = stack_requests(tdebug, tmp_path, ["next", "bt", "continue"], hooked,
                                          "jnext", "--json")
    assert (frames, threads) == (frames0 + 1, threads0 + 1)  # the bt's, not the next's
    events = [json.loads(line) for line in out.splitlines()]
    stops = [e for e in events if e["event"] == "stopped"]
    assert [s["reason"] for s in stops] == ["python-breakpoint", "next"]
    assert "partial" not in stops[0] and stops[0]["frames"]
    nxt = stops[1]
    assert nxt["partial"] is True and nxt["frames"] is None
    assert nxt["stack"][0] == {"kind": "python", "function": "hook", "file": str(hooked),
                               "line": NEXT}
    assert all(f["kind"] == "python" for f in nxt["stack"])
    assert [f["line"] for f in nxt["stack"]] == [f["line"] for f in nxt["python_frames"]]
    bt = [e for e in events if e["event"] == "backtrace"][0]
    assert bt["stack"][0] == nxt["stack"][0]
    # torch's native frames between the hook and the line that called backward()
    native = [f["function"] or "" for f in bt["stack"] if f["kind"] == "native"]
    assert any("torch::autograd" in f for f in native), native
    assert any(f["line"] == CALLER for f in bt["stack"] if f["kind"] == "python")


def test_dap_top_frame_first_then_the_rest(tdebug, procs, tmp_path, hooked):
    dap, i, tid = Adapter.at_line(tdebug, procs, tmp_path, hooked, BP)
    whole_before = dap.frames(tid)
    dap.request("next", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    # what VS Code asks first (delayed stack trace loading): the top frame
    first = dap.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})["body"]
    assert [(f["name"], f["line"]) for f in first["stackFrames"]] == [("hook", NEXT)]
    assert first["totalFrames"] > 1  # more to ask for
    rest = dap.request("stackTrace", {"threadId": tid, "startFrame": 1, "levels": 50})["body"]
    whole = dap.frames(tid)
    assert [f["name"] for f in whole] == [f["name"] for f in first["stackFrames"] +
                                          rest["stackFrames"]]
    assert [f["name"] for f in whole[1:]] == [f["name"] for f in whole_before[1:]]
    assert rest["totalFrames"] == len(whole)
    assert any("torch" in f["name"] or "(lib" in f["name"] for f in rest["stackFrames"]), rest
    # the top frame's scopes read the Python line's locals
    scopes = dap.request("scopes", {"frameId": first["stackFrames"][0]["id"]})["body"]["scopes"]
    assert scopes
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def stack_requests(tdebug, tmp_path, commands, hooked, name, *options):
    """How many times gdb was asked for a stack in a session at the prompt
    running COMMANDS at the breakpoint (gdb's MI traffic, traced).  An
    ordinary session: a light one (TDEBUG_LIGHT=1, the default for a
    Python-only breakpoint) unwinds by itself and asks gdb for no stack."""
    trace = tmp_path / f"{name}.mi"
    cmds = tmp_path / f"{name}.cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, "run", *options, "-x", str(cmds), "-b", f"{hooked}:{BP}", "--", PYTHON,
             str(hooked)], env=dict(clean_env(), TDEBUG_TRACE_MI=str(trace), TDEBUG_LIGHT="0"))
    assert r.returncode == 0, r.stdout + r.stderr
    sent = [line for line in trace.read_text(errors="replace").splitlines() if " -> " in line]
    return (sum("-stack-list-frames" in line for line in sent),
            sum("-thread-info" in line for line in sent), r.stdout)


def test_a_next_between_python_lines_asks_gdb_for_no_stack(tdebug, tmp_path, hooked):
    frames0, threads0, _ = stack_requests(tdebug, tmp_path, ["continue"], hooked, "bp")
    frames, threads, out = stack_requests(tdebug, tmp_path, ["next", "continue"], hooked, "next")
    assert f"next: File \"{hooked}\", line {NEXT}, in hook" in out
    assert (frames, threads) == (frames0, threads0)
    # and a command that needs the stack asks for it, once
    frames2, _, out = stack_requests(tdebug, tmp_path, ["next", "bt", "bt", "continue"], hooked,
                                     "bt")
    assert f"line {CALLER}, in <module>" in out.split("(tdebug) bt", 1)[1]
    assert frames2 == frames0 + 1


ADDS = textwrap.dedent("""\
    import torch
    x = torch.ones(2)
    a = 1
    z = torch.add(x, x)
    print(z.tolist())
""")


@pytest.fixture
def adds(tmp_path, torch_available):
    p = tmp_path / "adds.py"
    p.write_text(ADDS)
    return p


def test_step_from_a_partial_stop_into_torch(tdebug, tmp_path, adds):
    r = run_commands(tdebug, tmp_path, ["next", "step", "bt 1", "continue"],
                     "-b", f"{adds}:3", "--", PYTHON, str(adds))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f'next: File "{adds}", line 4, in <module>' in r.stdout
    step = r.stdout.split("(tdebug) step\n", 1)[1]
    assert "tdebug: step: into the native code of torch.add" in step.split("(tdebug) ")[0], step
    assert "at::_ops::add_Tensor::call" in step.split("(tdebug) bt 1\n", 1)[1].splitlines()[0]


def test_dap_step_in_from_a_partial_stop_focuses_the_cxx_frame(tdebug, procs, tmp_path, adds):
    dap, i, tid = Adapter.at_line(tdebug, procs, tmp_path, adds, 3)
    dap.request("next", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    top = dap.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})["body"]
    assert [(f["name"], f["line"]) for f in top["stackFrames"]] == [("<module>", 4)]
    dap.request("stepIn", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    assert stop["reason"] == "step"
    top = dap.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})["body"]
    assert top["stackFrames"][0]["name"].startswith("at::_ops::add_Tensor::call"), top
    assert top["totalFrames"] > 1
    whole = dap.frames(tid)
    assert whole[0]["name"] == top["stackFrames"][0]["name"]
    assert any(f["name"] == "<module>" and f["line"] == 4 for f in whole[1:]), whole
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()


def test_dap_top_frame_and_its_locals_ask_gdb_for_no_stack(tdebug, procs, tmp_path, hooked):
    trace = tmp_path / "dap.mi"
    dap = Adapter.start(tdebug, procs, tmp_path,
                        env=clean_env(TDEBUG_TRACE_MI=str(trace), TDEBUG_LIGHT="0"))

    def stack_requests():
        return trace.read_text(errors="replace").count("-stack-list-frames")

    dap.initialize()
    dap.start_program("launch", {"program": str(hooked), "python": PYTHON},
                      lambda d: d.set_breakpoints(str(hooked), [BP]))
    i, stop = dap.stopped()
    tid = stop["threadId"]
    dap.frames(tid)
    dap.request("next", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    before = stack_requests()
    top = dap.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})["body"]
    scopes = dap.request("scopes", {"frameId": top["stackFrames"][0]["id"]})["body"]["scopes"]
    names = {}
    for scope in scopes:
        ref = scope["variablesReference"]
        if ref:
            for v in dap.request("variables", {"variablesReference": ref})["body"]["variables"]:
                names[v["name"]] = v["value"]
    assert names.get("a") == "1", names  # line 5 runs next: a is set, b not yet
    assert "b" not in names
    assert stack_requests() == before
    # a step from there (the adapter selects frame 0 of the thread first)
    dap.request("next", {"threadId": tid})
    i, stop = dap.stopped(after=i + 1)
    top = dap.request("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 1})["body"]
    assert [(f["name"], f["line"]) for f in top["stackFrames"]] == [("hook", NEXT + 1)]
    assert stack_requests() == before
    dap.frames(tid)  # the rest of the stack: gdb's frames now
    assert stack_requests() == before + 1
    dap.continue_(tid)
    assert dap.wait_event("exited")["body"]["exitCode"] == 0
    dap.finish()
