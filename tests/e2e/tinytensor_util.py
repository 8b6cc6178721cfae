"""Helpers for the tests of samples/: where tinytensor is built, an
environment that imports it, what its shared objects say about how they
were compiled, and the source lines marked for the tour."""
import re
import subprocess

from conftest import BUILD, ROOT, clean_env

SAMPLES = ROOT / "samples"
TT_SRC = SAMPLES / "tinytensor"
# 'make' builds the package here (the top-level 'samples' target).
TT_OUT = BUILD / "samples" / "tinytensor"
TT_PKG = TT_OUT / "tinytensor"


def tt_env(out=TT_OUT, **extra):
    """The environment for a child that imports tinytensor from OUT."""
    return clean_env(PYTHONPATH=str(out), **extra)


def shared_objects(pkg=TT_PKG):
    """The extension stub and the two libraries of a built package."""
    found = sorted(pkg.glob("_C.*.so")) + sorted((pkg / "lib").glob("libtt_*.so"))
    names = sorted(p.name.split(".")[0] for p in found)
    assert names == ["_C", "libtt_core", "libtt_python"], f"{pkg} holds {found}"
    return found


def readelf(*args):
    return subprocess.run(["readelf", "--wide", *args], capture_output=True, text=True,
                          check=True).stdout


def producers(path):
    """DW_AT_producer of every compilation unit in PATH's DWARF: the
    compiler and the options it was given."""
    out = readelf("--debug-dump=info", str(path))
    # "DW_AT_producer    : (strp) (offset: 0xa42): GNU C17 12.2.0 -g3 -O0 ..."
    return [value.rsplit("): ", 1)[-1].strip()
            for value in re.findall(r"DW_AT_producer\s*:(.*)", out)]


def optimization(producer):
    """The -O level that won (the last one given), e.g. '0'."""
    levels = re.findall(r"(?:^|\s)-O(\w*)", producer)
    return levels[-1] if levels else None


def marked_line(relpath, marker):
    """The line number of the 'TOUR: MARKER' comment in samples/tinytensor/
    RELPATH: where the tour (and these tests) put breakpoints, without
    hard-coding numbers that move with every edit."""
    lines = (TT_SRC / relpath).read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if f"TOUR: {marker}" in line]
    assert len(hits) == 1, f"{relpath}: {len(hits)} lines marked 'TOUR: {marker}'"
    return hits[0]


def gdb_batch(*commands, args):
    """A gdb command line running ARGS under batch COMMANDS, independent of
    the user's gdbinit and of debuginfod."""
    cmd = ["gdb", "-nx", "-batch", "-ex", "set debuginfod enabled off",
           "-ex", "set breakpoint pending on"]
    for c in commands:
        cmd += ["-ex", c]
    return cmd + ["--args", *args]
