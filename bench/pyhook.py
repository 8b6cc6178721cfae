"""What the Python breakpoint library (lib/pyhook/) costs a running program
that has one Python breakpoint armed which never hits: a call-heavy
pure-Python loop (recursive fib) and, on the interpreter with torch, a
small training step (MLP forward + backward + SGD on CPU).

Two measures, side by side:
  wall clock    one process per interpreter, the settings alternating round
                by round (plain, library installed, after 'disable', the
                flag tdebug writes on detach) so that a noisy machine weighs
                on all alike; medians, as ratios to plain.
  instructions  callgrind (valgrind), one process per setting, counting the
                workload alone (client requests start and stop the count):
                what the machine's load cannot change.
The library is installed in-process (ctypes, with the GIL: the same
tdebug_pyhook_install() gdb calls; gdb attached and idle costs nothing,
and only this way can the settings alternate).  The e2e tests cover
loading by gdb.  Interpreters: $PYTHON, then each pyenv CPython 3.12+
(sys.monitoring) the machine has, with their library built
('make pyhook-all').
Issue targets: <= 1.5x on the loop (3.11), <= 1.05x on the torch step,
~1.0x after disable."""
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap

from benchlib import BUILD, MLP_STEP, PYTHON

TARGET = r'''
import ctypes, json, statistics, sys, time

def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

def never_called():
    return 0  # NEVER: the armed breakpoint

# The control block of lib/tdebug_pyhook.h, as far as this needs it; its
# size field checks the layout.
class Bp(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int32), ("enabled", ctypes.c_int32), ("kind", ctypes.c_int32),
                ("line", ctypes.c_int32), ("hits", ctypes.c_uint64), ("bound", ctypes.c_uint64),
                ("file", ctypes.c_char * 512), ("function", ctypes.c_char * 128)]

class Control(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint64), ("abi", ctypes.c_uint32), ("size", ctypes.c_uint32),
                ("py_version", ctypes.c_uint32), ("installed", ctypes.c_int32),
                ("disable", ctypes.c_int32), ("mechanism", ctypes.c_int32),
                ("generation", ctypes.c_uint64), ("applied_generation", ctypes.c_uint64),
                ("sync_slot", ctypes.c_uint64), ("sync_eval_frame", ctypes.c_uint64),
                ("foreign_tracers", ctypes.c_int32), ("n_breakpoints", ctypes.c_int32),
                ("traced_threads", ctypes.c_int32), ("reserved", ctypes.c_int32),
                ("step", ctypes.c_char * 40), ("report", ctypes.c_char * 832),
                ("stats_frames", ctypes.c_uint64), ("stats_traced", ctypes.c_uint64),
                ("error", ctypes.c_char * 256), ("bp", Bp * 64)]

lib_path, mode, fib_n, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
lib = ctypes.PyDLL(lib_path)
ctl = Control.in_dll(lib, "tdebug_pyhook_control")
assert ctl.size == ctypes.sizeof(Control), (ctl.size, ctypes.sizeof(Control))
line = never_called.__code__.co_firstlineno + 1
ctl.bp[0].kind, ctl.bp[0].line, ctl.bp[0].enabled = 1, line, 1
ctl.bp[0].file = __file__.encode()
ctl.bp[0].id = 1
ctl.n_breakpoints = 1
ctl.generation += 1

def install():
    assert lib.tdebug_pyhook_install() == 0 and ctl.installed == 1, ctl.error

def disable():
    # what tdebug writes on detach, sync_slot included (3.12+)
    ctl.disable = 1
    if ctl.sync_slot:
        ctypes.c_uint64.from_address(ctl.sync_slot).value = ctl.sync_eval_frame
    never_called()  # the next Python call applies it
    assert ctl.installed == 0 and ctl.traced_threads == 0

work = {"fib": lambda: fib(fib_n)}
if steps:
    import torch
''' + textwrap.indent(MLP_STEP, "    ") + r'''
    work["torch"] = lambda: [step() for _ in range(steps)]

if mode == "wall":
    def clock(fn):
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    times = {k: {"plain": [], "hooked": [], "after": []} for k in work}
    rounds = int(sys.argv[5])
    for fn in work.values():
        fn()
    for _ in range(rounds):
        for k, fn in work.items():
            times[k]["plain"].append(clock(fn))
        install()
        for k, fn in work.items():
            times[k]["hooked"].append(clock(fn))
        disable()
        for k, fn in work.items():
            times[k]["after"].append(clock(fn))
    out = {k: {p: statistics.median(v) for p, v in d.items()} for k, d in times.items()}
else:
    # under callgrind, instrumentation and collection off until the
    # workload named by argv[6] runs
    cg = ctypes.CDLL(sys.argv[5])
    fn = work[sys.argv[6]]
    fn()
    if mode in ("hooked", "after"):
        install()
    if mode == "after":
        disable()
    cg.tdb_bench_count_start()
    fn()
    cg.tdb_bench_count_stop()
    out = {}
print(json.dumps(out))
'''

