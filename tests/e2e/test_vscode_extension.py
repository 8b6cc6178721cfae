"""The VS Code extension (vscode/extension/) and 'tdebug vscode
--install-extension': the package.json VS Code reads (its configuration
schema, snippets), and installing it for a user without destroying
anything of theirs, twice over without a change: into VS Code's, VS Code
Server's and code-server's folders, by copying or, for the packaged .vsix,
through the editor's own --install-extension (the real code-server of
'make test-vscode', when its cache has one)."""
import json
import os
import re
import shutil
import subprocess
import zipfile

import pathlib

import jsonschema
import pytest

from conftest import BUILD, ROOT, run

EXT = ROOT / "vscode" / "extension"
PKG = json.loads((EXT / "package.json").read_text())
FOLDER = f"{PKG['publisher']}.{PKG['name']}-{PKG['version']}"


def debugger():
    (d,) = PKG["contributes"]["debuggers"]
    return d


def test_package_json_contributes_the_tdebug_debug_type():
    d = debugger()
    assert d["type"] == "tdebug" and d["args"] == ["dap"] and d["program"] == "./bin/tdebug"
    langs = {b["language"] for b in PKG["contributes"]["breakpoints"]}
    assert {"python", "c", "cpp"} <= langs
    assert PKG["version"] == (ROOT / "VERSION").read_text().strip()


def test_configuration_schema_is_a_schema_and_takes_the_snippets():
    d = debugger()
    for request, attrs in d["configurationAttributes"].items():
        schema = {"type": "object", **attrs}
        jsonschema.Draft7Validator.check_schema(schema)
        assert all(p.get("description") for p in attrs["properties"].values()), request
    launch = {"type": "object", **d["configurationAttributes"]["launch"]}
    attach = {"type": "object", **d["configurationAttributes"]["attach"]}
    for c in d["initialConfigurations"]:
        jsonschema.validate(c, launch if c["request"] == "launch" else attach)
    for s in d["configurationSnippets"]:
        body = {k: snippet_value(v) for k, v in s["body"].items()}
        jsonschema.validate(body, launch if body["request"] == "launch" else attach)


def snippet_value(v):
    """A snippet body's value once VS Code inserts it: placeholders
    ${N:default} become the default, '^' makes the rest a JSON literal (in
    which '\\$' is a '$' the snippet engine must not expand)."""
    if not isinstance(v, str):
        return v
    v = re.sub(r"\$\{\d+:([^}]*)\}", r"\1", v)
    return json.loads(v[1:].replace("\\$", "$")) if v.startswith("^") else v


def test_the_adapter_takes_every_attribute_the_schema_offers(tdebug):
    """What the schema offers, 'tdebug dap --help' documents (and the
    adapter reads: the help lists the handler's keys)."""
    text = run([tdebug, "dap", "--help"]).stdout
    for request, attrs in debugger()["configurationAttributes"].items():
        for key in attrs["properties"]:
            assert key in text, f"{request}.{key} is not in 'tdebug dap --help'"


# The editors' commands: a test that does not give one PATH without them,
# so that what it checks is the copy, whatever the machine has installed.
EDITOR_CLIS = ("code", "code-server")
VSIX = BUILD / "tdebug-vscode.vsix"
VSCODE_UI_CACHE = pathlib.Path(os.environ.get("TDEBUG_VSCODE_UI_CACHE") or pathlib.Path(
    os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "tdebug" / "vscode-ui")


def path_without_editors():
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if not any(os.access(os.path.join(d, c), os.X_OK) for c in EDITOR_CLIS))


def install(tdebug, home, *extra, env=None):
    env = {**{k: v for k, v in os.environ.items() if k != "XDG_DATA_HOME"},
           "HOME": str(home), "PATH": path_without_editors(), **(env or {})}
    return subprocess.run([tdebug, "vscode", "--install-extension", *extra], env=env,
                          capture_output=True, text=True, timeout=300)


