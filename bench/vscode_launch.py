"""How long F5 on 'tdebug: SCRIPT (Python + C++)' takes to reach the
breakpoints: the compound ('tdebug vscode --compound') with the
symbolLoadInfo tdebug writes, against the same configuration with VS Code's
default (loadAll: true: gdb reads the symbols of every library, ~300 once
torch is imported), and against the one "tdebug" configuration ('tdebug
vscode', the default: 'tdebug dap').

Each compound run is the whole compound as tests/e2e/vscode_util.py runs it
(gdb driven like the C/C++ extension, debugpy through DAP), each "tdebug"
run the configuration given to 'tdebug dap' as VS Code gives it
(vscode_util.VSCodeTdebug), on a script that imports torch and then calls
tinytensor's C core.  Medians of RUNS runs per variant, alternated; the
machine is noisy, so read the ratios (to the compound as tdebug writes it).
"""
import copy
import os
import pathlib
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("B", str(ROOT / "build"))

from conftest import Procs, run  # noqa: E402
from vscode_util import (EventLog, MIEngine, VSCodeTdebug, Workspace,  # noqa: E402
                         attach_debugpy, follow_python, kill_adapters, sample_breakpoints,
                         sample_workspace)

RUNS = int(os.environ.get("RUNS", "3"))
TDEBUG = str(pathlib.Path(os.environ["B"]) / "tdebug")


def one_run(ws, gdb_conf, py_conf, task, tmp):
    log = EventLog()
    procs = Procs()
    py_bps, c_bps = sample_breakpoints(ws, "bench_main.py")
    t0 = time.monotonic()
    gdb = MIEngine(gdb_conf, log, tmp / "gdb.log")
    try:
        gdb.start(procs)
        gdb.launch(c_bps)
        assert task().returncode == 0
        dap = attach_debugpy(py_conf, py_bps, tmp / "dap.log")
        try:
            follow_python(dap, log)
        finally:
            dap.close()
        assert gdb.wait_exit() == 0
        t_exit = time.monotonic()
    finally:
        gdb.close()
        procs.cleanup()
        kill_adapters(py_conf["connect"]["port"])
    assert [k for _, k, _ in log.events] == ["python", "c"], log.events
    return log.events[0][2]["t"] - t0, log.events[1][2]["t"] - t0, t_exit - t0


def one_tdebug_run(ws, tmp):
    """The "tdebug" configuration through 'tdebug dap': (to the Python
    breakpoint, to the C one, to exit) in seconds."""
    procs = Procs()
    py_bps, c_bps = sample_breakpoints(ws, "bench_main.py")
    t0 = time.monotonic()
    code = VSCodeTdebug(TDEBUG, procs, tmp, ws, "tdebug: bench_main.py (Python + C++)")
    try:
        code.start(py_bps + c_bps)
        times, after = [], 0
        for _ in range(2):
            i, stop = code.dap.stopped(after=after)
            times.append(time.monotonic() - t0)
            assert stop["reason"] == "breakpoint", stop
            after = i + 1
            code.dap.continue_(stop["threadId"])
        assert code.dap.wait_event("exited")["body"]["exitCode"] == 0
        times.append(time.monotonic() - t0)
        code.dap.finish()
    finally:
        code.close()
        procs.cleanup()
    return times


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        ws = sample_workspace(tmp / "ws")
        (ws / "bench_main.py").write_text(
            "import torch\nimport tinytensor\n"
            "x = torch.ones(2) + 1  # PYTHON-BREAKPOINT\n"
            "assert repr(tinytensor.ones(2) + 1) == 'tensor([2., 2.])'\n")
        run([TDEBUG, "vscode", "--compound", "--workspace", str(ws), "--program", "bench_main.py"], check=True)
        single = sample_workspace(tmp / "single")
        (single / "bench_main.py").write_text((ws / "bench_main.py").read_text())
        run([TDEBUG, "vscode", "--workspace", str(single), "--program", "bench_main.py"], check=True)
        w = Workspace(ws)
        gdb_conf = w.config("tdebug: bench_main.py (C++, gdb)")
        py_conf = w.config("tdebug: bench_main.py (Python, debugpy)")
        default = copy.deepcopy(gdb_conf)
        default["symbolLoadInfo"] = {"loadAll": True, "exceptionList": ""}
        task = lambda: w.run_task(py_conf["preLaunchTask"])  # noqa: E731
        results = {"tdebug": [], "loadAll": [], "single": []}
        for _ in range(RUNS):
            results["tdebug"].append(one_run(ws, gdb_conf, py_conf, task, tmp))
            results["loadAll"].append(one_run(ws, default, py_conf, task, tmp))
            results["single"].append(one_tdebug_run(single, tmp))
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in results.items()}
        print(f"vscode launch, import torch + a tinytensor add, median of {RUNS} runs:")
        for what, i in (("to the Python breakpoint", 0), ("to the C breakpoint", 1), ("to exit", 2)):
            a, b, c = med["tdebug"][i], med["loadAll"][i], med["single"][i]
            print(f"  {what:26s} compound, tdebug symbolLoadInfo {a:6.2f} s   compound, loadAll "
                  f"(VS Code default) {b:6.2f} s ({b / a:4.2f}x)   \"tdebug\" configuration "
                  f"{c:6.2f} s ({c / a:4.2f}x)")


if __name__ == "__main__":
    main()
