"""'tdebug vscode': what it writes, that it validates against the schemas VS
Code applies, that the user's files lose nothing, and the refusals.  Most
of this is the compound (--compound); what is about the "tdebug"
configuration alone, the default, is in test_vscode_tdebug.py.  The runs
of the written configurations are in test_vscode_e2e.py (the compound) and
test_vscode_tdebug.py."""
import fcntl
import json
import os
import pathlib
import re
import socket
import stat
import sys
import subprocess
import tempfile

import jsonschema
import pytest

from conftest import PYTHON, ROOT, SLOW, free_port, run, wait_until
from debugpy_util import LaunchLayout, ListenLayout, PlainProgram
from proc_util import held_with_ptrace
from tinytensor_util import TT_SRC
from vscode_util import (RUNNER, SCHEMAS, Workspace, install_extension, kill_adapters, load_jsonc,
                         sample_workspace, schema_for, strip_jsonc)

FIXTURES = ROOT / "tests" / "fixtures" / "vscode"
HELPER = pathlib.Path("/usr/share/gdb/auto-load") / (os.path.realpath(PYTHON).lstrip("/") + "-gdb.py")


@pytest.fixture(scope="session")
def extension_home(tdebug, tmp_path_factory):
    """A home where tdebug's extension is installed."""
    return install_extension(tdebug, tmp_path_factory.mktemp("home"))


@pytest.fixture(autouse=True)
def _home_with_the_extension(extension_home, monkeypatch):
    """Every run here is a user's who has the extension: 'tdebug vscode'
    warns about nothing (test_vscode_tdebug.py checks the warning)."""
    monkeypatch.setenv("HOME", str(extension_home))


@pytest.fixture
def ws(tmp_path):
    """A workspace holding the test scripts and tinytensor, built."""
    return sample_workspace(tmp_path / "ws")


@pytest.fixture(scope="session")
def schemas():
    assert (SCHEMAS / "launch.schema.json").exists(), f"VS Code's schemas are missing from {SCHEMAS}"
    return SCHEMAS


def vscode(tdebug, *args, cwd=None, check=True):
    return run([tdebug, "vscode"] + list(args), cwd=cwd, check=check)


def validate(launch, schemas):
    """Every configuration against its debugger's schema, and the file's top
    level against launch.schema.json."""
    top = json.loads((schemas / "launch.schema.json").read_text())
    jsonschema.Draft7Validator(top).validate(launch)
    for conf in launch["configurations"]:
        jsonschema.Draft7Validator(schema_for(conf, schemas)).validate(conf)


def listen_port(args):
    """debugpy's port: the runner's first argument."""
    return int(args[args.index(str(RUNNER)) + 1].rsplit(":", 1)[1])


def own(items, key="name"):
    return [x for x in items if x[key].startswith("tdebug: ")]


# ---------------------------------------------------------------------------
# What is written

