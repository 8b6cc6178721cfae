#!/bin/sh
# bench/ps.sh: what 'tdebug ps' costs next to plain ps(1), on this machine
# as it is, plus one Python process that imported torch (313 libraries in
# its maps).  'tdebug ps' reads stat, status, cmdline, exe and maps of
# every process, the ELF symbols of unknown executables, and tries a
# PTRACE_SEIZE on a child of its own; ps reads stat and cmdline.
# Prints medians of RUNS runs and the ratio; run by 'make bench'.
set -eu
B=${B:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
RUNS=${RUNS:-15}
TDEBUG="$B/tdebug"

ready=$(mktemp)
"$PYTHON" -c 'import sys, time, torch
open(sys.argv[1], "w").write("ready")
time.sleep(600)' "$ready" &
torch_pid=$!
trap 'kill $torch_pid 2>/dev/null; rm -f "$ready"' EXIT INT TERM
while [ ! -s "$ready" ]; do
    kill -0 $torch_pid 2>/dev/null || { echo "bench/ps.sh: the torch program died" >&2; exit 1; }
    sleep 0.1
done

# median wall time in ms of RUNS runs of "$@" (output discarded)
median_ms() {
    i=0
    while [ $i -lt "$RUNS" ]; do
        start=$(date +%s%N)
        "$@" >/dev/null 2>&1
        end=$(date +%s%N)
        echo $(( (end - start) / 1000 ))
        i=$((i + 1))
    done | sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] / 1000 }'
}

nproc_now=$(ls -d /proc/[0-9]* | wc -l)
plain=$(median_ms ps -eo pid,ppid,user,args)
all=$(median_ms "$TDEBUG" ps --all)
json=$(median_ms "$TDEBUG" ps --all --json)
check=$(median_ms "$TDEBUG" ps --check "$torch_pid")
echo "bench ps: $nproc_now processes, one with torch loaded; medians of $RUNS runs"
printf '  ps -eo pid,ppid,user,args   %8s ms\n' "$plain"
printf '  tdebug ps --all             %8s ms   %sx ps\n' "$all" \
    "$(awk -v a="$all" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')"
printf '  tdebug ps --all --json      %8s ms   %sx ps\n' "$json" \
    "$(awk -v a="$json" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')"
printf '  tdebug ps --check PID       %8s ms   %sx ps\n' "$check" \
    "$(awk -v a="$check" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')"
