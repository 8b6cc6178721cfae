"""tdebug doctor on this machine, as root and as an unprivileged user,
with a broken gdb, a missing interpreter and a bad preloaded library."""
import json
import os
import re
import shutil

from conftest import PYTHON, clean_env, run
from stacks_util import python_or_skip

IDS = ["gdb", "gdb-python", "ptrace-policy", "ptrace-run", "ptrace-attach", "python",
       "python-frames", "python-debuginfo", "py-bt", "debugpy", "torch", "preload"]


def doctor_json(cmd, env=None, cwd=None):
    r = run(cmd, env=env, cwd=cwd)
    doc = json.loads(r.stdout)
    return r.returncode, doc, {c["id"]: c for c in doc["checks"]}


def test_doctor_on_this_machine(tdebug, build_dir, torch_available):
    rc, doc, checks = doctor_json([tdebug, "doctor", "--json"])
    assert [c["id"] for c in doc["checks"]] == IDS
    assert rc == 0 and doc["ok"] is True and doc["failures"] == 0
    for cid in ("gdb", "gdb-python", "ptrace-run", "ptrace-attach", "python", "python-frames",
                "python-debuginfo", "py-bt", "debugpy"):
        assert checks[cid]["status"] == "ok", checks[cid]
        assert checks[cid]["remedy"] is None
    assert re.match(r"gdb \d+\.\d+ at /", checks["gdb"]["summary"])
    assert "(package python3.11-dbg)" in checks["python-debuginfo"]["summary"]
    assert checks["python-frames"]["summary"].startswith(
        "tdebug reads Python 3.11.2 frames from memory (tried")
    # Debian's torch has no debug info: a warning, with the way out
    assert checks["torch"]["status"] == "warning"
    assert "none of its" in checks["torch"]["summary"]
    assert "tdebug profile --torch" in checks["torch"]["remedy"]
    # the preloaded library, built beside tdebug by another part of 'make'
    if (build_dir / "libtdebug-preload.so").exists():
        assert checks["preload"]["status"] == "ok", checks["preload"]
    else:
        assert checks["preload"]["status"] == "warning"
        assert "not built" in checks["preload"]["summary"]

    text = run([tdebug, "doctor"]).stdout
    assert re.search(r"^ok +gdb +gdb \d", text, re.M)
    assert re.search(r"^warning +torch +", text, re.M)
    assert re.search(r"^ +fix: for source-level debugging", text, re.M)
    assert re.search(r"^0 failures, \d warnings?: mixed debugging works", text, re.M)


def test_doctor_as_nobody_on_a_root_process(tdebug, as_nobody, procs):
    """An unprivileged user cannot attach to root's process: doctor --pid
    says so, with the remedy, and exits 1 (this kernel has no Yama, so the
    refusal is the classic other-user rule; the kernel agrees, below)."""
    target = procs.start(["sleep", "600"])
    rc, doc, checks = doctor_json([*as_nobody, tdebug, "doctor", "--json", "--pid",
                                   str(target.pid), "--python", PYTHON], cwd="/")
    assert rc == 1 and doc["ok"] is False
    pid = checks["ptrace-pid"]
    assert pid["status"] == "failure"
    assert pid["summary"] == (f"cannot attach to pid {target.pid}: it runs as user 'root' and "
                              "tdebug runs as 'nobody'")
    assert pid["remedy"] == f"run tdebug as root, e.g. 'sudo tdebug attach {target.pid}'"
    assert "CAP_SYS_PTRACE: no" in checks["ptrace-policy"]["summary"]
    # tracing its own children still works for nobody
    assert checks["ptrace-run"]["status"] == "ok"
    assert checks["ptrace-attach"]["status"] == "ok"

    r = run([*as_nobody, tdebug, "doctor", "--pid", str(target.pid), "--python", PYTHON],
            cwd="/")
    assert r.returncode == 1
    assert re.search(r"^failure +ptrace-pid +cannot attach to pid \d+: it runs as user 'root'",
                     r.stdout, re.M)
    assert re.search(r"^ +fix: run tdebug as root", r.stdout, re.M)
    assert re.search(r"^1 failure, \d+ warnings?: mixed debugging is blocked", r.stdout, re.M)
    assert target.poll() is None  # checked, not touched
    # the kernel really refuses: nobody's own ptrace of that process fails
    probe = run([*as_nobody, PYTHON, "-c",
                 "import ctypes, sys; libc = ctypes.CDLL(None, use_errno=True); "
                 "r = libc.ptrace(0x4206, int(sys.argv[1]), 0, 0); "
                 "print(r, ctypes.get_errno())", str(target.pid)], cwd="/")
    assert probe.stdout.split() == ["-1", "1"]  # PTRACE_SEIZE: EPERM