def test_program_entries(tdebug, ws):
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", "--args", "--lr", "0.1", "a b")
    assert r.stdout == ("wrote %s/.vscode/launch.json\nwrote %s/.vscode/tasks.json\n"
                        "In VS Code: Run and Debug, pick \"tdebug: main.py (Python + C++)\", press F5.\n"
                        "gdb reads the symbols of every shared object under %s and of every Python "
                        "extension module as they load; for another library, add --lib NAME and run "
                        "this again (or type '-exec sharedlibrary NAME' in the Debug Console).\n"
                        % (ws, ws, ws))
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    tasks = load_jsonc(ws / ".vscode" / "tasks.json")
    assert launch["version"] == "0.2.0" and tasks["version"] == "2.0.0"
    assert [c["name"] for c in launch["configurations"]] == [
        "tdebug: main.py (C++, gdb)", "tdebug: main.py (Python, debugpy)"]
    assert launch["compounds"] == [{"name": "tdebug: main.py (Python + C++)",
                                    "configurations": ["tdebug: main.py (C++, gdb)",
                                                       "tdebug: main.py (Python, debugpy)"],
                                    "stopAll": True}]
    gdb, py = launch["configurations"]
    assert (gdb["type"], gdb["request"], gdb["program"]) == ("cppdbg", "launch", PYTHON)
    port = listen_port(gdb["args"])
    assert gdb["args"] == ["-Xfrozen_modules=off", str(RUNNER), f"127.0.0.1:{port}", "60",
                           '"${workspaceFolder}/main.py"', "--lr", "0.1", '"a b"']
    assert gdb["cwd"] == "${workspaceFolder}"
    assert gdb["MIMode"] == "gdb" and os.path.isabs(gdb["miDebuggerPath"])
    info = gdb["symbolLoadInfo"]
    assert info["loadAll"] is False
    listed = info["exceptionList"].split(";")
    for pattern in ("libc.so.6", "ld-linux*.so*", "libtorch*.so*", "libc10*.so*", "_C.cpython*.so",
                    "libstdc++.so*", "libgcc_s.so*", "libgomp*.so*", "libffi.so*",
                    "*.cpython-3%d-*.so" % sys.version_info[1], "*.abi3.so",
                    "libtt_core.so", "libtt_python.so"):
        assert pattern in listed
    assert "libpython3.%d*.so*" % int(run([PYTHON, "-c", "import sys; print(sys.version_info[1])"]).stdout) in listed
    texts = [c["text"] for c in gdb["setupCommands"]]
    assert "-enable-pretty-printing" in texts
    assert "skip -rfu ^std::" in texts and "skip -rfu ^pybind11::" in texts
    if HELPER.exists():
        assert f"source {HELPER}" in texts
    assert not any("debuginfod" in x for x in texts)  # MIEngine sends it
    # the workspace and tinytensor's sources (its libraries' DWARF) map to
    # themselves: breakpoints there go by full path
    assert gdb["sourceFileMap"] == {"${workspaceFolder}": "${workspaceFolder}",
                                    str(TT_SRC): str(TT_SRC)}

    assert (py["type"], py["request"]) == ("debugpy", "attach")
    assert py["connect"] == {"host": "127.0.0.1", "port": port}
    assert py["justMyCode"] is False
    assert py["preLaunchTask"] == "tdebug: wait for debugpy (main.py)"
    assert tasks["tasks"] == [{"label": "tdebug: wait for debugpy (main.py)", "type": "process",
                               "command": tdebug,
                               "args": ["wait-port", f"127.0.0.1:{port}", "--timeout", "120",
                                        "--started-within", "30"],
                               "problemMatcher": [], "presentation": {"reveal": "silent"}}]


def test_module_and_script_outside_workspace(tdebug, ws, tmp_path):
    vscode(tdebug, "--compound", "--workspace", str(ws), "--module", "pkg.main", "--args", "x")
    w = Workspace(ws)
    args = w.config("tdebug: -m pkg.main (C++, gdb)")["args"]
    assert args[-4:] == ["60", "-m", "pkg.main", "x"]
    assert w.task("tdebug: wait for debugpy (-m pkg.main)")

    elsewhere = tmp_path / "other" / "run.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text("print(1)\n")
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", str(elsewhere))
    w = Workspace(ws)
    conf = w.config(f"tdebug: {elsewhere} (C++, gdb)")
    assert conf["args"][-1] == str(elsewhere)  # no quotes needed
    # both programs' entries live side by side
    assert len(own(w.launch["compounds"])) == 2


def test_second_run_changes_nothing_and_keeps_the_port(tdebug, ws):
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py")
    before = {p.name: p.read_bytes() for p in (ws / ".vscode").iterdir()}
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py")
    assert r.stdout.startswith(f"{ws}/.vscode/launch.json is up to date\n"
                               f"{ws}/.vscode/tasks.json is up to date\n")
    after = {p.name: p.read_bytes() for p in (ws / ".vscode").iterdir()}
    assert after == before  # same bytes, and no backup files


def test_port_option_and_backups(tdebug, ws):
    port = free_port()
    vscode(tdebug, "--compound", "--program", "main.py", cwd=ws)
    first = (ws / ".vscode" / "launch.json").read_bytes()
    r = vscode(tdebug, "--compound", "--program", "main.py", "--port", str(port), cwd=ws)
    assert r.stdout.startswith("wrote .vscode/launch.json (the previous file is kept as "
                               ".vscode/launch.json.~1~)\n"
                               "wrote .vscode/tasks.json (the previous file is kept as "
                               ".vscode/tasks.json.~1~)\n")
    assert (ws / ".vscode" / "launch.json.~1~").read_bytes() == first
    w = Workspace(ws)
    assert w.config("tdebug: main.py (Python, debugpy)")["connect"]["port"] == port
    assert listen_port(w.config("tdebug: main.py (C++, gdb)")["args"]) == port
    assert w.task("tdebug: wait for debugpy (main.py)")["args"][1] == f"127.0.0.1:{port}"


