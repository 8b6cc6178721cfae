"""Helpers for the preloaded library's tests: start a program with the
library in its environment, follow its stderr, and release it with a real
gdb attached by hand."""
import json
import queue
import re
import socket
import subprocess
import threading

from conftest import BUILD, PYTHON, SLOW, clean_env, run, wait_until

LIB = str(BUILD / "libtdebug-preload.so")
ANNOUNCE_RE = re.compile(
    r"^tdebug: pid (\d+) loaded (\S+) \((.+)\); waiting for a debugger: tdebug attach (\d+)$")

# What a user types in gdb to release a waiting process (lib/tdebug_preload.h).
RELEASE = "set var tdebug_preload_release = 1"


def preload_env(tmp_path, **extra):
    """The environment of a program run with the library: nothing
    inherited from the developer's TDEBUG_*, and an announce socket of the
    test's own so tests never talk to a real 'tdebug attach --wait'."""
    extra.setdefault("TDEBUG_ANNOUNCE", str(tmp_path / "announce"))
    return clean_env(LD_AUDIT=LIB, **extra)


class Lines:
    """Collect a pipe's lines in a thread, so a test can wait for one while
    the process runs."""

    def __init__(self, stream):
        self.lines = []
        self._q = queue.Queue()
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream):
        for line in iter(stream.readline, ""):
            self._q.put(line.rstrip("\n"))
        self._q.put(None)

    def _drain(self, timeout):
        try:
            item = self._q.get(timeout=timeout)
        except queue.Empty:
            return False
        if item is None:
            self._q.put(None)  # keep the end visible to later calls
            return None
        self.lines.append(item)
        return True

    def wait_for(self, pattern, timeout=SLOW):
        """The first line (seen so far or to come) matching PATTERN."""
        rx = re.compile(pattern)
        seen = 0
        def found():
            nonlocal seen
            while seen < len(self.lines):
                m = rx.search(self.lines[seen])
                seen += 1
                if m:
                    return m
            if self._drain(0.1) is None:
                raise AssertionError(f"stream ended without {pattern!r}:\n" + "\n".join(self.lines))
            return None
        return wait_until(found, timeout=timeout, interval=0, what=repr(pattern))

    def rest(self, timeout=SLOW):
        """All lines once the stream has ended."""
        self._t.join(timeout)
        while self._drain(0) is True:
            pass
        return self.lines


def start(procs, args, env, **kw):
    """Start ARGS with text pipes; returns (process, stderr Lines)."""
    p = procs.start(args, env=env, stdout=kw.pop("stdout", subprocess.PIPE),
                    stderr=subprocess.PIPE, text=True, **kw)
    return p, Lines(p.stderr)


def wait_announced(err):
    """The waiting announcement on stderr, parsed: (pid, module, path)."""
    m = err.wait_for(ANNOUNCE_RE.pattern)
    assert m.group(1) == m.group(4)
    return int(m.group(1)), m.group(2), m.group(3)


def gdb_batch(pid, *commands, init=()):
    """Attach a real gdb to PID, run COMMANDS, detach.  Returns stdout+stderr."""
    args = ["gdb", "-nx", "-q", "--batch", "-iex", "set debuginfod enabled off"]
    for c in init:
        args += ["-iex", c]
    args += ["-p", str(pid)]
    for c in commands:
        args += ["-ex", c]
    r = run(args, env=clean_env())
    return r.stdout + r.stderr


def finish(p, timeout=SLOW):
    """Wait for P to end; returns (returncode, stdout)."""
    out, _ = p.communicate(timeout=timeout) if p.stdout else (None, None)
    if not p.stdout:
        p.wait(timeout=timeout)
    return p.returncode, out


def bind_dgram(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(str(path))
    s.settimeout(SLOW)
    return s


def recv_json(sock):
    data = sock.recv(65536)
    assert data.endswith(b"\n"), data
    return json.loads(data)


def compile_c(tmp_path, name, source, *flags):
    """Compile SOURCE (text) into tmp_path/NAME with gcc and FLAGS."""
    src = tmp_path / (name + ".c")
    src.write_text(source)
    out = tmp_path / name
    r = subprocess.run(["gcc", "-O1", "-g", "-o", str(out), str(src), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return out


def python_args(code):
    return [PYTHON, "-c", code]
