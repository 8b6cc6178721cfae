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


# The CPython versions tdebug reads, and the interpreters of them on this
# machine (pyenv's, with a shared libpython; Debian's /usr/bin/python3.11,
# with the runtime in the executable).
PY_VERSIONS = ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"]


def pyenv_root():
    try:
        out = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.path.expanduser("~/.pyenv")


def pyenv_python(version):
    """The pyenv interpreter of VERSION ("3.12"), or None."""
    path = os.path.join(pyenv_root(), "versions")
    if not os.path.isdir(path):
        return None
    for v in sorted(os.listdir(path), key=lambda s: [int(x) if x.isdigit() else 0 for x in s.split(".")]):
        if v.startswith(version + ".") and v[len(version) + 1:].isdigit():
            exe = os.path.join(path, v, "bin", "python" + version)
            if os.access(exe, os.X_OK):
                return exe
    return None


def python_or_skip(version):
    """The interpreter of VERSION, or pytest.skip saying it is missing."""
    import pytest
    exe = pyenv_python(version)
    if not exe:
        pytest.skip(f"no CPython {version} on this machine (looked in {pyenv_root()}/versions; "
                    f"'pyenv install {version}' adds one)")
    return exe
