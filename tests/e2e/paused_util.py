"""Helpers for 'tdebug attach --wait' and 'tdebug run --preload' tests:
start the waiting tdebug in the background and follow its output."""
import os
import subprocess

from conftest import PYTHON, SLOW, clean_env, proc_state
from preload_util import Lines

WAITING = "tdebug: waiting for "
TORCH_PROGRAM = "import torch; print('sum', torch.ones(3).sum().item())"


def tdebug_env(tmp_path, **extra):
    """tdebug's environment: the test's own announce socket (tdebug listens
    where TDEBUG_ANNOUNCE says, as the programs send)."""
    return clean_env(TDEBUG_ANNOUNCE=str(tmp_path / "announce"), **extra)


class Waiter:
    """A 'tdebug attach --wait ...' running in the background, its stdout
    and stderr followed line by line."""

    def __init__(self, procs, tdebug, tmp_path, *args, env=None):
        self.p = procs.start([tdebug, "attach", "--wait", *args],
                             env=env if env is not None else tdebug_env(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)

    def listening(self):
        """Wait until tdebug listens (it says so first, on stderr)."""
        return self.err.wait_for("^" + WAITING)

    def finish(self, timeout=SLOW):
        rc = self.p.wait(timeout=timeout)
        return rc, self.out.rest(), self.err.rest()


def pid_exists(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return proc_state(pid) not in (None, "Z")


def seize(procs, pid):
    """Trace PID from a helper process (PTRACE_SEIZE: PID keeps running),
    so that gdb's attach is refused; killing the helper ends the tracing."""
    code = ("import ctypes, sys, time\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]\n"
            f"if libc.ptrace(0x4206, {pid}, None, None) != 0:\n"
            "    sys.exit('seize: errno %d' % ctypes.get_errno())\n"
            "print('seized', flush=True)\n"
            "time.sleep(3600)\n")
    h = procs.start([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True)
    assert h.stdout.readline().strip() == "seized"
    return h
