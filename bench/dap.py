"""tdebug dap: how long from 'launch' to the first stop at a C++ function
breakpoint in torch, against the compound route's gdb side in the same
run, and how long a step takes from request to 'stopped'.

- The compound route's gdb side is what 'tdebug vscode' writes for the C/C++
  extension, driven the way its MIEngine drives gdb
  (tests/e2e/vscode_util.MIEngine: its setupCommands, symbolLoadInfo,
  stop-on-solib-events and the libraries it then loads at every stop), on
  the script itself (without debugpy, which would wait for its client).
- Both stop at at::_ops::add_Tensor::call, reached by
  'import torch; x = torch.ones(2) + 1', and the time is from starting the
  debugger (the adapter / gdb) to the first stop, as F5 is.
- Stepping: at tinytensor's C source (built -O0 -g3), 'next', 'stepIn' and
  'stepOut', each from its request to the 'stopped' event.

Medians of RUNS runs (default 3), alternated; the machine is noisy, so read
the ratio.  The step target is a median under 200 ms.
"""
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("B", str(ROOT / "build"))

from benchlib import TDEBUG, TdebugDap, first_stop, load, ratio_table, rounds  # noqa: E402
from conftest import Procs, run  # noqa: E402
from tinytensor_util import TT_OUT, TT_SRC, marked_line  # noqa: E402
from vscode_util import EventLog, MIEngine, Workspace  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", os.environ.get("RUNS", "3")))
FUNCTION = "at::_ops::add_Tensor::call"
STEPS = 5


class FunctionMIEngine(MIEngine):
    """MIEngine with function breakpoints (what a function breakpoint in
    the C/C++ extension's Breakpoints view sends: -break-insert -f NAME)."""

    def insert_breakpoints(self, names):
        for name in names:
            self.command(f"-break-insert -f {name}")


def gdb_side(conf, script, tmp):
    log = EventLog()
    procs = Procs()
    conf = dict(conf, args=[script])
    gdb = FunctionMIEngine(conf, log, tmp / "gdb.log")
    try:
        t0 = time.monotonic()
        gdb.start(procs)
        gdb.launch([FUNCTION])
        deadline = t0 + 300
        while not log.events and time.monotonic() < deadline:
            time.sleep(0.005)
        assert log.events, "gdb never stopped at the breakpoint (see gdb.log)"
        return log.events[0][2]["t"] - t0
    finally:
        gdb.close()
        procs.cleanup()


def tdebug_side(script, tmp):
    t0 = time.monotonic()
    with TdebugDap(script) as d:
        c = d.client
        c.request("setFunctionBreakpoints", {"breakpoints": [{"name": FUNCTION}]})
        c.configuration_done()  # the program starts here
        c.wait_response(d.launch, timeout=300)
        c.wait_event("stopped", timeout=300)
        return time.monotonic() - t0


def step_latencies(tmp):
    """{request: [seconds]} for next, stepIn, stepOut at tinytensor's C."""
    script = tmp / "tt.py"
    script.write_text("import tinytensor\nfor i in range(50):\n    x = tinytensor.ones(2) + 1\n")
    src = str(TT_SRC / "csrc" / "core" / "tt_ops.c")
    line = marked_line("csrc/core/tt_ops.c", "add dispatch")
    out = {"next": [], "stepIn": [], "stepOut": []}
    with TdebugDap(str(script), symbols="libtt_", env={"PYTHONPATH": str(TT_OUT)}) as d:
        c = d.client
        i, tid = first_stop(c, d.launch, src, [line])
        for _ in range(STEPS):
            for req in ("stepIn", "stepOut", "next"):
                t0 = time.monotonic()
                c.request(req, {"threadId": tid})
                i, ev = c.next_event(("stopped",), timeout=60, after=i + 1)
                out[req].append(time.monotonic() - t0)
                c.stack_trace(tid)  # what a client asks at each stop
            c.continue_(tid)
            i, ev = c.next_event(("stopped",), timeout=60, after=i + 1)
        return out


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        ws = tmp / "ws"
        ws.mkdir()
        script = ws / "bench_add.py"
        script.write_text("import torch\nx = torch.ones(2) + 1\n")
        run([TDEBUG, "vscode", "--compound", "--workspace", str(ws), "--program", "bench_add.py"], check=True)
        w = Workspace(ws)
        gdb_conf = next(c for c in w.launch["configurations"] if c.get("type") == "cppdbg")
        gdb_conf = w.config(gdb_conf["name"])
        times = rounds([("tdebug dap", lambda: tdebug_side(str(script), tmp)),
                        ("compound's gdb (cppdbg)", lambda: gdb_side(gdb_conf, str(script), tmp))],
                       RUNS)
        ratio_table(f"tdebug dap: launch to the first stop at {FUNCTION} "
                    f"(median of {RUNS} runs, alternated; {load()})", times,
                    ["compound's gdb (cppdbg)"])
        steps = step_latencies(tmp)
        print(f"== tdebug dap: request to 'stopped' at tinytensor's C source "
              f"(median of {STEPS}; target under 200 ms)")
        for req, ts in steps.items():
            m = statistics.median(ts) * 1000
            print(f"  {req:<8} {m:7.1f} ms  (range {min(ts) * 1000:.1f}-{max(ts) * 1000:.1f} ms)"
                  f"  {'ok' if m < 200 else 'OVER the 200 ms target'}")


if __name__ == "__main__":
    main()
