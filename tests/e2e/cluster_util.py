"""Distributed PyTorch jobs for the tests of 'tdebug ps', 'stacks --job',
'run --rank' and 'attach --rank': ranks started the way srun starts them
(RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, then the
script; Debian's torchrun fails on Python 3.11 before it starts any), on
this machine or on two "hosts" made on it:

    two network namespaces joined by a veth pair (10.X.Y.1 and 10.X.Y.2),
    each side also in a PID, mount and UTS namespace of its own
    (unshare --pid --fork --mount-proc --uts, with its own host name), and
    an sshd (Debian's openssh-server) on port 2222 on each side, with a
    host key and a client key the test makes.

ssh only ever uses the config, key and known_hosts written here (-F), never
the user's ~/.ssh, and talks only to the namespaces' own addresses.  Names
carry a random suffix so that parallel runs do not collide, and everything
is torn down (namespaces, their processes) even when a test fails: killing
a side's PID namespace's first process kills every process in it.
"""
import os
import random
import select
import shutil
import subprocess
import time
import uuid

import pytest

from conftest import PYTHON, SLOW, clean_env, kill_group, run, wait_until

# Rank STRAGGLER (or none) never leaves load_batch(); the others then wait
# in all_reduce() for it.  Each rank says "ready RANK" once the process
# group is up.
JOB_SCRIPT = '''\
import os, sys, time
import torch
import torch.distributed as dist

def load_batch(rank):
    if rank == int(os.environ.get("STRAGGLER", "-1")):
        while True:
            time.sleep(1)
    return torch.ones(4) * rank

def step(rank):
    x = load_batch(rank)
    dist.all_reduce(x)
    return x

def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    print("ready", rank, flush=True)
    while True:
        step(rank)

main()
'''

PORT = 2222


def write_job(tmp_path):
    path = tmp_path / "job.py"
    path.write_text(JOB_SCRIPT)
    return path


def rank_env(rank, world, master, port, **extra):
    """The variables srun-style launchers give rank RANK."""
    env = clean_env(RANK=rank, LOCAL_RANK=rank % 2, WORLD_SIZE=world, MASTER_ADDR=master,
                    MASTER_PORT=port, **extra)
    env.pop("SSH_AUTH_SOCK", None)
    return env


def read_lines_until(procs_and_marks, timeout=SLOW):
    """Wait until each (Popen, text) pair's stdout has shown its text."""
    bufs = {p: b"" for p, _ in procs_and_marks}
    want = dict(procs_and_marks)
    deadline = time.monotonic() + timeout
    while any(want[p].encode() not in bufs[p] for p in want):
        left = deadline - time.monotonic()
        dead = [p for p in want if p.poll() is not None and want[p].encode() not in bufs[p]]
        if left <= 0 or dead:
            raise AssertionError("ranks not ready: " + "; ".join(
                f"{p.args[-1]!r}: {bufs[p].decode(errors='replace')!r}"
                + (f" (exited {p.returncode})" if p.poll() is not None else "")
                for p in want if want[p].encode() not in bufs[p]))
        pending = [p.stdout for p in want if want[p].encode() not in bufs[p]]
        r, _, _ = select.select(pending, [], [], min(left, 1.0))
        for f in r:
            p = next(q for q in want if q.stdout is f)
            chunk = os.read(f.fileno(), 4096)
            bufs[p] += chunk


def start_local_job(procs, tmp_path, world, port, straggler=None, script=None):
    """WORLD ranks of the job script on this machine; returns their Popens
    once each said ready."""
    path = script or write_job(tmp_path)
    ranks = []
    for r in range(world):
        extra = {"STRAGGLER": straggler} if straggler is not None else {}
        ranks.append(procs.start([PYTHON, str(path)], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, cwd=str(tmp_path),
                                 env=rank_env(r, world, "127.0.0.1", port, **extra)))
    read_lines_until([(p, f"ready {r}") for r, p in enumerate(ranks)])
    return ranks


def tree_json(doc):
    """{thread group: its tree} of a 'stacks --job --json' document."""
    return {g["thread"]: g for g in doc["tree"]}


def branches(group):
    """{rank_set: last Python function of the branch} under GROUP's frames."""
    out = {}
    for kid in group["children"]:
        fns = [f["function"] for f in kid["frames"] if f["kind"] == "python"]
        out[kid["rank_set"]] = fns[-1] if fns else None
    return out


