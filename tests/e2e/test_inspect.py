"""tdebug inspect against real objects: Debian's torch and python3.11,
objects built here with gcc/objcopy/lld/gdb-add-index, and damaged files."""
import json
import os
import random
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, run
from inspect_util import (ELF_FIXTURES, build_id_of, compile_so, nm_dynamic, split_debug,
                          tdebug_json, torch_objects, world_readable_dir)

TOP_KEYS = {"path", "realpath", "format", "kind", "build_id", "stripped", "dynamic_symbols",
            "pyinit", "debuglink", "debug_file", "debug_file_searched", "debug_file_rejected",
            "dwarf", "gdb_index", "verdict", "target"}


def test_debian_torch_is_stripped_with_debuglinks_and_no_debug_files(tdebug, torch_available):
    objs = torch_objects()
    assert any("libtorch_cpu" in o for o in objs)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--no-deps", *objs, expect_rc=0)
    assert doc["version"] == 1 and doc["errors"] == []
    assert len(doc["objects"]) == len(objs)
    for o in doc["objects"]:
        assert set(o) == TOP_KEYS
        assert o["stripped"] is True, o["path"]
        assert o["debuglink"] and re.fullmatch(r"0x[0-9a-f]{8}", o["debuglink"]["crc"])
        assert o["debug_file"] is None
        assert o["debug_file_searched"], o["path"]
        assert o["build_id"] and o["build_id"] == build_id_of(o["path"])
        assert o["dwarf"] is None and o["gdb_index"] is None
        assert o["verdict"] == {"dwarf": False, "optimisation": "unknown", "indexed": False,
                                "debuggable": False}
    cpu = next(o for o in doc["objects"] if "libtorch_cpu" in o["path"])
    assert cpu["dynamic_symbols"] > 30000
    # the build-id place comes first, then the debuglink places gdb uses
    bid = cpu["build_id"]
    assert cpu["debug_file_searched"][0] == f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
    assert any(p.endswith("/.debug/" + cpu["debuglink"]["name"])
               for p in cpu["debug_file_searched"])


def test_module_name_resolves_and_pyinit_matches_nm(tdebug, torch_available):
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--no-deps", "torch._C", expect_rc=0)
    (o,) = doc["objects"]
    assert o["target"] == "torch._C"
    assert o["path"].endswith("/torch/_C.cpython-311-x86_64-linux-gnu.so")
    assert o["kind"] == "shared object"
    nm = nm_dynamic(o["path"])
    assert o["pyinit"] == [{"name": "PyInit__C", "value": hex(nm["PyInit__C"])}]

    text = run([tdebug, "inspect", "torch._C"]).stdout
    assert text.startswith("torch._C is /")
    assert re.search(r"^  python      exports PyInit__C \(0x[0-9a-f]+\)$", text, re.M)
    assert re.search(r"^  debug file  not found; looked at:$", text, re.M)
    assert re.search(r"^  verdict     not debuggable at source level: no DWARF", text, re.M)


def test_python_debug_file_found_by_build_id(tdebug):
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "/usr/bin/python3.11", expect_rc=0)
    (o,) = doc["objects"]
    bid = build_id_of("/usr/bin/python3.11")
    assert o["build_id"] == bid
    assert o["kind"] == "executable"
    assert o["debug_file"] == {"path": f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug",
                               "found_by": "build-id"}
    dw = o["dwarf"]
    assert dw["in"] == "debug file"
    assert dw["debug_info"]["compression"] == "zlib"  # Debian compresses debug files
    assert dw["versions"] == [5]
    assert dw["units"] > 100 and dw["optimised"] > 100  # CPython is built -O3
    assert any("-O3" in p["producer"] for p in dw["producers"])
    assert o["verdict"]["dwarf"] is True and o["verdict"]["optimisation"] == "optimised"
    # _PyRuntime lives in the executable itself
    assert any(p["name"] == "PyInit_posix" for p in o["pyinit"])
    assert len(o["pyinit"]) > 20