# Client requests around the workload: valgrind's own macros, in a helper
# the bench builds (callgrind.h comes with Debian's valgrind package).
COUNTER_C = r'''
#include <valgrind/callgrind.h>
void tdb_bench_count_start(void) { CALLGRIND_START_INSTRUMENTATION; CALLGRIND_TOGGLE_COLLECT; }
void tdb_bench_count_stop(void) { CALLGRIND_TOGGLE_COLLECT; }
'''


def version_of(python):
    out = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:3])"],
                         capture_output=True, text=True, check=True).stdout.split()
    return tuple(int(v) for v in out)


def library(python):
    v = version_of(python)
    path = os.path.join(BUILD, "pyhook", "libtdebug-pyhook-cpython-%d%d.so" % v[:2])
    return path if os.path.exists(path) else None


def interpreters():
    """(label, python, torch?) for $PYTHON and each pyenv CPython 3.12+."""
    out = [(PYTHON, True)]
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("pyenv") else os.path.expanduser("~/.pyenv")
    seen = {version_of(PYTHON)[:2]}
    for exe in sorted(glob.glob(os.path.join(root, "versions", "3.1[2-9].*", "bin", "python3"))):
        v = version_of(exe)
        if v[:2] not in seen:
            seen.add(v[:2])
            out.append((exe, False))
    return out


def run_target(python, lib, args, under=()):
    path = os.path.join(BUILD, "bench-pyhook-target.py")
    with open(path, "w") as f:
        f.write(TARGET)
    r = subprocess.run(list(under) + [python, path, lib] + [str(a) for a in args],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        sys.exit(f"bench: the target failed ({python}):\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1]), r.stderr


def counter():
    """The client-request helper, or None without valgrind."""
    if not shutil.which("valgrind") or not os.path.exists("/usr/include/valgrind/callgrind.h"):
        return None
    src = os.path.join(BUILD, "bench-callgrind-counter.c")
    lib = os.path.join(BUILD, "bench-callgrind-counter.so")
    with open(src, "w") as f:
        f.write(COUNTER_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", lib, src], check=True)
    return lib


def instructions(python, lib, mode, name, fib_n, steps, helper):
    """The instructions workload NAME ran under MODE (callgrind's total of
    what it collected: the workload alone)."""
    _, err = run_target(python, lib, [mode, fib_n, steps if name == "torch" else 0, helper, name],
                        under=["valgrind", "--tool=callgrind", "--instr-atstart=no",
                               "--collect-atstart=no", "--callgrind-out-file=/dev/null"])
    counts = [int(line.split()[-1]) for line in err.splitlines() if "Collected :" in line]
    if len(counts) != 1:
        sys.exit(f"bench: callgrind said no total ({python} {mode} {name}):\n{err}")
    return counts[0]


def main():
    rounds = int(os.environ.get("BENCH_PYHOOK_ROUNDS", "21"))
    helper = counter()
    print("== Python breakpoint library: one armed breakpoint that never hits")
    print(f"   wall clock: median of {rounds} interleaved rounds in one process (plain, installed, "
          f"removed); instructions: callgrind, the workload alone, one process per setting")
    if not helper:
        print("   (no valgrind: instruction counts skipped; 'make deps' installs it)")
    for python, with_torch in interpreters():
        lib = library(python)
        v = version_of(python)
        if not lib:
            print(f"  CPython {'.'.join(map(str, v))} ({python}): no library built, skipped "
                  f"('make pyhook-all')")
            continue
        wall, _ = run_target(python, lib, ["wall", 27, 50 if with_torch else 0, rounds])
        counts = {}
        if helper:
            for mode in ("plain", "hooked", "after"):
                counts[mode] = {name: instructions(python, lib, mode, name, 22, 3, helper)
                                for name in ["fib"] + (["torch"] if with_torch else [])}
        print(f"  CPython {'.'.join(map(str, v))} ({python})")
        for name, what, target in (("fib", "fib(27), call-heavy pure Python", 1.5),
                                   ("torch", "50 MLP training steps (torch, CPU)", 1.05)):
            if name not in wall:
                continue
            m = wall[name]
            line = (f"    {what:<36} plain {m['plain'] * 1e3:7.1f} ms  hooked "
                    f"{m['hooked'] / m['plain']:5.2f}x  after disable {m['after'] / m['plain']:5.2f}x")
            if counts:
                c = {mode: counts[mode][name] for mode in counts}
                line += (f"  | instructions: hooked {c['hooked'] / c['plain']:5.3f}x  after "
                         f"{c['after'] / c['plain']:5.3f}x")
            print(line + (f"  (target <= {target}x)" if v[:2] == (3, 11) else ""))
    if helper:
        print("   (instructions: fib(22); 3 MLP steps)")


main()
