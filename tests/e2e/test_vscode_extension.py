"""The VS Code extension (vscode/extension/) and 'tdebug vscode
--install-extension': the package.json VS Code reads (its configuration
schema, snippets), and installing it for a user without destroying
anything of theirs, twice over without a change."""
import json
import os
import re
import subprocess

import jsonschema
import pytest

from conftest import ROOT, run

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


def install(tdebug, home, *extra):
    env = dict(os.environ, HOME=str(home))
    return subprocess.run([tdebug, "vscode", "--install-extension", *extra], env=env,
                          capture_output=True, text=True, timeout=60)


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
