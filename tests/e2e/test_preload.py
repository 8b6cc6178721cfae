"""The preloaded library (lib/, LD_AUDIT): real 'import torch' pauses at
torch._C before its init and a real gdb, attached by hand, releases it; the
loader behaves exactly as without it; timeouts, garbage settings, notify,
fork, exec and multiprocessing never hang or break the program."""
import json
import os
import socket
import subprocess

import pytest

from conftest import PYTHON, SLOW, clean_env, proc_state, run, tracer_of, wait_until
from preload_util import (LIB, RELEASE, bind_dgram, compile_c, finish, gdb_batch,
                          preload_env, python_args, recv_json, start, wait_announced)

TORCH_PROGRAM = "import torch; print('sum', torch.ones(3).sum().item())"


def test_import_torch_pauses_before_init_and_gdb_releases_it(tmp_path, procs, torch_available):
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    pid, module, path = wait_announced(err)
    assert pid == p.pid
    assert module == "torch._C"
    assert path.endswith("/torch/_C.cpython-311-x86_64-linux-gnu.so") or "/torch/_C." in path
    # Waiting by polling, not in a job-control stop, and nobody traces it.
    assert proc_state(pid) in ("S", "R")
    assert tracer_of(pid) == 0

    out = gdb_batch(pid,
                    "print tdebug_preload_state",
                    "print tdebug_preload_module",
                    "break PyInit__C",
                    RELEASE,
                    "continue",
                    "print tdebug_preload_state")
    # The breakpoint placed before the release fires: the pause was before init.
    assert "$1 = 1" in out, out
    assert '$2 = "torch._C"' in out, out
    assert "Breakpoint 1, " in out and "PyInit__C" in out, out
    assert "$3 = 2" in out, out  # TDEBUG_STATE_RELEASED

    rc, stdout = finish(p)
    assert rc == 0, err.rest()
    assert stdout == "sum 3.0\n"
    # One announcement, and nothing about a timeout.
    lines = err.rest()
    assert sum("waiting for a debugger" in line for line in lines) == 1, lines
    assert not any("continuing" in line for line in lines), lines


def test_announcement_on_the_rendezvous_socket_and_release_by_address(tmp_path, procs,
                                                                      torch_available):
    sock = bind_dgram(tmp_path / "announce")
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    a = recv_json(sock)
    assert a["tdebug"] == 1 and a["event"] == "waiting" and a["action"] == "wait"
    assert a["pid"] == p.pid and a["ppid"] == os.getpid()
    assert a["module"] == "torch._C" and a["symbol"] == "PyInit__C"
    assert os.path.samefile(a["path"], wait_announced(err)[2])
    assert a["timeout"] == 60 and a["release_symbol"] == "tdebug_preload_release"
    assert a["exe"].startswith("/usr/bin/python3")
    # Repeated while it waits, so a listener that starts late learns of it.
    again = recv_json(sock)
    assert again["pid"] == a["pid"] and again["release_addr"] == a["release_addr"]

    # No symbols at all: the address in the announcement is enough.
    out = gdb_batch(p.pid, f"set var *(int *){a['release_addr']} = 1",
                    init=["set auto-solib-add off"])
    assert "No symbol" not in out, out
    rc, stdout = finish(p)
    assert rc == 0 and stdout == "sum 3.0\n", err.rest()
    sock.close()


def test_disarm_release_stops_watching(tmp_path, procs, torch_available):
    # torch._C and functorch._C both export PyInit__C: value 2 releases the
    # first pause and disarms the second.
    p, err = start(procs, python_args("import torch, functorch; print('ok')"),
                   preload_env(tmp_path))
    pid, module, _ = wait_announced(err)
    assert module == "torch._C"
    gdb_batch(pid, "set var tdebug_preload_release = 2")
    rc, stdout = finish(p)
    assert rc == 0 and stdout == "ok\n"
    assert not any("functorch" in line for line in err.rest())


