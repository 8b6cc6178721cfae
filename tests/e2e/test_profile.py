"""tdebug profile: the environment really makes setuptools build a
debuggable extension (and the defaults do not), 'profile --check' and
'inspect' tell the two apart, and the PyTorch profile sources cleanly."""
import json
import os
import re
import stat

import pytest

from conftest import PYTHON, clean_env, run
from inspect_util import (build_ext, default_build_env, profile_env, tdebug_json)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory, tdebug):
    """The fixture extension built with the profile and with Python's
    default flags."""
    base = tmp_path_factory.mktemp("ext")
    debug = build_ext(base / "debug", profile_env(tdebug, "--setuptools",
                                                  base=default_build_env()))
    default = build_ext(base / "default", default_build_env())
    return debug, default


def test_inspect_tells_the_builds_apart(tdebug, two_builds):
    debug, default = two_builds
    rc, doc, _ = tdebug_json(tdebug, "inspect", "--json", debug, default, expect_rc=0)
    d, o = doc["objects"]
    assert [p["name"] for p in d["pyinit"]] == ["PyInit_tdbext"]
    # the profile's build: unoptimised, indexed
    assert d["dwarf"]["unoptimised"] == 1 and d["dwarf"]["optimised"] == 0
    assert any("-O0" in p["producer"] and "-g3" in p["producer"] for p in d["dwarf"]["producers"])
    assert d["gdb_index"]["usable"] is True
    assert d["verdict"] == {"dwarf": True, "optimisation": "unoptimised", "indexed": True,
                            "debuggable": True}
    # Python's defaults: -g -O2, no index
    assert o["dwarf"]["optimised"] == 1 and o["dwarf"]["unoptimised"] == 0
    assert o["dwarf"]["producers"][0]["flag"] == "-O2"
    assert o["dwarf"]["optimised_examples"] == ["tdbext.c (-O2)"]
    assert o["gdb_index"] is None
    assert o["verdict"] == {"dwarf": True, "optimisation": "optimised", "indexed": False,
                            "debuggable": False}