def test_debug_file_found_in_each_place_gdb_looks(tdebug, tmp_path):
    libdir = tmp_path / "lib"
    libdir.mkdir()
    debugdir = tmp_path / "debug"
    for place in ("beside", ".debug", "debug-dir", "build-id"):
        obj = compile_so(libdir, f"lib{place.strip('.').replace('-', '')}.so",
                         ldflags=("-Wl,--build-id=sha1",))
        debug = split_debug(obj, obj.name + ".debug")
        bid = build_id_of(obj)
        if place == ".debug":
            (libdir / ".debug").mkdir(exist_ok=True)
            debug.rename(libdir / ".debug" / debug.name)
        elif place == "debug-dir":
            dest = debugdir / str(libdir).lstrip("/")
            dest.mkdir(parents=True, exist_ok=True)
            debug.rename(dest / debug.name)
        elif place == "build-id":
            dest = debugdir / ".build-id" / bid[:2]
            dest.mkdir(parents=True, exist_ok=True)
            debug.rename(dest / (bid[2:] + ".debug"))
        rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--debug-dir", debugdir, obj,
                                 expect_rc=0)
        (o,) = doc["objects"]
        assert o["debug_file"] and o["debug_file"]["found_by"] == place, (place, o)
        assert o["dwarf"]["in"] == "debug file"
        assert o["dwarf"]["unoptimised"] == 1
        assert o["verdict"]["dwarf"] is True


def test_debuglink_crc_mismatch_is_rejected(tdebug, tmp_path):
    obj = compile_so(tmp_path, "libcrc.so", ldflags=("-Wl,--build-id=none",))
    debug = split_debug(obj, "libcrc.so.debug")
    # another build's debug info under the same name
    other = compile_so(tmp_path, "libother.so", source="int g(void) { return 3; }\n")
    shutil.copy(other, debug)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", obj, expect_rc=0)
    (o,) = doc["objects"]
    assert o["build_id"] is None
    assert o["debug_file"] is None
    assert any("CRC" in r and "is not the debuglink's" in r for r in o["debug_file_rejected"])
    text = run([tdebug, "inspect", str(obj)]).stdout
    assert re.search(r"^  rejected    .*libcrc\.so\.debug: CRC 0x", text, re.M)


@pytest.mark.parametrize("mode,name", [("zlib", "zlib"), ("zlib-gnu", "zlib-gnu"),
                                       ("zstd", "zstd")])
def test_compressed_dwarf_is_read(tdebug, tmp_path, mode, name):
    # enough DWARF that every mode finds it worth compressing
    source = "".join(f"struct s{i} {{ int a{i}; long b{i}; }};\n"
                     f"int f{i}(struct s{i} *p) {{ int y = p->a{i} * {i}; return y + 1; }}\n"
                     for i in range(60))
    obj = compile_so(tmp_path, "libz.so", source=source)
    subprocess.run(["objcopy", f"--compress-debug-sections={mode}", str(obj)], check=True)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", obj, expect_rc=0)
    dw = doc["objects"][0]["dwarf"]
    assert dw["in"] == "object"
    assert dw["debug_info"]["compression"] == name
    assert dw["units"] == 1 and dw["unoptimised"] == 1  # read through the compression
    assert dw["error"] is None


def test_gdb_index_kinds(tdebug, tmp_path):
    """lld --gdb-index without -ggnu-pubnames writes an index with no
    symbols, which gdb ignores; with them, and gdb-add-index, it is used."""
    empty = compile_so(tmp_path, "libempty.so", flags=("-O0", "-g"),
                       ldflags=("-fuse-ld=lld", "-Wl,--gdb-index"))
    pub = compile_so(tmp_path, "libpub.so", flags=("-O0", "-g", "-ggnu-pubnames"),
                     ldflags=("-fuse-ld=lld", "-Wl,--gdb-index"))
    added = compile_so(tmp_path, "libadded.so")
    subprocess.run(["gdb-add-index", str(added)], check=True, capture_output=True)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", empty, pub, added, expect_rc=0)
    e, p, a = (o["gdb_index"] for o in doc["objects"])
    assert e["section"] == ".gdb_index" and e["symbols"] == 0 and e["usable"] is False
    assert p["symbols"] > 0 and p["usable"] is True
    assert a["symbols"] > 0 and a["usable"] is True and a["version"] >= 8
    assert [o["verdict"]["debuggable"] for o in doc["objects"]] == [False, True, True]
    # gdb agrees: it uses the index it was given, ignores the empty one
    for path, uses in ((empty, False), (pub, True)):
        out = run(["gdb", "-nx", "-batch", "-ex", "maint print objfiles", str(path)]).stdout
        assert (".gdb_index: version" in out) == uses, out


