"""The tour's program on tinytensor: `import tinytensor; tinytensor.ones(2) + 1`.

The two lines of import_walkthrough.py, on a library laid out like torch
but built with full debug info (-O0 -g3), so every native step has a
source line (samples/tinytensor/csrc/...):

    import tinytensor       tinytensor/__init__.py imports tinytensor._C: the
                            loader maps _C...so and, through its RUNPATH
                            $ORIGIN/lib, lib/libtt_python.so and lib/libtt_core.so;
                            libtt_core's constructor (tt_register.c) registers
                            the kernels; PyInit__C (stub.c) calls tt_init_module
                            (tt_python_module.c).
    tinytensor.ones(2)      tt_python_ones -> tt_empty, then tt_ops_fill__call
                            -> the dispatcher -> tt_native_fill_
    ... + 1                 PyNumber_Add -> tt_pytensor_add (the bindings) ->
                            tt_ops_add_call -> tt_dispatcher_lookup ->
                            tt_native_add -> add_kernel_float64's loop

Build first with 'make' (or make -C samples/tinytensor OUT=DIR and
PYTHONPATH=DIR).  Try (P=/usr/bin/python3):

    tdebug tour tinytensor
    tdebug run --stop-at-import tinytensor._C -- P samples/tinytensor_walkthrough.py
    tdebug run -b tt_native_add -- P samples/tinytensor_walkthrough.py
    gdb -ex 'set breakpoint pending on' -ex 'break tt_native_add' -ex run -ex bt \\
        --args P samples/tinytensor_walkthrough.py

Prints tensor([2., 2.]).
"""
import os
import sys

# The build tree's tinytensor, unless PYTHONPATH names another.
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "samples", "tinytensor"))

import tinytensor  # noqa: E402

x = tinytensor.ones(2) + 1
print(x)