def test_torch_src_maps_where_torch_was_built(tdebug, ws, tmp_path):
    src = tmp_path / "pytorch"
    src.mkdir()
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", "--torch-src", str(src))
    conf = Workspace(ws).config("tdebug: main.py (C++, gdb)")
    assert f"directory {src}" in [c["text"] for c in conf["setupCommands"]]
    # Where torch was built, read here independently from libc10's strings.
    torch_dir = run([PYTHON, "-c", "import importlib.util as u; "
                                   "print(u.find_spec('torch').submodule_search_locations[0])"],
                    check=True).stdout.strip()
    data = pathlib.Path(torch_dir, "lib", "libc10.so").read_bytes()
    m = re.search(rb'([^\0" ]*)c10/core/\w+\.cpp', data)
    root = m.group(1).decode().rstrip("/") or "/"
    assert conf["sourceFileMap"] == {str(ws): str(ws), str(TT_SRC): str(TT_SRC),
                                     root if root else ".": str(src)}


# ---------------------------------------------------------------------------
# The schemas VS Code applies

def test_every_configuration_validates(tdebug, ws, tmp_path, procs, schemas):
    src = tmp_path / "src"
    src.mkdir()
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", "--torch-src", str(src),
           "--args", "it's", "$HOME", "", "(x)", "caf\u00e9")
    vscode(tdebug, "--compound", "--workspace", str(ws), "--module", "pkg.main", "--args", "1")
    port = free_port()
    target = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
                          "attach_main.py", str(tmp_path / "never")], cwd=str(ws))
    try:
        run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)
        vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(target.pid))
    finally:
        kill_adapters(port)
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    kinds = {(c["type"], c["request"]) for c in launch["configurations"]}
    assert kinds == {("cppdbg", "launch"), ("cppdbg", "attach"), ("debugpy", "attach")}
    assert len(launch["configurations"]) == 6
    validate(launch, schemas)


