"""'tdebug vscode' writing its default, the one "tdebug" configuration:
what it writes, that it validates against the extension's own schema
(vscode/extension/package.json's configurationAttributes, merged as VS Code
merges them), switching to and from the compound without losing a byte of
the user's, the refusals of what VS Code would change on the way, the
warning when tdebug's extension is missing, and the configuration run the
way VS Code runs it: read from launch.json, its variables substituted, and
given to 'tdebug dap' as the launch (or attach) request, through a Python
breakpoint, a step into C++, a C++ breakpoint and steps back out to
Python.  The compound's own tests are test_vscode*.py."""
import json
import os
import re
import stat

import jsonschema
import pytest

from conftest import PYTHON, ROOT, clean_env, run, tracer_of, wait_until
from tdap_util import counter, start_target
from test_vscode import item_texts, user_files
from vscode_util import (EXTENSION, SCHEMAS, VSCodeTdebug, Workspace, cpp_workspace,
                         extension_schema, install_extension, load_jsonc, marker_line)

FIXTURES = ROOT / "tests" / "fixtures" / "vscode"
PKG = json.loads((EXTENSION / "package.json").read_text())
FOLDER = f"{PKG['publisher']}.{PKG['name']}-{PKG['version']}"


@pytest.fixture(scope="session")
def home(tdebug, tmp_path_factory):
    """A user's home where tdebug's extension is installed."""
    return install_extension(tdebug, tmp_path_factory.mktemp("home"))


def vscode(tdebug, *args, home, cwd=None, check=True):
    r = run([tdebug, "vscode", *args], cwd=cwd, env=clean_env(HOME=home))
    if check:
        assert r.returncode == 0, r.stderr
    return r


def script(ws, name="main.py", text="print(1)\n"):
    ws.mkdir(exist_ok=True)
    (ws / name).write_text(text)
    return ws / name


def validate(launch):
    """launch.json's top level, and each configuration against its schema:
    a "tdebug" one against the extension's own."""
    top = json.loads((SCHEMAS / "launch.schema.json").read_text())
    jsonschema.Draft7Validator(top).validate(launch)
    for conf in launch["configurations"]:
        assert conf["type"] == "tdebug", conf
        jsonschema.Draft7Validator(extension_schema(conf["request"])).validate(conf)


# ---------------------------------------------------------------------------
# What is written

def test_one_tdebug_configuration_and_nothing_else(tdebug, tmp_path, home):
    ws = tmp_path / "ws"
    script(ws)
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--args", "--lr", "0.1",
               "a b", home=home)
    assert r.stdout == (
        f"wrote {ws}/.vscode/launch.json\n"
        "In VS Code: Run and Debug, pick \"tdebug: main.py (Python + C++)\", press F5.\n"
        f"Breakpoints bind in torch, c10 and the shared objects under {ws} as they load; for "
        "another library, add --symbols REGEX and run this again (or type '-exec sharedlibrary "
        "REGEX' in the Debug Console).\n")
    assert r.stderr == ""  # the extension is installed
    assert sorted(p.name for p in (ws / ".vscode").iterdir()) == ["launch.json"]
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    assert launch == {"version": "0.2.0", "configurations": [{
        "name": "tdebug: main.py (Python + C++)", "type": "tdebug", "request": "launch",
        "program": "${workspaceFolder}/main.py", "args": ["--lr", "0.1", "a b"],
        "python": PYTHON, "cwd": "${workspaceFolder}"}]}
    validate(launch)
    # Running it again changes nothing, not even a backup.
    before = (ws / ".vscode" / "launch.json").read_bytes()
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--args", "--lr", "0.1",
               "a b", home=home)
    assert r.stdout.startswith(f"{ws}/.vscode/launch.json is up to date\n")
    assert (ws / ".vscode" / "launch.json").read_bytes() == before
    assert sorted(p.name for p in (ws / ".vscode").iterdir()) == ["launch.json"]