def test_nobody_attaches_the_program_continues_after_the_timeout(tmp_path, torch_available):
    r = run(python_args(TORCH_PROGRAM), env=preload_env(tmp_path, TDEBUG_TIMEOUT="1"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "sum 3.0\n"
    lines = r.stderr.splitlines()
    assert len(lines) == 2, lines
    pid = lines[0].split()[2]
    assert lines[0].startswith(f"tdebug: pid {pid} loaded torch._C (")
    assert lines[1] == f"tdebug: pid {pid}: no debugger released it within 1 s; continuing"


def test_timeout_does_not_run_while_a_debugger_is_attached(tmp_path, procs, torch_available):
    # gdb stays attached (and lets the program run) well past the timeout;
    # the program must still be waiting when gdb releases it.  A gdb that
    # attaches only after the timeout ran out (a loaded machine: gdb -p
    # itself can take longer than the timeout) proves nothing either way:
    # that round is run again with a longer timeout.
    for timeout in (0.5, 4.0, 30.0):
        p, err = start(procs, python_args(TORCH_PROGRAM),
                       preload_env(tmp_path, TDEBUG_TIMEOUT=str(timeout)))
        pid = wait_announced(err)[0]
        script = tmp_path / "gdb.py"
        script.write_text(
            "import gdb, time\n"
            "print('ATTACHED', int(gdb.parse_and_eval('tdebug_preload_state')))\n"
            "gdb.execute('continue &')\n"
            f"time.sleep({timeout * 2 + 2})\n"
            "gdb.execute('interrupt')\n"
            "time.sleep(0.5)\n"
            "print('STATE', int(gdb.parse_and_eval('tdebug_preload_state')))\n"
            "gdb.execute('set var tdebug_preload_release = 1')\n")
        out = gdb_batch(pid, "set non-stop off", f"source {script}")
        rc, _ = finish(p)
        assert rc == 0
        if "ATTACHED 1" not in out:
            continue  # gdb came after the timeout: inconclusive
        assert "STATE 1" in out, out
        lines = err.rest()
        assert not any("continuing" in line for line in lines), lines
        return
    pytest.fail("gdb never attached before a 30 s timeout ran out")


VARIABLES = {
    "TDEBUG_WATCH": "no spaces allowed",
    "TDEBUG_WATCH_FILES": ",,,",
    "TDEBUG_ACTION": "explode",
    "TDEBUG_TIMEOUT": "-5",
    "TDEBUG_VERBOSE": "loud",
    "TDEBUG_NOTIFY": "smoke-signal",
    "TDEBUG_NOTIFY_ACK": "perhaps",
    "TDEBUG_ANNOUNCE": "/" + "x" * 200,
    "TDEBUG_WORKERS": "everyone",
}


@pytest.mark.parametrize("name", sorted(VARIABLES))
def test_garbage_in_a_variable_gives_one_warning_line(tmp_path, name):
    env = preload_env(tmp_path, **{name: VARIABLES[name]})
    r = run(python_args("print('ran')"), env=env)
    assert r.returncode == 0 and r.stdout == "ran\n"
    lines = r.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"tdebug-preload: ignoring {name}='"), lines
    assert "(using " in lines[0]


def test_garbage_everywhere_and_binary_junk_never_crash(tmp_path):
    env = preload_env(tmp_path, **VARIABLES)
    env["TDEBUG_TIMEOUT"] = "1e999\n\x01"
    r = run(python_args("print('ran')"), env=env)
    assert r.returncode == 0 and r.stdout == "ran\n"
    lines = r.stderr.splitlines()
    assert len(lines) == len(VARIABLES), lines
    assert all(line.startswith("tdebug-preload: ignoring TDEBUG_") for line in lines)


def test_garbage_falls_back_to_the_default(tmp_path, torch_available):
    # A garbage watch list means the default watch, PyInit__C.
    r = run(python_args(TORCH_PROGRAM),
            env=preload_env(tmp_path, TDEBUG_WATCH="bad name", TDEBUG_ACTION="log"))
    assert r.returncode == 0
    lines = r.stderr.splitlines()
    assert lines[0].startswith("tdebug-preload: ignoring TDEBUG_WATCH='bad name'")
    assert "(using PyInit__C)" in lines[0]
    assert lines[1].startswith("tdebug: pid ") and " loaded torch._C (" in lines[1]
    assert len(lines) == 2


def test_nothing_printed_when_nothing_matches(tmp_path, torch_available):
    r = run(python_args("import json, ctypes; print('ok')"), env=preload_env(tmp_path))
    assert (r.returncode, r.stdout, r.stderr) == (0, "ok\n", "")


# ---- the loader is unchanged ----

INNER = "int inner_value(void) { return 42; }\n"
OUTER = r"""
#include <dlfcn.h>
#include <stdio.h>
/* dlopen a sibling by bare name: only this library's RUNPATH ($ORIGIN)
 * can find it. */
int outer_value(void)
{
    void *h = dlopen("libinner.so", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "outer: %s\n", dlerror());
        return -1;
    }
    int (*f)(void) = (int (*)(void))dlsym(h, "inner_value");
    return f ? f() : -2;
}
"""
MAIN = r"""
#include <stdio.h>
int outer_value(void);
int main(void)
{
    int v = outer_value();
    printf("value %d\n", v);
    return v == 42 ? 0 : 1;
}
"""
# The naive alternative: an LD_PRELOAD dlopen wrapper.
WRAPPER = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
void *dlopen(const char *file, int mode)
{
    static void *(*real)(const char *, int);
    if (!real)
        real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
    return real(file, mode);
}
"""


@pytest.fixture
def runpath_program(tmp_path):
    """A program whose library dlopens a sibling through its own RUNPATH;
    the sibling lives in a directory no search path of the program names."""
    libdir = tmp_path / "plugins"
    libdir.mkdir()
    compile_c(libdir, "libinner.so", INNER, "-shared", "-fPIC")
    compile_c(libdir, "libouter.so", OUTER, "-shared", "-fPIC", "-ldl",
              "-Wl,-rpath,$ORIGIN", "-Wl,--enable-new-dtags")
    main = compile_c(tmp_path, "main", MAIN, f"-L{libdir}", "-louter",
                     f"-Wl,-rpath,{libdir}", "-Wl,--enable-new-dtags")
    return main, libdir


def test_runpath_dlopen_works_with_the_library(tmp_path, runpath_program):
    main, _ = runpath_program
    env = preload_env(tmp_path, TDEBUG_WATCH_FILES="libinner.so", TDEBUG_ACTION="log")
    r = run([str(main)], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "value 42\n"
    # ... and the library did see the sibling load.
    assert r.stderr == f"tdebug: pid {r.stderr.split()[2]} loaded libinner ({main.parent}/plugins/libinner.so)\n"


def test_runpath_dlopen_breaks_under_a_naive_dlopen_wrapper(tmp_path, runpath_program):
    # Why lib/ uses rtld-audit: the same program under an LD_PRELOAD dlopen
    # wrapper loses its RUNPATH lookup.
    main, _ = runpath_program
    wrapper = compile_c(tmp_path, "libwrap.so", WRAPPER, "-shared", "-fPIC", "-ldl")
    env = dict(preload_env(tmp_path), LD_PRELOAD=str(wrapper))
    del env["LD_AUDIT"]
    r = run([str(main)], env=env)
    assert r.returncode == 1
    assert "libinner.so: cannot open shared object file" in r.stderr


def test_ctypes_load_through_runpath(tmp_path, runpath_program):
    _, libdir = runpath_program
    code = (f"import ctypes; lib = ctypes.CDLL('{libdir}/libouter.so'); "
            "print('value', lib.outer_value())")
    env = preload_env(tmp_path, TDEBUG_WATCH="inner_value", TDEBUG_ACTION="log")
    r = run(python_args(code), env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "value 42\n"
    assert " loaded libinner (" in r.stderr


def test_fork_and_exec_inside_the_program(tmp_path, torch_available):
    code = (
        "import os, subprocess, sys, torch\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os._exit(0 if torch.ones(2).sum().item() == 2 else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "assert os.waitstatus_to_exitcode(status) == 0\n"
        "r = subprocess.run([sys.executable, '-c', 'import torch; print(\"child\")'],\n"
        "                   capture_output=True, text=True)\n"
        "sys.stderr.write(r.stderr)\n"
        "print(r.returncode, r.stdout.strip())\n")
    r = run(python_args(code), env=preload_env(tmp_path, TDEBUG_ACTION="log"))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "0 child\n"
    pids = {line.split()[2] for line in r.stderr.splitlines()}
    lines = r.stderr.splitlines()
    # The parent and the exec'd child each load torch._C once; the forked
    # child loads nothing new.
    assert len(lines) == 2 and len(pids) == 2, lines
    assert all(" loaded torch._C (" in line for line in lines)


def test_forked_and_multiprocessing_children_do_not_hang(tmp_path, procs, torch_available):
    # No timeout at all: a child that paused would hang the test.
    code = (
        "import multiprocessing as mp, os, torch\n"
        "def work(n):\n"
        "    import torch\n"
        "    return int(torch.ones(n).sum().item())\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('fork').Pool(2) as pool:\n"
        "        forked = pool.map(work, [1, 2])\n"
        "    with mp.get_context('spawn').Pool(2) as pool:\n"
        "        spawned = pool.map(work, [3, 4])\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os._exit(work(5) - 5)\n"
        "    print(forked, spawned, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n")
    script = tmp_path / "mp_prog.py"
    script.write_text(code)
    p, err = start(procs, [PYTHON, str(script)], preload_env(tmp_path, TDEBUG_TIMEOUT="never"))
    pid = wait_announced(err)[0]
    gdb_batch(pid, RELEASE)
    rc, stdout = finish(p)
    assert rc == 0, err.rest()
    assert stdout == "[1, 2] [3, 4] 0\n"
    assert sum("waiting for a debugger" in line for line in err.rest()) == 1


def test_workers_watch_pauses_spawned_workers_too(tmp_path, torch_available):
    code = (
        "import multiprocessing as mp\n"
        "def work(n):\n"
        "    import torch\n"
        "    return n\n"
        "if __name__ == '__main__':\n"
        "    with mp.get_context('spawn').Pool(1) as pool:\n"
        "        print(pool.map(work, [7]))\n")
    script = tmp_path / "mp_watch.py"
    script.write_text(code)
    r = run([PYTHON, str(script)],
            env=preload_env(tmp_path, TDEBUG_WORKERS="watch", TDEBUG_ACTION="log"))
    assert r.returncode == 0 and r.stdout == "[7]\n"
    assert " loaded torch._C (" in r.stderr


# ---- notify ----

def test_notify_to_an_fd(tmp_path, torch_available):
    rfd, wfd = os.pipe()
    try:
        env = preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY=f"fd:{wfd}")
        p = subprocess.Popen(python_args(TORCH_PROGRAM), env=env, pass_fds=[wfd],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        os.close(wfd)
        wfd = -1
        with os.fdopen(rfd, "r") as notes:
            rfd = -1
            out, errtext = p.communicate(timeout=SLOW)
            text = notes.read()
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
    assert p.returncode == 0 and out == "sum 3.0\n" and errtext == ""
    assert text.count("\n") == 1
    note = json.loads(text)
    assert note["event"] == "loaded" and note["action"] == "notify"
    assert note["pid"] == p.pid and note["module"] == "torch._C"
    assert isinstance(note["time"], float) and "release_addr" not in note


def test_notify_to_a_closed_fd_warns_and_continues(tmp_path, torch_available):
    r = run(python_args(TORCH_PROGRAM),
            env=preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY="fd:97"))
    assert r.returncode == 0 and r.stdout == "sum 3.0\n"
    assert r.stderr == "tdebug-preload: cannot notify 'fd:97': Bad file descriptor; continuing\n"


@pytest.fixture
def stream_listener(tmp_path):
    path = tmp_path / "notify.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(4)
    s.settimeout(SLOW)
    yield s, path
    s.close()


def test_notify_to_a_unix_socket_without_ack(tmp_path, procs, stream_listener, torch_available):
    s, path = stream_listener
    env = preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY=f"unix:{path}")
    p, err = start(procs, python_args(TORCH_PROGRAM), env)
    conn, _ = s.accept()
    with conn, conn.makefile() as f:
        note = json.loads(f.readline())
    assert note["pid"] == p.pid and note["module"] == "torch._C"
    rc, out = finish(p)
    assert rc == 0 and out == "sum 3.0\n"
    assert err.rest() == []


def test_notify_to_a_unix_socket_waits_for_the_ack(tmp_path, procs, stream_listener,
                                                   torch_available):
    s, path = stream_listener
    out_file = tmp_path / "out.txt"
    env = preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY=f"unix:{path}",
                      TDEBUG_NOTIFY_ACK="1", TDEBUG_TIMEOUT="never")
    with open(out_file, "w") as out:
        p, err = start(procs, python_args(TORCH_PROGRAM), env, stdout=out)
    conn, _ = s.accept()
    with conn:
        f = conn.makefile("rw")
        note = json.loads(f.readline())
        assert note["pid"] == p.pid
        assert note["release_symbol"] == "tdebug_preload_release"
        # It waits for the ack: still in the import, nothing printed yet.
        assert p.poll() is None and out_file.read_text() == ""
        assert proc_state(p.pid) in ("S", "R")
        f.write("ok\n")
        f.flush()
        p.wait(timeout=SLOW)
    assert p.returncode == 0 and out_file.read_text() == "sum 3.0\n"
    assert err.rest() == []


def test_notify_to_a_datagram_socket(tmp_path, torch_available):
    sock = bind_dgram(tmp_path / "notes")
    env = preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY=f"unix:{tmp_path}/notes")
    r = run(python_args(TORCH_PROGRAM), env=env)
    assert r.returncode == 0 and r.stderr == ""
    assert recv_json(sock)["module"] == "torch._C"
    sock.close()


def test_notify_with_nobody_listening_warns_and_continues(tmp_path, torch_available):
    env = preload_env(tmp_path, TDEBUG_ACTION="notify", TDEBUG_NOTIFY=f"unix:{tmp_path}/none",
                      TDEBUG_NOTIFY_ACK="1")
    r = run(python_args(TORCH_PROGRAM), env=env)
    assert r.returncode == 0 and r.stdout == "sum 3.0\n"
    assert r.stderr == (f"tdebug-preload: cannot notify 'unix:{tmp_path}/none': "
                        "No such file or directory; continuing\n")


def test_watch_files_and_verbose(tmp_path, torch_available):
    env = preload_env(tmp_path, TDEBUG_WATCH_FILES="libc10.so*", TDEBUG_ACTION="log",
                      TDEBUG_VERBOSE="1")
    r = run(python_args("import torch"), env=env)
    assert r.returncode == 0
    lines = r.stderr.splitlines()
    assert lines[0].startswith("tdebug-preload: pid ") and "1 file pattern" in lines[0]
    assert len([line for line in lines if " loaded libc10 (" in line]) == 1, lines


def test_the_library_exports_only_the_loader_and_handshake_symbols():
    r = run(["nm", "-D", "--defined-only", LIB])
    names = sorted(line.split()[-1] for line in r.stdout.splitlines())
    assert names == ["la_activity", "la_objopen", "la_symbind64", "la_version",
                     "tdebug_preload_module",
                     "tdebug_preload_path", "tdebug_preload_release", "tdebug_preload_state"]


def test_is_not_stopped_after_release_and_detach(tmp_path, procs, torch_available):
    # The SIGSTOP design would leave the process in a job-control stop after
    # gdb detaches; polling must not.
    code = TORCH_PROGRAM + "; import time; time.sleep(600)"
    p, err = start(procs, python_args(code), preload_env(tmp_path))
    pid = wait_announced(err)[0]
    gdb_batch(pid, RELEASE, "detach")
    wait_until(lambda: p.stdout.readline() == "sum 3.0\n", what="the program to go on")
    assert proc_state(pid) in ("S", "R")
    assert tracer_of(pid) == 0


def test_release_by_symbol_with_fast_symbol_loading(tmp_path, procs, torch_available):
    # What tdb_preload_release_commands(NULL) gives, in a gdb that reads no
    # library symbols by itself (as tdebug's fast attach does).
    p, err = start(procs, python_args(TORCH_PROGRAM), preload_env(tmp_path))
    pid = wait_announced(err)[0]
    out = gdb_batch(pid, "sharedlibrary libtdebug-preload", "print tdebug_preload_state",
                    "set var tdebug_preload_release = 1", init=["set auto-solib-add off"])
    assert "$1 = 1" in out, out
    rc, stdout = finish(p)
    assert rc == 0 and stdout == "sum 3.0\n"


@pytest.mark.parametrize("name,value,expect", [
    ("TDEBUG_TRAP_PID", "12x", "(using any traced process)"),
    ("TDEBUG_TRAP_PID", "-1", "(using any traced process)"),
    ("TDEBUG_TRAP_STARTUP", "perhaps", "(using 0)"),
    ("TDEBUG_TRAP_WAIT", "never", "(using load)"),
])
def test_trap_variables_garbage_warns_and_uses_the_default(name, value, expect):
    # An untraced process with action trap and a bad setting: one warning,
    # and it runs on (nothing matches, so nothing waits or traps).
    env = clean_env(LD_AUDIT=LIB, TDEBUG_ACTION="trap",
                    TDEBUG_WATCH_FILES="*/no-such-library-*.so", **{name: value})
    r = run([PYTHON, "-c", "print('fine')"], env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "fine\n"
    warnings = [l for l in r.stderr.splitlines() if "tdebug-preload: ignoring" in l]
    assert len(warnings) == 1 and name in warnings[0] and expect in warnings[0], r.stderr


@pytest.mark.parametrize("trap_pid", [None, "1"])
def test_action_trap_stops_a_traced_process_with_sigtrap(tmp_path, trap_pid):
    # Under a debugger the library sends itself SIGTRAP once a watched file
    # is mapped, with tdebug_preload_state TRAPPED meanwhile; a process
    # TDEBUG_TRAP_PID does not name never traps.
    settings = ["LD_AUDIT=" + LIB, "TDEBUG_ACTION=trap",
                "TDEBUG_WATCH_FILES=*/_json.cpython-*.so"]
    if trap_pid:
        settings.append("TDEBUG_TRAP_PID=" + trap_pid)
    args = ["gdb", "-nx", "-batch", "-ex", "set startup-with-shell off"]
    for s in settings:
        args += ["-ex", "set environment " + s]
    script = tmp_path / "imports_json.py"
    script.write_text("import _json\nprint('after the import')\n")
    args += ["-ex", "run", "-ex", "print (int) tdebug_preload_state", "-ex", "continue",
             "--args", PYTHON, str(script)]
    r = run(args, env=clean_env())
    assert "after the import" in r.stdout
    if trap_pid:
        assert "SIGTRAP" not in r.stdout
    else:
        assert "Program received signal SIGTRAP" in r.stdout, r.stdout
        assert "$1 = 4" in r.stdout, r.stdout
    assert "exited normally" in r.stdout, r.stdout
