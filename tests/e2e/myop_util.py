"""samples/myop built the two ways PyTorch users build their own operators,
with the flags 'tdebug profile --torch-extension' prints:

  - setup.py build_ext --inplace (CppExtension + BuildExtension), into
    $B/samples/myop;
  - torch.utils.cpp_extension.load() (the JIT), into $B/samples/myop-jit
    (TORCH_EXTENSIONS_DIR there).

A build takes about 40 s of CPU (minutes of wall time on a loaded
machine), so each is kept in the build directory and made again only when
the sources, the flags or the interpreter change (a stamp beside it), as
'make samples' does for tinytensor.  Needs Debian's libtorch-dev and
pybind11-dev ('make deps')."""
import hashlib
import os
import shutil

import pytest

from conftest import BUILD, PYTHON, ROOT, clean_env, run

SRC = ROOT / "samples" / "myop"
# What 'tdebug profile --torch-extension' prints with lld (test_torch_ext
# checks they agree; make deps installs lld).
DEBUG_CFLAGS = ["-O0", "-g3", "-fno-omit-frame-pointer", "-ggnu-pubnames"]
DEBUG_LDFLAGS = ["-fuse-ld=lld", "-Wl,--gdb-index"]
BUILD_TIMEOUT = 1200


def _stamp(kind):
    h = hashlib.sha256()
    for name in ("myop.cpp", "setup.py", "run.py"):
        h.update((SRC / name).read_bytes())
    h.update(" ".join([kind, PYTHON] + DEBUG_CFLAGS + DEBUG_LDFLAGS).encode())
    return h.hexdigest()


def _need_headers():
    if not os.path.exists("/usr/include/torch/extension.h") or \
            not os.path.exists("/usr/include/pybind11/pybind11.h"):
        pytest.fail("libtorch-dev and pybind11-dev are not installed: 'make deps' installs them")


def build_setup():
    """$B/samples/myop with myop...so built by setup.py; its path."""
    out = BUILD / "samples" / "myop"
    stamp = out / ".stamp"
    if stamp.exists() and stamp.read_text() == _stamp("setup"):
        return out
    _need_headers()
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(SRC, out)
    r = run([PYTHON, "setup.py", "-q", "build_ext", "--inplace"], cwd=out, timeout=BUILD_TIMEOUT)
    assert r.returncode == 0, r.stdout + r.stderr
    stamp.write_text(_stamp("setup"))
    return out


JIT_SCRIPT = """
import os, sys
from torch.utils import cpp_extension
m = cpp_extension.load(name="myop", sources=[sys.argv[1]], extra_cflags=sys.argv[2].split(),
                       extra_ldflags=sys.argv[3].split(), verbose=False)
print(m.__file__)
"""


def build_jit():
    """$B/samples/myop-jit: myop built by cpp_extension.load() with
    TORCH_EXTENSIONS_DIR there; (directory, the directory of myop.so)."""
    out = BUILD / "samples" / "myop-jit"
    stamp = out / ".stamp"
    ext = out / "extensions"
    if not (stamp.exists() and stamp.read_text() == _stamp("jit")):
        _need_headers()
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        shutil.copy(SRC / "myop.cpp", out)
        shutil.copy(SRC / "run.py", out)
        r = run([PYTHON, "-c", JIT_SCRIPT, str(out / "myop.cpp"), " ".join(DEBUG_CFLAGS),
                 " ".join(DEBUG_LDFLAGS)],
                env=clean_env(TORCH_EXTENSIONS_DIR=str(ext)), timeout=BUILD_TIMEOUT)
        assert r.returncode == 0, r.stdout + r.stderr
        stamp.write_text(_stamp("jit"))
    return out, ext / "myop"


@pytest.fixture(scope="session")
def myop():
    """The setup.py build: the directory holding myop...so and run.py."""
    return build_setup()


@pytest.fixture(scope="session")
def myop_jit():
    """The JIT build: (directory with run.py, directory of myop.so)."""
    return build_jit()
