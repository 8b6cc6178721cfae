"""Helpers for tests/e2e/test_security.py: another local user (nobody)
against a tdebug run as root.

The attacker runs as nobody (conftest's as_nobody fixture: setpriv, no
group, no capability) with Debian's python; what it may touch lives in a
directory of /tmp that nobody can enter (a test's tmp_path is root's own,
0700).  Whatever the attacker gets to run as root writes a marker file
holding its uid: a test asserts no marker holds 0.
"""
import json
import os
import shutil
import subprocess
import tempfile

PYTHON = "/usr/bin/python3"


class Shared:
    """A directory of /tmp both root and nobody use, removed at the end."""

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="tdebug-sec-", dir="/tmp")
        os.chmod(self.path, 0o777)

    def file(self, name):
        return os.path.join(self.path, name)

    def cleanup(self):
        shutil.rmtree(self.path, ignore_errors=True)


# A program that leaves a marker holding the uid it ran as.
MARKER_PROGRAM = "import os, sys\nopen(sys.argv[1], 'w').write(str(os.getuid()))\n"

# The attacker's DAP client: connect (HOST:PORT or a Unix socket path),
# initialize, launch PROGRAM MARKER, configurationDone; print every message
# received as a JSON line until the adapter closes the connection or the
# program's 'terminated' comes.  Exit 3 when it could not connect at all.
DAP_ATTACKER = r'''
import json, socket, sys
where, program, marker = sys.argv[1], sys.argv[2], sys.argv[3]
try:
    if where.startswith("/"):
        s = socket.socket(socket.AF_UNIX)
        s.connect(where)
    else:
        host, port = where.rsplit(":", 1)
        s = socket.create_connection((host, int(port)))
except OSError as e:
    print(json.dumps({"connect": str(e)}), flush=True)
    sys.exit(3)
s.settimeout(120)
seq = 0
def send(command, arguments):
    global seq
    seq += 1
    body = json.dumps({"seq": seq, "type": "request", "command": command,
                       "arguments": arguments}).encode()
    try:
        s.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    except OSError:
        pass
f = s.makefile("rb")
def read():
    length = None
    while True:
        line = f.readline()
        if not line:
            return None
        line = line.strip()
        if not line:
            break
        k, _, v = line.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
    return json.loads(f.read(length))
send("initialize", {"adapterID": "tdebug"})
send("launch", {"program": program, "args": [marker], "python": "/usr/bin/python3",
                "console": "internalConsole"})
send("configurationDone", {})
while True:
    try:
        m = read()
    except OSError:
        m = None
    if m is None:
        print(json.dumps({"closed": True}), flush=True)
        break
    print(json.dumps(m), flush=True)
    if m.get("event") == "terminated":
        break
'''


def run_dap_attacker(as_nobody, where, shared, timeout=180):
    """Run DAP_ATTACKER as nobody against WHERE; (returncode, messages)."""
    program = shared.file("marker.py")
    with open(program, "w") as f:
        f.write(MARKER_PROGRAM)
    os.chmod(program, 0o644)
    r = subprocess.run(as_nobody + [PYTHON, "-c", DAP_ATTACKER, where, program, shared.file("marker")],
                       capture_output=True, text=True, timeout=timeout)
    return r.returncode, [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]


TORCH_DIR = "/usr/lib/python3/dist-packages/torch"


def evil_torch(shared):
    """A torch package of nobody's in SHARED/evil, as a PYTHONPATH would
    hold it: Debian's torch, every entry linked, but its own copy of the
    _C stub (so the process maps _C from nobody's directory) and an
    __init__.py that first leaves a marker named by the uid it runs as.
    Returns (the PYTHONPATH directory, the marker of uid 0)."""
    top = shared.file("evil")
    pkg = os.path.join(top, "torch")
    os.makedirs(pkg)
    for name in os.listdir(TORCH_DIR):
        src = os.path.join(TORCH_DIR, name)
        if name == "__init__.py":
            with open(src) as f:
                text = f.read()
            with open(os.path.join(pkg, name), "w") as f:
                f.write("import os as _o\nopen(%r + '/marker-%%d' %% _o.getuid(), 'w').close()\n"
                        % shared.path + text)
        elif name.startswith("_C.") and name.endswith(".so"):
            shutil.copy(src, os.path.join(pkg, name))
        elif name != "__pycache__":
            os.symlink(src, os.path.join(pkg, name))
    for d, _, files in os.walk(top):
        os.chmod(d, 0o755)
        for f in files:
            if not os.path.islink(os.path.join(d, f)):
                os.chmod(os.path.join(d, f), 0o644)
    return top, shared.file("marker-0")
