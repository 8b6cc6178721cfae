"""tdebug run to PyInit__C of torch._C, against a plain 'import torch' and
against plain gdb with a pending breakpoint on PyInit__C (gdb's default
symbol loading), each printing a backtrace at the stop.  Issue target:
tdebug within 1.3x of the plain import."""
from benchlib import PYTHON, TDEBUG, compare

code = "import torch"
m = compare("import torch: tdebug run --batch --stop-at-import torch._C", [
    ("plain python -c 'import torch'", [PYTHON, "-c", code]),
    ("tdebug run --batch --stop-at-import torch._C",
     [TDEBUG, "run", "--batch", "--stop-at-import", "torch._C", "--", PYTHON, "-c", code]),
    ("gdb -batch, pending break PyInit__C, bt",
     ["gdb", "-nx", "-q", "-batch", "-ex", "set breakpoint pending on", "-ex", "break PyInit__C",
      "-ex", "run", "-ex", "bt", "-ex", "continue", "--args", PYTHON, "-c", code]),
])
names = list(m)
print(f"  ratio tdebug/plain import: {m[names[1]] / m[names[0]]:.2f}x (target <= 1.3x)")
print(f"  ratio gdb/plain import:    {m[names[2]] / m[names[0]]:.2f}x")
print(f"  ratio tdebug/gdb:          {m[names[1]] / m[names[2]]:.2f}x")
