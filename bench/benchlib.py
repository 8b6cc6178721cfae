"""Shared timing helpers for tdebug's benchmarks: medians of wall-clock runs
of whole commands, measured in one session so the noisy machine affects all
candidates alike (runs are interleaved: A B C A B C ...)."""
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("B", os.path.join(ROOT, "build"))
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")
TDEBUG = os.path.join(BUILD, "tdebug")

# Python source, at the top level of a program that imported torch: a small
# training step on CPU, step() (MLP forward + backward + SGD), one thread.
MLP_STEP = """\
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(),
                            torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 64), torch.randn(32, 1)
def step():
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
"""


def time_once(cmd, env=None):
    t = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    dt = time.perf_counter() - t
    if r.returncode != 0:
        sys.exit(f"bench: command failed with status {r.returncode}: {' '.join(cmd)}")
    return dt


def compare(title, candidates, runs=None, warmup=1):
    """CANDIDATES: list of (name, argv).  The first is the baseline.  Prints
    each median and its ratio to the baseline; returns {name: median}."""
    runs = runs or int(os.environ.get("BENCH_RUNS", "5"))
    for _ in range(warmup):
        for _, cmd in candidates:
            time_once(cmd)
    times = {name: [] for name, _ in candidates}
    for _ in range(runs):
        for name, cmd in candidates:
            times[name].append(time_once(cmd))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    base_name = candidates[0][0]
    print(f"== {title} (median of {runs} interleaved runs, after {warmup} warm-up)")
    for name, _ in candidates:
        ratio = medians[name] / medians[base_name]
        spread = f"{min(times[name]):.2f}-{max(times[name]):.2f}"
        print(f"  {name:<44} {medians[name]:6.2f} s  (range {spread})  {ratio:5.2f}x")
    return medians


# --- what several benches share: the DAP sessions, interleaved rounds, tables

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
from conftest import free_port  # noqa: E402
from dap_util import DapClient, DapError  # noqa: E402,F401 (DapError: for the benches)
from debugpy_util import find_pids, kill_if, tcp_listening  # noqa: E402


def line_of(text, marker):
    """The 1-based number of TEXT's first line holding MARKER."""
    return [i + 1 for i, l in enumerate(text.splitlines()) if marker in l][0]


class DebugpyListen:
    """'python -m debugpy --listen PORT --wait-for-client ARGV' (user code in
    the same process, as a VS Code attach has it), and a DAP client
    connected, initialized and attaching: `with DebugpyListen(argv) as d:`,
    then d.client and d.attach (the attach request's seq, answered after
    configurationDone).  Everything it started is killed on exit."""

    def __init__(self, argv, cwd=None, python=PYTHON):
        self.argv, self.cwd, self.python = list(argv), cwd, python
        self.client = self.server = self.attach = None

    def __enter__(self):
        self.port = free_port()
        self.server = subprocess.Popen(
            [self.python, "-m", "debugpy", "--listen", f"127.0.0.1:{self.port}",
             "--wait-for-client", *self.argv],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.cwd,
            start_new_session=True,
            env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
        try:
            deadline = time.monotonic() + 120
            # never connect to probe: that kills debugpy's adapter
            while not tcp_listening(self.port):
                if self.server.poll() is not None or time.monotonic() > deadline:
                    sys.exit("bench: debugpy did not listen")
                time.sleep(0.01)
            self.client = DapClient.connect("127.0.0.1", self.port)
            self.client.initialize()
            self.attach = self.client.attach(justMyCode=False)
            self.client.wait_event("initialized")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        if self.client:
            self.client.close()
        if self.server.poll() is None:
            os.killpg(self.server.pid, signal.SIGKILL)
            self.server.wait()
        for pid in find_pids(lambda a: "--for-server" in a and str(self.port) in a):
            kill_if(pid, str(self.port))


class DapLaunch:
    """A debug adapter on stdio (ADAPTER, its argv; ENV, its environment),
    initialized (INITIALIZE: the request's extra arguments) and launching
    with LAUNCH's arguments: `with DapLaunch(...) as d:`, then d.client and
    d.launch (the launch request's seq, answered after configurationDone).
    The adapter, and with it its program, is ended on exit."""

    def __init__(self, adapter, launch, initialize=None, env=None):
        self.adapter, self.arguments = adapter, launch
        self.init, self.env = initialize or {}, env
        self.client = self.proc = None

    def __enter__(self):
        self.client, self.proc = DapClient.spawn(self.adapter, env=self.env)
        try:
            self.client.initialize(**self.init)
            self.launch = self.client.launch(**self.arguments)
            self.client.wait_event("initialized", timeout=300)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.client.disconnect()
        except Exception:
            pass
        self.client.close()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


class TdebugDap(DapLaunch):
    """'tdebug dap' (TDEBUG) launching PROGRAM under PYTHON; extra keywords
    go into the launch request."""

    def __init__(self, program, tdebug=TDEBUG, python=PYTHON, **launch):
        super().__init__([tdebug, "dap"], dict(program=program, python=python, **launch),
                         initialize={"adapterID": "tdebug"})


class DebugpyDap(DapLaunch):
    """debugpy's adapter on stdio ('python -m debugpy.adapter', as VS Code
    runs it) launching PROGRAM; extra keywords go into the launch request."""

    def __init__(self, program, python=PYTHON, **launch):
        super().__init__([python, "-m", "debugpy.adapter"],
                         dict(program=program, console="internalConsole", justMyCode=False,
                              python=[python], **launch),
                         env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))


