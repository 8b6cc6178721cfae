"""A small Debug Adapter Protocol client for end-to-end tests.

DAP messages are JSON bodies behind a 'Content-Length: N\\r\\n\\r\\n' header,
over TCP (a debugpy '--listen' server) or over an adapter's stdin/stdout
(the way VS Code runs 'python -m debugpy.adapter').  A reader thread files
every incoming message; the test waits for responses and events with a
generous timeout, never on timing.

    client = DapClient.connect("127.0.0.1", port)
    client.initialize()
    attach = client.send_request("attach", {"justMyCode": False})
    client.wait_event("initialized")
    client.configuration_done()
    client.wait_response(attach)
    pid = client.wait_event("process")["body"]["systemProcessId"]
    client.disconnect()
    client.close()

Reverse requests from the adapter (runInTerminal, startDebugging) are
answered with an error unless a handler was registered with
on_reverse_request(); the tests use "console": "internalConsole" so the
adapter spawns the launcher itself.

With TRANSCRIPT (a path), every message is appended to that file as it
goes ("-> " sent, "<- " received), for reading after a failure.
"""
import json
import socket
import subprocess
import threading
import time

# Generous: the machine is shared and loaded.  Waits end early on success.
TIMEOUT = 120


class DapError(AssertionError):
    """A DAP exchange went wrong: an error response, a closed channel, or a
    wait that timed out.  The message carries what was seen."""