def test_pid_reports_the_objects_that_matter(tdebug, procs, torch_available):
    p = procs.start([PYTHON, "-c", "import sys, torch; print('ready', flush=True); sys.stdin.read()"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--pid", p.pid, expect_rc=0)
    paths = [o["path"] for o in doc["objects"]]
    assert all(o["target"] == f"pid {p.pid}" for o in doc["objects"])
    assert os.path.realpath(PYTHON) in paths
    assert any(x.endswith("/torch/_C.cpython-311-x86_64-linux-gnu.so") for x in paths)
    assert any("libtorch_cpu" in x for x in paths)
    assert any("libc10" in x for x in paths)
    assert not any(os.path.basename(x).startswith("libc.so") for x in paths)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--all", "--pid", p.pid, expect_rc=0)
    assert any(os.path.basename(o["path"]).startswith("libc.so") for o in doc["objects"])


@pytest.mark.parametrize("name,why", [
    ("not-elf.txt", "not an ELF object (file format not recognized)"),
    ("empty", "not an ELF object (the file is empty)"),
    ("bad-magic.elf", "truncated or corrupt"),
    ("truncated-header.so", "truncated: 40 bytes, shorter than an ELF header"),
    ("truncated.so", "lie past the end of the file"),
    ("corrupt-shoff.so", "truncated or corrupt"),
    ("", "it is a directory"),
    ("no-such-file", "No such file or directory"),
])
def test_bad_files_get_one_clear_line(tdebug, name, why):
    path = str(ELF_FIXTURES / name) if name else str(ELF_FIXTURES)
    r = run([tdebug, "inspect", path])
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == f"tdebug: cannot inspect '{path}': {why}\n" or (
        r.stderr.startswith(f"tdebug: cannot inspect '{path}': ") and why in r.stderr
        and r.stderr.count("\n") == 1), r.stderr


def test_one_bad_target_loses_nothing(tdebug):
    good = ELF_FIXTURES / "libversioned.so"
    r = run([tdebug, "inspect", str(ELF_FIXTURES / "empty"), str(good)])
    assert r.returncode == 1
    assert r.stdout.startswith(f"{good}\n")
    assert "verdict" in r.stdout
    assert r.stderr.startswith("tdebug: cannot inspect")
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", ELF_FIXTURES / "empty", good,
                             expect_rc=1)
    assert len(doc["objects"]) == 1
    assert doc["errors"] == [{"target": str(ELF_FIXTURES / "empty"),
                              "error": f"cannot inspect '{ELF_FIXTURES / 'empty'}': not an ELF "
                                       "object (the file is empty)"}]


def test_damaged_dwarf_is_a_warning_in_the_report(tdebug):
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", ELF_FIXTURES / "corrupt-dwarf.so",
                             expect_rc=0)
    assert "reserved unit length 0xfffffff5" in doc["objects"][0]["dwarf"]["error"]
    text = run([tdebug, "inspect", str(ELF_FIXTURES / "corrupt-dwarf.so")]).stdout
    assert "warning     DWARF read stopped early" in text
    assert "damaged DWARF" in text


def test_module_errors(tdebug):
    r = run([tdebug, "inspect", "no_such_module.sub"])
    assert r.returncode == 1
    assert r.stderr.startswith("tdebug: cannot inspect module 'no_such_module.sub': no module named")
    r = run([tdebug, "inspect", "json"])
    assert r.returncode == 1
    assert "it is Python source" in r.stderr and "not a native extension" in r.stderr
    r = run([tdebug, "inspect", "sys"])
    assert r.returncode == 1 and "built into the interpreter" in r.stderr
    r = run([tdebug, "inspect", "--python", "/nonexistent/python", "torch._C"])
    assert r.returncode == 1
    assert "cannot run '/nonexistent/python': No such file or directory" in r.stderr


def test_usage_errors(tdebug):
    for args in ([], ["--all", "x"], ["--pid", "abc"], ["--bogus"]):
        r = run([tdebug, "inspect", *args])
        assert r.returncode == 2, args
        assert "see 'tdebug inspect --help'" in r.stderr
    r = run([tdebug, "inspect", "--pid", "2147483600"])
    assert r.returncode == 1 and "no such process" in r.stderr


