"""What a breakpoint that does not stop costs (issue 23): a Python line run
N times (default 10^5) with a breakpoint whose condition is always false,
and with a log point there (one output event a hit), against the same loop
with no breakpoint, under tdebug dap and under debugpy (Debian's, its
adapter on stdio, the layout VS Code uses), in one interleaved run.

The program times its own loop (time.perf_counter around it) and writes
the seconds to a file: start-up, the debugger's and the interpreter's, is
left out.  A log point's run also waits for every output event to reach
the client before the session ends (counted, and said).

Medians of RUNS runs (default 3), the configurations alternated in each;
the machine is noisy, so read the ratios (each against the plain loop of
the same run).
"""
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
os.environ.setdefault("B", str(ROOT / "build"))

from benchlib import DebugpyDap, TdebugDap, load  # noqa: E402
from conftest import PYTHON, clean_env  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", os.environ.get("RUNS", "3")))
N = int(os.environ.get("N", "100000"))
TIMEOUT = 600
QUIET = 5

PROGRAM = f"""\
import sys, time
t0 = time.perf_counter()
total = 0
for i in range({N}):
    total += i  # BP (line 5)
t1 = time.perf_counter()
with open(sys.argv[1], "w") as f:
    f.write(repr(t1 - t0))
"""
BP_LINE = 5

CASES = {
    "no breakpoint": None,
    "condition false": {"line": BP_LINE, "condition": "i < 0"},
    "log point": {"line": BP_LINE, "logMessage": "i={i}"},
}


def plain(script, out):
    subprocess.run([PYTHON, script, out], check=True, env=clean_env(), timeout=TIMEOUT)


def session(adapter, script, out, bp):
    """Run SCRIPT under ADAPTER ("tdebug" or "debugpy") with BP (a DAP
    SourceBreakpoint, or None) until it ends; the log lines seen."""
    with (TdebugDap if adapter == "tdebug" else DebugpyDap)(script, args=[out]) as d:
        c, launch = d.client, d.launch
        if bp:
            r = c.request("setBreakpoints", {"source": {"path": script}, "breakpoints": [bp]})
            assert r["body"]["breakpoints"][0]["verified"], r
        c.configuration_done()
        c.wait_response(launch, timeout=TIMEOUT)
        # Follow the events as they come (the client's own wait scans from
        # an index: from the last one seen, so 10^5 events cost O(n)).
        seen, logs, ended = 0, 0, False
        quiet_since = time.monotonic()
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            events = c.events[seen:]
            seen += len(events)
            for m in events:
                ended |= m.get("event") == "terminated"
                logs += m.get("event") == "output" and \
                    m["body"].get("output", "").startswith("i=")
            if events:
                quiet_since = time.monotonic()
            # a log point: every line that comes, until all N did or none
            # came for QUIET s (debugpy drops some when the program ends:
            # said, not waited for)
            if ended and (not (bp and "logMessage" in bp) or logs >= N or
                          time.monotonic() - quiet_since > QUIET):
                break
            time.sleep(0.02)
        assert ended, "the session never ended"
        return logs


def loop_seconds(out):
    p = pathlib.Path(out)
    seconds = float(p.read_text())
    p.unlink()  # each run writes its own
    return seconds


def main():
    times = {}
    logs = {}
    with tempfile.TemporaryDirectory() as d:
        tmp = pathlib.Path(d)
        script = str(tmp / "loop.py")
        pathlib.Path(script).write_text(PROGRAM)
        out = str(tmp / "seconds")
        for _ in range(RUNS):
            plain(script, out)
            times.setdefault("plain python", []).append(loop_seconds(out))
            for adapter in ("tdebug", "debugpy"):
                for case, bp in CASES.items():
                    key = f"{adapter}: {case}"
                    logs[key] = session(adapter, script, out, bp)
                    times.setdefault(key, []).append(loop_seconds(out))
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["plain python"]
    print(f"== a Python line run {N} times: the loop's own time (median of {RUNS} "
          f"runs, interleaved; {load()})")
    print(f"  {'':<28} {'':>12}  {'vs plain':>9}  {'vs the same debugger, no bp':>27}")
    for k, v in med.items():
        note = f"  ({logs[k]} of {N} log lines reached the client)" if logs.get(k) else ""
        own = med.get(k.split(":")[0] + ": no breakpoint", base)
        print(f"  {k:<28} {v * 1000:9.1f} ms  {v / base:8.1f}x  {v / own:26.1f}x{note}")
    for case in CASES:
        t, p = med[f"tdebug: {case}"], med[f"debugpy: {case}"]
        print(f"  {case}: tdebug / debugpy = {t / p:.2f}")


if __name__ == "__main__":
    main()
