"""Build myop the way PyTorch users build their own operators, debuggable.

    /usr/bin/python3 setup.py build_ext --inplace

CppExtension and BuildExtension are torch.utils.cpp_extension's; the
flags are those 'tdebug profile --torch-extension' prints: no
optimisation, full debug info, frame pointers kept, so that gdb stops on
every line of scaled_add with its arguments and locals readable.
Needs Debian's libtorch-dev and pybind11-dev (tools/deps.sh installs them).
"""
import shutil

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension

# What 'tdebug profile --torch-extension' prints for setup.py: with lld, a
# gdb index written at link time (gdb then starts without reading all the
# DWARF); without it, run gdb-add-index on the result.
if shutil.which("ld.lld"):
    DEBUG_CFLAGS = ["-O0", "-g3", "-fno-omit-frame-pointer", "-ggnu-pubnames"]
    DEBUG_LDFLAGS = ["-fuse-ld=lld", "-Wl,--gdb-index"]
else:
    DEBUG_CFLAGS = ["-O0", "-g3", "-fno-omit-frame-pointer"]
    DEBUG_LDFLAGS = []

setup(
    name="myop",
    version="0.1",
    description="a + alpha * b: a torch operator of one's own, to step into",
    ext_modules=[CppExtension("myop", ["myop.cpp"], extra_compile_args=DEBUG_CFLAGS,
                             extra_link_args=DEBUG_LDFLAGS)],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)},
)