def test_every_option_attach_and_wait_validate(tdebug, tmp_path, procs, home):
    """Each option as its attribute; a module, a script outside the
    workspace, an attach and a wait; all valid by the extension's schema,
    side by side in one file."""
    ws = tmp_path / "ws"
    script(ws)
    outside = script(tmp_path / "other", "run.py")
    vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--stop-on-entry",
           "--stop-at-import", "torch._C", "--stop-at-import", "tinytensor._C",
           "--symbols", "mylib\\|c10", "--lib", "libfoo*.so*", "--catch-throw=^c10::",
           "--env", "A=b c", "--env", "EMPTY=", "--args", "two\nlines", "", "$HOME", home=home)
    vscode(tdebug, "--workspace", str(ws), "--module", "pkg.main", "--catch-throw", home=home)
    vscode(tdebug, "--workspace", str(ws), "--program", str(outside), home=home)
    p, _ = start_target(procs, tmp_path)
    vscode(tdebug, "--workspace", str(ws), "--attach", str(p.pid), "--stop-on-entry", home=home)
    r = vscode(tdebug, "--workspace", str(ws), "--wait", "--stop-at-import", "torch._C",
               home=home)
    assert r.stdout.endswith(
        "pick \"tdebug: attach when torch loads (Python + C++)\", press F5, then start the "
        "program from a shell where 'eval \"$(tdebug env)\"' was run: it pauses as it loads "
        "torch._C, and VS Code attaches.\n")
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    validate(launch)
    w = Workspace(ws)
    main = w.config("tdebug: main.py (Python + C++)")
    assert main["args"] == ["two\nlines", "", "$HOME"]
    assert main["env"] == {"A": "b c", "EMPTY": ""}
    assert main["stopOnEntry"] is True
    assert main["stopAtImport"] == ["torch._C", "tinytensor._C"]
    assert main["symbols"] == ["mylib\\|c10", "/libfoo[^/]*\\.so[^/]*$"]
    assert main["catchThrow"] == "^c10::"
    module = w.config("tdebug: -m pkg.main (Python + C++)")
    assert (module["module"], module["catchThrow"]) == ("pkg.main", True)
    assert "program" not in module
    assert w.config(f"tdebug: {outside} (Python + C++)")["program"] == str(outside)
    attach = w.config("tdebug: attach (Python + C++)")
    assert attach == {"name": "tdebug: attach (Python + C++)", "type": "tdebug",
                      "request": "attach", "processId": p.pid, "stopOnEntry": True}
    wait = w.config("tdebug: attach when torch loads (Python + C++)")
    assert wait == {"name": "tdebug: attach when torch loads (Python + C++)", "type": "tdebug",
                    "request": "attach", "wait": True, "stopAtImport": ["torch._C"]}
    assert len(launch["configurations"]) == 5 and "compounds" not in launch


