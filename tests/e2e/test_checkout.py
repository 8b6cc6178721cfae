"""A checkout tests itself: no test, benchmark or build step names a path
outside it (the team's shared notes, a sibling directory).  What the tests
need is copied into tests/fixtures with a line on where it came from."""
import os
import re
from pathlib import Path

from conftest import ROOT

# Paths that exist only on the machines the project was started on.
OUTSIDE = re.compile(r"/work/shared|\.\./shared\b")


# What a build or a test run leaves in the tree, which the checkout does not hold.
GENERATED = {".git", "build", "node_modules", "__pycache__", ".pytest_cache"}


def source_files():
    """The checkout's files (a clone or an unpacked archive: no git needed),
    without what builds and test runs generate."""
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = sorted(d for d in dirs if d not in GENERATED and not d.endswith(".egg-info"))
        for name in sorted(files):
            yield Path(top) / name


def test_nothing_reads_outside_the_checkout():
    looked = 0
    offenders = []
    for path in source_files():
        parts = path.relative_to(ROOT).parts
        if parts[0] not in ("tests", "bench", "tools", "Makefile", "samples") or not path.is_file():
            continue
        looked += 1
        text = path.read_bytes().decode("utf-8", "replace")
        for n, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line) and path.name != "test_checkout.py":
                offenders.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert looked > 50, looked  # the walk saw the tree
    assert offenders == []
