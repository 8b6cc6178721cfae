"""Helpers for the 'tdebug stacks' tests: the stackfix test extension, Python
targets that say when they are ready, and reading 'stacks --json'."""
import json
import os
import select
import subprocess
import time

from conftest import PYTHON, ROOT, SLOW, clean_env, run

STACKFIX_DIR = ROOT / "tests" / "fixtures" / "stackfix"


def python_config(var):
    out = subprocess.run([PYTHON, "-c", "import sysconfig, sys; "
                          "sys.stdout.write(sysconfig.get_config_var(sys.argv[1]) or '')", var],
                         capture_output=True, text=True, check=True).stdout
    return out


def build_stackfix(outdir):
    """Compile the modules of tests/fixtures/stackfix for PYTHON into OUTDIR,
    without debug info and stripped (-s), like Debian's torch libraries;
    stackcorrupt sees CPython's internal headers."""
    include = subprocess.run([PYTHON, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    cc = os.environ.get("CC", "cc")
    for name, extra in (("stackfix", []), ("stackcorrupt", ["-I" + include + "/internal"])):
        so = os.path.join(str(outdir), name + python_config("EXT_SUFFIX"))
        subprocess.run([cc, "-shared", "-fPIC", "-O0", "-s", "-I" + include, *extra,
                        str(STACKFIX_DIR / (name + ".c")), "-o", so, "-lpthread"], check=True)
    return str(outdir)


def start_ready(procs, args, env=None, cwd=None, timeout=SLOW):
    """Start ARGS with a stdout pipe and wait for its 'ready' line."""
    p = procs.start(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=env if env is not None else clean_env(), cwd=cwd)
    deadline = time.monotonic() + timeout
    buf = b""
    while b"ready\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or p.poll() is not None:
            err = p.stderr.read().decode(errors="replace") if p.poll() is not None else ""
            raise AssertionError(f"{args} never said ready; output {buf!r}; stderr {err}")
        r, _, _ = select.select([p.stdout], [], [], min(left, 1.0))
        if r:
            chunk = os.read(p.stdout.fileno(), 4096)
            if not chunk:
                continue
            buf += chunk
    return p


def stacks_json(tdebug, *args, check=True):
    """Run 'tdebug stacks --json ARGS'; returns (document, result)."""
    r = run([tdebug, "stacks", "--json", *map(str, args)])
    if check:
        assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return json.loads(r.stdout) if r.stdout.strip() else None, r


def thread_with(process, name):
    """The thread of PROCESS (one element of "processes") whose Python frames
    include a function called NAME, or None."""
    for t in process["threads"]:
        frames = t.get("frames") or t.get("python_frames") or []
        if any(f["kind"] == "python" and f["name"] == name for f in frames):
            return t
    return None


def kinds_and_names(frames):
    """Frames as short words: 'py:NAME' or 'c:FUNCTION'."""
    out = []
    for f in frames:
        if f["kind"] == "python":
            out.append("py:" + f["name"])
        else:
            out.append("c:" + (f["function"] or "??"))
    return out
