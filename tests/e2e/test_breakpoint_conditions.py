"""What decides whether a breakpoint's hit stops (issue 23): conditions,
ignore counts, hit conditions and log points, at the prompt and on the
command line, in Python (evaluated by tdebug's hook inside the process) and
in C (gdb's condition; tinytensor, built with -g).  The DAP side is
tests/e2e/test_dap_client.py::test_breakpoint_options."""
import json
import re
import textwrap

import pytest

from conftest import PYTHON, run
from tinytensor_util import tt_env

LOOP = textwrap.dedent("""\
    total = 0
    for i in range(10):
        total += i  # line 3
    print("total", total)
""")

# ones_or_zeros(..., value) runs once a call: value 1 for ones, 0 for zeros.
TT = textwrap.dedent("""\
    import tinytensor
    for i in range(8):
        x = (tinytensor.ones if i % 2 else tinytensor.zeros)(2)
    print("done")
""")

# Every test runs light and ordinary (issue 27): light sessions keep every
# behaviour.
pytestmark = pytest.mark.usefixtures("light_sessions")


def session(tdebug, tmp_path, commands, *args, env=None, json_out=False):
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, "run"] + (["--json"] if json_out else []) + ["-x", str(cmds)] + list(args),
            env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_break_if_on_the_command_line_stops_when_the_python_condition_holds(tdebug, tmp_path):
    loop = script(tmp_path, "loop.py", LOOP)
    r = session(tdebug, tmp_path, ["py-print i", "py-print total", "continue"],
                "-b", f"{loop}:3 if i == 4 and total == 6", "--", PYTHON, loop, json_out=True)
    evs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    stops = [e for e in evs if e["event"] == "stopped"]
    assert len(stops) == 1 and stops[0]["reason"] == "python-breakpoint"
    printed = {e["name"]: e["value"] for e in evs if e["event"] == "py-print"}
    assert printed == {"i": "4", "total": "6"}, r.stdout
    assert not any(e["event"] == "warning" for e in evs), r.stdout


def test_condition_ignore_and_log_points_at_the_prompt_in_python(tdebug, tmp_path):
    loop = script(tmp_path, "loop.py", LOOP)
    r = session(tdebug, tmp_path, [
        "condition 1 i % 3 == 0",   # hits at i 3, 6, 9 (i 0 is this stop)
        "ignore 1 1",               # i 3 goes
        "info breakpoints",
        "continue",
        "py-print i",
        "condition 1 nosuch",       # raises: stops and says why
        "continue",
        "delete 1",
        "log loop.py:3 i is {i}, total {total} {{literal}}",
        'dprintf loop.py:4,"sum %d\\n", total',
        "continue",
    ], "-b", f"{loop}:3", "--", PYTHON, loop)
    out = r.stdout
    assert f"{loop}:3 if i % 3 == 0 (ignore next 1 hits)" in out
    assert "global 'i' = 6" in out
    assert ("stopped at Python breakpoint 1 (" + loop + ":3): the condition raised: NameError: "
            "name 'nosuch' is not defined") in out
    # the log point after the stop above (at i 7, whose line event is past),
    # then the dprintf; the program's own output shares the terminal
    assert re.findall(r"i is \d+, total \d+ \{literal\}", out) == [
        "i is 8, total 28 {literal}", "i is 9, total 36 {literal}"]
    assert "sum 45\n" in out
    assert "never hit" not in r.stderr + out


LOOP_MID = textwrap.dedent("""\
    total = 0
    for i in range(10):
        total += i  # line 3
        if i == 1:
            total += 0  # line 5
    print("total", total)
""")


def test_python_ignore_count_survives_other_edits(tdebug, tmp_path):
    """'ignore 1 3' lets 3 hits go in all, whatever is edited between them:
    another breakpoint added, breakpoint 1's condition set, it disabled and
    enabled again (gdb keeps an ignore count and hit counts across these)."""
    loop = script(tmp_path, "loop.py", LOOP_MID)
    r = session(tdebug, tmp_path, [
        "ignore 1 3",            # at i 0: i 1, 2, 3 go
        "break loop.py:5",
        "continue",              # line 5 at i 1 (line 3 at i 1 went)
        "break loop.py:6",
        "condition 1 i >= 0",
        "disable 1",
        "enable 1",
        "continue",              # i 2 and 3 go: line 3 at i 4
        "py-print i",
        "delete",
        "continue",
    ], "-b", f"{loop}:3", "--", PYTHON, loop, json_out=True)
    evs = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    stops = [e for e in evs if e["event"] == "stopped"]
    assert [s["stack"][0]["line"] for s in stops] == [3, 5, 3], r.stdout
    printed = [e["value"] for e in evs if e["event"] == "py-print"]
    assert printed == ["4"], r.stdout


def test_native_condition_ignore_and_log_point(tdebug, tmp_path):
    tt = script(tmp_path, "tt.py", TT)
    r = session(tdebug, tmp_path, [
        "print value",
        "ignore 1 1",               # the call at i 3 goes
        "continue",
        "print i",                  # gdb's: no such symbol in C, said
        "py-print i",
        "delete 1",
        "log ones_or_zeros v={value}",
        "continue",
    ], "-b", "ones_or_zeros if value == 1", "--symbols", "tinytensor", "--", PYTHON, tt,
        env=tt_env())
    out = r.stdout
    assert "$1 = 1" in out
    assert "'i' = 5" in out                      # i 1 stopped, i 3 ignored, i 5 stopped
    assert re.findall(r"v=\d", out) == ["v=0", "v=1"]
    assert "done" in out


def test_bad_hit_condition_and_unknown_breakpoint_are_said(tdebug, tmp_path):
    loop = script(tmp_path, "loop.py", LOOP)
    r = session(tdebug, tmp_path, ["condition 7 i > 1", "ignore 1 x", "continue"],
                "-b", f"{loop}:3", "--", PYTHON, loop)
    assert "no breakpoint 7 ('info breakpoints' lists them)" in r.stdout + r.stderr
    assert "usage: ignore N COUNT" in r.stdout + r.stderr


FN = textwrap.dedent("""\
    def f(n):
        acc = 0
        for k in range(n):
            acc += k  # line 4
        return acc
    print("f", f(5))
""")


def test_py_eval_and_py_exec_run_python_in_the_frame_at_a_python_stop(tdebug, tmp_path):
    fn = script(tmp_path, "fn.py", FN)
    r = session(tdebug, tmp_path, ["py-eval acc * 100 + k", "py-exec acc = 1000",
                                   "py-eval [acc, k]", "py-eval nosuch", "delete 1", "continue"],
                "-b", f"{fn}:4 if k == 3", "--", PYTHON, fn)
    out = r.stdout + r.stderr
    assert "\n303\n" in out and "\n[1000, 3]\n" in out
    assert "NameError: name 'nosuch' is not defined" in out
    assert "f 1007" in out  # the local was written back: 1000 + 3 + 4


def test_py_eval_at_a_native_stop_says_why_it_cannot_run_code(tdebug, tmp_path):
    tt = script(tmp_path, "tt.py", TT)
    r = session(tdebug, tmp_path, ["py-eval i + 1", "py-print i"],
                "-b", "ones_or_zeros", "--symbols", "tinytensor", "--", PYTHON, tt, env=tt_env())
    out = r.stdout + r.stderr
    assert "tdebug runs Python code only at a Python breakpoint or step" in out
    assert "'i' = 0" in out  # a name is still read from memory
