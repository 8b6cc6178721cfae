"""Build tinytensor the way users build their extensions: with setuptools.

    CFLAGS="-O0 -g3 -fno-omit-frame-pointer" python3 setup.py build_ext --inplace

CFLAGS, CPPFLAGS and LDFLAGS from the environment are added after Python's
own flags (setuptools does that), so a debug-build profile such as the one
'tdebug profile --setuptools' prints applies to every file built here.
The Makefile beside this file drives the same build into a directory of
your choice.

The result is laid out like torch:

    tinytensor/_C.cpython-311-x86_64-linux-gnu.so   PyInit__C only, RUNPATH $ORIGIN/lib
    tinytensor/lib/libtt_python.so                  the bindings, RUNPATH $ORIGIN
    tinytensor/lib/libtt_core.so                    the core (no Python in it)

The two libraries are not Python extensions, so setuptools has no
declaration for them: build_ext below compiles and links them with the
same compiler object (and so the same flags) before building _C against
them.
"""
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CORE_SOURCES = [
    "csrc/core/tt_error.c",
    "csrc/core/tt_tensor.c",
    "csrc/core/tt_iter.c",
    "csrc/core/tt_dispatcher.c",
    "csrc/core/tt_ops.c",
    "csrc/core/tt_native_cpu.c",
    "csrc/core/tt_native_meta.c",
    "csrc/core/tt_register.c",
    "csrc/core/tt_faults.c",
]
PYTHON_SOURCES = [
    "csrc/python/tt_python_module.c",
    "csrc/python/tt_python_tensor.c",
    "csrc/python/tt_python_apply.c",
]
HEADERS = [os.path.join(d, f) for d in ("csrc/core", "csrc/python")
           for f in sorted(os.listdir(os.path.join(os.path.dirname(__file__) or ".", d)))
           if f.endswith(".h")]


class BuildExtWithLibraries(build_ext):
    """build_ext that first builds lib/libtt_core.so and lib/libtt_python.so
    next to where the extension goes."""

    def build_extensions(self):
        self.libdir = libdir = os.path.join(os.path.dirname(self.get_ext_fullpath("tinytensor._C")), "lib")
        os.makedirs(libdir, exist_ok=True)
        self.build_shared_library("tt_core", CORE_SOURCES, libdir, libraries=["pthread"])
        # The bindings find the core beside them, wherever the package is.
        self.build_shared_library("tt_python", PYTHON_SOURCES, libdir, libraries=["tt_core"],
                                  include_dirs=["csrc/core"], runpath=["$ORIGIN"])
        for ext in self.extensions:
            ext.library_dirs.append(libdir)
        super().build_extensions()

    def copy_extensions_to_source(self):
        # --inplace builds in build/ and copies the extension into the
        # source tree: the libraries must come along.
        super().copy_extensions_to_source()
        package_dir = self.get_finalized_command("build_py").get_package_dir("tinytensor")
        self.copy_tree(self.libdir, os.path.join(package_dir, "lib"))

    def build_shared_library(self, name, sources, libdir, libraries, include_dirs=(), runpath=()):
        objects = self.compiler.compile(
            sources, output_dir=self.build_temp, include_dirs=list(include_dirs),
            depends=HEADERS, debug=self.debug)
        self.compiler.link_shared_object(
            objects, os.path.join(libdir, f"lib{name}.so"),
            libraries=libraries, library_dirs=[libdir], runtime_library_dirs=list(runpath),
            extra_postargs=[f"-Wl,-soname,lib{name}.so"], debug=self.debug)


setup(
    name="tinytensor",
    version="0.1",
    description="A tiny tensor library laid out like PyTorch, to step through with a debugger",
    packages=["tinytensor"],
    ext_modules=[
        Extension(
            "tinytensor._C",
            sources=["csrc/stub.c"],
            libraries=["tt_python"],
            # torch/_C...so has RUNPATH $ORIGIN/lib too.
            runtime_library_dirs=["$ORIGIN/lib"],
            depends=HEADERS,
        ),
    ],
    cmdclass={"build_ext": BuildExtWithLibraries},
)
