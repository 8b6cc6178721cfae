"""Another local user never gets in through tdebug (issue 25, "Security").

Each test runs tdebug as root and the attacker as nobody (setpriv), and
checks that nothing the attacker asked for ran as root.
"""
import json
import os
import signal
import socket
import stat
import subprocess

import pytest

from conftest import SLOW, clean_env, tracer_of, wait_until
from dap_util import DapClient
from security_util import Shared, run_dap_attacker

PYTHON = "/usr/bin/python3"


@pytest.fixture
def shared():
    s = Shared()
    yield s
    s.cleanup()


def listening_port(p):
    """The port of a 'tdebug dap --port 0', and the token it said."""
    line = p.stderr.readline()
    assert line.startswith("tdebug: listening for DAP clients on 127.0.0.1:"), line
    port = int(line.split("127.0.0.1:")[1].split()[0])
    line = p.stderr.readline()
    assert '"tdebugToken": "' in line, line
    return port, line.split('"tdebugToken": "')[1].split('"')[0]


def assert_no_root_marker(shared):
    marker = shared.file("marker")
    assert not os.path.exists(marker) or open(marker).read() != "0", \
        "the attacker's program ran as root"


# ---------------------------------------------------------------------------
# tdebug dap --port / --socket

def test_tcp_adapter_refuses_another_users_client(tdebug, procs, shared, as_nobody):
    p = procs.start([tdebug, "dap", "--port", "0"], stderr=subprocess.PIPE, text=True)
    port, _ = listening_port(p)
    rc, msgs = run_dap_attacker(as_nobody, f"127.0.0.1:{port}", shared)
    assert rc == 0, msgs
    assert not any(m.get("command") == "launch" and m.get("success") for m in msgs), msgs
    assert msgs[-1] == {"closed": True}, msgs
    assert_no_root_marker(shared)
    assert "refused a client of uid" in p.stderr.readline()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM


def test_tcp_adapter_wants_its_token(tdebug, procs, tmp_path):
    p = procs.start([tdebug, "dap", "--port", "0"], stderr=subprocess.PIPE, text=True)
    port, token = listening_port(p)
    assert len(token) == 32
    # Our own user, without the token: initialize is answered, launch is not.
    c = DapClient.connect("127.0.0.1", port)
    c.initialize(adapterID="tdebug")
    r = c.request("launch", {"program": str(tmp_path / "x.py")}, check=False)
    assert not r["success"] and "no tdebugToken" in r["message"]
    c.close()
    c = DapClient.connect("127.0.0.1", port)
    r = c.request("launch", {"program": str(tmp_path / "x.py"), "tdebugToken": "0" * 32},
                  check=False)
    assert not r["success"] and "wrong tdebugToken" in r["message"]
    c.close()
    # With it, the launch goes through to the usual checks.
    c = DapClient.connect("127.0.0.1", port)
    c.initialize(adapterID="tdebug")
    r = c.request("launch", {"program": "/nonexistent/x.py", "tdebugToken": token}, check=False)
    assert not r["success"] and "Token" not in r["message"], r
    assert c.disconnect()["success"]
    c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM


def test_tcp_token_from_the_environment_and_in_initialize(tdebug, procs, tmp_path):
    p = procs.start([tdebug, "dap", "--port", "0"], stderr=subprocess.PIPE, text=True,
                    env=dict(clean_env(), TDEBUG_DAP_TOKEN="a-token-of-mine"))
    port, token = listening_port(p)
    assert token == "a-token-of-mine"
    c = DapClient.connect("127.0.0.1", port)
    c.initialize(adapterID="tdebug", tdebugToken=token)
    r = c.request("launch", {"program": "/nonexistent/x.py"}, check=False)
    assert not r["success"] and "Token" not in r["message"], r
    assert c.disconnect()["success"]
    c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM


