"""Python -> C -> Python -> C: a C loop that calls a Python function, which
calls into C again.

tinytensor.apply(t, fn) runs its element loop in C (tt_apply_ in
samples/tinytensor/csrc/core/tt_native_cpu.c) and calls fn for every
element through a trampoline (call_python in csrc/python/tt_python_apply.c),
as torch's Tensor.apply_ does.  Here fn adds tensors, so at tt_native_add
the stack is: add kernel, bindings, the lambda's Python frame, the
trampoline, the C loop, the bindings, this file's Python frames.

Try (P=/usr/bin/python3; build first with 'make'):

    tdebug run -b tt_native_add -- P samples/callback_native.py
    gdb -ex 'set breakpoint pending on' -ex 'break tt_native_add' -ex run -ex bt \\
        --args P samples/callback_native.py

Prints tensor([3., 5., 7.]).
"""
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "samples", "tinytensor"))

import tinytensor  # noqa: E402


def double_plus_one(v):
    # Back into C: a 0-D tensor plus a number is tt_native_add again.
    return (tinytensor.full((), v) + v).item() + 1


def main():
    x = tinytensor.tensor([1.0, 2.0, 3.0])
    print(tinytensor.apply(x, double_plus_one))


main()