def test_unreadable_file_as_nobody(tdebug, as_nobody):
    d = world_readable_dir()
    try:
        secret = d / "libsecret.so"
        shutil.copy(ELF_FIXTURES / "libversioned.so", secret)
        os.chmod(secret, 0o600)
        r = run([*as_nobody, tdebug, "inspect", str(secret)], cwd="/")
        assert r.returncode == 1
        assert r.stderr == f"tdebug: cannot inspect '{secret}': Permission denied\n"
    finally:
        shutil.rmtree(d)


def test_fuzzed_copies_never_crash(tdebug, tmp_path):
    """Hundreds of randomly damaged copies of a real shared object: each
    gives a report or one error line, never a crash or a hang."""
    data = (ELF_FIXTURES / "libversioned.so").read_bytes()
    rng = random.Random(1234)
    paths = []
    for i in range(300):
        b = bytearray(data)
        kind = i % 3
        if kind == 0:    # a few random bytes anywhere
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
        elif kind == 1:  # cut short
            b = b[:rng.randrange(1, len(b))]
        else:            # one header field smashed
            off = rng.randrange(0, 64)
            b[off:off + 4] = rng.randbytes(4)
        p = tmp_path / f"f{i}.so"
        p.write_bytes(bytes(b))
        paths.append(str(p))
    for chunk in range(0, len(paths), 50):
        r = run([tdebug, "inspect", "--json", *paths[chunk:chunk + 50]])
        assert r.returncode in (0, 1), r.stderr[-2000:]
        doc = json.loads(r.stdout)
        assert len(doc["objects"]) + len(doc["errors"]) == 50
        for e in doc["errors"]:
            assert e["error"].startswith("cannot inspect '"), e


def test_pid_includes_a_package_s_own_libraries(tdebug, procs):
    """tinytensor's _C loads libtt_python and libtt_core from the package's
    lib/ directory: they matter as torch/lib's libraries do."""
    from tinytensor_util import TT_OUT, tt_env
    p = procs.start([PYTHON, "-c", "import sys, tinytensor; print('ready', flush=True); "
                     "sys.stdin.read()"], env=tt_env(), stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--pid", p.pid, expect_rc=0)
    paths = [o["path"] for o in doc["objects"]]
    ours = sorted(os.path.basename(x) for x in paths if x.startswith(str(TT_OUT)))
    assert ours == ["_C.cpython-311-x86_64-linux-gnu.so", "libtt_core.so", "libtt_python.so"]
    assert os.path.realpath(PYTHON) in paths
    # nothing else but extension modules of the standard library
    assert all(x.startswith(str(TT_OUT)) or x == os.path.realpath(PYTHON) or ".cpython-" in x
               for x in paths), paths


# --- what a module loads, and libraries by name

TORCH_OWN = ["libtorch_python", "libshm", "libtorch", "libtorch_cpu", "libc10"]


def stem(path):
    return os.path.basename(path).split(".so")[0]


def test_module_brings_the_libraries_of_its_package(tdebug, torch_available):
    """torch._C is a 14 KB stub: the code is in the libraries it loads."""
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "torch._C", expect_rc=0)
    objs = doc["objects"]
    assert objs[0]["target"] == "torch._C"
    assert "loaded_by" not in objs[0]
    deps = objs[1:]
    assert sorted(stem(o["path"]) for o in deps) == sorted(TORCH_OWN)
    # Breadth first from _C: what _C needs comes first.
    assert stem(deps[0]["path"]) == "libtorch_python"
    for o in deps:
        assert o["loaded_by"] == "torch._C"
        assert o["target"] == f"{o['needed_as']} (loaded by torch._C)"
        assert os.path.basename(o["needed_by"]).startswith(("_C.", "libtorch"))
        # where the real loader finds it
        assert os.path.realpath(o["path"]) == os.path.realpath(loader_path(objs[0]["path"],
                                                                           o["needed_as"]))
    # Not the system's: no libc, libstdc++, BLAS, ...
    assert not any(stem(o["path"]) in ("libc", "libstdc++", "libgomp") for o in deps)
    # Each is reported: the text names what loads it.
    r = run([tdebug, "inspect", "torch._C"])
    assert r.stdout.count("  verdict ") == 1 + len(TORCH_OWN)
    assert "libc10.so.1.13 (loaded by torch._C) is " in r.stdout
    # --no-deps: the stub alone.
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--no-deps", "torch._C", expect_rc=0)
    assert [o["target"] for o in doc["objects"]] == ["torch._C"]


