"""'tdebug stacks --core': merged stacks from core files written by gcore
and by a crash, on every CPython version present; the files of the core
found from its notes and checked by build-id (a file that changed since is
said, not read); --exe for a program that moved."""
import json
import os
import pathlib
import resource
import shutil
import signal
import subprocess

import pytest

from conftest import PYTHON, run, wait_until
from stacks_util import PY_VERSIONS, python_or_skip, stacks_json, start_ready
from test_stacks_versions import PROGRAM, python_frames, settled


def gcore(pid, out_dir):
    prefix = os.path.join(str(out_dir), "core")
    r = run(["gcore", "-o", prefix, str(pid)])
    path = f"{prefix}.{pid}"
    assert os.path.exists(path), r.stdout + r.stderr
    return path


def core_json(tdebug, *args, check=True):
    r = run([tdebug, "stacks", "--json", *args])
    if check:
        assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r


def by_tid(proc):
    return {t["tid"]: t for t in proc["threads"]}


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_core_of_every_version_matches_the_live_process(tdebug, procs, tmp_path, version):
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", PROGRAM])
    live, *_ = wait_until(lambda: settled(tdebug, p.pid), what=f"the {version} program to settle")
    path = gcore(p.pid, tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    doc, _ = core_json(tdebug, "--core", path)
    (proc,) = doc["processes"]
    assert proc["core"] == path and proc["pid"] == p.pid and proc["signal"] == 0
    assert proc["python"] == live["python"] and proc["notes"] == [], proc["notes"]
    cores, lives = by_tid(proc), by_tid(live)
    assert set(cores) == set(lives)
    for tid, t in lives.items():
        c = cores[tid]
        assert python_frames(c) == python_frames(t), tid
        assert c["python_name"] == t["python_name"] and c["merge"] == "ok", c
        assert c["frames"][0]["kind"] == "native" and c["name"] is None
    text = run([tdebug, "stacks", "--core", path]).stdout
    assert text.startswith(f"Core {path} of process {p.pid} (Python {live['python']}): ")
    assert '  File "<string>", line 6, in produce\n' in text


CRASH = r"""
import os, threading, time
def crash_here():
    print("ready", flush=True)
    os.abort()
def caller():
    crash_here()
threading.Thread(target=lambda: time.sleep(1000), name="bystander", daemon=True).start()
caller()
"""


def crash_core(out_dir, limit=resource.RLIM_INFINITY):
    """The core the kernel writes in OUT_DIR (empty) when CRASH aborts, under
    a core size limit of LIMIT bytes; skips when the kernel writes none
    there."""
    def set_limit():
        resource.setrlimit(resource.RLIMIT_CORE, (limit, limit))
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|") or "/" in pattern:
        pytest.skip(f"the kernel writes cores elsewhere (core_pattern {pattern!r})")
    p = subprocess.run([PYTHON, "-c", CRASH], cwd=str(out_dir), preexec_fn=set_limit,
                       capture_output=True, timeout=120)
    assert p.returncode == -signal.SIGABRT
    cores = [f for f in os.listdir(str(out_dir)) if f.startswith("core")]
    if not cores:
        pytest.skip("the kernel wrote no core (core_pattern %r, a limit above ours?)" % pattern)
    return str(out_dir / cores[0])


def test_core_of_a_crash(tdebug, tmp_path):
    """The kernel's core of a Python program that aborted: the signal, the
    aborting thread first, its C frames (abort) above its Python frames."""
    path = crash_core(tmp_path)
    doc, _ = core_json(tdebug, "--core", path)
    (proc,) = doc["processes"]
    assert proc["signal"] == signal.SIGABRT and proc["command"].startswith(PYTHON)
    first = proc["threads"][0]
    assert first["python_name"] == "MainThread", first
    words = [f.get("name") if f["kind"] == "python" else "c:" + (f["function"] or "??")
             for f in first["frames"]]
    assert "c:abort" in words and words.index("c:abort") < words.index("crash_here")
    assert [n for n in words if not n.startswith("c:")][:3] == ["crash_here", "caller", "<module>"]
    assert any(t["python_name"] == "bystander" for t in proc["threads"])
    text = run([tdebug, "stacks", "--core", path]).stdout
    assert f"(killed by signal {int(signal.SIGABRT)}, Aborted)" in text.splitlines()[0]


def described_size(path):
    """The size the ELF headers of the core at PATH describe: the end of its
    program headers and of the last segment's bytes in the file."""
    import struct
    with open(path, "rb") as f:
        head = f.read(64)
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    end = phoff + phentsize * phnum
    for i in range(phnum):
        _, _, off, _, _, filesz = struct.unpack_from("<IIQQQQ", table, i * phentsize)
        end = max(end, off + filesz)
    return end


def test_truncated_cores_are_said_short_by_how_much(tdebug, procs, tmp_path):
    """issue 26: a core cut short was never called truncated.  gcore writes
    its notes last: cut, not even a thread is left; the kernel writes them
    first, and a core size limit cuts memory."""
    p = start_ready(procs, [PYTHON, "-c", "import time; print('ready', flush=True); "
                                          "time.sleep(1000)"])
    path = gcore(p.pid, tmp_path)
    want = described_size(path)
    os.truncate(path, want // 2)
    r = run([tdebug, "stacks", "--core", path])
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot read '{path}': the core is truncated: {want // 2} bytes "
                        f"of the {want} its headers describe, {want - want // 2} bytes (50.0%) "
                        "short (a core size limit, 'ulimit -c', or a full disk cut it); its "
                        "notes were cut, so not even its threads were kept (NT_PRSTATUS)\n")
    (tmp_path / "crash").mkdir()
    cut = crash_core(tmp_path / "crash", limit=3 << 20)
    want, have = described_size(cut), os.path.getsize(cut)
    assert have < want
    doc, _ = core_json(tdebug, "--core", cut)
    (proc,) = doc["processes"]
    (note,) = [n for n in proc["notes"] if "truncated" in n]
    assert note.startswith(f"'{cut}': the core is truncated: {have} bytes of the {want} its "
                           f"headers describe, {want - have} bytes ("), note
    assert "; read: its notes (2 threads, " in note and " memory segments whole, " in note
    text = run([tdebug, "stacks", "--core", cut]).stdout
    assert f"note: '{cut}': the core is truncated: " in text


def test_changed_executable_is_said_not_misread(tdebug, procs, tmp_path):
    """The core of a program whose executable was replaced since: said, and
    its Python stacks not read from the wrong file; --exe with the right
    file reads them again."""
    real = os.path.realpath(PYTHON)
    copy = tmp_path / "bin" / os.path.basename(real)
    copy.parent.mkdir()
    shutil.copy2(real, copy)
    code = "import time\ndef nap():\n    print('ready', flush=True)\n    time.sleep(1000)\nnap()\n"
    p = start_ready(procs, [str(copy), "-c", code])
    path = gcore(p.pid, tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    shutil.copy2("/bin/true", copy)  # another program where the interpreter was
    doc, _ = core_json(tdebug, "--core", path)
    (proc,) = doc["processes"]
    assert proc["python"] is None
    changed = [n for n in proc["notes"] if n.startswith(f"'{copy}' changed since the core was "
                                                          "written (build-id ")]
    assert changed, proc["notes"]
    # issue 26: not "not a Python process", which nothing said
    assert not any("not a Python process" in n for n in proc["notes"]), proc["notes"]
    assert f"the Python stacks cannot be read without the executable the process ran " \
           f"('{copy}'): see the note on it; --exe PATH gives it" in proc["notes"]
    assert all(f["kind"] == "native" for t in proc["threads"] for f in t["frames"])
    # --exe naming another program is not "changed since"
    doc, _ = core_json(tdebug, "--core", path, "--exe", "/bin/true")
    (proc,) = doc["processes"]
    assert proc["python"] is None
    assert any(n.startswith("'/bin/true' (--exe) is not this core's executable (build-id ")
               and n.endswith(f"give the file the process ran as '{copy}'")
               for n in proc["notes"]), proc["notes"]
    assert not any("changed since" in n or "not a Python process" in n
                   for n in proc["notes"]), proc["notes"]
    # The right executable, given by hand.
    doc, _ = core_json(tdebug, "--core", path, "--exe", real)
    (proc,) = doc["processes"]
    assert proc["python"] and proc["python"].startswith("3.")
    names = [f["name"] for f in proc["threads"][0]["frames"] if f["kind"] == "python"]
    assert names == ["nap", "<module>"], proc


def test_core_usage_and_bad_files(tdebug, tmp_path):
    r = run([tdebug, "stacks", "--core", str(tmp_path / "nothing")])
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot open the core file '{tmp_path / 'nothing'}': ")
    r = run([tdebug, "stacks", "--core", "/bin/true"])
    assert r.returncode == 1
    assert r.stderr == "tdebug: cannot read '/bin/true': not a core file (another kind of ELF file)\n"
    doc, r = core_json(tdebug, "--core", "/bin/true", check=False)
    assert doc["errors"] == [{"core": "/bin/true", "error": "cannot read '/bin/true': not a core "
                              "file (another kind of ELF file)"}]
    for args, msg in ((["--exe", "/bin/true", "1"], "--exe goes with --core"),
                      (["--core", "x", "1"], "--core reads a core file, not processes: leave out "
                       "the process ids")):
        r = run([tdebug, "stacks", *args])
        assert r.returncode == 2 and r.stderr == f"tdebug stacks: {msg}\nsee 'tdebug stacks --help'\n"


def test_what_is_no_regular_file_is_refused_at_once(tdebug, tmp_path):
    """A FIFO given as the core is refused before it is opened (opening it
    would wait for a writer for ever); a directory and a device too."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a directory"),
                       ("/dev/null", "a character device")):
        r = run([tdebug, "stacks", "--core", str(path)], timeout=60)
        assert r.returncode == 1, r
        assert r.stderr == (f"tdebug: cannot read the core file '{path}': it is {kind}, not a "
                            f"regular file (give the file gcore or the kernel wrote)\n")
    # A FIFO given as the executable is not opened either: said, and the
    # core is read alone.
    tiny = str(pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "core" / "tiny.core")
    doc, _ = core_json(tdebug, "--core", tiny, "--exe", str(fifo))
    assert f"'{fifo}' is a FIFO, not the file the process had mapped" in doc["processes"][0]["notes"]


def test_the_committed_tiny_core(tdebug, root_dir):
    """tests/fixtures/core/tiny.core (the core fuzz target's seed): its
    executable is gone, so it is said, and the stack is unwound from the
    core alone."""
    path = str(root_dir / "tests" / "fixtures" / "core" / "tiny.core")
    doc, _ = core_json(tdebug, "--core", path)
    (proc,) = doc["processes"]
    assert proc["python"] is None and proc["signal"] == 0
    assert any("is gone since the core was written" in n for n in proc["notes"]), proc["notes"]
    (thread,) = proc["threads"]
    frames = [f for f in thread["frames"] if f["kind"] == "native"]
    assert len(frames) >= 3 and frames[0]["library"].endswith("/tiny"), frames


@pytest.mark.parametrize("version", ["3.9", "3.12"])
def test_locals_from_a_core(tdebug, procs, tmp_path, version):
    from test_stacks_versions import LOCALS, WANT_OUTER, locals_of
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", LOCALS])

    def sleeping():
        doc, _ = stacks_json(tdebug, p.pid)
        t = doc["processes"][0]["threads"][0]
        return t["frames"][0]["kind"] == "native" and python_frames(t)[0] == ("inner", 17)
    wait_until(sleeping, what="the program to sleep")
    path = gcore(p.pid, tmp_path)
    os.kill(p.pid, signal.SIGKILL)
    doc, _ = core_json(tdebug, "--core", path, "--locals")
    outer = locals_of(doc["processes"][0]["threads"][0]["frames"], "outer")
    assert {n: outer[n]["value"] for n in WANT_OUTER} == WANT_OUTER
