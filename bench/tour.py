"""tdebug tour --batch (five stops, each with native and Python stacks and
its explanation) against the plain program and against plain gdb stopping
at the same functions with a backtrace at each (gdb's default symbol
loading, no Python frames).  Shows what the tour costs over the program
and that it is no slower than doing it by hand in gdb."""
import os
import tempfile

from benchlib import PYTHON, TDEBUG, compare

code = "import torch; x = torch.ones(2) + 1; print(x)"
functions = ["PyInit__C", "initModule", "at::_ops::add_Tensor::call",
             "at::native::structured_ufunc_add_CPU::impl"]
with tempfile.NamedTemporaryFile("w", prefix="tdebug-bench-", suffix=".gdb", delete=False) as f:
    f.write("set breakpoint pending on\nset debuginfod enabled off\nset pagination off\n")
    for fn in functions:
        f.write(f"break {fn}\ncommands\nbt\ncontinue\nend\n")
    f.write("run\n")
    script = f.name
try:
    m = compare("import torch; torch.ones(2) + 1: tdebug tour --batch", [
        ("plain python -c '...'", [PYTHON, "-c", code]),
        ("tdebug tour --batch", [TDEBUG, "tour", "--batch", "--python", PYTHON]),
        ("gdb -batch, 4 breakpoints, bt at each", ["gdb", "-nx", "-q", "-batch", "-x", script,
                                                  "--args", PYTHON, "-c", code]),
    ])
finally:
    os.unlink(script)
names = list(m)
print(f"  ratio tour/plain program: {m[names[1]] / m[names[0]]:.2f}x")
print(f"  ratio tour/plain gdb:     {m[names[1]] / m[names[2]]:.2f}x")
