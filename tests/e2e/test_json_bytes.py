"""JSON never drops data: every --json output of env, ps, inspect, profile
and doctor keeps strings that are not UTF-8 (command lines, thread names,
paths, environment values), escaped by the one convention of tdebug(1)
("JSON OUTPUT"): bytes that are not UTF-8 become \\xNN, backslashes \\\\,
and KEY_escaped: true sits beside KEY.  Quotes and very long strings come
through as they are.  Every document starts with "version"."""
import json
import os
import re
import shutil
import subprocess

from conftest import BUILD, PYTHON, SLOW, clean_env

BAD = b"dir-\xff\xfe-\\-\"q\""  # not UTF-8, a backslash, quotes


def unescape(s):
    """The bytes an escaped JSON string stands for."""
    out, i = bytearray(), 0
    while i < len(s):
        if s.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif s.startswith("\\x", i) and re.fullmatch(r"[0-9a-f]{2}", s[i + 2:i + 4]):
            out.append(int(s[i + 2:i + 4], 16))
            i += 4
        else:
            out += s[i].encode()
            i += 1
    return bytes(out)


def run_bytes(args, env=None):
    """Run ARGS (bytes or str) with output kept as bytes: stderr may carry
    the raw bytes of a path."""
    r = subprocess.run([os.fsencode(a) if isinstance(a, (str, bytes)) else os.fsencode(str(a))
                        for a in args], capture_output=True, timeout=SLOW,
                       env=env if env is not None else clean_env(), start_new_session=True)
    return r


def tdebug_json(args, env=None, expect_rc=0):
    r = run_bytes(args, env)
    assert r.returncode == expect_rc, (r.returncode, r.stdout, r.stderr)
    doc = json.loads(r.stdout.decode("utf-8"))  # valid UTF-8 and JSON, whole
    assert list(doc)[0] == "version" and doc["version"] == 1
    return doc


def bad_dir(tmp_path):
    d = os.path.join(os.fsencode(tmp_path), BAD)
    os.mkdir(d)
    return d


# --- ps: command lines, thread names, executables

