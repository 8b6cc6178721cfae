"""Helpers for the inspect, profile and doctor tests: building small
objects and extensions the way users do, and running tdebug for JSON."""
import json
import os
import pathlib
import shutil
import subprocess

from conftest import PYTHON, ROOT, clean_env, run

FIXTURES = ROOT / "tests" / "fixtures"
EXT_SRC = FIXTURES / "ext"
ELF_FIXTURES = FIXTURES / "elf"


def tdebug_json(tdebug, *args, expect_rc=None, env=None):
    """Run 'tdebug ARGS...' (which must include --json or --format json)
    and return (returncode, parsed stdout, stderr)."""
    r = run([tdebug, *map(str, args)], env=env)
    if expect_rc is not None:
        assert r.returncode == expect_rc, (r.returncode, r.stdout, r.stderr)
    return r.returncode, json.loads(r.stdout), r.stderr


def profile_env(tdebug, *profile_args, base=None):
    """The environment after 'eval "$(tdebug profile ARGS)"' in bash,
    starting from BASE (default: a clean environment)."""
    env = base if base is not None else clean_env()
    cmd = 'eval "$("$TDB" profile "$@")" && env -0'
    r = run(["bash", "-c", cmd, "bash", *profile_args], env={**env, "TDB": tdebug})
    assert r.returncode == 0, r.stderr
    out = {}
    for item in r.stdout.split("\0"):
        if "=" in item:
            k, v = item.split("=", 1)
            out[k] = v
    out.pop("TDB", None)
    return out


def build_ext(dest, env):
    """Copy the fixture extension to DEST and build it in place with
    setuptools under ENV; returns the path of the built module."""
    shutil.copytree(EXT_SRC, dest)
    r = run([PYTHON, "setup.py", "build_ext", "--inplace"], cwd=dest, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    built = sorted(pathlib.Path(dest).glob("tdbext*.so"))
    assert len(built) == 1, built
    return built[0]


def default_build_env():
    """What a user who never heard of tdebug has: Python's own flags."""
    env = clean_env()
    for k in ("CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS"):
        env.pop(k, None)
    return env


def compile_so(tmp, name, source="int f(int x) { int y = x * 2; return y + 1; }\n",
               flags=("-O0", "-g"), ldflags=()):
    """gcc -shared -fPIC FLAGS SOURCE -o TMP/NAME; returns the path."""
    tmp = pathlib.Path(tmp)
    src = tmp / (name + ".c")
    src.write_text(source)
    out = tmp / name
    subprocess.run(["gcc", "-shared", "-fPIC", *flags, str(src), "-o", str(out), *ldflags],
                   check=True)
    return out


def split_debug(obj, debug_name):
    """Move OBJ's DWARF into DEBUG_NAME beside it (objcopy
    --only-keep-debug) and leave a .gnu_debuglink behind, as distributions
    do.  Returns the debug file's path."""
    obj = pathlib.Path(obj)
    debug = obj.parent / debug_name
    subprocess.run(["objcopy", "--only-keep-debug", str(obj), str(debug)], check=True)
    subprocess.run(["objcopy", "--strip-debug", f"--add-gnu-debuglink={debug}", str(obj)],
                   check=True, cwd=obj.parent)
    return debug


def build_id_of(path):
    """The GNU build-id as readelf prints it, or None."""
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    return None


def nm_dynamic(path):
    """{name: value} of the defined dynamic symbols, from nm -D."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                         text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3:
            syms.setdefault(parts[2].split("@")[0], int(parts[0], 16))
    return syms


def torch_objects():
    """_C and the torch libraries Debian installs, resolved."""
    r = run([PYTHON, "-c",
             "import os, glob, torch; d = os.path.dirname(torch.__file__); "
             "print('\\n'.join(os.path.realpath(p) for p in "
             "[torch._C.__file__] + sorted(glob.glob(d + '/lib/lib*.so*')) "
             "if os.path.exists(os.path.realpath(p))))"], check=True)
    return list(dict.fromkeys(r.stdout.split()))


def world_readable_dir(prefix="tdebug-e2e-"):
    """A fresh directory an unprivileged user can enter (pytest's tmp_path
    lives under a root-only directory)."""
    import tempfile
    d = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    os.chmod(d, 0o755)
    return pathlib.Path(d)
