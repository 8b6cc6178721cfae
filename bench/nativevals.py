"""The tensor layout of a torch build: its first calibration against a
plain 'import torch' (the helper process pays one; issue 12's target: the
whole calibration under 2 s), then the cached path (every later process of
the same build), and the decoding of one tensor from memory.

Timings come from build/tests/tools/nativevals_bench (tests/tools/
nativevals_bench.c), interleaved with 'python3 -c "import torch"' so the
noisy machine weighs on both alike.  BENCH_RUNS sets the runs (default 5).
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import BUILD, PYTHON

TOOL = os.path.join(BUILD, "tests", "tools", "nativevals_bench")
TARGET = r"""
import sys, torch
x = torch.arange(1000, dtype=torch.float32).reshape(10, 100).t()[3:, 2:]
print(id(x), flush=True)
sys.stdin.read()
"""


def tool(*args, env=None):
    r = subprocess.run([TOOL, *args], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"bench: {TOOL} {' '.join(args)} failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def timed(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    if not os.access(TOOL, os.X_OK):
        sys.exit(f"bench: {TOOL} is not built (make {TOOL})")
    runs = int(os.environ.get("BENCH_RUNS", "5"))
    torch_dir = os.path.dirname(os.path.dirname(subprocess.run(
        [PYTHON, "-c", "import torch, sys; sys.stdout.write(torch.__file__)"],
        capture_output=True, text=True, check=True).stdout))
    imports, calibrations = [], []
    timed([PYTHON, "-c", "import torch"])  # warm the page cache
    for _ in range(runs):
        imports.append(timed([PYTHON, "-c", "import torch"]))
        calibrations.append(tool("calibrate", PYTHON, torch_dir)["seconds"])
    imp, cal = statistics.median(imports), statistics.median(calibrations)
    print(f"== tensor layout of a torch build (median of {runs} interleaved runs)")
    baseline = 'python3 -c "import torch" (baseline)'
    print(f"  {baseline:<44} {imp:6.2f} s")
    print(f"  {'first calibration (helper + probes + solve)':<44} {cal:6.2f} s  {cal / imp:5.2f}x"
          f"   target < 2 s: {'met' if cal < 2 else 'NOT met'}")

    # The cached path and decoding, on a live process of the same build.
    cache = tempfile.mkdtemp(prefix="tdebug-bench-")
    env = dict(os.environ, XDG_CACHE_HOME=cache)
    target = subprocess.Popen([PYTHON, "-c", TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        obj = target.stdout.readline().strip()
        first = tool("open", str(target.pid), env=env)
        opens = [tool("open", str(target.pid), env=env)["ms"] for _ in range(runs)]
        decode = tool("decode", str(target.pid), obj, "1000", env=env)
    finally:
        target.kill()
        target.wait()
        shutil.rmtree(cache, ignore_errors=True)
    print(f"  {'first open of a process (' + first['origin'] + ')':<44} {first['ms'] / 1000:6.2f} s")
    print(f"  {'later opens (cache read, build-ids)':<44} {statistics.median(opens):6.1f} ms"
          f"  {statistics.median(opens) / 1000 / imp:7.4f}x")
    print(f"  {'decode one tensor (8 values, strided)':<44} {decode['ms_per_decode']:6.3f} ms"
          f"  ({decode['reads_per_decode']:.0f} memory reads)")


if __name__ == "__main__":
    main()