def test_the_schema_check_can_fail(schemas):
    """What VS Code rejects, the check rejects: an unknown property, and a
    cppdbg attach without "program"."""
    conf = {"name": "x", "type": "cppdbg", "request": "attach", "processId": 1, "program": "/bin/true"}
    jsonschema.Draft7Validator(schema_for(conf, schemas)).validate(conf)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema_for(conf, schemas)).validate(dict(conf, bogus=1))
    del conf["program"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(schema_for(conf, schemas)).validate(conf)


# ---------------------------------------------------------------------------
# The user's files

def item_texts(text, key):
    """The exact text of each element of the root's array member KEY that is
    not tdebug's, scanned independently of tdebug's own reader."""
    items, depth, start, i = [], 0, None, 0
    member = None
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if depth == 1 and start is None:
                member = json.loads(text[i:j + 1])  # a key of the root (or a value)
            i = j + 1
            continue
        if text.startswith("//", i):
            i = text.find("\n", i)
            continue
        if text.startswith("/*", i):
            i = text.index("*/", i) + 2
            continue
        if c in "{[":
            depth += 1
            if depth == 3 and member == key:
                start = i
        elif c in "}]":
            if depth == 3 and start is not None:
                items.append(text[start:i + 1])
                start = None
            depth -= 1
        i += 1
    def theirs(item):
        v = json.loads(strip_jsonc(item))
        return not str(v.get("name", v.get("label", ""))).startswith("tdebug: ")
    return [t for t in items if theirs(t)]


def user_files(ws):
    """WS/.vscode with a user's launch.json (mode 0640) and tasks.json:
    (the folder, their texts)."""
    vs = ws / ".vscode"
    vs.mkdir()
    original = (FIXTURES / "user-entries.json").read_text()
    original_tasks = (FIXTURES / "tasks-user.json").read_text()
    (vs / "launch.json").write_text(original)
    (vs / "tasks.json").write_text(original_tasks)
    os.chmod(vs / "launch.json", 0o640)
    return vs, original, original_tasks


def test_user_entries_comments_and_mode_are_kept(tdebug, ws, schemas):
    vs, original, original_tasks = user_files(ws)
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py")
    new = (vs / "launch.json").read_text()
    for key in ("configurations", "compounds", "inputs"):
        kept = item_texts(original, key)
        assert kept and item_texts(new, key) == kept, key  # same bytes, same order
    assert "// written by an older tdebug run: replaced in place" in new
    assert (vs / "launch.json.~1~").read_text() == original
    assert (vs / "tasks.json.~1~").read_text() == original_tasks
    assert stat.S_IMODE(os.stat(vs / "launch.json").st_mode) == 0o640
    tasks = load_jsonc(vs / "tasks.json")
    assert [t["label"] for t in tasks["tasks"]] == ["build", "tdebug: stale task",
                                                   "tdebug: wait for debugpy (main.py)"]
    launch = load_jsonc(vs / "launch.json")
    names = [c["name"] for c in launch["configurations"]]
    assert names.count("tdebug: main.py (C++, gdb)") == 1
    assert "Attach to gdbserver" in names and "Python: module" in names
    assert launch["inputs"][0]["id"] == "port"
    # a second run: nothing changes, no new backup
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py")
    assert (vs / "launch.json").read_text() == new
    assert sorted(p.name for p in vs.iterdir()) == ["launch.json", "launch.json.~1~", "tasks.json",
                                                    "tasks.json.~1~"]


@pytest.mark.parametrize("broken, message, form", [
    ("launch.json", "tdebug: cannot parse '.vscode/launch.json': line 7, column 13: "
                    "expected ',' or '}' after a property value, found '\"'\n", "--compound"),
    ("tasks.json", "tdebug: cannot parse '.vscode/tasks.json': line 7, column 13: "
                   "expected ',' or '}' after a property value, found '\"'\n", "--compound"),
    ("launch.json", "tdebug: cannot parse '.vscode/launch.json': line 7, column 13: "
                    "expected ',' or '}' after a property value, found '\"'\n", None),
])
def test_a_file_that_does_not_parse_is_left_untouched(tdebug, ws, broken, message, form):
    vs = ws / ".vscode"
    vs.mkdir()
    bad = (FIXTURES / "bad-missing-comma.json").read_bytes()
    (vs / broken).write_bytes(bad)
    other = "tasks.json" if broken == "launch.json" else "launch.json"
    (vs / other).write_text("{}\n")
    r = vscode(tdebug, *[form] if form else [], "--program", "main.py", cwd=ws, check=False)
    assert r.returncode == 1
    assert r.stderr == message
    assert r.stdout == ""
    assert (vs / broken).read_bytes() == bad
    assert (vs / other).read_text() == "{}\n"  # neither file is written
    assert sorted(p.name for p in vs.iterdir()) == ["launch.json", "tasks.json"]


def test_wrong_shape_is_refused(tdebug, ws):
    vs = ws / ".vscode"
    vs.mkdir()
    (vs / "launch.json").write_text('{\n    "configurations": {}\n}\n')
    r = vscode(tdebug, "--program", "main.py", cwd=ws, check=False)
    assert r.returncode == 1
    assert r.stderr == ("tdebug: cannot update '.vscode/launch.json': line 2, column 23: "
                        "\"configurations\" is not an array\n")


def test_symlinked_launch_json_stays_a_link(tdebug, ws, tmp_path):
    vs = ws / ".vscode"
    vs.mkdir()
    target = tmp_path / "dotfiles-launch.json"
    target.write_text('{"version": "0.2.0", "configurations": []}\n')
    (vs / "launch.json").symlink_to(target)
    vscode(tdebug, "--workspace", str(ws), "--program", "main.py")
    assert (vs / "launch.json").is_symlink()
    assert "tdebug: main.py (Python + C++)" in target.read_text()
    assert (tmp_path / "dotfiles-launch.json.~1~").exists()


# ---------------------------------------------------------------------------
# Attach

def test_attach_finds_the_port_of_debugpy_listen_in_code(tdebug, ws, procs, tmp_path):
    """debugpy.listen() leaves no trace on the command line: the port comes
    from the adapter the program is connected to."""
    port = free_port()
    script = tmp_path / "api.py"
    script.write_text("import debugpy, time\n"
                      f"debugpy.listen(('127.0.0.1', {port}))\n"
                      "time.sleep(600)\n")
    target = procs.start([PYTHON, str(script)])
    try:
        run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)
        # the program's connection to its adapter is up once listen() returned
        wait_until(lambda: vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(target.pid))
                   and "tdebug: attach (Python, debugpy)" in (ws / ".vscode" / "launch.json").read_text(),
                   what="tdebug to see the adapter")
    finally:
        kill_adapters(port)
    w = Workspace(ws)
    assert w.config("tdebug: attach (Python, debugpy)")["connect"] == {"host": "127.0.0.1", "port": port}
    conf = w.config("tdebug: attach (C++, gdb)")
    assert conf["processId"] == target.pid
    assert conf["program"] == os.readlink(f"/proc/{target.pid}/exe")
    assert not (ws / ".vscode" / "tasks.json").exists()  # attach needs no task


