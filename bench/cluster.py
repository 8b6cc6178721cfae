"""'tdebug stacks --job' on a distributed job, in the same run as what it
replaces (interleaved medians, bench/benchlib.py):

 1. 8 gloo ranks on this machine (rank 5 a straggler): the whole job in one
    command, against one process's 'tdebug stacks PID' (the baseline), 8
    runs of it one after the other, and per-process reading of the Python
    stacks alone one after the other (what 'py-spy dump --pid' does for
    each; py-spy is not installed here, 'tdebug stacks --python PID' is the
    same kind of work).  Target: under 2x one process's time.
 2. 2 hosts x 4 ranks (tests/e2e/cluster_util.TwoHosts: namespaces on a
    veth pair, an sshd in each; needs root): from host A, both hosts read at
    once, against each host alone and both one after the other.  Target: the
    fan-out's time set by the slowest host, not their sum.

BENCH_RUNS sets the number of runs (default 5)."""
import json
import os
import pathlib
import shlex
import socket
import subprocess
import sys
import tempfile
import time

from benchlib import PYTHON, ROOT, TDEBUG, compare

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import cluster_util  # noqa: E402  (the tests' namespaces and job, written once)
from conftest import Procs  # noqa: E402


def local_job(tmp):
    procs = Procs()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = cluster_util.start_local_job(procs, tmp, 8, port, straggler=5)
    pids = [str(p.pid) for p in ranks]
    job = f"127.0.0.1:{port}"
    try:
        wait_parted(lambda: subprocess.run([TDEBUG, "stacks", "--job", job, "--json"],
                                           capture_output=True, text=True).stdout,
                    "0-4,6,7", "5")
        each = " && ".join(f"{TDEBUG} stacks {pid} >/dev/null" for pid in pids)
        each_py = " && ".join(f"{TDEBUG} stacks --python {pid} >/dev/null" for pid in pids)
        m = compare("8 ranks on this machine", [
            ("tdebug stacks PID (one rank)", [TDEBUG, "stacks", pids[0]]),
            ("tdebug stacks --job (8 ranks, merged)", [TDEBUG, "stacks", "--job", job]),
            ("tdebug stacks PID, 8 runs in sequence", ["sh", "-c", each]),
            ("Python stacks per process, 8 in sequence", ["sh", "-c", each_py]),
        ])
    finally:
        procs.cleanup()
    one, whole = m["tdebug stacks PID (one rank)"], m["tdebug stacks --job (8 ranks, merged)"]
    ratio = whole / one
    print(f"  --job / one process: {ratio:.2f}x (target < 2x: {'met' if ratio < 2 else 'MISSED'})")


def wait_parted(read, waiting, straggler):
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        out = read()
        if out and cluster_util.straggler_seen(json.loads(out), waiting, straggler):
            return
        time.sleep(0.5)
    sys.exit("bench: the job's ranks never parted as expected")


def two_hosts(tmp):
    if os.geteuid() != 0:
        print("== 2 hosts x 4 ranks: skipped (needs root for namespaces and an sshd)")
        return
    procs = Procs()
    hosts = cluster_util.TwoHosts(tmp)
    with hosts:
        try:
            script = cluster_util.write_job(tmp)
            ranks = {}
            for r in range(8):
                side = hosts.a if r < 4 else hosts.b
                env = cluster_util.rank_env(r, 8, hosts.a.addr, hosts.master_port,
                                            GLOO_SOCKET_IFNAME=side.veth, STRAGGLER=6)
                ranks[r] = procs.start(side.enter([PYTHON, script]), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, env=env, cwd=str(tmp))
            cluster_util.read_lines_until([(p, f"ready {r}") for r, p in ranks.items()])
            a, b = hosts.a, hosts.b
            remote = ["--ssh", hosts.ssh_cmd, "--remote-tdebug", TDEBUG]
            both = a.enter([TDEBUG, "stacks", "--job", "--hosts", f"{a.name},{b.name}", *remote])
            wait_parted(lambda: subprocess.run(both + ["--json"], capture_output=True,
                                               text=True).stdout, "0-5,7", "6")
            only_a = a.enter([TDEBUG, "stacks", "--job", "--hosts", a.name, *remote])
            only_b = a.enter([TDEBUG, "stacks", "--job", "--hosts", b.name, *remote])
            in_turn = ["sh", "-c", " && ".join(shlex.join(cmd) + " >/dev/null"
                                               for cmd in (only_a, only_b))]
            m = compare("2 hosts x 4 ranks, from host A", [
                ("host A alone (read here, 4 ranks)", only_a),
                ("host B alone (through ssh, 4 ranks)", only_b),
                ("both hosts, one after the other", in_turn),
                ("both hosts at once (--hosts A,B)", both),
            ])
        finally:
            procs.cleanup()
    ta, tb = m["host A alone (read here, 4 ranks)"], m["host B alone (through ssh, 4 ranks)"]
    fan = m["both hosts at once (--hosts A,B)"]
    slowest, total = max(ta, tb), ta + tb
    print(f"  fan-out / slowest host: {fan / slowest:.2f}x; fan-out / sum of hosts: "
          f"{fan / total:.2f}x (target: set by the slowest host, not the sum: "
          f"{'met' if fan < total and fan / slowest < 1.5 else 'MISSED'})")


def main():
    if not os.access(TDEBUG, os.X_OK):
        sys.exit(f"bench: {TDEBUG} is not built; run 'make'")
    with tempfile.TemporaryDirectory(prefix="tdebug-bench-") as d:
        local_dir, hosts_dir = pathlib.Path(d, "local"), pathlib.Path(d, "hosts")
        local_dir.mkdir()
        hosts_dir.mkdir()
        local_job(local_dir)
        two_hosts(hosts_dir)


main()
