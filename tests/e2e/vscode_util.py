"""Run the configurations 'tdebug vscode' writes the way VS Code runs them.

Nothing here is mocked: gdb and debugpy are the real ones.  What VS Code and
its extensions do is reproduced from what they are documented and coded to
do:

- Workspace: reads .vscode/launch.json and tasks.json as VS Code does (JSON
  with comments and trailing commas) and substitutes VS Code's variables.
- run_task(): a pre-launch task ("type": "process" or "shell"), run to its
  end before the configuration that names it starts.
- MIEngine: the C/C++ extension's gdb driver (microsoft/MIEngine,
  DebuggedProcess.GetInitializeCommands): gdb --interpreter=mi; target-async
  on; the setupCommands (MI commands as they are, others through
  -interpreter-exec console); pagination off; with symbolLoadInfo.loadAll
  false, auto-solib-add off and stop-on-solib-events 1, then at each stop
  'sharedlibrary NAME' for every library loaded since whose file name
  matches exceptionList (';'-separated, * and ? wildcards); then for a
  launch -environment-cd, -file-exec-and-symbols, -exec-arguments, a
  breakpoint on main that is deleted and continued from (stopAtEntry false),
  the user's breakpoints (-break-insert -f FILE:LINE) and -exec-run; for an
  attach -file-exec-and-symbols, -target-attach, the breakpoints, and
  -exec-continue.
- attach_debugpy(): the Python Debugger extension's side of a debugpy
  "attach" with "connect": a DAP client (dap_util.DapClient) on HOST:PORT
  sending initialize, attach (with the configuration as its arguments),
  setBreakpoints after the 'initialized' event, then configurationDone.

Every hit of a breakpoint, on either side, goes into one EventLog, so a test
can check the order in which they happened.
"""
import fnmatch
import itertools
import json
import os
import pathlib
import queue
import re
import shutil
import subprocess
import threading
import time

from conftest import ROOT, SLOW, run
from dap_util import DapClient
from tinytensor_util import TT_PKG, TT_SRC, marked_line

SCRIPTS = ROOT / "tests" / "fixtures" / "vscode" / "scripts"


# ---------------------------------------------------------------------------
# Reading launch.json and tasks.json

def _skip_space(text, i):
    """Past whitespace and comments from I."""
    n = len(text)
    while i < n:
        if text[i] in " \t\r\n":
            i += 1
        elif text.startswith("//", i):
            while i < n and text[i] not in "\r\n":
                i += 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated comment")
            i = end + 2
        else:
            break
    return i


def strip_jsonc(text):
    """JSON with comments and trailing commas (VS Code's dialect) -> JSON."""
    if text.startswith("\ufeff"):
        text = text[1:]
    out = []
    i, n = 0, len(text)
    while i < n:
        j = _skip_space(text, i)
        if j > i:
            out.append(" ")
            i = j
            continue
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif c == "," and _skip_space(text, i + 1) < n and text[_skip_space(text, i + 1)] in "]}":
            i += 1  # a trailing comma
        else:
            out.append(c)
            i += 1
    return "".join(out)


def load_jsonc(path):
    return json.loads(strip_jsonc(pathlib.Path(path).read_text(encoding="utf-8")))


VARIABLE = re.compile(r"\$\{([^}]*)\}")


def substitute(value, folder, env=None):
    """VS Code's variables in every string of VALUE.  A variable this harness
    does not know is an error, so a test notices tdebug writing one."""
    env = os.environ if env is None else env
    known = {
        "workspaceFolder": str(folder),
        "workspaceRoot": str(folder),
        "workspaceFolderBasename": pathlib.Path(folder).name,
        "userHome": os.path.expanduser("~"),
        "pathSeparator": os.sep,
        "/": os.sep,
        "cwd": str(folder),
    }

    def one(m):
        name = m.group(1)
        if name.startswith("env:"):
            return env.get(name[4:], "")
        if name in known:
            return known[name]
        raise ValueError(f"VS Code variable ${{{name}}} is not handled by this harness")

    if isinstance(value, str):
        return VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [substitute(v, folder, env) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, folder, env) for k, v in value.items()}
    return value