def test_doctor_pid_of_own_process(tdebug, procs):
    p = procs.start([PYTHON, "-c", "import time; time.sleep(600)"])
    rc, doc, checks = doctor_json([tdebug, "doctor", "--json", "--pid", str(p.pid)])
    assert checks["ptrace-pid"]["status"] == "ok"
    # the process's own interpreter is the one checked
    assert checks["python"]["summary"].startswith(os.path.realpath(PYTHON))
    assert p.poll() is None
    with open(f"/proc/{p.pid}/status") as f:
        assert "TracerPid:\t0\n" in f.read()


def test_doctor_with_a_broken_gdb_and_no_python(tdebug):
    env = clean_env(TDEBUG_GDB="/bin/false")
    rc, doc, checks = doctor_json([tdebug, "doctor", "--json", "--python",
                                   "/nonexistent/python3"], env=env)
    assert rc == 1
    assert checks["gdb"]["status"] == "failure"
    assert "TDEBUG_GDB" in checks["gdb"]["remedy"]
    assert checks["gdb-python"]["status"] == "failure"
    assert checks["python"]["status"] == "failure"
    assert "cannot run '/nonexistent/python3': No such file or directory" in checks["python"]["summary"]
    assert "--python" in checks["python"]["remedy"]
    assert "py-bt" not in checks  # nothing to try it with


def test_doctor_reports_a_preload_library_the_loader_refuses(tdebug, tmp_path):
    """tdebug finds its companion files beside itself: a copy of tdebug
    next to a file that is no shared library must fail that check."""
    d = tmp_path / "bin"
    d.mkdir()
    shutil.copy(tdebug, d / "tdebug")
    (d / "libtdebug-preload.so").write_text("not a library\n")
    rc, doc, checks = doctor_json([str(d / "tdebug"), "doctor", "--json"])
    assert rc == 1
    pre = checks["preload"]
    assert pre["status"] == "failure"
    assert "does not accept" in pre["summary"] and "LD_AUDIT" in pre["summary"]
    assert pre["remedy"].startswith("rebuild it")


def test_doctor_usage(tdebug):
    for args in (["--pid", "x"], ["extra"], ["--bogus"]):
        r = run([tdebug, "doctor", *args])
        assert r.returncode == 2, args
        assert "see 'tdebug doctor --help'" in r.stderr


def test_doctor_without_cpython_debug_info_is_not_a_failure(tdebug):
    """gdb's py-* need CPython's debug info; tdebug's stacks and py-* do not:
    an interpreter without it (a pyenv build) gets warnings, and tdebug's
    own reading of its frames is tried and works."""
    python = python_or_skip("3.12")
    rc, doc, checks = doctor_json([tdebug, "doctor", "--json", "--python", python])
    assert checks["python-frames"]["status"] == "ok", checks["python-frames"]
    assert "Python 3.12" in checks["python-frames"]["summary"]
    for cid in ("python-debuginfo", "py-bt"):
        assert checks[cid]["status"] in ("ok", "warning"), checks[cid]
    assert "tdebug reads Python frames itself" in checks["python-debuginfo"]["summary"] or \
        checks["python-debuginfo"]["status"] == "ok"
