"""Real debugpy layouts for end-to-end tests, started and torn down whole.

- ListenLayout: '/usr/bin/python3 -m debugpy --listen 127.0.0.1:PORT
  --wait-for-client prog.py', driven with the DAP client (initialize, attach
  with non-empty arguments, 'initialized', configurationDone).  User code
  runs in the server process itself; debugpy spawns a double-forked adapter
  (parent 1, its own session) that a process-group kill does not reach.
- LaunchLayout: VS Code's layout: '/usr/bin/python3 -m debugpy.adapter' on
  stdio plus a 'launch' request ("console": "internalConsole"), so the
  adapter starts the launcher, which starts the debuggee
  ('... debugpy --connect ...').
- EmbeddedLayout: a program that calls debugpy.listen() itself.

Each knows its pids from the outside: the debuggee's own pid comes from the
DAP 'process' event (systemProcessId); the adapter and launcher are found by
the unique port in their command lines and by parentage.  Readiness of a
listening port is read from /proc/net/tcp: connecting to probe it would kill
the adapter (FIELD-NOTES "debugpy").

    with ListenLayout(procs, tmp_path) as lay:
        lay.server_pid, lay.adapter_pid, lay.debuggee_pid
"""
import os
import signal
import subprocess

from conftest import PYTHON, clean_env, free_port, parent_of, proc_state, wait_until
from dap_util import DapClient

TIMEOUT = 120

# The programs under the debugger say where they are once user code runs
# (their pid, written to the file named by argv[1]), then idle until
# killed.  IMPORTS is put first (e.g. "import torch").
_READY_THEN_IDLE = """
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    time.sleep(0.2)
"""

PROGRAM = "{imports}\nimport os, sys, time\n" + _READY_THEN_IDLE

# Starting a Python child first: debugpy makes it a debuggee too, connected
# to the same adapter.
PROGRAM_WITH_CHILD = """{imports}
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.2)",
                          sys.argv[1]])
""" + _READY_THEN_IDLE

# Calling debugpy.listen() itself, on the port in argv[2].
EMBEDDED_PROGRAM = """{imports}
import os, sys, time
import debugpy
debugpy.listen(("127.0.0.1", int(sys.argv[2])))
""" + _READY_THEN_IDLE


def tcp_listening(port):
    """Is something listening on TCP PORT (any address)?  Read from
    /proc/net/tcp{,6}, without connecting."""
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                lines = f.readlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def cmdline(pid):
    """The argument list of PID, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            data = f.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return [a.decode("utf-8", "replace") for a in data.split(b"\0")[:-1]]


def all_pids():
    return [int(d) for d in os.listdir("/proc") if d.isdigit()]


def find_pids(pred):
    """Pids whose argument list satisfies PRED(argv)."""
    found = []
    for pid in all_pids():
        argv = cmdline(pid)
        if argv and pred(argv):
            found.append(pid)
    return sorted(found)


def alive(pid):
    return proc_state(pid) not in (None, "Z", "X")


def kill_if(pid, marker):
    """SIGKILL PID (and its process group when it leads one) if its command
    line still contains MARKER: never a process that merely reused the pid."""
    argv = cmdline(pid)
    if not argv or not any(marker in a for a in argv):
        return
    for sig_target in (lambda: os.killpg(os.getpgid(pid), signal.SIGCONT),
                       lambda: os.kill(pid, signal.SIGKILL)):
        try:
            sig_target()
        except (ProcessLookupError, PermissionError):
            pass
    try:
        if os.getpgid(pid) == pid:
            os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_ready(path, what, proc=None, timeout=TIMEOUT):
    """The pid a program wrote to PATH once its user code ran."""
    def ready():
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what} exited with {proc.returncode} before it was ready")
        return os.path.exists(path)
    wait_until(ready, timeout=timeout, what=what)
    with open(path) as f:
        return int(f.read())


class _Layout:
    imports = ""

    def __init__(self, procs, tmp_path, imports="", python=PYTHON):
        self.procs = procs
        self.tmp = tmp_path
        self.imports = imports
        self.python = python
        self.port = free_port()
        self.marker = str(self.port)
        self.ready_path = str(tmp_path / f"ready-{self.port}")
        self.client = None
        self.server_pid = self.adapter_pid = self.launcher_pid = self.debuggee_pid = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def _write(self, name, template):
        path = self.tmp / name
        path.write_text(template.format(imports=self.imports))
        return str(path)

    def _gone(self, pids):
        wait_until(lambda: not any(p and alive(p) for p in pids), timeout=60,
                   what=f"processes {pids} to exit")


class ListenLayout(_Layout):
    """'python -m debugpy --listen 127.0.0.1:PORT --wait-for-client prog'
    with a DAP client attached and the program released."""

    def start(self):
        prog = self._write(f"listen_{self.port}.py", PROGRAM)
        self.server = self.procs.start(
            [self.python, "-m", "debugpy", "--listen", f"127.0.0.1:{self.port}",
             "--wait-for-client", prog, self.ready_path],
            env=clean_env(PYDEVD_DISABLE_FILE_VALIDATION=1),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.server_pid = self.server.pid
        wait_until(lambda: tcp_listening(self.port) or self.server.poll() is not None,
                   timeout=TIMEOUT, what=f"debugpy to listen on {self.port}")
        assert self.server.poll() is None, "the debugpy server exited"
        self.adapter_pid = self._find_adapter()
        self.client = DapClient.connect("127.0.0.1", self.port)
        self.client.initialize()
        attach = self.client.attach(justMyCode=False)
        self.client.wait_event("initialized")
        self.client.configuration_done()
        self.client.wait_response(attach)
        self.debuggee_pid = self.client.process_pid()
        read_ready(self.ready_path, "the --listen program", self.server)

    def _find_adapter(self):
        """The adapter debugpy spawned for our port: '--for-server N ...
        --port PORT', found by its command line.  It double-forks: the
        intermediate process has the same command line and a parent that is
        the server or another match; the adapter's parent is neither."""
        def find():
            pids = find_pids(lambda a: "--for-server" in a and "--port" in a
                             and a[a.index("--port") + 1] == self.marker
                             and any(x.endswith("adapter") for x in a))
            final = [p for p in pids if alive(p) and parent_of(p) not in pids + [self.server_pid]]
            return final[0] if len(final) == 1 else None
        return wait_until(find, timeout=TIMEOUT, what="the debugpy adapter")

    def stop(self):
        if self.client:
            self.client.disconnect()
            self.client.close()
        if getattr(self, "server", None) and self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGKILL)
            self.server.wait(30)
        if self.adapter_pid:
            kill_if(self.adapter_pid, self.marker)
        self._gone([self.server_pid, self.adapter_pid])


