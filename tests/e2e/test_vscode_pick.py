"""Attach by a picked process (issue 23): the extension's command
'tdebug.pickProcess', which an attach configuration's
"${command:pickProcess}" runs (the debugger contribution's "variables"),
lists the Python processes 'tdebug ps' finds; its list logic
(vscode/extension/pick.js) runs here under node against the real tdebug,
and the pid it answers, a string as VS Code substitutes it, attaches
through the schema-checked DAP client.  'tdebug vscode --attach pick'
writes that configuration."""
import json
import shutil
import subprocess

import pytest

from conftest import ROOT, SLOW, run, tracer_of, wait_until
from tdap_util import Adapter, counter, start_target

EXT = ROOT / "vscode" / "extension"
PKG = json.loads((EXT / "package.json").read_text())


def node():
    n = shutil.which("node")
    if not n:
        pytest.skip("node is not installed (apt-get install nodejs)")
    return n


def pick_list(tdebug, own=0):
    """What pick.list() answers: the QuickPick items."""
    code = ("require(process.argv[1]).list(process.argv[2], Number(process.argv[3]))"
            ".then((x) => console.log(JSON.stringify(x)),"
            " (e) => { console.error(e.message); process.exit(1); })")
    r = subprocess.run([node(), "-e", code, str(EXT / "pick.js"), tdebug, str(own)],
                       capture_output=True, text=True, timeout=SLOW)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_package_json_maps_pick_process_to_the_command():
    (d,) = PKG["contributes"]["debuggers"]
    assert d["variables"] == {"pickProcess": "tdebug.pickProcess"}
    assert {"command": "tdebug.pickProcess",
            "title": "tdebug: Pick a Python Process to Attach To"} in PKG["contributes"]["commands"]
    assert "onCommand:tdebug.pickProcess" in PKG["activationEvents"]
    assert (EXT / PKG["main"]).exists()
    assert {"extension.js", "pick.js"} <= set(PKG["files"])
    snippet = [s for s in d["configurationSnippets"] if "picked" in s["label"]][0]
    assert snippet["body"]["processId"] == '^"\\${command:pickProcess}"'


def test_items_put_torch_first_and_say_what_runs():
    code = ("const p = require(process.argv[1]);"
            "console.log(JSON.stringify(p.items(JSON.parse(process.argv[2]), 7)))")
    ps = {"processes": [
        {"pid": 30, "comm": "python3", "command": ["/usr/bin/python3", "-m", "pytest", "-x"],
         "role": "plain", "torch": False, "user": "ann", "attach": {"ok": True}},
        {"pid": 20, "comm": "python3", "command": ["/usr/bin/python3", "-u", "/w/train.py", "3"],
         "role": "plain", "torch": True, "user": "ann", "attach": {"ok": True},
         "job": {"role": "rank", "rank": 1}},
        {"pid": 10, "comm": "python3", "command": ["/usr/bin/python3", "-c", "import x\nx.go()"],
         "role": "debuggee", "torch": False, "user": "ann", "attach": {"ok": True}},
        {"pid": 5, "comm": "python3", "command": ["python3", "no.py"], "attach": {"ok": False}},
        {"pid": 7, "comm": "python3", "command": ["python3", "me.py"], "attach": {"ok": True}},
    ]}
    r = subprocess.run([node(), "-e", code, str(EXT / "pick.js"), json.dumps(ps)],
                       capture_output=True, text=True, timeout=SLOW)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert [(i["pid"], i["label"]) for i in got] == [
        ("20", "python3 train.py"), ("10", "python3 -c import x x.go()"),
        ("30", "python3 -m pytest")]
    assert got[0]["description"] == "pid 20 · torch · rank 1 · ann"
    assert got[1]["description"] == "pid 10 · debuggee · ann"
    assert got[0]["detail"] == "/usr/bin/python3 -u /w/train.py 3"


def test_picked_pid_attaches(tdebug, procs, tmp_path, torch_available):
    p, count = start_target(procs, tmp_path)
    items = pick_list(tdebug)
    (mine,) = [i for i in items if i["pid"] == str(p.pid)]
    assert mine["label"] == "python3 target.py" and "target.py" in mine["detail"]
    # VS Code puts the command's answer, a string, where the variable was.
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    r = dap.start_program("attach", {"processId": mine["pid"], "stopOnEntry": True})
    assert r["success"]
    assert dap.wait_event("process")["body"]["systemProcessId"] == p.pid
    i, stop = dap.stopped()
    assert stop["reason"] == "entry"
    dap.finish()
    assert p.poll() is None and tracer_of(p.pid) == 0
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on")


def test_tdebug_vscode_attach_pick_writes_the_picker_configuration(tdebug, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    r = run([tdebug, "vscode", "--workspace", str(ws), "--attach", "pick"])
    assert r.returncode == 0, r.stderr
    assert "pick the process in the list" in r.stdout
    (conf,) = json.loads((ws / ".vscode" / "launch.json").read_text())["configurations"]
    assert conf == {"name": "tdebug: attach to a picked process (Python + C++)",
                    "type": "tdebug", "request": "attach", "processId": "${command:pickProcess}"}
    r = run([tdebug, "vscode", "--workspace", str(ws), "--attach", "pick", "--compound"])
    assert r.returncode == 2 and "--attach PID" in r.stderr
