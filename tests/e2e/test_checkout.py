"""A checkout tests itself: no test, benchmark or build step names a path
outside it (the team's shared notes, a sibling directory).  What the tests
need is copied into tests/fixtures with a line on where it came from."""
import re
import subprocess

from conftest import ROOT

# Paths that exist only on the machines the project was started on.
OUTSIDE = re.compile(r"/work/shared|\.\./shared\b")


def tracked_files():
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                         check=True).stdout
    return [ROOT / name.decode() for name in out.split(b"\0") if name]


def test_nothing_reads_outside_the_checkout():
    looked = 0
    offenders = []
    for path in tracked_files():
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
