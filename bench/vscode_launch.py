"""How long F5 on 'tdebug: SCRIPT (Python + C++)' takes to reach the
breakpoints with the symbolLoadInfo tdebug writes, against the same
configuration with VS Code's default (loadAll: true: gdb reads the symbols
of every library, ~300 once torch is imported).

Each run is the whole compound as tests/e2e/vscode_util.py runs it (gdb
driven like the C/C++ extension, debugpy through DAP) on a script that
imports torch and then calls tinytensor's C core.  Medians of
RUNS runs per variant, alternated; the machine is noisy, so read the ratio.
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
from vscode_util import (EventLog, MIEngine, Workspace, attach_debugpy,  # noqa: E402
                         follow_python, kill_adapters, sample_breakpoints,
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


def main():
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        ws = sample_workspace(tmp / "ws")
        (ws / "bench_main.py").write_text(
            "import torch\nimport tinytensor\n"
            "x = torch.ones(2) + 1  # PYTHON-BREAKPOINT\n"
            "assert repr(tinytensor.ones(2) + 1) == 'tensor([2., 2.])'\n")
        run([TDEBUG, "vscode", "--compound", "--workspace", str(ws), "--program", "bench_main.py"], check=True)
        w = Workspace(ws)
        gdb_conf = w.config("tdebug: bench_main.py (C++, gdb)")
        py_conf = w.config("tdebug: bench_main.py (Python, debugpy)")
        default = copy.deepcopy(gdb_conf)
        default["symbolLoadInfo"] = {"loadAll": True, "exceptionList": ""}
        task = lambda: w.run_task(py_conf["preLaunchTask"])  # noqa: E731
        results = {"tdebug": [], "loadAll": []}
        for _ in range(RUNS):
            results["tdebug"].append(one_run(ws, gdb_conf, py_conf, task, tmp))
            results["loadAll"].append(one_run(ws, default, py_conf, task, tmp))
        med = {k: [statistics.median(r[i] for r in v) for i in range(3)] for k, v in results.items()}
        print(f"vscode launch compound, import torch + a tinytensor add, median of {RUNS} runs:")
        for what, i in (("to the Python breakpoint", 0), ("to the C breakpoint", 1), ("to exit", 2)):
            a, b = med["tdebug"][i], med["loadAll"][i]
            print(f"  {what:26s} tdebug symbolLoadInfo {a:6.2f} s   loadAll (VS Code default) "
                  f"{b:6.2f} s   ratio {b / a:4.2f}x")


if __name__ == "__main__":
    main()
