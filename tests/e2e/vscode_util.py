"""Run the configurations 'tdebug vscode' writes the way VS Code runs them.

Nothing here is mocked: gdb and debugpy are the real ones.  What VS Code and
its extensions do is reproduced from their sources (microsoft/vscode,
microsoft/MIEngine, debugpy):

- Workspace: reads .vscode/launch.json and tasks.json as VS Code does (JSON
  with comments and trailing commas) and substitutes VS Code's variables,
  in keys as in values.
- run_task(): a pre-launch task ("type": "process" or "shell"), run to its
  end before the configuration that names it starts.
- MIEngine: the C/C++ extension's gdb driver (DebuggedProcess.
  GetInitializeCommands and the transports): gdb --interpreter=mi, or,
  with "pipeTransport", the pipe program with MIEngine's argument string as
  .NET splits it; target-async on; the setupCommands (MI commands as they
  are, others through -interpreter-exec console with '"', '\\' and newlines
  escaped); pagination off; 'set debuginfod enabled off'; auto-solib-add off
  when symbolLoadInfo has loadAll false or an exceptionList, and
  stop-on-solib-events 1 for a launch or an exceptionList, then at each
  stop 'sharedlibrary NAME' for every library loaded since whose file name
  matches exceptionList (';'-separated, * and ? wildcards, or the name
  without its extension); then for a launch -environment-cd,
  -file-exec-and-symbols, -exec-arguments with each argument quoted as
  LaunchOptions.QuoteArgument quotes it (in double quotes, escaping
  nothing, only when it holds a space, tab or parenthesis and does not
  start with '"'), a breakpoint on main that is deleted and continued from
  (stopAtEntry false), the user's breakpoints and -exec-run; for an attach
  -file-exec-and-symbols, -target-attach, the breakpoints, and
  -exec-continue.  A breakpoint goes as -break-insert -f FILE:LINE with
  FILE the editor's path mapped by sourceFileMap when an entry maps it
  (at a directory boundary), else its file name alone.
- disconnect(): MIEngine's answer to DAP 'disconnect': detach for an attach
  or when terminateDebuggee is false, else kill.
- attach_debugpy(): the Python Debugger extension's side of a debugpy
  "attach" with "connect": a DAP client (dap_util.DapClient) on HOST:PORT
  sending initialize, attach (with the configuration as its arguments),
  setBreakpoints after the 'initialized' event, then configurationDone.
- vscode_stop(): what VS Code sends when the user stops one session of a
  compound (DebugSession.terminate/disconnect and DebugCompoundRoot).

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

from conftest import BUILD, PYTHON, ROOT, SLOW, run
from dap_util import DapClient
from pty_util import Terminal
from tdap_util import Adapter
from tinytensor_util import TT_PKG, TT_SRC, marked_line

SCRIPTS = ROOT / "tests" / "fixtures" / "vscode" / "scripts"
# The runner the launched interpreter starts on, as 'make' puts it.
RUNNER = BUILD / "python" / "tdebug" / "_vscode_run.py"


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
# Variables VS Code resolves that this harness cannot.
UNRESOLVABLE = {"command", "input", "config", "extensionInstallFolder", "file", "fileDirname",
                "fileBasename", "fileBasenameNoExtension", "fileExtname", "fileDirnameBasename",
                "fileWorkspaceFolder", "fileWorkspaceFolderBasename", "relativeFile",
                "relativeFileDirname", "lineNumber", "columnNumber", "selectedText",
                "execPath", "execInstallFolder"}


def substitute(value, folder, env=None):
    """VS Code's variables in every string of VALUE (and key).  A name VS
    Code does not know stays as it is, as VS Code leaves it (MIEngine's
    ${debuggerCommand} relies on that); one this harness cannot resolve
    (commands, inputs, settings, the open editor's) is an error, so a test
    notices tdebug writing one."""
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
        if name.split(":")[0] in UNRESOLVABLE:
            raise ValueError(f"VS Code variable ${{{name}}} is not handled by this harness")
        return m.group(0)

    if isinstance(value, str):
        return VARIABLE.sub(one, value)
    if isinstance(value, list):
        return [substitute(v, folder, env) for v in value]
    if isinstance(value, dict):  # keys too (AbstractVariableResolverService)
        return {substitute(k, folder, env): substitute(v, folder, env) for k, v in value.items()}
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
    """A console command as MIEngine's Debugger.Escape() quotes it."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _mi_field(line, name):
    m = re.search(name + r'="((?:[^"\\]|\\.)*)"', line)
    return m.group(1) if m else None


def quote_argument(arg):
    """LaunchOptions.QuoteArgument: in double quotes, escaping nothing, only
    when empty or holding a space, tab or parenthesis and not starting with
    a double quote."""
    if arg == "" or (arg[0] != '"' and any(c in arg for c in " \t()")):
        return '"' + arg + '"'
    return arg


def parse_arguments(args, quote=True):
    """LaunchOptions.ParseArguments: the words joined by spaces."""
    return " ".join(quote_argument(a) if quote else a for a in args)


def dotnet_split(s):
    """How .NET's Process splits an argument string into argv on Unix
    (ParseArgumentsIntoList): whitespace separates, double quotes group,
    2N backslashes before a quote are N and the quote counts, 2N+1 are N
    and a literal quote, "" inside quotes is a quote."""
    out, cur, in_quotes, have, i = [], [], False, False, 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            n = 0
            while i < len(s) and s[i] == "\\":
                n += 1
                i += 1
            if i < len(s) and s[i] == '"':
                cur.append("\\" * (n // 2))
                if n % 2:
                    cur.append('"')
                    i += 1
            else:
                cur.append("\\" * n)
            have = True
            continue
        if c == '"':
            if in_quotes and i + 1 < len(s) and s[i + 1] == '"':
                cur.append('"')
                i += 2
                continue
            in_quotes = not in_quotes
            have = True
        elif c in " \t" and not in_quotes:
            if have:
                out.append("".join(cur))
                cur, have = [], False
        else:
            cur.append(c)
            have = True
        i += 1
    if have:
        out.append("".join(cur))
    return out


def pipe_command(transport):
    """argv of the process MIEngine starts for a "pipeTransport"
    (PipeLaunchOptions.CreateFromJson, EnsurePipeArguments): the debugger
    command put in place of ${debuggerCommand}, or appended."""
    quote = transport.get("quoteArgs", True)
    debugger = (transport.get("debuggerPath") or "/usr/bin/gdb") + " --interpreter=mi"
    args = parse_arguments(transport.get("pipeArgs", []), quote)
    if "${debuggerCommand}" in args:
        args = args.replace("${debuggerCommand}", debugger)
    else:
        args = f"{args} {quote_argument(debugger) if quote else debugger}"
    return [transport["pipeProgram"]] + dotnet_split(args)


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
        self.on_breakpoint = None  # called with (self, the stop record) at each breakpoint hit
        self.breakpoint_answers = []
        self.loaded_symbols = []
        self._running = threading.Event()
        self._quitting = threading.Event()
        self._paused = threading.Event()
        self.exit_code = None
        self.inferior_pid = None
        self.exited = threading.Event()
        self.attached = threading.Event()
        self.error = None

    # -- process and I/O
    def command_line(self):
        """argv and working directory of gdb as MIEngine starts it: through
        the pipe program of a "pipeTransport" (PipeTransport.InitStreams),
        else miDebuggerPath itself in its own directory (LocalTransport)."""
        pipe = self.config.get("pipeTransport")
        if pipe:
            argv = pipe_command(pipe)
            return argv, pipe.get("pipeCwd") or os.path.dirname(argv[0])
        gdb = self.config.get("miDebuggerPath", "gdb")
        extra = dotnet_split(self.config.get("miDebuggerArgs", ""))
        return [gdb, "--interpreter=mi"] + extra, os.path.dirname(gdb) or None

    def start(self, procs, prefix=()):
        """Start gdb; PREFIX (e.g. setpriv ...) runs it as another user."""
        argv, cwd = self.command_line()
        self.proc = procs.start(list(prefix) + argv, cwd=cwd, stdin=subprocess.PIPE,
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
            elif line.startswith("*running"):
                self._running.set()
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
        self.command('-interpreter-exec console "set pagination off"')
        debuginfod = self.config.get("debuginfod", {}).get("enabled", False)
        self.console(f"set debuginfod enabled {'on' if debuginfod else 'off'}", ignore_failures=True)
        can_auto_load = self.load_all and not self.exceptions
        self.command("-gdb-set auto-solib-add " + ("on" if can_auto_load else "off"))
        # WaitDynamicLibLoad (an exceptionList) or the terminal reset of a
        # local launch
        if self.exceptions or self.config["request"] == "launch":
            self.command("-gdb-set stop-on-solib-events 1")

    def breakpoint_file(self, path):
        """The file name MIEngine sends for a breakpoint in the editor's
        PATH (DebuggedProcess.MapCurrentSrcToCompileTimeSrc, then
        Breakpoints.Bind): mapped by the first sourceFileMap entry whose
        editor path starts it at a directory boundary, else its base name."""
        for target, editor in self.source_map.items():
            use = True
            if not isinstance(editor, str):
                editor, use = editor.get("editorPath", ""), editor.get("useForBreakpoints", True)
            if not use or not editor or not path.startswith(editor):
                continue
            rest = path[len(editor):]
            if not rest:
                return target
            if rest[0] == "/":
                rest = rest.strip("/")
            elif not editor.endswith("/"):
                continue
            return os.path.join(target, rest)
        return os.path.basename(path)

    def insert_breakpoints(self, breakpoints):
        """Returns gdb's answers, one a breakpoint."""
        answers = []
        for path, line in breakpoints:
            name = self.breakpoint_file(str(path)).strip()
            location = f"{name}:{line}"
            if " " in name:  # MICommandFactory.PreparePath
                location = '"' + name.replace("\\", "\\\\") + f':{line}"'
            answers.append(self.command(f"-break-insert -f {location}")[1])
        return answers

    def launch(self, breakpoints):
        c = self.config
        assert c["request"] == "launch"
        self._initialize()
        if c.get("cwd"):
            self.command("-environment-cd " + _mi_cstring(c["cwd"]))
        self.command("-file-exec-and-symbols " + _mi_cstring(c["program"]))
        args = parse_arguments(c.get("args", []))
        if args.strip():
            self.command("-exec-arguments " + args)
        _, line = self.command("-break-insert main", ignore_failures=True)
        self._entry_bkpt = _mi_field(line, "number")
        for e in c.get("environment", []):
            self.command(f"-gdb-set environment {e['name']}={e['value']}")
        self.breakpoint_answers = self.insert_breakpoints(breakpoints)
        self.command("-exec-run")

    def attach(self, breakpoints, timeout=SLOW):
        c = self.config
        assert c["request"] == "attach"
        self._initialize()
        self.command("-file-exec-and-symbols " + _mi_cstring(c["program"]))
        self.command(f"-target-attach {int(c['processId'])}")
        if not self.attached.wait(timeout):
            raise AssertionError("gdb never stopped after attaching (see the transcript)")
        self.breakpoint_answers = self.insert_breakpoints(breakpoints)
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

    def disconnect(self, terminate_debuggee=None, timeout=SLOW):
        """MIEngine's answer to a DAP 'disconnect' (AD7DebugSession.
        HandleDisconnectRequestAsync): detach for an attach or when
        terminateDebuggee is false (interrupting a running program first,
        as Debugger.CmdDetach does), else kill; then gdb exits."""
        detach = self.config["request"] == "attach" or terminate_debuggee is False
        self._quitting.set()
        if self._running.is_set():
            self.command("-exec-interrupt", ignore_failures=True)
            if not self._paused.wait(timeout):
                raise AssertionError("gdb never stopped for the detach (see the transcript)")
        self.command("-target-detach" if detach else "kill", ignore_failures=not detach)
        self.close()

    def _stopped(self, line):
        self._running.clear()
        if self._quitting.is_set():
            self._paused.set()
            return
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
            if self.on_breakpoint:  # look around, as a user at a stop does
                self.on_breakpoint(self, line)
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
# Both sessions of a compound

def debug_both(procs, tmp_path, gdb_conf, py_conf, c_bps, py_bps, start_gdb, go=None,
               on_breakpoint=None):
    """The two sessions of a compound: gdb started by START_GDB(gdb) with
    the C breakpoints, then debugpy with the Python ones; GO() (if given)
    once both are in; ON_BREAKPOINT(gdb, stop record) at each C breakpoint
    hit.  Returns the log of hits, the pid debugpy reported, the pid gdb
    started, the exit status gdb saw, and the libraries whose symbols
    MIEngine loaded."""
    log = EventLog()
    gdb = MIEngine(gdb_conf, log, tmp_path / "gdb-mi.log")
    gdb.on_breakpoint = on_breakpoint
    try:
        gdb.start(procs)
        start_gdb(gdb)
        dap = attach_debugpy(py_conf, py_bps, tmp_path / "dap.log")
        try:
            pid = dap.process_pid(timeout=SLOW)
            if go:
                go()
            follow_python(dap, log)
        finally:
            dap.close()
        status = gdb.wait_exit()
        inferior = gdb.inferior_pid
        loaded = set(gdb.loaded_symbols)
    finally:
        gdb.close()
        kill_adapters(py_conf["connect"]["port"])
    return log, pid, inferior, status, loaded


def debug_launch(procs, tmp_path, ws, label, c_bps, py_bps, tweak=None, on_breakpoint=None):
    """Run the launch compound 'tdebug vscode' wrote for LABEL in WS as VS
    Code does (TWEAK(gdb configuration) first, when given): see
    debug_both()."""
    w = Workspace(ws)
    compound = w.compound(f"tdebug: {label} (Python + C++)")
    gdb_conf, py_conf = (w.config(n) for n in compound["configurations"])
    if tweak:
        tweak(gdb_conf)

    def start(gdb):
        # VS Code starts both configurations of the compound at once; the
        # debugpy one waits for its pre-launch task first.
        gdb.launch(c_bps)
        task = w.run_task(py_conf["preLaunchTask"])
        assert task.returncode == 0, task.stderr

    return debug_both(procs, tmp_path, gdb_conf, py_conf, c_bps, py_bps, start,
                      on_breakpoint=on_breakpoint)


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


# A small C++ extension (tests/fixtures/vscode/cppext/README.md).
CPPEXT = ROOT / "tests" / "fixtures" / "vscode" / "cppext"


def cpp_workspace(tmp_path):
    """A workspace holding cppext, built in place (-O0 -g) as its user would."""
    ws = tmp_path / "ws"
    shutil.copytree(CPPEXT, ws)
    r = run([PYTHON, "setup.py", "-q", "build_ext", "--inplace"], cwd=ws)
    assert r.returncode == 0, r.stdout + r.stderr
    return ws


def sample_breakpoints(ws, script):
    """([(python file, line)], [(C file, line)]) for SCRIPT in WS."""
    c_file = TT_SRC / C_BREAKPOINT[0]
    return ([(ws / script, marker_line(ws / script, "PYTHON-BREAKPOINT"))],
            [(c_file, marked_line(C_BREAKPOINT[0], C_BREAKPOINT[1]))])


# VS Code's JSON Schemas for launch.json, kept in the checkout (their
# provenance is in the README beside them).
SCHEMAS = ROOT / "tests" / "fixtures" / "schemas" / "vscode"


# tdebug's own extension: its package.json contributes the "tdebug" type.
EXTENSION = ROOT / "vscode" / "extension"


def extension_schema(request):
    """The JSON Schema VS Code checks a "tdebug" configuration with: the
    extension's configurationAttributes[REQUEST], merged as VS Code merges
    every debugger's (Debugger.getSchemaAttributes in microsoft/vscode's
    src/vs/workbench/contrib/debug/common/debugger.ts: name, type and
    request required, the properties every configuration has added, no
    other property allowed), with the same common properties as the
    fixture schemas beside it."""
    pkg = json.loads((EXTENSION / "package.json").read_text())
    (debugger,) = pkg["contributes"]["debuggers"]
    attrs = json.loads(json.dumps(debugger["configurationAttributes"][request]))  # a copy
    props = attrs.setdefault("properties", {})
    props.update({
        "type": {"enum": [debugger["type"]]},
        "name": {"type": "string"},
        "request": {"enum": [request]},
        "debugServer": {"type": "number"},
        "preLaunchTask": {"type": ["string", "object", "null"]},
        "postDebugTask": {"type": ["string", "object", "null"]},
        "presentation": {"type": "object"},
        "internalConsoleOptions": {"enum": ["neverOpen", "openOnSessionStart",
                                            "openOnFirstSessionStart"]},
        "suppressMultipleSessionWarning": {"type": "boolean"},
        "windows": {"type": "object"}, "linux": {"type": "object"}, "osx": {"type": "object"},
    })
    attrs["required"] = ["name", "type", "request"] + attrs.get("required", [])
    attrs["additionalProperties"] = False
    attrs["type"] = "object"
    attrs["$schema"] = "http://json-schema.org/draft-07/schema#"
    return attrs


def schema_for(config, directory):
    """The schema of CONFIG: the extension's own for a "tdebug" one, else
    the fixture for its debugger in DIRECTORY."""
    if config["type"] == "tdebug":
        return extension_schema(config["request"])
    name = f"{config['type']}.{config['request']}.schema.json"
    path = pathlib.Path(directory) / name
    assert path.exists(), f"no schema {name} for a configuration tdebug wrote"
    return json.loads(path.read_text())


def install_extension(tdebug, home):
    """'tdebug vscode --install-extension' for a user whose home is HOME, as
    'tdebug vscode' then finds it.  Returns HOME."""
    home = pathlib.Path(home)
    home.mkdir(parents=True, exist_ok=True)
    run([tdebug, "vscode", "--install-extension"], env=dict(os.environ, HOME=str(home)),
        check=True)
    return home



# ---------------------------------------------------------------------------
# The "tdebug" configuration, run as VS Code runs it

# What VS Code says in 'initialize' (DebugSession.initialize in
# microsoft/vscode's src/vs/workbench/contrib/debug/browser/debugSession.ts).
VSCODE_INITIALIZE = {
    "clientID": "vscode", "clientName": "Visual Studio Code", "adapterID": "tdebug",
    "pathFormat": "path", "linesStartAt1": True, "columnsStartAt1": True,
    "supportsVariableType": True, "supportsVariablePaging": True,
    "supportsRunInTerminalRequest": True, "locale": "en", "supportsProgressReporting": True,
    "supportsInvalidatedEvent": True, "supportsMemoryReferences": True,
    "supportsArgsCanBeInterpretedByShell": True, "supportsMemoryEvent": True,
    "supportsStartDebuggingRequest": True, "supportsANSIStyling": True,
}


class VSCodeTdebug:
    """A "tdebug" configuration from launch.json run as VS Code runs it: the
    adapter the extension names ('tdebug dap', started in a directory of
    its own, not the workspace), 'initialize' as VS Code says it, the
    configuration with its variables substituted (vscode_util.Workspace)
    as the launch or attach request, with the keys VS Code adds; the
    breakpoints once 'initialized' came (setBreakpoints per file, then
    setFunctionBreakpoints and setExceptionBreakpoints, empty), then
    configurationDone; runInTerminal answered with a terminal (a pty)."""

    def __init__(self, tdebug, procs, tmp_path, ws, name):
        self.conf = Workspace(ws).config(name)
        elsewhere = tmp_path / "adapter-cwd"
        elsewhere.mkdir(exist_ok=True)
        self.dap = Adapter.start(tdebug, procs, tmp_path, cwd=str(elsewhere))
        self.terminals = []
        self.dap.on_reverse_request("runInTerminal", self._run_in_terminal)
        self.dap.c.initialize(**VSCODE_INITIALIZE)

    def _run_in_terminal(self, args):
        t = Terminal(args["args"])
        self.terminals.append(t)
        return {"processId": t.proc.pid}

    def start(self, breakpoints=()):
        def setup(d):
            by_file = {}
            for path, line in breakpoints:
                by_file.setdefault(str(path), []).append(line)
            for path, lines in by_file.items():
                d.set_breakpoints(path, lines)
            d.request("setFunctionBreakpoints", {"breakpoints": []})
            d.request("setExceptionBreakpoints", {"filters": []})
        args = dict(self.conf, __configurationTarget=6, __sessionId="tdebug-e2e-session")
        r = self.dap.start_program(self.conf["request"], args, setup)
        assert r["success"], r
        return r

    def close(self):
        for t in self.terminals:
            t.close()


# ---------------------------------------------------------------------------
# VS Code stopping the sessions of a compound

def _end_session(session, terminate):
    """DebugSession.terminate() (TERMINATE) or disconnect() on one session:
    an MIEngine, or a (DapClient, configuration) pair for debugpy."""
    if isinstance(session, MIEngine):
        # cppdbg has no 'terminate' request: both are a 'disconnect'
        session.disconnect(terminate_debuggee=terminate)
        return
    dap, config = session
    if terminate and config["request"] == "launch":  # debugpy supports 'terminate'
        dap.request("terminate", {}, check=False)
    else:
        dap.disconnect(terminate=terminate)


def vscode_stop(sessions, stopped, disconnect, compound):
    """What VS Code sends when the user stops the session named STOPPED of
    those a COMPOUND started (SESSIONS: configuration name -> session): to
    it, 'disconnect' with terminateDebuggee false when DISCONNECT (the
    Disconnect button, which is also Shift+F5 on an attach session), else
    terminate(), which for an attach is 'disconnect' with terminateDebuggee
    true; then, when the compound has stopAll, terminate() to every other
    one (DebugCompoundRoot.onDidSessionStop)."""
    _end_session(sessions[stopped], terminate=not disconnect)
    if compound.get("stopAll"):
        for name, session in sessions.items():
            if name != stopped:
                _end_session(session, terminate=True)