def test_unix_socket_adapter_admits_only_its_owner(tdebug, procs, shared, as_nobody):
    path = shared.file("dap.sock")
    p = procs.start([tdebug, "dap", "--socket", path], stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    assert line.startswith("tdebug: listening for DAP clients of uid 0 on " + path), line
    st = os.lstat(path)
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    rc, msgs = run_dap_attacker(as_nobody, path, shared)
    assert rc == 3 and "Permission denied" in msgs[0]["connect"], msgs
    assert_no_root_marker(shared)
    # Our own client needs no token.
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    c = DapClient(s.makefile("rb"), s.makefile("wb"), closers=[s])
    assert c.initialize(adapterID="tdebug")["supportsConfigurationDoneRequest"]
    assert c.disconnect()["success"]
    c.close()
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM
    assert not os.path.exists(path)


def test_unix_socket_peer_uid_is_checked(tdebug, procs, shared, as_nobody):
    """Even when the file lets another user connect (a directory or mode
    changed after the fact), the kernel's word on the peer decides."""
    path = shared.file("dap.sock")
    p = procs.start([tdebug, "dap", "--socket", path], stderr=subprocess.PIPE, text=True)
    p.stderr.readline()
    os.chmod(path, 0o666)
    rc, msgs = run_dap_attacker(as_nobody, path, shared)
    assert rc == 0 and msgs == [{"closed": True}], msgs
    assert_no_root_marker(shared)
    assert "refused a client of uid" in p.stderr.readline()
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=SLOW)


def test_socket_path_of_someone_else_is_not_replaced(tdebug, shared):
    path = shared.file("dap.sock")
    open(path, "w").close()
    r = subprocess.run([tdebug, "dap", "--socket", path], capture_output=True, text=True,
                       timeout=SLOW)
    assert r.returncode == 1 and "is not a socket of yours" in r.stderr
    assert os.path.isfile(path)


def test_non_loopback_host_needs_allow_remote(tdebug, procs):
    r = subprocess.run([tdebug, "dap", "--port", "0", "--host", "0.0.0.0"], capture_output=True,
                       text=True, timeout=SLOW)
    assert r.returncode == 2 and "--allow-remote" in r.stderr, r.stderr
    p = procs.start([tdebug, "dap", "--port", "0", "--host", "0.0.0.0", "--allow-remote"],
                    stderr=subprocess.PIPE, text=True)
    warning = p.stderr.readline()
    assert "other machines reach" in warning and "runs programs as uid" in warning, warning
    assert p.stderr.readline().startswith("tdebug: listening for DAP clients on 0.0.0.0:")
    p.send_signal(signal.SIGTERM)
    assert p.wait(timeout=SLOW) == 128 + signal.SIGTERM
    assert subprocess.run([tdebug, "dap", "--allow-remote"], capture_output=True,
                          timeout=SLOW).returncode == 2


# ---------------------------------------------------------------------------
# Tensor-layout calibration runs the target's Python