class Workspace:
    """A folder opened in VS Code: its launch.json and tasks.json."""

    def __init__(self, folder):
        self.folder = pathlib.Path(folder)
        self.launch = load_jsonc(self.folder / ".vscode" / "launch.json")
        tasks = self.folder / ".vscode" / "tasks.json"
        self.tasks = load_jsonc(tasks) if tasks.exists() else {"tasks": []}

    def _named(self, items, key, name):
        found = [x for x in items if x.get(key) == name]
        assert len(found) == 1, f"{len(found)} entries named {name!r}"
        return substitute(found[0], self.folder)

    def config(self, name):
        return self._named(self.launch.get("configurations", []), "name", name)

    def compound(self, name):
        return self._named(self.launch.get("compounds", []), "name", name)

    def task(self, label):
        return self._named(self.tasks.get("tasks", []), "label", label)

    def run_task(self, label, timeout=SLOW):
        """Run a pre-launch task to its end, as VS Code does before starting
        the configuration that names it."""
        t = self.task(label)
        opts = t.get("options", {})
        env = dict(os.environ, **opts.get("env", {}))
        cwd = opts.get("cwd", str(self.folder))
        if t["type"] == "process":
            args = [t["command"]] + list(t.get("args", []))
        elif t["type"] == "shell":
            args = ["/bin/sh", "-c", " ".join([t["command"]] + list(t.get("args", [])))]
        else:
            raise AssertionError(f"task type {t['type']!r} is not handled by this harness")
        return run(args, timeout=timeout, env=env, cwd=cwd)


# ---------------------------------------------------------------------------
# One log of breakpoint hits on both sides

class EventLog:
    def __init__(self):
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self.events = []

    def add(self, kind, **detail):
        with self._lock:
            self.events.append((next(self._counter), kind, dict(detail, t=time.monotonic())))

    def kinds(self):
        with self._lock:
            return [k for _, k, _ in self.events]


# ---------------------------------------------------------------------------
# gdb, the way the C/C++ extension drives it