def test_the_extension_schema_check_can_fail():
    """What VS Code rejects in a "tdebug" configuration, the check rejects:
    an attribute the extension does not declare, a missing name, a wrong
    type."""
    good = {"name": "x", "type": "tdebug", "request": "launch", "program": "a.py"}
    jsonschema.Draft7Validator(extension_schema("launch")).validate(good)
    for bad in (dict(good, sourceFileMap={}), {k: v for k, v in good.items() if k != "name"},
                dict(good, args="a b"), dict(good, type="cppdbg")):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft7Validator(extension_schema("launch")).validate(bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft7Validator(extension_schema("attach")).validate(
            {"name": "x", "type": "tdebug", "request": "attach", "processId": True})


# ---------------------------------------------------------------------------
# One form or the other, and the user's entries

def test_switching_forms_replaces_the_others_entries_and_keeps_the_users(tdebug, tmp_path, home):
    ws = tmp_path / "ws"
    script(ws)
    vs, original, original_tasks = user_files(ws)

    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", home=home)
    compound = load_jsonc(vs / "launch.json")
    assert "tdebug: main.py (C++, gdb)" in [c["name"] for c in compound["configurations"]]
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", home=home)
    assert r.stdout.startswith(
        f"wrote {ws}/.vscode/launch.json (the previous file is kept as "
        f"{ws}/.vscode/launch.json.~2~)\n"
        f"wrote {ws}/.vscode/tasks.json (the previous file is kept as "
        f"{ws}/.vscode/tasks.json.~2~)\n")
    new = (vs / "launch.json").read_text()
    for key in ("configurations", "compounds", "inputs"):
        kept = item_texts(original, key)
        assert kept and item_texts(new, key) == kept, key  # same bytes, same order
    launch = load_jsonc(vs / "launch.json")
    # the compound's two entries and the compound itself are gone, the
    # entries tdebug wrote for other programs stay
    others = [c["name"] for c in load_jsonc(FIXTURES / "user-entries.json")["configurations"]
              if c["name"].startswith("tdebug: ")]
    assert [c["name"] for c in launch["configurations"] if c["name"].startswith("tdebug: ")] == \
        others + ["tdebug: main.py (Python + C++)"]
    assert [c["name"] for c in launch["compounds"]] == ["mine"]
    tasks = load_jsonc(vs / "tasks.json")
    assert [t["label"] for t in tasks["tasks"]] == ["build", "tdebug: stale task"]
    assert (vs / "tasks.json.~1~").read_text() == original_tasks
    assert stat.S_IMODE(os.stat(vs / "launch.json").st_mode) == 0o640

    # and back: the "tdebug" configuration of that name goes
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", home=home)
    launch = load_jsonc(vs / "launch.json")
    assert [c["name"] for c in launch["configurations"] if c["type"] == "tdebug"] == []
    assert [c["name"] for c in launch["compounds"]] == ["mine", "tdebug: main.py (Python + C++)"]
    assert item_texts((vs / "launch.json").read_text(), "configurations") == \
        item_texts(original, "configurations")


def test_attach_forms_replace_each_other(tdebug, tmp_path, procs, home):
    ws = tmp_path / "ws"
    script(ws)
    p, _ = start_target(procs, tmp_path)
    vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(p.pid), home=home)
    assert [c["name"] for c in load_jsonc(ws / ".vscode" / "launch.json")["configurations"]] == \
        ["tdebug: attach (C++, gdb)"]
    r = vscode(tdebug, "--workspace", str(ws), "--attach", str(p.pid), home=home)
    assert "runs no debugpy server" not in r.stdout  # 'tdebug dap' needs none
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    assert [(c["name"], c["type"]) for c in launch["configurations"]] == \
        [("tdebug: attach (Python + C++)", "tdebug")]
    vscode(tdebug, "--compound", "--workspace", str(ws), "--attach", str(p.pid), home=home)
    launch = load_jsonc(ws / ".vscode" / "launch.json")
    assert [c["name"] for c in launch["configurations"]] == ["tdebug: attach (C++, gdb)"]


def test_a_broken_tasks_json_is_left_alone(tdebug, tmp_path, home):
    """The "tdebug" configuration needs no task: a tasks.json that does not
    parse (or is a FIFO) is no reason to refuse, and is not touched."""
    ws = tmp_path / "ws"
    script(ws)
    vs = ws / ".vscode"
    vs.mkdir()
    bad = (FIXTURES / "bad-missing-comma.json").read_bytes()
    (vs / "tasks.json").write_bytes(bad)
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", home=home)
    assert r.stdout.startswith(f"wrote {ws}/.vscode/launch.json\nIn VS Code: ")
    assert (vs / "tasks.json").read_bytes() == bad
    (vs / "tasks.json").unlink()
    os.mkfifo(vs / "tasks.json")
    vscode(tdebug, "--workspace", str(ws), "--module", "pkg.main", home=home)
    assert stat.S_ISFIFO(os.lstat(vs / "tasks.json").st_mode)


# ---------------------------------------------------------------------------
# What VS Code would change on the way is refused

