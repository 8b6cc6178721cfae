"""The sample scripts in samples/ reach their intended ends: the
walkthroughs print their result, the crash dies of SIGSEGV in the add
kernel, the hang deadlocks two threads until it is killed, and the
DataLoader keeps its workers alive a while and then exits by itself."""
import os
import re
import signal
import time

import pytest

from conftest import PYTHON, SLOW, parent_of, run, wait_until
from tinytensor_util import SAMPLES, gdb_batch, marked_line, tt_env

FUTEX = 202  # x86_64 syscall number, as /proc/PID/task/TID/syscall shows it


def script(name):
    return str(SAMPLES / name)


def start(procs, args, out):
    """Start ARGS in the background with stdout and stderr to the file OUT."""
    with open(out, "w") as f:
        return procs.start(args, env=tt_env(), stdout=f, stderr=f)


def read(path):
    return path.read_text()


def whole_lines(path):
    """The lines written to PATH so far, up to the last newline (a line
    being written is not one yet), or None when there is none."""
    text = read(path)
    return text[:text.rfind("\n") + 1] or None


def test_import_walkthrough(torch_available):
    r = run([PYTHON, script("import_walkthrough.py")], env=tt_env())
    assert (r.returncode, r.stdout) == (0, "tensor([2., 2.])\n"), r.stderr


def test_tinytensor_walkthrough():
    r = run([PYTHON, script("tinytensor_walkthrough.py")], env=tt_env())
    assert (r.returncode, r.stdout, r.stderr) == (0, "tensor([2., 2.])\n", "")


def test_callback_sample_goes_python_c_python_c():
    r = run([PYTHON, script("callback_native.py")], env=tt_env())
    assert (r.returncode, r.stdout, r.stderr) == (0, "tensor([3., 5., 7.])\n", "")
    # Stopped in the add the callback makes, the stack holds the C loop
    # that called it.
    r = run(gdb_batch("break tt_native_add", "run", "bt", args=[PYTHON, script("callback_native.py")]),
            env=tt_env())
    frames = re.findall(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+)", r.stdout, re.M)
    assert frames[:4] == ["tt_native_add", "tt_ops_add_call", "tt_pytensor_add", "binary_op1"], r.stdout + r.stderr
    for inner, outer in [("tt_pytensor_add", "call_python"), ("call_python", "tt_apply_"),
                         ("tt_apply_", "tt_python_apply_")]:
        assert frames.index(inner) < frames.index(outer), frames


def test_crash_dies_of_sigsegv():
    r = run([PYTHON, script("crash_native.py")], env=tt_env())
    assert r.returncode == -signal.SIGSEGV, (r.returncode, r.stderr)
    assert re.fullmatch(r"crash_native\.py: pid \d+: adding a tensor over address 0x10; "
                        r"this process dies with SIGSEGV now\n", r.stdout)
    assert "Traceback" not in r.stderr


def test_crash_under_gdb_stops_in_the_add_loop():
    line = marked_line("csrc/core/tt_native_cpu.c", "add loop")
    r = run(gdb_batch("run", "bt", args=[PYTHON, script("crash_native.py")]), env=tt_env())
    assert "Program received signal SIGSEGV" in r.stdout, r.stdout + r.stderr
    assert re.search(rf"^#0 .*add_kernel_float64 \(.*\) at csrc/core/tt_native_cpu\.c:{line}$", r.stdout, re.M), r.stdout


def blocked_in_futex(pid):
    """The names of PID's threads if there are several and every one of
    them is asleep in futex() (waiting for a lock), else None."""
    names = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/syscall") as f:
                if f.read().split()[0] != str(FUTEX):
                    return None
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.append(f.read().strip())
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return sorted(names) if len(names) >= 2 else None


def start_hang(procs, tmp_path):
    out = tmp_path / "hang.out"
    p = start(procs, [PYTHON, script("hang_native.py")], out)
    # issue 26: read before its newline was written, under load
    line = wait_until(lambda: whole_lines(out), what="hang_native.py's first line")
    assert re.fullmatch(rf"hang_native\.py: pid {p.pid} now deadlocks in native code; try 'tdebug attach {p.pid}' "
                        rf"or 'gdb -p {p.pid}'; stop it with Ctrl-C or 'kill {p.pid}'\n", line), line
    threads = wait_until(lambda: blocked_in_futex(p.pid), what="both threads to block on a lock")
    assert threads == ["python3", "tt-deadlock"]
    return p


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_hang_deadlocks_until_killed(procs, tmp_path, sig):
    p = start_hang(procs, tmp_path)
    time.sleep(2)  # not a timing assertion: a deadlock is still one later
    assert p.poll() is None
    assert blocked_in_futex(p.pid) == ["python3", "tt-deadlock"]
    p.send_signal(sig)
    assert p.wait(timeout=SLOW) == -sig


def test_dataloader_has_four_workers_then_exits(procs, tmp_path, torch_available):
    out = tmp_path / "loader.out"
    p = start(procs, [PYTHON, script("dataloader_workers.py"), "--seconds", "4"], out)
    def four_workers():
        found = re.findall(r"^worker (\d): pid (\d+)$", whole_lines(out) or "", re.M)
        return found if len(found) >= 4 else None

    workers = wait_until(four_workers, what="four workers to announce themselves")
    # Each worker announces itself before its first (slow) item, so it is
    # alive, and a child of the main process, when its line appears.
    assert sorted(w for w, _ in workers) == ["0", "1", "2", "3"]
    for _, pid in workers:
        assert parent_of(int(pid)) == p.pid
    assert p.wait(timeout=SLOW) == 0, read(out)
    text = read(out)
    assert text.startswith(f"dataloader_workers.py: pid {p.pid}, 4 workers busy for about 4s; "
                           f"try 'tdebug stacks --children {p.pid}'\n"), text
    assert text.endswith("done: 32 items, sum 1984\n"), text