def test_ps_keeps_argv_comm_and_exe(tdebug, procs, tmp_path):
    d = bad_dir(tmp_path)
    exe = os.path.join(d, b"python3")
    shutil.copy(os.path.realpath(PYTHON), exe)  # /proc/PID/exe with 0xff in it
    long_arg = b"L" * 100000
    code = ("import ctypes, sys, time\n"
            "ctypes.CDLL(None).prctl(15, b'n\\xffme\\\\q', 0, 0, 0)\n"  # PR_SET_NAME
            "print('ready', flush=True)\n"
            "time.sleep(600)\n")
    argv = [exe, b"-c", code.encode(), b"\xff\xfe", b'"quoted" \\ back', long_arg]
    p = procs.start(argv, stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"

    doc = tdebug_json([tdebug, "ps", "--json"])
    row = [r for r in doc["processes"] if r["pid"] == p.pid]
    assert len(row) == 1, doc
    row = row[0]
    assert row["command_escaped"] is True
    assert [unescape(a) for a in row["command"]] == argv
    assert len(row["command"][-1]) == len(long_arg)
    assert row["exe_escaped"] is True and unescape(row["exe"]) == exe
    assert row["comm_escaped"] is True and unescape(row["comm"]) == b"n\xffme\\q"
    assert "errors" in doc
    assert "user_escaped" not in row  # valid strings carry no flag

    check = tdebug_json([tdebug, "ps", "--check", str(p.pid), "--json"])
    assert check["ok"] is True and check["attach_pid"] == p.pid


# --- env: the values it exports

def test_env_keeps_values_and_library_path(tdebug, tmp_path):
    d = bad_dir(tmp_path)
    for name in ("tdebug", "libtdebug-preload.so"):
        shutil.copy(os.path.join(os.fsencode(BUILD), name.encode()), os.path.join(d, name.encode()))
    other = b"/opt/\xff/audit.so"
    env = clean_env(LD_AUDIT=os.fsdecode(other))
    announce = os.path.join(d, b"sock")
    doc = tdebug_json([os.path.join(d, b"tdebug"), "env", "--json", "--announce", announce],
                      env=env)
    ld_audit = unescape(doc["set"]["LD_AUDIT"])
    assert doc["set"]["LD_AUDIT_escaped"] is True
    assert ld_audit == os.path.join(d, b"libtdebug-preload.so") + b":" + other
    assert doc["set"]["TDEBUG_ANNOUNCE_escaped"] is True
    assert unescape(doc["set"]["TDEBUG_ANNOUNCE"]) == announce
    assert unescape(doc["announce"]) == announce and doc["announce_escaped"] is True
    assert doc["set"]["TDEBUG_ACTION"] == "wait" and "TDEBUG_ACTION_escaped" not in doc["set"]
    # The shell form exports the very bytes.
    r = subprocess.run([os.path.join(d, b"tdebug"), b"env", b"--announce", announce],
                       capture_output=True, env={k.encode(): os.fsencode(v) for k, v in env.items()})
    assert r.returncode == 0
    out = subprocess.run(["sh", "-c", 'eval "$1"; printf %s "$LD_AUDIT"', "sh",
                          os.fsdecode(r.stdout)], capture_output=True).stdout
    assert out == ld_audit


# --- inspect and profile --check: paths of objects, errors about them

def copy_elf(tmp_path):
    d = bad_dir(tmp_path)
    lib = os.path.join(d, b"libtt_core.so")
    shutil.copy(os.path.join(os.fsencode(BUILD), b"samples/tinytensor/tinytensor/lib/libtt_core.so"), lib)
    return d, lib


def test_inspect_keeps_paths_and_errors(tdebug, tmp_path):
    d, lib = copy_elf(tmp_path)
    missing = os.path.join(d, b"missing-\xff.so")
    doc = tdebug_json([tdebug, "inspect", "--json", lib, missing], expect_rc=1)
    (obj,) = doc["objects"]
    assert unescape(obj["path"]) == lib and obj["path_escaped"] is True
    assert unescape(obj["target"]) == lib and obj["target_escaped"] is True
    (err,) = doc["errors"]
    assert unescape(err["target"]) == missing and err["target_escaped"] is True
    assert missing in unescape(err["error"]) and err["error_escaped"] is True


def test_inspect_pid_keeps_mapped_paths(tdebug, procs, tmp_path):
    d, lib = copy_elf(tmp_path)
    code = ("import ctypes, sys, time\n"
            "ctypes.CDLL(sys.argv[1].encode('utf-8', 'surrogateescape'))\n"
            "print('ready', flush=True)\n"
            "time.sleep(600)\n")
    p = procs.start([PYTHON.encode(), b"-c", code.encode(), lib], stdout=subprocess.PIPE)
    assert p.stdout.readline() == b"ready\n"
    doc = tdebug_json([tdebug, "inspect", "--json", "--all", "--pid", str(p.pid)])
    paths = [unescape(o["path"]) if o.get("path_escaped") else o["path"].encode()
             for o in doc["objects"]]
    assert lib in paths


def test_profile_check_keeps_paths(tdebug, tmp_path):
    d = bad_dir(tmp_path)
    src, lib = os.path.join(d, b"f.c"), os.path.join(d, b"libf.so")
    with open(src, "w") as f:
        f.write("int f(int x) { return x + 1; }\n")
    # DWARF without a gdb index: the fix names the file ('gdb-add-index PATH').
    subprocess.run([b"cc", b"-g", b"-O0", b"-shared", b"-fPIC", b"-o", lib, src], check=True)
    doc = tdebug_json([tdebug, "profile", "--check", "--json", lib], expect_rc=1)
    (obj,) = doc["objects"]
    assert unescape(obj["path"]) == lib and obj["path_escaped"] is True
    remedies = [c for c in obj["checks"] if c.get("remedy_escaped")]
    assert any(lib in unescape(c["remedy"]) for c in remedies), obj["checks"]


def test_profile_json_keeps_file_names(tdebug, tmp_path):
    src = bad_dir(tmp_path)
    f = b"aten-\xff.cpp"
    open(os.path.join(src, f), "w").close()
    for out in ("--json", "--format=json"):  # the older name still works
        doc = tdebug_json([tdebug, "profile", "--torch=selective", "--torch-src", src,
                           "--debinfo", f, out])
        (var,) = [v for v in doc["variables"] if v["name"] == "USE_CUSTOM_DEBINFO"]
        assert var["value_escaped"] is True and unescape(var["value"]) == f


# --- doctor: what it says about an interpreter's path

def test_doctor_keeps_the_interpreters_path(tdebug, tmp_path):
    d = bad_dir(tmp_path)
    python = os.path.join(d, b"python3")
    os.symlink(os.path.realpath(PYTHON), python)
    r = run_bytes([tdebug, "doctor", "--json", "--python", python])
    doc = json.loads(r.stdout.decode("utf-8"))
    assert list(doc)[0] == "version"
    said = [unescape(c[k]) for c in doc["checks"] for k in ("summary", "remedy")
            if c.get(k + "_escaped")]
    assert any(python in s for s in said), doc["checks"]
