"""Helpers for the tests of 'tdebug dap': an adapter driven through
dap_util.DapClient whose every message is checked against the Debug
Adapter Protocol's JSON Schema (tests/fixtures/schemas/dap/, a copy of
Microsoft's debugAdapterProtocol.json), and raw frames for malformed input.

    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    ...
    dap.finish()          # disconnect, wait for the adapter, check every message
"""
import json
import os
import pathlib
import select
import subprocess
import time

from conftest import PYTHON, ROOT, SLOW, wait_until
from dap_util import DapClient

SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "schemas" / "dap" /
                     "debugAdapterProtocol.json").read_text())


def definition_for(msg):
    """The schema's definition a message of the adapter must satisfy."""
    kind = msg.get("type")
    if kind == "response":
        if not msg.get("success"):
            return "ErrorResponse"
        cmd = msg["command"]
        return cmd[0].upper() + cmd[1:] + "Response"
    if kind == "event":
        ev = msg["event"]
        return ev[0].upper() + ev[1:] + "Event"
    if kind == "request":
        cmd = msg["command"]
        return cmd[0].upper() + cmd[1:] + "Request"
    return "ProtocolMessage"


def schema_errors(msg):
    """What is wrong with MSG by the DAP schema: [] when it validates."""
    import jsonschema
    name = definition_for(msg)
    if name not in SCHEMA["definitions"]:
        return [f"no definition {name} in the DAP schema for {msg}"]
    validator = jsonschema.Draft4Validator({"$ref": f"#/definitions/{name}",
                                            "definitions": SCHEMA["definitions"]})
    return [f"{name}: {e.message} at {list(e.absolute_path)}" for e in validator.iter_errors(msg)]


class CheckedClient(DapClient):
    """A DapClient that keeps every message the adapter sends."""

    def __init__(self, *a, **kw):
        self.received = []
        super().__init__(*a, **kw)

    def _dispatch(self, msg):
        self.received.append(msg)
        super()._dispatch(msg)


def frame(body):
    """One DAP frame of BODY (bytes or str)."""
    if isinstance(body, str):
        body = body.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Adapter:
    """'tdebug dap' on pipes, with a checked client."""

    def __init__(self, client, proc, log):
        self.c = client
        self.p = proc
        self.log = log

    @classmethod
    def start(cls, tdebug, procs, tmp_path, env=None, cwd=None):
        log = pathlib.Path(tmp_path) / "dap.log"
        kw = {"env": env} if env is not None else {}
        client, p = CheckedClient.spawn([tdebug, "dap", "--log", str(log)], procs=procs,
                                        transcript=str(pathlib.Path(tmp_path) / "client.log"),
                                        stderr=open(pathlib.Path(tmp_path) / "stderr.log", "w"),
                                        cwd=cwd, **kw)
        return cls(client, p, log)

    @classmethod
    def at_line(cls, tdebug, procs, tmp_path, program, line, python=PYTHON):
        """An adapter that launched PROGRAM (a path) under PYTHON with a
        breakpoint at LINE of it, at its first stop: (adapter, the stop's
        event index, its thread id)."""
        dap = cls.start(tdebug, procs, tmp_path)
        dap.initialize()
        dap.start_program("launch", {"program": str(program), "python": python},
                          lambda d: d.set_breakpoints(str(program), [line]))
        i, stop = dap.stopped()
        return dap, i, stop["threadId"]

    def __getattr__(self, name):
        return getattr(self.c, name)

    def initialize(self):
        return self.c.initialize(adapterID="tdebug")

    def start_program(self, request, arguments, setup=None):
        """Send launch/attach, answer 'initialized' with SETUP(self) (the
        configuration requests), then configurationDone; returns the
        launch/attach response."""
        seq = self.c.send_request(request, arguments)
        self.c.wait_event("initialized", timeout=SLOW)
        if setup:
            setup(self)
        self.c.configuration_done()
        return self.c.wait_response(seq, timeout=SLOW)

    def stopped(self, after=0, timeout=SLOW):
        """(index, body) of the next 'stopped' event from index AFTER."""
        i, ev = self.c.next_event(("stopped",), timeout=timeout, after=after)
        return i, ev["body"]

    def frames(self, thread):
        return self.c.stack_trace(thread)

    def outputs(self, category=None):
        return "".join(e["body"]["output"] for e in self.c.events
                       if e["event"] == "output" and category in (None, e["body"].get("category")))

    def check_messages(self):
        """Every message the adapter sent validates against the schema."""
        bad = []
        for msg in self.c.received:
            bad += schema_errors(msg)
        assert not bad, "\n".join(bad[:20])
        assert self.c.received, "the adapter sent nothing"

    def finish(self, disconnect=True):
        """End the session; the adapter exits 0; every message validated."""
        if disconnect:
            r = self.c.disconnect()
            assert r is not None and r.get("success"), r
        self.c.close()
        assert self.p.wait(timeout=SLOW) == 0
        self.check_messages()


def program_pids_gone(pid):
    """True once PID no longer runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def raw_exchange(tdebug, procs, data, tmp_path, timeout=SLOW):
    """Write DATA to a fresh adapter's stdin as is, then a valid initialize
    (seq 999) so the test knows when everything before it was handled;
    returns every message the adapter sent until that response, parsed."""
    p = procs.start([tdebug, "dap"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=open(os.path.join(tmp_path, "stderr.log"), "w"))
    p.stdin.write(data)
    p.stdin.write(frame(json.dumps({"seq": 999, "type": "request", "command": "initialize",
                                    "arguments": {"adapterID": "tdebug"}})))
    p.stdin.flush()
    buf, msgs = b"", []
    deadline = time.monotonic() + timeout
    fd = p.stdout.fileno()
    while not (msgs and msgs[-1].get("type") == "response" and msgs[-1].get("request_seq") == 999):
        left = deadline - time.monotonic()
        assert left > 0, f"no answer to the final initialize; got {msgs}"
        if not select.select([fd], [], [], left)[0]:
            continue
        chunk = os.read(fd, 65536)
        assert chunk, f"the adapter closed its output; got {msgs}"
        buf += chunk
        while b"\r\n\r\n" in buf:
            header, rest = buf.split(b"\r\n\r\n", 1)
            n = int(header.split(b":")[1])
            if len(rest) < n:
                break
            msgs.append(json.loads(rest[:n]))
            buf = rest[n:]
    p.stdin.close()
    assert p.wait(timeout=timeout) == 0
    return msgs


# A Python process to attach to: it imports torch, then counts in a file.
TARGET = """
import os, sys, time
import torch
path = sys.argv[1]
n = 0
while True:
    n += 1
    with open(path + ".tmp", "w") as f:
        f.write(str(n))
    os.replace(path + ".tmp", path)
    time.sleep(0.02)
"""


def counter(path):
    try:
        return int(path.read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0


def start_target(procs, tmp_path):
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    count = tmp_path / "count"
    p = procs.start([PYTHON, str(script), str(count)])
    wait_until(lambda: counter(count) > 0, what="the target to start counting")
    return p, count