class LaunchLayout(_Layout):
    """VS Code's layout: 'python -m debugpy.adapter' on stdio, a 'launch'
    request; the adapter starts the launcher, the launcher the debuggee.
    With CHILD, the debuggee starts a Python child that debugpy connects to
    the same adapter (child_pid)."""

    def __init__(self, procs, tmp_path, imports="", python=PYTHON, child=False):
        super().__init__(procs, tmp_path, imports, python)
        self.child = child
        self.child_pid = None

    def start(self):
        prog = self._write(f"launch_{self.port}.py", PROGRAM_WITH_CHILD if self.child else PROGRAM)
        self.client, self.adapter = DapClient.spawn(
            [self.python, "-m", "debugpy.adapter"], procs=self.procs,
            env=clean_env(PYDEVD_DISABLE_FILE_VALIDATION=1))
        self.adapter_pid = self.adapter.pid
        self.client.initialize()
        launch = self.client.launch(program=prog, args=[self.ready_path],
                                    console="internalConsole", justMyCode=False,
                                    python=[self.python], cwd=str(self.tmp))
        self.client.wait_event("initialized")
        self.client.configuration_done()
        self.client.wait_response(launch)
        self.debuggee_pid = self.client.process_pid()
        read_ready(self.ready_path, "the launched program")
        self.launcher_pid = parent_of(self.debuggee_pid)
        if self.child:
            # Once the child has connected to the adapter, the adapter asks
            # the client to attach to it: 'debugpyAttach' with its pid.
            # (debugpy holds the child until a client does, so it never
            # writes its own ready file.)
            ev = self.client.wait_event("debugpyAttach")
            self.child_pid = ev["body"]["subProcessId"]
            assert parent_of(self.child_pid) == self.debuggee_pid

    def stop(self):
        if self.client:
            self.client.disconnect(terminate=True)
            self.client.close()
        for pid in (self.child_pid, self.debuggee_pid, self.launcher_pid):
            if pid:
                kill_if(pid, self.ready_path)
        if getattr(self, "adapter", None) and self.adapter.poll() is None:
            os.killpg(self.adapter.pid, signal.SIGKILL)
            self.adapter.wait(30)
        self._gone([self.child_pid, self.debuggee_pid, self.launcher_pid, self.adapter_pid])


class EmbeddedLayout(_Layout):
    """A program that calls debugpy.listen() itself (no client)."""

    def start(self):
        prog = self._write(f"embedded_{self.port}.py", EMBEDDED_PROGRAM)
        self.server = self.procs.start(
            [self.python, prog, self.ready_path, self.marker],
            env=clean_env(PYDEVD_DISABLE_FILE_VALIDATION=1),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.debuggee_pid = self.server.pid
        read_ready(self.ready_path, "the program calling debugpy.listen()", self.server)
        wait_until(lambda: tcp_listening(self.port), timeout=TIMEOUT,
                   what=f"debugpy.listen() to listen on {self.port}")
        self.adapter_pid = ListenLayout._find_adapter(self)

    def stop(self):
        if getattr(self, "server", None) and self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGKILL)
            self.server.wait(30)
        if self.adapter_pid:
            kill_if(self.adapter_pid, self.marker)
        self._gone([self.debuggee_pid, self.adapter_pid])


class PlainProgram(_Layout):
    """A plain Python program (IMPORTS e.g. "import torch"), ready once its
    imports are done.  PYTHON may be a venv's python or a symlink."""

    def start(self):
        prog = self._write(f"plain_{self.port}.py", PROGRAM)
        self.proc = self.procs.start([self.python, prog, self.ready_path],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.debuggee_pid = self.proc.pid
        read_ready(self.ready_path, "the plain program", self.proc)

    def stop(self):
        if getattr(self, "proc", None) and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
