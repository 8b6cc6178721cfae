"""A gdb session ('tdebug attach --batch') reads the Python stacks of a
CPython other than the one tdebug was built for: the merged stack of each
thread (src/stacks/view.h over src/cpython/frames.h)."""
import pytest

from conftest import run
from stacks_util import python_or_skip, start_ready

PROGRAM = r"""
import threading, time
def leaf():
    print("ready", flush=True)
    time.sleep(1000)
def middle():
    leaf()
threading.Thread(target=lambda: time.sleep(1000), name="other", daemon=True).start()
middle()
"""


@pytest.mark.parametrize("version", ["3.8", "3.10", "3.12", "3.13"])
def test_attach_batch_reads_other_versions(tdebug, procs, version):
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", PROGRAM])
    r = run([tdebug, "attach", "--batch", str(p.pid)])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    leaf = out.index('    File "<string>", line 5, in leaf\n')
    middle = out.index('    File "<string>", line 7, in middle\n')
    module = out.index('    File "<string>", line 9, in <module>\n')
    assert leaf < middle < module
    # The C frames of time.sleep above the Python ones, gdb's numbering kept.
    head = out[:leaf]
    assert "time_sleep" in head and head.rstrip().splitlines()[-1].startswith("#")
    assert 'File "<string>", line 8, in <lambda>' in out
    assert "not read" not in out and "cannot read the Python" not in out + r.stderr