def test_attach_without_debugpy_drops_the_old_python_entries(tdebug, ws, procs, tmp_path):
    port = free_port()
    with_server = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen", f"127.0.0.1:{port}",
                               "attach_main.py", str(tmp_path / "never")], cwd=str(ws))
    plain = procs.start([PYTHON, "-c", "import time; time.sleep(600)"])
    try:
        run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)
        vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(with_server.pid))
    finally:
        kill_adapters(port)
    assert len(own(load_jsonc(ws / ".vscode" / "launch.json")["configurations"])) == 2
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(plain.pid))
    assert f"pid {plain.pid} runs no debugpy server" in r.stdout
    assert 'pick "tdebug: attach (C++, gdb)"' in r.stdout
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    assert [c["name"] for c in launch["configurations"]] == ["tdebug: attach (C++, gdb)"]
    assert launch["configurations"][0]["processId"] == plain.pid
    assert launch["compounds"] == []


def test_attach_to_a_debugpy_client_writes_only_the_cpp_entry(tdebug, ws, procs, tmp_path):
    """A program started the way VS Code's own launcher starts it
    ('.../debugpy --connect H:P'): its Python side is debugged already."""
    import debugpy  # noqa: F401  (the test runs under the interpreter with debugpy)
    client = socket.socket()
    client.bind(("127.0.0.1", 0))
    client.listen(1)
    port = client.getsockname()[1]
    package = os.path.dirname(debugpy.__file__)
    (tmp_path / "serve.py").write_text("import time\ntime.sleep(600)\n")
    target = procs.start([PYTHON, "-X", "frozen_modules=off", package, "--connect",
                          f"127.0.0.1:{port}", "--configure-qt", "none", str(tmp_path / "serve.py")])
    try:
        r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--attach", str(target.pid)])
        assert r.returncode == 0, r.stderr
        assert r.stderr == (f"tdebug: warning: pid {target.pid} is already debugged by a debugpy "
                            "client (it was started with --connect): writing only the C++ attach\n")
    finally:
        client.close()
    names = [c["name"] for c in load_jsonc(ws / ".vscode" / "launch.json")["configurations"]]
    assert names == ["tdebug: attach (C++, gdb)"]


def test_attach_asks_the_interpreter_as_the_process_named_it(tdebug, ws, procs, tmp_path):
    """A virtual environment's python is a symlink to the system's: the
    process's executable is the system's, but what it imports (here: no
    torch) is the environment's."""
    venv = tmp_path / "venv"
    run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = procs.start([str(venv / "bin" / "python"), "-c", "import time; time.sleep(600)"])
    src = tmp_path / "src"
    src.mkdir()
    wait_until(lambda: pathlib.Path(f"/proc/{target.pid}/cmdline").read_bytes().startswith(
        bytes(venv)), what="the venv's python to start")
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(target.pid), "--torch-src", str(src))
    assert "(torch is not installed)" in r.stderr, r.stderr
    conf = Workspace(ws).config("tdebug: attach (C++, gdb)")
    assert conf["program"] == os.readlink(f"/proc/{target.pid}/exe")
    assert str(src) not in conf["sourceFileMap"].values()  # no build root to map from


def test_attach_to_a_launcher_or_adapter_writes_the_debuggee(tdebug, ws, procs, tmp_path):
    """VS Code's own layout (adapter -> launcher -> debuggee): given the
    launcher or the adapter, the C++ attach goes to the debuggee, as with
    'tdebug attach'.  Its Python side has a debugger already: VS Code."""
    with LaunchLayout(procs, tmp_path) as lay:
        for given, role in ((lay.launcher_pid, "launcher"), (lay.adapter_pid, "adapter")):
            r = vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(given))
            note, warning = r.stderr.splitlines()
            assert note.startswith(f"tdebug: pid {given} is the debugpy {role}; attaching to ")
            assert str(lay.debuggee_pid) in note
            assert warning == (f"tdebug: warning: pid {lay.debuggee_pid} is already debugged by a "
                               "debugpy client (it was started with --connect): writing only the "
                               "C++ attach")
            configs = load_jsonc(ws / ".vscode" / "launch.json")["configurations"]
            assert [c["name"] for c in configs] == ["tdebug: attach (C++, gdb)"]
            assert configs[0]["processId"] == lay.debuggee_pid
            assert configs[0]["program"] == os.readlink(f"/proc/{lay.debuggee_pid}/exe")


