"""Helpers for the inspect tests: building small objects the way users
do, and running tdebug for JSON."""
import json
import os
import pathlib
import subprocess

from conftest import PYTHON, ROOT, run

FIXTURES = ROOT / "tests" / "fixtures"
ELF_FIXTURES = FIXTURES / "elf"


def tdebug_json(tdebug, *args, expect_rc=None, env=None):
    """Run 'tdebug ARGS...' (which must include --json or --format json)
    and return (returncode, parsed stdout, stderr)."""
    r = run([tdebug, *map(str, args)], env=env)
    if expect_rc is not None:
        assert r.returncode == expect_rc, (r.returncode, r.stdout, r.stderr)
    return r.returncode, json.loads(r.stdout), r.stderr


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
