"""Driving the Python breakpoint library (lib/tdebug_pyhook.h) with the real
gdb over MI, the way a tdebug session does: load it at a safe point, write
the breakpoint table, recognise stops at tdebug_pyhook_stop and read the
report, write step requests, detach.  Each helper is one step of the
protocol the header documents; tests read as the sequence a session runs.
"""
import os
import pathlib
import queue
import re
import subprocess
import threading
import time

import pytest

from conftest import BUILD, ROOT, SLOW

GDB = os.environ.get("TDEBUG_GDB", "gdb")

# tdb_pyhook_* constants (lib/tdebug_pyhook.h)
BP_LINE, BP_FUNCTION, BP_EXCEPTION = 1, 2, 3
EXC_RAISED, EXC_UNCAUGHT, EXC_USER = 1, 2, 4
STEP_STEP, STEP_NEXT, STEP_FINISH = 1, 2, 3
STOP_BREAKPOINT, STOP_FUNCTION, STOP_STEP, STOP_NATIVE, STOP_FINISH = 1, 2, 3, 4, 5
STOP_EXCEPTION = 7
MAGIC = 0x6b6f6f6879706474


def pyhook_lib(python):
    """The library for PYTHON's minor version, where a session looks for
    it: build/pyhook/libtdebug-pyhook-cpython-3X.so ('make' builds
    $(PYTHON)'s, 'make pyhook-all' every pyenv one's); None when not built."""
    out = subprocess.run([python, "-c", "import sys; print('%d%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    lib = BUILD / "pyhook" / f"libtdebug-pyhook-cpython-{out}.so"
    return lib if lib.exists() else None


EXT_SRC = ROOT / "tests" / "fixtures" / "pyhookext" / "pyhookext.c"


@pytest.fixture(scope="session")
def build_ext(tmp_path_factory):
    """pyhookext (tests/fixtures/pyhookext: a tiny extension whose native
    code steps reach) built for an interpreter: the directory holding it."""
    built = {}

    def build(python):
        if python not in built:
            inc, suffix = subprocess.run(
                [python, "-c", "import sysconfig; print(sysconfig.get_paths()['include']); "
                 "print(sysconfig.get_config_var('EXT_SUFFIX'))"],
                capture_output=True, text=True, check=True).stdout.split()
            d = tmp_path_factory.mktemp("pyhookext")
            subprocess.run(["gcc", "-shared", "-fPIC", "-g", "-O0", "-I", inc, "-o",
                            str(d / ("pyhookext" + suffix)), str(EXT_SRC)], check=True)
            built[python] = d
        return built[python]
    return build


def _unquote(s):
    """An MI c-string's contents (without the quotes) as text."""
    out, i = bytearray(), 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            simple = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "r": "\r"}
            if n in simple:
                out += simple[n].encode()
                i += 2
                continue
            m = re.match(r"[0-7]{1,3}", s[i + 1:])
            if m:
                out.append(int(m.group(0), 8))
                i += 1 + len(m.group(0))
                continue
        out += c.encode()
        i += 1
    return out.decode("utf-8", "replace")


def _field(rec, name):
    m = re.search(r'(?:^|[,{])' + name + r'="((?:[^"\\]|\\.)*)"', rec)
    return _unquote(m.group(1)) if m else None


def mi_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Gdb:
    """One gdb over MI3 on pipes: tokened commands, async records queued."""

    def __init__(self, args, procs):
        self.p = procs.start([GDB, "-q", "-nx", "-i=mi3",
                              "-iex", "set pagination off", "-iex", "set confirm off",
                              "-iex", "set auto-solib-add off",
                              "-iex", "set debuginfod enabled off", "-iex", "set mi-async on"] + args,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines = queue.Queue()
        self.events = []
        self.log = []
        self.token = 100
        threading.Thread(target=self._read, daemon=True).start()
        self._wait_prompt()

    def _read(self):
        for line in self.p.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _next(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("gdb timed out; log:\n" + "\n".join(self.log[-60:]))
        try:
            line = self.lines.get(timeout=left)
        except queue.Empty:
            raise AssertionError("gdb timed out; log:\n" + "\n".join(self.log[-60:]))
        if line is None:
            raise AssertionError("gdb exited; log:\n" + "\n".join(self.log[-60:]))
        self.log.append(line)
        if line.startswith("*") or line.startswith("="):
            self.events.append(line)
        return line

    def _wait_prompt(self, timeout=SLOW):
        deadline = time.monotonic() + timeout
        while self._next(deadline) != "(gdb) ":
            pass

    def cmd(self, command, timeout=SLOW, ok=True):
        """Run one MI command; returns its result record.  OK: ^error fails."""
        self.token += 1
        tok = str(self.token)
        self.log.append(">> " + command)
        self.p.stdin.write(tok + command + "\n")
        self.p.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            line = self._next(deadline)
            if line.startswith(tok + "^"):
                if ok and line.startswith(tok + "^error"):
                    raise AssertionError(f"gdb: {command}: {_field(line, 'msg')}")
                return line

    def cli(self, command, timeout=SLOW):
        return self.cmd("-interpreter-exec console " + mi_quote(command), timeout)

    def cli_text(self, command, timeout=SLOW):
        """What a console command printed (its ~ stream records)."""
        start = len(self.log)
        self.cli(command, timeout)
        return "".join(_unquote(line[2:-1]) for line in self.log[start:] if line.startswith('~"'))

    def eval(self, expr, timeout=SLOW):
        return _field(self.cmd("-data-evaluate-expression " + mi_quote(expr), timeout), "value")

    def num(self, expr):
        v = self.eval(expr)
        m = re.match(r"^(?:\([^)]*\)\s*)?(-?(?:0x[0-9a-f]+|\d+))", v)
        assert m, f"{expr} = {v!r}"
        return int(m.group(1), 0)

    def wait_stopped(self, timeout=SLOW):
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.startswith("*stopped"):
                    del self.events[:i + 1]
                    return e
            self.events.clear()
            self._next(deadline)

    def cont(self, timeout=SLOW):
        self.events = [e for e in self.events if not e.startswith("*stopped")]
        self.cmd("-exec-continue", timeout)
        return self.wait_stopped(timeout)

    def close(self):
        try:
            self.p.stdin.write("-gdb-exit\n")
            self.p.stdin.flush()
            self.p.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()


class Pyhook:
    """The session side of lib/tdebug_pyhook.h, step by step."""

    def __init__(self, gdb, pid, lib):
        self.g, self.pid, self.lib = gdb, pid, str(lib)
        self.stop_bp = None
        self.control = None

    # -- loading and installing
    def safe_point(self):
        """Stop a thread that holds the GIL at a point where CPython can be
        re-entered: the entry of _PyEval_EvalFrameDefault, or of
        PyErr_CheckSignals, which a pending call makes the main thread run at
        its next instruction boundary (3.11 inlines Python-to-Python calls, so
        a loop of pure Python never enters the evaluator again)."""
        g = self.g
        for lib in ("libc\\.so", "libpython"):   # dlopen; a pyenv interpreter
            g.cli("sharedlibrary " + lib)
        # The call first: gdb lets the other threads run during a call, and
        # one of them reaching a breakpoint would abandon it.
        assert g.num("(int) Py_AddPendingCall(PyErr_CheckSignals, 0)") == 0
        b1 = _field(g.cmd("-break-insert *_PyEval_EvalFrameDefault"), "number")
        b2 = _field(g.cmd("-break-insert *PyErr_CheckSignals"), "number")
        stop = g.cont()
        assert _field(stop, "bkptno") in (b1, b2), stop
        g.cmd(f"-break-delete {b1} {b2}")
        return stop

    def load(self):
        g = self.g
        handle = g.num(f'(void *) dlopen("{self.lib}", 2)')
        assert handle != 0, g.eval("(char *) dlerror()")
        g.cli("sharedlibrary libtdebug-pyhook")
        assert g.num("tdebug_pyhook_control.magic") == MAGIC
        assert g.num("tdebug_pyhook_control.abi") == 3
        self.control = g.num("(long) &tdebug_pyhook_control")

    def install(self):
        g = self.g
        rc = g.num("(int) tdebug_pyhook_install()")
        assert rc == 0, g.eval("tdebug_pyhook_control.error")
        self.stop_bp = _field(g.cmd("-break-insert tdebug_pyhook_stop"), "number")
        assert g.num("tdebug_pyhook_control.installed") == 1

    def attach_and_install(self, breakpoints=()):
        """The whole loading sequence, with BREAKPOINTS armed at install."""
        self.safe_point()
        self.load()
        for slot, bp in enumerate(breakpoints):
            self.write_bp(slot, **bp)
        self.bump()
        self.install()

    # -- memory: tdebug writes the control block through /proc/PID/mem
    def addr(self, member):
        return self.g.num(f"(long) &tdebug_pyhook_control.{member}")

    def poke(self, addr, data):
        with open(f"/proc/{self.pid}/mem", "r+b", buffering=0) as f:
            f.seek(addr)
            f.write(data)

    def peek(self, addr, n):
        with open(f"/proc/{self.pid}/mem", "rb", buffering=0) as f:
            f.seek(addr)
            return f.read(n)

    def poke_int(self, member, value, size=4):
        self.poke(self.addr(member), int(value).to_bytes(size, "little", signed=True))

    def bp_addr(self, slot, field):
        """The address of FIELD of slot SLOT of the breakpoint table."""
        return self.g.num(f"(long) &((tdb_pyhook_breakpoint *) "
                          f"tdebug_pyhook_control.table)[{slot}].{field}")

    def bp_num(self, slot, field):
        return self.g.num(f"((tdb_pyhook_breakpoint *) "
                          f"tdebug_pyhook_control.table)[{slot}].{field}")

    def write_bp(self, slot, id, kind=BP_LINE, file="", line=0, function="", enabled=1,
                 exc_when=0):
        """A slot; an exception one (BP_EXCEPTION) stops at EXC_WHEN's
        events of exceptions of class FUNCTION (empty: any)."""
        assert slot < self.g.num("tdebug_pyhook_control.capacity")
        def put(field, value):
            self.poke(self.bp_addr(slot, field), int(value).to_bytes(4, "little", signed=True))
        put("id", 0)
        put("kind", kind)
        put("exc_when", exc_when)
        put("line", line)
        put("enabled", enabled)
        self.poke(self.bp_addr(slot, "file"), file.encode() + b"\0")
        self.poke(self.bp_addr(slot, "function"), function.encode() + b"\0")
        put("id", id)
        n = self.g.num("tdebug_pyhook_control.n_breakpoints")
        if slot >= n:
            self.poke_int("n_breakpoints", slot + 1)

    def bump(self):
        gen = self.g.num("tdebug_pyhook_control.generation")
        self.poke_int("generation", gen + 1, 8)
        self.kick()

    def kick(self):
        """After an edit: where the library asks for it (sync_slot, 3.12+),
        have the next Python call in any thread apply it."""
        slot = self.g.num("tdebug_pyhook_control.sync_slot")
        if slot:
            self.poke(slot, self.g.num("tdebug_pyhook_control.sync_eval_frame").to_bytes(8, "little"))

    # -- stops
    def is_hook_stop(self, stopped):
        return _field(stopped, "bkptno") == self.stop_bp

    def report(self):
        g = self.g
        r = {k: g.num(f"tdebug_pyhook_control.report.{k}")
             for k in ("serial", "reason", "breakpoint_id", "frame", "code", "line",
                       "step_mode", "tstate", "tid", "native_addr")}
        for k, n in (("file", 512), ("function", 128), ("native_what", 128)):
            r[k] = self.peek(self.addr(f"report.{k}"), n).split(b"\0")[0].decode()
        return r

    def cont_to_hook(self, timeout=SLOW):
        stopped = self.g.cont(timeout)
        assert self.is_hook_stop(stopped), stopped
        return self.report()

    def request_step(self, mode, report):
        """Write a step request from a stop's report, mode last."""
        self.poke_int("step.armed", 0)
        self.poke_int("step.tstate", report["tstate"], 8)
        self.poke_int("step.tid", report["tid"], 8)
        self.poke_int("step.frame", report["frame"], 8)
        self.poke_int("step.line", report["line"])
        self.poke_int("step.mode", mode)

    def step(self, mode, report):
        self.request_step(mode, report)
        return self.cont_to_hook()

    # -- detaching
    def detach(self):
        """disable by a memory write (no call), no breakpoint left, detach."""
        self.poke_int("disable", 1)
        self.kick()
        if self.stop_bp:
            self.g.cmd(f"-break-delete {self.stop_bp}")
        self.g.cmd("-target-detach")


def maps_object(pid, addr):
    """The file mapped at ADDR in PID's memory, or None."""
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5] if len(parts) > 5 else None
    return None


def marker_line(path, marker):
    """The 1-based line of PATH holding MARKER."""
    for n, text in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if marker in text:
            return n
    raise AssertionError(f"{marker} not in {path}")


# A program that loops in pure Python and prints "ready" first (a Python
# breakpoint at its "# LOOP" line hits at once, in a session that attaches).
LOOP = """\
import time
print("ready", flush=True)
i = 0
while True:
    i += 1          # LOOP
    if i % 100000 == 0:
        time.sleep(0.001)
"""


def hook_installed(pid):
    """The hook's own word, read by a gdb of its own: 1 while installed, 0
    once removed, None when gdb could not read it (no library loaded)."""
    r = subprocess.run(["gdb", "-nx", "-q", "-batch", "-p", str(pid),
                        "-ex", "print (int) tdebug_pyhook_control.installed"],
                       capture_output=True, text=True, timeout=SLOW)
    for line in r.stdout.splitlines():
        if line.startswith("$1 = "):
            return int(line[5:])
    return None