def test_attach_to_the_adapter_of_a_server_writes_both_sides(tdebug, ws, procs, tmp_path):
    """The double-forked adapter of 'python -m debugpy --listen' leads to
    the server, and the server's port to the debugpy entry."""
    with ListenLayout(procs, tmp_path) as lay:
        r = vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(lay.adapter_pid))
        assert r.stderr.startswith(f"tdebug: pid {lay.adapter_pid} is the debugpy adapter; "
                                   f"attaching to {lay.server_pid}, the program it debugs\n")
    w = Workspace(ws)
    assert w.config("tdebug: attach (C++, gdb)")["processId"] == lay.server_pid
    assert w.config("tdebug: attach (Python, debugpy)")["connect"] == {"host": "127.0.0.1",
                                                                      "port": lay.port}


def test_attach_to_an_adapter_with_two_programs_lists_them(tdebug, ws, procs, tmp_path):
    with LaunchLayout(procs, tmp_path, child=True) as lay:
        r = vscode(tdebug, "--workspace", str(ws), "--attach", str(lay.adapter_pid), check=False)
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot choose the process behind pid "
                                   f"{lay.adapter_pid} (the debugpy adapter): 2 programs")
        assert str(lay.debuggee_pid) in r.stderr and str(lay.child_pid) in r.stderr
        assert r.stdout == ""
    assert not (ws / ".vscode").exists()


@pytest.mark.parametrize("form", [[], ["--compound"]])
def test_attach_refusals(tdebug, ws, procs, tmp_path, form):
    def vscode(tdebug, *args, check):
        return run([tdebug, "vscode", *form, *args])
    sleeper = procs.start(["sleep", "600"])
    r = vscode(tdebug, "--workspace", str(ws), "--attach", str(sleeper.pid), check=False)
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot attach to pid {sleeper.pid}: it is not a Python process "
                        f"(it runs '{os.readlink(f'/proc/{sleeper.pid}/exe')}'; 'tdebug ps' lists "
                        "Python processes)\n")
    gone = procs.start(["true"])
    gone.wait()
    r = vscode(tdebug, "--workspace", str(ws), "--attach", str(gone.pid), check=False)
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot attach to pid {gone.pid}: no such process ('tdebug ps' "
                        "lists the Python processes you can attach to)\n")
    r = vscode(tdebug, "--workspace", str(ws), "--attach", "2", check=False)
    assert r.returncode == 1
    assert r.stderr.startswith("tdebug: cannot attach to pid 2: it is a kernel thread")
    with PlainProgram(procs, tmp_path) as prog, held_with_ptrace(procs, prog.debuggee_pid) as holder:
        r = vscode(tdebug, "--workspace", str(ws), "--attach", str(prog.debuggee_pid), check=False)
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot attach to pid {prog.debuggee_pid}: it is "
                                   f"already traced by pid {holder.pid} (ptrace-holder)")
    assert not (ws / ".vscode").exists()


@pytest.mark.parametrize("form", [[], ["--compound"]])
def test_attach_refuses_another_users_process(tdebug, procs, tmp_path, as_nobody, form):
    """Without Yama, the gdb VS Code starts has the user's credentials, and
    'tdebug dap' runs as the user."""
    with PlainProgram(procs, tmp_path) as prog, \
            tempfile.TemporaryDirectory(prefix="tdebug-vscode-") as ws:
        os.chmod(ws, 0o777)
        r = run(as_nobody + [tdebug, "vscode", *form, "--workspace", ws, "--attach",
                             str(prog.debuggee_pid)])
        assert r.returncode == 1
        assert r.stderr.startswith(f"tdebug: cannot attach to pid {prog.debuggee_pid}: it runs as "
                                   "user 'root' and tdebug runs as 'nobody'")
        assert os.listdir(ws) == []


# ---------------------------------------------------------------------------
# Refusals

def test_missing_script_and_interpreters(tdebug, ws, tmp_path):
    r = vscode(tdebug, "--workspace", str(ws), "--program", "nope.py", check=False)
    assert (r.returncode, r.stderr) == (127, "tdebug: cannot find the script 'nope.py': "
                                             "No such file or directory\n")
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--python",
               str(tmp_path / "python9"), check=False)
    assert (r.returncode, r.stderr) == (127, f"tdebug: cannot find python '{tmp_path}/python9': "
                                             "No such file or directory\n")
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--python", "/etc/passwd",
               check=False)
    assert r.returncode == 126
    # It runs, but is no Python.
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--python", "/bin/false",
               check=False)
    assert (r.returncode, r.stderr) == (126, "tdebug: cannot run '/bin/false' as a Python "
                                             "interpreter (it failed)\n")
    assert not (ws / ".vscode").exists()


