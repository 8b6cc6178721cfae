#!/bin/sh
# Overhead of the preloaded library (LD_AUDIT) on 'import torch', against the
# plain import in the same run: with nothing matching (the cost of watching
# every object the import maps, ~300) and with the torch._C match only
# logged.  Runs are interleaved so the machine's noise hits all three alike;
# prints the median of each and the ratios.  Target: within noise, < 2%.
#
#   B=build PYTHON=/usr/bin/python3 RUNS=11 bench/preload.sh
set -eu
B=${B:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-11}
LIB=$(cd "$B" && pwd)/libtdebug-preload.so
[ -f "$LIB" ] || { echo "bench/preload.sh: $LIB is not built; run 'make'" >&2; exit 1; }

exec "$PYTHON" - "$PYTHON" "$LIB" "$RUNS" <<'PY'
import os, statistics, subprocess, sys, time

python, lib, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
base = {k: v for k, v in os.environ.items()
        if not k.startswith("TDEBUG_") and k not in ("LD_AUDIT", "LD_PRELOAD")}
cases = {
    "plain import torch": dict(base),
    "library, nothing matches": dict(base, LD_AUDIT=lib, TDEBUG_WATCH="tdebug_bench_nothing"),
    "library, match logged": dict(base, LD_AUDIT=lib, TDEBUG_ACTION="log"),
}
times = {name: [] for name in cases}
cpu = {name: [] for name in cases}
cmd = [python, "-c", "import torch"]
subprocess.run(cmd, check=True)  # warm the page cache
for _ in range(runs):
    for name, env in cases.items():
        t = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        times[name].append(time.perf_counter() - t)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode:
            sys.exit(f"bench/preload.sh: {name}: exit status {p.returncode}")
        # CPU time is less disturbed than wall time by other work on the machine.
        cpu[name].append(usage.ru_utime + usage.ru_stime)

plain, plain_cpu = (statistics.median(d["plain import torch"]) for d in (times, cpu))
print(f"preload: median of {runs} interleaved runs of '{' '.join(cmd)}'")
for name in cases:
    med, med_cpu = statistics.median(times[name]), statistics.median(cpu[name])
    print(f"  {name:26s} wall {med:6.3f} s  ratio {med / plain:5.3f}   "
          f"cpu {med_cpu:6.3f} s  ratio {med_cpu / plain_cpu:5.3f}")
PY