def _mi_cstring(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _mi_field(line, name):
    m = re.search(name + r'="((?:[^"\\]|\\.)*)"', line)
    return m.group(1) if m else None


def _exec_arguments(args):
    # MIEngine quotes an argument holding spaces or quotes; gdb hands the
    # line to the shell that starts the program.
    out = []
    for a in args:
        if a == "" or re.search(r"[\s\"'\\$`]", a):
            a = '"' + re.sub(r'(["\\$`])', r"\\\1", a) + '"'
        out.append(a)
    return " ".join(out)


class MIEngine:
    def __init__(self, config, log, transcript):
        assert config["type"] == "cppdbg", config
        self.config = config
        self.log = log
        self.transcript = open(transcript, "a", buffering=1)
        info = config.get("symbolLoadInfo", {})
        self.load_all = info.get("loadAll", True)
        self.exceptions = [p for p in info.get("exceptionList", "").split(";") if p]
        self.source_map = config.get("sourceFileMap", {})
        self.proc = None
        self._token = itertools.count(100)
        self._results = {}
        self._cond = threading.Condition()
        self._async = queue.Queue()
        self._send_lock = threading.Lock()
        self._pending_libs = []
        self._entry_bkpt = None
        self.loaded_symbols = []
        self.exit_code = None
        self.inferior_pid = None
        self.exited = threading.Event()
        self.attached = threading.Event()
        self.error = None

    # -- process and I/O
    def start(self, procs):
        gdb = self.config.get("miDebuggerPath", "gdb")
        extra = self.config.get("miDebuggerArgs", "").split()
        self.proc = procs.start([gdb, "--interpreter=mi"] + extra, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                bufsize=1, errors="replace")
        threading.Thread(target=self._reader, daemon=True).start()
        threading.Thread(target=self._engine, daemon=True).start()
        self._wait_token(None)

    def _reader(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.transcript.write("<- " + line + "\n")
            m = re.match(r"^(\d+)\^(\w+)", line)
            if m:
                with self._cond:
                    self._results[int(m.group(1))] = (m.group(2), line)
                    self._cond.notify_all()
            elif line.startswith("=thread-group-started"):
                self.inferior_pid = int(_mi_field(line, "pid"))
            elif line.startswith("*stopped") or line.startswith("=library-loaded"):
                self._async.put(line)
            elif line.startswith("(gdb)"):
                with self._cond:
                    self._results.setdefault(None, ("prompt", line))
                    self._cond.notify_all()
        self._async.put(None)
        with self._cond:
            self._cond.notify_all()

    def _wait_token(self, tok, timeout=SLOW):
        deadline = time.monotonic() + timeout
        with self._cond:
            while tok not in self._results:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(f"gdb gave no answer to command {tok} (see the transcript)")
                self._cond.wait(min(left, 1.0))
            return self._results.pop(tok)

    def command(self, text, ignore_failures=False, timeout=SLOW):
        with self._send_lock:
            tok = next(self._token)
            self.transcript.write(f"-> {tok}{text}\n")
            self.proc.stdin.write(f"{tok}{text}\n")
            self.proc.stdin.flush()
        cls, line = self._wait_token(tok, timeout)
        if cls == "error" and not ignore_failures:
            raise AssertionError(f"gdb refused {text!r}: {line}")
        return cls, line

    def console(self, text, ignore_failures=False):
        return self.command("-interpreter-exec console " + _mi_cstring(text), ignore_failures)

    # -- what MIEngine does
    def _initialize(self):
        self.command("-gdb-set target-async on", ignore_failures=True)
        for c in self.config.get("setupCommands", []):
            text, ignore = c["text"], c.get("ignoreFailures", False)
            if text.startswith("-"):
                self.command(text, ignore)
            else:
                self.console(text, ignore)
        self.console("set pagination off")
        can_auto_load = self.load_all and not self.exceptions
        self.command("-gdb-set auto-solib-add " + ("on" if can_auto_load else "off"))
        self.command("-gdb-set stop-on-solib-events 1")

    def _editor_to_target(self, path):
        for target, editor in self.source_map.items():
            editor = editor if isinstance(editor, str) else editor.get("editorPath", "")
            if editor and path.startswith(editor.rstrip("/") + "/"):
                return target.rstrip("/") + path[len(editor.rstrip("/")):]
        return path

    def insert_breakpoints(self, breakpoints):
        for path, line in breakpoints:
            self.command(f"-break-insert -f {self._editor_to_target(str(path))}:{line}")

    def launch(self, breakpoints):
        c = self.config
        assert c["request"] == "launch"
        self._initialize()
        if c.get("cwd"):
            self.command("-environment-cd " + _mi_cstring(c["cwd"]))
        self.command("-file-exec-and-symbols " + _mi_cstring(c["program"]))
        if c.get("args"):
            self.command("-exec-arguments " + _exec_arguments(c["args"]))
        _, line = self.command("-break-insert main", ignore_failures=True)
        self._entry_bkpt = _mi_field(line, "number")
        for e in c.get("environment", []):
            self.command(f"-gdb-set environment {e['name']}={e['value']}")
        self.insert_breakpoints(breakpoints)
        self.command("-exec-run")

    def attach(self, breakpoints, timeout=SLOW):
        c = self.config
        assert c["request"] == "attach"
        self._initialize()
        self.command("-file-exec-and-symbols " + _mi_cstring(c["program"]))
        self.command(f"-target-attach {int(c['processId'])}")
        if not self.attached.wait(timeout):
            raise AssertionError("gdb never stopped after attaching (see the transcript)")
        self.insert_breakpoints(breakpoints)
        self.command("-exec-continue")

    def _matches(self, host_name):
        base = host_name.rsplit("/", 1)[-1]
        for pat in self.exceptions:
            if fnmatch.fnmatchcase(base, pat):
                return True
            if "*" not in pat and "?" not in pat and os.path.splitext(base)[0] == pat:
                return True
        return False

    def _load_symbols(self):
        libs, self._pending_libs = self._pending_libs, []
        if self.load_all and not self.exceptions:
            return
        for lib in libs:
            wanted = self._matches(lib)
            if wanted != self.load_all:  # loadAll false: load the listed ones
                base = lib.rsplit("/", 1)[-1]
                self.console("sharedlibrary " + base)
                self.loaded_symbols.append(base)

    def _engine(self):
        try:
            while True:
                line = self._async.get()
                if line is None:
                    return
                if line.startswith("=library-loaded"):
                    name = _mi_field(line, "host-name")
                    if name:
                        self._pending_libs.append(name)
                    continue
                self._stopped(line)
        except Exception as e:  # the test thread reports it
            self.error = e
            self.exited.set()

    def _stopped(self, line):
        reason = _mi_field(line, "reason")
        if reason == "exited-normally":
            self.exit_code = 0
        elif reason == "exited":
            self.exit_code = int(_mi_field(line, "exit-code"), 8)
        elif reason == "exited-signalled":
            self.exit_code = -1
        if reason and reason.startswith("exited"):
            self.exited.set()
            return
        self._load_symbols()
        if reason == "breakpoint-hit" and _mi_field(line, "bkptno") == self._entry_bkpt:
            self.command(f"-break-delete {self._entry_bkpt}")
            self._entry_bkpt = None
        elif reason == "breakpoint-hit":
            frame = line[line.index("frame={"):]  # one frame in a stop record
            self.log.add("c", func=_mi_field(frame, "func"), file=_mi_field(frame, "fullname"),
                         line=int(_mi_field(frame, "line") or 0))
        elif reason is None and not self.attached.is_set() and self.config["request"] == "attach":
            self.attached.set()  # -target-attach's stop; the attach goes on from there
            return
        self.command("-exec-continue")

    def wait_exit(self, timeout=SLOW):
        if not self.exited.wait(timeout):
            raise AssertionError("the program never exited under gdb (see the transcript)")
        if self.error:
            raise self.error
        return self.exit_code

    def close(self):
        if self.proc and self.proc.poll() is None:
            try:
                with self._send_lock:
                    self.proc.stdin.write("-gdb-exit\n")
                    self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.transcript.close()


# ---------------------------------------------------------------------------
# debugpy, the way the Python Debugger extension talks to it

def attach_debugpy(config, breakpoints, transcript):
    """A debugpy "attach" configuration with "connect", as the Python
    Debugger extension starts it: returns the client (dap_util.DapClient)
    once configurationDone has been answered.  BREAKPOINTS: [(path, line)]."""
    assert config["type"] == "debugpy" and config["request"] == "attach", config
    conn = config["connect"]
    dap = DapClient.connect(conn.get("host", "127.0.0.1"), int(conn["port"]), timeout=SLOW,
                            transcript=transcript)
    dap.initialize(clientID="vscode", clientName="Visual Studio Code", supportsVariableType=True)
    attach = dap.attach(**dict(config, __sessionId="tdebug-e2e"))
    dap.wait_event("initialized", timeout=SLOW)
    by_file = {}
    for path, line in breakpoints:
        by_file.setdefault(str(path), []).append(line)
    for path, lines in by_file.items():
        set_ = dap.set_breakpoints(path, lines)
        assert all(b["verified"] for b in set_), set_
    dap.configuration_done()
    dap.wait_response(attach, timeout=SLOW)
    return dap


def follow_python(dap, log, timeout=SLOW):
    """Record every Python breakpoint stop in LOG and continue, until the
    program exits; returns its exit code as debugpy reports it, or None when
    it only says 'terminated'."""
    after = 0
    while True:
        i, e = dap.next_event(("stopped", "exited", "terminated"), timeout=timeout, after=after)
        after = i + 1
        if e["event"] == "exited":
            return e["body"]["exitCode"]
        if e["event"] == "terminated":
            return None
        tid = e["body"]["threadId"]
        frame = dap.stack_trace(tid, levels=1)[0]
        log.add("python", reason=e["body"]["reason"], file=frame["source"]["path"], line=frame["line"])
        dap.continue_(tid)


def kill_adapters(port):
    """End debugpy's adapter for PORT by its pid: debugpy double-forks it out
    of the test's process groups, so the procs fixture cannot reach it."""
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"debugpy" in a for a in argv) and b"--port" in argv and str(port).encode() in argv:
            try:
                os.kill(int(d.name), 9)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------------
# The sample: tinytensor and the scripts that call it

def marker_line(path, marker):
    for n, text in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        if marker in text:
            return n
    raise AssertionError(f"no {marker} in {path}")


# tinytensor's kernel for a float64 add: hit once by 'ones(2) + 1'.
C_BREAKPOINT = ("csrc/core/tt_native_cpu.c", "add kernel call", "tt_native_add")


def sample_workspace(dest):
    """A workspace holding the test scripts and a copy of tinytensor as
    'make' built it (-O0 -g3): a user's folder with their own extension.
    Returns DEST."""
    dest = pathlib.Path(dest)
    if not (TT_PKG / "lib" / "libtt_core.so").exists():
        raise AssertionError(f"{TT_PKG} is not built; run 'make' first")
    shutil.copytree(SCRIPTS, dest, dirs_exist_ok=True)
    shutil.copytree(TT_PKG, dest / "tinytensor")
    return dest


def sample_breakpoints(ws, script):
    """([(python file, line)], [(C file, line)]) for SCRIPT in WS."""
    c_file = TT_SRC / C_BREAKPOINT[0]
    return ([(ws / script, marker_line(ws / script, "PYTHON-BREAKPOINT"))],
            [(c_file, marked_line(C_BREAKPOINT[0], C_BREAKPOINT[1]))])


# VS Code's JSON Schemas for launch.json, kept in the checkout (their
# provenance is in the README beside them).
SCHEMAS = ROOT / "tests" / "fixtures" / "schemas" / "vscode"


def schema_for(config, directory):
    name = f"{config['type']}.{config['request']}.schema.json"
    path = pathlib.Path(directory) / name
    assert path.exists(), f"no schema {name} for a configuration tdebug wrote"
    return json.loads(path.read_text())