def test_interpreter_without_debugpy(tdebug, ws, tmp_path):
    venv = tmp_path / "venv"
    run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", "--python",
               str(venv / "bin" / "python"), check=False)
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot use '{venv}/bin/python' for VS Code: it has no debugpy "
                        "module (install python3-debugpy or 'pip install debugpy', or pass "
                        "--python; without --compound no debugpy is needed)\n")
    assert not (ws / ".vscode").exists()
    # The "tdebug" configuration reads the Python side itself.
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--python",
               str(venv / "bin" / "python"))
    assert r.returncode == 0 and r.stderr == ""
    assert Workspace(ws).config("tdebug: main.py (Python + C++)")["python"] == str(venv / "bin" / "python")


@pytest.mark.parametrize("args", [
    [], ["--program", "main.py", "--module", "m"], ["--attach", "1", "--args", "x"],
    ["--attach", "1", "--python", "/usr/bin/python3"],
    ["--program", "main.py", "--port", "0"], ["--attach", "pid"], ["--module", "a b"],
    ["--program", "main.py", "stray"], ["--program"], ["--frobnicate"],
    ["--workspace", "/nonexistent/folder", "--program", "main.py"],
    # one form's options with the other
    ["--program", "main.py", "--port", "5678"], ["--program", "main.py", "--torch-src", "."],
    ["--compound", "--wait"], ["--compound", "--program", "main.py", "--stop-on-entry"],
    ["--compound", "--program", "main.py", "--stop-at-import", "torch._C"],
    ["--compound", "--program", "main.py", "--symbols", "x"],
    ["--compound", "--program", "main.py", "--catch-throw"],
    ["--compound", "--program", "main.py", "--env", "A=b"],
    ["--wait", "--attach", "1"], ["--wait", "--args", "x"], ["--wait", "--env", "A=b"],
    ["--attach", "1", "--env", "A=b"], ["--program", "main.py", "--extensions-dir", "x"],
    ["--install-extension", "--workspace", "."],
    # values launch.json cannot carry, or the adapter would refuse
    ["--program", "main.py", "--stop-at-import", "not a module"],
    ["--program", "main.py", "--symbols", "\\("], ["--program", "main.py", "--symbols", ""],
    ["--program", "main.py", "--catch-throw="], ["--program", "main.py", "--catch-throw=a\nb"],
    ["--program", "main.py", "--env", "NOVALUE"], ["--program", "main.py", "--env", "=x"],
    ["--program", "main.py", "--env", "A= padded "], ["--program", "main.py", "--env", "A=a\nb"],
    ["--program", "main.py", "--env", "A=${env:HOME}"], ["--program", "main.py", "--lib", "${x}"],
    ["--program", "main.py", "--symbols", "${x}"], ["--module", "a-b"],
])
def test_usage_errors(tdebug, ws, args):
    r = vscode(tdebug, "--workspace", str(ws), *args, check=False)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("tdebug vscode: ") and r.stderr.endswith("see 'tdebug vscode --help'\n")
    assert not (ws / ".vscode").exists()


def test_the_docs_name_what_is_written(tdebug, tmp_path, procs):
    """doc/vscode.md's "press F5" steps name exactly what tdebug writes, in
    both forms."""
    section = (ROOT / "doc" / "vscode.md").read_text()
    documented = set(re.findall(r"\*\*(tdebug: [^*]+)\*\*", section))
    assert "tdebug vscode --program train.py --args --epochs 1" in section
    assert "tdebug vscode --compound --program train.py --args --epochs 1" in section
    written, picked = set(), set()
    port = free_port()
    (tmp_path / "serve.py").write_text("import time\ntime.sleep(600)\n")
    server = procs.start([PYTHON, "-Xfrozen_modules=off", "-m", "debugpy", "--listen",
                          f"127.0.0.1:{port}", str(tmp_path / "serve.py")])
    run([tdebug, "wait-port", f"127.0.0.1:{port}"], check=True)
    try:
        for form in ([], ["--compound"]):
            ws = tmp_path / f"project{len(form)}"
            ws.mkdir()
            (ws / "train.py").write_text("print('training')\n")
            for target in (["--program", "train.py", "--args", "--epochs", "1"],
                           ["--attach", str(server.pid)], [] if form else ["--wait"],
                           [] if form else ["--attach", "pick"]):
                if target:
                    r = vscode(tdebug, *form, *target, cwd=ws)
                    picked.add(re.search(r'pick "([^"]+)"', r.stdout).group(1))
            launch = load_jsonc(ws / ".vscode" / "launch.json")
            tasks = load_jsonc(ws / ".vscode" / "tasks.json") if form else {"tasks": []}
            written |= ({c["name"] for c in launch["configurations"] + launch.get("compounds", [])}
                        | {t["label"] for t in tasks["tasks"]})
    finally:
        kill_adapters(port)
    assert documented == written
    assert picked <= documented