def test_calibration_never_runs_another_users_torch_as_root(tdebug, procs, shared, as_nobody,
                                                            tmp_path, torch_available):
    from security_util import evil_torch
    pythonpath, root_marker = evil_torch(shared)
    p = procs.start(as_nobody + ["env", f"PYTHONPATH={pythonpath}", PYTHON, "-c",
                                 "import sys, torch; print('ready', flush=True); "
                                 "sys.stdin.readline(); print(torch.ones(3) + 1, flush=True)"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    assert os.path.exists(shared.file("marker-65534")) and not os.path.exists(root_marker)
    # No layout in the cache: root's tdebug must calibrate.
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
    t = procs.start([tdebug, "attach", "--json", "-b", "at::_ops::add_Tensor::call", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    wait_until(lambda: tracer_of(p.pid) != 0, what="tdebug to attach")
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = t.communicate(timeout=SLOW)
    assert not os.path.exists(root_marker), "nobody's torch/__init__.py ran as root"
    evs = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    notes = [e for e in evs if e.get("layout") == "calibration"]
    assert notes and notes[0]["as_uid"] == 65534, (out, err)
    stop = next(e for e in evs if e["event"] == "stopped")
    assert stop["args"]["args"][0]["value"]["values"] == [1.0, 1.0, 1.0], stop["args"]
    assert not list((tmp_path / "cache").rglob("*.json")), "what nobody's helper said was cached"
    assert t.returncode == 0, err
    assert p.stdout.readline().strip() == "tensor([2., 2., 2.])"


# ---------------------------------------------------------------------------
# The --compound runner's debugpy listener

DAP_PROBE = r'''
import json, socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=60)
body = json.dumps({"seq": 1, "type": "request", "command": "initialize",
                   "arguments": {"adapterID": "debugpy"}}).encode()
s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
try:
    got = s.recv(65536)
except OSError as e:
    got = b""
print("answered" if got else "closed", flush=True)
'''


def test_compound_runner_admits_only_its_owner(procs, shared, as_nobody, tmp_path):
    from conftest import free_port
    from debugpy_util import tcp_listening
    from vscode_util import RUNNER, kill_adapters
    script = tmp_path / "prog.py"
    script.write_text("print('ran', flush=True)\n")
    port = free_port()
    try:
        p = procs.start([PYTHON, str(RUNNER), f"127.0.0.1:{port}", "120", str(script)],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: tcp_listening(port), what="debugpy to listen")
        r = subprocess.run(as_nobody + [PYTHON, "-c", DAP_PROBE, str(port)], capture_output=True,
                           text=True, timeout=SLOW)
        assert r.stdout.strip() == "closed", (r.stdout, r.stderr)
        # The rightful client (our uid) still attaches and the program runs.
        c = DapClient.connect("127.0.0.1", port)
        c.initialize(adapterID="debugpy")
        seq = c.send_request("attach", {"justMyCode": False})
        c.wait_event("initialized")
        c.configuration_done()
        c.wait_response(seq)
        assert p.stdout.readline().strip() == "ran"
        c.close()
        assert p.wait(timeout=SLOW) == 0
    finally:
        kill_adapters(port)


# ---------------------------------------------------------------------------
# Caches: root with another user's HOME

def test_root_uses_no_cache_in_another_users_home(tdebug, shared, as_nobody):
    home = shared.file("home")
    subprocess.run(as_nobody + ["mkdir", "-m", "755", home], check=True)
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"}
    env["HOME"] = home
    r = subprocess.run([tdebug, "run", "--batch", "--", PYTHON, "-c", "print('hi')"], env=env,
                       capture_output=True, text=True, timeout=SLOW)
    assert r.returncode == 0 and "hi" in r.stdout, r.stderr
    made = [os.path.join(d, n) for d, ds, fs in os.walk(home) for n in ds + fs]
    assert made == [], "root wrote in nobody's home: %s" % made


def test_dap_log_never_goes_into_another_users_file_or_a_link(tdebug, shared, as_nobody):
    theirs = shared.file("their.log")
    subprocess.run(as_nobody + ["sh", "-c", f"umask 0; : > {theirs}"], check=True)
    r = subprocess.run([tdebug, "dap", "--log", theirs], input="", capture_output=True, text=True,
                       timeout=SLOW)
    assert r.returncode != 0 and "not a file of uid 0" in r.stderr, r.stderr
    link = shared.file("link.log")
    os.symlink(theirs, link)
    r = subprocess.run([tdebug, "dap", "--log", link], input="", capture_output=True, text=True,
                       timeout=SLOW)
    assert r.returncode != 0 and "symbolic link" in r.stderr, r.stderr
    assert os.path.getsize(theirs) == 0


# ---------------------------------------------------------------------------
# gdb, as root, on another user's process: no script of theirs is loaded

def test_gdb_as_root_loads_no_script_beside_another_users_library(tdebug, procs, shared,
                                                                  as_nobody):
    lib_dir = shared.file("lib")
    os.mkdir(lib_dir, 0o755)
    src = os.path.join(lib_dir, "evil.c")
    with open(src, "w") as f:
        f.write("int evil_fn(int x) { return x + 1; }\n")
    lib = os.path.join(lib_dir, "libevil.so")
    subprocess.run(["gcc", "-g", "-shared", "-fPIC", "-o", lib, src], check=True)
    # gdb's auto-load: LIB-gdb.py beside the library, run when its symbols load.
    with open(lib + "-gdb.py", "w") as f:
        f.write("import os\nopen(%r + '/marker-%%d' %% os.getuid(), 'w').close()\n" % shared.path)
    for name in os.listdir(lib_dir):
        os.chmod(os.path.join(lib_dir, name), 0o755)
    p = procs.start(as_nobody + [PYTHON, "-c",
                                 "import ctypes, sys; l = ctypes.CDLL(%r); print('ready', flush=True); "
                                 "sys.stdin.readline(); print(l.evil_fn(1), flush=True)" % lib],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    # (TDEBUG_GDB_FOR_TEST: a gdb built or set up with a wider safe-path,
    # to see this test fail.)
    gdb = os.environ.get("TDEBUG_GDB_FOR_TEST")
    t = procs.start([tdebug, "attach", "--batch", "--all-symbols", "-b", "evil_fn", str(p.pid)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                    env=dict(clean_env(), **({"TDEBUG_GDB": gdb} if gdb else {})))
    wait_until(lambda: tracer_of(p.pid) != 0, what="tdebug to attach")
    p.stdin.write("\n")
    p.stdin.flush()
    out, err = t.communicate(timeout=SLOW)
    assert "evil_fn" in out, (out, err)
    assert p.stdout.readline().strip() == "2"
    assert not os.path.exists(shared.file("marker-0")), "gdb ran nobody's script as root"


# ---------------------------------------------------------------------------
# tdebug vscode --compound --attach: another user's interpreter is not run

def test_vscode_attach_runs_no_interpreter_of_another_user(tdebug, procs, shared, as_nobody,
                                                           tmp_path):
    # nobody's virtual environment: bin/python a link to Debian's, and a .pth
    # file in its site-packages, which Python runs at start-up.
    venv = shared.file("venv")
    site = os.path.join(venv, "lib", "python%d.%d" % __import__("sys").version_info[:2],
                        "site-packages")
    if os.path.realpath(PYTHON) != os.path.realpath(
            "/usr/bin/python%d.%d" % __import__("sys").version_info[:2]):
        pytest.skip("the test's python is not Debian's")
    os.makedirs(site)
    os.makedirs(os.path.join(venv, "bin"))
    os.symlink(os.path.realpath(PYTHON), os.path.join(venv, "bin", "python"))
    with open(os.path.join(venv, "pyvenv.cfg"), "w") as f:
        f.write("home = /usr/bin\ninclude-system-site-packages = true\n")
    with open(os.path.join(site, "evil.pth"), "w") as f:
        f.write("import os; open(%r + '/marker-%%d' %% os.getuid(), 'w').close()\n" % shared.path)
    for d, ds, fs in os.walk(venv):
        for n in ds + fs:
            if not os.path.islink(os.path.join(d, n)):
                os.chmod(os.path.join(d, n), 0o755)
    os.chmod(venv, 0o755)
    p = procs.start(as_nobody + [os.path.join(venv, "bin", "python"), "-c",
                                 "import sys; print('ready', flush=True); sys.stdin.readline()"],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    assert os.path.exists(shared.file("marker-65534"))  # the .pth file does run
    ws = tmp_path / "ws"
    ws.mkdir()
    r = subprocess.run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--attach",
                        str(p.pid)], capture_output=True, text=True, timeout=SLOW,
                       env=clean_env())
    assert not os.path.exists(shared.file("marker-0")), "nobody's .pth file ran as root"
    assert r.returncode == 0, r.stderr
    assert f"pid {p.pid} runs as uid 65534: its interpreter" in r.stderr
    assert (ws / ".vscode" / "launch.json").exists()


# ---------------------------------------------------------------------------
# sudo tdebug vscode in another user's workspace

def test_root_in_a_users_workspace_does_not_follow_their_links(tdebug, shared, as_nobody):
    root_dir = shared.file("rootdir")
    os.mkdir(root_dir, 0o755)
    victim = os.path.join(root_dir, "settings.json")
    text = '{"version": "0.2.0", "configurations": []}\n'
    with open(victim, "w") as f:
        f.write(text)
    os.chmod(victim, 0o644)
    ws = shared.file("ws")
    subprocess.run(as_nobody + ["sh", "-c", f"mkdir -m 755 {ws} {ws}/.vscode && "
                                            f"ln -s {victim} {ws}/.vscode/launch.json && "
                                            f"echo 'print(1)' > {ws}/main.py"], check=True)
    r = subprocess.run([tdebug, "vscode", "--workspace", ws, "--program", "main.py"],
                       capture_output=True, text=True, timeout=SLOW, env=clean_env())
    assert open(victim).read() == text, "root wrote through nobody's link"
    assert sorted(os.listdir(root_dir)) == ["settings.json"]
    assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
    # Without the link, the files are written, and are the user's.
    os.unlink(os.path.join(ws, ".vscode", "launch.json"))
    r = subprocess.run([tdebug, "vscode", "--workspace", ws, "--program", "main.py"],
                       capture_output=True, text=True, timeout=SLOW, env=clean_env())
    assert r.returncode == 0, r.stderr
    assert os.stat(os.path.join(ws, ".vscode", "launch.json")).st_uid == 65534


def test_root_follows_no_users_link_to_a_workspace_of_roots(tdebug, shared, as_nobody):
    root_dir = shared.file("rootws")
    os.mkdir(root_dir, 0o755)
    with open(os.path.join(root_dir, "main.py"), "w") as f:
        f.write("print(1)\n")
    link = shared.file("wslink")
    subprocess.run(as_nobody + ["ln", "-s", root_dir, link], check=True)
    r = subprocess.run([tdebug, "vscode", "--workspace", link, "--program", "main.py"],
                       capture_output=True, text=True, timeout=SLOW, env=clean_env())
    assert sorted(os.listdir(root_dir)) == ["main.py"], "root wrote where nobody's link led"
    assert r.returncode != 0 and "Permission denied" in r.stderr, r.stderr