class DapClient:
    def __init__(self, rfile, wfile, closers=(), wake=None, name="dap", transcript=None):
        self._transcript = open(transcript, "a", buffering=1) if transcript else None
        self._rfile = rfile
        self._wfile = wfile
        self._closers = list(closers)
        self._wake = wake
        self._name = name
        self._seq = 0
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._responses = {}      # request seq -> response message
        self.events = []          # every event, in arrival order
        self.reverse_requests = []
        self._reverse_handlers = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-reader",
                                        daemon=True)
        self._reader.start()

    # --- construction

    @classmethod
    def connect(cls, host, port, timeout=TIMEOUT, transcript=None):
        """Connect to a DAP server listening on HOST:PORT.  The caller checks
        the port is listening first (see debugpy_util.wait_listening): a
        connect-then-close probe kills debugpy's adapter."""
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.settimeout(None)
        rfile = sock.makefile("rb")
        wfile = sock.makefile("wb")
        def wake():
            # close() alone does not end a connection another thread is
            # blocked in recv() on: debugpy's adapter would keep waiting
            # for this client (and keep its port) until the test exits.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return cls(rfile, wfile, closers=[wfile, rfile, sock], wake=wake, name=f"dap:{port}",
                   transcript=transcript)

    @classmethod
    def spawn(cls, args, procs=None, transcript=None, **popen_kw):
        """Start an adapter speaking DAP on its stdin/stdout (e.g.
        [python, '-m', 'debugpy.adapter']).  With PROCS (the conftest fixture)
        the process is killed at the end of the test whatever happens.
        Returns (client, popen)."""
        popen_kw.setdefault("start_new_session", True)
        popen_kw.setdefault("stderr", subprocess.DEVNULL)
        kw = dict(popen_kw, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        p = procs.start(args, **kw) if procs is not None else subprocess.Popen(args, **kw)
        def wake():
            # EOF on its stdin ends the adapter, and so our reader.
            try:
                p.stdin.close()
            except OSError:
                pass
        return cls(p.stdout, p.stdin, closers=[p.stdin, p.stdout], wake=wake,
                   name=f"dap:pid{p.pid}", transcript=transcript), p

    # --- wire format

    def _read_message(self):
        length = None
        while True:
            line = self._rfile.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            key, _, value = line.decode("ascii", "replace").partition(":")
            if key.strip().lower() == "content-length":
                length = int(value.strip())
        body = b""
        while len(body) < length:
            chunk = self._rfile.read(length - len(body))
            if not chunk:
                return None
            body += chunk
        return json.loads(body.decode("utf-8"))

    def _log(self, direction, msg):
        if self._transcript and not self._transcript.closed:
            self._transcript.write(f"{direction} {json.dumps(msg)}\n")

    def _write_message(self, msg):
        body = json.dumps(msg).encode("utf-8")
        self._log("->", msg)
        with self._send_lock:
            self._wfile.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self._wfile.flush()

    def _read_loop(self):
        try:
            while True:
                msg = self._read_message()
                if msg is None:
                    break
                self._dispatch(msg)
        except (OSError, ValueError):
            pass
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()

    def _dispatch(self, msg):
        self._log("<-", msg)
        kind = msg.get("type")
        if kind == "request":
            self._answer_reverse_request(msg)
            return
        with self._cond:
            if kind == "response":
                self._responses[msg.get("request_seq")] = msg
            elif kind == "event":
                self.events.append(msg)
            self._cond.notify_all()

    def _answer_reverse_request(self, msg):
        with self._cond:
            self.reverse_requests.append(msg)
        handler = self._reverse_handlers.get(msg.get("command"))
        reply = {"type": "response", "request_seq": msg["seq"], "command": msg["command"]}
        try:
            if handler is None:
                raise DapError(f"reverse request {msg['command']!r} is not handled by this client")
            reply.update(success=True, body=handler(msg.get("arguments") or {}) or {})
        except Exception as e:  # the adapter gets the error, the test keeps going
            reply.update(success=False, message=str(e))
        self._send(reply)

    def _send(self, msg):
        with self._send_lock:
            self._seq += 1
            msg["seq"] = self._seq
        self._write_message(msg)
        return msg["seq"]

    # --- requests, responses, events

    def on_reverse_request(self, command, handler):
        """Answer reverse request COMMAND with HANDLER(arguments) -> body."""
        self._reverse_handlers[command] = handler

    def send_request(self, command, arguments=None):
        """Send a request without waiting; returns its seq for wait_response().
        (debugpy answers 'attach' and 'launch' only after configurationDone.)"""
        msg = {"type": "request", "command": command}
        if arguments is not None:
            msg["arguments"] = arguments
        return self._send(msg)

    def _wait(self, find, what, timeout):
        """FIND() under the lock until it returns something other than None,
        the channel closes, or TIMEOUT passes (DapError for both)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = find()
                if found is not None:
                    return found
                if self._closed:
                    raise DapError(f"{self._name}: channel closed while waiting for {what}; "
                                   f"events: {self._event_names()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DapError(f"{self._name}: no {what} after {timeout}s; "
                                   f"events: {self._event_names()}")
                self._cond.wait(left)

    def wait_response(self, seq, timeout=TIMEOUT, check=True):
        """The response to request SEQ.  With CHECK, an error response raises
        DapError."""
        resp = self._wait(lambda: self._responses.pop(seq, None),
                          f"response to request {seq}", timeout)
        if check and not resp.get("success"):
            raise DapError(f"{self._name}: {resp.get('command')} failed: {resp.get('message')} "
                           f"{resp.get('body', '')}")
        return resp

    def request(self, command, arguments=None, timeout=TIMEOUT, check=True):
        """Send a request and wait for its response."""
        return self.wait_response(self.send_request(command, arguments), timeout, check)

    def wait_event(self, name, pred=None, timeout=TIMEOUT, after=0):
        """The first event called NAME (matching PRED(event) if given) among
        the events from index AFTER on, waiting for it if needed.  Events are
        kept, so an event that came before the call is found too."""
        return self.next_event((name,), pred, timeout, after)[1]

    def next_event(self, names, pred=None, timeout=TIMEOUT, after=0):
        """(index, event): the first event from index AFTER on whose name is
        one of NAMES (and that matches PRED if given), waiting for it if
        needed.  Pass index + 1 as AFTER to follow the events in order."""
        def find():
            for i in range(after, len(self.events)):
                ev = self.events[i]
                if ev.get("event") in names and (pred is None or pred(ev)):
                    return i, ev
            return None
        return self._wait(find, f"event {' or '.join(map(repr, names))}", timeout)

    def _event_names(self):
        return [e.get("event") for e in self.events]

    # --- the usual conversation

    def initialize(self, **extra):
        args = {"clientID": "tdebug-tests", "clientName": "tdebug tests",
                "adapterID": "debugpy", "pathFormat": "path", "linesStartAt1": True,
                "columnsStartAt1": True, "supportsRunInTerminalRequest": False}
        args.update(extra)
        return self.request("initialize", args)["body"]

    def attach(self, **arguments):
        """Send 'attach' (arguments must not be empty: debugpy leaves the
        program stuck on '{}'); returns the request seq, whose response only
        comes after configurationDone."""
        if not arguments:
            arguments = {"justMyCode": False}
        return self.send_request("attach", arguments)

    def launch(self, **arguments):
        """Send 'launch'; returns the request seq (answered after
        configurationDone)."""
        return self.send_request("launch", arguments)

    def set_breakpoints(self, path, lines):
        return self.request("setBreakpoints", {
            "source": {"path": str(path)},
            "breakpoints": [{"line": n} for n in lines]})["body"]["breakpoints"]

    def configuration_done(self):
        return self.request("configurationDone")

    def continue_(self, thread_id):
        return self.request("continue", {"threadId": thread_id})

    def stack_trace(self, thread_id, levels=0):
        """The stack frames of THREAD_ID, innermost first (LEVELS: at most
        that many; 0 all)."""
        return self.request("stackTrace", {"threadId": thread_id,
                                           "levels": levels})["body"]["stackFrames"]

    def process_pid(self, timeout=TIMEOUT):
        """The debuggee's own pid, from the 'process' event."""
        return self.wait_event("process", timeout=timeout)["body"]["systemProcessId"]

    def disconnect(self, terminate=None, timeout=30):
        """Ask the adapter to end the session; a channel that is already gone
        is not an error (teardown must never fail on it)."""
        args = {} if terminate is None else {"terminateDebuggee": bool(terminate)}
        try:
            return self.request("disconnect", args, timeout=timeout, check=False)
        except (DapError, OSError, ValueError):
            return None

    def close(self):
        """End the channel.  The reader thread is woken first (socket shutdown,
        or EOF on the adapter's stdin): closing a buffered file while another
        thread is blocked reading it would block here."""
        if self._wake:
            self._wake()
        self._reader.join(timeout=30)
        if self._transcript:
            self._transcript.close()
        if self._reader.is_alive():
            return  # the owner kills the adapter; its pipe then closes
        for c in self._closers:
            try:
                c.close()
            except (OSError, ValueError):
                pass