@pytest.mark.parametrize("args, message", [
    (["--program", "main.py", "--args", "ok", "${workspaceFolder}"],
     "tdebug vscode: cannot pass argument 2 to the program: it holds a \"${...}\", which VS Code "
     "replaces in a configuration before the adapter sees it (there is no escape for it; "
     "--compound passes it)\n"),
    (["--program", "main.py", "--args", "a${env:HOME}b"],
     "tdebug vscode: cannot pass argument 1 to the program: it holds a \"${...}\""),
    (["--program", "main.py", "--args", "caf\udce9"],
     "tdebug vscode: cannot pass argument 1 to the program: it is not UTF-8 text"),
    (["--program", "${x}.py"], "tdebug vscode: cannot use the script '${x}.py': its path holds "
                               "a \"${...}\""),
    (["--program", "main.py", "--env", "A=${env:B}"], "tdebug vscode: bad --env 'A=${env:B}': "
                                                      "it holds a \"${...}\""),
    (["--program", "main.py", "--env", "A=x\ny"],
     "tdebug vscode: bad --env 'A=x\ny': gdb drops newlines and blanks at the ends of a value\n"),
    (["--program", "main.py", "--port", "5678"],
     "tdebug vscode: --port is debugpy's port: it goes with --compound"),
    (["--program", "main.py", "--torch-src", "."],
     "tdebug vscode: --torch-src goes with --compound"),
    (["--compound", "--program", "main.py", "--catch-throw"],
     "tdebug vscode: --catch-throw goes with the \"tdebug\" configuration, not with --compound"),
])
def test_refusals(tdebug, tmp_path, home, args, message):
    ws = tmp_path / "ws"
    script(ws)
    script(ws, "${x}.py")
    env = clean_env(HOME=home)
    r = run([os.fsencode(tdebug), b"vscode", b"--workspace", os.fsencode(ws)]
            + [os.fsencode(a) for a in args], env=env)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(message), r.stderr
    assert r.stderr.endswith("see 'tdebug vscode --help'\n")
    assert not (ws / ".vscode").exists()


def test_the_compound_passes_what_the_tdebug_configuration_cannot(tdebug, tmp_path, home):
    ws = tmp_path / "ws"
    script(ws)
    vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", "--args",
           "${workspaceFolder}", home=home)
    gdb = Workspace(ws).config("tdebug: main.py (C++, gdb)")
    assert gdb["args"][-1] == "\"\"'$'\"{workspaceFolder}\""


# ---------------------------------------------------------------------------
# tdebug's extension: said when missing, installed on request

def warning(home, why):
    return (f"tdebug: warning: VS Code cannot run a \"tdebug\" configuration yet: in "
            f"{home}/.vscode/extensions, {why} (run 'tdebug vscode --install-extension', or add "
            "--install-extension to this command; then reload VS Code's window)\n")


def test_a_missing_extension_is_said_and_installed_in_the_same_run(tdebug, tmp_path):
    ws = tmp_path / "ws"
    script(ws)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", home=fresh)
    assert r.stderr == warning(fresh, "tdebug's extension is not installed")
    assert load_jsonc(ws / ".vscode" / "launch.json")["configurations"][0]["type"] == "tdebug"
    # The compound needs other extensions, not tdebug's: nothing said.
    r = vscode(tdebug, "--compound", "--workspace", str(ws), "--program", "main.py", home=fresh)
    assert r.stderr == ""
    # In the same run: installed, then the usual advice, reload first.
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", "--install-extension",
               home=fresh)
    ext = fresh / ".vscode" / "extensions" / FOLDER
    assert r.stdout.startswith(
        f"wrote {ws}/.vscode/launch.json (the previous file is kept as "
        f"{ws}/.vscode/launch.json.~2~)\n"
        f"wrote {ws}/.vscode/tasks.json (the previous file is kept as "
        f"{ws}/.vscode/tasks.json.~1~)\n"
        f"installed {FOLDER} in {fresh}/.vscode/extensions (its adapter: "
        f"{os.path.realpath(tdebug)} dap)\n")
    assert "In VS Code: reload the window, then Run and Debug, pick \"tdebug: main.py (Python + " \
           "C++)\", press F5.\n" in r.stdout
    assert r.stderr == ""
    assert os.readlink(ext / "bin" / "tdebug") == os.path.realpath(tdebug)
    r = vscode(tdebug, "--workspace", str(ws), "--program", "main.py", home=fresh)
    assert r.stderr == "" and "reload" not in r.stdout