def first_stop(client, start, path, lines, timeout=300):
    """Set breakpoints on LINES of PATH, send configurationDone, wait for
    the answer to START (the launch or attach request's seq) and the first
    'stopped' event: (that event's index in client.events, its threadId)."""
    client.set_breakpoints(path, lines)
    client.configuration_done()
    client.wait_response(start, timeout=timeout)
    i, ev = client.next_event(("stopped",), timeout=timeout)
    return i, ev["body"]["threadId"]


def json_stops(commands, bp, argv, tdebug=TDEBUG):
    """'tdebug run --json -x COMMANDS -b BP -- ARGV' (COMMANDS: the lines
    of the file): [(time.perf_counter() when it came, event)] of each
    'stopped' event, read as it arrives."""
    cmds = tempfile.NamedTemporaryFile("w", suffix=".cmds", delete=False)
    cmds.write("".join(c + "\n" for c in commands))
    cmds.close()
    p = subprocess.Popen([tdebug, "run", "--json", "-x", cmds.name, "-b", bp, "--", *argv],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stops = []
    for line in p.stdout:
        now = time.perf_counter()
        e = json.loads(line)
        if e.get("event") == "stopped":
            stops.append((now, e))
    p.wait()
    os.unlink(cmds.name)
    return stops


def rounds(candidates, runs):
    """Run CANDIDATES ([(name, fn)]) interleaved, RUNS rounds: A B C A B C.
    fn() returns a number (kept in its round's place), None (no figure this
    round: kept as None) or a list of numbers (all kept).  Returns {name:
    [values]}."""
    got = {name: [] for name, _ in candidates}
    for _ in range(runs):
        for name, fn in candidates:
            v = fn()
            got[name] += v if isinstance(v, list) else [v]
    return got


def per_round_ratios(times, base):
    """{name: [each round's value / BASE's value in that round]} of the
    numbers rounds() returned (one a round), rounds without a figure left out."""
    return {name: [t / b for t, b in zip(ts, times[base]) if t is not None and b]
            for name, ts in times.items()}


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def ratio_table(title, values, against, unit="s", scale=1.0):
    """Print VALUES ({name: [numbers]}) as median, range and the ratio of
    each median to the medians of the names in AGAINST (a list)."""
    print(f"== {title}")
    heads = "".join(f"  {'/ ' + a:>12}" for a in against)
    print(f"  {'':<30} {'median':>9} {'range':>17}{heads}")
    for name, xs in values.items():
        xs = [x for x in xs if x is not None]
        if not xs:
            print(f"  {name:<30} {'-':>9}")
            continue
        m = median(xs) * scale
        rng = f"{min(xs) * scale:.2f}-{max(xs) * scale:.2f}"
        ratios = "".join(f"  {m / (median(values[a]) * scale):11.2f}x" for a in against)
        print(f"  {name:<30} {m:7.2f} {unit} {rng:>17}{ratios}")


def load():
    """The machine's load averages, for the record beside each figure."""
    return "load average %.1f %.1f %.1f" % os.getloadavg()
