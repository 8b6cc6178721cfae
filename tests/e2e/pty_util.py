"""Drive a terminal program through a pseudo-terminal, as a user would."""
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

from conftest import SLOW, clean_env


class Terminal:
    """ARGS running with a pty as its controlling terminal (a new session),
    with helpers to wait for text and type lines."""

    def __init__(self, args, env=None, cols=None, rows=24):
        self.master, slave = pty.openpty()
        if cols:  # the window size the program sees (TIOCGWINSZ)
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

        def make_controlling_tty():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave,
                                     env=env if env is not None else clean_env(),
                                     start_new_session=True, preexec_fn=make_controlling_tty)
        os.close(slave)
        self.seen = b""

    def expect(self, text, timeout=SLOW):
        """Read until TEXT appears after what earlier expect() calls consumed;
        return everything read up to and including it."""
        want = text.encode()
        deadline = time.monotonic() + timeout
        while want not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {text!r}; got:\n"
                                     + self.seen.decode(errors="replace")[-3000:])
            r, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if r:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    data = b""
                if not data:
                    raise AssertionError(f"terminal closed before {text!r}; got:\n"
                                         + self.seen.decode(errors="replace")[-3000:])
                self.seen += data
        i = self.seen.index(want) + len(want)
        out, self.seen = self.seen[:i], self.seen[i:]
        return out.decode(errors="replace")

    def send(self, line):
        os.write(self.master, line.encode() + b"\n")

    def command(self, line, prompt="(tdebug) "):
        """Type LINE; its output, up to and including the next PROMPT."""
        self.send(line)
        return self.expect(prompt)

    def continue_to_exit(self, output):
        """'continue': the program writes OUTPUT and exits 0, and so does
        tdebug."""
        self.send("continue")
        self.expect(output)
        self.expect("tdebug: program exited with status 0")
        assert self.wait() == 0

    def ctrl_c(self):
        os.write(self.master, b"\x03")

    def wait(self, timeout=SLOW):
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError("terminal program did not exit")
            r, _, _ = select.select([self.master], [], [], 0.2)
            if r:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    pass
        # What it wrote just before exiting is still in the pty: read it all
        # (the end is EIO, or nothing more, once every writer is gone).
        while select.select([self.master], [], [], 0.2)[0]:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                break
            if not data:
                break
            self.seen += data
        return self.proc.returncode

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=30)
        os.close(self.master)

