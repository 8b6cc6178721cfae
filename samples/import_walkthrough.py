"""The default tour's program: what do `import torch` and `torch.ones(2) + 1` do?

    import torch            Python's import system finds torch/__init__.py, which
                            imports torch._C: the dynamic loader maps
                            torch/_C.cpython-311-x86_64-linux-gnu.so and ~290
                            libraries it needs (libtorch_python, libtorch_cpu,
                            libc10...), runs their static initializers (which
                            register thousands of kernels with the dispatcher),
                            then Python calls PyInit__C, which hands over to
                            initModule in libtorch_python.so.
    torch.ones(2) + 1       Tensor.__add__ (THPVariable_add in libtorch_python)
                            calls at::_ops::add_Tensor::call, the dispatcher
                            routes it to the CPU kernel in libtorch_cpu.so.

Debian's torch has no debug info: the same steps at source level are in
tinytensor_walkthrough.py.  Try (P=/usr/bin/python3):

    tdebug tour
    tdebug run --stop-at-import torch._C -- P samples/import_walkthrough.py
    tdebug run -b 'at::_ops::add_Tensor::call' -- P samples/import_walkthrough.py
    gdb -ex 'set breakpoint pending on' -ex 'break PyInit__C' -ex run -ex bt \\
        --args P samples/import_walkthrough.py

Prints tensor([2., 2.]).
"""
import torch

x = torch.ones(2) + 1
print(x)