def test_what_keeps_vs_code_from_the_extension_is_said(tdebug, tmp_path):
    ws = tmp_path / "ws"
    script(ws)
    h = install_extension(tdebug, tmp_path / "h")
    exts = h / ".vscode" / "extensions"

    def said():
        return vscode(tdebug, "--workspace", str(ws), "--program", "main.py", home=h).stderr

    assert said() == ""
    (exts / ".obsolete").write_text(json.dumps({FOLDER: True}))
    assert said() == warning(h, f"VS Code marked the extension to be deleted "
                                f"('{exts}/.obsolete')")
    (exts / ".obsolete").unlink()
    (exts / "extensions.json").write_text("[]")
    assert said() == warning(h, f"VS Code's '{exts}/extensions.json' does not list the "
                                "extension")
    (exts / "extensions.json").unlink()
    link = exts / FOLDER / "bin" / "tdebug"
    link.unlink()
    link.symlink_to(tmp_path / "gone" / "tdebug")
    assert said() == warning(h, f"the extension's adapter '{link}' is a broken link")
    (exts / FOLDER).rename(exts / "tdebug.tdebug-0.0.1")
    assert said() == warning(h, f"tdebug's extension is version 0.0.1, not this tdebug's "
                                f"{PKG['version']}")
    # Remote-SSH: installed for VS Code, not for VS Code Server.
    install_extension(tdebug, h)
    (h / ".vscode-server" / "extensions").mkdir(parents=True)
    assert said() == warning(h, "tdebug's extension is not installed").replace(
        "/.vscode/extensions", "/.vscode-server/extensions")


# ---------------------------------------------------------------------------
# The configuration, run the way VS Code runs it

def test_the_configuration_stops_in_python_steps_into_cpp_and_back(tdebug, procs, tmp_path,
                                                                    home):
    """cppext (a C++ extension built in the workspace): the Python
    breakpoint, stepIn into the C++ the line calls, continue to a C++
    breakpoint, stepOut twice back to the Python line, continue to the
    end; the program runs in VS Code's terminal."""
    ws = cpp_workspace(tmp_path)
    vscode(tdebug, "--workspace", str(ws), "--program", "vec_main.py", home=home)
    main = ws / "vec_main.py"
    py_line = marker_line(main, "PYTHON-BREAKPOINT")
    ops = ws / "src" / "ops" / "copy.cpp"
    cpp_line = marker_line(ops, "MARK: ops copy")
    code = VSCodeTdebug(tdebug, procs, tmp_path, ws, "tdebug: vec_main.py (Python + C++)")
    try:
        assert code.conf["program"] == str(main) and code.conf["cwd"] == str(ws)
        code.start([(main, py_line), (ops, cpp_line)])
        dap = code.dap
        i, stop = dap.stopped()
        tid = stop["threadId"]
        assert stop["reason"] == "breakpoint"
        top = dap.frames(tid)[0]
        assert (top["source"]["path"], top["line"]) == (str(main), py_line)

        dap.request("stepIn", {"threadId": tid})
        i, stop = dap.stopped(after=i + 1)
        assert stop["reason"] == "step"
        frames = dap.frames(tid)
        assert frames[0]["name"].startswith("total")
        assert frames[0]["source"]["path"] == str(ws / "src" / "vecext.cpp")
        assert any(f.get("source", {}).get("path") == str(main) and f["line"] == py_line
                   for f in frames[1:])  # one stack: the Python line below

        dap.continue_(tid)
        i, stop = dap.stopped(after=i + 1)
        assert stop["reason"] == "breakpoint"
        frames = dap.frames(tid)
        assert frames[0]["name"].startswith("ops_copy")
        assert (frames[0]["source"]["path"], frames[0]["line"]) == (str(ops), cpp_line)
        names = [f["name"] for f in frames]
        assert any(n.startswith("total") for n in names[1:])

        dap.request("stepOut", {"threadId": tid})
        i, stop = dap.stopped(after=i + 1)
        assert dap.frames(tid)[0]["name"].startswith("total")
        dap.request("stepOut", {"threadId": tid})
        i, stop = dap.stopped(after=i + 1)
        top = dap.frames(tid)[0]
        assert (top["source"]["path"], top["line"]) == (str(main), py_line)

        dap.continue_(tid)
        assert dap.wait_event("exited")["body"]["exitCode"] == 0
        (term,) = code.terminals
        term.expect("(6.0, 3.0)")
        dap.finish()
    finally:
        code.close()


