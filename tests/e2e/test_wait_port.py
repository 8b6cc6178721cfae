"""'tdebug wait-port': returns once something listens on HOST:PORT, found in
/proc/net/tcp{,6}, and never connects to it."""
import socket
import subprocess
import time

import pytest

from conftest import PYTHON, SLOW, clean_env, free_port, run, wait_until


def listener(host="127.0.0.1", family=socket.AF_INET, port=0):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, port))
    s.listen(8)
    s.setblocking(False)
    return s


def assert_never_connected(s):
    with pytest.raises(BlockingIOError):
        s.accept()


def test_listening_port_returns_0_without_connecting(tdebug):
    with listener() as s:
        port = s.getsockname()[1]
        r = run([tdebug, "wait-port", f"127.0.0.1:{port}"])
        assert r.returncode == 0, r.stderr
        assert r.stdout == f"tdebug: 127.0.0.1:{port} is listening\n"
        assert_never_connected(s)


def test_waits_for_a_port_that_starts_listening_later(tdebug, procs):
    port = free_port()
    p = procs.start([tdebug, "wait-port", "--quiet", f"127.0.0.1:{port}", "--timeout", str(SLOW)],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: open(f"/proc/{p.pid}/cmdline").read().startswith(tdebug),
               what="wait-port to start")
    assert p.poll() is None  # nothing listens yet: still waiting
    with listener(port=port) as s:
        out, err = p.communicate(timeout=SLOW)
        assert p.returncode == 0, err
        assert out == ""  # --quiet
        assert_never_connected(s)


def test_wildcard_listener_counts_for_loopback(tdebug):
    with listener("0.0.0.0") as s:
        port = s.getsockname()[1]
        assert run([tdebug, "wait-port", f"127.0.0.1:{port}"]).returncode == 0
        assert run([tdebug, "wait-port", f"localhost:{port}"]).returncode == 0
        assert run([tdebug, "wait-port", str(port)]).returncode == 0  # bare port: 127.0.0.1


def test_ipv6_listener(tdebug):
    try:
        s = listener("::1", socket.AF_INET6)
    except OSError as e:
        pytest.skip(f"no IPv6 loopback here: {e}")
    with s:
        port = s.getsockname()[1]
        assert run([tdebug, "wait-port", f"[::1]:{port}"]).returncode == 0
        # an IPv6-only address does not answer for 127.0.0.1
        assert run([tdebug, "wait-port", f"127.0.0.1:{port}", "--timeout", "0"]).returncode == 1


def test_a_listener_elsewhere_does_not_count(tdebug):
    with listener() as s:  # 127.0.0.1 only
        port = s.getsockname()[1]
        assert run([tdebug, "wait-port", f"127.0.0.2:{port}", "--timeout", "0"]).returncode == 1


def test_timeout_exits_1_with_a_message(tdebug):
    port = free_port()
    r = run([tdebug, "wait-port", f"127.0.0.1:{port}", "--timeout", "0.3"])
    assert r.returncode == 1
    assert r.stdout == ""
    assert r.stderr == (f"tdebug: cannot wait for '127.0.0.1:{port}': nothing listens on it after "
                        "0.3 s (did the program start? look at its output)\n")


@pytest.mark.parametrize("args", [
    [], ["a:1", "b:2"], ["127.0.0.1:"], ["127.0.0.1:0"], ["127.0.0.1:70000"], [":5678"],
    ["::1:5678"], ["[::1]5678"], ["x:5678", "--timeout", "soon"], ["--bogus", "x:1"],
])
def test_bad_arguments_are_usage_errors(tdebug, args):
    r = run([tdebug, "wait-port"] + args, env=clean_env())
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("tdebug wait-port: ")
    assert r.stderr.endswith("see 'tdebug wait-port --help'\n")


def test_started_within_gives_up_when_nothing_starts_the_program(tdebug):
    """The Python side of a launch compound started alone (or restarted,
    which ends the program): nothing runs with HOST:PORT among its
    arguments, so there is nothing to wait for."""
    port = free_port()
    r = run([tdebug, "wait-port", f"127.0.0.1:{port}", "--timeout", str(SLOW), "--started-within",
             "0.3"])
    assert r.returncode == 1
    assert r.stderr == (f"tdebug: cannot wait for '127.0.0.1:{port}': no program that would listen "
                        "there started within 0.3 s (in VS Code, start the compound that runs it "
                        "under gdb, 'tdebug: ... (Python + C++)': the Python entry alone does not "
                        "start it)\n")


def test_started_within_waits_on_once_the_program_runs(tdebug, procs):
    port = free_port()
    endpoint = f"127.0.0.1:{port}"
    starter = procs.start([PYTHON, "-c", "import time; time.sleep(600)", endpoint])
    wait_until(lambda: endpoint in open(f"/proc/{starter.pid}/cmdline").read(),
               what="the starter to run")
    p = procs.start([tdebug, "wait-port", endpoint, "--timeout", str(SLOW), "--started-within", "0.2",
                     "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)  # past --started-within (a lower bound: a slow machine only checks less)
    assert p.poll() is None
    with listener(port=port):
        out, err = p.communicate(timeout=SLOW)
        assert (p.returncode, out, err) == (0, "", "")
