"""A crash in native code: SIGSEGV inside tinytensor's add kernel.

tinytensor.from_blob(address, size) makes a tensor over memory it does not
check, as torch.from_blob (at::from_blob) does.  Handed an address where
nothing is mapped (a stale or made-up pointer, as C extensions and ctypes
code produce), the first read happens deep in C, in add_kernel_float64's
loop (samples/tinytensor/csrc/core/tt_native_cpu.c), and the process dies.
Python prints no traceback: the interpreter never gets control back.

Try (P=/usr/bin/python3; build first with 'make'):

    tdebug run -- P samples/crash_native.py      stops at the signal with the
                                                 mixed Python/C stack
    gdb -ex run -ex bt --args P samples/crash_native.py
                                                 native frames only
    P -X faulthandler samples/crash_native.py    Python frames only

Ends killed by SIGSEGV (a shell shows exit status 139).
"""
import os
import sys

sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "samples", "tinytensor"))

import tinytensor  # noqa: E402

# Nothing is ever mapped in the first page: Linux refuses it (vm.mmap_min_addr).
BAD_ADDRESS = 0x10


def shift(batch, offsets):
    return batch + offsets  # SIGSEGV in tt_native_add -> add_kernel_float64


def main():
    batch = tinytensor.ones(4)
    offsets = tinytensor.from_blob(BAD_ADDRESS, (4,))
    print(f"crash_native.py: pid {os.getpid()}: adding a tensor over address {BAD_ADDRESS:#x}; "
          "this process dies with SIGSEGV now", flush=True)
    print(shift(batch, offsets))  # never printed


main()