# Arguments that a shell, MIEngine or gdb would change if anyone got them
# wrong, and what only the "tdebug" configuration passes: line breaks.
HOSTILE = ["it's", 'a"b', "$HOME", "$(id)", "`id`", "*.py", "a\\b", "a\\", ";", "a;b", "(x)", "",
           "a b", "tab\tx", "~", "!", "|", "&", ">", "<", "#c", "--lr=0.1", "caf\u00e9", '"', "'",
           "\\", "'$'", '""', "x{,}", "two\nlines", "cr\r", "${", "a${b", "}${", "$", "-m", "--",
           "--args", "x" * 5000]


def test_hostile_arguments_and_environment_reach_the_program_through_tdebug_dap(
        tdebug, procs, tmp_path, home):
    ws = tmp_path / "ws"
    out = tmp_path / "seen.json"
    script(ws, "show.py", "import json, os, sys\n"
                          "json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd(),\n"
                          "           'env': {k: os.environ.get(k) for k in ('V', 'E', 'U')}},\n"
                          "          open(os.environ['OUT'], 'w'))\n")
    env = {"V": "$(id) `x` 'q' \"d\" \\ ; ${", "E": "", "U": "caf\u00e9 \u4e2d"}
    vscode(tdebug, "--workspace", str(ws), "--program", "show.py",
           *[f"--env={k}={v}" for k, v in env.items()], f"--env=OUT={out}", "--args", *HOSTILE,
           home=home)
    code = VSCodeTdebug(tdebug, procs, tmp_path, ws, "tdebug: show.py (Python + C++)")
    try:
        assert code.conf["args"] == HOSTILE  # substituting changed nothing
        code.start()
        assert code.dap.wait_event("exited")["body"]["exitCode"] == 0
        seen = json.loads(out.read_text())
        assert seen["argv"] == HOSTILE
        assert seen["env"] == env
        assert seen["cwd"] == str(ws)
        code.dap.finish()
    finally:
        code.close()


def test_the_attach_configuration_attaches_and_leaves_the_process_running(tdebug, procs,
                                                                          tmp_path, home,
                                                                          torch_available):
    p, count = start_target(procs, tmp_path)
    ws = tmp_path / "ws"
    ws.mkdir()
    vscode(tdebug, "--workspace", str(ws), "--attach", str(p.pid), "--stop-on-entry", home=home)
    code = VSCodeTdebug(tdebug, procs, tmp_path, ws, "tdebug: attach (Python + C++)")
    try:
        code.start()
        dap = code.dap
        i, stop = dap.stopped()
        assert stop["reason"] == "entry"
        frames = dap.frames(stop["threadId"])
        assert any(re.search(r"target\.py$", f.get("source", {}).get("path", "")) for f in frames)
        assert tracer_of(p.pid) != 0
        dap.finish()  # VS Code's Disconnect: detach, never kill
    finally:
        code.close()
    assert p.poll() is None
    wait_until(lambda: tracer_of(p.pid) == 0, what="gdb to let the process go")
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on, untraced")
