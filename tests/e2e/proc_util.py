"""Processes in particular states for end-to-end tests of 'tdebug ps' and
its attach checks: a program already traced by a small ptrace-holding
helper, a zombie, a program that made itself non-dumpable, a command run
under a seccomp filter that forbids ptrace (what a container's default
profile does), and try_ptrace(), which asks the kernel itself whether a
PTRACE_SEIZE would succeed, to hold tdebug's predictions against.  Every helper is a real process started through the procs
fixture, so it is killed at the end of the test.
"""
import contextlib
import os
import platform
import shutil
import subprocess
import tempfile

import pytest

from conftest import PYTHON, proc_state, run, tracer_of, wait_until

TIMEOUT = 120

# The user nobody, keeping the bounding set (which a file capability needs;
# as_nobody drops it), with capabilities inherited up to the exec only, so
# that tdebug runs even from a checkout only root may enter (/root/...):
# nobody has none once it runs.
NOBODY_KEEPING_BOUNDS = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         "--inh-caps=-all"]


@contextlib.contextmanager
def gdb_with_cap_sys_ptrace(mode=0o755):
    """A copy of gdb given CAP_SYS_PTRACE as a file capability ('setcap
    cap_sys_ptrace+ep'), in a new directory of MODE; yields (directory,
    gdb's path) and removes them after."""
    if not shutil.which("setcap"):
        pytest.fail("setcap missing: 'make deps' installs libcap2-bin")
    d = tempfile.mkdtemp(prefix="tdebug-gdbcap-")
    try:
        os.chmod(d, mode)
        gdb = os.path.join(d, "gdb")
        shutil.copy(shutil.which("gdb"), gdb)
        run(["setcap", "cap_sys_ptrace+ep", gdb], check=True)
        yield d, gdb
    finally:
        shutil.rmtree(d)

# root without CAP_SYS_PTRACE, as in a container started without it.
ROOT_NO_PTRACE_CAP = ["setpriv", "--inh-caps=-sys_ptrace", "--bounding-set=-sys_ptrace"]

# Holds PID under ptrace with PTRACE_SEIZE (which does not stop it) and
# sleeps; when the holder dies the kernel detaches and PID runs on.  Named
# 'ptrace-holder' so a tracer's name can be checked.
HOLDER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(15, b"ptrace-holder", 0, 0, 0)            # PR_SET_NAME
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
if libc.ptrace(0x4206, int(sys.argv[1]), None, None) != 0:   # PTRACE_SEIZE
    sys.exit("ptrace-holder: PTRACE_SEIZE: " + os.strerror(ctypes.get_errno()))
print("holding", flush=True)
while True:
    time.sleep(1)
"""

# Forks a child that exits at once and is never reaped; prints its pid.
ZOMBIE_PARENT = r"""
import os, time
pid = os.fork()
if pid == 0:
    os._exit(0)
print(pid, flush=True)
while True:
    time.sleep(1)
"""

# A Python program that says it is ready and idles; with "undumpable" as
# its argument it first calls prctl(PR_SET_DUMPABLE, 0).  Given with -c, so
# it needs no file another user might not be able to read.
WAITER = r"""
import ctypes, sys, time
if sys.argv[1:] == ["undumpable"]:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)             # PR_SET_DUMPABLE
print("ready", flush=True)
while True:
    time.sleep(1)
"""

# Runs argv[1:] under a seccomp filter where ptrace(2) fails with EPERM.
SECCOMP_NO_PTRACE = r"""
import ctypes, os, struct, sys
ARCH = {"x86_64": (0xC000003E, 101), "aarch64": (0xC00000B7, 117)}[sys.argv[1]]
def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)
prog = b"".join([
    insn(0x20, 0, 0, 4),             # ld [arch]
    insn(0x15, 1, 0, ARCH[0]),       # jeq ARCH ? next+1 : next
    insn(0x06, 0, 0, 0x7FFF0000),    # other arch: allow
    insn(0x20, 0, 0, 0),             # ld [nr]
    insn(0x15, 0, 1, ARCH[1]),       # jeq ptrace ? next : next+1
    insn(0x06, 0, 0, 0x00050001),    # ret ERRNO(EPERM)
    insn(0x06, 0, 0, 0x7FFF0000),    # allow
])
buf = ctypes.create_string_buffer(prog)
class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = SockFprog(len(prog) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(38, 1, 0, 0, 0) != 0:                   # PR_SET_NO_NEW_PRIVS
    sys.exit("prctl(PR_SET_NO_NEW_PRIVS): " + os.strerror(ctypes.get_errno()))
if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0: # PR_SET_SECCOMP, FILTER
    sys.exit("prctl(PR_SET_SECCOMP): " + os.strerror(ctypes.get_errno()))
os.execvp(sys.argv[2], sys.argv[2:])
"""


def _first_line(p, what):
    line = p.stdout.readline()
    if not line:
        p.wait(TIMEOUT)
        raise AssertionError(f"{what} exited with {p.returncode} before it was ready")
    return line.strip()


@contextlib.contextmanager
def held_with_ptrace(procs, pid, prefix=()):
    """PID traced by the ptrace-holding helper (run as PREFIX, e.g.
    as_nobody) for the duration of the block; yields the helper's Popen.

    The helper is killed on the way out, before anything else happens to
    PID: a traced process that dies stays a zombie until its tracer reaps
    it, and the helper never does."""
    p = procs.start(list(prefix) + [PYTHON, "-c", HOLDER, str(pid)],
                    stdout=subprocess.PIPE, text=True)
    try:
        assert _first_line(p, "the ptrace holder") == "holding"
        wait_until(lambda: tracer_of(pid) == p.pid, timeout=TIMEOUT,
                   what=f"pid {pid} to be traced by {p.pid}")
        yield p
    finally:
        p.kill()
        p.wait(TIMEOUT)


def start_zombie(procs):
    """A Python parent with an unreaped child; returns (parent, zombie pid)."""
    p = procs.start([PYTHON, "-c", ZOMBIE_PARENT], stdout=subprocess.PIPE, text=True)
    zombie = int(_first_line(p, "the zombie's parent"))
    wait_until(lambda: proc_state(zombie) == "Z", timeout=TIMEOUT,
               what=f"pid {zombie} to become a zombie")
    return p, zombie


def start_waiter(procs, prefix=(), undumpable=False):
    """A Python program idling once ready, run as PREFIX (e.g. as_nobody);
    with UNDUMPABLE it made itself non-dumpable first.  Returns its Popen."""
    p = procs.start(list(prefix) + [PYTHON, "-c", WAITER] + (["undumpable"] if undumpable else []),
                    stdout=subprocess.PIPE, text=True)
    assert _first_line(p, "the waiting program") == "ready"
    return p


def try_ptrace(procs, pid, prefix=()):
    """Ask the kernel itself: can PREFIX (a user, capabilities, a seccomp
    filter) PTRACE_SEIZE PID?  Returns (True, "") or (False, its error);
    the holder is gone again either way."""
    p = procs.start(list(prefix) + [PYTHON, "-c", HOLDER, str(pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline().strip()
    if line == "holding":
        p.kill()
        p.wait(TIMEOUT)
        return True, ""
    p.wait(TIMEOUT)
    return False, p.stderr.read().strip()


def seccomp_no_ptrace_prefix():
    """A command prefix running the rest under a seccomp filter that makes
    ptrace(2) fail with EPERM; None on an architecture it does not know."""
    machine = platform.machine()
    if machine not in ("x86_64", "aarch64"):
        return None
    return [PYTHON, "-c", SECCOMP_NO_PTRACE, machine]
