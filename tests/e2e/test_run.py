"""tdebug run against the real gdb and Debian's real torch."""
import json
import os
import resource
import signal
import subprocess
import time
import uuid

import pytest

from conftest import PYTHON, SLOW, clean_env, comm_of, parent_of, processes_with, run, wait_until

TORCH_C_SUFFIX = "/torch/_C.cpython-311-x86_64-linux-gnu.so"


def json_events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_batch_stops_in_pyinit_of_torch_c(tdebug, torch_available):
    r = run([tdebug, "run", "--batch", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
             "import torch; print('torch', torch.__version__)"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("tdebug: stopped at the import of torch._C: in its init function, "
                               "before it runs (")
    assert TORCH_C_SUFFIX in lines[0]
    assert lines[1].startswith("#0 ") and " in PyInit__C () from " in lines[1]
    assert lines[1].endswith(TORCH_C_SUFFIX)
    # The caller is CPython's create_dynamic builtin (a static function:
    # named from the interpreter's symbol table, not from gdb).
    assert lines[2].startswith("#1 ") and " in _imp_create_dynamic () from " in lines[2]
    # Then the Python frames that import ran, where the evaluator ran them,
    # printed as tracebacks print them, innermost first.
    assert lines[3] == ('    File "<frozen importlib._bootstrap>", line 241, '
                        'in _call_with_frames_removed')
    assert '    File "/usr/lib/python3/dist-packages/torch/__init__.py", line 218, in <module>' \
        in lines
    assert '    File "<string>", line 1, in <module>' in lines
    # CPython's own plumbing (the evaluator loop, vectorcall...) is folded.
    frames = [l for l in lines if l.startswith("#")]
    assert not any("_PyEval_EvalFrameDefault" in l for l in frames), frames
    # No garbage frames: the stack reaches the C library's start of main.
    assert " in __libc_start_main" in frames[-1]
    assert not any(" in ?? ()" in l for l in frames), frames
    assert "torch 1.13" in r.stdout  # the program ran on to its end
    assert lines[-1] == "tdebug: program exited with status 0"


def test_json_events(tdebug, torch_available):
    r = run([tdebug, "run", "--json", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
             "import torch; print('program output')"])
    assert r.returncode == 0, r.stderr
    events = json_events(r.stdout)  # stdout is only JSON: the program's output went to stderr
    assert "program output" in r.stderr
    assert [e["event"] for e in events] == ["stopped", "exited"]
    stopped, exited = events
    assert stopped["reason"] == "import" and stopped["module"] == "torch._C"
    assert stopped["library"].endswith(TORCH_C_SUFFIX)
    assert stopped["pid"] > 0
    top = stopped["frames"][0]
    assert top["function"] == "PyInit__C" and top["level"] == 0
    assert top["library"].endswith(TORCH_C_SUFFIX)
    assert top["address"].startswith("0x")
    caller = stopped["frames"][1]
    assert caller["function"] == "_imp_create_dynamic" and caller["level"] == 1
    assert caller["library"] == "/usr/bin/python3.11"
    assert {"function": "<module>", "file": "<string>", "line": 1} in stopped["python_frames"]
    # The merged stack: native and Python frames in one order.
    assert stopped["merge"] == "ok"
    stack = stopped["stack"]
    assert [f["kind"] for f in stack[:3]] == ["native", "native", "python"]
    assert stack[0]["function"] == "PyInit__C"
    assert stack[2] == {"kind": "python", "function": "_call_with_frames_removed",
                        "file": "<frozen importlib._bootstrap>", "line": 241}
    assert stack[-1]["kind"] == "native"
    assert {"kind": "python", "function": "<module>", "file": "<string>", "line": 1} in stack
    assert not any(f.get("function") == "_PyEval_EvalFrameDefault" for f in stack)
    assert exited == {"event": "exited", "status": 0, "signalled": False}


def test_raw_keeps_cpython_plumbing(tdebug, torch_available):
    r = run([tdebug, "run", "--json", "--raw", "--stop-at-import", "torch._C", "-c",
             "import torch"])
    assert r.returncode == 0, r.stderr
    stack = json_events(r.stdout)[0]["stack"]
    funcs = [f["function"] for f in stack]
    # Each evaluator frame comes right after the Python frames it runs.
    i = funcs.index("_PyEval_EvalFrameDefault")
    assert stack[i - 1]["kind"] == "python"
    assert funcs.count("_PyEval_EvalFrameDefault") >= 2


def test_cpython_symbols_gives_gdb_the_interpreters_debug_info(tdebug, torch_available):
    r = run([tdebug, "run", "--batch", "--cpython-symbols", "--stop-at-import", "torch._C", "-c",
             "import torch"])
    assert r.returncode == 0, r.stderr
    # gdb now knows CPython's source lines (and its inlined frames)...
    assert " in _PyImport_LoadDynamicModuleWithSpec () at ../Python/importdl.c:" in r.stdout
    # ...and the Python frames are still merged in.
    assert '    File "<string>", line 1, in <module>' in r.stdout


def test_exit_status_and_arguments_pass_through(tdebug):
    r = run([tdebug, "run", "--batch", "--", PYTHON, "-c",
             "import sys; print(sys.argv[1:]); sys.exit(3)", "a b", "c'd", "$HOME", "*"])
    assert r.returncode == 3
    assert "['a b', \"c'd\", '$HOME', '*']" in r.stdout
    assert "tdebug: program exited with status 3" in r.stdout


def test_stdio_belongs_to_the_program(tdebug):
    r = run([tdebug, "run", "--batch", "-c",
             "import sys; data = sys.stdin.read(); print('read', data.strip()); "
             "print('to stderr', file=sys.stderr)"], input="hello\n")
    assert r.returncode == 0
    assert "read hello" in r.stdout
    assert "to stderr" in r.stderr and "to stderr" not in r.stdout


def test_fatal_signal_stops_then_status_is_128_plus_n(tdebug):
    r = run([tdebug, "run", "--batch", "-c", "import os; os.kill(os.getpid(), 11)"])
    assert r.returncode == 128 + 11
    assert "tdebug: program received SIGSEGV (Segmentation fault)" in r.stdout
    assert " in os_kill () from /usr/bin/python3.11" in r.stdout  # the native stack at the signal
    assert '    File "<string>", line 1, in <module>' in r.stdout
    assert "tdebug: program was killed by SIGSEGV (Segmentation fault)" in r.stdout


def test_pending_break_binds_when_its_library_loads(tdebug, torch_available):
    # No --stop-at-import: the breakpoint is pending until torch's _C maps.
    r = run([tdebug, "run", "--json", "--break", "PyInit__C", "-c", "import torch"])
    assert r.returncode == 0, r.stderr
    events = json_events(r.stdout)
    stops = [e for e in events if e["event"] == "stopped"]
    assert len(stops) == 1
    assert stops[0]["reason"] == "breakpoint"
    assert stops[0]["breakpoint"]["location"] == "PyInit__C"
    assert isinstance(stops[0]["breakpoint"]["number"], int)
    assert stops[0]["frames"][0]["function"] == "PyInit__C"
    assert stops[0]["frames"][0]["library"].endswith(TORCH_C_SUFFIX)


def test_break_that_never_binds_is_reported(tdebug):
    r = run([tdebug, "run", "--batch", "--break", "no_such_function_anywhere", "-c", "pass"])
    assert r.returncode == 1
    assert ("tdebug: warning: breakpoint 'no_such_function_anywhere' never bound" in r.stderr)
    assert "tdebug: program exited with status 0" in r.stdout


def test_gcc_clone_names_go_to_gdb(tdebug):
    """foo.cold is a symbol GCC makes, not a Python name: gdb gets it."""
    r = run([tdebug, "run", "--batch", "--break", "no_such_function.cold", "-c", "pass"])
    assert r.returncode == 1
    assert "tdebug: warning: breakpoint 'no_such_function.cold' never bound" in r.stderr


def test_module_never_imported_is_reported(tdebug):
    r = run([tdebug, "run", "--batch", "--stop-at-import", "nosuch._C", "-c", "pass"])
    assert r.returncode == 1
    assert "tdebug: warning: the program never imported 'nosuch._C' (--stop-at-import)" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["--stop-at-import", "torch ._C", "-c", "pass"],
     "tdebug run: --stop-at-import 'torch ._C' is not a module name"),
    (["--stop-at-import", "", "-c", "pass"], "is not a module name"),
    (["--symbols", "\\(", "-c", "pass"], "tdebug run: --symbols '\\(' is not a basic regex"),
    (["--break", "", "-c", "pass"], "tdebug run: --break needs a gdb location"),
    (["--batch", "--break"], "tdebug run: option '--break' needs a value"),
    (["--frobnicate", "-c", "pass"], "tdebug run: unknown option '--frobnicate'"),
    (["--batch"], "tdebug run: no program: give SCRIPT, -c CODE or -m MODULE"),
    (["-c"], "tdebug run: -c needs CODE"),
    # Python locations get their own answer, not the advice for C names.
    (["-b", "add.py", "-c", "pass"],
     "tdebug run: --break 'add.py' names a Python file but no place in it: give FILE.py:LINE"),
    (["-b", "torch.add", "-c", "pass"],
     "tdebug run: --break 'torch.add' is a Python name, not a place: give a place in Python "
     "code as FILE.py:FUNCTION or FILE.py:LINE, or the C/C++ function it runs (torch's "
     "operators enter C++ at at::_ops::NAME_OVERLOAD::call: torch.add at "
     "at::_ops::add_Tensor::call"),
])
def test_garbage_options_are_usage_errors(tdebug, args, message):
    r = run([tdebug, "run"] + args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr
    assert "see 'tdebug run --help'" in r.stderr


def test_missing_script(tdebug, tmp_path):
    r = run([tdebug, "run", "--batch", str(tmp_path / "nope.py")])
    assert r.returncode == 127
    assert r.stderr == f"tdebug: cannot run script '{tmp_path / 'nope.py'}': No such file or directory\n"


def test_python_not_executable(tdebug, tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("not a program\n")
    r = run([tdebug, "run", "--batch", "--python", str(fake), "-c", "pass"])
    assert r.returncode == 126
    assert f"tdebug: cannot run '{fake}': it is not executable" in r.stderr


def test_python_missing(tdebug, tmp_path):
    r = run([tdebug, "run", "--batch", "--python", str(tmp_path / "python9"), "-c", "pass"])
    assert r.returncode == 127
    assert "No such file or directory" in r.stderr


def write_shim(path, target):
    """A pyenv-style shim: a shell script that execs the interpreter."""
    path.write_text(f'#!/bin/sh\nexec "{target}" "$@"\n')
    path.chmod(0o755)
    return path


@pytest.mark.parametrize("how", ["path", "on PATH", "--python", "--preload"])
def test_python_that_is_a_shim_runs_the_interpreter_it_execs(tdebug, tmp_path, how):
    bindir = tmp_path / "shims"
    bindir.mkdir()
    shim = write_shim(bindir / "python3", PYTHON)
    code = "import sys; print('exe', sys.executable)"
    env = clean_env(PATH=f"{bindir}:{os.environ['PATH']}")
    args = {"path": ["--", str(shim), "-c", code],
            "on PATH": ["--", "python3", "-c", code],
            "--python": ["--python", str(shim), "-c", code],
            "--preload": ["--preload", "--", "python3", "-c", code]}[how]
    r = run([tdebug, "run", "--batch", *args], env=env)
    assert r.returncode == 0, r.stderr
    real = os.path.realpath(PYTHON)
    exe = [l for l in r.stdout.splitlines() if l.startswith("exe ")][0][4:]
    assert os.path.realpath(exe) == real
    assert "not in executable format" not in r.stderr


def test_pyenv_shim_on_path(tdebug):
    """The shim users actually have: pyenv's own python3 (skipped where
    pyenv is not installed)."""
    shim = subprocess.run(["sh", "-c", "command -v python3"], capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "TDEBUG_PYTHON"}
                          ).stdout.strip()
    if "/shims/" not in shim:
        pytest.skip(f"python3 on PATH is not a pyenv shim ({shim or 'none'})")
    r = run([tdebug, "run", "--batch", "--", "python3", "-c",
             "import sys; print('exe', sys.executable)"])
    assert r.returncode == 0, r.stderr
    exe = [l for l in r.stdout.splitlines() if l.startswith("exe ")][0][4:]
    assert "/shims/" not in exe and os.path.isabs(exe)


def test_script_that_is_not_python_is_refused(tdebug, tmp_path):
    fake = tmp_path / "python3"
    fake.write_text("#!/bin/sh\necho not python\n")
    fake.chmod(0o755)
    r = run([tdebug, "run", "--batch", "--python", str(fake), "-c", "pass"])
    assert r.returncode == 126
    assert r.stderr == (f"tdebug: cannot run '{fake}': it does not work as a Python interpreter "
                        "(give the interpreter's path, e.g. /usr/bin/python3)\n")


def test_gdb_missing(tdebug, tmp_path):
    r = run([tdebug, "run", "--batch", "-c", "pass"],
            env=clean_env(TDEBUG_GDB=str(tmp_path / "gdb")))
    assert r.returncode == 125
    assert f"tdebug: gdb not found ('{tmp_path / 'gdb'}'): install it (apt-get install gdb) " \
           "or set TDEBUG_GDB to its path" in r.stderr


def test_gdb_that_does_not_speak_mi3(tdebug):
    # /bin/true exits at once, as a gdb older than 9 does on --interpreter=mi3.
    r = run([tdebug, "run", "--batch", "-c", "pass"], env=clean_env(TDEBUG_GDB="/bin/true"))
    assert r.returncode == 125
    assert "tdebug: '/bin/true' does not speak gdb's MI3 (gdb exited with status 0): " \
           "gdb 10 or newer is needed" in r.stderr


# A breakpoint that never binds: the session is a light one (test_run_light.py).
LIGHT = ["-b", "tdb_no_such_function"]


def no_core_files():
    # A test that makes gdb crash must not leave its core in the working directory.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def start_sleeper(procs, tdebug, stops=()):
    """tdebug run --batch of a program that sleeps; returns (tdebug's Popen,
    the marker on the program's command line).  procs kills it at the end."""
    marker = "tdebug-test-" + uuid.uuid4().hex
    p = procs.start([tdebug, "run", "--batch", *stops, "--", PYTHON, "-c",
                     "import time, sys; print('ready', flush=True); time.sleep(600)", marker],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    preexec_fn=no_core_files)
    assert p.stdout.readline().strip() == "ready"
    assert [pid for pid in processes_with(marker) if pid != p.pid], "the program is not running"
    return p, marker


@pytest.mark.parametrize("stops", [(), LIGHT], ids=["plain", "light"])
@pytest.mark.parametrize("sig, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_kills_the_program_it_started(tdebug, procs, sig, status, stops):
    p, marker = start_sleeper(procs, tdebug, stops)
    p.send_signal(sig)
    out, err = p.communicate(timeout=SLOW)
    assert p.returncode == status, err
    assert "the program was killed" in out
    wait_until(lambda: not processes_with(marker), what="the program to be gone")


@pytest.mark.parametrize("stops", [(), LIGHT], ids=["plain", "light"])
def test_gdb_crashing_mid_session(tdebug, procs, stops):
    p, marker = start_sleeper(procs, tdebug, stops)
    gdbs = [int(pid) for pid in os.listdir("/proc") if pid.isdigit()
            and parent_of(int(pid)) == p.pid and comm_of(int(pid)) == "gdb"]
    assert len(gdbs) == 1
    os.kill(gdbs[0], signal.SIGSEGV)
    out, err = p.communicate(timeout=SLOW)
    assert p.returncode == 125
    assert "tdebug: gdb was killed by signal 11 (Segmentation fault)" in err
    wait_until(lambda: not processes_with(marker), what="the program to die with gdb")


@pytest.mark.parametrize("stops", [(), LIGHT], ids=["plain", "light"])
def test_tdebug_killed_outright_takes_its_program_along(tdebug, procs, stops):
    # SIGKILL leaves tdebug no chance to clean up: gdb sees its MI input
    # close (and gets SIGTERM from the kernel), and kills the program.
    p, marker = start_sleeper(procs, tdebug, stops)
    p.kill()
    p.wait()
    wait_until(lambda: not processes_with(marker), what="the program to be gone")


def test_interactive_prompt(tdebug, terminal, torch_available):
    t = terminal([tdebug, "run", "--stop-at-import", "torch._C", "--", PYTHON, "-c",
                  "import torch; name = input('name? '); print('hello', name)"])
    t.expect("tdebug: stopped at the import of torch._C")
    t.expect("(tdebug) ")
    t.send("bt")
    out = t.expect("(tdebug) ")
    assert "#0  0x" in out and "in PyInit__C ()" in out
    assert 'File "<string>", line 1, in <module>' in out
    # gdb console commands pass through.
    t.send("info sharedlibrary _C\\.cpython")
    out = t.expect("(tdebug) ")
    assert "Yes" in out and "_C.cpython-311-x86_64-linux-gnu.so" in out
    t.send("help")
    assert "continue, c" in t.expect("(tdebug) ")
    t.send("continue")
    t.expect("name? ")  # the program owns the terminal while it runs
    t.send("world")
    t.expect("hello world")
    t.expect("tdebug: program exited with status 0")
    assert t.wait() == 0


@pytest.mark.parametrize("stops", [(), LIGHT], ids=["plain", "light"])
def test_interactive_ctrl_c_interrupts_then_quit_kills(tdebug, terminal, stops):
    marker = "tdebug-test-" + uuid.uuid4().hex
    t = terminal([tdebug, "run", *stops, "--", PYTHON, "-c",
                  "import time; print('ready', flush=True); time.sleep(600)", marker])
    t.expect("ready")
    t.ctrl_c()
    t.expect("tdebug: program received SIGINT")
    t.expect("(tdebug) ")
    # Ctrl-C at the prompt only drops the line.
    t.ctrl_c()
    t.expect("(tdebug) ")
    t.send("quit")
    assert t.wait() == 0
    wait_until(lambda: not processes_with(marker), what="the program to be killed on quit")


def test_stop_at_load_comes_before_the_import_stop(tdebug, torch_available):
    r = run([tdebug, "run", "--json", "--stop-at-load", "torch._C", "--stop-at-import", "torch._C",
             "-c", "import torch"])
    assert r.returncode == 0, r.stderr
    events = json_events(r.stdout)
    assert [e.get("reason", e["event"]) for e in events] == ["loaded", "import", "exited"]
    loaded = events[0]
    assert loaded["module"] == "torch._C" and loaded["library"].endswith(TORCH_C_SUFFIX)
    # Mapped but not yet its dependencies: libtorch_python is not there yet.
    assert 0 < loaded["libraries_mapped"] < 100
    # Inside the dynamic loader, in the middle of mapping it.
    assert any("_dl_map_object" in (f["function"] or "") for f in loaded["frames"])


def test_cross_library_break_stops_in_the_function_not_its_plt_stubs(tdebug, torch_available):
    # gdb also puts locations on the PLT stubs in libtorch_python and
    # libtorch_cpu; tdebug disables those, so one call is one stop.
    r = run([tdebug, "run", "--json", "-b", "at::_ops::add_Tensor::call", "-c",
             "import torch; x = torch.ones(2) + 1"])
    assert r.returncode == 0, r.stderr
    stops = [e for e in json_events(r.stdout) if e["event"] == "stopped"]
    assert len(stops) == 1
    top = stops[0]["frames"][0]
    assert top["function"].startswith("at::_ops::add_Tensor::call(")
    assert not top["function"].endswith("@plt")
    assert "libtorch_cpu.so" in top["library"]


def test_each_stop_reads_its_own_python_frames(tdebug, tmp_path):
    # The Python frames of a stop are read at that stop, not at an earlier one.
    script = tmp_path / "two.py"
    script.write_text("import os\n"
                      "def first():\n    os.getppid()\n"
                      "def second():\n    os.getppid()\n"
                      "first()\nsecond()\n")
    r = run([tdebug, "run", "--json", "-b", "getppid", str(script)])
    assert r.returncode == 0, r.stderr
    stops = [e for e in json_events(r.stdout) if e["event"] == "stopped"]
    assert [s["python_frames"][0]["function"] for s in stops] == ["first", "second"]
    assert [s["python_frames"][0]["line"] for s in stops] == [3, 5]
    assert all(s["merge"] == "ok" for s in stops)


def test_gdb_index_cache_is_bounded_least_recently_used_first(tdebug, tmp_path):
    # issue 26: ~/.cache/tdebug/gdb-index grew without limit (gdb never
    # removes an index it wrote)
    cache = tmp_path / "cache"
    index = cache / "tdebug" / "gdb-index"
    index.mkdir(parents=True)
    now = time.time()
    for i, name in enumerate(["oldest", "older", "newer", "newest"]):
        f = index / f"{name}.gdb-index"
        f.write_bytes(b"\0" * (1 << 20))
        os.utime(f, (now - 4000 + 1000 * i, now - 4000 + 1000 * i))
    (index / "keep-dir").mkdir()
    env = clean_env(XDG_CACHE_HOME=str(cache), TDEBUG_LIGHT="0", TDEBUG_CACHE_MAX="2560K")
    r = run([tdebug, "run", "--batch", "--", PYTHON, "-c", "pass"], env=env)
    assert r.returncode == 0, r.stderr
    left = sorted(p.name for p in index.iterdir())
    assert "oldest.gdb-index" not in left and "older.gdb-index" not in left, left
    assert "newer.gdb-index" in left and "newest.gdb-index" in left and "keep-dir" in left
    # Not a size: the default (200 MB) holds them all.
    env["TDEBUG_CACHE_MAX"] = "lots"
    r = run([tdebug, "run", "--batch", "--", PYTHON, "-c", "pass"], env=env)
    assert r.returncode == 0, r.stderr
    assert "newer.gdb-index" in [p.name for p in index.iterdir()]
