"""tdebug dap under a client's concurrency (issue 26): VS Code and nvim-dap
send 'threads', 'stackTrace', 'variables'... a few milliseconds after
'next', while the step still runs.  None of them may interrupt gdb behind
the session's back, end the session, or make a step stop somewhere else
(inside tdebug's own hook): they are answered from the last stop, or wait
for the step's stop.

The stress test sends every request type at random moments during next,
stepIn, stepOut and continue, in Python and in C (tinytensor, with a C
function breakpoint set and cleared at random), and sometimes a pause,
ROUNDS rounds, with a seeded RNG: a failure names its seed, and
TDEBUG_DAP_STRESS_SEED=N replays it (TDEBUG_DAP_STRESS_ROUNDS=N runs more
or fewer rounds)."""
import os
import random
import time

from conftest import PYTHON, SLOW
from tdap_util import Adapter
from tinytensor_util import TT_OUT, TT_SRC

ROUNDS = int(os.environ.get("TDEBUG_DAP_STRESS_ROUNDS", "500"))

PROGRAM = """\
import tinytensor


def inner(v):
    w = v + 1
    return w


def outer(i):
    a = inner(i)
    b = a * 2
    return b


total = 0
for i in range(10 ** 6):
    total += outer(i)  # BREAK
    if i % 3 == 0:
        x = tinytensor.ones(2) + 1
    total -= 1
print(total)
"""

HOOK_NAMES = ("tdebug_pyhook",)


def write(path, text):
    path.write_text(text)
    return str(path)


def requests_for(rng, prog, bp_line, tid, frame_id, var_ref):
    """A random burst of requests a client sends while the program moves."""
    native = [{"name": "tt_native_add"}] if rng.random() < 0.3 else []
    menu = [
        ("threads", None),
        ("stackTrace", {"threadId": tid, "startFrame": 0, "levels": 20}),
        ("scopes", {"frameId": frame_id}),
        ("variables", {"variablesReference": var_ref}),
        ("evaluate", {"expression": "i", "frameId": frame_id, "context": "watch"}),
        ("evaluate", {"expression": "total", "context": "hover"}),
        ("setBreakpoints", {"source": {"path": prog}, "breakpoints": [{"line": bp_line}]}),
        ("setFunctionBreakpoints", {"breakpoints": native}),
        ("setExceptionBreakpoints", {"filters": []}),
    ]
    burst = [rng.choice(menu) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.1:
        burst.insert(rng.randrange(len(burst) + 1), ("pause", {"threadId": tid}))
    return burst


def test_requests_during_steps_and_continue(tdebug, procs, tmp_path):
    seed = int(os.environ.get("TDEBUG_DAP_STRESS_SEED", random.randrange(2 ** 32)))
    rng = random.Random(seed)
    prog = write(tmp_path / "loop.py", PROGRAM)
    bp_line = PROGRAM.splitlines().index("    total += outer(i)  # BREAK") + 1
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("launch", {"program": prog, "python": PYTHON, "symbols": "libtt_",
                                 "env": {"PYTHONPATH": str(TT_OUT)}},
                      lambda d: d.set_breakpoints(prog, [bp_line]))
    i, stop = dap.stopped()
    tid = stop["threadId"]
    history = []

    def where():
        return f"seed {seed} (TDEBUG_DAP_STRESS_SEED={seed} replays it), round {n}: " \
               f"{history[-6:]}; transcript {tmp_path / 'client.log'}"

    for n in range(ROUNDS):
        frames = dap.frames(tid)
        top = frames[0]
        path = top.get("source", {}).get("path", "")
        assert "/lib/pyhook/" not in path and not any(h in top["name"] for h in HOOK_NAMES), \
            (top, where())
        scopes = dap.request("scopes", {"frameId": top["id"]})["body"]["scopes"]
        var_ref = scopes[0]["variablesReference"] if scopes else 1
        if path == prog:
            ops = ["next", "stepIn", "continue"] + (["stepOut"] if top["name"] != "<module>"
                                                    else [])
        elif path.startswith(str(TT_SRC)):
            ops = ["next", "stepIn", "stepOut", "continue"]
        else:
            ops = ["continue"]  # CPython's own C code: back to the loop
        op = rng.choice(ops)
        burst = requests_for(rng, prog, bp_line, tid, top["id"], var_ref)
        delays = [rng.uniform(0, 0.015) for _ in burst]
        history.append((op, [c for c, _ in burst], [round(x * 1000, 1) for x in delays]))
        after = len(dap.events)
        seqs = [dap.send_request(op, {"threadId": tid})]
        for (cmd, args), delay in zip(burst, delays):
            time.sleep(delay)  # the random moment, not a wait for anything
            seqs.append(dap.send_request(cmd, args))
        for s in seqs:
            dap.wait_response(s, timeout=SLOW, check=False)
        i, stop = dap.stopped(after=after)
        paused = "pause" in history[-1][1]
        expected = {"breakpoint", "function breakpoint"} | ({"pause"} if paused else set()) | \
            ({"step"} if op != "continue" else set())
        assert stop["reason"] in expected, (stop, where())
        said = dap.outputs()
        assert "gdb died" not in said and "session ended" not in said, (said[-500:], where())
        assert not [e for e in dap.events[after:] if e["event"] in ("terminated", "exited")], \
            where()
    dap.finish()