def tree(root):
    """Every file under ROOT with its bytes (links as their target)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = ("->" + os.readlink(p)) if os.path.islink(p) \
                else open(p, "rb").read()
    return out


def test_install_into_a_fresh_home_then_nothing_changes(tdebug, tmp_path):
    r = install(tdebug, tmp_path)
    assert r.returncode == 0, r.stderr
    ext = tmp_path / ".vscode" / "extensions" / FOLDER
    assert json.loads((ext / "package.json").read_text()) == PKG
    assert os.readlink(ext / "bin" / "tdebug") == os.path.realpath(tdebug)
    # The link is the adapter VS Code runs.
    h = subprocess.run([str(ext / "bin" / "tdebug"), "dap", "--help"], capture_output=True,
                       text=True)
    assert h.returncode == 0 and h.stdout.startswith("usage: tdebug dap")
    assert f"installed {FOLDER}" in r.stdout
    # No extensions.json yet: VS Code lists the folder when it starts.
    assert not (tmp_path / ".vscode" / "extensions" / "extensions.json").exists()
    before = tree(tmp_path)
    r = install(tdebug, tmp_path)
    assert r.returncode == 0 and "is up to date" in r.stdout
    assert tree(tmp_path) == before


def test_install_lists_it_in_extensions_json_and_unmarks_it(tdebug, tmp_path):
    exts = tmp_path / ".vscode" / "extensions"
    server = tmp_path / ".vscode-server" / "extensions"
    exts.mkdir(parents=True)
    server.mkdir(parents=True)
    theirs = [{"identifier": {"id": "ms-python.python"}, "version": "2024.1.0",
               "location": {"$mid": 1, "path": str(exts / "ms-python.python-2024.1.0"),
                            "scheme": "file"}, "relativeLocation": "ms-python.python-2024.1.0"},
              {"identifier": {"id": "tdebug.tdebug"}, "version": "0.0.1",
               "location": {"$mid": 1, "path": str(exts / "tdebug.tdebug-0.0.1"),
                            "scheme": "file"}, "relativeLocation": "tdebug.tdebug-0.0.1"}]
    (exts / "extensions.json").write_text(json.dumps(theirs))
    (exts / ".obsolete").write_text(json.dumps({FOLDER: True, "other-1.0": True}))
    r = install(tdebug, tmp_path)
    assert r.returncode == 0, r.stderr
    for base in (exts, server):
        assert (base / FOLDER / "package.json").is_file()
    listed = json.loads((exts / "extensions.json").read_text())
    assert listed[0] == theirs[0]  # the user's entry, untouched
    ours = [e for e in listed if e["identifier"]["id"] == "tdebug.tdebug"]
    assert len(ours) == 1 and ours[0]["version"] == PKG["version"]
    assert ours[0]["relativeLocation"] == FOLDER
    assert ours[0]["location"] == {"$mid": 1, "path": str(exts / FOLDER), "scheme": "file"}
    assert json.loads((exts / ".obsolete").read_text()) == {"other-1.0": True}
    # What was there is kept beside it.
    assert json.loads((exts / "extensions.json.~1~").read_text()) == theirs
    before = tree(tmp_path)
    assert install(tdebug, tmp_path).returncode == 0
    assert tree(tmp_path) == before


def test_a_folder_that_is_not_ours_is_left_alone(tdebug, tmp_path):
    exts = tmp_path / "exts"
    foreign = exts / FOLDER
    foreign.mkdir(parents=True)
    (foreign / "package.json").write_text('{"publisher": "someone", "name": "else"}')
    (foreign / "data").write_text("theirs")
    before = tree(exts)
    r = install(tdebug, tmp_path, "--extensions-dir", str(exts))
    assert r.returncode == 1
    assert "is not tdebug's extension: left alone" in r.stderr
    assert tree(exts) == before
    # A broken extensions.json is not rewritten either.
    other = tmp_path / "other"
    other.mkdir()
    (other / "extensions.json").write_text("[{not json")
    r = install(tdebug, tmp_path, "--extensions-dir", str(other))
    assert r.returncode == 1 and "left alone" in r.stderr
    assert (other / "extensions.json").read_text() == "[{not json"


def test_install_usage(tdebug, tmp_path):
    assert install(tdebug, tmp_path, "--bogus").returncode == 2
    assert install(tdebug, tmp_path, "stray").returncode == 2
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    r = subprocess.run([tdebug, "vscode", "--install-extension"], env=env, capture_output=True,
                       text=True)
    assert r.returncode == 1 and "HOME" in r.stderr


@pytest.mark.parametrize("xdg", [None, "relative/data", "ABS"])
def test_code_servers_folder_when_code_server_is_used(tdebug, tmp_path, xdg):
    """code-server reads $XDG_DATA_HOME/code-server/extensions (an absolute
    XDG_DATA_HOME; else ~/.local/share): tdebug installs there when
    code-server's user data is there, beside VS Code's folders."""
    data = tmp_path / "xdg" if xdg == "ABS" else tmp_path / ".local" / "share"
    (data / "code-server").mkdir(parents=True)
    (tmp_path / ".vscode" / "extensions").mkdir(parents=True)
    env = {"XDG_DATA_HOME": str(data) if xdg == "ABS" else xdg} if xdg else {}
    r = install(tdebug, tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    for exts in (data / "code-server" / "extensions", tmp_path / ".vscode" / "extensions"):
        assert json.loads((exts / FOLDER / "package.json").read_text()) == PKG
        assert os.readlink(exts / FOLDER / "bin" / "tdebug") == os.path.realpath(tdebug)
        assert f"installed {FOLDER} in {exts} (its adapter" in r.stdout
    before = tree(tmp_path)
    assert "is up to date" in install(tdebug, tmp_path, env=env).stdout
    assert tree(tmp_path) == before


def test_no_code_server_folder_without_code_server(tdebug, tmp_path):
    r = install(tdebug, tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / ".local").exists()
    assert (tmp_path / ".vscode" / "extensions" / FOLDER).is_dir()


def vsix_or_skip():
    if not VSIX.is_file():
        pytest.skip(f"{VSIX} is not built: run 'make vsix'")
    return VSIX


def test_vsix_holds_the_extension_and_its_script():
    """What 'make vsix' packs: the extension's files under extension/, the
    adapter script executable (VS Code keeps a file's mode from the .vsix)."""
    with zipfile.ZipFile(vsix_or_skip()) as z:
        names = set(z.namelist())
        assert {"extension.vsixmanifest", "extension/package.json",
                "extension/bin/tdebug"} <= names
        assert json.loads(z.read("extension/package.json")) == PKG
        assert z.read("extension/bin/tdebug") == (EXT / "bin" / "tdebug").read_bytes()
        assert (z.getinfo("extension/bin/tdebug").external_attr >> 16) & 0o111
        assert not [n for n in names if "node_modules" in n]


def test_over_an_install_from_vsix_only_the_shipped_script_becomes_the_link(tdebug, tmp_path):
    """A user who installed the .vsix by hand ("Install from VSIX...") and
    then runs --install-extension: the script the .vsix carries is replaced
    by the link; a bin/tdebug of their own is left alone."""
    exts = tmp_path / ".vscode" / "extensions"
    target = exts / FOLDER
    with zipfile.ZipFile(vsix_or_skip()) as z:
        for name in z.namelist():
            if name.startswith("extension/"):
                dest = target / name[len("extension/"):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_bytes(z.read(name))
    r = install(tdebug, tmp_path)
    assert r.returncode == 0, r.stderr
    assert os.readlink(target / "bin" / "tdebug") == os.path.realpath(tdebug)
    theirs = tmp_path / "theirs" / FOLDER
    (theirs / "bin").mkdir(parents=True)
    shutil.copy(EXT / "package.json", theirs / "package.json")
    (theirs / "bin" / "tdebug").write_text("#!/bin/sh\nexec my-own-tdebug \"$@\"\n")
    before = tree(theirs)
    r = install(tdebug, tmp_path, "--extensions-dir", str(theirs.parent))
    assert r.returncode == 1 and "is not the link tdebug makes: left alone" in r.stderr
    assert tree(theirs) == before


def code_server_or_skip():
    cli = VSCODE_UI_CACHE / "bin" / "code-server"
    if not os.access(cli, os.X_OK):
        pytest.skip(f"no code-server in {VSCODE_UI_CACHE} (tests/vscode-ui/setup.sh installs it)")
    return cli


def code_server_env(tmp_path, cli):
    return {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "PATH": f"{cli.parent}{os.pathsep}{path_without_editors()}"}


def code_server_lists(cli, env):
    r = subprocess.run([str(cli), "--list-extensions", "--show-versions"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_install_through_code_servers_own_command(tdebug, tmp_path):
    """With code-server on PATH and the .vsix built, the real code-server
    installs it (and keeps its extensions.json); tdebug then links the
    adapter, and a second run changes nothing."""
    cli = code_server_or_skip()
    vsix_or_skip()
    env = code_server_env(tmp_path, cli)
    (tmp_path / "data" / "code-server").mkdir(parents=True)
    r = install(tdebug, tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    exts = tmp_path / "data" / "code-server" / "extensions"
    assert f"installed {FOLDER} in {exts} with 'code-server --install-extension'" in r.stdout
    assert os.readlink(exts / FOLDER / "bin" / "tdebug") == os.path.realpath(tdebug)
    listed = json.loads((exts / "extensions.json").read_text())
    assert [e["relativeLocation"] for e in listed] == [FOLDER]
    assert f"tdebug.tdebug@{PKG['version']}" in code_server_lists(cli, env)
    before = tree(tmp_path / "data")
    r = install(tdebug, tmp_path, env=env)
    assert r.returncode == 0 and "is up to date" in r.stdout
    assert tree(tmp_path / "data") == before
    # What 'tdebug vscode' checks finds it installed: no warning.
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "t.py").write_text("print(1)\n")
    w = subprocess.run([tdebug, "vscode", "--program", "t.py"], cwd=tmp_path / "ws",
                       env={**os.environ, "HOME": str(tmp_path), **env}, capture_output=True,
                       text=True, timeout=60)
    assert w.returncode == 0 and "cannot run" not in w.stderr, w.stderr


def test_a_copy_into_code_servers_folder_is_what_code_server_reads(tdebug, tmp_path):
    """Without code-server's command on PATH the folder is copied, as
    code-server would unpack it: the real code-server lists it, both with no
    extensions.json yet and with one tdebug adds it to."""
    cli = code_server_or_skip()
    env = code_server_env(tmp_path, cli)
    (tmp_path / "data" / "code-server").mkdir(parents=True)
    copy_env = dict(env, PATH=path_without_editors())
    r = install(tdebug, tmp_path, env=copy_env)
    assert r.returncode == 0, r.stderr
    assert "with 'code-server" not in r.stdout
    assert f"tdebug.tdebug@{PKG['version']}" in code_server_lists(cli, env)
    exts = tmp_path / "data" / "code-server" / "extensions"
    # code-server wrote its list as it read the folder.  Without tdebug's
    # entry in it (and without the folder), tdebug adds both again.
    listed = json.loads((exts / "extensions.json").read_text())
    assert [e["relativeLocation"] for e in listed] == [FOLDER]
    (exts / "extensions.json").write_text("[]")
    shutil.rmtree(exts / FOLDER)
    r = install(tdebug, tmp_path, env=copy_env)
    assert r.returncode == 0 and f"listed tdebug.tdebug in {exts}/extensions.json" in r.stdout
    assert f"tdebug.tdebug@{PKG['version']}" in code_server_lists(cli, env)