def loader_path(obj, name):
    """Where 'ldd' says OBJ's NAME comes from."""
    out = run(["ldd", obj]).stdout
    for line in out.splitlines():
        if line.strip().startswith(name + " => "):
            return line.split(" => ")[1].split(" (0x")[0]
    raise AssertionError(f"ldd does not list {name}:\n{out}")


def test_extension_brings_its_own_lib_directory(tdebug):
    from tinytensor_util import TT_PKG
    so = next(TT_PKG.glob("_C.*.so"))
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", so, expect_rc=0)
    assert [os.path.basename(o["path"]) for o in doc["objects"]] == \
        [so.name, "libtt_python.so", "libtt_core.so"]
    core = doc["objects"][2]
    assert core["needed_by"] == str(TT_PKG / "lib" / "libtt_python.so")
    assert core["needed_as"] == "libtt_core.so"


def test_profile_check_judges_each_library(tdebug, torch_available):
    rc, doc, _ = tdebug_json(tdebug, "profile", "--check", "--json", "torch._C", expect_rc=1)
    assert [stem(o["path"]) for o in doc["objects"]][1:] == \
        [stem(o["path"]) for o in tdebug_json(tdebug, "inspect", "--json", "torch._C",
                                              expect_rc=0)[1]["objects"]][1:]
    assert all(o["debuggable"] is False for o in doc["objects"])
    r = run([tdebug, "profile", "--check", "torch._C"])
    assert r.stdout.count("=> not debuggable") == 1 + len(TORCH_OWN)


def test_library_by_name_among_what_torch_loads(tdebug, torch_available):
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "libc10.so", expect_rc=0)
    (o,) = doc["objects"]
    assert o["target"] == "libc10.so" and o["loaded_by"] == "torch._C"
    assert os.path.basename(o["path"]).startswith("libc10.so.")
    # By its full soname too, and with the module named.
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--no-deps", "torch._C",
                             os.path.basename(o["path"]), expect_rc=0)
    assert [x["target"] for x in doc["objects"]][0] == "torch._C"
    assert doc["objects"][1]["path"] == o["path"]


def test_library_name_not_found_or_ambiguous(tdebug, procs, tmp_path):
    from tinytensor_util import TT_PKG
    so = next(TT_PKG.glob("_C.*.so"))
    r = run([tdebug, "inspect", str(so), "libc10.so"])
    assert r.returncode == 1
    assert "tdebug: cannot find library 'libc10.so' among the " in r.stderr
    assert f" that {so} loads (name what loads it, e.g. 'tdebug inspect torch._C libc10.so', " \
           "or give its path)" in r.stderr
    # Two copies of one library mapped in a process: which one is meant?
    copies = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        copies.append(shutil.copy(TT_PKG / "lib" / "libtt_core.so", tmp_path / d))
    p = procs.start([PYTHON, "-c", "import ctypes, sys\n"
                     "for p in sys.argv[1:]: ctypes.CDLL(p)\n"
                     "print('ready', flush=True); sys.stdin.read()", *map(str, copies)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", "--pid", p.pid, "libtt_core.so",
                             expect_rc=1)
    (err,) = [e for e in doc["errors"] if e["target"] == "libtt_core.so"]
    assert err["error"].startswith("library name 'libtt_core.so' is ambiguous: ")
    assert all(f"{c} (loaded by pid {p.pid})" in err["error"] for c in copies)


def test_library_the_loader_cannot_find_is_an_error(tdebug, tmp_path):
    dep = compile_so(tmp_path, "libgone_dep.so")
    so = compile_so(tmp_path, "mod.cpython-311-x86_64-linux-gnu.so",
                    ldflags=("-Wl,--no-as-needed", f"-L{tmp_path}", "-lgone_dep"))
    os.unlink(dep)
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", so, expect_rc=1)
    assert len(doc["objects"]) == 1
    (err,) = doc["errors"]
    assert err["target"] == f"libgone_dep.so (loaded by {so})"
    assert err["needed_as"] == "libgone_dep.so" and err["needed_by"] == str(so)
    assert err["error"] == (f"the dynamic loader cannot find 'libgone_dep.so', which '{so}' "
                            f"needs: {so} cannot be loaded (install it, or add its directory to "
                            "LD_LIBRARY_PATH)")
