#!/usr/bin/env python3
"""bench/extbuild.py: what building one's own torch op debuggable costs.

samples/myop (a torch.utils.cpp_extension op) built by setup.py
build_ext with the flags 'tdebug profile --torch-extension' prints
(-O0 -g3 -fno-omit-frame-pointer -ggnu-pubnames, lld with --gdb-index)
against a plain build (setuptools' and torch's own flags), interleaved
(plain, profile, plain, profile, ...) so that the machine's load falls on
both alike; each build from a clean copy.  Prints each run's wall and CPU
seconds and the medians, and the ratio of the medians.

    /usr/bin/python3 bench/extbuild.py [--runs N]      (default 3)

Needs libtorch-dev and pybind11-dev.  A build takes about 40 s of CPU.
"""
import argparse
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PYTHON = os.environ.get("TDEBUG_PYTHON", "/usr/bin/python3")

PLAIN_SETUP = """
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension
setup(name="myop", ext_modules=[CppExtension("myop", ["myop.cpp"])],
      cmdclass={"build_ext": BuildExtension.with_options(use_ninja=False)})
"""


def build(kind, work):
    d = pathlib.Path(tempfile.mkdtemp(prefix=f"extbuild-{kind}-", dir=work))
    shutil.copy(ROOT / "samples" / "myop" / "myop.cpp", d)
    if kind == "plain":
        (d / "setup.py").write_text(PLAIN_SETUP)
    else:
        shutil.copy(ROOT / "samples" / "myop" / "setup.py", d)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run([PYTHON, "setup.py", "-q", "build_ext", "--inplace"], cwd=d,
                       capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"extbuild: the {kind} build failed:\n{r.stdout}{r.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    so = next(d.glob("myop*.so"))
    size = so.stat().st_size
    shutil.rmtree(d)
    return wall, cpu, size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="tdebug-extbuild-")
    results = {"plain": [], "profile": []}
    try:
        for i in range(args.runs):
            for kind in ("plain", "profile"):
                wall, cpu, size = build(kind, work)
                results[kind].append((wall, cpu, size))
                print(f"run {i + 1} {kind:8s} wall {wall:6.1f} s  cpu {cpu:6.1f} s  "
                      f"myop.so {size / 1e6:5.1f} MB", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {k: (statistics.median(w for w, _, _ in v), statistics.median(c for _, c, _ in v))
           for k, v in results.items()}
    for k in ("plain", "profile"):
        print(f"median {k:8s} wall {med[k][0]:6.1f} s  cpu {med[k][1]:6.1f} s")
    print(f"ratio profile/plain: wall {med['profile'][0] / med['plain'][0]:.2f}x  "
          f"cpu {med['profile'][1] / med['plain'][1]:.2f}x")


if __name__ == "__main__":
    main()
