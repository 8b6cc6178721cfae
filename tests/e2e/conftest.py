"""Shared fixtures for tdebug's end-to-end tests.

These tests run the real binaries against the real gdb, debugpy and torch.
Nothing here is mocked.  Topic-specific helpers live in their own modules
(tests/e2e/*_util.py) so this file stays small.

Environment (set by 'make test' / tests/run-all):
  B               absolute path of the build directory (default: ./build)
  TDEBUG_PYTHON   the interpreter tdebug targets (default: /usr/bin/python3)
"""
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(os.environ.get("B", ROOT / "build")).resolve()
PYTHON = os.environ.get("TDEBUG_PYTHON", "/usr/bin/python3")

# Generous: CI machines have 2 cores and tests may run beside other work.
# Tests never assert on timing; timeouts only stop a hang.
SLOW = 180


def tdebug_path():
    return str(BUILD / "tdebug")


@pytest.fixture(scope="session")
def tdebug():
    path = tdebug_path()
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is not built; run 'make' first")
    return path


@pytest.fixture(scope="session")
def python():
    return PYTHON


@pytest.fixture(scope="session")
def build_dir():
    return BUILD


@pytest.fixture(scope="session")
def root_dir():
    return ROOT


# TDEBUG_LIGHT for every child while a test of a module that runs in both
# kinds of session runs (the light_sessions fixture), None: unset.
_LIGHT = {"value": None}


@pytest.fixture(params=["1", "0"], ids=["light1", "light0"])
def light_sessions(request):
    """Run the test twice: with light sessions (src/session/light.c) and
    with ordinary ones (TDEBUG_LIGHT=0).  A module takes it with
    pytestmark = pytest.mark.usefixtures("light_sessions")."""
    _LIGHT["value"] = request.param
    yield request.param
    _LIGHT["value"] = None


def clean_env(**extra):
    """The environment for a child: ours, minus anything tdebug reads that a
    developer may have exported, plus EXTRA."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TDEBUG_") and k not in ("LD_AUDIT", "LD_PRELOAD")}
    env["TDEBUG_PYTHON"] = PYTHON
    if _LIGHT["value"] is not None:
        env["TDEBUG_LIGHT"] = _LIGHT["value"]
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run(args, timeout=SLOW, env=None, input=None, cwd=None, check=False):
    """Run a command to completion, capturing text output.  Kills the whole
    process group if it hangs, so nothing outlives the test."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                         text=True, env=env if env is not None else clean_env(), cwd=cwd,
                         start_new_session=True)
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(p)
        out, err = p.communicate()
        raise AssertionError(f"timed out after {timeout}s: {args}\nstdout:\n{out}\nstderr:\n{err}")
    result = subprocess.CompletedProcess(args, p.returncode, out, err)
    if check and p.returncode != 0:
        raise AssertionError(f"exit {p.returncode}: {args}\nstdout:\n{out}\nstderr:\n{err}")
    return result


def tdebug_copy_without(tdebug, dest, *omit):
    """A copy of the tdebug binary in DEST beside symlinks to every file of
    its build directory but the relative paths OMIT ("samples",
    "python/tdebug-children"): tdebug finds its companion files beside
    itself, so the copy runs as the build does without those.  The copy's
    path."""
    build = os.path.dirname(os.path.realpath(tdebug))

    def mirror(rel):
        out = pathlib.Path(dest, rel)
        out.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(os.path.join(build, rel)):
            sub = os.path.join(rel, name) if rel else name
            if sub in omit or sub == "tdebug":
                continue
            if any(o.startswith(sub + "/") for o in omit):
                mirror(sub)
            else:
                os.symlink(os.path.join(build, sub), out / name)

    mirror("")
    shutil.copy(tdebug, pathlib.Path(dest, "tdebug"))
    return pathlib.Path(dest, "tdebug")


def kill_group(p):
    """SIGKILL P's process group (tests start children with
    start_new_session=True), then reap P."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class Procs:
    """Background processes a test starts; all killed at the end of it."""

    def __init__(self):
        self.procs = []

    def start(self, args, **kw):
        kw.setdefault("start_new_session", True)
        kw.setdefault("env", clean_env())
        kw.setdefault("stdin", subprocess.DEVNULL)
        p = subprocess.Popen(args, **kw)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                # A process left stopped must be continued to die cleanly.
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                kill_group(p)


@pytest.fixture
def procs():
    ps = Procs()
    yield ps
    ps.cleanup()


def free_port():
    """A TCP port nobody listens on right now (bound then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(pred, timeout=SLOW, interval=0.05, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def processes_with(marker):
    """PIDs whose command line contains MARKER."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            pass
    return found


def proc_stat(pid):
    """The fields of /proc/PID/stat after the command name (state, ppid,
    pgrp, session...), or None when PID is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    return data[data.rindex(")") + 2:].split()


def proc_state(pid):
    """The one-letter state of PID from /proc (R, S, T, t, Z...), or None."""
    fields = proc_stat(pid)
    return fields[0] if fields else None


def comm_of(pid):
    """The command name of PID (/proc/PID/comm), or None when PID is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return None


def parent_of(pid):
    """The parent pid of PID, or None when PID is gone."""
    fields = proc_stat(pid)
    return int(fields[1]) if fields else None


def tracer_of(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


UNPRIVILEGED = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all"]


@pytest.fixture(scope="session")
def as_nobody():
    """A command prefix that runs as the unprivileged user 'nobody'."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    if not shutil.which("setpriv"):
        pytest.fail("setpriv missing: 'make deps' installs util-linux")
    return list(UNPRIVILEGED)


@pytest.fixture(scope="session")
def torch_available():
    r = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True)
    if r.returncode != 0:
        pytest.fail("torch is not importable by %s: 'make deps' installs python3-torch" % PYTHON)
    return True


@pytest.fixture
def terminal():
    """Start programs on their own pseudo-terminal (pty_util.Terminal):
    terminal(ARGS, env=None) returns one; all are killed at the end."""
    from pty_util import Terminal  # pty_util imports this module
    terms = []

    def start(args, env=None):
        t = Terminal(args, env=env)
        terms.append(t)
        return t
    yield start
    for t in terms:
        t.close()
