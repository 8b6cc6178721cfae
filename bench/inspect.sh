#!/bin/sh
# tdebug inspect against nm on the biggest objects of Debian's torch: the
# whole process, median of several runs, in the same run; prints ratios.
#   B=build PYTHON=/usr/bin/python3 bench/inspect.sh [RUNS]
B=${B:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
exec "$PYTHON" - "$B/tdebug" "${1:-15}" <<'PY'
import os, statistics, subprocess, sys, time

tdebug, runs = sys.argv[1], int(sys.argv[2])
libdir = "/usr/lib/x86_64-linux-gnu"
targets = [os.path.realpath(p) for p in (
    "/usr/lib/python3/dist-packages/torch/_C.cpython-311-x86_64-linux-gnu.so",
    f"{libdir}/libtorch_python.so.1.13", f"{libdir}/libtorch_cpu.so.1.13")]
targets = [t for t in targets if os.path.exists(t)]
if not targets:
    print("bench/inspect: Debian's torch is not installed (python3-torch); nothing to measure")
    sys.exit(0)


def median_ms(cmd):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


print(f"inspect: whole-process time, median of {runs} runs (lower is better)")
print(f"{'object':36} {'tdebug inspect':>15} {'nm -D --plugin':>15} {'nm -D':>9}  ratios")
for t in targets:
    ours = median_ms([tdebug, "inspect", t])
    nm_np = median_ms(["nm", "-D", "--plugin", "/dev/null", t])
    nm = median_ms(["nm", "-D", t])
    print(f"{os.path.basename(t):36} {ours:12.1f} ms {nm_np:12.1f} ms {nm:6.1f} ms  "
          f"nm/tdebug {nm / ours:.1f}x, nm --plugin/tdebug {nm_np / ours:.1f}x")
PY
