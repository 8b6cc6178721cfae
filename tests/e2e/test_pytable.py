"""The Python hook's breakpoint table in the process (session/pytable.c):
grown past the library's first 64 slots at a native stop and after an
attach, and a table that cannot be mapped said, the session going on.
Real gdb, Debian's python3; the other paths are in
test_python_breakpoints.py (a thousand at the start, a hundred at a Python
stop) and test_breakpoint_conditions.py (what an edit keeps)."""
import re
import subprocess
import textwrap

from conftest import PYTHON, tracer_of, wait_until
from pyhook_util import hook_installed
from step_util import events, line_of, session, stops, top


def functions(n, main):
    """N one-line functions fK (body on line 2K+2), then MAIN."""
    return "".join(f"def f{k}():\n    return {k}\n" for k in range(n)) + main


def body(k):
    return 2 * k + 2


def test_table_grows_at_a_native_stop(tdebug, tmp_path):
    # f699 stops first (the hook is loaded), then os.getppid in libc: a
    # hundred breakpoints there map a larger table from a native frame
    script = tmp_path / "many.py"
    script.write_text(functions(1000, "import os\nf699()\nos.getppid()\nprint(f700() + f701())\n"))
    r, evs = session(tdebug, tmp_path,
                     ["continue"] + [f"break many.py:{body(k)}" for k in range(500, 600)] +
                     [f"break many.py:{body(701)}", "continue", "continue"],
                     "-b", f"{script}:{body(699)}", "-b", "getppid", "--", PYTHON, str(script))
    s = stops(evs)
    assert [x["reason"] for x in s] == ["python-breakpoint", "breakpoint", "python-breakpoint"], \
        r.stdout + r.stderr
    assert "getppid" in top(s[1])["function"], top(s[1])
    assert s[2]["breakpoint"]["number"] == 103 and top(s[2])["function"] == "f701"
    assert not [e for e in evs if e["event"] == "error"], r.stdout
    assert [e["status"] for e in evs if e["event"] == "exited"] == [0], r.stdout


def test_table_grows_after_an_attach(tdebug, procs, tmp_path):
    script = tmp_path / "loop.py"
    script.write_text(functions(200, "import time\nprint('ready', flush=True)\n"
                                     "i = 0\nwhile True:\n    i += 1  # LOOP\n    f150()\n"
                                     "    if i % 100000 == 0:\n        time.sleep(0.001)\n"))
    p = procs.start([PYTHON, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    loop = line_of(script, "# LOOP")
    cmds = tmp_path / "cmds"
    # at the attach stop, then at f150 (the hook loaded): 100 more, past
    # the library's 64 slots, and one on the loop's line
    cmds.write_text("".join(c + "\n" for c in
                            [f"break loop.py:{body(150)}", "continue"] +
                            [f"break loop.py:{body(k)}" for k in range(100)] +
                            [f"break loop.py:{loop}", "disable 1", "continue", "delete",
                             "quit"]))
    r = subprocess.run([tdebug, "attach", "--json", "-x", str(cmds), str(p.pid)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    evs = events(r.stdout)
    s = stops(evs)
    assert [x["reason"] for x in s] == ["attached", "python-breakpoint", "python-breakpoint"], \
        r.stdout
    assert top(s[1])["function"] == "f150"
    assert s[2]["breakpoint"]["number"] == 102 and top(s[2])["line"] == loop
    assert not [e for e in evs if e["event"] == "error"], r.stdout
    wait_until(lambda: tracer_of(p.pid) == 0, what="the detach")
    assert hook_installed(p.pid) == 0


def test_a_table_that_cannot_be_mapped_is_said_and_the_session_goes_on(tdebug, tmp_path):
    # The program leaves itself no address space to spare (RLIMIT_AS) just
    # before f700: the 65th breakpoint needs a larger table, whose mmap
    # fails; the breakpoints set before still stop.
    script = tmp_path / "many.py"
    script.write_text(functions(1000, textwrap.dedent("""\
        import resource
        f699()
        size = next(int(l.split()[1]) for l in open("/proc/self/status")
                    if l.startswith("VmSize:"))
        resource.setrlimit(resource.RLIMIT_AS, ((size + 64) * 1024, resource.RLIM_INFINITY))
        print(f700() + f701())
    """)))
    r, evs = session(tdebug, tmp_path,
                     ["continue"] + [f"break many.py:{body(k)}" for k in range(500, 600)] +
                     [f"break many.py:{body(701)}", "continue", "continue"],
                     "-b", f"{script}:{body(699)}", "-b", f"{script}:{body(700)}", "--",
                     PYTHON, str(script))
    # 2 set at the start and 62 of the 101: 64 slots; the other 39 refused
    refusals = [e["message"] for e in evs if e["event"] == "error"]
    assert len(refusals) == 39, r.stdout + r.stderr
    assert all(re.fullmatch(r"cannot map \d+ bytes in the process for 65 Python breakpoints \(it "
                            r"is out of memory or address space: delete some to make room\)", m)
               for m in refusals), refusals
    s = stops(evs)
    assert [(x["breakpoint"]["number"], top(x)["function"]) for x in s] == \
        [(1, "f699"), (2, "f700")], r.stdout
    assert [e["status"] for e in evs if e["event"] == "exited"] == [0], r.stdout + r.stderr