def straggler_seen(doc, waiting, straggler):
    """Has DOC the job's main threads parted as the straggler test expects:
    WAITING ranks in all_reduce, STRAGGLER alone in load_batch?"""
    main = tree_json(doc).get("main") if doc and doc.get("tree") else None
    return main is not None and branches(main) == {waiting: "all_reduce",
                                                   straggler: "load_batch"}


def need_root_and_tools():
    if os.geteuid() != 0:
        pytest.skip("needs root: network and PID namespaces, an sshd")
    for tool in ("ip", "unshare", "nsenter", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            pytest.fail(f"{tool} is missing: 'make deps' installs it")
    if not os.access("/usr/sbin/sshd", os.X_OK):
        pytest.fail("/usr/sbin/sshd is missing: 'make deps' installs openssh-server")


def sh(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


class Side:
    """One "host": a network namespace, and in it a process that holds a
    PID, mount and UTS namespace of its own named NAME."""

    def __init__(self, name, netns, veth, addr):
        self.name, self.netns, self.veth, self.addr = name, netns, veth, addr
        self.holder = None
        self.init_pid = None

    def start(self):
        self.holder = subprocess.Popen(
            ["ip", "netns", "exec", self.netns, "unshare", "--pid", "--fork", "--mount-proc",
             "--uts", "--kill-child", "sh", "-c",
             f"hostname {self.name} && echo ready && exec sleep 100000"],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        read_lines_until([(self.holder, "ready")])
        # The namespace's pid 1: the one descendant of the holder running sleep.
        def init():
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/status") as f:
                        status = f.read()
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        cmd = f.read()
                except OSError:
                    continue
                nspid = [l for l in status.splitlines() if l.startswith("NSpid:")]
                if cmd == b"sleep\x00100000\x00" and nspid and nspid[0].split()[-1] == "1" \
                        and self._descends(int(pid)):
                    return int(pid)
            return None
        self.init_pid = wait_until(init, what=f"{self.name}'s first process")

    def _descends(self, pid):
        for _ in range(16):
            if pid == self.holder.pid:
                return True
            try:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError):
                return False
        return False

    def enter(self, args):
        """ARGS as run inside this side's namespaces."""
        return ["nsenter", "-t", str(self.init_pid), "-n", "-p", "-m", "-u", "--", *map(str, args)]

    def run(self, args, **kw):
        return run(self.enter(args), **kw)

    def stop(self):
        if self.holder and self.holder.poll() is None:
            kill_group(self.holder)


class TwoHosts:
    """Two sides (A and B) on one veth pair, each with an sshd; ssh_cmd is
    the --ssh that reaches them by name; the names of a host that is down,
    one that asks for a password and one that does not exist are ready in
    the ssh config too."""

    def __init__(self, tmp_path):
        s = uuid.uuid4().hex[:6]
        self.tmp = tmp_path
        self.suffix = s
        # A subnet and a meeting port of this run's own: seen from this
        # machine, two runs' jobs must not look like one.
        self.subnet = f"10.{random.randint(64, 250)}.{random.randint(0, 255)}"
        self.master_port = random.randint(20000, 29999)
        self.job_id = f"{self.subnet}.1:{self.master_port}"
        self.a = Side(f"tdbA{s}", f"tdbA{s}", f"tdva{s}", f"{self.subnet}.1")
        self.b = Side(f"tdbB{s}", f"tdbB{s}", f"tdvb{s}", f"{self.subnet}.2")
        self.down = f"tdbdown{s}"      # an address on the link nobody holds
        self.password = f"tdbpw{s}"    # side B, but without our key: it asks for a password
        self.unknown = f"tdbnone{s}.invalid"  # no such name anywhere
        self.sshds = []
        self.made_netns = []

    def __enter__(self):
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def _setup(self):
        a, b = self.a, self.b
        for side in (a, b):
            sh("ip", "netns", "add", side.netns)
            self.made_netns.append(side.netns)
        sh("ip", "link", "add", a.veth, "type", "veth", "peer", "name", b.veth)
        for side in (a, b):
            sh("ip", "link", "set", side.veth, "netns", side.netns)
            sh("ip", "-n", side.netns, "addr", "add", f"{side.addr}/24", "dev", side.veth)
            sh("ip", "-n", side.netns, "link", "set", side.veth, "up")
            sh("ip", "-n", side.netns, "link", "set", "lo", "up")
            side.start()
        self._keys()
        for side in (a, b):
            self._sshd(side)

    def _keys(self):
        d = self.tmp / "ssh"
        d.mkdir(mode=0o700)
        self.host_key = d / "host_key"
        self.client_key = d / "id_ed25519"
        for key in (self.host_key, self.client_key):
            sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key))
        (d / "authorized_keys").write_text((d / "id_ed25519.pub").read_text())
        host_pub = (d / "host_key.pub").read_text().split()
        known = "".join(f"[{side.addr}]:{PORT} {host_pub[0]} {host_pub[1]}\n"
                        for side in (self.a, self.b))
        (d / "known_hosts").write_text(known)
        self.ssh_config = d / "config"
        self.ssh_config.write_text(
            f"Host {self.a.name}\n  HostName {self.a.addr}\n"
            f"Host {self.b.name}\n  HostName {self.b.addr}\n"
            f"Host {self.password}\n  HostName {self.b.addr}\n  PubkeyAuthentication no\n"
            f"Host {self.down}\n  HostName {self.subnet}.9\n"
            f"Host *\n  Port {PORT}\n  User root\n  IdentityFile {self.client_key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {d / 'known_hosts'}\n"
            f"  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n"
            f"  LogLevel ERROR\n")
        self.ssh_cmd = f"ssh -F {self.ssh_config}"

    def _sshd(self, side):
        d = self.tmp / "ssh"
        conf = d / f"sshd_{side.name}"
        conf.write_text(
            f"Port {PORT}\nListenAddress 0.0.0.0\nHostKey {self.host_key}\n"
            f"AuthorizedKeysFile {d / 'authorized_keys'}\nPidFile {d / side.name}.pid\n"
            "StrictModes no\nUsePAM no\nPermitRootLogin yes\nPasswordAuthentication yes\n"
            "KbdInteractiveAuthentication no\nPrintMotd no\nLogLevel ERROR\n")
        # The privilege separation directory Debian's service makes.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        p = subprocess.Popen(side.enter(["/usr/sbin/sshd", "-D", "-e", "-f", conf]),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, start_new_session=True)
        self.sshds.append(p)

        def listening():
            if p.poll() is not None:
                raise AssertionError(f"sshd on {side.name} exited: {p.stderr.read().decode()}")
            r = subprocess.run(["ip", "netns", "exec", side.netns, "ss", "-Hltn",
                                f"sport = :{PORT}"], capture_output=True, text=True)
            return r.stdout.strip() != ""
        wait_until(listening, what=f"sshd on {side.name}")

    def start_job(self, procs, script, straggler):
        """The 4-rank gloo job: ranks 0 and 1 on A (rank 0 the master),
        2 and 3 on B.  Returns {rank: Popen of its nsenter}."""
        ranks = {}
        for r, side in ((0, self.a), (1, self.a), (2, self.b), (3, self.b)):
            env = rank_env(r, 4, self.a.addr, self.master_port, GLOO_SOCKET_IFNAME=side.veth,
                           STRAGGLER=straggler)
            ranks[r] = procs.start(side.enter([PYTHON, script]), stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, env=env, cwd=str(self.tmp))
        read_lines_until([(p, f"ready {r}") for r, p in ranks.items()])
        return ranks

    def close(self):
        for p in self.sshds:
            kill_group(p)
        for side in (self.a, self.b):
            side.stop()
        for ns in self.made_netns:
            subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        self.made_netns = []
        # A veth pair not moved into its namespace yet (a setup that failed).
        for side in (self.a, self.b):
            subprocess.run(["ip", "link", "del", side.veth], stderr=subprocess.DEVNULL)


def host_pids(side):
    """{pid inside SIDE's namespace: pid here} of every process in it."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                ns = [l.split()[1:] for l in f if l.startswith("NSpid:")]
            if ns and len(ns[0]) > 1 and os.readlink(f"/proc/{pid}/ns/pid") == \
                    os.readlink(f"/proc/{side.init_pid}/ns/pid"):
                out[int(ns[0][-1])] = int(pid)
        except OSError:
            continue
    return out