def test_profile_check_tells_the_builds_apart(tdebug, two_builds):
    debug, default = two_builds
    r = run([tdebug, "profile", "--check", str(debug)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^  ok +DWARF +in the object$", r.stdout, re.M)
    assert re.search(r"^  ok +unoptimised +all 1 compile unit -O0$", r.stdout, re.M)
    assert re.search(r"^  ok +indexed +\.gdb_index version \d+, \d+ symbols$", r.stdout, re.M)
    assert r.stdout.rstrip().endswith("=> debuggable")

    r = run([tdebug, "profile", "--check", str(default)])
    assert r.returncode == 1
    assert re.search(r"^  failure +unoptimised +1 of 1 units optimised: tdbext\.c \(-O2\)", r.stdout, re.M)
    assert re.search(r"^  failure +indexed +no \.gdb_index", r.stdout, re.M)
    assert 'fix: rebuild with: eval "$(tdebug profile --setuptools)"' in r.stdout
    assert r.stdout.rstrip().endswith("=> not debuggable")

    # by module name, resolved by the interpreter in the build directory
    r = run([tdebug, "profile", "--check", "--json", "tdbext"], cwd=debug.parent)
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert doc["debuggable"] is True
    assert doc["objects"][0]["path"] == str(debug)
    assert [c["status"] for c in doc["objects"][0]["checks"]] == ["ok", "ok", "ok"]
    r = run([tdebug, "profile", "--check", "--json", str(debug), str(default)])
    assert r.returncode == 1
    assert json.loads(r.stdout)["debuggable"] is False


def test_gdb_sees_locals_in_the_debug_build_only(two_builds):
    """What the flags are for: gdb stops in scale() and prints its local."""
    debug, default = two_builds
    script = ("import sys; sys.path.insert(0, sys.argv[1]); import tdbext; "
              "print(tdbext.scale(6, 7))")
    outs = []
    for so in (debug, default):
        r = run(["gdb", "-nx", "-batch", "-iex", "set debuginfod enabled off",
                 "-ex", "set breakpoint pending on", "-ex", "break tdbext.c:10",
                 "-ex", "run", "-ex", "print y", "-ex", "kill",
                 "--args", "/usr/bin/python3", "-c", script, str(so.parent)])
        outs.append(r.stdout + r.stderr)
    assert re.search(r"^\$1 = 42$", outs[0], re.M), outs[0]
    assert not re.search(r"^\$1 = 42$", outs[1], re.M), outs[1]


def test_debian_torch_is_not_debuggable(tdebug, torch_available):
    r = run([tdebug, "profile", "--check", "torch._C"])
    assert r.returncode == 1
    assert re.search(r"^  failure +DWARF +none", r.stdout, re.M)
    assert "fix: install its debug file, or rebuild with debug info" in r.stdout


def test_torch_profile_sources_into_the_environment(tdebug):
    env = profile_env(tdebug, "--torch", base={**default_build_env(), "CFLAGS": "-Wall"})
    assert env["DEBUG"] == "1"
    assert int(env["MAX_JOBS"]) >= 1
    assert env["USE_CUDA"] == "0"
    for k in ("BUILD_TEST", "USE_DISTRIBUTED", "USE_MKLDNN", "USE_FBGEMM", "USE_NNPACK",
              "USE_QNNPACK", "USE_XNNPACK", "USE_FLASH_ATTENTION", "USE_MEM_EFF_ATTENTION"):
        assert env[k] == "0", k
    assert env["CMAKE_EXPORT_COMPILE_COMMANDS"] == "ON"
    # lld is installed here: the index flags, appended to what was there
    assert env["CFLAGS"] == "-Wall -ggnu-pubnames"
    assert env["CMAKE_SHARED_LINKER_FLAGS"] == "-fuse-ld=lld -Wl,--gdb-index"
    assert "REL_WITH_DEB_INFO" not in env

    out = run([tdebug, "profile", "--torch"]).stdout
    for line in out.splitlines():
        assert line.startswith("# ") or re.match(r"export [A-Z_]+=.*  # \S", line), line
    assert re.search(r"^export MAX_JOBS='\d+'  # \d+ CPUs, [\d.]+ GiB available: .*4 GiB", out, re.M)
    assert "PyTorch 2.1 or newer" in out

    env = profile_env(tdebug, "--torch=relwithdebinfo", "--jobs", "7", "--cuda", "--full",
                      base=default_build_env())
    assert env["REL_WITH_DEB_INFO"] == "1" and "DEBUG" not in env
    assert env["MAX_JOBS"] == "7"
    assert "USE_CUDA" not in env and "BUILD_TEST" not in env


def test_json_matches_shell(tdebug):
    for args in (["--torch"], ["--setuptools"]):
        rc, doc, _ = tdebug_json(tdebug, "profile", *args, "--json", expect_rc=0)
        # --format json, the older name, gives the same document.
        assert tdebug_json(tdebug, "profile", *args, "--format", "json", expect_rc=0)[1] == doc
        sh = run([tdebug, "profile", *args]).stdout
        names = re.findall(r"^export ([A-Z_]+)=", sh, re.M)
        assert [v["name"] for v in doc["variables"]] == names
        assert all(v["why"] for v in doc["variables"])
        assert doc["version"] == 1


def test_ccache_is_the_launcher_when_installed(tdebug, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "ccache"
    fake.write_text("#!/bin/sh\nexec \"$@\"\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    base = default_build_env()
    base["PATH"] = f"{bindir}:{base['PATH']}"
    env = profile_env(tdebug, "--torch", base=base)
    assert env["CMAKE_C_COMPILER_LAUNCHER"] == "ccache"
    assert env["CMAKE_CXX_COMPILER_LAUNCHER"] == "ccache"
    base["PATH"] = "/usr/bin:/bin"  # where this machine has no ccache
    if not os.path.exists("/usr/bin/ccache"):
        out = run([tdebug, "profile", "--torch"], env=base).stdout
        assert "CMAKE_C_COMPILER_LAUNCHER" not in out
        assert "# ccache is not installed" in out


def test_selective_mode_checks_files(tdebug, tmp_path):
    src = tmp_path / "pytorch"
    (src / "aten/src/ATen/native").mkdir(parents=True)
    (src / "aten/src/ATen/native/Linear.cpp").write_text("// x\n")
    (src / "torch/csrc").mkdir(parents=True)
    (src / "torch/csrc/Module.cpp").write_text("// y\n")
    env = profile_env(tdebug, "--torch=selective", "--torch-src", str(src), "--debinfo",
                      "aten/src/ATen/native/Linear.cpp;torch/csrc/Module.cpp",
                      base=default_build_env())
    assert env["USE_CUSTOM_DEBINFO"] == "aten/src/ATen/native/Linear.cpp;torch/csrc/Module.cpp"
    assert "DEBUG" not in env
    # --debinfo alone means selective; run from the checkout
    r = run([tdebug, "profile", "--torch", "--debinfo", "torch/csrc/Module.cpp"], cwd=src)
    assert r.returncode == 0 and "USE_CUSTOM_DEBINFO='torch/csrc/Module.cpp'" in r.stdout

    r = run([tdebug, "profile", "--torch=selective", "--torch-src", str(src),
             "--debinfo", "aten/src/ATen/native/Nope.cpp"])
    assert r.returncode == 2
    assert r.stderr == (f"tdebug: cannot use --debinfo 'aten/src/ATen/native/Nope.cpp': no such "
                        f"file under '{src}' (paths are relative to the PyTorch checkout; "
                        f"--torch-src DIR)\n")
    assert r.stdout == ""


@pytest.mark.parametrize("args,msg", [
    ([], "what are you building?"),
    (["--torch=fast"], "unknown --torch mode 'fast'"),
    (["--torch", "selective"], "write the mode as --torch=selective"),
    (["--torch=selective"], "--torch=selective needs the files"),
    (["--torch=debug", "--debinfo", "a.cpp"], "--debinfo goes with --torch=selective"),
    (["--torch", "--setuptools"], "choose one"),
    (["--setuptools", "--jobs", "4"], "go with --torch"),
    (["--torch", "--jobs", "0"], "--jobs wants a number"),
    (["--torch", "--format", "yaml"], "--format is sh or json"),
    (["--check"], "--check what?"),
    (["--check", "--torch", "x"], "--check inspects a build"),
    (["--pid", "1", "--torch"], "--pid, --debug-dir and --no-deps go with --check"),
    (["--json", "--format", "sh", "--torch"], "choose one: --json or --format sh"),
])
def test_usage_errors(tdebug, args, msg):
    r = run([tdebug, "profile", *args])
    assert r.returncode == 2, (args, r.stdout, r.stderr)
    assert r.stderr.startswith("tdebug profile: ")
    assert msg in r.stderr
    assert "see 'tdebug profile --help'" in r.stderr
    assert r.stdout == ""


def test_check_missing_target(tdebug):
    r = run([tdebug, "profile", "--check", "/nonexistent/lib.so"])
    assert r.returncode == 1
    assert r.stderr == "tdebug: cannot inspect '/nonexistent/lib.so': No such file or directory\n"


@pytest.fixture(scope="module")
def tinytensor_builds(tmp_path_factory, tdebug):
    """samples/tinytensor (an extension stub over two shared libraries,
    like torch) built by its Makefile with the profile, and with Python's
    default flags.  The Makefile adds a gdb index to both."""
    from tinytensor_util import TT_SRC
    base = tmp_path_factory.mktemp("tinytensor")
    env = profile_env(tdebug, "--setuptools", base=default_build_env())
    r = run(["make", "-C", str(TT_SRC), f"OUT={base / 'debug'}", f"PYTHON={PYTHON}"], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = run(["make", "-C", str(TT_SRC), f"OUT={base / 'default'}", f"PYTHON={PYTHON}",
             "CFLAGS=", "LDFLAGS="], env=default_build_env())
    assert r.returncode == 0, r.stdout + r.stderr
    return base / "debug", base / "default"


def test_tinytensor_builds_told_apart(tdebug, tinytensor_builds):
    for out, debuggable in zip(tinytensor_builds, (True, False)):
        env = clean_env(PYTHONPATH=str(out))
        # the extension by module name; its libraries by path
        libs = sorted(str(p) for p in (out / "tinytensor" / "lib").glob("libtt_*.so"))
        assert len(libs) == 2
        r = run([tdebug, "profile", "--check", "--json", "tinytensor._C", *libs], env=env)
        doc = json.loads(r.stdout)
        assert r.returncode == (0 if debuggable else 1), r.stdout + r.stderr
        assert [o["debuggable"] for o in doc["objects"]] == [debuggable] * 3
        for o in doc["objects"]:
            status = {c["check"]: c["status"] for c in o["checks"]}
            assert status == {"DWARF": "ok", "indexed": "ok",
                              "unoptimised": "ok" if debuggable else "failure"}, o
        rc, ins, _ = tdebug_json(tdebug, "inspect", "--json", "tinytensor._C", *libs,
                                 expect_rc=0, env=env)
        assert [p["name"] for p in ins["objects"][0]["pyinit"]] == ["PyInit__C"]
        units = [o["dwarf"]["units"] for o in ins["objects"]]
        assert all(u >= 1 for u in units) and sum(units) > 5
        key = "unoptimised" if debuggable else "optimised"
        assert all(o["dwarf"][key] == o["dwarf"]["units"] for o in ins["objects"]), ins
