"""Run a program for 'tdebug vscode': the command line that VS Code's C/C++
extension gives gdb to start.

    python [-X...] _vscode_run.py HOST:PORT SECONDS SCRIPT [ARG...]
    python [-X...] _vscode_run.py HOST:PORT SECONDS -m MODULE [ARG...]

It listens with debugpy on HOST:PORT, waits up to SECONDS for the Python
side ("tdebug: ... (Python, debugpy)") to attach, then runs SCRIPT or
MODULE as 'python SCRIPT' or 'python -m MODULE' would (sys.argv, sys.path[0],
__main__), as debugpy's own command line does.  What 'python -m debugpy
--listen H:P --wait-for-client' does not do is give up: when the C++ side is
restarted alone in VS Code, the program starts again with no Python side
coming; after SECONDS it says so and runs on (the Python side can still
attach).

Only the debugger's owner gets in: debugpy 1.6 takes no token from the
clients of listen(), so its listeners (the adapter's, and the one in this
process the adapter reports to) admit only connections whose other end
belongs to our uid (_vscode_guard.py, run by path, next to this file).

Only the standard library and debugpy are imported before the program
runs: nothing of this package.
"""
import os
import runpy
import shlex
import shutil
import sys
import tempfile
import threading


def say(text):
    print("tdebug: " + text, file=sys.stderr, flush=True)


def main():
    if len(sys.argv) < 4 or (sys.argv[3] == "-m" and len(sys.argv) < 5):
        say("usage: _vscode_run.py HOST:PORT SECONDS (SCRIPT | -m MODULE) [ARG...]")
        return 2
    endpoint, seconds, rest = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
    host, _, port = endpoint.rpartition(":")

    import debugpy
    from debugpy.common import sockets

    guard_path = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_vscode_guard.py")
    runpy.run_path(guard_path)["guard"](sockets)
    # debugpy starts its adapter as 'PYTHON ADAPTER_DIR ARG...': a wrapper,
    # private to us, makes that the guard's 'PYTHON GUARD ADAPTER_DIR ARG...'.
    private = tempfile.mkdtemp(prefix="tdebug-run-")
    try:
        wrapper = os.path.join(private, "adapter")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\nexec %s %s \"$@\"\n"
                    % (shlex.quote(sys.executable), shlex.quote(guard_path)))
        os.chmod(wrapper, 0o700)
        debugpy.configure(python=wrapper)
        debugpy.listen((host.strip("[]"), int(port)))
    finally:
        shutil.rmtree(private, ignore_errors=True)
    waiter = threading.Thread(target=debugpy.wait_for_client, daemon=True)
    waiter.start()
    waiter.join(seconds)
    if waiter.is_alive():
        while waiter.is_alive():
            try:
                debugpy.wait_for_client.cancel()
                break
            except RuntimeError:  # it has not begun to wait yet
                waiter.join(0.01)
        say(f"no Python debugger attached to {endpoint} within {seconds:g} s: running without "
            "one (start the entry \"tdebug: ... (Python, debugpy)\" to attach it now)")

    if rest[0] == "-m":
        # As 'python -m': the current directory first on the path, and
        # runpy's own implementation of -m (__name__ is "__main__" for a
        # package's __main__ too).
        sys.argv = [rest[1]] + rest[2:]
        sys.path[0] = os.getcwd()
        runpy._run_module_as_main(rest[1], alter_argv=True)
    else:
        # As 'python SCRIPT': its directory first on the path.
        sys.argv = rest
        sys.path[0] = os.path.dirname(os.path.realpath(rest[0]))
        runpy.run_path(rest[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