def test_root_gives_new_files_to_the_workspace_owner(tdebug, ws, as_nobody):
    """'sudo tdebug vscode' in a user's folder: .vscode and the new files
    are the user's, not root's."""
    os.chown(ws, 65534, 65534)
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py")
    for p in (ws / ".vscode", ws / ".vscode" / "launch.json", ws / ".vscode" / "tasks.json"):
        assert (os.stat(p).st_uid, os.stat(p).st_gid) == (65534, 65534), p


# ---------------------------------------------------------------------------
# Files that are not files, and writers at the same time

@pytest.mark.parametrize("which, form", [("launch.json", []), ("launch.json", ["--compound"]),
                                         ("tasks.json", ["--compound"])])
def test_a_fifo_is_refused_without_waiting_on_it(tdebug, ws, which, form):
    vs = ws / ".vscode"
    vs.mkdir()
    os.mkfifo(vs / which)
    r = vscode(tdebug, *form, "--workspace", str(ws), "--program", "main.py", check=False)
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot update '{ws}/.vscode/{which}': it is a FIFO, not a "
                        "regular file (tdebug writes only regular files: move it away and run the "
                        "command again)\n")
    assert r.stdout == ""
    assert stat.S_ISFIFO(os.lstat(vs / which).st_mode)
    assert sorted(p.name for p in vs.iterdir()) == [which]  # the other file is not written either


@pytest.mark.parametrize("target", ["/dev/null", "fifo"])
def test_a_link_to_a_device_or_fifo_is_refused(tdebug, ws, tmp_path, target):
    vs = ws / ".vscode"
    vs.mkdir()
    if target == "fifo":
        target = str(tmp_path / "a-fifo")
        os.mkfifo(target)
    before = os.stat(target)
    (vs / "launch.json").symlink_to(target)
    r = vscode(tdebug, "--program", "main.py", cwd=ws, check=False)
    assert r.returncode == 1
    kind = "a character device" if target == "/dev/null" else "a FIFO"
    assert r.stderr == (f"tdebug: cannot update '.vscode/launch.json': it links to '{target}', "
                        f"which is {kind}, not a regular file (tdebug writes only regular files: "
                        "move it away and run the command again)\n")
    after = os.stat(target)
    assert (after.st_mode, after.st_rdev, after.st_ino) == (before.st_mode, before.st_rdev, before.st_ino)
    assert os.readlink(vs / "launch.json") == target


def test_a_second_writer_waits_for_the_first(tdebug, ws, procs):
    """While another 'tdebug vscode' holds the workspace's .vscode, a run
    says it waits and writes nothing; it writes once that one is done."""
    vs = ws / ".vscode"
    vs.mkdir()
    fd = os.open(vs, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a run in progress holds it
        p = procs.start([tdebug, "vscode", "--program", "main.py"], cwd=str(ws),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stderr.readline() == ("tdebug: another 'tdebug vscode' is writing '.vscode': "
                                       "waiting for it\n")
        assert list(vs.iterdir()) == [] and p.poll() is None
    finally:
        os.close(fd)
    out, err = p.communicate(timeout=SLOW)
    assert (p.returncode, err) == (0, "")
    assert out.startswith("wrote .vscode/launch.json\nIn VS Code: ")


@pytest.mark.parametrize("form", [[], ["--compound"]])
def test_writers_at_the_same_time_keep_each_others_entries(tdebug, ws, procs, form):
    programs = [f"prog{i}.py" for i in range(6)]
    for name in programs:
        (ws / name).write_text("print(1)\n")
    runs = [procs.start([tdebug, "vscode", *form, "--workspace", str(ws), "--program", name],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for name in programs]
    for p in runs:
        out, err = p.communicate(timeout=SLOW)
        assert p.returncode == 0, err
        assert "wrote" in out
    w = Workspace(ws)
    picked = sorted(f"tdebug: {name} (Python + C++)" for name in programs)
    if form:
        assert sorted(c["name"] for c in own(w.launch["compounds"])) == picked
        assert len(own(w.tasks["tasks"], "label")) == len(programs)
    else:
        assert sorted(c["name"] for c in own(w.launch["configurations"])) == picked
        assert not (ws / ".vscode" / "tasks.json").exists()
